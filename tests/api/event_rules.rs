//! What the authority's validator requires of received-invoice events and
//! the registry, over HTTP: the legal
//! windows after the goods' receipt counted in business days (clock moved),
//! the tacit acceptance received by the authority with its sworn statement,
//! who received in 030 and 032, no title of a cash invoice, the
//! registration's and endorsements' terms, free text checked as the invoice
//! APIs check it, and a registry history of the previous format served as
//! before. Every event's XML passes xmllint, xmlsec1 and its CUDE.

use chrono::{Datelike, Duration, NaiveDate, TimeZone, Weekday};
use emisor::api::invoice_request::examples;
use serde_json::{json, Value};

use crate::support::app::*;
use crate::support::bodies::unique;
use crate::support::events::*;
use crate::support::flow::*;

/// A buyer that is not the authority (the examples' buyer has its NIT).
const BUYER: &str = "860002964";
const BUYER_NAME: &str = "Cliente Ejemplo S.A.S.";
const FACTOR: &str = "901234567";

/// The seller issues an invoice to `buyer` (credit, due 2030-12-31, or
/// cash); its CUFE.
fn issue_to(app: &TestApp, buyer: &str, credit: bool) -> String {
    let mut body = unique(examples::invoice());
    body["customer"]["identification_number"] = json!(buyer);
    if !credit {
        body.as_object_mut().unwrap().remove("payment_form");
    }
    let (status, res) = json(app.post("/v1/api/facturacion", &app.sk_test(), &body));
    assert_eq!(status, 200, "{res}");
    assert_eq!(res["data"]["transmission"]["isValid"], true, "{res}");
    res["data"]["cufe"].as_str().unwrap().to_string()
}

fn pin(company: &Value) -> String {
    company["software_pin"].as_str().unwrap().to_string()
}

/// A Tuesday at 10:00 (Colombia) at least two days ahead whose week,
/// through the next Tuesday, has no holiday.
fn plain_tuesday() -> NaiveDate {
    let mut d = chrono::Utc::now().date_naive() + Duration::days(2);
    loop {
        if d.weekday() == Weekday::Tue
            && (0..8).all(|i| {
                emisor::engine::events::calendar::is_business_day(d + Duration::days(i))
                    || i == 4
                    || i == 5
            })
        {
            return d;
        }
        d += Duration::days(1);
    }
}

/// Moves the business clock to `date` at `hour` in Colombia.
fn clock_at(app: &TestApp, date: NaiveDate, hour: u32) {
    let colombia = chrono::FixedOffset::west_opt(5 * 3600).unwrap();
    let target = colombia
        .from_local_datetime(&date.and_hms_opt(hour, 0, 0).unwrap())
        .unwrap();
    set_clock(app, (target.to_utc() - chrono::Utc::now()).num_seconds());
}

fn message(v: &Value) -> String {
    v["message"].as_str().unwrap_or_default().to_string()
}

