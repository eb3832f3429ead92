//! The served schema against real answers: every recorded authority answer
//! and every kind of simulator answer validates against it (xmllint), and
//! the simulator writes the recorded answers back exactly.

use super::reply;
use super::schema;
use crate::authority::operation::Operation;
use crate::authority::soap::ns;
use crate::authority::soap::response::{
    parse_dian_response, parse_numbering_range, parse_upload_response, DianResponse,
};
use crate::authority::transmission::{
    Acquirer, DocumentXml, NumberRange, NumberingRangeResponse, UploadError,
};
use chrono::Utc;
use std::path::{Path, PathBuf};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src/authority/fixtures");

fn fixture(name: &str) -> String {
    std::fs::read_to_string(Path::new(FIXTURES).join(name)).expect("fixture")
}

/// The body's payload (the operation's `…Response` element) as a document
/// of its own, without the whitespace between tags.
fn payload(envelope: &str) -> String {
    let doc = roxmltree::Document::parse(envelope).expect("xml");
    let body = doc
        .descendants()
        .find(|n| n.has_tag_name((ns::SOAP12, "Body")))
        .expect("body");
    let element = body.children().find(|c| c.is_element()).expect("payload");
    envelope[element.range()]
        .lines()
        .map(str::trim)
        .collect::<String>()
}

/// The recorded authority answers that are not faults.
fn recorded_answers() -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = std::fs::read_dir(FIXTURES)
        .expect("fixtures")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".xml") && !n.starts_with("fault"))
        .map(|n| {
            let xml = fixture(&n);
            (n, xml)
        })
        .collect();
    out.sort();
    out
}

fn accepted() -> DianResponse {
    DianResponse {
        error_messages: Vec::new(),
        is_valid: true,
        status_code: "00".into(),
        status_description: "Procesado Correctamente.".into(),
        status_message: Some("La Factura electrónica SETP990000001, ha sido autorizada.".into()),
        xml_base64_bytes: Some("PEFwcGxpY2F0aW9uUmVzcG9uc2UvPg==".into()),
        xml_document_key: Some("abc".into()),
        xml_file_name: Some("fv1".into()),
    }
}

fn rejected() -> DianResponse {
    DianResponse {
        error_messages: vec![
            "Regla: FAD06, Rechazo: a & b < c".into(),
            "Regla: FAJ44b, Notificación: x".into(),
        ],
        is_valid: false,
        status_code: "99".into(),
        status_description: "Validación contiene errores en campos mandatorios.".into(),
        xml_document_key: Some("abc".into()),
        ..DianResponse::default()
    }
}

fn unprocessed(code: &str, description: &str) -> DianResponse {
    DianResponse {
        status_code: code.into(),
        status_description: description.into(),
        ..DianResponse::default()
    }
}

/// One answer of every shape the simulator writes.
fn simulator_answers() -> Vec<(String, String)> {
    let now = Utc::now();
    let range = NumberRange {
        resolution_number: "18760000001".into(),
        resolution_date: "2019-01-19".into(),
        prefix: "SETP".into(),
        from_number: 990000000,
        to_number: 995000000,
        valid_date_from: "2019-01-19".into(),
        valid_date_to: "2030-01-19".into(),
        technical_key: Some("k".into()),
    };
    let no_key = NumberRange {
        technical_key: None,
        ..range.clone()
    };
    let refused = UploadError {
        file_name: Some("z1.zip".into()),
        processed_message: "Regla: 89, Rechazo: El archivo ZIP no se puede leer.".into(),
        ..UploadError::default()
    };
    let mut out = Vec::new();
    for op in [
        Operation::SendBillSync,
        Operation::GetStatus,
        Operation::SendNominaSync,
        Operation::SendEventUpdateStatus,
    ] {
        out.push((
            format!("{op} accepted"),
            reply::dian_response(op, &accepted(), now),
        ));
        out.push((
            format!("{op} rejected"),
            reply::dian_response(op, &rejected(), now),
        ));
    }
    out.push((
        "GetStatus unknown".into(),
        reply::dian_response(
            Operation::GetStatus,
            &unprocessed("66", "TrackId no encontrado"),
            now,
        ),
    ));
    out.push((
        "GetStatusZip pending".into(),
        reply::status_zip(&[unprocessed("", "Batch en proceso de validación.")], now),
    ));
    out.push((
        "GetStatusZip done".into(),
        reply::status_zip(&[accepted(), rejected()], now),
    ));
    for op in [Operation::SendBillAsync, Operation::SendTestSetAsync] {
        out.push((
            format!("{op} queued"),
            reply::upload_response(op, Some("zk"), &[], now),
        ));
        out.push((
            format!("{op} refused"),
            reply::upload_response(op, None, std::slice::from_ref(&refused), now),
        ));
    }
    out.push((
        "GetNumberingRange".into(),
        reply::numbering_range(
            &NumberingRangeResponse {
                operation_code: "100".into(),
                operation_description: "Acción completada OK.".into(),
                ranges: vec![range, no_key],
            },
            now,
        ),
    ));
    out.push((
        "GetXmlByDocumentKey found".into(),
        reply::event_response(
            &DocumentXml {
                code: DocumentXml::FOUND.into(),
                message: "Accion completada OK".into(),
                xml: Some(b"<Invoice/>".to_vec()),
            },
            now,
        ),
    ));
    out.push((
        "GetXmlByDocumentKey not found".into(),
        reply::event_response(
            &DocumentXml {
                code: DocumentXml::NOT_FOUND.into(),
                message: "Xml con CUFE: 'ab' no encontrado.".into(),
                xml: None,
            },
            now,
        ),
    ));
    out.push((
        "GetStatusEvent listed".into(),
        reply::dian_response(Operation::GetStatusEvent, &accepted(), now),
    ));
    out.push((
        "GetStatusEvent none".into(),
        reply::dian_response(
            Operation::GetStatusEvent,
            &unprocessed(
                "67",
                "EL CUFE o Factura consultada no tiene a la fecha eventos asociados.",
            ),
            now,
        ),
    ));
    out.push((
        "GetAcquirer found".into(),
        reply::acquirer_response(
            &Acquirer {
                status_code: Acquirer::FOUND.into(),
                message: "Operación exitosa".into(),
                receiver_name: Some("ACME S.A.S.".into()),
                receiver_email: Some("compras@acme.co".into()),
            },
            now,
        ),
    ));
    out.push((
        "GetAcquirer unknown".into(),
        reply::acquirer_response(
            &Acquirer {
                status_code: Acquirer::NOT_FOUND.into(),
                message: "El adquirente No existe en la base de datos".into(),
                receiver_name: None,
                receiver_email: None,
            },
            now,
        ),
    ));
    out.push((
        "GetNumberingRange none".into(),
        reply::numbering_range(
            &NumberingRangeResponse {
                operation_code: "301".into(),
                operation_description: "No se encontraron rangos.".into(),
                ranges: Vec::new(),
            },
            now,
        ),
    ));
    out
}

