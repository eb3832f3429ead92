//! The unified invoicing API over HTTP, transmitting to the in-process
//! simulator over real SOAP.

use emisor::api::invoice_request::examples;
use serde_json::{json, Value};

use crate::support::app::*;
use crate::support::bodies::unique;

/// Issues `body` (made unique) synchronously and returns the answer's `data`.
fn issue(app: &TestApp, body: &Value) -> Value {
    let body = unique(body.clone());
    let (status, res) = json(app.post("/v1/api/facturacion", &app.sk_test(), &body));
    assert_eq!(status, 200, "{res}");
    assert_eq!(res["success"], true, "{res}");
    res["data"].clone()
}

/// The original a note refers to: an accepted invoice (or DS / POS).
fn original(app: &TestApp, for_type: u8) -> u64 {
    let body = match for_type {
        5 => examples::support_document(),
        10 => examples::pos(),
        _ => examples::invoice(),
    };
    let data = issue(app, &body);
    data["documento"]["id"].as_u64().unwrap()
}

fn xmlsec_verify(xml: &str) -> bool {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("doc.xml");
    std::fs::write(&path, xml).unwrap();
    // The certificate is inside KeyInfo; trust it for this check.
    let der = {
        let start = xml.find("<ds:X509Certificate>").unwrap() + "<ds:X509Certificate>".len();
        let end = xml[start..].find("</ds:X509Certificate>").unwrap() + start;
        xml[start..end].to_string()
    };
    let pem = format!("-----BEGIN CERTIFICATE-----\n{der}\n-----END CERTIFICATE-----\n");
    let cert = dir.path().join("cert.pem");
    std::fs::write(&cert, pem).unwrap();
    let out = std::process::Command::new("xmlsec1")
        .args(["--verify", "--pubkey-cert-pem"])
        .arg(&cert)
        .args(["--enabled-reference-uris", "empty,same-doc"])
        .arg(&path)
        .output();
    match out {
        Ok(o) => o.status.success(),
        Err(_) => std::env::var_os("REQUIRE_CHECKERS").is_none(), // not installed locally
    }
}

#[test]
fn every_type_is_issued_synchronously_and_accepted() {
    let app = TestApp::spawn();
    for tipo in 1..=10u8 {
        let mut body = examples::for_type(tipo).unwrap();
        if matches!(tipo, 2 | 3 | 5 | 10) {
            body = examples::with_reference(body, original(&app, tipo));
        }
        let data = issue(&app, &body);
        let t = &data["transmission"];
        assert_eq!(t["isValid"], true, "type {tipo}: {data}");
        assert_eq!(t["statusCode"], "00", "type {tipo}");
        assert_eq!(data["id_estado_documento"], 2, "type {tipo}");
        let code = data["cufe"].as_str().unwrap();
        assert_eq!(code.len(), 96);
        let scheme = data["cufe_scheme"].as_str().unwrap();
        let expected = match tipo {
            1 | 6 | 8 => "CUFE-SHA384",
            4 | 5 => "CUDS-SHA384",
            _ => "CUDE-SHA384",
        };
        assert_eq!(scheme, expected, "type {tipo}");
        assert!(data["qr_url"].as_str().unwrap().ends_with(code));
        // A SendBillSync document is tracked by its code (spec 2.3, 2.4).
        assert_eq!(t["zipKey"], code, "type {tipo}: {data}");
        let id = data["documento"]["id"].as_u64().unwrap();
        let (_, rec) = json(app.get(
            &format!("/v1/api/facturacion/{id}/status?id_empresa=1"),
            &app.sk_test(),
        ));
        assert_eq!(rec["data"]["tax_track_id"], code, "type {tipo}: {rec}");
        let xml = data["xml"].as_str().unwrap();
        assert!(xmlsec_verify(xml), "type {tipo}: signature verifies");
        assert!(t.get("notifications").is_none(), "type {tipo}: {t}");
        conforms(tipo, xml);
        let stored = app.get(&format!("/v1/api/facturacion/{id}/xml"), &app.sk_test());
        assert_eq!(stored.headers()["content-type"], "text/xml; charset=utf-8");
        assert_eq!(
            stored.text().unwrap(),
            xml,
            "stored XML is the answered one"
        );
        // The ZIP is built again from the stored XML on each request: the
        // same bytes every time, one entry holding exactly that XML.
        let zip_of = || {
            let zip = app.get(&format!("/v1/api/facturacion/{id}/zip"), &app.sk_test());
            assert_eq!(zip.headers()["content-type"], "application/zip");
            zip.bytes().unwrap().to_vec()
        };
        let bytes = zip_of();
        assert_eq!(bytes, zip_of(), "type {tipo}: the ZIP is byte-identical");
        let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).unwrap();
        assert_eq!(archive.len(), 1);
        let mut entry = archive.by_index(0).unwrap();
        assert!(entry.name().ends_with(".xml"), "{}", entry.name());
        let mut inside = String::new();
        std::io::Read::read_to_string(&mut entry, &mut inside).unwrap();
        assert_eq!(inside, xml, "type {tipo}: the ZIP holds the signed XML");
    }
    // Export sent as type 2 with operation 10.
    let data = issue(&app, &examples::export_invoice_as_type_2());
    assert_eq!(data["cufe_scheme"], "CUFE-SHA384");
    assert_eq!(data["transmission"]["isValid"], true);
    conforms(6, data["xml"].as_str().unwrap());
}

