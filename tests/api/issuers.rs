//! Demo companies register themselves with the simulator they use
//! (decisions.md §5 "Simulator issuers"): one made later through the admin
//! API can issue at once, and a simulator started after the server still
//! learns every demo company.

use std::time::{Duration, Instant};

use emisor::api::invoice_request::examples;
use serde_json::{json, Value};

use crate::support::app::*;
use crate::support::bodies::unique;
use crate::support::external_sim::{service_url_of, ExternalSim};
use crate::support::flow::*;

/// `POST /admin/companies` with `demo: true`; its `demo-keys.json` shape.
fn new_demo_company(app: &TestApp, nit: &str) -> Value {
    let (status, created) = json(app.admin_post(
        "/admin/companies",
        &json!({"nit": nit, "razon_social": "Sandbox Dos S.A.S.", "demo": true}),
    ));
    assert_eq!(status, 201, "{created}");
    created["data"].clone()
}

/// A synchronous invoice with `key`; the answer's data.
fn issue_invoice(app: &TestApp, key: &str) -> Value {
    let (status, res) = json(app.post("/v1/api/facturacion", key, &unique(examples::invoice())));
    assert_eq!(status, 200, "{res}");
    res["data"].clone()
}

fn assert_accepted(data: &Value) {
    assert_eq!(data["id_estado_documento"], 2, "{data}");
    assert_eq!(data["transmission"]["isValid"], true, "{data}");
    assert_eq!(data["transmission"]["statusCode"], "00", "{data}");
}

fn known_nits(sim_base: &str) -> Vec<String> {
    let list: Value = client()
        .get(format!("{sim_base}/__sim/issuers"))
        .send()
        .expect("GET /__sim/issuers")
        .json()
        .expect("issuers JSON");
    list.as_array()
        .expect("a list")
        .iter()
        .map(|i| i["nit"].as_str().expect("nit").to_string())
        .collect()
}

#[test]
fn a_demo_company_made_through_the_admin_api_issues_at_once() {
    let app = TestApp::spawn_with(Launch::default().shared_clock());
    let second = new_demo_company(&app, "800197268");
    let key = second["sk_test"].as_str().expect("sk_test");

    let data = issue_invoice(&app, key);
    assert_accepted(&data);
    let stats = sim_stats(&app);
    let code = data["cufe"].as_str().expect("cufe");
    assert_eq!(
        stats["accepted"][code]["issuer_nit"], "800197268",
        "accepted as the new company's: {stats}"
    );
    let nits = known_nits(&sim_url(&app));
    assert_eq!(nits, ["800197268", "900000001"], "both demo companies");
}

#[test]
fn a_simulator_started_after_the_server_learns_every_demo_company() {
    // A port with nothing on it yet; the simulator takes it later.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let base = format!("http://127.0.0.1:{port}");
    let app =
        TestApp::spawn_with(fast_launch().env("EMISOR_AUTHORITY__URL", &service_url_of(&base)));
    // Made while the simulator is down: its registration waits too.
    let second = new_demo_company(&app, "800197268");
    std::thread::sleep(Duration::from_millis(300));

    let sim = ExternalSim::start_on(&format!("127.0.0.1:{port}"));
    assert_eq!(sim.base, base);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let nits = known_nits(&sim.base);
        if nits == ["800197268", "900000001"] {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "registrations did not land within 10 s: {nits:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_accepted(&issue_invoice(&app, &app.sk_test()));
    let key = second["sk_test"].as_str().expect("sk_test");
    assert_accepted(&issue_invoice(&app, key));
    assert_eq!(sim_stats_at(&sim.base)["accepted_count"], 2);
}
