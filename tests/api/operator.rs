//! The operator's channel and the warnings (decisions.md "Operator
//! events"): `GET /v1/api/ws/operador` with the admin token, operator events
//! POSTed signed to `[operator] webhook_url`, and `operador:alerta` raised
//! once per crossing, remembered across a restart.

use std::time::{Duration, Instant};

use emisor::api::invoice_request::examples;
use emisor::issuing::webhooks::signature;
use serde_json::{json, Value};

use crate::support::app::*;
use crate::support::bodies::unique;
use crate::support::flow::*;
use crate::webhooks::{header, receiver, Received};

const ALERT: &str = "operador:alerta";
const SECRET: &str = "opsec_prueba";
const WITHIN: Duration = Duration::from_secs(20);
/// Long enough for a second alert to arrive (several periodic checks).
const QUIET: Duration = Duration::from_secs(3);

/// A server whose operator events go to `url`, warned at half of a range
/// left, checked every second.
fn launch(url: &str) -> Launch {
    fast_launch()
        .env("EMISOR_OPERATOR__WEBHOOK_URL", url)
        .env("EMISOR_OPERATOR__WEBHOOK_SECRET", SECRET)
        .env("EMISOR_WARNINGS__PERCENT_LEFT", "50")
        .env("EMISOR_WARNINGS__CHECK_INTERVAL_S", "1")
}

/// Adds to company 1 an invoice resolution numbered 1 to 10 (the newest,
/// so production invoices take their numbers from it); its id.
fn ten_number_resolution(app: &TestApp) -> u64 {
    let (status, added) = json(app.admin_post(
        "/admin/companies/1/resoluciones",
        &json!({"id_tipo_documento": 1, "numero_resolucion": "18760000099",
                "fecha_resolucion": "2026-01-01", "prefijo": "AL", "desde": 1, "hasta": 10,
                "vigencia_desde": "2026-01-01", "vigencia_hasta": "2030-12-31",
                "clave_tecnica": "fc8eac422eba16e22ffd8c6f94b3f40a6e38162c"}),
    ));
    assert_eq!(status, 201, "{added}");
    added["data"]["id"].as_u64().expect("id")
}

/// A production invoice; its number.
fn issue_live(app: &TestApp) -> u64 {
    let (status, res) = json(app.post(
        "/v1/api/facturacion",
        &app.sk_live(),
        &unique(examples::invoice()),
    ));
    assert_eq!(status, 200, "{res}");
    assert_eq!(res["data"]["documento"]["prefijo"], "AL", "{res}");
    res["data"]["documento"]["numero"]
        .as_str()
        .map(|n| n.parse().expect("number"))
        .or_else(|| res["data"]["documento"]["numero"].as_u64())
        .expect("numero")
}

fn is_numbering_alert(e: &Value, resolution: u64) -> bool {
    e["event"] == ALERT && e["data"]["clave"] == format!("numeracion:{resolution}")
}

/// One delivery: headers (lower-case names) and body.
type Delivery = (Vec<(String, String)>, Vec<u8>);

/// The operator's deliveries received so far that are about `key`.
fn posted(got: &Received, key: &str) -> Vec<Delivery> {
    got.lock()
        .unwrap()
        .iter()
        .filter(|(_, body)| serde_json::from_slice::<Value>(body).unwrap()["data"]["clave"] == key)
        .cloned()
        .collect()
}

#[test]
fn operator_socket_takes_the_admin_token_only() {
    let app = TestApp::spawn_with(fast_launch());
    assert_eq!(Ws::connect_operator(&app, "adm_wrong").err(), Some(401));
    assert!(Ws::connect_operator(&app, &app.admin_token()).is_ok());
    // A customer key is not an admin token.
    assert_eq!(Ws::connect_operator(&app, &app.sk_test()).err(), Some(401));
    // Counted with the other wrong admin tokens of the address: its budget
    // spent, admin requests wait, the right token too.
    for _ in 0..10 {
        let _ = Ws::connect_operator(&app, "adm_wrong");
    }
    assert_eq!(
        Ws::connect_operator(&app, &app.admin_token()).err(),
        Some(429)
    );
    assert_error(app.admin_get("/admin/companies"), 429, "RATE_LIMITED");
}