/// The text of the first element named `local` (any namespace).
fn first(xml: &str, local: &str) -> Option<String> {
    let doc = roxmltree::Document::parse(xml).unwrap();
    let text = doc
        .descendants()
        .find(|n| n.is_element() && n.tag_name().name() == local)
        .and_then(|n| n.text())
        .map(str::to_string);
    text
}

/// What the authority checks in each type's XML (protocol.md §7.3, §7.5b,
/// §7.5c), beyond what the simulator enforces.
fn conforms(tipo: u8, xml: &str) {
    let op = first(xml, "CustomizationID").unwrap();
    let expected_op = match tipo {
        2 | 10 => "20",
        3 => "30",
        _ => "10",
    };
    assert_eq!(op, expected_op, "type {tipo}: operation type");
    let extensions = xml.matches("<ext:UBLExtension>").count();
    assert_eq!(extensions, if tipo == 9 { 5 } else { 2 }, "type {tipo}");
    match tipo {
        4 | 5 => {
            // The resident vendor (a cédula) as a NIT in PartyTaxScheme.
            let supplier = &xml[xml.find("<cac:AccountingSupplierParty>").unwrap()..];
            let tax = &supplier[supplier.find("<cac:PartyTaxScheme>").unwrap()..];
            assert!(
                tax.contains("schemeID=\"8\" schemeName=\"31\">1020304050</cbc:CompanyID>"),
                "type {tipo}: {}",
                &tax[..400]
            );
        }
        6 => {
            assert_eq!(first(xml, "InvoiceTypeCode").as_deref(), Some("02"));
            let customer = &xml[xml.find("<cac:AccountingCustomerParty>").unwrap()..];
            assert!(customer.contains("<cac:Address><cbc:ID>00000</cbc:ID><cbc:CityName>Miami</cbc:CityName>"));
            assert!(customer.contains("<cbc:CountrySubentityCode>00</cbc:CountrySubentityCode>"));
            assert!(customer.contains(
                "<cbc:IdentificationCode>US</cbc:IdentificationCode><cbc:Name languageID=\"es\">Estados Unidos</cbc:Name>"
            ));
        }
        7 => assert!(xml.contains(
            "<cac:AdditionalDocumentReference><cbc:ID>TAL-0042</cbc:ID><cbc:IssueDate>2025-03-10</cbc:IssueDate><cbc:DocumentTypeCode>03</cbc:DocumentTypeCode>"
        )),
        9 => {
            assert!(xml.contains("<Name>PlacaCaja</Name><Value>3</Value>"));
            assert!(xml.contains("<Name>Cajero</Name><Value>17</Value>"));
            assert!(xml.contains("<Name>TipoCaja</Name><Value>POS</Value>"));
            let number = first(xml, "ID").unwrap();
            assert!(xml.contains(&format!("<Name>CódigoVenta</Name><Value>{number}</Value>")));
            assert!(xml.contains("<Name>SubTotal</Name><Value>15000.00</Value>"));
            assert!(xml.contains("<Name>NombreSoftware</Name><Value>emisor</Value>"));
            assert!(xml.contains("<Name>Codigo</Name><Value>222222222222</Value>"));
        }
        10 => {
            assert!(xml.contains("<sts:InvoiceSource>"));
            assert!(!xml.contains("CreditNoteSource"));
            assert!(xml.contains("<cbc:DocumentTypeCode>20</cbc:DocumentTypeCode></cac:InvoiceDocumentReference>"));
        }
        _ => {}
    }
}

