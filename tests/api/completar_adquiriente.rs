//! `completar_adquiriente` (decisions.md "Buyer look-up"): a document's
//! buyer named by identification only is completed from the authority's
//! register (`GetAcquirer` over real SOAP to the demo company's simulator)
//! before it is issued; an unknown buyer is a 404 with no number consumed;
//! never on POS receipts.

use std::time::{Duration, Instant};

use emisor::api::facturacion_es::examples as es;
use emisor::api::invoice_request::examples;
use serde_json::{json, Value};

use crate::support::app::*;
use crate::support::bodies::unique;
use crate::support::flow::{next_number, sim_stats, sim_url};

const NAME: &str = "Ana Pérez Gómez";
const EMAIL: &str = "ana.perez@example.co";

fn register_buyer(app: &TestApp, number: &str) {
    let sim = sim_url(app);
    let res = client()
        .put(format!("{sim}/__sim/acquirers"))
        .json(
            &json!({"identificationType": "13", "identificationNumber": number,
                       "name": NAME, "email": EMAIL}),
        )
        .send()
        .unwrap();
    assert!(res.status().is_success());
}

/// The unified example with its customer named by cédula only.
fn invoice_for(number: &str) -> Value {
    let mut body = unique(examples::invoice());
    body["customer"] = json!({
        "identification_number": number,
        "type_document_identification": {"code": "13"},
        "type_organization": {"code": "2"},
        "completar_adquiriente": true
    });
    body
}

fn get_acquirer_calls(app: &TestApp) -> u64 {
    sim_stats(app)["calls"]["GetAcquirer"].as_u64().unwrap_or(0)
}

fn xml_of(app: &TestApp, id: u64) -> String {
    let res = app.get(&format!("/v1/api/facturacion/{id}/xml"), &app.sk_test());
    assert_eq!(res.status().as_u16(), 200);
    res.text().unwrap()
}

/// The buyer's name in the signed XML (its party's RegistrationName) and
/// its email, and the automatic mail goes to that email; the stored
/// request carries them (the document's detail shows the customer).
#[test]
fn a_registered_buyer_completes_the_unified_customer_and_the_spanish_cliente() {
    let app = TestApp::spawn();
    register_buyer(&app, "1020304050");
    let (status, res) = json(app.post(
        "/v1/api/facturacion",
        &app.sk_test(),
        &invoice_for("1020304050"),
    ));
    assert_eq!(status, 200, "{}", res["message"]);
    assert_eq!(res["data"]["id_estado_documento"], 2, "{}", res["message"]);
    let id = res["data"]["documento"]["id"].as_u64().unwrap();
    let xml = xml_of(&app, id);
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let customer = doc
        .descendants()
        .find(|n| n.has_tag_name("AccountingCustomerParty"))
        .expect("customer party");
    let names: Vec<&str> = customer
        .descendants()
        .filter(|n| n.has_tag_name("RegistrationName"))
        .filter_map(|n| n.text())
        .collect();
    assert!(names.contains(&NAME), "{names:?}");
    let mail = customer
        .descendants()
        .find(|n| n.has_tag_name("ElectronicMail"))
        .and_then(|n| n.text());
    assert_eq!(mail, Some(EMAIL));
    // The automatic email goes to the buyer's registered address.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, logs) = json(app.get(&format!("/v1/api/email/logs/{id}"), &app.sk_test()));
        let text = logs.to_string();
        if text.contains(EMAIL) {
            break;
        }
        assert!(Instant::now() < deadline, "no mail to the buyer: {logs}");
        std::thread::sleep(Duration::from_millis(100));
    }

    // The Spanish-named API: `cliente` by cédula, completed the same way
    // (the look-up cached).
    let mut body = es::factura();
    body["cliente"] = json!({"cedula": "1020304050", "tipo_documento": "CC",
                              "tipo_organizacion": 2, "completar_adquiriente": true});
    let (status, res) = json(app.post(
        "/v1/api/facturacion-es/factura",
        &app.sk_test(),
        &unique(body),
    ));
    assert_eq!(status, 200, "{}", res["message"]);
    let id = res["data"]["id"]
        .as_u64()
        .or_else(|| res["data"]["documento"]["id"].as_u64())
        .unwrap_or_else(|| panic!("no id: {}", res["data"]));
    assert!(xml_of(&app, id).contains(NAME));
}

/// What was filled is in the stored request: a document rejected, then
/// resent after a restart (the cache empty, the simulator knowing no
/// buyer any more), is built again with the buyer's name and email and
/// asks the authority nothing.
#[test]
fn a_rebuild_reads_the_filled_buyer_from_the_stored_request() {
    let mut app = TestApp::spawn();
    register_buyer(&app, "1020304050");
    crate::support::flow::sim_mode(&app, json!({"mode": "reject"}));
    let (status, res) = json(app.post(
        "/v1/api/facturacion",
        &app.sk_test(),
        &invoice_for("1020304050"),
    ));
    assert_eq!(status, 200, "{}", res["message"]);
    assert_eq!(res["data"]["id_estado_documento"], 4, "{}", res["message"]);
    let id = res["data"]["documento"]["id"].as_u64().unwrap();

    let dir = app.dir.clone();
    app.kill();
    let app2 = TestApp::start_in(&dir, Launch::default());
    assert_eq!(get_acquirer_calls(&app2), 0);
    let (status, res) = json(app2.post(
        &format!("/v1/api/facturacion/reenviar/{id}"),
        &app2.sk_test(),
        &json!({}),
    ));
    assert_eq!(status, 200, "{}", res["message"]);
    assert_eq!(res["data"]["id_estado_documento"], 2, "{}", res["message"]);
    let xml = xml_of(&app2, id);
    assert!(xml.contains(NAME) && xml.contains(EMAIL), "the buyer kept");
    assert_eq!(get_acquirer_calls(&app2), 0, "nothing asked again");
}

