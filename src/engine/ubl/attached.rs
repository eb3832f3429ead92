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
    shape, write_signature_slot, DIAN_AGENCY_ID, DIAN_AGENCY_NAME, NS_CAC, NS_CBC, ROOT_NAMESPACES,
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

/// A party as the container names it (`cac:PartyTaxScheme`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TaxParty {
    pub registration_name: String,
    pub id_number: String,
    /// Identification type (`schemeName`).
    pub id_type: String,
    /// NIT check digit (`schemeID`), when it has one.
    pub check_digit: Option<String>,
    pub tax_level_code: String,
    pub tax_scheme_id: String,
    pub tax_scheme_name: String,
}

impl TaxParty {
    fn of(p: &Party) -> TaxParty {
        let level = if p.tax_responsibilities.is_empty() {
            "R-99-PN"
        } else {
            p.tax_responsibilities.as_str()
        };
        TaxParty {
            registration_name: p.name.clone(),
            id_number: p.id_number.clone(),
            id_type: p.id_type.clone(),
            check_digit: p.effective_check_digit().map(|d| d.to_string()),
            tax_level_code: level.to_string(),
            tax_scheme_id: p.tax_scheme.id.clone(),
            tax_scheme_name: p.tax_scheme.name.clone(),
        }
    }
}

/// What the container says about the document it carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contained {
    /// `cbc:ID`, prefix and number.
    pub number: String,
    /// CUFE, CUDE or CUDS.
    pub code: String,
    /// `CUFE-SHA384`, ...
    pub scheme_name: String,
    /// `cbc:ProfileExecutionID`: `1` production, `2` testing.
    pub environment: String,
    /// The document's `cbc:IssueDate`.
    pub issue_date: String,
    /// The issuer (`cac:SenderParty`) and the other party (`cac:ReceiverParty`).
    pub sender: TaxParty,
    pub receiver: TaxParty,
}

fn write_tax_party(w: &mut XmlWriter, element: &str, p: &TaxParty) {
    w.open(element);
    w.open("cac:PartyTaxScheme");
    w.el("cbc:RegistrationName", &p.registration_name);
    let mut attrs: Vec<(&str, &str)> = vec![
        ("schemeAgencyID", DIAN_AGENCY_ID),
        ("schemeAgencyName", DIAN_AGENCY_NAME),
        ("schemeName", p.id_type.as_str()),
    ];
    if let Some(dv) = p.check_digit.as_deref() {
        attrs.push(("schemeID", dv));
    }
    w.leaf("cbc:CompanyID", &attrs, &p.id_number);
    w.leaf("cbc:TaxLevelCode", &[("listName", "48")], &p.tax_level_code);
    w.open("cac:TaxScheme");
    w.el("cbc:ID", &p.tax_scheme_id);
    w.el("cbc:Name", &p.tax_scheme_name);
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
    // The issuer sends; in a support document it is the buyer.
    let roles = shape(b);
    let (sender, receiver) = if roles.company_is_supplier {
        (roles.supplier, roles.customer)
    } else {
        (roles.customer, roles.supplier)
    };
    let contained = Contained {
        number: b.ctx.document_number(),
        code: b.code.to_string(),
        scheme_name: b.doc.kind.code_scheme().scheme_name().to_string(),
        environment: b.ctx.environment.to_string(),
        issue_date: b.ctx.issue_date().to_string(),
        sender: TaxParty::of(sender),
        receiver: TaxParty::of(receiver),
    };
    build_container(
        &contained,
        input.signed_xml,
        input.application_response,
        input.validated_at,
        input.issued_at,
    )
}

/// Builds the unsigned AttachedDocument of a document known only by its
/// signed XML (a stored one, any time after it was accepted).
pub fn build_for_signed(
    signed_xml: &str,
    application_response: &str,
    validated_at: DateTime<FixedOffset>,
    issued_at: DateTime<FixedOffset>,
) -> Result<String, UblError> {
    let contained = read_signed(signed_xml)?;
    build_container(
        &contained,
        signed_xml,
        application_response,
        validated_at,
        issued_at,
    )
}