#[test]
fn claims_and_acceptances_keep_their_legal_windows() {
    let app = TestApp::spawn_with(fast_launch().shared_clock());
    let buyer_company = new_company(&app, BUYER, "Comprador S.A.S.");
    let buyer = key_of(&buyer_company);
    let seller = app.sk_test();
    let seller_pin = app.keys["software_pin"].as_str().unwrap().to_string();
    let a = issue_to(&app, BUYER, true);
    let b = issue_to(&app, BUYER, true);
    let body = |cufe: &str| json!({ "cufe": cufe });

    // 030 names who received: the buyer itself, or the person given.
    let ack = accepted_event(&app, &buyer, "eventos/acuse-recibo", body(&a));
    let xml = check_event_xml(&app, &buyer, &a, &ack, &pin(&buyer_company));
    let dv = emisor::engine::codes::nit_check_digit(BUYER).unwrap();
    assert!(
        xml.contains(&format!(
            "<cac:IssuerParty><cac:Person><cbc:ID schemeID=\"{dv}\" schemeName=\"31\">{BUYER}</cbc:ID><cbc:FirstName>{BUYER_NAME}</cbc:FirstName><cbc:FamilyName>{BUYER_NAME}</cbc:FamilyName></cac:Person></cac:IssuerParty>"
        )),
        "{xml}"
    );
    accepted_event(&app, &buyer, "eventos/acuse-recibo", body(&b));
    assert_error(
        app.post(
            "/v1/api/eventos/aceptacion-expresa",
            &buyer,
            &json!({"cufe": a, "recibido_por": {"tipo_documento": "13", "numero_documento": "1", "nombres": "A", "apellidos": "B"}}),
        ),
        422,
        "VALIDATION_ERROR",
    );

    // The goods received on a Tuesday.
    let tuesday = plain_tuesday();
    let (sunday, monday) = (tuesday + Duration::days(5), tuesday + Duration::days(6));
    clock_at(&app, tuesday, 10);
    let receipt = accepted_event(
        &app,
        &buyer,
        "eventos/recibo-bien",
        json!({"cufe": a, "recibido_por": {"tipo_documento": "13", "numero_documento": "1020304050",
               "nombres": "Ana María", "apellidos": "Pérez Gómez", "cargo": "Almacenista", "area": "Bodega"}}),
    );
    let xml = check_event_xml(&app, &buyer, &a, &receipt, &pin(&buyer_company));
    assert!(xml.contains(concat!(
        "<cac:IssuerParty><cac:Person><cbc:ID schemeName=\"13\">1020304050</cbc:ID>",
        "<cbc:FirstName>Ana María</cbc:FirstName><cbc:FamilyName>Pérez Gómez</cbc:FamilyName>",
        "<cbc:JobTitle>Almacenista</cbc:JobTitle><cbc:OrganizationDepartment>Bodega</cbc:OrganizationDepartment>",
        "</cac:Person></cac:IssuerParty>"
    )));
    accepted_event(&app, &buyer, "eventos/recibo-bien", body(&b));

    // Sunday: still inside the window, not yet tacit.
    clock_at(&app, sunday, 18);
    let accepted = accepted_event(&app, &buyer, "eventos/aceptacion-expresa", body(&a));
    check_event_xml(&app, &buyer, &a, &accepted, &pin(&buyer_company));
    let early = assert_error(
        app.post("/v1/api/eventos/aceptacion-tacita", &seller, &body(&b)),
        409,
        "INVALID_STATE",
    );
    assert!(
        message(&early).contains(&format!("from {monday}")),
        "{early}"
    );

    // Monday: the window is over.
    clock_at(&app, monday, 9);
    for path in ["eventos/aceptacion-expresa", "eventos/reclamo"] {
        let late = assert_error(
            app.post(
                &format!("/v1/api/{path}"),
                &buyer,
                &json!({"cufe": b, "motivo": "01"}),
            ),
            409,
            "INVALID_STATE",
        );
        assert!(
            message(&late).contains(&format!("the deadline was {sunday}")),
            "{late}"
        );
    }
    let tacit = accepted_event(&app, &seller, "eventos/aceptacion-tacita", body(&b));
    set_clock(&app, 0);
    let xml = check_event_xml(&app, &seller, &b, &tacit, &seller_pin);
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let receiver = doc
        .descendants()
        .find(|n| n.has_tag_name("ReceiverParty"))
        .and_then(|p| p.descendants().find(|n| n.has_tag_name("CompanyID")))
        .and_then(|n| n.text())
        .unwrap();
    assert_eq!(receiver, "800197268", "the authority receives it");
    assert!(
        xml.contains(&format!("<cbc:Note>Manifiesto bajo la gravedad de juramento que transcurridos 3 días hábiles contados desde la creación del Recibo de bienes y servicios, el adquirente {BUYER_NAME} identificado con NIT {BUYER}")),
        "{xml}"
    );
}

fn registry(app: &TestApp, key: &str, body: Value) -> reqwest::blocking::Response {
    app.post("/v1/api/registry/registrar-evento", key, &body)
}

