//! What runs once for the whole service (docs/operations.md, "Several
//! nodes"): nodes started at the same instant on an empty database make one
//! demo company, one set of keys and one admin token; a once-per-service
//! task (here the operator's warnings) runs on the one node holding its
//! lease, and moves to another node when that one is killed.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::app::*;
use crate::support::nodes::*;
use crate::webhooks::{receiver, Received};

const WITHIN: Duration = Duration::from_secs(30);
/// Long enough for a second node's warning to arrive (several periodic
/// checks of every node).
const QUIET: Duration = Duration::from_secs(4);
const SECRET: &str = "opsec_nodos";

fn count(nodes: &Nodes, sql: &str) -> i64 {
    nodes.database().query_one(sql, &[]).expect(sql).get(0)
}

/// Whether two nodes both find the database empty is a matter of
/// milliseconds: a few rounds.
const ROUNDS: usize = 3;

#[test]
fn three_nodes_started_at_once_make_one_demo_company_whose_keys_serve_every_node() {
    if !on_shared_database() {
        return;
    }
    for _ in 0..ROUNDS {
        // The harness checks that one data dir has demo-keys.json.
        let nodes = Nodes::start_together(3, Launch::default());
        assert_eq!(count(&nodes, "SELECT count(*) FROM companies"), 1);
        assert_eq!(
            count(&nodes, "SELECT count(*) FROM api_keys"),
            2,
            "one test key and one live key"
        );
        for node in &nodes.nodes {
            for key in [nodes.first().sk_test(), nodes.first().sk_live()] {
                let (status, body) = json(node.get("/v1/api/api-keys/test", &key));
                assert_eq!(
                    status, 200,
                    "{} answers with the demo key: {body}",
                    node.url
                );
            }
            let (status, body) = json(node.admin_get("/admin/companies"));
            assert_eq!(status, 200, "{} takes the admin token: {body}", node.url);
            assert_eq!(body["data"].as_array().map(Vec::len), Some(1), "{body}");
        }
    }
}

/// Every crossing in force at once (100 % left), checked every second,
/// sent to the operator's webhook; the lease's log line kept.
fn warning_launch(url: &str) -> Launch {
    Launch::default()
        .env("EMISOR_OPERATOR__WEBHOOK_URL", url)
        .env("EMISOR_OPERATOR__WEBHOOK_SECRET", SECRET)
        .env("EMISOR_WARNINGS__PERCENT_LEFT", "100")
        .env("EMISOR_WARNINGS__CHECK_INTERVAL_S", "1")
        .env(
            "RUST_LOG",
            "warn,emisor_store::async_store::service_lease=info",
        )
        .capture_log()
}

/// The warnings posted so far, by the crossing's key.
fn posted(got: &Received) -> Vec<String> {
    got.lock()
        .unwrap()
        .iter()
        .filter_map(|(_, body)| {
            let event: Value = serde_json::from_slice(body).ok()?;
            (event["event"] == "operador:alerta")
                .then(|| event["data"]["clave"].as_str().map(String::from))
                .flatten()
        })
        .collect()
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + WITHIN;
    while !done() {
        assert!(Instant::now() < deadline, "{what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The nodes whose log says they took the warnings' lease.
fn warning_holders(nodes: &Nodes) -> Vec<usize> {
    (0..nodes.nodes.len())
        .filter(|i| {
            nodes.nodes[*i].log().lines().any(|l| {
                l.contains("now runs the once-per-service task") && l.contains("task=warnings")
            })
        })
        .collect()
}

fn each_once(keys: &[String]) {
    let mut sorted = keys.to_vec();
    sorted.sort();
    sorted.dedup();
    assert_eq!(
        sorted.len(),
        keys.len(),
        "each warning raised once: {keys:?}"
    );
}

#[test]
fn the_warnings_run_on_one_node_and_move_when_it_is_killed() {
    if !on_shared_database() {
        return;
    }
    let (url, got) = receiver(0);
    let mut nodes = Nodes::start_together(3, warning_launch(&url));

    // Every node checks every second; one raises the warnings in force.
    wait_for("the warnings in force are raised", || {
        posted(&got).iter().any(|k| k.starts_with("plan:"))
    });
    std::thread::sleep(QUIET);
    let first = posted(&got);
    each_once(&first);
    let holders = warning_holders(&nodes);
    assert_eq!(holders.len(), 1, "one node took the lease: {holders:?}");
    let holder = holders[0];

    // The holder dies; another node takes the lease on its next check and
    // raises a new crossing, once, and none raised before.
    nodes.nodes[holder].kill();
    let other = (holder + 1) % 3;
    let (status, added) = json(nodes.nodes[other].admin_post(
        "/admin/companies/1/resoluciones",
        &json!({"id_tipo_documento": 1, "numero_resolucion": "18760000077",
                "fecha_resolucion": "2026-01-01", "prefijo": "MV", "desde": 1, "hasta": 10,
                "vigencia_desde": "2026-01-01", "vigencia_hasta": "2030-12-31",
                "clave_tecnica": "fc8eac422eba16e22ffd8c6f94b3f40a6e38162c"}),
    ));
    assert_eq!(status, 201, "{added}");
    let key = format!("numeracion:{}", added["data"]["id"]);
    wait_for("the new crossing is raised by a node alive", || {
        posted(&got).contains(&key)
    });
    std::thread::sleep(QUIET);
    let all = posted(&got);
    each_once(&all);
    assert_eq!(all.len(), first.len() + 1, "{first:?} then {all:?}");
    let now: Vec<usize> = warning_holders(&nodes)
        .into_iter()
        .filter(|i| *i != holder)
        .collect();
    assert_eq!(now.len(), 1, "one node alive took the lease: {now:?}");
}
