//! Crashes. Mid-transmission (issue 5): 50 asynchronous documents accepted,
//! the server killed with SIGKILL while it transmits them to a separate
//! `emisor tax-sim` (which learns the demo company from the server itself),
//! restarted on the same data dir: every document ends in its verdict and
//! the simulator received each exactly once, whether it accepts or rejects.
//! Mid-issuing: nothing answered is lost.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use emisor::api::invoice_request::examples;
use serde_json::{json, Value};

use crate::external_sim::ExternalSim;
use crate::flow_helpers::*;
use crate::helpers::*;

/// 50 asynchronous invoices; their ids and codes.
pub fn post_fifty(app: &TestApp) -> Vec<(u64, String)> {
    (0..50)
        .map(|_| {
            let res = post_async(app, &examples::invoice());
            (
                res["data"]["documento"]["id"].as_u64().expect("id"),
                res["data"]["cufe"].as_str().expect("cufe").to_string(),
            )
        })
        .collect()
}

/// SIGKILL once a call is in flight at the simulator (it has judged the
/// document and holds the answer back); the simulator's stats then.
pub fn kill_mid_call(app: &mut TestApp, sim: &ExternalSim) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    while sim_stats_at(&sim.base)["in_flight"].as_u64().unwrap_or(0) == 0 {
        assert!(Instant::now() < deadline, "nothing in flight");
        std::thread::sleep(Duration::from_millis(10));
    }
    app.kill();
    sim_stats_at(&sim.base)
}

/// Every code reached the simulator once, and no send was repeated.
fn assert_received_once(stats: &Value, docs: &[(u64, String)]) {
    for (id, code) in docs {
        assert_eq!(
            stats["received"][code], 1,
            "document {id} reached the simulator once: {stats}"
        );
    }
    assert_eq!(
        stats["calls"]["SendBillSync"], 50,
        "no document sent twice: {stats}"
    );
}

#[test]
fn sigkill_mid_processing_loses_nothing_and_sends_nothing_twice() {
    let sim = ExternalSim::start();
    let launch = fast_launch().env("EMISOR_AUTHORITY__URL", &sim.service_url());
    // Nothing registered by hand: the demo company registers itself.
    let mut app = TestApp::spawn_with(launch.clone());
    // Slow answers: three calls in flight for half a second each, so the
    // 50 documents take seconds to transmit and the kill lands mid-way.
    sim_mode_at(&sim.base, json!({"mode": "slow", "latency_ms": 500}));

    let docs = post_fifty(&app);
    let at_kill = kill_mid_call(&mut app, &sim);
    let accepted_at_kill = at_kill["accepted_count"].as_u64().expect("count");
    assert!(
        accepted_at_kill < 50,
        "the kill came after everything was done: {at_kill}"
    );

    sim_mode_at(&sim.base, json!({"mode": "up"}));
    let dir = app.dir.clone();
    let restarted = TestApp::start_in(&dir, launch);
    let ids: Vec<u64> = docs.iter().map(|(id, _)| *id).collect();
    wait_all(&restarted, &ids, 2, Duration::from_secs(25));

    let stats = sim_stats_at(&sim.base);
    assert_eq!(stats["accepted_count"], 50, "{stats}");
    assert_eq!(
        stats["rejected_count"], 0,
        "the simulator knew the company: {stats}"
    );
    for (id, code) in &docs {
        let rec = status_of(&restarted, *id);
        assert_eq!(rec["cufe"], code.as_str(), "{rec}");
        assert_eq!(
            stats["accepted"][code]["received"], 1,
            "document {id} reached the simulator once"
        );
    }
    assert_received_once(&stats, &docs);
    eprintln!(
        "crash test: {accepted_at_kill} accepted and {} in flight at the kill; GetStatus calls {}",
        at_kill["in_flight"], stats["calls"]["GetStatus"]
    );
    drop(app);
}