fn eligible_cufes(app: &TestApp, key: &str) -> Vec<String> {
    let (status, res) = json(app.get("/v1/api/registry/facturas-elegibles", key));
    assert_eq!(status, 200, "{res}");
    res["data"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["cufe"].as_str().unwrap().to_string())
        .collect()
}

/// 030, 032 and 033 by the buyer.
fn accepted_by(app: &TestApp, buyer: &str, cufe: &str) {
    for path in [
        "eventos/acuse-recibo",
        "eventos/recibo-bien",
        "eventos/aceptacion-expresa",
    ] {
        accepted_event(app, buyer, path, json!({ "cufe": cufe }));
    }
}

fn endorsee(nit: &str, name: &str) -> Value {
    json!({"tipo_documento": "31", "numero_documento": nit, "nombre": name,
           "calidad_tenedor": "ENDOSATARIO_EN_PROPIEDAD"})
}

#[test]
fn only_a_credit_invoice_becomes_a_title_on_the_authoritys_terms() {
    let app = TestApp::spawn_with(fast_launch());
    let buyer_company = new_company(&app, BUYER, "Comprador S.A.S.");
    let buyer = key_of(&buyer_company);
    let factor_company = new_company(&app, FACTOR, "Factoring S.A.S.");
    let factor = key_of(&factor_company);
    let seller = app.sk_test();
    let seller_pin = app.keys["software_pin"].as_str().unwrap().to_string();
    let cash = issue_to(&app, BUYER, false);
    let credit = issue_to(&app, BUYER, true);
    accepted_by(&app, &buyer, &cash);
    accepted_by(&app, &buyer, &credit);

    // The cash invoice is not eligible, and its registration says why.
    assert_eq!(eligible_cufes(&app, &seller), std::slice::from_ref(&credit));
    let refused = assert_error(
        registry(&app, &seller, json!({"cufe": cash, "codigo_evento": "035"})),
        409,
        "INVALID_STATE",
    );
    assert!(
        message(&refused).contains("payment form is cash"),
        "{refused}"
    );

    // Terms that apply elsewhere, or contradict each other: 422 naming them.
    for (body, field) in [
        (
            json!({"cufe": credit, "codigo_evento": "035", "tipo_inscripcion": "otra"}),
            "tipo_inscripcion",
        ),
        (
            json!({"cufe": credit, "codigo_evento": "035", "con_responsabilidad": false}),
            "con_responsabilidad",
        ),
        (
            json!({"cufe": credit, "codigo_evento": "035", "condiciones_financieras": {"porcentaje_anticipo": 80}}),
            "condiciones_financieras",
        ),
    ] {
        let e = assert_error(registry(&app, &seller, body), 422, "VALIDATION_ERROR");
        assert_eq!(e["error"]["details"][0]["field"], field, "{e}");
    }

    let (status, reg) = json(registry(
        &app,
        &seller,
        json!({"cufe": credit, "codigo_evento": "035", "tipo_inscripcion": "directa"}),
    ));
    assert_eq!(status, 200, "{reg}");
    let xml = check_event_xml(&app, &seller, &credit, &reg["data"], &seller_pin);
    assert!(xml.contains("<cbc:CustomizationID>362</cbc:CustomizationID>"));

    let endorse = |conditions: Value| {
        json!({"cufe": credit, "codigo_evento": "036", "con_responsabilidad": false,
               "endosatario": endorsee(FACTOR, "Factoring S.A.S."), "condiciones_financieras": conditions})
    };
    for (conditions, field) in [
        (
            json!({"porcentaje_anticipo": 80, "valor_desembolsado": 130000.50}),
            "condiciones_financieras.valor_desembolsado",
        ),
        (
            json!({"valor_desembolsado": 130000}),
            "condiciones_financieras.valor_desembolsado",
        ),
        (
            json!({"valor_nominal_factura": 200000}),
            "condiciones_financieras.valor_nominal_factura",
        ),
        (
            json!({"medio_pago": "4-2"}),
            "condiciones_financieras.medio_pago",
        ),
    ] {
        let e = assert_error(
            registry(&app, &seller, endorse(conditions)),
            422,
            "VALIDATION_ERROR",
        );
        assert_eq!(e["error"]["details"][0]["field"], field, "{e}");
    }
    let (status, endorsed) = json(registry(
        &app,
        &seller,
        endorse(
            json!({"valor_nominal_factura": 100000, "valor_desembolsado": 97650,
                       "medio_pago": "10", "tasa_descuento_mensual": 1.2}),
        ),
    ));
    assert_eq!(status, 200, "{endorsed}");
    assert_eq!(endorsed["data"]["estado_tax"], "Aceptado", "{endorsed}");
    let xml = check_event_xml(&app, &seller, &credit, &endorsed["data"], &seller_pin);
    assert!(xml.contains("<cbc:CustomizationID>372</cbc:CustomizationID>"));
    assert!(xml.contains(concat!(
        "<Name>ValorTotalEndoso</Name><Value>100000.00</Value>",
        "<Name>PrecioPagarseFEV</Name><Value>97650.00</Value>",
        "<Name>TasaDescuento</Name><Value>2.35</Value>",
        "<Name>MedioPago</Name><Value>10</Value>"
    )));
    assert!(xml.contains("Condiciones financieras: tasa de descuento mensual 1.2 %"));

    // The factor's subsequent registration keeps the direct negotiation.
    let (status, again) = json(registry(
        &app,
        &factor,
        json!({"cufe": credit, "codigo_evento": "035", "tipo_inscripcion": "directa"}),
    ));
    assert_eq!(status, 200, "{again}");
    let xml = check_event_xml(
        &app,
        &factor,
        &credit,
        &again["data"],
        &pin(&factor_company),
    );
    assert!(xml.contains("<cbc:CustomizationID>364</cbc:CustomizationID>"));
    let (status, procuration) = json(registry(
        &app,
        &factor,
        json!({"cufe": credit, "codigo_evento": "038", "endosatario": endorsee("860034313", "Banco S.A.")}),
    ));
    assert_eq!(status, 200, "{procuration}");
    assert_eq!(
        procuration["data"]["estado_tax"], "Aceptado",
        "{procuration}"
    );
    let xml = check_event_xml(
        &app,
        &factor,
        &credit,
        &procuration["data"],
        &pin(&factor_company),
    );
    assert!(xml.contains("<cbc:CustomizationID>039</cbc:CustomizationID>"));
}

