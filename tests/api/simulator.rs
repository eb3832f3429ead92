//! The authority simulator: in-process under `serve`, and alone as `tax-sim`.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::helpers::*;

#[test]
fn serve_runs_the_simulator_and_registers_the_demo_company() {
    let app = TestApp::spawn();
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
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    drop(out);
    assert!(status.success(), "stops cleanly on SIGTERM: {status}");
}
