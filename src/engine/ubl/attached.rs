//! AttachedDocument: the container mailed to the buyer (protocol.md §5.2),
//! carrying the signed document and the authority's ApplicationResponse.
//!
//! Implementations usually wrap both documents in CDATA sections. Canonical
//! XML has no CDATA (C14N replaces a CDATA section by its escaped text), and
//! the signer hashes our bytes as they are, so both documents are written as
//! escaped character content: any XML parser returns exactly the same text
//! as from a CDATA section. The container has a single `ext:UBLExtension`,
//! the signature slot (no `sts:DianExtensions`: there is no resolution,
//! software code or QR for a container).

use chrono::{DateTime, FixedOffset};

use super::common::{
    shape, write_signature_slot, DIAN_AGENCY_ID, DIAN_AGENCY_NAME, ROOT_NAMESPACES,
};
use super::{BuildInput, UblError};
use crate::engine::model::{colombia_offset, Party};
use crate::engine::xml_writer::XmlWriter;

pub const ATTACHED_NAMESPACE: &str =
    "urn:oasis:names:specification:ubl:schema:xsd:AttachedDocument-2";

/// What the container needs besides the document itself.
#[derive(Debug, Clone, Copy)]
pub struct AttachedInput<'a> {
    /// The issued document (kind, parties, number, code).
    pub document: BuildInput<'a>,
    /// The signed XML of the document, as sent.
    pub signed_xml: &'a str,
    /// The authority's ApplicationResponse (decoded `XmlBase64Bytes`).
    pub application_response: &'a str,
    /// When the authority validated the document.
    pub validated_at: DateTime<FixedOffset>,
    /// When the container is made.
    pub issued_at: DateTime<FixedOffset>,
}

fn write_tax_party(w: &mut XmlWriter, element: &str, p: &Party) {
    w.open(element);
    w.open("cac:PartyTaxScheme");
    w.el("cbc:RegistrationName", &p.name);
    let dv = p.effective_check_digit().map(|d| d.to_string());
    let mut attrs: Vec<(&str, &str)> = vec![
        ("schemeAgencyID", DIAN_AGENCY_ID),
        ("schemeAgencyName", DIAN_AGENCY_NAME),
        ("schemeName", p.id_type.as_str()),
    ];
    if let Some(dv) = dv.as_deref() {
        attrs.push(("schemeID", dv));
    }
    w.leaf("cbc:CompanyID", &attrs, &p.id_number);
    let level = if p.tax_responsibilities.is_empty() {
        "R-99-PN"
    } else {
        p.tax_responsibilities.as_str()
    };
    w.leaf("cbc:TaxLevelCode", &[("listName", "48")], level);
    w.open("cac:TaxScheme");
    w.el("cbc:ID", &p.tax_scheme.id);
    w.el("cbc:Name", &p.tax_scheme.name);
    w.end("cac:TaxScheme");
    w.end("cac:PartyTaxScheme");
    w.end(element);
}

fn write_embedded(w: &mut XmlWriter, content: &str) {
    w.open("cac:Attachment");
    w.open("cac:ExternalReference");
    w.el("cbc:MimeCode", "text/xml");
    w.el("cbc:EncodingCode", "UTF-8");
    w.el("cbc:Description", content);
    w.end("cac:ExternalReference");
    w.end("cac:Attachment");
}

/// Builds the unsigned AttachedDocument (same framing contract as the other
/// builders).
pub fn build(input: &AttachedInput<'_>) -> Result<String, UblError> {
    let b = &input.document;
    let ctx = b.ctx;
    let kind = b.doc.kind;
    let roles = shape(b);
    let number = ctx.document_number();
    let env = ctx.environment.to_string();
    let scheme = kind.code_scheme().scheme_name();
    let issued = input.issued_at.with_timezone(&colombia_offset());
    let validated = input.validated_at.with_timezone(&colombia_offset());

    let mut w = XmlWriter::with_capacity(
        4096 + input.signed_xml.len() * 11 / 10 + input.application_response.len() * 11 / 10,
    );
    w.declaration();
    w.root_start(
        "AttachedDocument",
        ATTACHED_NAMESPACE,
        &ROOT_NAMESPACES,
        &[],
    );
    w.open("ext:UBLExtensions");
    write_signature_slot(&mut w);
    w.end("ext:UBLExtensions");
    w.el("cbc:UBLVersionID", "UBL 2.1");
    w.el("cbc:CustomizationID", "Documentos adjuntos");
    w.el("cbc:ProfileID", "DIAN 2.1");
    w.el("cbc:ProfileExecutionID", &env);
    w.el("cbc:ID", &number);
    w.leaf(
        "cbc:UUID",
        &[("schemeID", env.as_str()), ("schemeName", scheme)],
        b.code,
    );
    w.el("cbc:IssueDate", &issued.format("%Y-%m-%d").to_string());
    w.el("cbc:IssueTime", &issued.format("%H:%M:%S%:z").to_string());
    w.el("cbc:DocumentType", "Contenedor de Factura Electrónica");
    w.el("cbc:ParentDocumentID", &number);
    write_tax_party(&mut w, "cac:SenderParty", roles.supplier);
    write_tax_party(&mut w, "cac:ReceiverParty", roles.customer);
    write_embedded(&mut w, input.signed_xml);
    w.open("cac:ParentDocumentLineReference");
    w.el("cbc:LineID", "1");
    w.open("cac:DocumentReference");
    w.el("cbc:ID", &number);
    w.leaf("cbc:UUID", &[("schemeName", scheme)], b.code);
    w.el("cbc:IssueDate", &ctx.issue_date());
    w.el("cbc:DocumentType", "ApplicationResponse");
    write_embedded(&mut w, input.application_response);
    w.open("cac:ResultOfVerification");
    w.el(
        "cbc:ValidatorID",
        "Unidad Especial Dirección de Impuestos y Aduanas Nacionales",
    );
    w.el("cbc:ValidationResultCode", "02");
    w.el(
        "cbc:ValidationDate",
        &validated.format("%Y-%m-%d").to_string(),
    );
    w.el(
        "cbc:ValidationTime",
        &validated.format("%H:%M:%S%:z").to_string(),
    );
    w.end("cac:ResultOfVerification");
    w.end("cac:DocumentReference");
    w.end("cac:ParentDocumentLineReference");
    w.end("AttachedDocument");
    Ok(w.finish()?)
}