/// The API's sector operations reach the authority as its own codes: health
/// (`11`) as `SS-SinAporte` (no copay through this API) / `SS-CUDE` with
/// the health annex's data, cargo
/// transport (`12`) as 10 with the consignment on the line; both accepted.
#[test]
fn sector_operations_are_issued_and_accepted() {
    let app = TestApp::spawn();
    let data = issue(&app, &examples::health_invoice());
    assert_eq!(data["transmission"]["isValid"], true, "{data}");
    let xml = data["xml"].as_str().unwrap();
    assert!(xmlsec_verify(xml));
    assert_eq!(
        first(xml, "CustomizationID").as_deref(),
        Some("SS-SinAporte")
    );
    assert!(xml.contains("<Name>CODIGO_PRESTADOR</Name><Value>110010123401</Value>"));
    assert!(xml.contains(
        "<cac:InvoicePeriod><cbc:StartDate>2025-03-01</cbc:StartDate><cbc:EndDate>2025-03-31</cbc:EndDate></cac:InvoicePeriod>"
    ));
    let invoice = data["documento"]["id"].as_u64().unwrap();

    // A health credit note on it.
    let mut note = examples::with_reference(examples::credit_note(), invoice);
    note["id_tipo_operacion"] = json!("11");
    note["salud"] = json!({"codigo_prestador": "110010123401", "cobertura": "16"});
    let data = issue(&app, &note);
    assert_eq!(data["transmission"]["isValid"], true, "{data}");
    let xml = data["xml"].as_str().unwrap();
    assert!(xmlsec_verify(xml));
    assert_eq!(first(xml, "CustomizationID").as_deref(), Some("SS-CUDE"));

    let data = issue(&app, &examples::transport_invoice());
    assert_eq!(data["transmission"]["isValid"], true, "{data}");
    let xml = data["xml"].as_str().unwrap();
    assert!(xmlsec_verify(xml));
    assert_eq!(first(xml, "CustomizationID").as_deref(), Some("10"));
    assert!(xml.contains("<cac:InvoiceLine><cbc:ID schemeID=\"1\">1</cbc:ID>"));
    assert!(xml.contains(
        "<cbc:Name>03</cbc:Name><cbc:Value>3200000.00</cbc:Value><cbc:ValueQuantity unitCode=\"KGM\">12500.00</cbc:ValueQuantity>"
    ));

    // The missing data is a 422 naming it, before anything is numbered.
    let mut body = examples::health_invoice();
    body["salud"] = json!({"codigo_prestador": "110010123401"});
    let res = app.post("/v1/api/facturacion", &app.sk_test(), &unique(body));
    let err = assert_error(res, 422, "VALIDATION_ERROR");
    assert_eq!(
        err["error"]["details"][0]["field"], "salud.cobertura",
        "{err}"
    );
}

#[test]
fn status_record_and_draft_without_transmission() {
    let app = TestApp::spawn();
    let mut body = examples::invoice();
    body["transmit"] = json!(false);
    let data = issue(&app, &body);
    assert!(data["transmission"].is_null());
    assert_eq!(data["id_estado_documento"], 1);
    let id = data["documento"]["id"].as_u64().unwrap();
    let (status, rec) = json(app.get(
        &format!("/v1/api/facturacion/{id}/status?id_empresa=1"),
        &app.sk_test(),
    ));
    assert_eq!(status, 200, "{rec}");
    let r = &rec["data"];
    assert_eq!(r["id"], id);
    assert_eq!(r["estado"], "Borrador");
    assert_eq!(r["prefijo"], "SETP");
    assert_eq!(r["numero"], "990000000");
    assert_eq!(r["id_tipo_documento"], 1);
    assert!(r["total"].is_number());
    assert_error(
        app.get(&format!("/v1/api/facturacion/{id}/status"), &app.sk_test()),
        422,
        "VALIDATION_ERROR",
    );
    assert_error(
        app.get(
            "/v1/api/facturacion/999/status?id_empresa=1",
            &app.sk_test(),
        ),
        404,
        "NOT_FOUND",
    );

    // Resend: a draft can be resent, an accepted one cannot.
    let (status, resent) = json(app.post(
        &format!("/v1/api/facturacion/reenviar/{id}"),
        &app.sk_test(),
        &json!({}),
    ));
    assert_eq!(status, 200, "{resent}");
    assert_eq!(resent["data"]["id_estado_documento"], 2);
    assert_eq!(
        resent["data"]["documento"]["numero"], "990000000",
        "same number"
    );
    assert_error(
        app.post(
            &format!("/v1/api/facturacion/reenviar/{id}"),
            &app.sk_test(),
            &json!({}),
        ),
        409,
        "INVALID_STATE",
    );

    // A POS draft is not resent through this endpoint (FE, NC, ND, DS only).
    let mut pos = examples::for_type(9).unwrap();
    pos["transmit"] = json!(false);
    let (status, res) = json(app.post("/v1/api/facturacion", &app.sk_test(), &pos));
    assert_eq!(status, 200, "{res}");
    let pos_id = res["data"]["documento"]["id"].as_u64().unwrap();
    let err = assert_error(
        app.post(
            &format!("/v1/api/facturacion/reenviar/{pos_id}"),
            &app.sk_test(),
            &json!({}),
        ),
        422,
        "VALIDATION_ERROR",
    );
    assert!(err["message"].as_str().unwrap().contains("pos"), "{err}");
    assert_eq!(status_of_draft(&app, pos_id), 1, "unchanged");
}

fn status_of_draft(app: &TestApp, id: u64) -> u64 {
    let (_, rec) = json(app.get(
        &format!("/v1/api/facturacion/{id}/status?id_empresa=1"),
        &app.sk_test(),
    ));
    rec["data"]["id_estado_documento"].as_u64().unwrap()
}
