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
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use emisor::api::invoice_request::examples;
use serde_json::{json, Value};

use crate::support::app::*;
use crate::support::bodies::unique;
use crate::support::external_sim::ExternalSim;
use crate::support::flow::*;
use crate::support::pg::{assert_whole_and_gapless, codes_before_redating, PrivateCluster, Row};

/// A family's name and its example body.
type Family = (&'static str, fn() -> Value);

/// The families the clients submit in turn (each numbers from a
/// resolution of its own).
const FAMILIES: [Family; 3] = [
    ("invoice", examples::invoice),
    ("support_document", examples::support_document),
    ("pos", examples::pos),
];

/// What one submission got: its status (0: no answer, the node was gone),
/// its body and whether it named a `Retry-After`.
#[derive(Debug, Clone)]
struct Outcome {
    family: &'static str,
    status: u16,
    body: Value,
    retry_after: bool,
}

impl Outcome {
    fn id_and_code(&self) -> (u64, String) {
        (
            self.body["data"]["documento"]["id"].as_u64().expect("id"),
            self.body["data"]["cufe"]
                .as_str()
                .expect("code")
                .to_string(),
        )
    }
}

/// Clients submitting asynchronous documents until [`finish`](Load::finish).
struct Load {
    outcomes: Arc<Mutex<Vec<Outcome>>>,
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Load {
    /// `clients` threads, each submitting the families in turn.
    fn start(app: &TestApp, clients: usize) -> Load {
        let outcomes: Arc<Mutex<Vec<Outcome>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (0..clients)
            .map(|c| {
                let (outcomes, stop) = (outcomes.clone(), stop.clone());
                let (url, key) = (app.url.clone(), app.sk_test());
                std::thread::spawn(move || {
                    let http = client();
                    let mut turn = c;
                    while !stop.load(Ordering::SeqCst) {
                        let (family, body) = FAMILIES[turn % FAMILIES.len()];
                        turn += 1;
                        let mut body = unique(body());
                        body["async"] = json!(true);
                        let sent = http
                            .post(format!("{url}/v1/api/facturacion"))
                            .header("X-Api-Key", &key)
                            .json(&body)
                            .send();
                        let outcome = match sent {
                            Ok(res) => {
                                let status = res.status().as_u16();
                                let retry_after = res.headers().contains_key("retry-after");
                                let text = res.text().unwrap_or_default();
                                Outcome {
                                    family,
                                    status,
                                    body: serde_json::from_str(&text)
                                        .unwrap_or_else(|_| json!({ "raw": text })),
                                    retry_after,
                                }
                            }
                            Err(e) => {
                                // The node is gone (killed): try again shortly.
                                std::thread::sleep(Duration::from_millis(20));
                                Outcome {
                                    family,
                                    status: 0,
                                    body: json!({ "error": e.to_string() }),
                                    retry_after: false,
                                }
                            }
                        };
                        outcomes.lock().expect("lock").push(outcome);
                    }
                })
            })
            .collect();
        Load {
            outcomes,
            stop,
            threads,
        }
    }

    /// How many outcomes had `status`.
    fn count(&self, status: u16) -> usize {
        let outcomes = self.outcomes.lock().expect("lock");
        outcomes.iter().filter(|o| o.status == status).count()
    }

    /// Waits (60 s at most) until `ready()`.
    fn wait_until(&self, what: &str, mut ready: impl FnMut(&Load) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !ready(self) {
            assert!(
                Instant::now() < deadline,
                "not {what} within 60 s: {} answered 202",
                self.count(202)
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Stops the clients; every outcome.
    fn finish(self) -> Vec<Outcome> {
        self.stop.store(true, Ordering::SeqCst);
        for t in self.threads {
            t.join().expect("a client thread");
        }
        let outcomes = self.outcomes.lock().expect("lock");
        outcomes.clone()
    }
}

/// The documents answered 202: their ids and codes.
fn answered(outcomes: &[Outcome]) -> Vec<(u64, String)> {
    outcomes
        .iter()
        .filter(|o| o.status == 202)
        .map(Outcome::id_and_code)
        .collect()
}

/// Whether the simulator holds a call in flight (it has judged the
/// document and holds its answer back).
fn in_flight(sim: &ExternalSim) -> bool {
    sim_stats_at(&sim.base)["in_flight"].as_u64().unwrap_or(0) > 0
}

/// Every document answered 202 ends accepted with its code; the simulator
/// received every code it saw once (none sent twice), those answered
/// among them; the database holds every document whole, built and
/// numbered without a gap, in its final state: accepted (then its code
/// reached the simulator) or a draft (never answered, built again at the
/// restart from phase one's record, never sent).
fn check_the_end(app: &TestApp, sim: &ExternalSim, answered: &[(u64, String)], database: &str) {
    let ids: Vec<u64> = answered.iter().map(|(id, _)| *id).collect();
    wait_all(app, &ids, 2, Duration::from_secs(60));
    let stats = sim_stats_at(&sim.base);
    let received: BTreeMap<String, u64> =
        serde_json::from_value(stats["received"].clone()).expect("received");
    // Each with the code it was answered with, unless it was dated again
    // for a send after midnight (Colombia time): then the code answered
    // was never sent, and the new one was.
    let answered: Vec<(u64, String)> = answered
        .iter()
        .map(|(id, code)| {
            let rec = status_of(app, *id);
            let now = rec["cufe"].as_str().expect("cufe").to_string();
            if now != *code {
                assert!(
                    codes_before_redating(database, *id).contains(code),
                    "document {id}: answered {code}, now {rec}"
                );
                assert!(!received.contains_key(code), "document {id}: {code} sent");
            }
            (*id, now)
        })
        .collect();
    let twice: Vec<_> = received.iter().filter(|(_, n)| **n != 1).collect();
    assert!(twice.is_empty(), "sent more than once: {twice:?}");
    for (id, code) in &answered {
        assert_eq!(received.get(code), Some(&1), "document {id} never sent");
    }
    assert_eq!(
        stats["calls"]["SendBillSync"].as_u64(),
        Some(received.len() as u64),
        "one send per code: {stats}"
    );
    assert_eq!(stats["rejected_count"], 0, "{stats}");

    let rows = assert_whole_and_gapless(database);
    for (id, code) in &answered {
        let row = rows.iter().find(|r| r.id == *id);
        assert!(
            row.is_some_and(|r| r.code.as_ref() == Some(code)),
            "document {id} stored with its code: {row:?}"
        );
    }
    let stray: Vec<&Row> = rows
        .iter()
        .filter(|r| {
            let sent = r.code.as_ref().is_some_and(|c| received.contains_key(c));
            !(r.state == 2 && sent || r.state == 1 && !sent)
        })
        .collect();
    assert!(
        stray.is_empty(),
        "neither accepted once sent nor a draft never sent: {stray:?}"
    );
    // One built again from phase one's record was never answered: a draft.
    let rebuilt: Vec<&Row> = rows.iter().filter(|r| r.rebuilt).collect();
    assert!(
        rebuilt.iter().all(|r| r.state == 1),
        "built again but not a draft: {rebuilt:?}"
    );
    let accepted = rows.iter().filter(|r| r.state == 2).count();
    assert_eq!(received.len(), accepted, "{stats}");
    eprintln!(
        "{} documents stored, {} answered 202, {accepted} accepted, {} drafts ({} built again)",
        rows.len(),
        answered.len(),
        rows.len() - accepted,
        rebuilt.len()
    );
}

/// No answer but those the test expects: 202, or `also`.
fn assert_only(outcomes: &[Outcome], also: impl Fn(&Outcome) -> bool) {
    let odd: Vec<&Outcome> = outcomes
        .iter()
        .filter(|o| o.status != 202 && !also(o))
        .collect();
    assert!(odd.is_empty(), "unexpected answers: {odd:#?}");
}

/// The node's log (both runs of it, in test one) shows no panic.
fn assert_no_panic(app: &TestApp) {
    let log = app.log();
    assert!(!log.contains("panicked at"), "the node panicked:\n{log}");
}

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
    let answered = answered(&outcomes);
    assert!(
        at_kill["accepted_count"].as_u64() < Some(answered.len() as u64),
        "the kill came after everything was sent: {at_kill}"
    );

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