#[test]
fn five_numbers_left_warn_once_and_a_restart_does_not_warn_again() {
    let (url, got) = receiver(0);
    let mut app = TestApp::spawn_with(launch(&url));
    let resolution = ten_number_resolution(&app);
    let mut operator = Ws::connect_operator(&app, &app.admin_token()).expect("operator socket");
    let mut company = Ws::connect(&app, &app.sk_live());
    let mut test_room = Ws::connect(&app, &app.sk_test());

    // 6 left after the fourth: not yet half.
    for expected in 1..=4 {
        assert_eq!(issue_live(&app), expected);
    }
    assert!(
        !operator
            .events_within(Duration::from_millis(1500))
            .iter()
            .any(|e| is_numbering_alert(e, resolution)),
        "no warning with 6 of 10 left"
    );
    // The fifth leaves 5: one warning, to the operator and the company.
    assert_eq!(issue_live(&app), 5);
    let alert = operator.wait_for(WITHIN, |e| is_numbering_alert(e, resolution));
    let data = &alert["data"];
    assert_eq!(data["id_empresa"], 1, "{alert}");
    assert_eq!(data["tipo"], "numeracion", "{alert}");
    assert_eq!(data["detalle"]["restantes"], 5, "{alert}");
    assert_eq!(data["detalle"]["hasta"], 10, "{alert}");
    let heard = company.wait_for(WITHIN, |e| is_numbering_alert(e, resolution));
    assert_eq!(heard["data"], alert["data"], "the same event in empresa_1");

    // Signed like a company webhook, with [operator] webhook_secret.
    let key = format!("numeracion:{resolution}");
    let deadline = Instant::now() + WITHIN;
    while posted(&got, &key).is_empty() {
        assert!(Instant::now() < deadline, "operator webhook not posted");
        std::thread::sleep(Duration::from_millis(50));
    }
    let (headers, body) = posted(&got, &key).remove(0);
    assert_eq!(
        header(&headers, "x-emisor-signature"),
        signature(SECRET, &body),
        "HMAC-SHA256 of the body"
    );
    assert_eq!(header(&headers, "x-emisor-event"), ALERT);
    let event: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(event["data"], alert["data"]);
    // Logged like a company's deliveries.
    let deadline = Instant::now() + WITHIN;
    loop {
        let (status, log) = json(app.admin_get("/admin/operador/webhooks"));
        assert_eq!(status, 200, "{log}");
        let delivered = log["data"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["delivery"]["event"] == ALERT && d["delivery"]["status"] == "delivered");
        if delivered {
            break;
        }
        assert!(Instant::now() < deadline, "operator delivery log: {log}");
        std::thread::sleep(Duration::from_millis(50));
    }

    // A sixth number (4 left) is the same crossing: nothing more.
    assert_eq!(issue_live(&app), 6);
    let more = operator.events_within(QUIET);
    assert!(
        !more.iter().any(|e| is_numbering_alert(e, resolution)),
        "raised twice: {more:?}"
    );
    let more = company.events_within(Duration::from_millis(200));
    assert!(!more.iter().any(|e| is_numbering_alert(e, resolution)));
    // Production numbering is not the test environment's news.
    let test_heard = test_room.events_within(Duration::from_millis(200));
    assert!(
        !test_heard.iter().any(|e| e["event"] == ALERT),
        "{test_heard:?}"
    );
    assert_eq!(posted(&got, &key).len(), 1);

    // Killed and started again on the same data dir: remembered.
    drop((operator, company, test_room));
    let dir = app.dir.clone();
    app.kill();
    let app2 = TestApp::start_in(&dir, launch(&url));
    let mut operator = Ws::connect_operator(&app2, &app2.admin_token()).expect("operator socket");
    let after = operator.events_within(QUIET);
    assert!(
        !after.iter().any(|e| is_numbering_alert(e, resolution)),
        "raised again after the restart: {after:?}"
    );
    assert_eq!(
        posted(&got, &key).len(),
        1,
        "posted again after the restart"
    );
    // Still in force in the company's answer.
    let (status, company) = json(app2.admin_get("/admin/companies/1"));
    assert_eq!(status, 200, "{company}");
    let numbering = company["data"]["alertas"]["numeracion"]
        .as_array()
        .expect("numeracion")
        .iter()
        .find(|n| n["id_resolucion"] == resolution)
        .cloned()
        .expect("the resolution");
    assert_eq!(numbering["restantes"], 4, "{numbering}");
    assert_eq!(numbering["en_alerta"], true, "{numbering}");
    drop(app);
}

