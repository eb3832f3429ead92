//! The unified invoicing API over HTTP, transmitting to the in-process
//! simulator over real SOAP.

use emisor::api::facturacion::request::examples;
use serde_json::{json, Value};

use crate::helpers::*;

/// A distinct `referencia_externa`, so equal bodies are distinct requests.
pub fn unique(mut body: Value) -> Value {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    body["referencia_externa"] = json!(format!("test-{}-{n}", std::process::id()));
    body
}

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
        let stored = app.get(&format!("/v1/api/facturacion/{id}/xml"), &app.sk_test());
        assert_eq!(stored.headers()["content-type"], "text/xml; charset=utf-8");
        assert_eq!(
            stored.text().unwrap(),
            xml,
            "stored XML is the answered one"
        );
        let zip = app.get(&format!("/v1/api/facturacion/{id}/zip"), &app.sk_test());
        assert_eq!(zip.headers()["content-type"], "application/zip");
        assert!(zip.bytes().unwrap().starts_with(b"PK"));
    }
    // Export sent as type 2 with operation 10.
    let data = issue(&app, &examples::export_invoice_as_type_2());
    assert_eq!(data["cufe_scheme"], "CUFE-SHA384");
    assert_eq!(data["transmission"]["isValid"], true);
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
