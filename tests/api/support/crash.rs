//! Clients that issue until the server is killed, and what must be there
//! after its restart.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use emisor::api::invoice_request::examples;
use serde_json::{json, Value};

use super::app::*;
use super::external_sim::ExternalSim;
use super::flow::*;

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
                    let mut body = super::bodies::unique(examples::invoice());
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
        let mut body = super::bodies::unique(examples::invoice());
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
