//! Numbering by environment (decisions.md §5 "Numbering in the testing
//! environment", "Contingency T04"): every company's test documents are
//! numbered from the authority's test sets with the company's own
//! counters, production documents from the company's own resolutions, and
//! the stricter simulator accepts both; a T04 outside a declared
//! contingency period is rejected with CTG01.

use emisor::api::invoice_request::examples;
use emisor::engine::codes;
use serde_json::{json, Value};

use crate::support::app::*;
use crate::support::bodies::unique;
use crate::support::flow::sim_url;

const TEST_KEY: &str = "fc8eac422eba16e22ffd8c6f94b3f40a6e38162c";

/// A second demo company (`POST /admin/companies`, `demo: true`).
fn second_company(app: &TestApp) -> Value {
    let (status, created) = json(app.admin_post(
        "/admin/companies",
        &json!({"nit": "800197268", "razon_social": "Sandbox Dos S.A.S.", "demo": true}),
    ));
    assert_eq!(status, 201, "{created}");
    created["data"].clone()
}

/// Issues `body` synchronously with `key`; the answer's data.
fn issue(app: &TestApp, key: &str, body: Value) -> Value {
    let (status, res) = json(app.post("/v1/api/facturacion", key, &unique(body)));
    assert_eq!(status, 200, "{res}");
    res["data"].clone()
}

/// `prefix + number` of an issued document, after checking the authority
/// accepted it.
fn accepted_number(data: &Value) -> String {
    assert_eq!(data["transmission"]["isValid"], true, "{data}");
    assert_eq!(data["id_estado_documento"], 2, "{data}");
    let d = &data["documento"];
    format!(
        "{}{}",
        d["prefijo"].as_str().unwrap(),
        d["numero"].as_str().unwrap()
    )
}

/// The CUFE recomputed from the signed XML with `key`.
fn cufe_with(data: &Value, key: &str) -> String {
    let xml = data["xml"].as_str().expect("xml");
    let input = codes::extract_code_input(xml).expect("code input");
    codes::invoice_code(&input.invoice_input(key))
}

/// `consecutivo` of `tipo` with `key`: (prefix, next).
fn next(app: &TestApp, key: &str, tipo: &str) -> (String, u64) {
    let (status, res) = json(app.get(&format!("/v1/api/facturacion/consecutivo/{tipo}"), key));
    assert_eq!(status, 200, "{res}");
    let d = &res["data"];
    (
        d["prefijo"].as_str().unwrap().to_string(),
        d["siguiente"].as_u64().unwrap(),
    )
}

#[test]
fn test_documents_of_any_company_take_the_test_sets_and_production_its_own_resolutions() {
    let app = TestApp::spawn();
    let second = second_company(&app);
    let test = second["sk_test"].as_str().unwrap().to_string();
    let live = second["sk_live"].as_str().unwrap().to_string();

    // The first company's invoice does not move the second's counter.
    let first = issue(&app, &app.sk_test(), examples::invoice());
    assert_eq!(accepted_number(&first), "SETP990000000");

    // Testing: invoices, exports (6 and 2 with operation 10) and T04 share
    // SETP, coded with the test technical key; support documents SEDS, POS
    // receipts EPOS; every one accepted by the stricter simulator.
    let cases = [
        (examples::invoice(), "SETP990000000"),
        (examples::export_invoice(), "SETP990000001"),
        (examples::export_invoice_as_type_2(), "SETP990000002"),
        (examples::contingency_t04(), "SETP990000003"),
        (examples::support_document(), "SEDS984000000"),
        (examples::pos(), "EPOS1"),
    ];
    for (body, expected) in cases {
        let data = issue(&app, &test, body);
        assert_eq!(accepted_number(&data), expected, "{data}");
        if expected.starts_with("SETP") {
            assert_eq!(cufe_with(&data, TEST_KEY), data["cufe"], "{expected}");
        }
    }
    assert_eq!(next(&app, &test, "fe"), ("SETP".into(), 990000004));
    assert_eq!(next(&app, &test, "fx"), ("SETP".into(), 990000004));
    assert_eq!(next(&app, &test, "t04"), ("SETP".into(), 990000004));
    assert_eq!(next(&app, &test, "ds"), ("SEDS".into(), 984000001));
    assert_eq!(next(&app, &test, "pos"), ("EPOS".into(), 2));
    // Notes and T03 keep the company's own prefixes in testing too.
    assert_eq!(next(&app, &test, "nc"), ("NC".into(), 1));
    assert_eq!(next(&app, &test, "t03"), ("CONT".into(), 1));
    let t03 = issue(&app, &test, examples::contingency_t03());
    assert_eq!(accepted_number(&t03), "CONT1");
    let (status, res) = json(app.get("/v1/api/facturacion/consecutivo/fe", &test));
    assert_eq!(status, 200);
    assert_eq!(
        (res["data"]["desde"].as_u64(), res["data"]["hasta"].as_u64()),
        (Some(990000000), Some(995000000))
    );

    // The first company counts on.
    let again = issue(&app, &app.sk_test(), examples::export_invoice());
    assert_eq!(accepted_number(&again), "SETP990000001");

    // Production: the company's own resolutions, one of them serving
    // invoices, exports and T04, coded with its own technical key.
    let own_key = second["resoluciones"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id_tipo_documento"] == 1 && r["set_de_pruebas"] == false)
        .and_then(|r| r["clave_tecnica"].as_str())
        .expect("own invoice resolution")
        .to_string();
    let cases = [
        (examples::invoice(), "FE1"),
        (examples::export_invoice(), "FE2"),
        (examples::contingency_t04(), "FE3"),
        (examples::support_document(), "DS1"),
        (examples::pos(), "POS1"),
    ];
    for (body, expected) in cases {
        let data = issue(&app, &live, body);
        assert_eq!(accepted_number(&data), expected, "{data}");
        if expected.starts_with("FE") {
            assert_eq!(cufe_with(&data, &own_key), data["cufe"], "{expected}");
        }
    }
    assert_eq!(next(&app, &live, "fe"), ("FE".into(), 4));
    assert_eq!(next(&app, &live, "ds"), ("DS".into(), 2));
    // Testing kept its own counters.
    assert_eq!(next(&app, &test, "fe"), ("SETP".into(), 990000004));
}

#[test]
fn a_t04_signed_after_the_contingency_ended_is_rejected_with_ctg01() {
    let app = TestApp::spawn();
    let key = app.sk_test();
    let sim = sim_url(&app);
    let contingency = format!("{sim}/__sim/contingency");
    let t04 = issue(&app, &key, examples::contingency_t04());
    accepted_number(&t04);

    let res = client().delete(&contingency).send().unwrap();
    assert!(res.status().is_success());
    let rejected = issue(&app, &key, examples::contingency_t04());
    assert_eq!(rejected["transmission"]["isValid"], false, "{rejected}");
    assert_eq!(rejected["id_estado_documento"], 4, "{rejected}");
    let errors = rejected["transmission"]["errors"].to_string();
    assert!(errors.contains("Regla: CTG01, Rechazo:"), "{rejected}");
    // Only T04 needs a declared period.
    accepted_number(&issue(&app, &key, examples::invoice()));

    // A period declared around now lets the next one through.
    let now = chrono::Utc::now();
    let period = json!({
        "from": (now - chrono::Duration::hours(1)).to_rfc3339(),
        "to": (now + chrono::Duration::hours(1)).to_rfc3339(),
    });
    let res = client().post(&contingency).json(&period).send().unwrap();
    assert!(res.status().is_success());
    accepted_number(&issue(&app, &key, examples::contingency_t04()));
}