#[test]
fn a_certificate_expiring_soon_shows_in_the_admin_answer_and_warns() {
    let (url, got) = receiver(0);
    let app = TestApp::spawn_with(launch(&url));
    let (status, company) = json(app.admin_get("/admin/companies/1"));
    assert_eq!(status, 200, "{company}");
    let alertas = &company["data"]["alertas"];
    assert_eq!(alertas["certificado"]["en_alerta"], false, "{alertas}");
    assert_eq!(alertas["umbral_dias"], 30, "{alertas}");
    assert_eq!(alertas["plan"]["limite"], 10_000, "{alertas}");
    assert_eq!(alertas["plan"]["en_alerta"], false, "{alertas}");

    let mut operator = Ws::connect_operator(&app, &app.admin_token()).expect("operator socket");
    let mut test_room = Ws::connect(&app, &app.sk_test());
    // The company's own webhook hears it too, signed with its own secret.
    let (company_url, company_got) = receiver(0);
    let (status, updated) = json(
        app.client
            .patch(format!("{}/admin/companies/1", app.url))
            .bearer_auth(app.admin_token())
            .json(&json!({ "webhook_url": company_url }))
            .send()
            .unwrap(),
    );
    assert_eq!(status, 200, "{updated}");
    let company_secret = updated["data"]["webhook_secret"]
        .as_str()
        .expect("webhook_secret")
        .to_string();
    use base64::Engine;
    let p12 = base64::engine::general_purpose::STANDARD.encode(crate::admin::pkcs12(-1, 10));
    let (status, imported) = json(app.admin_post(
        "/admin/companies/1/certificado",
        &json!({"pkcs12_base64": p12, "password": "secreto"}),
    ));
    assert_eq!(status, 200, "{imported}");

    let (_, company) = json(app.admin_get("/admin/companies/1"));
    let cert = &company["data"]["alertas"]["certificado"];
    assert_eq!(cert["en_alerta"], true, "{cert}");
    let days = cert["dias_restantes"].as_i64().expect("dias_restantes");
    assert!((9..=10).contains(&days), "{cert}");

    // The periodic check raises it: operator and both environments' rooms.
    let is_cert = |e: &Value| e["event"] == ALERT && e["data"]["tipo"] == "certificado";
    let alert = operator.wait_for(WITHIN, is_cert);
    assert_eq!(alert["data"]["detalle"]["en_alerta"], true, "{alert}");
    test_room.wait_for(WITHIN, is_cert);

    // /metrics counts companies in warning, never one company's figures.
    let deadline = Instant::now() + WITHIN;
    loop {
        let text = app
            .client
            .get(format!("{}/metrics", app.url))
            .send()
            .unwrap()
            .text()
            .unwrap();
        let line = text
            .lines()
            .find(|l| l.starts_with("emisor_companies_in_warning{tipo=\"certificado\"}"));
        if line.is_some_and(|l| l.ends_with(" 1")) {
            let warning_lines: Vec<&str> = text
                .lines()
                .filter(|l| l.starts_with("emisor_companies_in_warning"))
                .collect();
            assert!(
                warning_lines.iter().all(|l| !l.contains("empresa")),
                "{warning_lines:?}"
            );
            break;
        }
        assert!(Instant::now() < deadline, "metric: {line:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let key = alert["data"]["clave"].as_str().expect("clave").to_string();
    let deadline = Instant::now() + WITHIN;
    while posted(&got, &key).is_empty() || posted(&company_got, &key).is_empty() {
        assert!(
            Instant::now() < deadline,
            "operator or company webhook not posted"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let (headers, body) = posted(&company_got, &key).remove(0);
    assert_eq!(header(&headers, "x-emisor-event"), ALERT);
    assert_eq!(
        header(&headers, "x-emisor-signature"),
        signature(&company_secret, &body),
        "signed with the company's secret"
    );
    let (headers, body) = posted(&got, &key).remove(0);
    assert_eq!(
        header(&headers, "x-emisor-signature"),
        signature(SECRET, &body)
    );
    assert_eq!(posted(&got, &key).len(), 1, "once");
}

#[test]
fn a_crossing_no_longer_in_force_warns_again_when_crossed_again() {
    let (url, _got) = receiver(0);
    let app = TestApp::spawn_with(launch(&url));
    let mut operator = Ws::connect_operator(&app, &app.admin_token()).expect("operator socket");
    let limit = |n: u64| {
        let (status, res) = json(
            app.client
                .patch(format!("{}/admin/companies/1", app.url))
                .bearer_auth(app.admin_token())
                .json(&json!({ "limite_documentos_mes": n }))
                .send()
                .unwrap(),
        );
        assert_eq!(status, 200, "{res}");
    };
    let is_plan = |e: &Value| e["event"] == ALERT && e["data"]["tipo"] == "plan";
    // One document of a plan of 2: half left, at the threshold (50 %).
    limit(2);
    let (status, res) = json(app.post(
        "/v1/api/facturacion",
        &app.sk_test(),
        &unique(examples::invoice()),
    ));
    assert_eq!(status, 200, "{res}");
    let first = operator.wait_for(WITHIN, is_plan);
    assert_eq!(first["data"]["detalle"]["disponibles"], 1, "{first}");
    assert!(!operator.events_within(QUIET).iter().any(is_plan), "once");
    // A larger plan ends it; the smaller one again is a new crossing.
    limit(100);
    std::thread::sleep(QUIET);
    limit(2);
    let again = operator.wait_for(WITHIN, is_plan);
    assert_eq!(again["data"]["clave"], first["data"]["clave"], "{again}");
}

#[test]
fn the_rate_of_the_last_days_projects_the_end_of_the_numbers() {
    let (url, _got) = receiver(0);
    let app = TestApp::spawn_with(
        fast_launch()
            .shared_clock()
            .env("EMISOR_OPERATOR__WEBHOOK_URL", &url)
            .env("EMISOR_OPERATOR__WEBHOOK_SECRET", SECRET)
            .env("EMISOR_WARNINGS__CHECK_INTERVAL_S", "1"),
    );
    let (status, added) = json(app.admin_post(
        "/admin/companies/1/resoluciones",
        &json!({"id_tipo_documento": 1, "numero_resolucion": "18760000100",
                "fecha_resolucion": "2026-01-01", "prefijo": "AL", "desde": 1, "hasta": 100,
                "vigencia_desde": "2026-01-01", "vigencia_hasta": "2030-12-31",
                "clave_tecnica": "fc8eac422eba16e22ffd8c6f94b3f40a6e38162c"}),
    ));
    assert_eq!(status, 201, "{added}");
    let resolution = added["data"]["id"].as_u64().expect("id");
    // The watcher samples the new resolution (next number 1) within a check.
    std::thread::sleep(Duration::from_secs(2));
    let mut operator = Ws::connect_operator(&app, &app.admin_token()).expect("operator socket");
    for expected in 1..=5 {
        assert_eq!(issue_live(&app), expected);
    }
    // 95 of 100 left: not 10 %, and no rate yet (watched less than a day).
    assert!(!operator
        .events_within(Duration::from_millis(1500))
        .iter()
        .any(|e| is_numbering_alert(e, resolution)));
    // A day later, 5 a day: 95 left last 19 days, within 30.
    crate::support::events::set_clock(&app, 86_400 + 60);
    let alert = operator.wait_for(WITHIN, |e| is_numbering_alert(e, resolution));
    let detail = &alert["data"]["detalle"];
    assert_eq!(detail["restantes"], 95, "{alert}");
    assert_eq!(detail["usados_recientes"], 5, "{alert}");
    assert_eq!(detail["dias_observados"], 1, "{alert}");
    assert_eq!(detail["dias_para_agotarse"], 19, "{alert}");
}
