//! What runs once for the whole service (docs/operations.md, "Several
//! nodes"): nodes started at the same instant on an empty database make one
//! demo company, one set of keys and one admin token; a once-per-service
//! task (the operator's warnings, the recovery job) runs on the one node
//! holding its lease, and moves to another node when that one is killed.

use std::time::{Duration, Instant};

use emisor::api::invoice_request::examples;
use serde_json::{json, Value};

use crate::support::app::*;
use crate::support::flow::*;
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

/// Scaled retries (dead letter within seconds), recovery every 0.5 s; the
/// lease's log line kept.
fn recovery_launch() -> Launch {
    fast_launch()
        .env("EMISOR_RESILIENCE__RECOVERY_INTERVAL_S", "50")
        .env(
            "RUST_LOG",
            "warn,emisor_store::async_store::service_lease=info",
        )
        .capture_log()
}

/// With the authority down, `on` issue a document each, and wait for each
/// to be dead-lettered; then the authority comes back and recovery gets
/// each accepted. Their ids.
fn dead_then_recovered(nodes: &Nodes, on: &[usize]) -> Vec<u64> {
    sim_mode_at(&nodes.sim.base, json!({"mode": "down"}));
    let ids: Vec<u64> = on
        .iter()
        .map(|i| {
            let res = post_async(&nodes.nodes[*i], &examples::invoice());
            res["data"]["documento"]["id"].as_u64().expect("id")
        })
        .collect();
    let alive = &nodes.nodes[on[0]];
    wait_all(alive, &ids, 6, WITHIN);
    sim_mode_at(&nodes.sim.base, json!({"mode": "up"}));
    wait_all(alive, &ids, 2, WITHIN);
    ids
}

/// How many times recovery re-queued document `id`.
fn requeued(nodes: &Nodes, id: u64) -> i64 {
    nodes
        .database()
        .query_one(
            "SELECT count(*) FROM document_history
             WHERE document_id = $1 AND entry->>'actor' = 'recovery'
               AND entry->>'event' = 'requeued'",
            &[&(id as i64)],
        )
        .expect("history")
        .get(0)
}

fn recovery_holders(nodes: &Nodes) -> Vec<usize> {
    (0..nodes.nodes.len())
        .filter(|i| {
            nodes.nodes[*i].log().lines().any(|l| {
                l.contains("now runs the once-per-service task") && l.contains("task=recovery")
            })
        })
        .collect()
}

#[test]
fn recovery_runs_on_one_node_and_moves_when_it_is_killed() {
    if !on_shared_database() {
        return;
    }
    let mut nodes = Nodes::start(3, recovery_launch());
    // Documents of every node, dead-lettered, are re-queued once each.
    for id in dead_then_recovered(&nodes, &[0, 1, 2]) {
        assert_eq!(requeued(&nodes, id), 1, "document {id}");
    }
    let holders = recovery_holders(&nodes);
    assert_eq!(holders.len(), 1, "one node took the lease: {holders:?}");
    let holder = holders[0];

    // The holder dies: another node re-queues the next dead documents.
    nodes.nodes[holder].kill();
    let alive: Vec<usize> = (0..3).filter(|i| *i != holder).collect();
    for id in dead_then_recovered(&nodes, &alive) {
        assert_eq!(requeued(&nodes, id), 1, "document {id}");
    }
    let now: Vec<usize> = recovery_holders(&nodes)
        .into_iter()
        .filter(|i| *i != holder)
        .collect();
    assert_eq!(now.len(), 1, "one node alive took the lease: {now:?}");
}

const RECONCILED: &str = "emisor_reconciliation_last_pass_timestamp_seconds";
const SWEPT: &str = "emisor_events_sweep_last_pass_timestamp_seconds";

/// The nodes (among `alive`) whose `/metrics` show a pass of `gauge`'s
/// task: a node that never ran the task has no such line.
fn passed(nodes: &Nodes, alive: &[usize], gauge: &str) -> Vec<usize> {
    alive
        .iter()
        .copied()
        .filter(|i| {
            let node = &nodes.nodes[*i];
            let text = node
                .client
                .get(format!("{}/metrics", node.url))
                .send()
                .expect("metrics")
                .text()
                .expect("metrics text");
            text.lines().any(|l| l.starts_with(gauge))
        })
        .collect()
}

#[test]
fn reconciliation_and_the_events_sweep_pass_on_one_node_and_move_when_it_is_killed() {
    if !on_shared_database() {
        return;
    }
    let mut nodes = Nodes::start(
        3,
        fast_launch()
            .env("EMISOR_RECONCILIATION__INTERVAL_S", "1")
            .env("EMISOR_EVENTS_SWEEP__INTERVAL_S", "1"),
    );
    let all = [0, 1, 2];
    wait_for("a reconciliation pass and a sweep", || {
        !passed(&nodes, &all, RECONCILED).is_empty() && !passed(&nodes, &all, SWEPT).is_empty()
    });
    // Several more ticks of every node: still one node each.
    std::thread::sleep(QUIET);
    let reconciler = passed(&nodes, &all, RECONCILED);
    let sweeper = passed(&nodes, &all, SWEPT);
    assert_eq!(reconciler.len(), 1, "one node reconciles: {reconciler:?}");
    assert_eq!(sweeper.len(), 1, "one node sweeps: {sweeper:?}");

    // The reconciling node dies: another one takes its tasks.
    let dead = reconciler[0];
    nodes.nodes[dead].kill();
    let alive: Vec<usize> = all.into_iter().filter(|i| *i != dead).collect();
    let mut moved = vec![RECONCILED];
    if sweeper[0] == dead {
        moved.push(SWEPT);
    }
    wait_for("the tasks of the dead node move", || {
        moved.iter().all(|g| !passed(&nodes, &alive, g).is_empty())
    });
    std::thread::sleep(QUIET);
    for gauge in [RECONCILED, SWEPT] {
        let now = passed(&nodes, &alive, gauge);
        assert_eq!(now.len(), 1, "{gauge} on one node alive: {now:?}");
    }
}