/// An unknown buyer: 404 `NOT_FOUND`, no number taken, nothing stored;
/// the authority out of reach: 503 `TAX_UNAVAILABLE`, the same; an invalid
/// request is refused before anything is asked.
#[test]
fn an_unknown_buyer_is_a_404_and_consumes_nothing() {
    let app = TestApp::spawn();
    let next = next_number(&app, "fe");
    let calls = get_acquirer_calls(&app);
    assert_error(
        app.post(
            "/v1/api/facturacion",
            &app.sk_test(),
            &invoice_for("6382356"),
        ),
        404,
        "NOT_FOUND",
    );
    assert_eq!(get_acquirer_calls(&app), calls + 1);
    assert_eq!(next_number(&app, "fe"), next, "no number consumed");
    // The authority out of reach: a 503, nothing consumed either.
    crate::support::flow::sim_mode(&app, json!({"mode": "down"}));
    assert_error(
        app.post(
            "/v1/api/facturacion",
            &app.sk_test(),
            &invoice_for("55555555"),
        ),
        503,
        "TAX_UNAVAILABLE",
    );
    crate::support::flow::sim_mode(&app, json!({"mode": "up"}));
    assert_eq!(next_number(&app, "fe"), next, "no number consumed");
    let calls = get_acquirer_calls(&app);
    let (_, list) = json(app.get("/v1/api/facturacion?limit=5", &app.sk_test()));
    assert_eq!(list["data"]["total"], 0, "{list}");

    // Without an identification type nothing can be asked: a 422.
    let mut body = invoice_for("6382356");
    body["customer"]
        .as_object_mut()
        .unwrap()
        .remove("type_document_identification");
    let refused = assert_error(
        app.post("/v1/api/facturacion", &app.sk_test(), &body),
        422,
        "VALIDATION_ERROR",
    );
    assert!(
        refused.to_string().contains("type_document_identification"),
        "{refused}"
    );
    // Without the flag, name and email stay required.
    let mut body = invoice_for("6382356");
    body["customer"]["completar_adquiriente"] = json!(false);
    let refused = assert_error(
        app.post("/v1/api/facturacion", &app.sk_test(), &body),
        422,
        "VALIDATION_ERROR",
    );
    assert!(refused.to_string().contains("customer.name"), "{refused}");
    // Not on a customer stored alone.
    let refused = assert_error(
        app.post(
            "/v1/api/clientes",
            &app.sk_test(),
            &json!({"identification_number": "6382356", "completar_adquiriente": true,
                    "type_document_identification": {"code": "13"}}),
        ),
        422,
        "VALIDATION_ERROR",
    );
    assert!(
        refused.to_string().contains("completar_adquiriente"),
        "{refused}"
    );
    assert_eq!(get_acquirer_calls(&app), calls, "nothing more asked");
    assert_eq!(next_number(&app, "fe"), next);
}

/// Never on a POS receipt: the POS API and the Spanish `/pos` route
/// answer 422 and ask nothing.
#[test]
fn pos_receipts_refuse_completar_adquiriente() {
    let app = TestApp::spawn();
    register_buyer(&app, "1020304050");
    let calls = get_acquirer_calls(&app);
    let mut sale = es::pos();
    sale["cliente"] = json!({"cedula": "1020304050", "tipo_documento": "CC",
                             "completar_adquiriente": true});
    let refused = assert_error(
        app.post("/v1/api/facturacion-es/pos", &app.sk_test(), &unique(sale)),
        422,
        "VALIDATION_ERROR",
    );
    assert!(
        refused.to_string().contains("completar_adquiriente"),
        "{refused}"
    );

    let sale = json!({
        "lineas": [{"descripcion": "Café", "cantidad": 1, "precio_unitario": 4500, "porcentaje_iva": 19}],
        "cliente": {"tipo_documento": "13", "numero_documento": "1020304050",
                    "nombre_completo": "", "completar_adquiriente": true}
    });
    let refused = assert_error(
        app.post("/v1/api/pos/emitir", &app.sk_test(), &unique(sale)),
        422,
        "VALIDATION_ERROR",
    );
    assert!(
        refused.to_string().contains("completar_adquiriente"),
        "{refused}"
    );
    assert_eq!(get_acquirer_calls(&app), calls, "nothing asked");
}

/// The OpenAPI document names the field in the unified customer and the
/// Spanish `cliente`, and the admin reconciliation report.
#[test]
fn the_openapi_document_names_the_field() {
    let app = TestApp::spawn();
    let doc: Value = app
        .client
        .get(format!("{}/v1/api/openapi.json", app.url))
        .send()
        .unwrap()
        .json()
        .unwrap();
    let schemas = &doc["components"]["schemas"];
    for schema in ["CustomerRequest", "SpanishCustomer"] {
        assert_eq!(
            schemas[schema]["properties"]["completar_adquiriente"]["type"]
                .as_str()
                .map(|t| t.contains("boolean"))
                .or_else(|| Some(
                    schemas[schema]["properties"]["completar_adquiriente"]["type"]
                        .to_string()
                        .contains("boolean")
                )),
            Some(true),
            "{schema}: {}",
            schemas[schema]
        );
    }
    assert!(doc["paths"]["/admin/reconciliacion"]["get"].is_object());
    assert!(doc["paths"]["/admin/reconciliacion"]["post"].is_object());
}
