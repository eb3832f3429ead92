//! The authority's limits hold for the nodes together (spec §8): at most
//! 10 calls a second and 3 in flight, as the authority counts them,
//! whatever the number of nodes sending.

use std::time::Duration;

use emisor::api::invoice_request::examples;
use serde_json::json;

use crate::support::flow::*;
use crate::support::nodes::*;

#[test]
fn three_nodes_never_exceed_ten_calls_a_second_nor_three_in_flight() {
    if !on_shared_database() {
        return;
    }
    let nodes = Nodes::start(3, fast_launch());
    // Some latency, so that calls overlap and the in-flight limit is
    // reached: each node alone would keep three in flight.
    sim_mode_at(&nodes.sim.base, json!({"mode": "slow", "latency_ms": 150}));
    let ids: Vec<u64> = (0..60)
        .map(|_| {
            let res = post_async(nodes.next(), &examples::invoice());
            res["data"]["documento"]["id"].as_u64().expect("id")
        })
        .collect();
    wait_all(nodes.first(), &ids, 2, Duration::from_secs(90));
    let stats = sim_stats_at(&nodes.sim.base);
    assert_eq!(stats["accepted_count"], 60, "{stats}");
    let max_in_flight = stats["max_in_flight"].as_u64().expect("max_in_flight");
    let max_per_second = stats["max_per_second"].as_u64().expect("max_per_second");
    assert!(max_in_flight <= 3, "{stats}");
    assert!(max_per_second <= 10, "{stats}");
    // The limits were reached, not merely respected by a trickle.
    assert!(max_in_flight >= 2, "{stats}");
    eprintln!("three nodes at the authority: at most {max_in_flight} in flight, {max_per_second} in a second");
}

/// A call that times out may still be at the authority, which counts it in
/// flight until it answers: its shared slot stays taken a while (the call's
/// timeout again), so even when every call times out the authority never
/// sees more than 3 in flight from the nodes together; nothing is accepted
/// twice once it answers in time again.
#[test]
fn calls_that_time_out_keep_their_slot_while_the_authority_may_still_hold_them() {
    if !on_shared_database() {
        return;
    }
    let nodes = Nodes::start(3, fast_launch().env("EMISOR_AUTHORITY__TIMEOUT_MS", "300"));
    // Each answer comes after the caller gave up, but before its slot's
    // hold ends (300 ms after the timeout).
    sim_mode_at(&nodes.sim.base, json!({"mode": "slow", "latency_ms": 500}));
    let ids: Vec<u64> = (0..12)
        .map(|_| {
            let res = post_async(nodes.next(), &examples::invoice());
            res["data"]["documento"]["id"].as_u64().expect("id")
        })
        .collect();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while sim_stats_at(&nodes.sim.base)["total_calls"]
        .as_u64()
        .unwrap_or(0)
        < 12
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the nodes kept calling"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let timed_out = sim_stats_at(&nodes.sim.base);
    sim_mode_at(&nodes.sim.base, json!({"mode": "up"}));
    wait_all(nodes.first(), &ids, 2, Duration::from_secs(90));
    let stats = sim_stats_at(&nodes.sim.base);
    assert_eq!(stats["accepted_count"], 12, "{stats}");
    let max_in_flight = stats["max_in_flight"].as_u64().expect("max_in_flight");
    assert!(
        max_in_flight <= 3,
        "while calls timed out {timed_out}; in all {stats}"
    );
    assert!(
        max_in_flight >= 2,
        "the limit was reached, not a trickle: {stats}"
    );
}
