//! The Spanish-named API over HTTP: every route and `tipo`, the aliases and
//! the caller's spelling in errors, the tax shortcuts and their arithmetic,
//! the sectors and exports, notes by id and by CUFE, and the references it
//! shares with the unified API. Every accepted document's XML is checked
//! with xmllint against the schemas and xmlsec1, its code is recomputed and
//! its totals compared with the answer's.

use emisor::api::facturacion_es::examples;
use emisor::engine::codes::{invoice_code, support_code, InvoiceCodeInput, SupportCodeInput};
use rust_decimal::Decimal;
use serde_json::{json, Value};
use std::str::FromStr;

use crate::support::app::*;
use crate::support::checkers::{schemas_dir, tool};

const BASE: &str = "/v1/api/facturacion-es";

/// A distinct `referencia`, so equal bodies are distinct requests.
fn unique(mut body: Value) -> Value {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    if ["referencia", "referencia_externa", "id_unico"]
        .iter()
        .all(|k| body.get(*k).is_none())
    {
        body["referencia"] = json!(format!("es-{}-{n}", std::process::id()));
    }
    body
}

fn post(app: &TestApp, path: &str, body: &Value) -> (u16, Value) {
    json(app.post(
        &format!("{BASE}{path}"),
        &app.sk_test(),
        &unique(body.clone()),
    ))
}

/// Issues and returns `data`, after checking the whole document.
fn issue(app: &TestApp, path: &str, body: &Value) -> Value {
    let (status, res) = post(app, path, body);
    assert_eq!(status, 200, "{path}: {res}");
    assert_eq!(res["success"], true, "{res}");
    let data = res["data"].clone();
    check_document(app, &data);
    data
}

fn issue_expect_error(app: &TestApp, path: &str, body: &Value, status: u16, code: &str) -> Value {
    let res = app.post(
        &format!("{BASE}{path}"),
        &app.sk_test(),
        &unique(body.clone()),
    );
    assert_error(res, status, code)
}

/// The detail naming `field`, or a panic listing them.
fn detail<'a>(err: &'a Value, field: &str) -> &'a Value {
    err["error"]["details"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["field"] == field)
        .unwrap_or_else(|| panic!("no detail for {field}: {err}"))
}

fn dec(v: &Value) -> Decimal {
    match v {
        Value::Number(n) => Decimal::from_str(&n.to_string()).unwrap(),
        Value::String(s) => Decimal::from_str(s).unwrap(),
        other => panic!("not a number: {other}"),
    }
}

// ---------------------------------------------------------------------------
// The document checks.

fn xml_of(app: &TestApp, data: &Value) -> String {
    let url = data["xml_url"].as_str().unwrap();
    let res = app.get(url, &app.sk_test());
    assert_eq!(res.status().as_u16(), 200, "{url}");
    res.text().unwrap()
}

/// xmllint against the maindoc schema of the root (the schemas README's one
/// known quirk of signed documents, the X.509 serial, aside).
fn schema_valid(xml: &str) {
    if !tool("xmllint") {
        return;
    }
    let doc = roxmltree::Document::parse(xml).unwrap();
    let root = doc.root_element().tag_name().name();
    let xsd = schemas_dir()
        .join("maindoc")
        .join(format!("UBL-{root}-2.1.xsd"));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("doc.xml");
    std::fs::write(&file, xml).unwrap();
    let out = std::process::Command::new("xmllint")
        .arg("--noout")
        .arg("--schema")
        .arg(&xsd)
        .arg(&file)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.ends_with(" validates") && !l.ends_with(" fails to validate"))
        .filter(|l| !l.contains("X509SerialNumber"))
        .collect();
    assert!(errors.is_empty(), "xmllint: {}", errors.join("\n"));
}

