//! The authority simulator: in-process under `serve`, and alone as `tax-sim`.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::support::app::*;

#[test]
fn serve_runs_the_simulator_and_registers_the_demo_company() {
    let app = TestApp::spawn_with(Launch::default().shared_clock());
    let sim = app.keys["tax_sim_url"].as_str().unwrap().to_string();
    assert!(sim.starts_with("http://127.0.0.1:"), "{sim}");
    let wsdl = app
        .client
        .get(format!("{sim}/WcfDianCustomerServices.svc?wsdl"))
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert!(
        wsdl.contains("SendBillSync") && wsdl.contains(&sim),
        "WSDL names its own address"
    );
    let issuers: Value = app
        .client
        .get(format!("{sim}/__sim/issuers"))
        .send()
        .unwrap()
        .json()
        .unwrap();
    let text = issuers.to_string();
    assert!(text.contains("900000001"), "{text}");
    // Its own ranges (the test sets are the authority's, not registered).
    let own_invoice_key = app.keys["resoluciones"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id_tipo_documento"] == 1 && r["set_de_pruebas"] == false)
        .and_then(|r| r["clave_tecnica"].as_str())
        .unwrap();
    assert!(
        text.contains(own_invoice_key) && text.contains("\"prefix\":\"FE\""),
        "ranges with technical keys: {text}"
    );
    assert!(!text.contains("\"SETP\""), "{text}");
    let stats = app.client.get(format!("{sim}/__sim/stats")).send().unwrap();
    assert_eq!(stats.status().as_u16(), 200);
}

#[test]
fn tax_sim_runs_alone() {
    let mut child = Command::new(BIN)
        .args(["tax-sim", "--bind", "127.0.0.1:0"])
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    out.read_line(&mut line).unwrap();
    let url = line.trim().rsplit(' ').next().unwrap().to_string();
    assert!(url.starts_with("http://127.0.0.1:"), "{line}");
    let res = client().get(format!("{url}/__sim/stats")).send().unwrap();
    assert_eq!(res.status().as_u16(), 200);
    // SAFETY: kill(2) on the pid of our own child, not yet waited for.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    drop(out);
    assert!(status.success(), "stops cleanly on SIGTERM: {status}");
}

/// Without `[testing] shared_clock` (the default) the in-process simulator
/// neither moves the service's clock nor lists PINs and keys: any local
/// process can reach its port. Registering issuers keeps working.
#[test]
fn the_in_process_simulator_serves_no_clock_and_no_issuers_list_by_default() {
    let app = TestApp::spawn();
    let sim = app.keys["tax_sim_url"].as_str().unwrap().to_string();
    let moved = app
        .client
        .post(format!("{sim}/__sim/clock"))
        .json(&serde_json::json!({"offset_s": 315_000_000}))
        .send()
        .unwrap();
    assert_eq!(moved.status(), 404);
    let listed = app
        .client
        .get(format!("{sim}/__sim/issuers"))
        .send()
        .unwrap();
    assert_eq!(listed.status(), 404);
    let text = listed.text().unwrap();
    assert!(!text.contains("900000001"), "{text}");
    let registered = app
        .client
        .put(format!("{sim}/__sim/issuers"))
        .json(&serde_json::json!({"nit": "900999111", "software": [], "ranges": []}))
        .send()
        .unwrap();
    assert!(
        registered.status().is_success(),
        "{}",
        registered.text().unwrap()
    );

    // The service kept the real date: a document issued now carries today.
    let today = || {
        chrono::Utc::now()
            .with_timezone(&chrono::FixedOffset::west_opt(5 * 3600).unwrap())
            .date_naive()
            .to_string()
    };
    let before = today();
    let (status, res) = json(app.post(
        "/v1/api/facturacion",
        &app.sk_test(),
        &crate::support::bodies::unique(emisor::api::invoice_request::examples::invoice()),
    ));
    assert_eq!(status, 200, "{res}");
    let xml = app
        .get(
            &format!("/v1/api/facturacion/{}/xml", res["data"]["documento"]["id"]),
            &app.sk_test(),
        )
        .text()
        .unwrap();
    let after = today();
    assert!(
        [before, after]
            .iter()
            .any(|d| xml.contains(&format!("<cbc:IssueDate>{d}</cbc:IssueDate>"))),
        "{xml}"
    );
}
