//! The rate limit is per key across every node (spec §8, decisions.md
//! "Rate limit"): the 101st request of the minute is a 429 whichever node
//! gets it, with the same `X-RateLimit-*` headers one node gives.

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