/// Issue 50 item 5: a character XML cannot carry, or a text too long, in
/// any free text of an event or the registry is the invoice APIs' 422, and
/// nothing is numbered or stored.
#[test]
fn free_text_of_events_and_the_registry_is_checked_before_anything_is_consumed() {
    let app = TestApp::spawn_with(fast_launch());
    let buyer = key_of(&new_company(&app, BUYER, "Comprador S.A.S."));
    let seller = app.sk_test();
    let f = issue_to(&app, BUYER, true);
    let bad = "Recibida\u{1} sin novedad";

    let refused = |key: &str, path: &str, body: Value, fields: &[&str]| {
        let e = assert_error(
            app.post(&format!("/v1/api/{path}"), key, &body),
            422,
            "VALIDATION_ERROR",
        );
        let got: Vec<&str> = e["error"]["details"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["field"].as_str().unwrap())
            .collect();
        assert_eq!(got, fields, "{e}");
        e
    };
    let e = refused(
        &buyer,
        "eventos/acuse-recibo",
        json!({"cufe": f, "notes": bad}),
        &["notes"],
    );
    assert!(message(&e).contains("U+0001"), "{e}");
    refused(
        &buyer,
        "eventos/acuse-recibo",
        json!({"cufe": f, "notes": "x".repeat(4_001)}),
        &["notes"],
    );
    refused(
        &buyer,
        "eventos/acuse-recibo",
        json!({"cufe": f, "recibido_por": {"tipo_documento": "13", "numero_documento": "1020304050",
               "nombres": "Ana\u{7}", "apellidos": "P".repeat(451), "cargo": "C\u{1b}"}}),
        &[
            "recibido_por.nombres",
            "recibido_por.apellidos",
            "recibido_por.cargo",
        ],
    );
    // Nothing was registered: the first event is number one of its kind.
    let ack = accepted_event(&app, &buyer, "eventos/acuse-recibo", json!({"cufe": f}));
    refused(
        &buyer,
        "eventos/recibo-bien",
        json!({"cufe": f, "notes": "\u{fffe}"}),
        &["notes"],
    );
    let receipt = accepted_event(&app, &buyer, "eventos/recibo-bien", json!({"cufe": f}));
    let number = |e: &Value| {
        let shown = json(app.get(&format!("/v1/api/eventos/documentos/{f}"), &buyer)).1;
        let id = e["id_evento"].as_u64().unwrap();
        shown["data"]["eventos"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["id_evento"].as_u64() == Some(id))
            .map(|x| {
                x["numero"]
                    .as_str()
                    .unwrap()
                    .trim_start_matches("EV")
                    .parse::<u64>()
                    .unwrap()
            })
            .unwrap()
    };
    assert_eq!(number(&receipt), number(&ack) + 1, "no number consumed");
    refused(
        &buyer,
        "eventos/reclamo",
        json!({"cufe": f, "motivo": "01", "notes": bad}),
        &["notes"],
    );
    accepted_event(
        &app,
        &buyer,
        "eventos/aceptacion-expresa",
        json!({"cufe": f}),
    );

    refused(
        &seller,
        "registry/registrar-evento",
        json!({"cufe": f, "codigo_evento": "035", "observaciones": bad}),
        &["observaciones"],
    );
    let reg = json(app.post(
        "/v1/api/registry/registrar-evento",
        &seller,
        &json!({"cufe": f, "codigo_evento": "035"}),
    ));
    assert_eq!(reg.0, 200, "{}", reg.1);
    refused(
        &seller,
        "registry/registrar-evento",
        json!({"cufe": f, "codigo_evento": "036",
               "endosatario": {"tipo_documento": "31", "numero_documento": FACTOR,
                               "nombre": "Factoring\u{0} S.A.S.", "calidad_tenedor": "ENDOSATARIO\u{2}"}}),
        &["endosatario.nombre", "endosatario.calidad_tenedor"],
    );
    refused(
        &seller,
        "registry/registrar-evento",
        json!({"cufe": f, "codigo_evento": "036",
               "endosatario": {"tipo_documento": "31", "numero_documento": FACTOR, "nombre": "F".repeat(451)}}),
        &["endosatario.nombre"],
    );
    let shown = json(app.get(&format!("/v1/api/eventos/documentos/{f}"), &buyer)).1;
    let codes: Vec<&str> = shown["data"]["eventos"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["codigo_evento"].as_str().unwrap())
        .collect();
    assert_eq!(codes, ["030", "032", "033", "035"], "nothing else stored");
}

