//! The document checks that need the engine's cryptography, behind a small
//! trait so the simulator can run with other implementations in tests:
//! the XAdES signature and the recomputation of the document's code.
//! [`EngineChecks`] wires the real ones (`crate::engine::xades`,
//! `crate::engine::codes`). Where the signature sits is checked here too.

use super::document::{child, descendant, path, payroll_body, text, DocumentFacts, Family};
use crate::engine::codes::{self, EventCodeInput, PayrollCodeInput};
use crate::engine::xades;
use roxmltree::{Document, Node};
use rust_decimal::Decimal;
use std::str::FromStr;

const NS_DS: &str = "http://www.w3.org/2000/09/xmldsig#";

/// Checks of one received document. `Err` carries the reason shown after
/// the rule id.
pub trait DocumentChecks: Send + Sync {
    /// The enveloped XAdES signature verifies against its own certificate.
    fn verify_signature(&self, xml: &str) -> Result<(), String>;
    /// The document's code recomputed from its XML with `key` (technical key
    /// or software PIN, chosen by the caller from the registry).
    fn recompute_code(&self, xml: &str, facts: &DocumentFacts, key: &str)
        -> Result<String, String>;
}

/// The engine's XAdES verification and code formulas.
#[derive(Debug, Default, Clone, Copy)]
pub struct EngineChecks;

impl DocumentChecks for EngineChecks {
    fn verify_signature(&self, xml: &str) -> Result<(), String> {
        let v = xades::verify(xml).map_err(|e| e.to_string())?;
        if !v.signing_certificate_ok {
            return Err("xades:SigningCertificate no corresponde al certificado firmante".into());
        }
        if !v.policy_ok {
            return Err("La política de firma no es la vigente".into());
        }
        Ok(())
    }

    fn recompute_code(
        &self,
        xml: &str,
        facts: &DocumentFacts,
        key: &str,
    ) -> Result<String, String> {
        match facts.family {
            Family::Invoice | Family::CreditNote | Family::DebitNote => {
                let x = codes::extract_code_input(xml).map_err(|e| e.to_string())?;
                Ok(if matches!(facts.type_code.as_str(), "05" | "95") {
                    codes::support_code(&x.support_input(key))
                } else {
                    codes::invoice_code(&x.invoice_input(key))
                })
            }
            Family::Event => event_code(xml, key),
            Family::Payroll | Family::PayrollAdjustment => payroll_code(xml, key),
        }
    }
}

/// protocol.md §3.1: UBL documents carry the signature in
/// `ext:UBLExtensions/ext:UBLExtension[2]/ext:ExtensionContent/ds:Signature`,
/// after `sts:DianExtensions`; a document with sector extensions (a POS
/// receipt's three, protocol.md §7.5b; a health document's) keeps the
/// signature's extension last. Payroll: the last `ext:UBLExtension`.
pub fn signature_placement(xml: &str, facts: &DocumentFacts) -> Result<(), String> {
    let doc = Document::parse(xml).map_err(|e| e.to_string())?;
    let root = doc.root_element();
    let extensions: Vec<Node<'_, '_>> = child(root, "UBLExtensions")
        .map(|u| {
            u.children()
                .filter(|c| c.is_element() && c.tag_name().name() == "UBLExtension")
                .collect()
        })
        .unwrap_or_default();
    let holder = match facts.family {
        Family::Payroll | Family::PayrollAdjustment => extensions.last().copied(),
        _ if extensions.len() > 2 => extensions.last().copied(),
        _ => extensions.get(1).copied(),
    };
    let signed = holder
        .and_then(|e| child(e, "ExtensionContent"))
        .and_then(|c| child(c, "Signature"))
        .is_some_and(|s| s.tag_name().namespace() == Some(NS_DS));
    let last =
        matches!(facts.family, Family::Payroll | Family::PayrollAdjustment) || extensions.len() > 2;
    if signed {
        Ok(())
    } else if last {
        Err("La firma no está en la última ext:UBLExtension".into())
    } else {
        Err("La firma no está en ext:UBLExtension[2]/ext:ExtensionContent".into())
    }
}

fn amount(t: Option<String>, field: &str) -> Result<Decimal, String> {
    let t = t.ok_or_else(|| format!("Falta {field}"))?;
    Decimal::from_str(&t).map_err(|_| format!("{field} no es un valor numérico"))
}

fn environment(t: Option<&str>) -> Result<u8, String> {
    match t.map(str::trim) {
        Some("1") => Ok(1),
        Some("2") => Ok(2),
        _ => Err("Ambiente inválido".into()),
    }
}

