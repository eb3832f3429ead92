//! Reconciliation with the authority (`[reconciliation]`,
//! `GET|POST /admin/reconciliacion`, `operador:reconciliacion`): over real
//! SOAP, a queued document the authority accepted while the answer was
//! lost is set to 2 without a second send, under its job's claim; an
//! accepted document the authority does not know is reported once, also
//! after a restart.

use std::time::{Duration, Instant};

use emisor::api::invoice_request::examples;
use serde_json::{json, Value};

use crate::support::app::*;
use crate::support::bodies::unique;
use crate::support::external_sim::ExternalSim;
use crate::support::flow::*;

const EVENT: &str = "operador:reconciliacion";

/// Every queued document asked about, every accepted one sampled; the
/// periodic pass far away (the tests run passes through the admin API).
fn launch() -> Launch {
    Launch::default()
        .env("EMISOR_RECONCILIATION__STUCK_AFTER_S", "0")
        .env("EMISOR_RECONCILIATION__SAMPLE_PERCENT", "100")
        .env("EMISOR_RECONCILIATION__INTERVAL_S", "86400")
        .env("EMISOR_RATE_LIMIT__REQUESTS_PER_MINUTE", "100000")
}

fn sends(stats: &Value) -> u64 {
    stats["calls"]["SendBillSync"].as_u64().unwrap_or(0)
}

fn get_status_calls(stats: &Value) -> u64 {
    stats["calls"]["GetStatus"].as_u64().unwrap_or(0)
}

/// A pass now; its summary.
fn pass(app: &TestApp) -> Value {
    let res = app
        .client
        .post(format!("{}/admin/reconciliacion", app.url))
        .bearer_auth(app.admin_token())
        .send()
        .expect("reconciliation pass");
    let (status, body) = json(res);
    assert_eq!(status, 200, "{body}");
    body["data"].clone()
}

fn report(app: &TestApp) -> Value {
    let (status, body) = json(app.admin_get("/admin/reconciliacion"));
    assert_eq!(status, 200, "{body}");
    body["data"].clone()
}

/// A synchronous invoice; its id and code.
fn issue(app: &TestApp) -> (u64, String, Value) {
    let (status, res) = json(app.post(
        "/v1/api/facturacion",
        &app.sk_test(),
        &unique(examples::invoice()),
    ));
    assert!(
        status == 200 || status == 201 || status == 202,
        "{status} {}",
        res["message"]
    );
    let id = res["data"]["documento"]["id"].as_u64().expect("id");
    let code = res["data"]["cufe"].as_str().expect("cufe").to_string();
    (id, code, res)
}

fn reconciliation_events(events: &[Value]) -> Vec<&Value> {
    events.iter().filter(|e| e["event"] == EVENT).collect()
}

