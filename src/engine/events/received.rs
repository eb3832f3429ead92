//! Reading a vendor's invoice as a buyer receives it: the signed `Invoice`
//! itself, or the `AttachedDocument` that carries it in its first
//! `cac:Attachment` (protocol.md §5.2). What the events and the registry
//! need: the CUFE, the number, dates, total, the two parties; and whether
//! it is the very document the authority keeps for its CUFE.
//!
//! Uploads are untrusted: each XML is bounded by a linear pre-scan
//! ([`xml_limits::RECEIVED_INVOICE`]) before it is parsed.

use chrono::NaiveDate;
use roxmltree::{Document, Node, ParsingOptions};
use rust_decimal::Decimal;

use crate::engine::c14n::{self, Algorithm};
use crate::engine::xml_limits::{self, LimitError};

/// Roots whose documents may be received.
const INVOICE_NS: &str = "urn:oasis:names:specification:ubl:schema:xsd:Invoice-2";
const ATTACHED_NS: &str = "urn:oasis:names:specification:ubl:schema:xsd:AttachedDocument-2";

/// Why an upload is not a readable invoice.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReceivedError {
    #[error("the XML is not well formed: {0}")]
    Malformed(String),
    #[error("the XML is refused before reading: {0}")]
    Limits(LimitError),
    #[error("not a UBL 2.1 Invoice or an AttachedDocument carrying one (root `{0}`)")]
    NotAnInvoice(String),
    #[error("the AttachedDocument carries no invoice")]
    EmptyContainer,
    #[error("the invoice has no {0}")]
    Missing(&'static str),
    #[error("{field} is not valid: {value}")]
    Invalid { field: &'static str, value: String },
}

/// A received invoice as read from its XML.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceivedInvoiceFacts {
    /// The signed invoice itself (unwrapped from a container).
    pub invoice_xml: String,
    pub cufe: String,
    pub number: String,
    pub type_code: String,
    /// `ProfileExecutionID`: 1 production, 2 testing.
    pub environment: u8,
    pub issue_date: NaiveDate,
    pub due_date: Option<NaiveDate>,
    pub currency: String,
    pub total: Decimal,
    pub vendor_nit: String,
    pub vendor_name: String,
    pub buyer_id: String,
    pub buyer_name: String,
}

fn options<'a>() -> ParsingOptions<'a> {
    // No DTD: no entity expansion from a hostile upload.
    ParsingOptions {
        allow_dtd: false,
        ..ParsingOptions::default()
    }
}

fn child<'a, 'i>(n: Node<'a, 'i>, name: &str) -> Option<Node<'a, 'i>> {
    n.children()
        .find(|c| c.is_element() && c.tag_name().name() == name)
}

fn path<'a, 'i>(n: Node<'a, 'i>, steps: &[&str]) -> Option<Node<'a, 'i>> {
    steps.iter().try_fold(n, |cur, s| child(cur, s))
}

fn text(n: Option<Node<'_, '_>>) -> Option<String> {
    let t = n?.text()?.trim();
    (!t.is_empty()).then(|| t.to_string())
}

fn date(value: Option<String>, field: &'static str) -> Result<Option<NaiveDate>, ReceivedError> {
    value
        .map(|v| {
            NaiveDate::parse_from_str(&v, "%Y-%m-%d")
                .map_err(|_| ReceivedError::Invalid { field, value: v })
        })
        .transpose()
}

/// Parses untrusted XML once its shape is within the limits.
fn parse_bounded(xml: &str) -> Result<Document<'_>, ReceivedError> {
    xml_limits::check(xml, &xml_limits::RECEIVED_INVOICE).map_err(ReceivedError::Limits)?;
    Document::parse_with_options(xml, options())
        .map_err(|e| ReceivedError::Malformed(e.to_string()))
}

fn is_invoice(root: Node<'_, '_>) -> bool {
    root.tag_name().namespace() == Some(INVOICE_NS) && root.tag_name().name() == "Invoice"
}

/// Reads an upload: an invoice, or a container holding one.
pub fn read(xml: &str) -> Result<ReceivedInvoiceFacts, ReceivedError> {
    let xml = xml.trim_start_matches('\u{feff}');
    let doc = parse_bounded(xml)?;
    let root = doc.root_element();
    match (root.tag_name().namespace(), root.tag_name().name()) {
        (Some(INVOICE_NS), "Invoice") => read_invoice(&doc, xml),
        (Some(ATTACHED_NS), "AttachedDocument") => {
            let inner = path(root, &["Attachment", "ExternalReference", "Description"])
                .and_then(|d| d.text())
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .ok_or(ReceivedError::EmptyContainer)?;
            let inner_doc = parse_bounded(inner).map_err(|e| match e {
                ReceivedError::Malformed(m) => {
                    ReceivedError::Malformed(format!("the attached invoice: {m}"))
                }
                other => other,
            })?;
            let r = inner_doc.root_element();
            if !is_invoice(r) {
                return Err(ReceivedError::NotAnInvoice(
                    r.tag_name().name().chars().take(64).collect(),
                ));
            }
            read_invoice(&inner_doc, inner)
        }
        (_, name) => Err(ReceivedError::NotAnInvoice(name.chars().take(64).collect())),
    }
}