/// Writes the schema documents into `dir` (imports by file name) and
/// returns the path of the service's own (`xsd0`).
fn write_schema(dir: &Path) -> PathBuf {
    for doc in schema::documents() {
        let text = doc.standalone(&|n| Some(format!("xsd{n}.xsd")));
        std::fs::write(dir.join(format!("xsd{}.xsd", doc.number)), text).expect("write xsd");
    }
    dir.join("xsd0.xsd")
}

/// `xmllint --schema` over `payloads`: Ok, or what it printed.
fn xmllint_validate(dir: &Path, payloads: &[(String, String)]) -> Result<(), String> {
    let main = write_schema(dir);
    let mut cmd = std::process::Command::new("xmllint");
    cmd.arg("--noout").arg("--schema").arg(&main);
    for (i, (_, xml)) in payloads.iter().enumerate() {
        let path = dir.join(format!("payload{i}.xml"));
        std::fs::write(&path, xml).expect("write payload");
        cmd.arg(path);
    }
    let out = cmd.output().expect("xmllint");
    let names: Vec<&str> = payloads.iter().map(|(n, _)| n.as_str()).collect();
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{names:?}\n{}",
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

#[test]
fn recorded_and_simulated_answers_validate_against_the_served_schema() {
    if !crate::testing::tool("xmllint") {
        eprintln!("skipped: xmllint not installed");
        return;
    }
    let recorded = recorded_answers();
    assert!(recorded.len() >= 10, "{recorded:?}");
    let mut payloads: Vec<(String, String)> = recorded
        .into_iter()
        .map(|(n, xml)| (n, payload(&xml)))
        .collect();
    payloads.extend(
        simulator_answers()
            .into_iter()
            .map(|(n, xml)| (n, payload(&xml))),
    );
    let dir = tempfile::tempdir().expect("tempdir");
    if let Err(e) = xmllint_validate(dir.path(), &payloads) {
        panic!("answers do not validate: {e}");
    }

    // The check has teeth: members out of the contract's order, or an
    // unknown member, are refused.
    let good = payload(&reply::dian_response(
        Operation::GetStatus,
        &rejected(),
        Utc::now(),
    ));
    let swapped = good.replacen(
        "<b:IsValid>false</b:IsValid><b:StatusCode>99</b:StatusCode>",
        "<b:StatusCode>99</b:StatusCode><b:IsValid>false</b:IsValid>",
        1,
    );
    let unknown = good.replacen("<b:XmlBytes", "<b:Extra/><b:XmlBytes", 1);
    for bad in [swapped, unknown] {
        assert_ne!(bad, good);
        let dir = tempfile::tempdir().expect("tempdir");
        assert!(
            xmllint_validate(dir.path(), &[("bad".into(), bad.clone())]).is_err(),
            "accepted {bad}"
        );
    }
}

#[test]
fn the_simulator_writes_recorded_answers_back_exactly() {
    let now = Utc::now();
    let dian = [
        ("send_bill_sync_accepted.xml", Operation::SendBillSync),
        ("send_bill_sync_rejected.xml", Operation::SendBillSync),
        ("send_bill_sync_notifications.xml", Operation::SendBillSync),
        ("get_status_not_found.xml", Operation::GetStatus),
    ];
    for (name, op) in dian {
        let recorded = fixture(name);
        let parsed = parse_dian_response(&recorded, op).expect("parse");
        assert_eq!(
            payload(&reply::dian_response(op, &parsed, now)),
            payload(&recorded),
            "{name}"
        );
    }
    for (name, op) in [
        ("send_test_set_async.xml", Operation::SendTestSetAsync),
        ("send_bill_async_errors.xml", Operation::SendBillAsync),
    ] {
        let recorded = fixture(name);
        let parsed = parse_upload_response(&recorded, op).expect("parse");
        assert_eq!(
            payload(&reply::upload_response(
                op,
                parsed.zip_key.as_deref(),
                &parsed.errors,
                now
            )),
            payload(&recorded),
            "{name}"
        );
    }
    let recorded = fixture("get_numbering_range.xml");
    let parsed = parse_numbering_range(&recorded).expect("parse");
    assert_eq!(
        payload(&reply::numbering_range(&parsed, now)),
        payload(&recorded)
    );
    let pending = unprocessed("", "Batch en proceso de validación.");
    assert_eq!(
        payload(&reply::status_zip(&[pending], now)),
        payload(&fixture("get_status_zip_pending.xml"))
    );
}
