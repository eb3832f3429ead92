//! Received-invoice events over HTTP: two companies of one
//! service, the seller issuing to the buyer; uploads; the receipt events in
//! order; the claim; the tacit acceptance with the clock moved. Every
//! ApplicationResponse is checked with xmllint against the UBL XSD, with
//! xmlsec1, and its CUDE recomputed here from its own XML.

use std::time::{Duration, Instant};

use base64::Engine;
use emisor::api::invoice_request::examples;
use serde_json::{json, Value};

use crate::support::app::*;
use crate::support::bodies::unique;
use crate::support::events::*;
use crate::support::flow::*;

fn detail(app: &TestApp, key: &str, cufe: &str) -> Value {
    let (status, res) = json(app.get(&format!("/v1/api/eventos/documentos/{cufe}"), key));
    assert_eq!(status, 200, "{res}");
    res["data"].clone()
}

fn codes(events: &Value) -> Vec<(String, String)> {
    events
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["codigo_evento"].as_str().unwrap().to_string(),
                e["estado_tax"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn the_buyer_registers_its_events_in_order_and_the_seller_the_tacit_acceptance() {
    let app = TestApp::spawn_with(fast_launch().shared_clock());
    let buyer_company = new_company(&app, BUYER_NIT, "Comprador S.A.S.");
    let buyer = key_of(&buyer_company);
    let buyer_pin = buyer_company["software_pin"].as_str().unwrap().to_string();
    let seller = app.sk_test();
    let seller_pin = app.keys["software_pin"].as_str().unwrap().to_string();
    let (_, a) = issue_to_buyer(&app);
    let body = |cufe: &str| json!({ "cufe": cufe });

    // Out of order, before anything.
    for path in ["eventos/recibo-bien", "eventos/aceptacion-expresa"] {
        assert_error(
            app.post(&format!("/v1/api/{path}"), &buyer, &body(&a)),
            409,
            "INVALID_STATE",
        );
    }
    assert_error(
        app.post(
            "/v1/api/eventos/acuse-recibo",
            &buyer,
            &body(&"0".repeat(96)),
        ),
        404,
        "NOT_FOUND",
    );
    // 030 is the buyer's, not the seller's.
    assert_error(
        app.post("/v1/api/eventos/acuse-recibo", &seller, &body(&a)),
        403,
        "FORBIDDEN",
    );

    let ack = accepted_event(
        &app,
        &buyer,
        "eventos/acuse-recibo",
        json!({"cufe": a, "id_empresa": buyer_company["id_empresa"], "notes": "Recibida"}),
    );
    assert_eq!(ack["codigo_evento"], "030");
    assert_eq!(ack["cufe"], a.as_str());
    assert_eq!(
        ack["nombre_evento"],
        "Acuse de recibo de la Factura Electrónica de Venta"
    );
    check_event_xml(&app, &buyer, &a, &ack, &buyer_pin);
    assert_error(
        app.post("/v1/api/eventos/acuse-recibo", &buyer, &body(&a)),
        409,
        "INVALID_STATE",
    );
    assert_error(
        app.post("/v1/api/eventos/aceptacion-expresa", &buyer, &body(&a)),
        409,
        "INVALID_STATE",
    );

    let receipt = accepted_event(&app, &buyer, "eventos/recibo-bien", body(&a));
    check_event_xml(&app, &buyer, &a, &receipt, &buyer_pin);
    // The tacit acceptance is the holder's, and not before 3 business days.
    assert_error(
        app.post("/v1/api/eventos/aceptacion-tacita", &buyer, &body(&a)),
        403,
        "FORBIDDEN",
    );
    let early = assert_error(
        app.post("/v1/api/eventos/aceptacion-tacita", &seller, &body(&a)),
        409,
        "INVALID_STATE",
    );
    assert!(
        early["message"].as_str().unwrap().contains("business days"),
        "{early}"
    );

    let acceptance = accepted_event(&app, &buyer, "eventos/aceptacion-expresa", body(&a));
    assert_eq!(acceptance["codigo_evento"], "033");
    check_event_xml(&app, &buyer, &a, &acceptance, &buyer_pin);
    assert_error(
        app.post(
            "/v1/api/eventos/reclamo",
            &buyer,
            &json!({"cufe": a, "motivo": "01"}),
        ),
        409,
        "INVALID_STATE",
    );
    assert_error(
        app.post("/v1/api/eventos/aceptacion-tacita", &seller, &body(&a)),
        409,
        "INVALID_STATE",
    );
    let shown = detail(&app, &buyer, &a);
    assert_eq!(
        codes(&shown["eventos"]),
        [
            ("030", "Aceptado"),
            ("032", "Aceptado"),
            ("033", "Aceptado")
        ]
        .map(|(c, s)| (c.to_string(), s.to_string()))
    );
    assert_eq!(shown["tenedor_legitimo"]["nit"], "900000001");
    assert_eq!(shown["elegible"], true);

    // A claim needs a concept of the list.
    let (_, b) = issue_to_buyer(&app);
    accepted_event(&app, &buyer, "eventos/acuse-recibo", body(&b));
    accepted_event(&app, &buyer, "eventos/recibo-bien", body(&b));
    let missing = assert_error(
        app.post("/v1/api/eventos/reclamo", &buyer, &body(&b)),
        422,
        "VALIDATION_ERROR",
    );
    assert_eq!(missing["error"]["details"][0]["field"], "motivo");
    assert_error(
        app.post(
            "/v1/api/eventos/reclamo",
            &buyer,
            &json!({"cufe": b, "motivo": "09"}),
        ),
        422,
        "VALIDATION_ERROR",
    );
    let claim = accepted_event(
        &app,
        &buyer,
        "eventos/reclamo",
        json!({"cufe": b, "motivo": "02", "notes": "faltan 3 cajas"}),
    );
    assert_eq!(claim["codigo_evento"], "031");
    let claim_xml = check_event_xml(&app, &buyer, &b, &claim, &buyer_pin);
    assert!(claim_xml.contains("<cbc:ResponseCode listID=\"02\">031</cbc:ResponseCode>"));
    assert_error(
        app.post("/v1/api/eventos/aceptacion-expresa", &buyer, &body(&b)),
        409,
        "INVALID_STATE",
    );

    // The tacit acceptance once the clock is 15 days ahead (at least 3
    // business days after the receipt, whatever the holidays).
    let (_, c) = issue_to_buyer(&app);
    accepted_event(&app, &buyer, "eventos/acuse-recibo", body(&c));
    accepted_event(&app, &buyer, "eventos/recibo-bien", body(&c));
    assert_error(
        app.post("/v1/api/eventos/aceptacion-tacita", &seller, &body(&c)),
        409,
        "INVALID_STATE",
    );
    set_clock(&app, 15 * 86_400);
    let tacit = accepted_event(&app, &seller, "eventos/aceptacion-tacita", body(&c));
    set_clock(&app, 0);
    assert_eq!(tacit["codigo_evento"], "034");
    let later =
        chrono::DateTime::parse_from_rfc3339(tacit["fecha_evento"].as_str().unwrap()).unwrap();
    assert!(
        later > chrono::Utc::now() + chrono::Duration::days(14),
        "{later}"
    );
    let tacit_xml = check_event_xml(&app, &seller, &c, &tacit, &seller_pin);
    let doc = roxmltree::Document::parse(&tacit_xml).unwrap();
    assert_eq!(
        text_at(&doc, &["ReceiverParty", "PartyTaxScheme", "CompanyID"]),
        "800197268",
        "the authority receives the tacit acceptance"
    );

    // The buyer's list: three invoices it has events on, newest first.
    let (status, list) = json(app.get("/v1/api/eventos/documentos?limit=2", &buyer));
    assert_eq!(status, 200, "{list}");
    assert_eq!(list["data"]["total"], 3);
    assert_eq!(list["data"]["items"].as_array().unwrap().len(), 2);
    assert_eq!(list["data"]["items"][0]["cufe"], c.as_str());
    let (_, page2) = json(app.get("/v1/api/eventos/documentos?limit=2&page=2", &buyer));
    assert_eq!(page2["data"]["items"][0]["cufe"], a.as_str());
    assert_error(
        app.get("/v1/api/eventos/documentos?limit=101", &buyer),
        422,
        "VALIDATION_ERROR",
    );
}

#[test]
fn a_rejected_event_changes_nothing_and_can_be_registered_again() {
    let app = TestApp::spawn_with(fast_launch());
    let buyer = key_of(&new_company(&app, BUYER_NIT, "Comprador S.A.S."));
    let (_, a) = issue_to_buyer(&app);
    sim_mode(&app, json!({"mode": "reject"}));
    let (status, res) = event(&app, &buyer, "eventos/acuse-recibo", json!({"cufe": a}));
    assert_eq!(status, 200, "{res}");
    assert_eq!(res["data"]["estado_tax"], "Rechazado", "{res}");
    assert_eq!(res["data"]["transmission"]["isValid"], false, "{res}");
    // Still nothing registered: 032 is out of order.
    assert_error(
        app.post("/v1/api/eventos/recibo-bien", &buyer, &json!({"cufe": a})),
        409,
        "INVALID_STATE",
    );
    sim_mode(&app, json!({"mode": "up"}));
    accepted_event(&app, &buyer, "eventos/acuse-recibo", json!({"cufe": a}));
    accepted_event(&app, &buyer, "eventos/recibo-bien", json!({"cufe": a}));
    let shown = detail(&app, &buyer, &a);
    assert_eq!(
        codes(&shown["eventos"]),
        [
            ("030", "Rechazado"),
            ("030", "Aceptado"),
            ("032", "Aceptado")
        ]
        .map(|(c, s)| (c.to_string(), s.to_string()))
    );
}

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

fn seller_xml(app: &TestApp, id: u64) -> String {
    let res = app.get(&format!("/v1/api/facturacion/{id}/xml"), &app.sk_test());
    assert_eq!(res.status().as_u16(), 200);
    res.text().unwrap()
}

fn upload(app: &TestApp, key: &str, xml: &str) -> reqwest::blocking::Response {
    app.post(
        "/v1/api/eventos/cargar-documento",
        key,
        &json!({ "xml_base64": b64(xml) }),
    )
}

#[test]
fn uploads_are_checked_and_stored_once_by_cufe() {
    let app = TestApp::spawn_with(fast_launch());
    let buyer_company = new_company(&app, BUYER_NIT, "Comprador S.A.S.");
    let buyer = key_of(&buyer_company);
    let (d_id, d) = issue_to_buyer(&app);
    let xml = seller_xml(&app, d_id);

    // Malformed, not base64, another company's purchase, tampered.
    let bad = assert_error(
        upload(&app, &buyer, "<Invoice><cbc:ID>"),
        422,
        "VALIDATION_ERROR",
    );
    assert_eq!(bad["error"]["details"][0]["field"], "xml_base64");
    assert!(
        bad["message"].as_str().unwrap().contains("not well formed"),
        "{bad}"
    );
    assert_error(
        app.post(
            "/v1/api/eventos/cargar-documento",
            &buyer,
            &json!({"xml_base64": "%%%"}),
        ),
        422,
        "VALIDATION_ERROR",
    );
    let foreign = assert_error(upload(&app, &app.sk_test(), &xml), 422, "VALIDATION_ERROR");
    assert!(
        foreign["message"].as_str().unwrap().contains("buyer"),
        "{foreign}"
    );
    let tampered = xml.replacen("Servicio de consultoría", "Servicio de consultorio", 1);
    assert_ne!(tampered, xml);
    let t = assert_error(upload(&app, &buyer, &tampered), 422, "VALIDATION_ERROR");
    assert!(t["message"].as_str().unwrap().contains("signature"), "{t}");
    // An invoice the authority never accepted: signed by our engine, but
    // sent nowhere (a draft).
    let mut draft = unique(examples::invoice());
    draft["transmit"] = json!(false);
    let (status, res) = json(app.post("/v1/api/facturacion", &app.sk_test(), &draft));
    assert_eq!(status, 200, "{res}");
    let unsent = assert_error(
        upload(&app, &buyer, res["data"]["xml"].as_str().unwrap()),
        422,
        "VALIDATION_ERROR",
    );
    assert!(
        unsent["message"].as_str().unwrap().contains("authority"),
        "{unsent}"
    );

    // The good one, then the same again.
    let (status, stored) = json(upload(&app, &buyer, &xml));
    assert_eq!(status, 201, "{stored}");
    let data = &stored["data"];
    assert_eq!(data["cufe"], d.as_str());
    assert_eq!(data["proveedor"]["nit"], "900000001");
    assert_eq!(data["comprador"]["nit"], BUYER_NIT);
    assert_eq!(data["fecha_vencimiento"], "2030-12-31");
    assert_eq!(data["total"].as_f64(), Some(168365.0));
    assert_eq!(data["cargado"], true);
    let id = data["id"].as_u64().unwrap();
    let dup = assert_error(upload(&app, &buyer, &xml), 409, "DUPLICATE_REFERENCE");
    assert_eq!(dup["data"]["id"], id);
    let raw = app
        .client
        .post(format!("{}/v1/api/eventos/cargar-documento", app.url))
        .header("X-Api-Key", &buyer)
        .header("Content-Type", "application/xml")
        .body(xml.clone())
        .send()
        .unwrap();
    assert_error(raw, 409, "DUPLICATE_REFERENCE");

    // An AttachedDocument carrying the invoice, as XML.
    let (e_id, e) = issue_to_buyer(&app);
    let inner = seller_xml(&app, e_id)
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    let container = format!(
        concat!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>",
            "<AttachedDocument xmlns=\"urn:oasis:names:specification:ubl:schema:xsd:AttachedDocument-2\"",
            " xmlns:cac=\"urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2\"",
            " xmlns:cbc=\"urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2\">",
            "<cbc:UBLVersionID>UBL 2.1</cbc:UBLVersionID><cbc:ID>X</cbc:ID>",
            "<cac:Attachment><cac:ExternalReference><cbc:MimeCode>text/xml</cbc:MimeCode>",
            "<cbc:Description>{}</cbc:Description></cac:ExternalReference></cac:Attachment>",
            "</AttachedDocument>"
        ),
        inner
    );
    let raw = app
        .client
        .post(format!("{}/v1/api/eventos/cargar-documento", app.url))
        .header("X-Api-Key", &buyer)
        .header("Content-Type", "application/xml; charset=utf-8")
        .body(container)
        .send()
        .unwrap();
    let (status, res) = json(raw);
    assert_eq!(status, 201, "{res}");
    assert_eq!(res["data"]["cufe"], e.as_str());

    let (_, list) = json(app.get("/v1/api/eventos/documentos", &buyer));
    assert_eq!(list["data"]["total"], 2, "{list}");
    assert_eq!(list["data"]["items"][0]["cufe"], e.as_str());
    assert_eq!(list["data"]["items"][1]["cufe"], d.as_str());
    // The seller sees none as received.
    let (_, none) = json(app.get("/v1/api/eventos/documentos", &app.sk_test()));
    assert_eq!(none["data"]["total"], 0);
    // Events on the uploaded invoice.
    accepted_event(&app, &buyer, "eventos/acuse-recibo", json!({"cufe": d}));
}

#[test]
#[cfg_attr(not(feature = "soak"), ignore = "soak")]
fn an_accepted_event_survives_kill_and_is_sent_once() {
    let sim = crate::support::external_sim::ExternalSim::start();
    let launch = fast_launch().env("EMISOR_AUTHORITY__URL", &sim.service_url());
    let mut app = TestApp::spawn_with(launch.clone());
    let buyer = key_of(&new_company(&app, BUYER_NIT, "Comprador S.A.S."));
    // Registration with the external simulator is asynchronous.
    std::thread::sleep(Duration::from_millis(500));
    let (_, a) = issue_to_buyer(&app);
    accepted_event(&app, &buyer, "eventos/acuse-recibo", json!({"cufe": a}));
    sim_mode_at(&sim.base, json!({"mode": "down"}));
    let (status, res) = event(&app, &buyer, "eventos/recibo-bien", json!({"cufe": a}));
    assert_eq!(status, 200, "{res}");
    assert_eq!(res["data"]["estado_tax"], "En Cola", "{res}");
    let cude = res["data"]["cude_evento"].as_str().unwrap().to_string();
    // Another event waits for it.
    assert_error(
        app.post(
            "/v1/api/eventos/aceptacion-expresa",
            &buyer,
            &json!({"cufe": a}),
        ),
        409,
        "INVALID_STATE",
    );
    app.kill();
    sim_mode_at(&sim.base, json!({"mode": "up"}));
    let dir = app.dir.clone();
    let _tmp = std::mem::replace(&mut app, TestApp::start_in(&dir, launch));
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let shown = detail(&app, &buyer, &a);
        if codes(&shown["eventos"]).last().map(|(_, s)| s.as_str()) == Some("Aceptado") {
            assert_eq!(shown["eventos"][1]["cude_evento"], cude.as_str());
            break;
        }
        assert!(
            Instant::now() < deadline,
            "032 not accepted after the restart: {shown}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let stats = sim_stats_at(&sim.base);
    assert_eq!(
        stats["accepted"][&cude]["received"], 1,
        "sent once: {stats}"
    );
    accepted_event(
        &app,
        &buyer,
        "eventos/aceptacion-expresa",
        json!({"cufe": a}),
    );
}