/// The same crash with a simulator that rejects everything: a document it
/// had judged when the server died is recorded as rejected from its
/// `GetStatus` answer, not sent again.
#[test]
fn sigkill_mid_processing_records_rejections_without_resending() {
    let sim = ExternalSim::start();
    let launch = fast_launch().env("EMISOR_AUTHORITY__URL", &sim.service_url());
    let mut app = TestApp::spawn_with(launch.clone());
    sim_mode_at(&sim.base, json!({"mode": "reject", "latency_ms": 500}));

    let docs = post_fifty(&app);
    let at_kill = kill_mid_call(&mut app, &sim);
    let judged_at_kill = at_kill["rejected_count"].as_u64().expect("count");
    assert!(
        judged_at_kill < 50,
        "the kill came after everything was done: {at_kill}"
    );

    sim_mode_at(&sim.base, json!({"mode": "reject"}));
    let dir = app.dir.clone();
    let restarted = TestApp::start_in(&dir, launch);
    let ids: Vec<u64> = docs.iter().map(|(id, _)| *id).collect();
    wait_all(&restarted, &ids, 4, Duration::from_secs(25));

    let stats = sim_stats_at(&sim.base);
    assert_eq!(stats["accepted_count"], 0, "{stats}");
    assert_eq!(stats["rejected_count"], 50, "each judged once: {stats}");
    for (id, code) in &docs {
        let rec = status_of(&restarted, *id);
        assert_eq!(rec["cufe"], code.as_str(), "{rec}");
        assert_eq!(rec["tax_response"]["isValid"], false, "{rec}");
        assert_eq!(rec["tax_response"]["statusCode"], "99", "{rec}");
    }
    assert_received_once(&stats, &docs);
    eprintln!(
        "reject crash test: {judged_at_kill} rejected and {} in flight at the kill; GetStatus calls {}",
        at_kill["in_flight"], stats["calls"]["GetStatus"]
    );
    drop(app);
}

/// SIGKILL while eight clients issue synchronously (`transmit: false`):
/// every document answered 200 is there after the restart with its XML and
/// ZIP (the file log and the records that point into it), and no number is
/// given twice, before or after (the numbering counter is recomputed from
/// the documents when the store was not closed cleanly).
#[test]
fn sigkill_while_issuing_keeps_every_answered_document_and_its_files() {
    issue_kill_and_check(fast_launch(), |_, answered| answered >= 40);
}

/// The same with sled's snapshot written every 20 ms (`[store]
/// checkpoint_ms`): the kill comes once 40 documents were answered and
/// three snapshots were written while they were, so the restart recovers
/// from a snapshot taken beside a live log, not the one of its last open.
#[test]
fn sigkill_after_checkpoints_keeps_every_answered_document_and_its_files() {
    let launch = fast_launch().env("EMISOR_STORE__CHECKPOINT_MS", "20");
    let mut seen = std::collections::BTreeSet::new();
    issue_kill_and_check(launch, move |app, answered| {
        if let Ok(entries) = std::fs::read_dir(app.dir.join("sled")) {
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if name.starts_with("snap.") && !name.ends_with(".generating") {
                    seen.insert(name);
                }
            }
        }
        answered >= 40 && seen.len() >= 4
    });
}

/// Eight clients issue until `kill_when(app, answered)`; the server is
/// killed with SIGKILL and restarted on its data dir: every answered
/// document is there with its number, XML and ZIP, and new numbers are new.
fn issue_kill_and_check(launch: Launch, kill_when: impl FnMut(&TestApp, usize) -> bool) {
    let mut app = TestApp::spawn_with(launch.clone());
    let clients = issue_until(&app, kill_when);
    app.kill();
    let before = clients.finish();
    let dir = app.dir.clone();
    let restarted = TestApp::start_in(&dir, launch);
    check_answered(&restarted, &before, Duration::ZERO);
}

/// A document answered 200.
#[derive(Clone)]
pub struct Answered {
    pub id: u64,
    pub number: u64,
    pub code: String,
    pub xml: String,
}