/// A data dir whose registry history the service wrote before the
/// subsequent registration existed (the new holder endorsing directly, no
/// sub-type nor extension in the events' details) opens, and serves that
/// history as before; the holder's next endorsement now waits for its
/// subsequent registration.
#[test]
fn a_registry_history_of_the_previous_format_is_served_as_before() {
    if !sled_only("it opens a sled data dir of the previous format") {
        return;
    }
    let mut app = TestApp::spawn_with(fast_launch());
    let buyer = key_of(&new_company(&app, BUYER, "Comprador S.A.S."));
    let factor = key_of(&new_company(&app, FACTOR, "Factoring S.A.S."));
    let seller = app.sk_test();
    let f = issue_to(&app, BUYER, true);
    accepted_by(&app, &buyer, &f);
    let (status, _) = json(registry(
        &app,
        &seller,
        json!({"cufe": f, "codigo_evento": "035"}),
    ));
    assert_eq!(status, 200);
    let (status, endorsed) = json(registry(
        &app,
        &seller,
        json!({"cufe": f, "codigo_evento": "036", "endosatario": endorsee(FACTOR, "Factoring S.A.S.")}),
    ));
    assert_eq!(status, 200, "{endorsed}");
    let endorsed_id = endorsed["data"]["id_evento"].as_u64().unwrap();
    app.stop();

    // As the previous build left it: details without sub-type, extension
    // or validity, and the factor's guarantee endorsement right after the
    // endorsement in property.
    {
        let db = sled::open(app.dir.join("sled")).unwrap();
        let tree = emisor_store::trees::RECEIVED;
        let records = db.open_tree(tree).unwrap();
        let (key, raw) = records
            .iter()
            .map(|r| r.unwrap())
            .find(|(_, v)| {
                let r: Value = emisor_store::codec::decode(tree, v).unwrap();
                r["cufe"] == f.as_str()
            })
            .expect("the record");
        let mut record: Value = emisor_store::codec::decode(tree, &raw).unwrap();
        let events = record["events"].as_array_mut().unwrap();
        for e in events.iter_mut() {
            let details = e["details"].as_object_mut().unwrap();
            for k in ["subtipo", "extension", "fecha_fin_validez", "recibido_por"] {
                details.remove(k);
            }
        }
        let mut old = events.last().unwrap().clone();
        old["id"] = json!(endorsed_id + 1_000);
        old["code"] = json!("037");
        old["authority_code"] = json!("038");
        old["name"] = json!("Endoso en garantía");
        old["number"] = json!(format!("EV{}", endorsed_id + 1_000));
        old["cude"] = json!("ab".repeat(48));
        old["sender"] = old["receiver"].clone();
        old["receiver"] = json!({"id_number": "860034313", "id_type": "31", "name": "Banco S.A."});
        old["details"] = json!({"notes": null, "motivo": null, "condiciones_financieras": null,
            "endosatario": {"tipo_documento": "31", "numero_documento": "860034313", "dv": null,
                            "nombre": "Banco S.A.", "calidad_tenedor": null}});
        events.push(old);
        records
            .insert(key, emisor_store::codec::encode(tree, &record).unwrap())
            .unwrap();
        db.flush().unwrap();
    }
    let dir = app.dir.clone();
    let app = TestApp::start_in(&dir, fast_launch());
    let (status, hv) = json(app.get(&format!("/v1/api/registry/hoja-de-vida/{f}"), &factor));
    assert_eq!(status, 200, "{hv}");
    let events = hv["data"]["eventos"].as_array().unwrap();
    let rows: Vec<(&str, &str, &str, &str)> = events
        .iter()
        .map(|e| {
            (
                e["codigo_evento"].as_str().unwrap(),
                e["codigo_evento_tax"].as_str().unwrap(),
                e["quien"]["nit"].as_str().unwrap(),
                e["estado_tax"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("030", "030", BUYER, "Aceptado"),
            ("032", "032", BUYER, "Aceptado"),
            ("033", "033", BUYER, "Aceptado"),
            ("035", "036", "900000001", "Aceptado"),
            ("036", "037", "900000001", "Aceptado"),
            ("037", "038", FACTOR, "Aceptado"),
        ]
    );
    assert_eq!(hv["data"]["tenedor_legitimo"]["nit"], FACTOR);
    assert_eq!(
        events[4]["detalles"]["endosatario"]["numero_documento"],
        FACTOR
    );
    assert!(events[5]["detalles"].get("subtipo").is_none());
    // Its stored XML is served as it was.
    let res = app.get(
        &format!("/v1/api/eventos/documentos/{f}/eventos/{endorsed_id}/xml"),
        &seller,
    );
    assert_eq!(res.status().as_u16(), 200);
    assert!(res
        .text()
        .unwrap()
        .contains("<cbc:ResponseCode>037</cbc:ResponseCode>"));
    // The holder endorses again only after its subsequent registration.
    let e = assert_error(
        registry(
            &app,
            &factor,
            json!({"cufe": f, "codigo_evento": "038", "endosatario": endorsee("860034313", "Banco S.A.")}),
        ),
        409,
        "INVALID_STATE",
    );
    assert!(message(&e).contains("subsequent registration"), "{e}");
    assert!(eligible_cufes(&app, &seller).is_empty());
}
