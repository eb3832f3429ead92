//! Clients submitting asynchronous documents of several families at once
//! while the service transmits them, and the checks of what a crash under
//! that load must leave: every document answered 202 accepted once, the
//! numbering whole (`crash_postgres`, `nodes::adoption`).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use emisor::api::invoice_request::examples;
use serde_json::{json, Value};

use super::app::*;
use super::bodies::unique;
use super::external_sim::ExternalSim;
use super::flow::*;
use super::pg::{assert_whole_and_gapless, codes_before_redating, Row};

/// A family's name and its example body.
pub type Family = (&'static str, fn() -> Value);

/// The families the clients submit in turn (each numbers from a
/// resolution of its own).
pub const FAMILIES: [Family; 3] = [
    ("invoice", examples::invoice),
    ("support_document", examples::support_document),
    ("pos", examples::pos),
];

/// What one submission got: its status (0: no answer, the node was gone),
/// its body and whether it named a `Retry-After`.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub family: &'static str,
    pub status: u16,
    pub body: Value,
    pub retry_after: bool,
}

impl Outcome {
    pub fn id_and_code(&self) -> (u64, String) {
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
pub struct Load {
    outcomes: Arc<Mutex<Vec<Outcome>>>,
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Load {
    /// `clients` threads, each submitting the families in turn.
    pub fn start(app: &TestApp, clients: usize) -> Load {
        Load::spread(&[app], clients)
    }

    /// `clients` threads, each submitting the families in turn, each
    /// request to the next of `apps` (several nodes behind a balancer).
    pub fn spread(apps: &[&TestApp], clients: usize) -> Load {
        let outcomes: Arc<Mutex<Vec<Outcome>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let urls: Vec<String> = apps.iter().map(|a| a.url.clone()).collect();
        let threads = (0..clients)
            .map(|c| {
                let (outcomes, stop) = (outcomes.clone(), stop.clone());
                let (urls, key) = (urls.clone(), apps[0].sk_test());
                std::thread::spawn(move || {
                    let http = client();
                    let mut turn = c;
                    while !stop.load(Ordering::SeqCst) {
                        let (family, body) = FAMILIES[turn % FAMILIES.len()];
                        let url = &urls[turn % urls.len()];
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
    pub fn count(&self, status: u16) -> usize {
        let outcomes = self.outcomes.lock().expect("lock");
        outcomes.iter().filter(|o| o.status == status).count()
    }

    /// Waits (60 s at most) until `ready()`.
    pub fn wait_until(&self, what: &str, mut ready: impl FnMut(&Load) -> bool) {
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
    pub fn finish(self) -> Vec<Outcome> {
        self.stop.store(true, Ordering::SeqCst);
        for t in self.threads {
            t.join().expect("a client thread");
        }
        let outcomes = self.outcomes.lock().expect("lock");
        outcomes.clone()
    }
}

/// The documents answered 202: their ids and codes.
pub fn answered(outcomes: &[Outcome]) -> Vec<(u64, String)> {
    outcomes
        .iter()
        .filter(|o| o.status == 202)
        .map(Outcome::id_and_code)
        .collect()
}

/// The documents answered 202, checked to outnumber what the simulator
/// had accepted when the node was killed (`at_kill`: its stats then), so
/// that some were still to be sent by whoever takes them up.
pub fn answered_after_kill(outcomes: &[Outcome], at_kill: &Value) -> Vec<(u64, String)> {
    let answered = answered(outcomes);
    assert!(
        at_kill["accepted_count"].as_u64() < Some(answered.len() as u64),
        "the kill came after everything was sent: {at_kill}"
    );
    answered
}

/// Whether the simulator holds a call in flight (it has judged the
/// document and holds its answer back).
pub fn in_flight(sim: &ExternalSim) -> bool {
    sim_stats_at(&sim.base)["in_flight"].as_u64().unwrap_or(0) > 0
}

/// Every document answered 202 ends accepted with its code; the simulator
/// received every code it saw once (none sent twice), those answered
/// among them; the database holds every document whole, built and
/// numbered without a gap, in its final state: accepted (then its code
/// reached the simulator) or a draft (never answered, built again at the
/// restart from phase one's record, never sent).
pub fn check_the_end(app: &TestApp, sim: &ExternalSim, answered: &[(u64, String)], database: &str) {
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
pub fn assert_only(outcomes: &[Outcome], also: impl Fn(&Outcome) -> bool) {
    let odd: Vec<&Outcome> = outcomes
        .iter()
        .filter(|o| o.status != 202 && !also(o))
        .collect();
    assert!(odd.is_empty(), "unexpected answers: {odd:#?}");
}

/// The node's log (both runs of it, in test one) shows no panic.
pub fn assert_no_panic(app: &TestApp) {
    let log = app.log();
    assert!(!log.contains("panicked at"), "the node panicked:\n{log}");
}