/// CUNE of a payroll document (protocol.md §1.6).
fn payroll_code(xml: &str, pin: &str) -> Result<String, String> {
    let doc = Document::parse(xml).map_err(|e| e.to_string())?;
    let root = doc.root_element();
    let body = payroll_body(root);
    let delete = body.tag_name().name() == "Eliminar";
    let info = child(body, "InformacionGeneral").ok_or("Falta InformacionGeneral")?;
    let at = |n: Option<Node<'_, '_>>, a: &str| {
        n.and_then(|n| n.attribute(a))
            .unwrap_or("")
            .trim()
            .to_string()
    };
    let number = at(child(body, "NumeroSecuenciaXML"), "Numero");
    let gen_date = at(Some(info), "FechaGen");
    let gen_time = at(Some(info), "HoraGen");
    let xml_type = at(Some(info), "TipoXML");
    let employer = at(child(body, "Empleador"), "NIT");
    let (earnings, deductions, total, employee) = if delete {
        (Decimal::ZERO, Decimal::ZERO, Decimal::ZERO, "0".to_string())
    } else {
        (
            amount(text(child(body, "DevengadosTotal")), "DevengadosTotal")?,
            amount(text(child(body, "DeduccionesTotal")), "DeduccionesTotal")?,
            amount(text(child(body, "ComprobanteTotal")), "ComprobanteTotal")?,
            at(child(body, "Trabajador"), "NumeroDocumento"),
        )
    };
    Ok(codes::payroll_code(&PayrollCodeInput {
        number: &number,
        gen_date: &gen_date,
        gen_time: &gen_time,
        earnings,
        deductions,
        total,
        employer_nit: &employer,
        employee_doc: &employee,
        xml_type: &xml_type,
        pin,
        environment: environment(info.attribute("Ambiente"))?,
    }))
}

/// CUDE of an ApplicationResponse (protocol.md §1.7).
fn event_code(xml: &str, pin: &str) -> Result<String, String> {
    let doc = Document::parse(xml).map_err(|e| e.to_string())?;
    let root = doc.root_element();
    let t = |steps: &[&str]| text(path(root, steps)).unwrap_or_default();
    let response = path(root, &["DocumentResponse", "Response", "ResponseCode"]);
    let response_code = text(response).unwrap_or_default();
    let input = EventCodeInput {
        number: &t(&["ID"]),
        issue_date: &t(&["IssueDate"]),
        issue_time: &t(&["IssueTime"]),
        sender_nit: &t(&["SenderParty", "PartyTaxScheme", "CompanyID"]),
        receiver_id: &t(&["ReceiverParty", "PartyTaxScheme", "CompanyID"]),
        response_code: &response_code,
        document_id: &t(&["DocumentResponse", "DocumentReference", "ID"]),
        document_type_code: &text(
            path(root, &["DocumentResponse", "DocumentReference"])
                .and_then(|r| descendant(r, "DocumentTypeCode")),
        )
        .unwrap_or_default(),
        pin,
    };
    let list_id = response.and_then(|r| r.attribute("listID")).unwrap_or("");
    if list_id == "2" && matches!(response_code.as_str(), "037" | "038" | "039") {
        return Ok(codes::event_code_blank_endorsement(&input, list_id));
    }
    Ok(codes::event_code(&input))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payroll_code_follows_the_formula() {
        // protocol.md V9 (facho self-test input): HoraGen typed "1053:10-05:00".
        let xml = r#"<NominaIndividual xmlns="dian:gov:co:facturaelectronica:NominaIndividual">
            <NumeroSecuenciaXML Numero="N00001"/>
            <InformacionGeneral FechaGen="2020-01-16" HoraGen="1053:10-05:00" TipoXML="102" Ambiente="1" CUNE="x"/>
            <Empleador NIT="700085371"/><Trabajador NumeroDocumento="800199436"/>
            <DevengadosTotal>3500000.00</DevengadosTotal><DeduccionesTotal>1000000.00</DeduccionesTotal>
            <ComprobanteTotal>2500000.00</ComprobanteTotal></NominaIndividual>"#;
        assert_eq!(
            payroll_code(xml, "693").expect("cune"),
            "b8f9b6c24de07ffd92ea5467433a3b69357cfaffa7c19722db94b2e0eca41d057085a54f484b5da15ff585e773b0b0ab"
        );
    }

    #[test]
    fn event_code_follows_the_formula() {
        // protocol.md V5.
        let xml = r#"<ApplicationResponse xmlns="urn:oasis:names:specification:ubl:schema:xsd:ApplicationResponse-2" xmlns:cac="urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2" xmlns:cbc="urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2">
            <cbc:ID>1</cbc:ID><cbc:IssueDate>2019-04-30</cbc:IssueDate><cbc:IssueTime>19:48:50-05:00</cbc:IssueTime>
            <cac:SenderParty><cac:PartyTaxScheme><cbc:CompanyID>99998888</cbc:CompanyID></cac:PartyTaxScheme></cac:SenderParty>
            <cac:ReceiverParty><cac:PartyTaxScheme><cbc:CompanyID>800197268</cbc:CompanyID></cac:PartyTaxScheme></cac:ReceiverParty>
            <cac:DocumentResponse><cac:Response><cbc:ResponseCode>030</cbc:ResponseCode></cac:Response>
            <cac:DocumentReference><cbc:ID>FE123</cbc:ID><cbc:DocumentTypeCode>01</cbc:DocumentTypeCode></cac:DocumentReference></cac:DocumentResponse>
            </ApplicationResponse>"#;
        assert_eq!(
            event_code(xml, "11111").expect("cude"),
            "0d91ba25b01f5e7dbda870a11b274501d3a62a73e91932c473c86c93f12a142a2ac45876efcde3e679024a01c0be41f9"
        );
    }
}
