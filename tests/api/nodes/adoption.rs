//! Queued work across nodes: each job runs on one node's timetable, under
//! a claim named with its node; a node that joins takes none of a live
//! node's work, and a node killed mid-load has its queued jobs and its
//! half-built documents taken up by the others, which ask the authority
//! first about a transmission that may have landed (docs/operations.md,
//! "Several nodes").

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use emisor::api::invoice_request::examples;
use serde_json::json;

use crate::support::app::TestApp;
use crate::support::async_load::*;
use crate::support::flow::*;
use crate::support::nodes::*;
use crate::support::pg::PrivateCluster;

/// The stored jobs by kind, once none is left (30 s at most).
fn assert_no_job_left(database_url: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let left: BTreeMap<String, i64> = postgres::Client::connect(database_url, postgres::NoTls)
            .expect("connect to the nodes' database")
            .query("SELECT kind, count(*) FROM jobs GROUP BY kind", &[])
            .expect("read the jobs")
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect();
        if left.is_empty() {
            return;
        }
        assert!(Instant::now() < deadline, "jobs left: {left:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Whether `node` took up a dead node's jobs or half-built documents (it
/// says so in its log, a warning).
fn took_up_work(node: &TestApp) -> bool {
    let log = node.log();
    log.contains("adopted a dead node's queued jobs")
        || log.contains("adopting a dead node's half-built documents")
}

fn stored_jobs(nodes: &Nodes) -> i64 {
    nodes
        .database()
        .query_one("SELECT count(*) FROM jobs", &[])
        .expect("count the jobs")
        .get(0)
}

/// A node started while the first takes asynchronous documents from four
/// clients and has transmissions queued behind a slow authority takes
/// none of that live node's work: not its queued jobs (each code reaches
/// the authority once), not the documents it is building (each answered
/// 202 ends accepted, none a draft).
#[test]
fn a_node_joining_under_load_takes_none_of_the_live_nodes_work() {
    if !on_shared_database() {
        return;
    }
    let mut nodes = Nodes::start(1, fast_launch().capture_log());
    sim_mode_at(&nodes.sim.base, json!({"mode": "slow", "latency_ms": 500}));
    let load = Load::start(nodes.first(), 4);
    load.wait_until("30 answered", |load| load.count(202) >= 30);
    nodes.join();
    assert!(
        stored_jobs(&nodes) > 0,
        "the queue was empty when the second node had started"
    );
    let before = load.count(202);
    load.wait_until("answering on", |load| load.count(202) >= before + 9);
    let outcomes = load.finish();
    assert_only(&outcomes, |_| false);
    sim_mode_at(&nodes.sim.base, json!({"mode": "up"}));
    let answered = answered(&outcomes);
    check_the_end(nodes.first(), &nodes.sim, &answered, &nodes.database_url());
    assert_no_job_left(&nodes.database_url());
    assert!(
        !took_up_work(&nodes.nodes[1]),
        "the joining node took up work of a live node"
    );
    for node in &nodes.nodes {
        assert_no_panic(node);
    }
}

/// SIGKILL of one of three nodes while six clients spread asynchronous
/// invoices, support documents and POS receipts over them and the
/// authority answers slowly; the killed node is not started again. The
/// others take up its queued jobs and its half-built documents: every
/// document answered 202 is accepted by the authority exactly once, the
/// numbering has no gap, no job and no half-built document is left.
#[test]
fn a_node_killed_under_async_load_has_its_work_taken_up_by_the_others() {
    if !on_shared_database() {
        return;
    }
    let mut nodes = Nodes::start(3, fast_launch().capture_log());
    sim_mode_at(&nodes.sim.base, json!({"mode": "slow", "latency_ms": 1000}));
    let load = {
        let apps: Vec<&_> = nodes.nodes.iter().collect();
        Load::spread(&apps, 6)
    };
    load.wait_until("45 answered with a call in flight", |load| {
        load.count(202) >= 45 && in_flight(&nodes.sim)
    });
    nodes.nodes[1].kill();
    let at_kill = sim_stats_at(&nodes.sim.base);
    let before = load.count(202);
    load.wait_until("the other nodes answering on", |load| {
        load.count(202) >= before + 12
    });
    let outcomes = load.finish();
    // The killed node's requests after the kill got no answer.
    assert_only(&outcomes, |o| o.status == 0);
    let answered = answered_after_kill(&outcomes, &at_kill);

    sim_mode_at(&nodes.sim.base, json!({"mode": "up"}));
    check_the_end(nodes.first(), &nodes.sim, &answered, &nodes.database_url());
    assert_no_job_left(&nodes.database_url());
    let survivors = [&nodes.nodes[0], &nodes.nodes[2]];
    for node in survivors {
        assert_no_panic(node);
    }
    assert!(
        survivors.iter().any(|n| took_up_work(n)),
        "no node took up the killed node's jobs"
    );
    eprintln!(
        "one of three nodes killed: {} answered 202, {} accepted and {} in flight at the kill; {} status queries",
        answered.len(),
        at_kill["accepted_count"],
        at_kill["in_flight"],
        sim_stats_at(&nodes.sim.base)["calls"]["GetStatus"]
    );
}

/// A node killed while its transmission is at the authority: the node
/// that takes up the job asks the authority for the document's status
/// before anything else, finds it accepted and records it without sending
/// it again.
#[test]
fn a_transmission_in_flight_on_a_killed_node_is_asked_about_before_it_is_sent_again() {
    if !on_shared_database() {
        return;
    }
    let mut nodes = Nodes::start(2, fast_launch());
    // Only the first node has work; each answer held back two seconds.
    sim_mode_at(&nodes.sim.base, json!({"mode": "slow", "latency_ms": 2000}));
    let ids: Vec<u64> = (0..5)
        .map(|_| {
            let res = post_async(nodes.first(), &examples::invoice());
            res["data"]["documento"]["id"].as_u64().expect("id")
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(10);
    while sim_stats_at(&nodes.sim.base)["in_flight"]
        .as_u64()
        .unwrap_or(0)
        == 0
    {
        assert!(Instant::now() < deadline, "nothing in flight");
        std::thread::sleep(Duration::from_millis(10));
    }
    nodes.nodes[0].kill();
    let at_kill = sim_stats_at(&nodes.sim.base);
    sim_mode_at(&nodes.sim.base, json!({"mode": "up"}));
    wait_all(&nodes.nodes[1], &ids, 2, Duration::from_secs(60));
    let stats = sim_stats_at(&nodes.sim.base);
    let received: BTreeMap<String, u64> =
        serde_json::from_value(stats["received"].clone()).expect("received");
    let twice: Vec<_> = received.iter().filter(|(_, n)| **n != 1).collect();
    assert!(twice.is_empty(), "sent more than once: {twice:?}");
    assert_eq!(received.len(), 5, "{stats}");
    assert_eq!(stats["calls"]["SendBillSync"], 5, "{stats}");
    let asked = stats["calls"]["GetStatus"].as_u64().unwrap_or(0);
    let in_flight = at_kill["in_flight"].as_u64().unwrap_or(0);
    assert!(
        asked >= in_flight,
        "{in_flight} in flight at the kill, {asked} asked about: {stats}"
    );
    assert_no_job_left(&nodes.database_url());
}

/// The database gone for three seconds (every node's lease runs out
/// meanwhile) while six clients spread asynchronous documents over three
/// nodes: each node, back, renews its own lease before it judges any
/// other dead, so none takes up another's work, and every document
/// answered 202 is accepted once, the numbering whole, no job left.
#[test]
fn the_database_gone_under_load_makes_no_node_take_up_another_nodes_work() {
    if !on_shared_database() {
        return;
    }
    let nodes = Nodes::start(3, fast_launch().capture_log());
    database_lost_under_load(
        &nodes,
        &nodes.database_url(),
        || {
            nodes.database_away(true);
        },
        || {
            std::thread::sleep(Duration::from_secs(3));
            nodes.database_away(false);
        },
    );
}

/// The nodes' database crashed (every server process ended at once) and
/// started again under async load on three nodes: new work is refused 503
/// meanwhile, the nodes take documents again by themselves once it is back,
/// every document answered 202 is accepted exactly once, numbering has no
/// gap, no job is left, and no node takes up another live node's work.
#[test]
fn the_database_restarted_under_load_on_three_nodes_loses_nothing_and_sends_nothing_twice() {
    if !on_shared_database() {
        return;
    }
    let Some(cluster) = PrivateCluster::start() else {
        return;
    };
    let nodes = Nodes::start(
        3,
        fast_launch()
            .capture_log()
            .env("EMISOR_STORE__URL", &cluster.url()),
    );
    database_lost_under_load(
        &nodes,
        &cluster.url(),
        || cluster.crash(),
        || cluster.start_again(),
    );
}

/// Async load on `nodes`, the database lost (`lose`) with calls in flight
/// and given back (`restore`) once nodes refuse work 503: then the checks
/// of a crash on the database at `database_url`, no job left, and no node
/// taking up another live node's work.
fn database_lost_under_load(
    nodes: &Nodes,
    database_url: &str,
    lose: impl FnOnce(),
    restore: impl FnOnce(),
) {
    sim_mode_at(&nodes.sim.base, json!({"mode": "slow", "latency_ms": 300}));
    let load = {
        let apps: Vec<&_> = nodes.nodes.iter().collect();
        Load::spread(&apps, 6)
    };
    load.wait_until("30 answered with a call in flight", |load| {
        load.count(202) >= 30 && in_flight(&nodes.sim)
    });
    lose();
    load.wait_until("refused 503 while the database is gone", |load| {
        load.count(503) >= 6
    });
    restore();
    let before = load.count(202);
    load.wait_until("taking new documents again", |load| {
        load.count(202) >= before + 12
    });
    let outcomes = load.finish();
    assert_only(&outcomes, |o| {
        o.status == 503 && o.body["error"]["code"] == "STORE_UNAVAILABLE"
    });
    sim_mode_at(&nodes.sim.base, json!({"mode": "up"}));
    let answered = answered(&outcomes);
    check_the_end(nodes.first(), &nodes.sim, &answered, database_url);
    assert_no_job_left(database_url);
    for node in &nodes.nodes {
        assert_no_panic(node);
        assert!(
            !took_up_work(node),
            "a node took up the work of a live one after the database came back"
        );
    }
}