/// The canonical form of a whole signed invoice: inclusive C14N 1.0
/// without comments, signature included.
fn canonical(xml: &str) -> Result<String, ReceivedError> {
    let doc = parse_bounded(xml.trim_start_matches('\u{feff}'))?;
    if !is_invoice(doc.root_element()) {
        return Err(ReceivedError::NotAnInvoice(
            doc.root_element()
                .tag_name()
                .name()
                .chars()
                .take(64)
                .collect(),
        ));
    }
    Ok(c14n::canonicalize(
        doc.root(),
        None,
        &Algorithm::inclusive(),
    ))
}

/// Whether `invoice_xml` (an upload as [`read`] unwrapped it) is `copy`,
/// the document the authority keeps for its code, byte for byte as the
/// vendor sent it. Equal canonical forms: what differs only in how the
/// same XML is written (declaration, encoding label, line ends, quotes,
/// attribute order, character references, white space outside the root,
/// comments), which mail and AttachedDocument wrapping may change,
/// counts as the same; any change to an element, attribute or text,
/// signature included, does not.
pub fn same_document(invoice_xml: &str, copy: &[u8]) -> Result<bool, ReceivedError> {
    let copy = std::str::from_utf8(copy)
        .map_err(|_| ReceivedError::Malformed("the authority's copy is not UTF-8".into()))?;
    Ok(canonical(invoice_xml)? == canonical(copy)?)
}

fn read_invoice(doc: &Document<'_>, xml: &str) -> Result<ReceivedInvoiceFacts, ReceivedError> {
    let root = doc.root_element();
    let need = |v: Option<String>, what: &'static str| v.ok_or(ReceivedError::Missing(what));
    let cufe = need(text(child(root, "UUID")), "cbc:UUID (CUFE)")?;
    if cufe.len() != 96 || !cufe.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(ReceivedError::Invalid {
            field: "cbc:UUID",
            value: cufe.chars().take(100).collect(),
        });
    }
    let environment = match text(child(root, "ProfileExecutionID")).as_deref() {
        Some("1") => 1,
        Some("2") | None => 2,
        Some(other) => {
            return Err(ReceivedError::Invalid {
                field: "cbc:ProfileExecutionID",
                value: other.chars().take(20).collect(),
            })
        }
    };
    let total_text = need(
        text(path(root, &["LegalMonetaryTotal", "PayableAmount"])),
        "cbc:PayableAmount",
    )?;
    let total: Decimal = total_text.parse().map_err(|_| ReceivedError::Invalid {
        field: "cbc:PayableAmount",
        value: total_text.chars().take(40).collect(),
    })?;
    let party = |role: &str| path(root, &[role, "Party", "PartyTaxScheme"]);
    let due = text(child(root, "DueDate"))
        .or_else(|| text(path(root, &["PaymentMeans", "PaymentDueDate"])));
    Ok(ReceivedInvoiceFacts {
        invoice_xml: xml.to_string(),
        cufe: cufe.to_ascii_lowercase(),
        number: need(text(child(root, "ID")), "cbc:ID")?,
        type_code: text(child(root, "InvoiceTypeCode")).unwrap_or_else(|| "01".into()),
        environment,
        issue_date: date(text(child(root, "IssueDate")), "cbc:IssueDate")?
            .ok_or(ReceivedError::Missing("cbc:IssueDate"))?,
        due_date: date(due, "cbc:DueDate")?,
        currency: text(child(root, "DocumentCurrencyCode")).unwrap_or_else(|| "COP".into()),
        total,
        vendor_nit: need(
            text(party("AccountingSupplierParty").and_then(|p| child(p, "CompanyID"))),
            "the vendor's CompanyID",
        )?,
        vendor_name: text(
            party("AccountingSupplierParty").and_then(|p| child(p, "RegistrationName")),
        )
        .unwrap_or_default(),
        buyer_id: need(
            text(party("AccountingCustomerParty").and_then(|p| child(p, "CompanyID"))),
            "the buyer's CompanyID",
        )?,
        buyer_name: text(
            party("AccountingCustomerParty").and_then(|p| child(p, "RegistrationName")),
        )
        .unwrap_or_default(),
    })
}