fn signature_verifies(xml: &str) {
    if !tool("xmlsec1") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("doc.xml");
    std::fs::write(&path, xml).unwrap();
    let start = xml.find("<ds:X509Certificate>").unwrap() + "<ds:X509Certificate>".len();
    let end = xml[start..].find("</ds:X509Certificate>").unwrap() + start;
    let pem = format!(
        "-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n",
        &xml[start..end]
    );
    let cert = dir.path().join("cert.pem");
    std::fs::write(&cert, pem).unwrap();
    let out = std::process::Command::new("xmlsec1")
        .args(["--verify", "--pubkey-cert-pem"])
        .arg(&cert)
        .args(["--enabled-reference-uris", "empty,same-doc"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "xmlsec1: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Children of `node` named `local`.
fn children<'a, 'i>(
    node: roxmltree::Node<'a, 'i>,
    local: &'a str,
) -> impl Iterator<Item = roxmltree::Node<'a, 'i>> {
    node.children()
        .filter(move |n| n.is_element() && n.tag_name().name() == local)
}

fn child<'a, 'i>(node: roxmltree::Node<'a, 'i>, local: &'a str) -> roxmltree::Node<'a, 'i> {
    children(node, local)
        .next()
        .unwrap_or_else(|| panic!("no {local} in {}", node.tag_name().name()))
}

fn text(node: roxmltree::Node<'_, '_>, local: &str) -> String {
    child(node, local).text().unwrap_or_default().to_string()
}

fn amount(node: roxmltree::Node<'_, '_>, local: &str) -> Decimal {
    Decimal::from_str(&text(node, local)).unwrap()
}

/// Sums of the top-level `TaxTotal`s by scheme, and of the withholdings.
fn xml_taxes(root: roxmltree::Node<'_, '_>) -> (Vec<(String, Decimal)>, Decimal) {
    let taxes = children(root, "TaxTotal")
        .map(|t| {
            let sub = child(t, "TaxSubtotal");
            let scheme = child(child(sub, "TaxCategory"), "TaxScheme");
            (text(scheme, "ID"), amount(t, "TaxAmount"))
        })
        .collect();
    let withholdings = children(root, "WithholdingTaxTotal")
        .map(|t| amount(t, "TaxAmount"))
        .sum();
    (taxes, withholdings)
}

fn party_id(root: roxmltree::Node<'_, '_>, party: &str) -> String {
    let p = child(child(root, party), "Party");
    text(child(p, "PartyTaxScheme"), "CompanyID")
}

/// Schema, signature, code recomputed, totals equal to the answer's.
fn check_document(app: &TestApp, data: &Value) -> String {
    let xml = xml_of(app, data);
    schema_valid(&xml);
    signature_verifies(&xml);
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let root = doc.root_element();
    let number = text(root, "ID");
    assert_eq!(data["consecutivo"], number.as_str(), "{data}");
    assert_eq!(
        format!(
            "{}{}",
            data["prefijo"].as_str().unwrap(),
            data["numero"].as_str().unwrap()
        ),
        number
    );
    let totals = children(root, "LegalMonetaryTotal")
        .chain(children(root, "RequestedMonetaryTotal"))
        .next()
        .unwrap();
    let line_extension = amount(totals, "LineExtensionAmount");
    let payable = amount(totals, "PayableAmount");
    // A health copay paid in advance: `total` is before it, `total_a_pagar`
    // the payable amount.
    let prepaid = children(totals, "PrepaidAmount")
        .next()
        .map(|_| amount(totals, "PrepaidAmount"))
        .unwrap_or_default();
    if !prepaid.is_zero() {
        assert_eq!(dec(&data["total_a_pagar"]), payable, "{data}");
    }
    let worth = payable + prepaid;
    let (taxes, withholdings) = xml_taxes(root);
    let tax_sum: Decimal = taxes.iter().map(|(_, a)| *a).sum();
    assert_eq!(dec(&data["subtotal"]), line_extension, "subtotal: {data}");
    assert_eq!(dec(&data["total_impuestos"]), tax_sum, "taxes: {data}");
    assert_eq!(
        dec(&data["total_retenciones"]),
        withholdings,
        "withholdings: {data}"
    );
    let support = data.get("cuds").is_some();
    let expected_total = if support { worth - withholdings } else { worth };
    assert_eq!(dec(&data["total"]), expected_total, "total: {data}");

    // The code, recomputed from the XML with the issuer's secrets.
    let uuid = text(root, "UUID");
    let code = data["cufe"]
        .as_str()
        .or(data["cude"].as_str())
        .or(data["cuds"].as_str())
        .unwrap();
    assert_eq!(uuid, code);
    assert!(data["qr_url"].as_str().unwrap().ends_with(code));
    let tax = |code: &str| {
        taxes
            .iter()
            .filter(|(c, _)| c == code)
            .map(|(_, a)| *a)
            .sum::<Decimal>()
    };
    let (date, time) = (text(root, "IssueDate"), text(root, "IssueTime"));
    let pin = app.keys["software_pin"].as_str().unwrap();
    let recomputed = if support {
        support_code(&SupportCodeInput {
            number: &number,
            issue_date: &date,
            issue_time: &time,
            line_extension,
            tax_iva: tax("01"),
            payable,
            seller_id: &party_id(root, "AccountingSupplierParty"),
            buyer_nit: &party_id(root, "AccountingCustomerParty"),
            pin,
            environment: 2,
        })
    } else {
        let key = if data.get("cufe").is_some() {
            app.keys["resoluciones"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["id_tipo_documento"] == 1)
                .unwrap()["clave_tecnica"]
                .as_str()
                .unwrap()
                .to_string()
        } else {
            pin.to_string()
        };
        invoice_code(&InvoiceCodeInput {
            number: &number,
            issue_date: &date,
            issue_time: &time,
            line_extension,
            tax_iva: tax("01"),
            tax_inc: tax("04"),
            tax_ica: tax("03"),
            payable,
            supplier_nit: &party_id(root, "AccountingSupplierParty"),
            customer_id: &party_id(root, "AccountingCustomerParty"),
            key: &key,
            environment: 2,
        })
    };
    assert_eq!(recomputed, code, "code recomputed for {number}");
    xml
}

fn accepted(data: &Value) {
    assert_eq!(data["estado_tax"], "Aceptado", "{data}");
    assert_eq!(data["transmision"]["isValid"], true, "{data}");
}

// ---------------------------------------------------------------------------

#[test]
fn every_route_and_tipo_is_issued_accepted_and_checked() {
    let app = TestApp::spawn();
    let invoice = issue(&app, "/factura", &examples::factura());
    accepted(&invoice);
    assert!(invoice["cufe"].is_string() && invoice.get("cude").is_none());
    let id = invoice["id"].as_u64().unwrap();
    assert_eq!(invoice["xml_url"], format!("/v1/api/facturacion/{id}/xml"));
    assert_eq!(invoice["pdf_url"], format!("/v1/api/facturacion/{id}/pdf"));
    let pdf = app.get(invoice["pdf_url"].as_str().unwrap(), &app.sk_test());
    assert_eq!(pdf.status().as_u16(), 200);
    assert_eq!(pdf.headers()["content-type"], "application/pdf");
    assert!(pdf.bytes().unwrap().starts_with(b"%PDF"));
    let support = issue(&app, "/documento-soporte", &examples::documento_soporte());
    accepted(&support);
    assert!(support["cuds"].is_string());
    let support_id = support["id"].as_u64().unwrap();

    let with_ref = |mut body: Value, original: u64| {
        body["documento_referencia"] = json!(original);
        body
    };
    let routes: Vec<(&str, Value, &str)> = vec![
        ("/factura", examples::factura(), "cufe"),
        (
            "/nota-credito",
            with_ref(examples::nota_credito(), id),
            "cude",
        ),
        (
            "/nota-debito",
            with_ref(examples::nota_debito(), id),
            "cude",
        ),
        ("/documento-soporte", examples::documento_soporte(), "cuds"),
        (
            "/nota-ajuste-ds",
            with_ref(examples::nota_ajuste_ds(), support_id),
            "cuds",
        ),
        ("/pos", examples::pos(), "cude"),
        ("/exportacion", examples::exportacion(), "cufe"),
    ];
    for (path, body, code) in &routes {
        let data = issue(&app, path, body);
        accepted(&data);
        assert!(data[*code].is_string(), "{path}: {data}");
    }
    // The generic route, each `tipo` by its long and short names.
    let tipos: Vec<(&str, Value)> = vec![
        ("factura", examples::factura()),
        ("fe", examples::factura()),
        ("nota_credito", with_ref(examples::nota_credito(), id)),
        ("nc", with_ref(examples::nota_credito(), id)),
        ("nota_debito", with_ref(examples::nota_debito(), id)),
        ("nd", with_ref(examples::nota_debito(), id)),
        ("documento_soporte", examples::documento_soporte()),
        ("ds", examples::documento_soporte()),
        (
            "nota_ajuste_ds",
            with_ref(examples::nota_ajuste_ds(), support_id),
        ),
        ("na", with_ref(examples::nota_ajuste_ds(), support_id)),
        ("exportacion", examples::exportacion()),
        ("fx", examples::exportacion()),
        ("pos", examples::pos()),
    ];
    for (i, (tipo, mut body)) in tipos.into_iter().enumerate() {
        body["tipo"] = json!(tipo);
        let path = if i % 2 == 0 { "/" } else { "" };
        let data = issue(&app, path, &body);
        accepted(&data);
    }
    // The generic route needs `tipo`; a typed route refuses another one.
    let err = issue_expect_error(&app, "/", &examples::factura(), 422, "VALIDATION_ERROR");
    detail(&err, "tipo");
    let mut body = examples::factura();
    body["tipo"] = json!("nc");
    let err = issue_expect_error(&app, "/factura", &body, 422, "VALIDATION_ERROR");
    detail(&err, "tipo");
    body["tipo"] = json!("boleta");
    let err = issue_expect_error(&app, "/", &body, 422, "VALIDATION_ERROR");
    assert!(detail(&err, "tipo")["message"]
        .as_str()
        .unwrap()
        .contains("nota_credito|nc"));
}

#[test]
fn aliases_spelling_flags_and_payment() {
    let app = TestApp::spawn();
    // Every alias of spec 2.9 in one body.
    let body = json!({
        "cliente": {"razon_social": "Alias S.A.S.", "nit": "900.373.076-4", "correo_electronico": "a@example.test",
                    "tipo_documento": "NIT", "tipo_organizacion": "juridica", "municipio": "05001", "pais": "CO"},
        "productos": [{"nombre_producto": "Uno", "cantidad": 1, "valor_unitario": 1000, "iva": 19, "codigo_producto": "P1"}],
        "notas": "con alias",
        "enviar_tax": true,
        "id_unico": format!("alias-{}", std::process::id()),
    });
    let data = issue(&app, "/factura", &body);
    accepted(&data);
    let xml = xml_of(&app, &data);
    assert!(
        xml.contains("schemeID=\"4\" schemeName=\"31\">900373076</cbc:CompanyID>"),
        "check digit computed"
    );
    assert!(xml.contains("<cbc:Note>con alias</cbc:Note>"));
    let items = json!({
        "cliente": {"nombre": "Persona", "cedula": "1020304050", "email": "p@example.test", "tipo_documento": 13},
        "items": [{"producto": "Dos", "precio_unitario": 500}],
        "referencia_externa": format!("alias-2-{}", std::process::id()),
    });
    let data = issue(&app, "/factura", &items);
    accepted(&data);
    assert_eq!(
        dec(&data["subtotal"]),
        Decimal::from(500),
        "cantidad defaults to 1"
    );

    // A field under two names: same value fine, different values a 422 naming both.
    let mut same = examples::factura();
    same["lineas"][0]["precio_unitario"] = json!(150000);
    issue(&app, "/factura", &same);
    let mut twice = examples::factura();
    twice["lineas"][0]["valor_unitario"] = json!(1);
    let err = issue_expect_error(&app, "/factura", &twice, 422, "VALIDATION_ERROR");
    let m = detail(&err, "lineas[0].precio")["message"]
        .as_str()
        .unwrap();
    assert!(m.contains("lineas[0].valor_unitario"), "{m}");
    let mut twice = examples::factura();
    twice["productos"] = twice["lineas"].clone();
    twice["productos"][0]["cantidad"] = json!(5);
    let err = issue_expect_error(&app, "/factura", &twice, 422, "VALIDATION_ERROR");
    assert!(detail(&err, "lineas")["message"]
        .as_str()
        .unwrap()
        .contains("productos"));

    // Errors name the caller's spelling.
    let mut bad = examples::factura();
    bad["lineas"]
        .as_array_mut()
        .unwrap()
        .push(json!({"descripcion": "sin precio"}));
    let err = issue_expect_error(&app, "/factura", &bad, 422, "VALIDATION_ERROR");
    assert_eq!(
        detail(&err, "lineas[2].precio")["message"],
        "es obligatorio (alias precio_unitario, valor_unitario)"
    );
    let mut bad = examples::factura();
    bad["productos"] = bad["lineas"].take();
    bad.as_object_mut().unwrap().remove("lineas");
    bad["productos"][1]["valor_unitario"] = bad["productos"][1]["precio_unitario"].take();
    bad["productos"][1]
        .as_object_mut()
        .unwrap()
        .remove("precio_unitario");
    bad["productos"][1]["valor_unitario"] = json!(-5);
    let err = issue_expect_error(&app, "/factura", &bad, 422, "VALIDATION_ERROR");
    assert_eq!(
        detail(&err, "productos[1].valor_unitario")["message"],
        "no puede ser negativo"
    );
    let mut bad = examples::factura();
    bad["cliente"]["correo"] = json!("no-es-correo");
    let err = issue_expect_error(&app, "/factura", &bad, 422, "VALIDATION_ERROR");
    detail(&err, "cliente.correo");
    let mut bad = examples::factura();
    bad["lineas"][0]["iva"] = json!(150);
    let err = issue_expect_error(&app, "/factura", &bad, 422, "VALIDATION_ERROR");
    assert_eq!(
        detail(&err, "lineas[0].iva")["message"],
        "debe estar entre 0 y 100"
    );
    let mut bad = examples::factura();
    bad["lineas"][0]["precio"] = json!("100");
    let err = issue_expect_error(&app, "/factura", &bad, 400, "MALFORMED_JSON");
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("lineas[0].precio"),
        "{err}"
    );

    // Identification types by code or name; a wrong check digit.
    for t in [json!(31), json!("31"), json!("nit")] {
        let mut b = examples::factura();
        b["cliente"]["tipo_documento"] = t;
        issue(&app, "/factura", &b);
    }
    let mut b = examples::factura();
    b["cliente"]["nit"] = json!("800197268-5");
    let err = issue_expect_error(&app, "/factura", &b, 422, "VALIDATION_ERROR");
    assert!(
        detail(&err, "cliente.nit")["message"]
            .as_str()
            .unwrap()
            .contains("(es 4)"),
        "{err}"
    );
    let mut b = examples::factura();
    b["cliente"]["tipo_documento"] = json!("CARNE");
    issue_expect_error(&app, "/factura", &b, 422, "VALIDATION_ERROR");

    // Payment by name and by code; credit needs its due date.
    let mut b = examples::factura();
    b["forma_pago"] = json!("2");
    b["metodo_pago"] = json!("48");
    b.as_object_mut().unwrap().remove("dias_credito");
    b["fecha_vencimiento"] = json!("2031-01-31");
    let xml = xml_of(&app, &issue(&app, "/factura", &b));
    assert!(xml.contains("<cbc:ID>2</cbc:ID><cbc:PaymentMeansCode>48</cbc:PaymentMeansCode><cbc:PaymentDueDate>2031-01-31</cbc:PaymentDueDate>"), "{}", &xml[xml.find("<cac:PaymentMeans>").unwrap()..][..300]);
    let xml = xml_of(&app, &issue(&app, "/factura", &examples::factura()));
    assert!(
        xml.contains("<cbc:PaymentMeansCode>47</cbc:PaymentMeansCode><cbc:PaymentDueDate>"),
        "dias_credito"
    );
    let mut b = examples::factura();
    b.as_object_mut().unwrap().remove("dias_credito");
    let err = issue_expect_error(&app, "/factura", &b, 422, "VALIDATION_ERROR");
    detail(&err, "fecha_vencimiento");
    let mut b = examples::factura();
    b["forma_pago"] = json!("contado");
    let err = issue_expect_error(&app, "/factura", &b, 422, "VALIDATION_ERROR");
    detail(&err, "dias_credito");

    // ambiente: agreeing is fine, contradicting the key a 422.
    let mut b = examples::factura();
    b["ambiente"] = json!("2");
    issue(&app, "/factura", &b);
    b["ambiente"] = json!("1");
    let err = issue_expect_error(&app, "/factura", &b, 422, "VALIDATION_ERROR");
    detail(&err, "ambiente");

    // transmitir false: a draft; asincrono: 202; POS is synchronous.
    let mut b = examples::factura();
    b["transmitir"] = json!(false);
    let (status, res) = post(&app, "/factura", &b);
    assert_eq!(status, 200, "{res}");
    assert_eq!(res["data"]["estado_tax"], "Borrador");
    assert!(res["data"].get("transmision").is_none());
    let draft = res["data"]["id"].as_u64().unwrap();
    // The draft is resent through the unified route: rebuilt from the
    // stored Spanish request, same number.
    let (status, resent) = json(app.post(
        &format!("/v1/api/facturacion/reenviar/{draft}"),
        &app.sk_test(),
        &json!({}),
    ));
    assert_eq!(status, 200, "{resent}");
    assert_eq!(resent["data"]["id_estado_documento"], 2, "{resent}");
    assert_eq!(resent["data"]["documento"]["numero"], res["data"]["numero"]);

    let mut b = examples::factura();
    b["asincrono"] = json!(true);
    let (status, res) = post(&app, "/factura", &b);
    assert_eq!(status, 202, "{res}");
    assert_eq!(res["status"], 202);
    assert_eq!(res["data"]["estado_tax"], "En Cola");
    assert!(res["data"]["poll_url"]
        .as_str()
        .unwrap()
        .contains("/status?id_empresa=1"));
    let mut b = examples::pos();
    b["asincrono"] = json!(true);
    let err = issue_expect_error(&app, "/pos", &b, 422, "VALIDATION_ERROR");
    detail(&err, "asincrono");
}

/// One line, `taxes` merged in; the answer's data.
fn one_line(app: &TestApp, price: &str, quantity: u32, taxes: Value) -> Value {
    let mut line = json!({"descripcion": "Producto", "cantidad": quantity, "precio": serde_json::from_str::<Value>(price).unwrap()});
    for (k, v) in taxes.as_object().unwrap() {
        line[k] = v.clone();
    }
    let body = json!({"cliente": examples::cliente(), "lineas": [line]});
    let data = issue(app, "/factura", &body);
    accepted(&data);
    data
}

fn assert_totals(data: &Value, subtotal: &str, taxes: &str, withholdings: &str, total: &str) {
    let d = |s: &str| Decimal::from_str(s).unwrap();
    assert_eq!(dec(&data["subtotal"]), d(subtotal), "{data}");
    assert_eq!(dec(&data["total_impuestos"]), d(taxes), "{data}");
    assert_eq!(dec(&data["total_retenciones"]), d(withholdings), "{data}");
    assert_eq!(dec(&data["total"]), d(total), "{data}");
}

#[test]
fn tax_shortcuts_and_their_arithmetic() {
    let app = TestApp::spawn();
    // Each shortcut alone on 100 000.
    let cases = [
        ("iva", "19000.00", "0", "01"),
        ("inc", "8000.00", "0", "04"),
        ("ica", "966.00", "0", "03"),
        ("bolsas", "1000.00", "0", "22"),
        ("retefuente", "0", "4000.00", "06"),
        ("reteica", "0", "966.00", "07"),
    ];
    for (name, tax, withholding, scheme) in cases {
        let pct = match name {
            "iva" => json!(19),
            "inc" => json!(8),
            "bolsas" => json!(1),
            "retefuente" => json!(4),
            _ => json!(0.966),
        };
        let data = one_line(&app, "100000", 1, json!({ name: pct }));
        let t = Decimal::from_str(tax).unwrap();
        let total = (Decimal::from(100000) + t).to_string();
        assert_totals(&data, "100000", tax, withholding, &total);
        let xml = xml_of(&app, &data);
        assert!(
            xml.contains(&format!("<cbc:ID>{scheme}</cbc:ID>")),
            "{name} is written as scheme {scheme}"
        );
    }
    // ReteIVA is a percentage of the line's VAT, and a withholding.
    let data = one_line(&app, "100000", 1, json!({"iva": 19, "reteiva": 15}));
    assert_totals(&data, "100000", "19000", "2850", "119000");
    let xml = xml_of(&app, &data);
    let w = &xml[xml.find("<cac:WithholdingTaxTotal>").unwrap()..];
    assert!(w.contains("<cbc:TaxableAmount currencyID=\"COP\">19000.00</cbc:TaxableAmount><cbc:TaxAmount currencyID=\"COP\">2850.00</cbc:TaxAmount>"), "{}", &w[..600]);
    // Combined on one line: IVA + INC.
    let data = one_line(&app, "10000", 2, json!({"iva": 19, "inc": 8}));
    assert_totals(&data, "20000", "5400", "0", "25400");
    // Half-up: 5 % of 24.90 is 1.245 → 1.25.
    let data = one_line(&app, "24.90", 1, json!({"iva": 5}));
    assert_totals(&data, "24.90", "1.25", "0", "26.15");
    // Withholdings are reported, not subtracted from an invoice's total.
    let data = one_line(
        &app,
        "1000",
        1,
        json!({"iva": 19, "retefuente": 2.5, "reteica": 1}),
    );
    assert_totals(&data, "1000", "190", "35", "1190");
    // The example: two lines, per-line rounding, then sums.
    let data = issue(&app, "/factura", &examples::factura());
    // 300000 + IVA 57000; 74.70 + IVA 3.74 (3.735) + INC 5.98 (5.976)
    assert_totals(&data, "300074.70", "57009.72", "20550", "357084.42");

    // Declared `totales`: within a peso accepted, beyond a 422 showing both.
    let mut b = examples::factura();
    b["totales"] = json!({"subtotal": 300074.70, "total_impuestos": 57010.5, "total_retenciones": 20550, "total": 357084.42});
    issue(&app, "/factura", &b);
    b["totales"]["total"] = json!(357000);
    let err = issue_expect_error(&app, "/factura", &b, 422, "VALIDATION_ERROR");
    let m = detail(&err, "totales.total")["message"].as_str().unwrap();
    assert!(m.contains("357000") && m.contains("357084.42"), "{m}");
    // Declared global `impuestos` by name, and line tax amounts.
    let mut b = examples::factura();
    b["impuestos"] = json!([{"tipo": "iva", "porcentaje": 19, "base": 300000, "valor": 57000},
                            {"tipo": "inc", "valor": 5.98}]);
    issue(&app, "/factura", &b);
    b["impuestos"][1]["valor"] = json!(9);
    let err = issue_expect_error(&app, "/factura", &b, 422, "VALIDATION_ERROR");
    assert!(detail(&err, "impuestos[1].valor")["message"]
        .as_str()
        .unwrap()
        .contains("5.98"));
    let mut b = examples::factura();
    b["lineas"][0]["impuestos"] = json!([{"tipo": "01", "porcentaje": 19, "valor": 50000}]);
    b["lineas"][0].as_object_mut().unwrap().remove("iva");
    let err = issue_expect_error(&app, "/factura", &b, 422, "VALIDATION_ERROR");
    detail(&err, "lineas[0].impuestos[0].valor");
    // The same tax twice on a line names the second one.
    let mut b = examples::factura();
    b["lineas"][0]["impuestos"] = json!([{"tipo": "iva", "porcentaje": 19}]);
    let err = issue_expect_error(&app, "/factura", &b, 422, "VALIDATION_ERROR");
    detail(&err, "lineas[0].impuestos[0].tipo");
}

#[test]
fn sectors_and_exports() {
    let app = TestApp::spawn();
    // Health: SS-CUFE, one user collection per patient, the copay.
    let data = issue(&app, "/factura", &examples::factura_salud());
    accepted(&data);
    assert_eq!(dec(&data["copago"]), Decimal::from(4500));
    let xml = xml_of(&app, &data);
    assert!(xml.contains("<cbc:CustomizationID>SS-CUFE</cbc:CustomizationID>"));
    assert_eq!(
        xml.matches("<Collection schemeName=\"Usuario\">").count(),
        2
    );
    assert!(xml.contains("<Name>TIPO_DOCUMENTO_IDENTIFICACION</Name><Value schemeID=\"CC\" schemeName=\"salud_identificacion.gc\">Cédula de ciudadanía</Value>"), "{xml}");
    assert!(xml.contains("<Name>NUMERO_DOCUMENTO_IDENTIFICACION</Name><Value>52123456</Value>"));
    assert!(xml.contains("<Name>PRIMER_NOMBRE</Name><Value>Luis</Value>"));
    assert_eq!(
        xml.matches("<Name>COPAGO</Name><Value>4500.00</Value>")
            .count(),
        1
    );
    // The copay was paid in advance: the payable amount is net of it, the
    // `total` keeps its meaning and `total_a_pagar` shows what is left.
    let total = dec(&data["total"]);
    assert_eq!(dec(&data["total_a_pagar"]), total - Decimal::from(4500));
    assert!(
        xml.contains("<cbc:PrepaidAmount currencyID=\"COP\">4500.00</cbc:PrepaidAmount>"),
        "{xml}"
    );
    assert!(xml.contains(&format!(
        "<cbc:PayableAmount currencyID=\"COP\">{:.2}</cbc:PayableAmount>",
        total - Decimal::from(4500)
    )));
    assert!(xml.contains("<cac:PrepaidPayment><cbc:ID>1</cbc:ID><cbc:PaidAmount currencyID=\"COP\">4500.00</cbc:PaidAmount>"));
    crate::support::checkers::xsd_valid(&xml);
    // Without a copay: SS-SinAporte, nothing prepaid, no `total_a_pagar`.
    let mut b = examples::factura_salud();
    b.as_object_mut().unwrap().remove("copago_cuota_moderadora");
    let without = issue(&app, "/factura", &b);
    accepted(&without);
    assert!(without.get("total_a_pagar").is_none(), "{without}");
    let plain = xml_of(&app, &without);
    assert!(plain.contains("<cbc:CustomizationID>SS-SinAporte</cbc:CustomizationID>"));
    assert!(!plain.contains("Prepaid"));
    // A copay above the document's worth is the copay's 422.
    let mut b = examples::factura_salud();
    b["copago_cuota_moderadora"] = json!(total + Decimal::from(1));
    let err = issue_expect_error(&app, "/factura", &b, 422, "VALIDATION_ERROR");
    detail(&err, "copago_cuota_moderadora");
    // A health invoice line needs its procedure code and patient.
    let mut b = examples::factura_salud();
    b["lineas"][1].as_object_mut().unwrap().remove("paciente");
    b["lineas"][0].as_object_mut().unwrap().remove("codigo");
    let err = issue_expect_error(&app, "/factura", &b, 422, "VALIDATION_ERROR");
    detail(&err, "lineas[1].paciente");
    detail(&err, "lineas[0].codigo");
    let mut b = examples::factura();
    b["copago_cuota_moderadora"] = json!(10);
    issue_expect_error(&app, "/factura", &b, 422, "VALIDATION_ERROR");
    // A health credit note on it, by its CUFE: SS-CUDE.
    let note = json!({
        "tipo_operacion": "11",
        "cufe_factura_referencia": data["cufe"],
        "cliente": examples::cliente(),
        "salud": {"codigo_prestador": "110010123401", "cobertura": "16"},
        "lineas": [{"descripcion": "Hemograma (anulado)", "codigo": "902210", "precio": 18000,
                    "paciente": {"tipo_documento": "TI", "numero_documento": "1012345678",
                                 "primer_nombre": "Luis", "primer_apellido": "Gómez"}}]
    });
    let data = issue(&app, "/nota-credito", &note);
    accepted(&data);
    let xml = xml_of(&app, &data);
    assert!(xml.contains("<cbc:CustomizationID>SS-CUDE</cbc:CustomizationID>"));
    assert!(xml.contains("<Name>PRIMER_APELLIDO</Name><Value>Gómez</Value>"));

    // Cargo transport: VAT 0, ReteFuente 1, the consignment on the line.
    let data = issue(&app, "/factura", &examples::factura_transporte());
    accepted(&data);
    assert_totals(&data, "3200000", "0", "32000", "3200000");
    let xml = xml_of(&app, &data);
    assert!(xml.contains("<cbc:CustomizationID>10</cbc:CustomizationID>"));
    assert!(xml.contains("<cbc:Name>01</cbc:Name><cbc:Value>MF-99812</cbc:Value>"));
    assert!(xml.contains("<cbc:Name>02</cbc:Name><cbc:Value>RM-45871</cbc:Value>"));
    assert!(xml.contains("Transporte de carga: vehículo TKL123, origen 11001, destino 76001"));
    let mut b = examples::factura_transporte();
    b.as_object_mut().unwrap().remove("transporte");
    let err = issue_expect_error(&app, "/factura", &b, 422, "VALIDATION_ERROR");
    detail(&err, "transporte");

    // Fuel: GLL and LTR, taxes 24, 25 (per unit) and 26.
    let data = issue(&app, "/factura", &examples::factura_combustibles());
    accepted(&data);
    // 105000 + 59000; 24: 12105, 25: 8500, 26: 2 % of 59000 = 1180, IVA 11210
    assert_totals(&data, "164000", "32995", "0", "196995");
    let xml = xml_of(&app, &data);
    for scheme in ["24", "25", "26"] {
        assert!(
            xml.contains(&format!("<cbc:ID>{scheme}</cbc:ID>")),
            "fuel tax {scheme}"
        );
    }
    assert!(xml.contains("unitCode=\"GLL\"") && xml.contains("unitCode=\"LTR\""));

    // Export: the route, and an invoice with tipo_documento 02.
    for (path, body) in [
        ("/exportacion", examples::exportacion()),
        ("/factura", {
            let mut b = examples::exportacion();
            b["tipo_documento"] = json!("02");
            b
        }),
    ] {
        let data = issue(&app, path, &body);
        accepted(&data);
        assert_eq!(data["moneda"], "USD");
        assert_eq!(
            dec(&data["tasa_cambio"]),
            Decimal::from_str("4150.25").unwrap()
        );
        assert_totals(&data, "1235", "0", "0", "1235");
        let xml = xml_of(&app, &data);
        assert!(xml.contains("<cbc:InvoiceTypeCode>02</cbc:InvoiceTypeCode>"));
        assert!(xml.contains("\">USD</cbc:DocumentCurrencyCode>"));
        assert!(xml.contains("<cbc:PayableAmount currencyID=\"USD\">1235.00</cbc:PayableAmount>"));
        assert!(xml.contains("<cbc:CalculationRate>4150.25</cbc:CalculationRate>"));
        assert!(xml.contains("FOB"));
    }
    // A foreign currency needs its rate.
    let mut b = examples::exportacion();
    b.as_object_mut().unwrap().remove("tasa_cambio");
    let err = issue_expect_error(&app, "/exportacion", &b, 422, "VALIDATION_ERROR");
    detail(&err, "tasa_cambio");
}

fn next_number(app: &TestApp, tipo: &str) -> u64 {
    let (_, d) = json(app.get(
        &format!("/v1/api/facturacion/consecutivo/{tipo}"),
        &app.sk_test(),
    ));
    d["data"]["siguiente"].as_u64().unwrap()
}

#[test]
fn notes_by_id_and_by_cufe_and_shared_references() {
    let app = TestApp::spawn();
    let invoice = issue(&app, "/factura", &examples::factura());
    let id = invoice["id"].as_u64().unwrap();
    let cufe = invoice["cufe"].as_str().unwrap();

    // Partial return by id: only the line and quantity returned.
    let mut note = examples::nota_credito();
    note["documento_referencia"] = json!(id);
    let data = issue(&app, "/nota-credito", &note);
    accepted(&data);
    assert_totals(&data, "150000", "28500", "0", "178500");
    let xml = xml_of(&app, &data);
    assert!(xml.contains(&format!(
        "<cbc:UUID schemeName=\"CUFE-SHA384\">{cufe}</cbc:UUID>"
    )));
    // By CUFE (upper case too), credit and debit.
    let mut note = examples::nota_credito();
    note.as_object_mut().unwrap().remove("documento_referencia");
    note["cufe_factura_referencia"] = json!(cufe.to_uppercase());
    let data = issue(&app, "/nota-credito", &note);
    accepted(&data);
    assert!(xml_of(&app, &data).contains(cufe));
    let mut debit = examples::nota_debito();
    debit
        .as_object_mut()
        .unwrap()
        .remove("documento_referencia");
    debit["cufe_factura_referencia"] = json!(cufe);
    let data = issue(&app, "/nota-debito", &debit);
    accepted(&data);
    assert!(data["cude"].is_string());
    // An unknown CUFE, or one that is not the id's document, is a 422.
    let before = next_number(&app, "nc");
    let mut bad = examples::nota_credito();
    bad.as_object_mut().unwrap().remove("documento_referencia");
    bad["cufe_factura_referencia"] = json!("ab".repeat(48));
    let err = issue_expect_error(&app, "/nota-credito", &bad, 422, "VALIDATION_ERROR");
    detail(&err, "cufe_factura_referencia");
    let mut bad = examples::nota_credito();
    bad["documento_referencia"] = json!(99999);
    let err = issue_expect_error(&app, "/nota-credito", &bad, 422, "VALIDATION_ERROR");
    detail(&err, "documento_referencia");
    let mut bad = examples::nota_credito();
    bad["documento_referencia"] = json!(id);
    bad["cufe_factura_referencia"] = json!(data["cude"]);
    issue_expect_error(&app, "/nota-credito", &bad, 422, "VALIDATION_ERROR");
    assert_eq!(next_number(&app, "nc"), before, "no number burned");

    // References are shared with the unified API, both ways.
    let reference = format!("shared-{}", std::process::id());
    let unified = json!({
        "id_tipo_documento": 1,
        "referencia_externa": reference,
        "customer": {"identification_number": "800197268", "name": "X", "email": "x@example.test"},
        "invoice_lines": [{"description": "A", "invoiced_quantity": 1, "price_amount": 10}]
    });
    let (status, res) = json(app.post("/v1/api/facturacion", &app.sk_test(), &unified));
    assert_eq!(status, 200, "{res}");
    let unified_id = res["data"]["documento"]["id"].as_u64().unwrap();
    let before = next_number(&app, "fe");
    let mut b = examples::factura();
    b["referencia"] = json!(reference);
    let err = issue_expect_error(&app, "/factura", &b, 409, "DUPLICATE_REFERENCE");
    assert_eq!(err["data"]["id"], unified_id);
    let mut b = examples::factura();
    b["id_unico"] = json!(format!("es-first-{}", std::process::id()));
    let data = issue(&app, "/factura", &b);
    let mut again = unified.clone();
    again["referencia_externa"] = b["id_unico"].clone();
    let err = assert_error(
        app.post("/v1/api/facturacion", &app.sk_test(), &again),
        409,
        "DUPLICATE_REFERENCE",
    );
    assert_eq!(err["data"]["id"], data["id"]);
    assert_eq!(
        next_number(&app, "fe"),
        before + 1,
        "only the accepted one numbered"
    );

    // The same body twice without a reference: the duplicate window.
    let body = json!({"cliente": examples::cliente(), "lineas": [{"descripcion": "Única", "precio": 77777}]});
    let (status, first) = json(app.post(&format!("{BASE}/factura"), &app.sk_test(), &body));
    assert_eq!(status, 200, "{first}");
    let err = assert_error(
        app.post(&format!("{BASE}/factura"), &app.sk_test(), &body),
        409,
        "DUPLICATE_PAYLOAD",
    );
    assert_eq!(err["data"]["id"], first["data"]["id"]);
}

#[test]
fn openapi_documents_every_route_with_examples() {
    let app = TestApp::spawn();
    let (status, doc) = json(
        app.client
            .get(format!("{}/v1/api/openapi.json", app.url))
            .send()
            .unwrap(),
    );
    assert_eq!(status, 200);
    let routes = [
        "/",
        "/factura",
        "/nota-credito",
        "/nota-debito",
        "/documento-soporte",
        "/nota-ajuste-ds",
        "/pos",
        "/exportacion",
    ];
    for route in routes {
        let path = format!("/v1/api/facturacion-es{route}");
        let op = &doc["paths"][&path]["post"];
        assert!(op.is_object(), "{path} documented");
        let content = &op["requestBody"]["content"]["application/json"];
        let examples = content["examples"]
            .as_object()
            .unwrap_or_else(|| panic!("{path}: {op}"));
        assert!(!examples.is_empty(), "{path} has examples");
        for (name, e) in examples {
            assert!(e["value"].is_object(), "{path} {name}");
        }
    }
    let factura = &doc["paths"]["/v1/api/facturacion-es/factura"]["post"]["requestBody"]["content"]
        ["application/json"]["examples"];
    for sector in ["factura", "salud", "transporte", "combustibles"] {
        assert!(
            factura[sector]["value"].is_object(),
            "sector example {sector}"
        );
    }
    let schema = &doc["components"]["schemas"]["SpanishRequest"]["properties"];
    for field in [
        "lineas",
        "cliente",
        "transmitir",
        "referencia",
        "totales",
        "salud",
        "transporte",
        "tasa_cambio",
    ] {
        assert!(schema[field].is_object(), "SpanishRequest.{field}");
    }
    let lineas = schema["lineas"].to_string();
    let line_schema = doc["components"]["schemas"]["SpanishLine"].to_string();
    assert!(lineas.contains("productos") || doc.to_string().contains("Aliases `productos`"));
    assert!(line_schema.contains("valor_unitario") && line_schema.contains("precio_unitario"));
}
