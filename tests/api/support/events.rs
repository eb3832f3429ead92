//! Received-invoice events: companies, events and their checks.

use emisor::api::invoice_request::examples;
use serde_json::{json, Value};
use sha2::Digest;

use super::app::*;
use super::bodies::unique;
use super::flow::*;

pub const BUYER_NIT: &str = "800197268";

/// A company of the service (demo-provisioned); its `demo-keys.json` shape.
pub fn new_company(app: &TestApp, nit: &str, name: &str) -> Value {
    let (status, created) = json(app.admin_post(
        "/admin/companies",
        &json!({"nit": nit, "razon_social": name, "demo": true}),
    ));
    assert_eq!(status, 201, "{created}");
    created["data"].clone()
}

pub fn key_of(company: &Value) -> String {
    company["sk_test"].as_str().expect("sk_test").to_string()
}

/// The seller (demo company 1) issues an invoice to the buyer; (id, cufe).
pub fn issue_to_buyer(app: &TestApp) -> (u64, String) {
    let (status, res) = json(app.post(
        "/v1/api/facturacion",
        &app.sk_test(),
        &unique(examples::invoice()),
    ));
    assert_eq!(status, 200, "{res}");
    assert_eq!(res["data"]["transmission"]["isValid"], true, "{res}");
    let id = res["data"]["documento"]["id"].as_u64().expect("id");
    (id, res["data"]["cufe"].as_str().expect("cufe").to_string())
}

pub fn event(app: &TestApp, key: &str, path: &str, body: Value) -> (u16, Value) {
    json(app.post(&format!("/v1/api/{path}"), key, &body))
}

/// Registers an event that must be accepted; its answer's data.
pub fn accepted_event(app: &TestApp, key: &str, path: &str, body: Value) -> Value {
    let (status, res) = event(app, key, path, body);
    assert_eq!(status, 200, "{path}: {res}");
    let data = if res["data"].is_object() {
        res["data"].clone()
    } else {
        res.clone()
    };
    assert_eq!(data["estado_tax"], "Aceptado", "{path}: {res}");
    data
}

pub use super::checkers::{schemas_dir, tool};

pub fn text_at(doc: &roxmltree::Document, steps: &[&str]) -> String {
    let mut node = doc.root_element();
    for s in steps {
        node = node
            .children()
            .find(|c| c.is_element() && c.tag_name().name() == *s)
            .unwrap_or_else(|| panic!("no {s} in {steps:?}"));
    }
    node.text().unwrap_or_default().trim().to_string()
}

/// The signed ApplicationResponse of an event, checked: XSD (xmllint),
/// signature (xmlsec1), CUDE recomputed with `pin` (SHA-384 of the
/// protocol.md 1.7 concatenation, computed here), codes as expected.
pub fn check_event_xml(app: &TestApp, key: &str, cufe: &str, answer: &Value, pin: &str) -> String {
    let id = answer["id_evento"].as_u64().expect("id_evento");
    let res = app.get(
        &format!("/v1/api/eventos/documentos/{cufe}/eventos/{id}/xml"),
        key,
    );
    assert_eq!(res.status().as_u16(), 200);
    let xml = res.text().unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    assert_eq!(doc.root_element().tag_name().name(), "ApplicationResponse");
    let response_code = text_at(&doc, &["DocumentResponse", "Response", "ResponseCode"]);
    assert_eq!(response_code, answer["codigo_evento_tax"].as_str().unwrap());
    assert_eq!(
        text_at(&doc, &["DocumentResponse", "DocumentReference", "UUID"]),
        cufe
    );
    let concatenation = [
        text_at(&doc, &["ID"]),
        text_at(&doc, &["IssueDate"]),
        text_at(&doc, &["IssueTime"]),
        text_at(&doc, &["SenderParty", "PartyTaxScheme", "CompanyID"]),
        text_at(&doc, &["ReceiverParty", "PartyTaxScheme", "CompanyID"]),
        response_code,
        text_at(&doc, &["DocumentResponse", "DocumentReference", "ID"]),
        text_at(
            &doc,
            &["DocumentResponse", "DocumentReference", "DocumentTypeCode"],
        ),
        pin.to_string(),
    ]
    .concat();
    let cude = hex::encode(sha2::Sha384::digest(concatenation.as_bytes()));
    assert_eq!(
        cude,
        answer["cude_evento"].as_str().unwrap(),
        "CUDE of {concatenation}"
    );
    assert_eq!(text_at(&doc, &["UUID"]), cude);
    let fecha = answer["fecha_evento"].as_str().unwrap();
    assert!(fecha.ends_with("-05:00"), "{fecha}");
    assert!(fecha.starts_with(&text_at(&doc, &["IssueDate"])), "{fecha}");

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("event.xml");
    std::fs::write(&file, &xml).unwrap();
    if tool("xmllint") {
        let schema = schemas_dir().join("maindoc/UBL-ApplicationResponse-2.1.xsd");
        let out = std::process::Command::new("xmllint")
            .arg("--noout")
            .arg("--schema")
            .arg(&schema)
            .arg(&file)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        // schemas/README.md: X.509 serials longer than xs:integer is the known quirk.
        let errors: Vec<&str> = stderr
            .lines()
            .filter(|l| !l.ends_with(" validates") && !l.ends_with(" fails to validate"))
            .filter(|l| !l.contains("X509SerialNumber"))
            .collect();
        assert!(errors.is_empty(), "xmllint: {stderr}");
        assert!(!stderr.contains("failed to compile"), "{stderr}");
    }
    if tool("xmlsec1") {
        let start = xml.find("<ds:X509Certificate>").unwrap() + "<ds:X509Certificate>".len();
        let end = xml[start..].find("</ds:X509Certificate>").unwrap() + start;
        let pem = format!(
            "-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n",
            &xml[start..end]
        );
        let cert = dir.path().join("cert.pem");
        std::fs::write(&cert, pem).unwrap();
        let verify = |path: &std::path::Path| {
            std::process::Command::new("xmlsec1")
                .args(["--verify", "--pubkey-cert-pem"])
                .arg(&cert)
                .args(["--enabled-reference-uris", "empty,same-doc"])
                .arg(path)
                .output()
                .unwrap()
                .status
                .success()
        };
        assert!(verify(&file), "xmlsec1 verifies the event");
        let tampered = dir.path().join("tampered.xml");
        std::fs::write(&tampered, xml.replacen(&cude, &"0".repeat(96), 1)).unwrap();
        assert!(!verify(&tampered), "a changed CUDE breaks the signature");
    }
    xml
}

/// Moves the business clock of the service and its in-process simulator.
pub fn set_clock(app: &TestApp, offset_s: i64) {
    let res = client()
        .post(format!("{}/__sim/clock", sim_url(app)))
        .json(&json!({ "offset_s": offset_s }))
        .send()
        .unwrap();
    assert!(res.status().is_success());
}