/// What the container needs, read from a signed document.
pub fn read_signed(signed_xml: &str) -> Result<Contained, UblError> {
    let bad = |what: &str| UblError::Unreadable(what.to_string());
    let doc = roxmltree::Document::parse(signed_xml).map_err(|e| bad(&e.to_string()))?;
    let root = doc.root_element();
    fn child<'a, 'i>(
        parent: roxmltree::Node<'a, 'i>,
        ns: &str,
        local: &str,
    ) -> Option<roxmltree::Node<'a, 'i>> {
        parent.children().find(|n| n.has_tag_name((ns, local)))
    }
    let text = |parent: roxmltree::Node<'_, '_>, local: &str| {
        child(parent, NS_CBC, local)
            .and_then(|n| n.text())
            .map(str::to_string)
            .ok_or_else(|| bad(&format!("no cbc:{local}")))
    };
    let uuid = child(root, NS_CBC, "UUID").ok_or_else(|| bad("no cbc:UUID"))?;
    let party = |role: &str| -> Result<TaxParty, UblError> {
        let scheme = child(root, NS_CAC, role)
            .and_then(|n| child(n, NS_CAC, "Party"))
            .and_then(|n| child(n, NS_CAC, "PartyTaxScheme"))
            .ok_or_else(|| bad(&format!("no cac:{role}/cac:Party/cac:PartyTaxScheme")))?;
        let id = child(scheme, NS_CBC, "CompanyID").ok_or_else(|| bad("no cbc:CompanyID"))?;
        let tax = child(scheme, NS_CAC, "TaxScheme").ok_or_else(|| bad("no cac:TaxScheme"))?;
        Ok(TaxParty {
            registration_name: text(scheme, "RegistrationName")?,
            id_number: id.text().unwrap_or_default().to_string(),
            id_type: id.attribute("schemeName").unwrap_or_default().to_string(),
            check_digit: id.attribute("schemeID").map(str::to_string),
            tax_level_code: text(scheme, "TaxLevelCode").unwrap_or_else(|_| "R-99-PN".into()),
            tax_scheme_id: text(tax, "ID")?,
            tax_scheme_name: text(tax, "Name")?,
        })
    };
    // The issuer is the sender: the buyer, in a support document (05) and
    // its adjustment note (95).
    let type_code = ["InvoiceTypeCode", "CreditNoteTypeCode"]
        .iter()
        .find_map(|t| child(root, NS_CBC, t).and_then(|n| n.text()));
    let issuer_is_buyer = matches!(type_code, Some("05" | "95"));
    let (supplier, customer) = (
        party("AccountingSupplierParty")?,
        party("AccountingCustomerParty")?,
    );
    let (sender, receiver) = if issuer_is_buyer {
        (customer, supplier)
    } else {
        (supplier, customer)
    };
    Ok(Contained {
        number: text(root, "ID")?,
        code: uuid.text().unwrap_or_default().to_string(),
        scheme_name: uuid.attribute("schemeName").unwrap_or_default().to_string(),
        environment: text(root, "ProfileExecutionID")?,
        issue_date: text(root, "IssueDate")?,
        sender,
        receiver,
    })
}

fn build_container(
    c: &Contained,
    signed_xml: &str,
    application_response: &str,
    validated_at: DateTime<FixedOffset>,
    issued_at: DateTime<FixedOffset>,
) -> Result<String, UblError> {
    let number = &c.number;
    let env = &c.environment;
    let scheme = c.scheme_name.as_str();
    let issued = issued_at.with_timezone(&colombia_offset());
    let validated = validated_at.with_timezone(&colombia_offset());

    let mut w = XmlWriter::with_capacity(
        4096 + signed_xml.len() * 11 / 10 + application_response.len() * 11 / 10,
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
    w.el("cbc:ProfileExecutionID", env);
    w.el("cbc:ID", number);
    w.leaf(
        "cbc:UUID",
        &[("schemeID", env.as_str()), ("schemeName", scheme)],
        &c.code,
    );
    w.el("cbc:IssueDate", &issued.format("%Y-%m-%d").to_string());
    w.el("cbc:IssueTime", &issued.format("%H:%M:%S%:z").to_string());
    w.el("cbc:DocumentType", "Contenedor de Factura Electrónica");
    w.el("cbc:ParentDocumentID", number);
    write_tax_party(&mut w, "cac:SenderParty", &c.sender);
    write_tax_party(&mut w, "cac:ReceiverParty", &c.receiver);
    write_embedded(&mut w, signed_xml);
    w.open("cac:ParentDocumentLineReference");
    w.el("cbc:LineID", "1");
    w.open("cac:DocumentReference");
    w.el("cbc:ID", number);
    w.leaf("cbc:UUID", &[("schemeName", scheme)], &c.code);
    w.el("cbc:IssueDate", &c.issue_date);
    w.el("cbc:DocumentType", "ApplicationResponse");
    write_embedded(&mut w, application_response);
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
