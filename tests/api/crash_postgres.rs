//! Crashes on PostgreSQL, under load: clients submit asynchronous
//! documents of several families at once while the node transmits them to
//! a separate `emisor tax-sim`, and either the node is killed with SIGKILL
//! and started again on the same database, or the database itself crashes
//! (`pg_ctl stop -m immediate`, a private cluster of the test's own) and
//! comes back while the node runs on. Either way every document answered
//! 202 is there and ends accepted, the simulator received each code once,
//! each resolution's numbers are taken in a row, and nothing is left
//! half-built. Runs on the PostgreSQL runs of the suite only
//! (`TEST_STORE_ENGINE=postgres`); the sled counterparts are `crash::*`
//! and `power_cut::*`.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::app::*;
use crate::support::async_load::*;
use crate::support::bodies::unique;
use crate::support::external_sim::ExternalSim;
use crate::support::flow::*;
use crate::support::pg::PrivateCluster;

fn readyz(app: &TestApp) -> (u16, Value) {
    json(
        app.client
            .get(format!("{}/readyz", app.url))
            .send()
            .expect("readyz"),
    )
}

/// SIGKILL while four clients submit asynchronous invoices, support
/// documents and POS receipts and the node transmits them (the simulator
/// holding each answer back a second), then a start on the same database.
#[test]
fn a_node_killed_under_async_load_on_postgresql_loses_nothing_and_sends_nothing_twice() {
    if !on_postgres() {
        eprintln!("skipped: the store is sled in this run (TEST_STORE_ENGINE=postgres runs it)");
        return;
    }
    let sim = ExternalSim::start();
    let launch = fast_launch()
        .env("EMISOR_AUTHORITY__URL", &sim.service_url())
        .capture_log();
    let mut app = TestApp::spawn_with(launch.clone());
    // Three calls in flight for a second each: the clients outrun the
    // transmission, so the kill finds documents queued and in flight.
    sim_mode_at(&sim.base, json!({"mode": "slow", "latency_ms": 1000}));

    let load = Load::start(&app, 4);
    load.wait_until("30 answered with a call in flight", |load| {
        load.count(202) >= 30 && in_flight(&sim)
    });
    app.kill();
    let at_kill = sim_stats_at(&sim.base);
    let outcomes = load.finish();
    // Before the kill, 202; after it, no answer at all.
    assert_only(&outcomes, |o| o.status == 0);
    let answered = answered_after_kill(&outcomes, &at_kill);

    sim_mode_at(&sim.base, json!({"mode": "up"}));
    let restarted = TestApp::start_in(&app.dir, launch);
    // New documents of every family after the restart number on.
    for (family, body) in FAMILIES {
        let mut body = unique(body());
        body["transmit"] = json!(false);
        let (status, res) = json(restarted.post("/v1/api/facturacion", &app.sk_test(), &body));
        assert_eq!(status, 200, "{family}: {res}");
    }
    check_the_end(
        &restarted,
        &sim,
        &answered,
        &database_url_of(&restarted.dir),
    );
    assert_no_panic(&restarted);
    eprintln!(
        "node kill: {} accepted and {} in flight at the kill",
        at_kill["accepted_count"], at_kill["in_flight"]
    );
}

/// The database crashes (`pg_ctl stop -m immediate`: no checkpoint, its
/// connections cut) while four clients submit asynchronous documents and
/// the node transmits them, and starts again a moment later. Meanwhile new
/// work is answered 503 `STORE_UNAVAILABLE` with `Retry-After` (no other
/// 5xx, no panic) and `/readyz` names the store; once the database is back the same
/// node, never restarted, is ready again, takes new documents, and ends
/// every one as above.
#[test]
fn a_database_crash_under_async_load_loses_nothing_and_sends_nothing_twice() {
    if !on_postgres() {
        eprintln!("skipped: the store is sled in this run (TEST_STORE_ENGINE=postgres runs it)");
        return;
    }
    let Some(cluster) = PrivateCluster::start() else {
        return;
    };
    let sim = ExternalSim::start();
    let launch = fast_launch()
        .env("EMISOR_AUTHORITY__URL", &sim.service_url())
        .env("EMISOR_STORE__URL", &cluster.url())
        .capture_log();
    let app = TestApp::spawn_with(launch);
    sim_mode_at(&sim.base, json!({"mode": "slow", "latency_ms": 300}));

    let load = Load::start(&app, 4);
    load.wait_until("20 answered with a call in flight", |load| {
        load.count(202) >= 20 && in_flight(&sim)
    });
    cluster.crash();
    load.wait_until("refused 503 while the database is down", |load| {
        load.count(503) >= 4
    });
    let (ready, readiness) = readyz(&app);
    assert_eq!(ready, 503, "{readiness}");
    let store = readiness["data"]["store"].as_str().unwrap_or_default();
    assert!(store.contains("unavailable"), "{readiness}");

    cluster.start_again();
    let deadline = Instant::now() + Duration::from_secs(60);
    while readyz(&app).0 != 200 {
        assert!(Instant::now() < deadline, "not ready again in 60 s");
        std::thread::sleep(Duration::from_millis(100));
    }
    let before = load.count(202);
    load.wait_until("taking new documents again", |load| {
        load.count(202) >= before + 9
    });
    let outcomes = load.finish();
    assert_only(&outcomes, |o| {
        o.status == 503 && o.retry_after && o.body["error"]["code"] == "STORE_UNAVAILABLE"
    });
    let refused = outcomes.iter().filter(|o| o.status == 503).count();

    sim_mode_at(&sim.base, json!({"mode": "up"}));
    let answered = answered(&outcomes);
    check_the_end(&app, &sim, &answered, &cluster.url());
    assert_no_panic(&app);
    eprintln!(
        "database crash: {} answered 202, {refused} refused 503 ({:?})",
        answered.len(),
        outcomes.iter().filter(|o| o.status == 202).fold(
            BTreeMap::<&str, usize>::new(),
            |mut m, o| {
                *m.entry(o.family).or_default() += 1;
                m
            }
        )
    );
}
