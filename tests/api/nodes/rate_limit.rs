//! The rate limit is per key across every node (spec §8, decisions.md
//! "Rate limit"): the 101st request of the minute is a 429 whichever node
//! gets it, with the same `X-RateLimit-*` headers one node gives; a limit
//! counted in batches (docs/operations.md "Several nodes") holds exactly
//! too.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::rate_limit::{assert_rate_limited, header};
use crate::support::app::*;
use crate::support::nodes::*;

#[test]
fn the_hundred_and_first_request_on_any_node_is_429() {
    if !on_shared_database() {
        return;
    }
    let nodes = Nodes::start(3, Launch::default());
    let key = nodes.sk_test();
    wait_for_fresh_minute_if_needed();
    let mut reset = 0;
    for i in 1..=100 {
        let res = nodes.get("/v1/api/api-keys/test", &key);
        assert_eq!(res.status().as_u16(), 200, "request {i}");
        assert_eq!(header(&res, "x-ratelimit-limit"), 100);
        assert_eq!(header(&res, "x-ratelimit-remaining"), 100 - i);
        if reset != 0 {
            assert_eq!(header(&res, "x-ratelimit-reset"), reset, "request {i}");
        }
        reset = header(&res, "x-ratelimit-reset");
    }
    for node in &nodes.nodes {
        let res = node.get("/v1/api/api-keys/test", &key);
        assert_eq!(header(&res, "x-ratelimit-limit"), 100);
        assert_rate_limited(res, reset);
    }
}

#[test]
fn concurrent_requests_on_every_node_are_allowed_exactly_the_limit() {
    if !on_shared_database() {
        return;
    }
    let nodes = Nodes::start(3, Launch::default());
    // Set before any node has read the key.
    let (status, body) = json(
        nodes
            .first()
            .client
            .patch(format!("{}/admin/companies/1", nodes.first().url))
            .bearer_auth(nodes.first().admin_token())
            .json(&json!({"rate_limit_per_minute": 30}))
            .send()
            .unwrap(),
    );
    assert_eq!(status, 200, "{body}");
    let key = nodes.sk_test();
    wait_for_fresh_minute_if_needed();
    let urls: Vec<String> = nodes.nodes.iter().map(|n| n.url.clone()).collect();
    let statuses: Vec<u16> = std::thread::scope(|s| {
        let threads: Vec<_> = (0..6)
            .map(|t| {
                let (urls, key) = (&urls, &key);
                s.spawn(move || {
                    let http = client();
                    (0..10)
                        .map(|i| {
                            http.get(format!("{}/v1/api/api-keys/test", urls[(t + i) % 3]))
                                .header("X-Api-Key", key)
                                .send()
                                .expect("GET")
                                .status()
                                .as_u16()
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        threads
            .into_iter()
            .flat_map(|t| t.join().expect("client"))
            .collect()
    });
    let allowed = statuses.iter().filter(|s| **s == 200).count();
    let limited = statuses.iter().filter(|s| **s == 429).count();
    assert_eq!((allowed, limited), (30, 30), "{statuses:?}");
}

/// Sets company 1's rate limit through node 0.
fn set_limit(nodes: &Nodes, limit: u32) {
    let (status, body) = json(
        nodes
            .first()
            .client
            .patch(format!("{}/admin/companies/1", nodes.first().url))
            .bearer_auth(nodes.first().admin_token())
            .json(&json!({"rate_limit_per_minute": limit}))
            .send()
            .unwrap(),
    );
    assert_eq!(status, 200, "{body}");
}

/// `threads` clients each making `each` requests with `key`, spread over
/// the nodes: each answer's status, `X-RateLimit-Remaining` and
/// `X-RateLimit-Reset`.
fn spread(nodes: &Nodes, key: &str, threads: usize, each: usize) -> Vec<(u16, i64, i64)> {
    let urls: Vec<String> = nodes.nodes.iter().map(|n| n.url.clone()).collect();
    std::thread::scope(|s| {
        let clients: Vec<_> = (0..threads)
            .map(|t| {
                let urls = &urls;
                s.spawn(move || {
                    let http = client();
                    (0..each)
                        .map(|i| {
                            let res = http
                                .get(format!(
                                    "{}/v1/api/api-keys/test",
                                    urls[(t + i) % urls.len()]
                                ))
                                .header("X-Api-Key", key)
                                .send()
                                .expect("GET");
                            (
                                res.status().as_u16(),
                                header(&res, "x-ratelimit-remaining"),
                                header(&res, "x-ratelimit-reset"),
                            )
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        clients
            .into_iter()
            .flat_map(|c| c.join().expect("client"))
            .collect()
    })
}

/// A limit high enough to be counted in batches (each node counts a share
/// of what is left in the database ahead of use, and one request at a time
/// near the limit): concurrent requests over three nodes are allowed
/// exactly the limit, whichever node gets them, and what the nodes counted
/// and did not make is given back, leaving the database's count of the
/// minute at the limit.
#[test]
fn concurrent_requests_past_a_limit_counted_in_batches_are_allowed_exactly_the_limit() {
    if !on_shared_database() {
        return;
    }
    let nodes = Nodes::start(3, Launch::default());
    const LIMIT: u32 = 1_000;
    set_limit(&nodes, LIMIT);
    let key = nodes.sk_test();
    wait_for_fresh_minute_if_needed();
    let mut answers = spread(&nodes, &key, 6, 200);
    let resets: BTreeSet<i64> = answers.iter().map(|a| a.2).collect();
    if resets.len() > 1 {
        // The minute turned meanwhile: again, in a minute of its own.
        let now = chrono::Utc::now().timestamp();
        std::thread::sleep(Duration::from_secs((60 - now.rem_euclid(60) + 1) as u64));
        answers = spread(&nodes, &key, 6, 200);
    }
    let resets: BTreeSet<i64> = answers.iter().map(|a| a.2).collect();
    assert_eq!(resets.len(), 1, "one minute");
    let allowed = answers.iter().filter(|a| a.0 == 200).count();
    let limited = answers.iter().filter(|a| a.0 == 429).count();
    assert_eq!((allowed, limited), (1_000, 200), "the limit, exactly");
    for (status, remaining, _) in &answers {
        assert!((0..i64::from(LIMIT)).contains(remaining), "{remaining}");
        if *status == 429 {
            assert_eq!(*remaining, 0);
        }
    }
    // Counted and not made: given back within a few ticks.
    let minute = resets.iter().next().expect("a minute") - 60;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let n: i32 = nodes
            .database()
            .query_one(
                "SELECT n FROM rate_windows WHERE minute = $1 ORDER BY n DESC LIMIT 1",
                &[&minute],
            )
            .expect("the minute's count")
            .get(0);
        if n == LIMIT as i32 {
            break;
        }
        assert!(Instant::now() < deadline, "the count stays at {n}");
        std::thread::sleep(Duration::from_millis(100));
    }
}