/// The done-when case, with `emisor tax-sim` in its own process and two
/// services pointed at it: the
/// simulator accepts the document and its answer is lost (mode `lose`:
/// 502 from a gateway). The retry is far away (`time_scale` 100); the
/// reconciliation asks, finds it accepted and records it in state 2 with
/// one send only; the finding is in the report, sent once to the operator,
/// and counted in `/metrics` without any company's figures. The second
/// service's pass sees its own accepted document, matching.
#[test]
fn a_document_accepted_while_its_answer_was_lost_is_found_and_set_to_2_without_a_second_send() {
    let sim = ExternalSim::start();
    let app = TestApp::spawn_with(
        launch()
            .env("EMISOR_AUTHORITY__URL", &sim.service_url())
            .env("EMISOR_RESILIENCE__TIME_SCALE", "100"),
    );
    let mut operator = Ws::connect_operator(&app, &app.admin_token()).expect("operator socket");
    sim_mode_at(&sim.base, json!({"mode": "lose"}));
    let (id, code, res) = issue(&app);
    sim_mode_at(&sim.base, json!({"mode": "up"}));
    assert_eq!(
        status_of(&app, id)["id_estado_documento"],
        3,
        "{}",
        res["message"]
    );
    let stats = sim_stats_at(&sim.base);
    assert_eq!(
        stats["accepted"][&code]["received"], 1,
        "accepted there: {stats}"
    );

    let summary = pass(&app);
    assert_eq!(summary["en_cola"], 1, "{summary}");
    assert_eq!(summary["en_cola_consultados"], 1, "{summary}");
    assert_eq!(summary["corregidos"], 1, "{summary}");
    assert_eq!(summary["hallazgos_nuevos"], 1, "{summary}");
    assert!(summary["interrumpida"].is_null(), "{summary}");

    let rec = status_of(&app, id);
    assert_eq!(rec["id_estado_documento"], 2, "{rec}");
    let stats = sim_stats_at(&sim.base);
    assert_eq!(sends(&stats), 1, "one SendBillSync: {stats}");
    assert_eq!(stats["accepted"][&code]["received"], 1, "{stats}");
    assert!(get_status_calls(&stats) >= 1, "{stats}");

    let found = report(&app);
    let findings = found["hallazgos"].as_array().expect("hallazgos");
    assert_eq!(findings.len(), 1, "{found}");
    let f = &findings[0];
    assert_eq!(f["tipo"], "aceptado_sin_respuesta", "{f}");
    assert_eq!(f["id_documento"], id);
    assert_eq!(f["id_empresa"], 1);
    assert_eq!(f["ambiente"], "test");
    assert_eq!(f["codigo"], code.as_str());
    assert_eq!(f["estado_servicio"], 3);
    assert_eq!(f["estado_autoridad"], "aceptado");
    assert_eq!(f["corregido"], true);
    assert!(
        f["fecha"].as_str().expect("fecha").ends_with("-05:00"),
        "{f}"
    );
    assert_eq!(found["ultima_pasada"]["corregidos"], 1, "{found}");

    let heard = operator.wait_for(Duration::from_secs(5), |e| e["event"] == EVENT);
    assert_eq!(heard["data"]["id_documento"], id, "{heard}");
    // Nothing new the second time.
    let again = pass(&app);
    assert_eq!(
        (again["en_cola"].clone(), again["hallazgos_nuevos"].clone()),
        (json!(0), json!(0))
    );
    let more = operator.events_within(Duration::from_millis(300));
    assert!(reconciliation_events(&more).is_empty(), "{more:?}");
    assert_eq!(sends(&sim_stats_at(&sim.base)), 1);

    let metrics = app
        .client
        .get(format!("{}/metrics", app.url))
        .send()
        .expect("metrics")
        .text()
        .expect("metrics text");
    let line = metrics
        .lines()
        .find(|l| l.starts_with("emisor_reconciliation_findings_total"))
        .unwrap_or_else(|| panic!("no findings counter: {metrics}"));
    assert!(line.contains("tipo=\"aceptado_sin_respuesta\""), "{line}");
    assert!(line.ends_with(" 1"), "{line}");
    for l in metrics
        .lines()
        .filter(|l| l.starts_with("emisor_reconciliation"))
    {
        assert!(!l.contains("empresa") && !l.contains("company"), "{l}");
    }

    // A second service on the same authority: its own documents only.
    let other = TestApp::spawn_with(launch().env("EMISOR_AUTHORITY__URL", &sim.service_url()));
    let (other_id, _, res) = issue(&other);
    assert_eq!(res["data"]["id_estado_documento"], 2, "{}", res["message"]);
    let summary = pass(&other);
    assert_eq!(
        (summary["en_cola"].clone(), summary["aceptados"].clone()),
        (json!(0), json!(1)),
        "{summary}"
    );
    assert_eq!(summary["discrepancias"], 0, "{summary}");
    assert_eq!(status_of(&other, other_id)["id_estado_documento"], 2);
    assert_eq!(sends(&sim_stats_at(&sim.base)), 2);
}

