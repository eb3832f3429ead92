//! A crash mid-processing (issue 5): 50 asynchronous documents accepted,
//! the server killed with SIGKILL while it transmits them to an external
//! simulator, restarted on the same data dir. Every document reaches state 2
//! and the simulator accepted each code exactly once, received once.

use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use emisor::api::facturacion::request::examples;
use serde_json::{json, Value};

use crate::flow_helpers::*;
use crate::helpers::*;

/// `emisor tax-sim` in its own process; killed on drop.
struct ExternalSim {
    child: Child,
    base: String,
    _stdout: BufReader<ChildStdout>,
}

impl ExternalSim {
    fn start() -> ExternalSim {
        let mut child = Command::new(BIN)
            .args(["tax-sim", "--bind", "127.0.0.1:0"])
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start tax-sim");
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        let base = loop {
            line.clear();
            let n = stdout.read_line(&mut line).expect("read tax-sim stdout");
            assert!(n > 0, "tax-sim exited before listening");
            if let Some(i) = line.find("listening on http://") {
                break line[i + "listening on ".len()..].trim().to_string();
            }
        };
        ExternalSim {
            child,
            base,
            _stdout: stdout,
        }
    }

    fn service_url(&self) -> String {
        format!("{}/WcfDianCustomerServices.svc", self.base)
    }

    /// Registers the demo company as `demo-keys.json` describes it.
    fn register(&self, keys: &Value) {
        let ranges: Vec<Value> = keys["resoluciones"]
            .as_array()
            .expect("resoluciones")
            .iter()
            .map(|r| {
                json!({
                    "resolutionNumber": "18760000001",
                    "prefix": r["prefijo"],
                    "fromNumber": r["desde"],
                    "toNumber": r["hasta"],
                    "validDateFrom": r["vigencia_desde"],
                    "validDateTo": r["vigencia_hasta"],
                    "technicalKey": r["clave_tecnica"],
                })
            })
            .collect();
        let issuer = json!({
            "nit": keys["nit"],
            "software": [
                {"id": keys["software_id"], "pin": keys["software_pin"]},
                {"id": keys["payroll_software_id"], "pin": keys["payroll_software_pin"]},
            ],
            "ranges": ranges,
            "testSetIds": [keys["test_set_id"]],
        });
        let res = client()
            .put(format!("{}/__sim/issuers", self.base))
            .json(&issuer)
            .send()
            .expect("PUT /__sim/issuers");
        assert!(res.status().is_success(), "register: {}", res.status());
    }
}

impl Drop for ExternalSim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn sigkill_mid_processing_loses_nothing_and_sends_nothing_twice() {
    let sim = ExternalSim::start();
    let launch = fast_launch().env("EMISOR_AUTHORITY__URL", &sim.service_url());
    let mut app = TestApp::spawn_with(launch.clone());
    sim.register(&app.keys);
    // Slow answers: three calls in flight for half a second each, so the
    // 50 documents take seconds to transmit and the kill lands mid-way.
    sim_mode_at(&sim.base, json!({"mode": "slow", "latency_ms": 500}));

    let mut docs: Vec<(u64, String)> = Vec::new();
    for _ in 0..50 {
        let res = post_async(&app, &examples::invoice());
        docs.push((
            res["data"]["documento"]["id"].as_u64().expect("id"),
            res["data"]["cufe"].as_str().expect("cufe").to_string(),
        ));
    }
    // Kill while calls are in flight at the simulator.
    let deadline = Instant::now() + Duration::from_secs(10);
    while sim_stats_at(&sim.base)["in_flight"].as_u64().unwrap_or(0) == 0 {
        assert!(Instant::now() < deadline, "nothing in flight");
        std::thread::sleep(Duration::from_millis(10));
    }
    app.kill();
    let at_kill = sim_stats_at(&sim.base);
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
    for (id, code) in &docs {
        let rec = status_of(&restarted, *id);
        assert_eq!(rec["cufe"], code.as_str(), "{rec}");
        assert_eq!(
            stats["accepted"][code]["received"], 1,
            "document {id} reached the simulator once"
        );
    }
    assert_eq!(
        stats["calls"]["SendBillSync"], 50,
        "no document sent twice: {stats}"
    );
    eprintln!(
        "crash test: {accepted_at_kill} accepted and {} in flight at the kill; GetStatus calls {}",
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
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};

    let launch = fast_launch();
    let mut app = TestApp::spawn_with(launch.clone());
    let answered: Arc<Mutex<Vec<(u64, u64)>>> = Arc::default();
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
                            answered
                                .lock()
                                .expect("lock")
                                .push((id, number.parse().expect("number")));
                        }
                    }
                }
            })
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    while answered.lock().expect("lock").len() < 40 {
        assert!(Instant::now() < deadline, "40 documents not issued in 60 s");
        std::thread::sleep(Duration::from_millis(5));
    }
    app.kill();
    stop.store(true, Ordering::SeqCst);
    for c in clients {
        let _ = c.join();
    }
    let before = answered.lock().expect("lock").clone();

    let dir = app.dir.clone();
    let restarted = TestApp::start_in(&dir, launch);
    let key = restarted.sk_test();
    let mut numbers: Vec<u64> = Vec::new();
    for (id, number) in &before {
        let rec = status_of(&restarted, *id);
        assert_eq!(rec["numero"], number.to_string(), "{rec}");
        let xml = restarted.get(&format!("/v1/api/facturacion/{id}/xml"), &key);
        assert_eq!(xml.status().as_u16(), 200);
        let xml = xml.text().expect("xml");
        assert!(
            xml.contains(&format!("<cbc:ID>SETP{number}</cbc:ID>")),
            "document {id}"
        );
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