/// Clients issuing: [`finish`](Self::finish) them once the server is
/// gone.
pub struct Clients {
    answered: Arc<Mutex<Vec<Answered>>>,
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Clients {
    /// The ids and numbers answered 200.
    pub fn finish(self) -> Vec<Answered> {
        self.stop.store(true, Ordering::SeqCst);
        for c in self.threads {
            let _ = c.join();
        }
        let answered = self.answered.lock().expect("lock");
        answered.clone()
    }
}

/// Eight clients issue synchronously (`transmit: false`) until
/// `kill_when(app, answered)`; the caller then kills the server.
pub fn issue_until(app: &TestApp, mut kill_when: impl FnMut(&TestApp, usize) -> bool) -> Clients {
    let answered: Arc<Mutex<Vec<Answered>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let (url, key) = (app.url.clone(), app.sk_test());
    let clients: Vec<_> = (0..8)
        .map(|_| {
            let (answered, stop, url, key) =
                (answered.clone(), stop.clone(), url.clone(), key.clone());
            std::thread::spawn(move || {
                let http = client();
                while !stop.load(Ordering::SeqCst) {
                    let mut body = crate::facturacion::unique(examples::invoice());
                    body["transmit"] = json!(false);
                    let Ok(res) = http
                        .post(format!("{url}/v1/api/facturacion"))
                        .header("X-Api-Key", &key)
                        .json(&body)
                        .send()
                    else {
                        return; // the server is gone
                    };
                    if res.status().as_u16() == 200 {
                        if let Ok(v) = res.json::<Value>() {
                            let doc = &v["data"]["documento"];
                            let id = doc["id"].as_u64().expect("id");
                            let number = doc["numero"].as_str().expect("numero");
                            let code = v["data"]["cufe"].as_str().expect("cufe");
                            let xml = v["data"]["xml"].as_str().expect("xml");
                            answered.lock().expect("lock").push(Answered {
                                id,
                                number: number.parse().expect("number"),
                                code: code.to_string(),
                                xml: xml.to_string(),
                            });
                        }
                    }
                }
            })
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let n = answered.lock().expect("lock").len();
        if kill_when(app, n) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "not ready to kill in 60 s ({n} answered)"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    Clients {
        answered,
        stop,
        threads: clients,
    }
}

/// Every answered document is there in `restarted` with its number and
/// code, and has the XML answered and a ZIP within `rebuilt` (documents a
/// restart builds again); numbers taken after the restart are new ones.
pub fn check_answered(restarted: &TestApp, before: &[Answered], rebuilt: Duration) {
    let key = restarted.sk_test();
    let deadline = Instant::now() + rebuilt;
    let mut numbers: Vec<u64> = Vec::new();
    for Answered {
        id,
        number,
        code,
        xml: answered_xml,
    } in before
    {
        let rec = status_of(restarted, *id);
        assert_eq!(rec["numero"], number.to_string(), "{rec}");
        assert_eq!(rec["cufe"], code.as_str(), "{rec}");
        let xml = loop {
            let res = restarted.get(&format!("/v1/api/facturacion/{id}/xml"), &key);
            if res.status().as_u16() == 200 || Instant::now() >= deadline {
                break res;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(xml.status().as_u16(), 200, "document {id}");
        let xml = xml.text().expect("xml");
        assert!(
            xml.contains(&format!("<cbc:ID>SETP{number}</cbc:ID>")),
            "document {id}"
        );
        // Byte for byte the XML answered, also when built again after a
        // power cut (the same instant: the same signing time and, RSA
        // PKCS#1 v1.5 being deterministic, the same signature).
        assert!(xml == *answered_xml, "document {id}: not the XML answered");
        let zip = restarted.get(&format!("/v1/api/facturacion/{id}/zip"), &key);
        assert_eq!(zip.status().as_u16(), 200);
        assert!(
            zip.bytes().expect("zip").starts_with(b"PK"),
            "document {id}"
        );
        numbers.push(*number);
    }
    // Numbers taken after the restart are new ones.
    for _ in 0..5 {
        let mut body = crate::facturacion::unique(examples::invoice());
        body["transmit"] = json!(false);
        let (status, res) = json(restarted.post("/v1/api/facturacion", &key, &body));
        assert_eq!(status, 200, "{res}");
        numbers.push(
            res["data"]["documento"]["numero"]
                .as_str()
                .expect("numero")
                .parse()
                .expect("number"),
        );
    }
    let mut unique_numbers = numbers.clone();
    unique_numbers.sort_unstable();
    unique_numbers.dedup();
    assert_eq!(
        unique_numbers.len(),
        numbers.len(),
        "a number was given twice: {numbers:?}"
    );
    eprintln!(
        "issuing crash test: {} answered before the kill",
        before.len()
    );
}