/// An accepted document the authority no longer knows (the simulator
/// reset forgets what it accepted) is a mismatch: reported, sent to the
/// operator once, not again at the next pass, nor after a restart.
#[test]
fn an_accepted_document_the_authority_does_not_know_is_reported_once_across_a_restart() {
    let mut app = TestApp::spawn_with(launch());
    let (id, code, res) = issue(&app);
    assert_eq!(res["data"]["id_estado_documento"], 2, "{}", res["message"]);
    let mut operator = Ws::connect_operator(&app, &app.admin_token()).expect("operator socket");
    let sim = sim_url(&app);
    let reset = client()
        .post(format!("{sim}/__sim/reset"))
        .send()
        .expect("sim reset");
    assert!(reset.status().is_success());

    let summary = pass(&app);
    assert_eq!(summary["aceptados"], 1, "{summary}");
    assert_eq!(summary["aceptados_consultados"], 1, "{summary}");
    assert_eq!(summary["discrepancias"], 1, "{summary}");
    assert_eq!(summary["hallazgos_nuevos"], 1, "{summary}");
    let heard = operator.wait_for(Duration::from_secs(5), |e| e["event"] == EVENT);
    assert_eq!(heard["data"]["tipo"], "desconocido", "{heard}");
    assert_eq!(heard["data"]["id_documento"], id);
    assert_eq!(heard["data"]["codigo"], code.as_str());
    assert_eq!(heard["data"]["estado_servicio"], 2);
    assert_eq!(heard["data"]["corregido"], false);
    // The document is left as it is: the operator decides.
    assert_eq!(status_of(&app, id)["id_estado_documento"], 2);

    let again = pass(&app);
    assert_eq!(again["discrepancias"], 1, "{again}");
    assert_eq!(again["hallazgos_nuevos"], 0, "{again}");
    let more = operator.events_within(Duration::from_millis(300));
    assert!(reconciliation_events(&more).is_empty(), "{more:?}");

    drop(operator);
    let dir = app.dir.clone();
    app.kill();
    let app2 = TestApp::start_in(&dir, launch());
    let mut operator = Ws::connect_operator(&app2, &app2.admin_token()).expect("operator socket");
    let after = pass(&app2);
    assert_eq!(after["discrepancias"], 1, "{after}");
    assert_eq!(after["hallazgos_nuevos"], 0, "remembered: {after}");
    let more = operator.events_within(Duration::from_millis(300));
    assert!(reconciliation_events(&more).is_empty(), "{more:?}");
    let found = report(&app2);
    assert_eq!(
        found["hallazgos"].as_array().map(Vec::len),
        Some(1),
        "{found}"
    );
    assert_eq!(found["ultima_pasada"]["discrepancias"], 1, "{found}");
}

/// A transmission worker holds its job's claim while its call is out: a
/// pass finds the document queued and leaves it to the worker, asking
/// nothing; the worker's answer settles it, sent once.
#[test]
fn a_worker_holding_the_claim_is_not_overtaken() {
    let app = TestApp::spawn_with(launch());
    sim_mode(&app, json!({"mode": "slow", "latency_ms": 3000}));
    let res = post_async(&app, &examples::invoice());
    let id = res["data"]["documento"]["id"].as_u64().expect("id");
    let code = res["data"]["cufe"].as_str().expect("cufe").to_string();
    // The simulator has the document: the worker waits for its answer.
    let deadline = Instant::now() + Duration::from_secs(10);
    while sim_stats(&app)["accepted"].get(&code).is_none() {
        assert!(Instant::now() < deadline, "the simulator never got it");
        std::thread::sleep(Duration::from_millis(20));
    }
    let summary = pass(&app);
    assert_eq!(summary["en_cola"], 1, "{summary}");
    assert_eq!(summary["en_cola_en_curso"], 1, "{summary}");
    assert_eq!(summary["en_cola_consultados"], 0, "{summary}");
    assert_eq!(summary["corregidos"], 0, "{summary}");
    sim_mode(&app, json!({"mode": "up"}));

    wait_state(&app, id, 2, Duration::from_secs(20));
    let stats = sim_stats(&app);
    assert_eq!(sends(&stats), 1, "{stats}");
    assert_eq!(get_status_calls(&stats), 0, "nobody asked: {stats}");
    assert!(report(&app)["hallazgos"]
        .as_array()
        .expect("hallazgos")
        .is_empty());
}

/// The pass also runs by itself every `interval_s`: a lost answer is
/// settled with no operator action.
#[test]
fn the_periodic_pass_settles_a_lost_answer_by_itself() {
    let app = TestApp::spawn_with(
        launch()
            .env("EMISOR_RECONCILIATION__INTERVAL_S", "1")
            .env("EMISOR_RESILIENCE__TIME_SCALE", "100"),
    );
    sim_mode(&app, json!({"mode": "lose"}));
    let (id, code, _) = issue(&app);
    sim_mode(&app, json!({"mode": "up"}));
    wait_state(&app, id, 2, Duration::from_secs(20));
    let stats = sim_stats(&app);
    assert_eq!(sends(&stats), 1, "{stats}");
    assert_eq!(stats["accepted"][&code]["received"], 1, "{stats}");
    // The state is written during the pass; the report when it ends.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let mut found = report(&app);
    while found["hallazgos"][0].is_null() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        found = report(&app);
    }
    assert_eq!(found["hallazgos"][0]["id_documento"], id, "{found}");
}
