//! Fixtures and checks shared by the UBL, package and pipeline tests:
//! one sample document per kind, schema validation with `xmllint`, and an
//! independent canonical re-serialization.

use std::path::{Path, PathBuf};
use std::process::Command;

use chrono::{DateTime, NaiveDate};
use rust_decimal_macros::dec;

use super::attached::{self, AttachedInput};
use super::{build, BuildInput};
use crate::engine::codes::CodeScheme;
use crate::engine::model::*;
use crate::engine::totals;
use crate::engine::ubl::common::fmt_amount;
use crate::fixtures;

pub(crate) const TRICKY: &str = "Ñandú & <Hijos> \"S.A.S\" 'ltda' > 𝄞\r\n\tfin";

pub(crate) fn date(s: &str) -> NaiveDate {
    NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
}

pub(crate) fn vendor() -> Party {
    Party {
        id_type: "13".into(),
        id_number: "1020304050".into(),
        check_digit: None,
        name: "Pedro Pérez".into(),
        organization_type: OrganizationType::NaturalPerson,
        address: Some(fixtures::address()),
        ..Party::default()
    }
}

/// The sample context of `kind`, issued at a fixed instant.
pub(crate) fn context(kind: DocumentKind) -> IssuerContext {
    let at = DateTime::parse_from_rfc3339("2025-03-14T10:20:30-05:00").unwrap();
    fixtures::context(kind, at)
}

fn rich_lines() -> Vec<Line> {
    let mut a = Line::simple("Servicio <premium> & \"soporte\"", dec!(2), dec!(50000));
    a.taxes = vec![
        LineTax::percent("01", dec!(19)),
        LineTax::percent("04", dec!(8)),
        LineTax::percent("03", dec!(0)),
    ];
    a.withholdings = vec![LineTax::percent("06", dec!(2.5))];
    a.allowances_charges.push(AllowanceCharge {
        is_charge: false,
        reason_code: Some("01".into()),
        reason: "Descuento por volumen".into(),
        amount: dec!(1000),
    });
    a.item_code = Some("SKU-001".into());
    let mut b = Line::simple("Bolsa plástica", dec!(3), dec!(100));
    b.taxes = vec![
        LineTax::percent("01", dec!(19)),
        LineTax::per_unit("22", dec!(66)),
    ];
    let mut c = Line::simple("Libro (excluido)", dec!(1.5), dec!(33333.335));
    c.unit_code = "KGM".into();
    c.taxes = vec![LineTax::percent("01", dec!(0))];
    vec![a, b, c]
}

/// A complete sample document of each kind.
pub(crate) fn sample(kind: DocumentKind) -> Document {
    let counterparty = match kind {
        DocumentKind::SupportDocument | DocumentKind::SupportAdjustment => vendor(),
        DocumentKind::Pos | DocumentKind::PosAdjustment => Party::final_consumer(),
        _ => fixtures::customer(TRICKY),
    };
    let mut d = Document::new(kind, counterparty, rich_lines());
    d.notes = vec!["Nota con <marcas> & \"comillas\"".into()];
    match kind {
        DocumentKind::Invoice => {
            d.payments = vec![Payment {
                form: "2".into(),
                method: "42".into(),
                due_date: Some(date("2025-04-13")),
            }];
            d.allowances_charges.push(AllowanceCharge {
                is_charge: true,
                reason_code: None,
                reason: "Flete".into(),
                amount: dec!(5000),
            });
        }
        DocumentKind::ExportInvoice => {
            d.currency = "USD".into();
            d.exchange_rate = Some(ExchangeRate {
                source_currency: "USD".into(),
                target_currency: "COP".into(),
                rate: dec!(4100.25),
                date: date("2025-03-14"),
            });
            d.delivery_terms = Some("FOB".into());
            d.counterparty.id_type = "50".into();
            d.counterparty.check_digit = None;
            if let Some(a) = d.counterparty.address.as_mut() {
                a.country_code = "US".into();
                a.country_name = "Estados Unidos".into();
                a.municipality_code.clear();
                a.department_code.clear();
            }
        }
        DocumentKind::Pos => {
            d.allowances_charges.push(AllowanceCharge {
                is_charge: true,
                reason_code: None,
                reason: "Propina voluntaria".into(),
                amount: dec!(2000),
            });
        }
        _ => {}
    }
    if kind == DocumentKind::Invoice {
        d.operation_type = Some("10".into());
        d.health = None;
    }
    if kind == DocumentKind::ContingencyT03 {
        d.lines[0].transport = Some(CargoTransport {
            rndc_filing: "88123456".into(),
            consignment: "R-1".into(),
            freight: dec!(99000),
            quantity: dec!(1200.5),
            unit_code: "KGM".into(),
        });
    }
    if kind == DocumentKind::ContingencyT04 {
        d.health = Some(health());
    }
    if kind.needs_reference() {
        let scheme = match kind {
            DocumentKind::SupportAdjustment => CodeScheme::Cuds,
            DocumentKind::PosAdjustment => CodeScheme::Cude,
            _ => CodeScheme::Cufe,
        };
        d.billing_reference = Some(BillingReference {
            number: "SETP990000000".into(),
            code: "a".repeat(96),
            issue_date: date("2025-03-01"),
            scheme,
        });
        d.note_concept = Some(NoteConcept {
            code: if kind == DocumentKind::DebitNote {
                "3"
            } else {
                "2"
            }
            .into(),
            description: "Anulación <total> & ajuste".into(),
        });
    }
    if kind.issuer_is_buyer() {
        for l in &mut d.lines {
            l.taxes.clear();
            l.withholdings = vec![LineTax::percent("06", dec!(3.5))];
        }
    }
    d
}

/// Health data of the samples: a provider billing per event, UPC
/// contributory coverage, a contract, the period of March 2025.
pub(crate) fn health() -> HealthInfo {
    HealthInfo {
        provider_code: "110010000001".into(),
        payment_modality: "04".into(),
        coverage: "16".into(),
        contract_number: "C-77".into(),
        policy_number: String::new(),
        period_start: Some(date("2025-03-01")),
        period_end: Some(date("2025-03-31")),
        ..HealthInfo::default()
    }
}

/// A fake 96-hex code for builder tests.
pub(crate) const FAKE_CODE: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

pub(crate) fn build_sample(kind: DocumentKind) -> String {
    let doc = sample(kind);
    let ctx = context(kind);
    let t = totals::compute(&doc).unwrap();
    build(&BuildInput {
        doc: &doc,
        ctx: &ctx,
        totals: &t,
        code: FAKE_CODE,
        qr_url: "https://catalogo-vpfe-hab.dian.gov.co/document/searchqr?documentkey=0123",
        software_security_code: "ssc",
    })
    .unwrap()
}

pub(crate) fn schemas_dir() -> PathBuf {
    std::env::var_os("EMISOR_SCHEMAS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/work/shared/schemas"))
}

pub(crate) fn have_xmllint() -> bool {
    crate::testing::tool("xmllint")
}

/// The maindoc schema file of a root element.
pub(crate) fn maindoc(root: &str) -> &'static str {
    match root {
        "Invoice" => "UBL-Invoice-2.1.xsd",
        "CreditNote" => "UBL-CreditNote-2.1.xsd",
        "DebitNote" => "UBL-DebitNote-2.1.xsd",
        "AttachedDocument" => "UBL-AttachedDocument-2.1.xsd",
        "ApplicationResponse" => "UBL-ApplicationResponse-2.1.xsd",
        _ => "unknown.xsd",
    }
}

fn root_name(xml: &str) -> String {
    let doc = roxmltree::Document::parse(xml).unwrap();
    doc.root_element().tag_name().name().to_string()
}

fn root_ns(xml: &str) -> String {
    let doc = roxmltree::Document::parse(xml).unwrap();
    doc.root_element()
        .tag_name()
        .namespace()
        .unwrap_or_default()
        .to_string()
}

/// The schemas README's known quirks: DV in `schemeID` of the DIAN
/// extension's provider ids, and X.509 serials longer than xs:integer.
fn is_known_quirk(line: &str) -> bool {
    ((line.contains("ProviderID") || line.contains("AuthorizationProviderID"))
        && line.contains("'schemeID'"))
        || line.contains("X509SerialNumber")
}

/// The empty signature slot of an unsigned document, which the schema
/// rejects (`ext:ExtensionContent` needs one child).
const EMPTY_SLOT: &str =
    "<ext:ExtensionContent></ext:ExtensionContent></ext:UBLExtension></ext:UBLExtensions>";
const FILLED_SLOT: &str = "<ext:ExtensionContent><p:Placeholder xmlns:p=\"urn:emisor:test:signature-slot\"></p:Placeholder></ext:ExtensionContent></ext:UBLExtension></ext:UBLExtensions>";

/// Validates an unsigned document: the empty signature slot is filled with
/// a placeholder in a foreign namespace (what the lax wildcard accepts, as it
/// accepts `ds:Signature`), everything else is validated as is.
pub(crate) fn xmllint_validate_unsigned(xml: &str) -> Result<usize, String> {
    assert_eq!(xml.matches(EMPTY_SLOT).count(), 1, "one signature slot");
    xmllint_validate(&xml.replacen(EMPTY_SLOT, FILLED_SLOT, 1))
}

/// Validates `xml` with xmllint: against the maindoc schema alone (exit 0,
/// or only the README's known quirks) and through a wrapper importing the
/// DIAN extension schema too (only the known quirks may fail). Returns the
/// error lines, or how many known-quirk messages the wrapper run gave (a
/// document with `sts:DianExtensions` gives some: proof that the extension
/// was validated, not skipped).
pub(crate) fn xmllint_validate(xml: &str) -> Result<usize, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let file = dir.path().join("doc.xml");
    std::fs::write(&file, xml).map_err(|e| e.to_string())?;
    let schemas = schemas_dir();
    let main = schemas.join("maindoc").join(maindoc(&root_name(xml)));
    let out = Command::new("xmllint")
        .arg("--noout")
        .arg("--schema")
        .arg(&main)
        .arg(&file)
        .output()
        .map_err(|e| e.to_string())?;
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    // The signed document's X.509 serial is the one quirk of the plain schema.
    let plain_errors: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.ends_with(" validates") && !l.ends_with(" fails to validate"))
        .filter(|l| !is_known_quirk(l))
        .collect();
    if !plain_errors.is_empty() {
        return Err(format!(
            "maindoc schema (exit {:?}): {}",
            out.status.code(),
            plain_errors.join("\n")
        ));
    }
    let wrapper = dir.path().join("wrapper.xsd");
    std::fs::write(&wrapper, wrapper_schema(&schemas, &main, &root_ns(xml)))
        .map_err(|e| e.to_string())?;
    let out = Command::new("xmllint")
        .arg("--noout")
        .arg("--schema")
        .arg(&wrapper)
        .arg(&file)
        .output()
        .map_err(|e| e.to_string())?;
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    if stderr.contains("failed to compile") || stderr.contains("WXS schema") {
        return Err(format!("wrapper schema did not compile: {stderr}"));
    }
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.ends_with(" validates") && !l.ends_with(" fails to validate"))
        .filter(|l| !is_known_quirk(l))
        .collect();
    if !errors.is_empty() {
        return Err(format!("with DianExtensions: {}", errors.join("\n")));
    }
    Ok(stderr.lines().filter(|l| is_known_quirk(l)).count())
}

fn wrapper_schema(schemas: &Path, main: &Path, ns: &str) -> String {
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<xsd:schema xmlns:xsd="http://www.w3.org/2001/XMLSchema" targetNamespace="urn:emisor:test:wrapper" elementFormDefault="qualified">
  <xsd:import namespace="{ns}" schemaLocation="file://{main}"/>
  <xsd:import namespace="dian:gov:co:facturaelectronica:Structures-2-1" schemaLocation="file://{ext}"/>
</xsd:schema>
"#,
        main = main.display(),
        ext = schemas
            .join("extensions")
            .join("DIAN_UBL_Structures.xsd")
            .display()
    )
}

// --- independent canonical re-serialization -------------------------------

fn c14n_text(s: &str, out: &mut String) {
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\r' => out.push_str("&#xD;"),
            c => out.push(c),
        }
    }
}

fn c14n_attr(s: &str, out: &mut String) {
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '"' => out.push_str("&quot;"),
            '\t' => out.push_str("&#x9;"),
            '\n' => out.push_str("&#xA;"),
            '\r' => out.push_str("&#xD;"),
            c => out.push(c),
        }
    }
}

fn qname(n: roxmltree::Node<'_, '_>, ns: Option<&str>, local: &str) -> String {
    match ns.and_then(|u| n.lookup_prefix(u)) {
        Some(p) if !p.is_empty() => format!("{p}:{local}"),
        _ => local.to_string(),
    }
}

fn c14n_node(n: roxmltree::Node<'_, '_>, out: &mut String, parent_ns: &[(String, String)]) {
    let name = qname(n, n.tag_name().namespace(), n.tag_name().name());
    out.push('<');
    out.push_str(&name);
    // Namespace declarations in scope that the parent did not render.
    let mut ns: Vec<(String, String)> = n
        .namespaces()
        .filter(|x| x.name() != Some("xml"))
        .map(|x| (x.name().unwrap_or("").to_string(), x.uri().to_string()))
        .collect();
    ns.sort();
    let rendered: Vec<(String, String)> = ns.clone();
    for (p, u) in ns.iter().filter(|x| !parent_ns.contains(x)) {
        out.push_str(if p.is_empty() { " xmlns" } else { " xmlns:" });
        out.push_str(p);
        out.push_str("=\"");
        c14n_attr(u, out);
        out.push('"');
    }
    let mut attrs: Vec<_> = n.attributes().collect();
    attrs.sort_by(|a, b| {
        (a.namespace().unwrap_or(""), a.name()).cmp(&(b.namespace().unwrap_or(""), b.name()))
    });
    for a in attrs {
        out.push(' ');
        out.push_str(&qname(n, a.namespace(), a.name()));
        out.push_str("=\"");
        c14n_attr(a.value(), out);
        out.push('"');
    }
    out.push('>');
    for c in n.children() {
        if c.is_element() {
            c14n_node(c, out, &rendered);
        } else if c.is_text() {
            c14n_text(c.text().unwrap_or(""), out);
        }
    }
    out.push_str("</");
    out.push_str(&name);
    out.push('>');
}

/// Inclusive C14N of a whole document, written independently of
/// `xml_writer` (roxmltree parse, then serialize).
pub(crate) fn recanonicalize(xml: &str) -> String {
    let doc = roxmltree::Document::parse(xml).unwrap();
    let mut out = String::with_capacity(xml.len());
    c14n_node(doc.root_element(), &mut out, &[]);
    out
}

/// The bytes after the XML declaration.
pub(crate) fn after_declaration(xml: &str) -> &str {
    let decl = "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>";
    assert!(xml.starts_with(decl), "missing declaration");
    &xml[decl.len()..]
}

/// `xmllint --c14n` of the document (None without xmllint).
pub(crate) fn xmllint_c14n(xml: &str) -> Option<String> {
    if !have_xmllint() {
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("doc.xml");
    std::fs::write(&file, xml).unwrap();
    let out = Command::new("xmllint")
        .arg("--c14n")
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8(out.stdout).unwrap())
}

pub(crate) fn assert_canonical(xml: &str) {
    let body = after_declaration(xml);
    assert_eq!(recanonicalize(xml), body, "re-serialization differs");
    if let Some(c) = xmllint_c14n(xml) {
        assert_eq!(c, body, "xmllint --c14n differs");
    }
    // Framing of the signer's contract.
    assert!(!body.contains("/>"), "self-closing tag");
    assert_eq!(
        body.matches(" xmlns").count(),
        9,
        "namespaces only on the root"
    );
    assert!(body.ends_with(&format!("</{}>", root_name(xml))));
    assert!(body.contains(
        "<ext:UBLExtension><ext:ExtensionContent></ext:ExtensionContent></ext:UBLExtension></ext:UBLExtensions>"
    ));
}

pub(crate) fn sample_attached(signed: &str) -> String {
    let doc = sample(DocumentKind::Invoice);
    let ctx = context(DocumentKind::Invoice);
    let t = totals::compute(&doc).unwrap();
    let ar = "<?xml version=\"1.0\" encoding=\"utf-8\"?><ApplicationResponse xmlns=\"urn:oasis:names:specification:ubl:schema:xsd:ApplicationResponse-2\"><cbc:ID xmlns:cbc=\"urn:x\">1 &amp; 2</cbc:ID></ApplicationResponse>";
    attached::build(&AttachedInput {
        document: BuildInput {
            doc: &doc,
            ctx: &ctx,
            totals: &t,
            code: FAKE_CODE,
            qr_url: "",
            software_security_code: "",
        },
        signed_xml: signed,
        application_response: ar,
        validated_at: DateTime::parse_from_rfc3339("2025-03-14T15:21:00Z").unwrap(),
        issued_at: DateTime::parse_from_rfc3339("2025-03-14T10:22:00-05:00").unwrap(),
    })
    .unwrap()
}

// --- tests ------------------------------------------------------------------

#[test]
fn every_kind_is_canonical_and_well_framed() {
    for kind in DocumentKind::ALL {
        let xml = build_sample(kind);
        assert_canonical(&xml);
        let doc = roxmltree::Document::parse(&xml).unwrap();
        let root = doc.root_element();
        assert_eq!(root.tag_name().name(), kind.root().name(), "{kind:?}");
        let exts: Vec<_> = root
            .descendants()
            .filter(|n| n.has_tag_name((super::common::NS_EXT, "UBLExtension")))
            .collect();
        // POS receipts add three extensions, health documents one; the
        // signature's is always last (`assert_canonical`).
        let expected = match kind {
            DocumentKind::Pos => 5,
            DocumentKind::ContingencyT04 => 3,
            _ => 2,
        };
        assert_eq!(exts.len(), expected, "{kind:?}");
        let has_control = xml.contains("<sts:InvoiceControl>");
        assert_eq!(has_control, kind.has_numbering_resolution(), "{kind:?}");
    }
}

#[test]
fn every_kind_validates_against_the_schemas() {
    if !have_xmllint() {
        eprintln!("xmllint not installed: schema validation skipped");
        return;
    }
    for kind in DocumentKind::ALL {
        let xml = build_sample(kind);
        match xmllint_validate_unsigned(&xml) {
            Err(e) => panic!("{kind:?}: {e}\n{xml}"),
            // ProviderID and AuthorizationProviderID schemeID quirks.
            Ok(quirks) => assert!(quirks >= 2, "{kind:?}: DianExtensions not validated"),
        }
    }
}

#[test]
fn attached_document_validates_and_carries_both_documents() {
    let signed = build_sample(DocumentKind::Invoice);
    let xml = sample_attached(&signed);
    assert_canonical_attached(&xml);
    if have_xmllint() {
        if let Err(e) = xmllint_validate_unsigned(&xml) {
            panic!("{e}\n{xml}");
        }
    }
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let descriptions: Vec<_> = doc
        .descendants()
        .filter(|n| n.tag_name().name() == "Description")
        .map(|n| n.text().unwrap_or("").to_string())
        .collect();
    assert_eq!(descriptions.len(), 2);
    assert_eq!(descriptions[0], signed);
    assert!(descriptions[1].contains("1 &amp; 2"));
}

fn assert_canonical_attached(xml: &str) {
    let body = after_declaration(xml);
    assert_eq!(recanonicalize(xml), body);
    if let Some(c) = xmllint_c14n(xml) {
        assert_eq!(c, body);
    }
    assert!(body.contains(
        "<ext:UBLExtensions><ext:UBLExtension><ext:ExtensionContent></ext:ExtensionContent></ext:UBLExtension></ext:UBLExtensions>"
    ));
}

#[test]
fn header_and_amounts() {
    let xml = build_sample(DocumentKind::Invoice);
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let text = |local: &str| {
        doc.root_element()
            .children()
            .find(|n| n.tag_name().name() == local)
            .and_then(|n| n.text())
            .map(str::to_string)
    };
    assert_eq!(text("UBLVersionID").as_deref(), Some("UBL 2.1"));
    assert_eq!(text("CustomizationID").as_deref(), Some("10"));
    assert_eq!(text("ProfileExecutionID").as_deref(), Some("2"));
    assert_eq!(text("ID").as_deref(), Some("SETP990000001"));
    assert_eq!(text("IssueDate").as_deref(), Some("2025-03-14"));
    assert_eq!(text("IssueTime").as_deref(), Some("10:20:30-05:00"));
    assert_eq!(text("InvoiceTypeCode").as_deref(), Some("01"));
    assert_eq!(text("LineCountNumeric").as_deref(), Some("3"));
    // Amounts: exactly 2 decimals and a currency everywhere.
    for n in doc
        .descendants()
        .filter(|n| n.attribute("currencyID").is_some())
    {
        let name = n.tag_name().name();
        let t = n.text().unwrap_or("");
        if name != "PriceAmount" {
            let (_, dec) = t.split_once('.').unwrap_or((t, ""));
            assert_eq!(dec.len(), 2, "{name} = {t}");
        }
    }
    // Zero-rate ICA (03) is omitted; zero IVA is kept.
    assert!(!xml.contains("<cbc:ID>03</cbc:ID>"));
    // The customer name survives escaping.
    let names: Vec<_> = doc
        .descendants()
        .filter(|n| n.tag_name().name() == "RegistrationName")
        .map(|n| n.text().unwrap_or(""))
        .collect();
    assert!(names.contains(&TRICKY));
    // One TaxTotal per scheme at document level.
    let root_taxes: Vec<_> = doc
        .root_element()
        .children()
        .filter(|n| n.tag_name().name() == "TaxTotal")
        .collect();
    assert_eq!(root_taxes.len(), 3); // 01, 04, 22
}

#[test]
fn support_document_swaps_roles_and_debit_note_uses_requested_total() {
    let xml = build_sample(DocumentKind::SupportDocument);
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let supplier_id = doc
        .descendants()
        .find(|n| n.tag_name().name() == "AccountingSupplierParty")
        .and_then(|n| n.descendants().find(|n| n.tag_name().name() == "CompanyID"))
        .and_then(|n| n.text())
        .unwrap();
    assert_eq!(supplier_id, "1020304050");
    assert!(xml.contains("<cbc:CustomizationID>10</cbc:CustomizationID>"));
    assert!(xml.contains("<cac:WithholdingTaxTotal>"));
    let nd = build_sample(DocumentKind::DebitNote);
    assert!(nd.contains("<cac:RequestedMonetaryTotal>"));
    assert!(!nd.contains("LegalMonetaryTotal"));
    let nc = build_sample(DocumentKind::CreditNote);
    assert!(nc.contains("<cbc:CreditNoteTypeCode>91</cbc:CreditNoteTypeCode>"));
    assert!(nc.contains("<cac:DiscrepancyResponse><cbc:ReferenceID>SETP990000000</cbc:ReferenceID><cbc:ResponseCode>2</cbc:ResponseCode>"));
    let fx = build_sample(DocumentKind::ExportInvoice);
    assert!(fx.contains("<cbc:CustomizationID>10</cbc:CustomizationID>"));
    assert!(fx.contains("currencyID=\"USD\""));
}

#[test]
fn wrong_kind_is_an_error_not_a_panic() {
    let doc = sample(DocumentKind::Invoice);
    let ctx = context(DocumentKind::Invoice);
    let t = totals::compute(&doc).unwrap();
    let input = BuildInput {
        doc: &doc,
        ctx: &ctx,
        totals: &t,
        code: "",
        qr_url: "",
        software_security_code: "",
    };
    assert!(super::notes::build(&input).is_err());
    assert!(super::pos::build(&input).is_err());
}

#[test]
fn the_schema_check_catches_errors() {
    if !have_xmllint() {
        return;
    }
    let xml = build_sample(DocumentKind::Invoice);
    // Inside sts:DianExtensions (only the wrapper schema sees it).
    let start = xml.find("<sts:QRCode>").unwrap();
    let end = xml.find("</sts:QRCode>").unwrap() + "</sts:QRCode>".len();
    let broken = format!("{}{}", &xml[..start], &xml[end..]);
    let e = xmllint_validate_unsigned(&broken).unwrap_err();
    assert!(e.contains("DianExtensions"), "{e}");
    // In the UBL body.
    let broken = xml.replacen("<cbc:UBLVersionID>UBL 2.1</cbc:UBLVersionID>", "", 1);
    let broken = broken.replacen(
        "<cbc:ProfileExecutionID>",
        "<cbc:UBLVersionID>UBL 2.1</cbc:UBLVersionID><cbc:ProfileExecutionID>",
        1,
    );
    assert!(xmllint_validate_unsigned(&broken).is_err());
}

/// Writes every sample to `$EMISOR_DUMP_DIR` (for eyeballing): run with
/// `EMISOR_DUMP_DIR=/tmp/x cargo test ... dump_samples -- --ignored`.
#[test]
#[ignore]
fn dump_samples() {
    let dir = PathBuf::from(std::env::var_os("EMISOR_DUMP_DIR").unwrap());
    for kind in DocumentKind::ALL {
        let name = format!("{:02}-{}.xml", kind.code(), kind.short_name());
        std::fs::write(dir.join(name), build_sample(kind)).unwrap();
    }
}

// --- conformance with the authority's rules (protocol.md §7.5b, §7.5c) -----

/// The XML of `doc` with the sample context of its kind.
fn build_doc(doc: &Document) -> String {
    let ctx = context(doc.kind);
    let t = totals::compute(doc).unwrap();
    build(&BuildInput {
        doc,
        ctx: &ctx,
        totals: &t,
        code: FAKE_CODE,
        qr_url: "https://catalogo-vpfe-hab.dian.gov.co/document/searchqr?documentkey=0123",
        software_security_code: "ssc",
    })
    .unwrap()
}

fn root_text(xml: &str, local: &str) -> Option<String> {
    let doc = roxmltree::Document::parse(xml).unwrap();
    let text = doc
        .root_element()
        .children()
        .find(|n| n.tag_name().name() == local)
        .and_then(|n| n.text())
        .map(str::to_string);
    text
}

/// The element at a path of local names below the root.
fn at<'a, 'i>(root: roxmltree::Node<'a, 'i>, steps: &[&str]) -> Option<roxmltree::Node<'a, 'i>> {
    steps.iter().try_fold(root, |n, s| {
        n.children()
            .find(|c| c.is_element() && c.tag_name().name() == *s)
    })
}

/// `Name` → `Value` of a group of alternating pairs.
fn pairs(group: roxmltree::Node<'_, '_>) -> Vec<(String, String)> {
    let items: Vec<_> = group.children().filter(|c| c.is_element()).collect();
    items
        .chunks(2)
        .map(|p| {
            assert_eq!(p[0].tag_name().name(), "Name");
            assert_eq!(p[1].tag_name().name(), "Value");
            (
                p[0].text().unwrap_or("").to_string(),
                p[1].text().unwrap_or("").to_string(),
            )
        })
        .collect()
}

/// FAD02: an export (type 02) is operation 10; its foreign buyer's address
/// has no Colombian location codes and names its country.
#[test]
fn export_is_operation_10_with_a_foreign_address() {
    let mut doc = sample(DocumentKind::ExportInvoice);
    // Even with a stray operation type or municipality code.
    doc.operation_type = Some("04".into());
    if let Some(a) = doc.counterparty.address.as_mut() {
        a.municipality_code = "11001".into();
        a.department_name.clear();
        a.municipality_name = "Miami".into();
    }
    let xml = build_doc(&doc);
    assert_eq!(root_text(&xml, "CustomizationID").as_deref(), Some("10"));
    assert_eq!(root_text(&xml, "InvoiceTypeCode").as_deref(), Some("02"));
    let parsed = roxmltree::Document::parse(&xml).unwrap();
    let address = at(
        parsed.root_element(),
        &[
            "AccountingCustomerParty",
            "Party",
            "PhysicalLocation",
            "Address",
        ],
    )
    .unwrap();
    let t = |steps: &[&str]| {
        at(address, steps)
            .and_then(|n| n.text())
            .map(str::to_string)
    };
    assert_eq!(t(&["ID"]).as_deref(), Some("00000"));
    assert_eq!(t(&["CountrySubentityCode"]).as_deref(), Some("00"));
    assert_eq!(t(&["CountrySubentity"]).as_deref(), Some("Miami"));
    assert_eq!(t(&["CityName"]).as_deref(), Some("Miami"));
    assert_eq!(t(&["Country", "IdentificationCode"]).as_deref(), Some("US"));
    assert_eq!(t(&["Country", "Name"]).as_deref(), Some("Estados Unidos"));
    // The company's own (Colombian) address keeps its codes.
    let own = at(
        parsed.root_element(),
        &[
            "AccountingSupplierParty",
            "Party",
            "PhysicalLocation",
            "Address",
            "ID",
        ],
    )
    .and_then(|n| n.text());
    assert_eq!(own, Some("11001"));
    if have_xmllint() {
        xmllint_validate_unsigned(&xml).unwrap();
    }
}

/// DSAJ25a / DSAJ24b: a resident vendor of a support document or its
/// adjustment is a NIT (31 and its check digit) in `PartyTaxScheme`, even
/// with a cédula; a non-resident one (operation 11) keeps its document.
#[test]
fn support_vendor_is_a_nit_in_party_tax_scheme() {
    let dv = crate::engine::codes::nit_check_digit("1020304050")
        .unwrap()
        .to_string();
    for kind in [
        DocumentKind::SupportDocument,
        DocumentKind::SupportAdjustment,
    ] {
        for (operation, nit) in [(None, true), (Some("10"), true), (Some("11"), false)] {
            let mut doc = sample(kind);
            doc.operation_type = operation.map(str::to_string);
            let xml = build_doc(&doc);
            let parsed = roxmltree::Document::parse(&xml).unwrap();
            let party = at(parsed.root_element(), &["AccountingSupplierParty", "Party"]).unwrap();
            let tax = at(party, &["PartyTaxScheme", "CompanyID"]).unwrap();
            assert_eq!(tax.text(), Some("1020304050"));
            if nit {
                assert_eq!(tax.attribute("schemeName"), Some("31"), "{kind:?}");
                assert_eq!(tax.attribute("schemeID"), Some(dv.as_str()), "{kind:?}");
            } else {
                assert_eq!(tax.attribute("schemeName"), Some("13"), "{kind:?}");
                assert_eq!(tax.attribute("schemeID"), None, "{kind:?}");
            }
            // The person's own document stays in its identification.
            let id = at(party, &["PartyIdentification", "ID"]).unwrap();
            assert_eq!(id.attribute("schemeName"), Some("13"));
        }
    }
}

/// Health sector: an invoice is `SS-CUFE` with the user's copay and
/// `SS-SinAporte` without, a note `SS-CUDE`; the billed period and the
/// health annex's `CustomTagGeneral` before the signature.
#[test]
fn health_documents_carry_the_annex_data() {
    for (kind, copay, operation) in [
        (DocumentKind::Invoice, None, "SS-SinAporte"),
        (DocumentKind::Invoice, Some(dec!(4500)), "SS-CUFE"),
        (DocumentKind::ContingencyT04, None, "SS-SinAporte"),
        (DocumentKind::CreditNote, Some(dec!(4500)), "SS-CUDE"),
        (DocumentKind::DebitNote, None, "SS-CUDE"),
    ] {
        let mut doc = sample(kind);
        doc.operation_type = None;
        doc.health = Some(HealthInfo { copay, ..health() });
        let xml = build_doc(&doc);
        assert_canonical(&xml);
        assert_eq!(
            root_text(&xml, "CustomizationID").as_deref(),
            Some(operation),
            "{kind:?}"
        );
        let parsed = roxmltree::Document::parse(&xml).unwrap();
        let root = parsed.root_element();
        assert_eq!(
            at(root, &["InvoicePeriod", "StartDate"]).and_then(|n| n.text()),
            Some("2025-03-01")
        );
        assert_eq!(
            at(root, &["InvoicePeriod", "EndDate"]).and_then(|n| n.text()),
            Some("2025-03-31")
        );
        let exts: Vec<_> = at(root, &["UBLExtensions"])
            .unwrap()
            .children()
            .filter(|n| n.is_element())
            .collect();
        assert_eq!(exts.len(), 3, "{kind:?}");
        let tag = at(exts[1], &["ExtensionContent", "CustomTagGeneral"]).unwrap();
        assert_eq!(tag.tag_name().namespace(), Some(kind.root().namespace()));
        let collection = at(tag, &["Interoperabilidad", "Group", "Collection"]).unwrap();
        assert_eq!(collection.attribute("schemeName"), Some("Usuario"));
        assert_eq!(
            collection.parent().unwrap().attribute("schemeName"),
            Some("Sector Salud")
        );
        let info: Vec<(String, String, Option<String>)> = collection
            .children()
            .filter(|n| n.is_element())
            .map(|n| {
                let value = at(n, &["Value"]).unwrap();
                (
                    at(n, &["Name"]).unwrap().text().unwrap_or("").to_string(),
                    value.text().unwrap_or("").to_string(),
                    value.attribute("schemeID").map(str::to_string),
                )
            })
            .collect();
        assert_eq!(
            info[0],
            ("CODIGO_PRESTADOR".into(), "110010000001".into(), None)
        );
        assert_eq!(
            info[1],
            (
                "MODALIDAD_PAGO".into(),
                "Pago por evento".into(),
                Some("04".into())
            )
        );
        assert_eq!(info[2].0, "COBERTURA_PLAN_BENEFICIOS");
        assert_eq!(info[2].2.as_deref(), Some("16"));
        assert_eq!(info[3], ("NUMERO_CONTRATO".into(), "C-77".into(), None));
        assert_eq!(info[4].0, "NUMERO_POLIZA");
        // The copay an invoice's user paid is its prepaid payment: the
        // payable amount is reduced by it. Notes carry none.
        let t = totals::compute(&doc).unwrap();
        let prepaid = at(root, &["LegalMonetaryTotal", "PrepaidAmount"]).and_then(|n| n.text());
        let payment = at(root, &["PrepaidPayment", "PaidAmount"]).and_then(|n| n.text());
        if kind.root() == RootElement::Invoice && copay.is_some() {
            assert_eq!(prepaid, Some("4500.00"), "{kind:?}");
            assert_eq!(payment, Some("4500.00"), "{kind:?}");
            assert_eq!(t.payable, t.before_prepaid() - dec!(4500));
        } else {
            assert_eq!((prepaid, payment), (None, None), "{kind:?}");
            assert_eq!(t.payable, t.before_prepaid());
        }
        let payable = at(
            root,
            &[
                kind.root()
                    .monetary_total_element()
                    .trim_start_matches("cac:"),
                "PayableAmount",
            ],
        )
        .and_then(|n| n.text())
        .unwrap();
        assert_eq!(payable, &*fmt_amount(t.payable), "{kind:?}");
        if have_xmllint() {
            if let Err(e) = xmllint_validate_unsigned(&xml) {
                panic!("{kind:?}: {e}");
            }
        }
    }
    // Without bounds, the period is the issue date.
    let mut doc = sample(DocumentKind::Invoice);
    let mut h = health();
    h.period_start = None;
    h.period_end = None;
    doc.health = Some(h);
    let xml = build_doc(&doc);
    assert!(xml.contains(
        "<cac:InvoicePeriod><cbc:StartDate>2025-03-14</cbc:StartDate><cbc:EndDate>2025-03-14</cbc:EndDate></cac:InvoicePeriod>"
    ));
}

/// Cargo transport (the API's 12): operation 10, the consignment on its
/// line (properties 01, 02, 03 with the quantity) and the registry flag
/// on every line's `cbc:ID`.
#[test]
fn transport_lines_carry_their_consignment() {
    let xml = build_sample(DocumentKind::ContingencyT03);
    assert_eq!(root_text(&xml, "CustomizationID").as_deref(), Some("10"));
    assert!(xml.contains("<cac:InvoiceLine><cbc:ID schemeID=\"1\">1</cbc:ID>"));
    assert!(xml.contains("<cac:InvoiceLine><cbc:ID schemeID=\"0\">2</cbc:ID>"));
    assert!(xml.contains(concat!(
        "<cac:AdditionalItemProperty><cbc:Name>01</cbc:Name><cbc:Value>88123456</cbc:Value></cac:AdditionalItemProperty>",
        "<cac:AdditionalItemProperty><cbc:Name>02</cbc:Name><cbc:Value>R-1</cbc:Value></cac:AdditionalItemProperty>",
        "<cac:AdditionalItemProperty><cbc:Name>03</cbc:Name><cbc:Value>99000.00</cbc:Value>",
        "<cbc:ValueQuantity unitCode=\"KGM\">1200.50</cbc:ValueQuantity></cac:AdditionalItemProperty></cac:Item>"
    )));
    assert_eq!(xml.matches("<cac:AdditionalItemProperty>").count(), 3);
    // A document without transport data writes plain line ids.
    let fe = build_sample(DocumentKind::Invoice);
    assert!(fe.contains("<cac:InvoiceLine><cbc:ID>1</cbc:ID>"));
}

/// T03: `cac:AdditionalDocumentReference` names the paper invoice, its own
/// number and date when none is given.
#[test]
fn t03_names_the_paper_invoice_it_transcribes() {
    let own = build_sample(DocumentKind::ContingencyT03);
    assert!(own.contains(concat!(
        "<cac:AdditionalDocumentReference><cbc:ID>SETP990000001</cbc:ID>",
        "<cbc:IssueDate>2025-03-14</cbc:IssueDate><cbc:DocumentTypeCode>03</cbc:DocumentTypeCode>",
        "</cac:AdditionalDocumentReference><cac:AccountingSupplierParty>"
    )));
    let mut doc = sample(DocumentKind::ContingencyT03);
    doc.paper_reference = Some(PaperReference {
        number: "TAL-0042".into(),
        issue_date: date("2025-03-10"),
    });
    let xml = build_doc(&doc);
    assert!(xml.contains(
        "<cac:AdditionalDocumentReference><cbc:ID>TAL-0042</cbc:ID><cbc:IssueDate>2025-03-10</cbc:IssueDate>"
    ));
    if have_xmllint() {
        xmllint_validate_unsigned(&xml).unwrap();
    }
    for kind in [DocumentKind::Invoice, DocumentKind::ContingencyT04] {
        assert!(!build_sample(kind).contains("AdditionalDocumentReference"));
    }
}

/// DEPD11 / DEPD21: a POS receipt carries the maker, buyer-benefits and
/// point-of-sale extensions with the values of decisions.md §5.
#[test]
fn pos_receipt_carries_its_three_extensions() {
    let mut doc = sample(DocumentKind::Pos);
    let xml = build_doc(&doc);
    let parsed = roxmltree::Document::parse(&xml).unwrap();
    let root = parsed.root_element();
    let exts: Vec<_> = at(root, &["UBLExtensions"])
        .unwrap()
        .children()
        .filter(|n| n.is_element())
        .collect();
    assert_eq!(exts.len(), 5);
    assert!(at(exts[0], &["ExtensionContent", "DianExtensions"]).is_some());
    let group = |i: usize, wrapper: &str, group: &str| {
        let g = at(exts[i], &["ExtensionContent", wrapper, group]).unwrap();
        assert_eq!(
            g.tag_name().namespace(),
            Some(RootElement::Invoice.namespace())
        );
        pairs(g)
    };
    let s = |a: &str, b: &str| (a.to_string(), b.to_string());
    assert_eq!(
        group(
            1,
            "FabricanteSoftware",
            "InformacionDelFabricanteDelSoftware"
        ),
        vec![
            s("NombreApellido", "emisor"),
            s("RazonSocial", "emisor"),
            s("NombreSoftware", "emisor"),
        ]
    );
    assert_eq!(
        group(2, "BeneficiosComprador", "InformacionBeneficiosComprador"),
        vec![
            s("Codigo", "222222222222"),
            s("NombresApellidos", "Consumidor final"),
            s("Puntos", "0"),
        ]
    );
    let subtotal = totals::compute(&doc).unwrap().line_extension;
    assert_eq!(
        group(3, "PuntoVenta", "InformacionCajaVenta"),
        vec![
            s("PlacaCaja", "1"),
            s("UbicaciónCaja", "Calle 1 # 2-3"),
            s("Cajero", "1"),
            s("TipoCaja", "POS"),
            s("CódigoVenta", "SETP990000001"),
            s("SubTotal", &super::common::fmt_amount(subtotal)),
        ]
    );
    // The signature's extension stays last.
    assert!(at(exts[4], &["ExtensionContent"])
        .unwrap()
        .children()
        .next()
        .is_none());
    // Register and cashier from the request.
    doc.point_of_sale = Some(PointOfSale {
        register_id: "CAJA-7".into(),
        cashier_id: "ana".into(),
    });
    let xml = build_doc(&doc);
    assert!(xml.contains("<Name>PlacaCaja</Name><Value>CAJA-7</Value>"));
    assert!(xml.contains("<Name>Cajero</Name><Value>ana</Value>"));
    if have_xmllint() {
        xmllint_validate_unsigned(&xml).unwrap();
    }
}

/// The POS adjustment note carries only `sts:DianExtensions` (with
/// `sts:InvoiceSource`, the only name the authority's
/// `DIAN_UBL_Structures.xsd` knows) and the signature, and names type 20 in
/// its billing reference, as other notes name their source.
#[test]
fn pos_adjustment_names_its_invoice_source() {
    let xml = build_sample(DocumentKind::PosAdjustment);
    assert!(xml.contains("<sts:InvoiceSource><cbc:IdentificationCode"));
    assert!(!xml.contains("CreditNoteSource"));
    assert!(xml.contains(
        "<cbc:IssueDate>2025-03-01</cbc:IssueDate><cbc:DocumentTypeCode>20</cbc:DocumentTypeCode></cac:InvoiceDocumentReference>"
    ));
    assert_eq!(xml.matches("<ext:UBLExtension>").count(), 2);
    let nc = build_sample(DocumentKind::CreditNote);
    assert!(nc.contains("<sts:InvoiceSource>"));
    assert!(!nc.contains("DocumentTypeCode"));
}

#[test]
fn a_container_read_from_the_signed_document_equals_one_built_from_the_request() {
    let at = DateTime::parse_from_rfc3339("2025-03-14T15:21:00Z").unwrap();
    let ar = "<ApplicationResponse>02</ApplicationResponse>";
    for kind in [
        DocumentKind::Invoice,
        DocumentKind::CreditNote,
        DocumentKind::Pos,
    ] {
        let signed = build_sample(kind);
        let doc = sample(kind);
        let ctx = context(kind);
        let t = totals::compute(&doc).unwrap();
        let from_request = attached::build(&AttachedInput {
            document: BuildInput {
                doc: &doc,
                ctx: &ctx,
                totals: &t,
                code: FAKE_CODE,
                qr_url: "",
                software_security_code: "",
            },
            signed_xml: &signed,
            application_response: ar,
            validated_at: at,
            issued_at: at,
        })
        .unwrap();
        let from_signed = attached::build_for_signed(&signed, ar, at, at).unwrap();
        assert_eq!(from_signed, from_request, "{kind:?}");
    }
    // A support document is sent by its issuer, the buyer; the vendor's
    // identification is read as the signed document writes it.
    let signed = build_sample(DocumentKind::SupportDocument);
    let c = attached::read_signed(&signed).unwrap();
    let ctx = context(DocumentKind::SupportDocument);
    assert_eq!(c.sender.id_number, ctx.company.id_number);
    assert_eq!(
        c.receiver.id_number,
        sample(DocumentKind::SupportDocument).counterparty.id_number
    );
    assert_eq!(c.scheme_name, "CUDS-SHA384");
    assert!(matches!(
        attached::build_for_signed("<Invoice/>", ar, at, at),
        Err(super::UblError::Unreadable(_))
    ));
}

/// A number's text on the stack is `Decimal`'s own, for every `Decimal`
/// up to its extremes (the longest texts it has).
#[test]
fn number_text_is_the_decimals_own_at_its_extremes() {
    use super::common::{fmt_amount, fmt_decimal};
    use rust_decimal::Decimal;
    let smallest = Decimal::new(1, 28);
    for d in [
        Decimal::MAX,
        Decimal::MIN,
        smallest,
        -smallest,
        Decimal::from_i128_with_scale(-79_228_162_514_264_337_593_543_950_335, 28),
        dec!(1234.5),
        dec!(-0.004),
        Decimal::ZERO,
    ] {
        let mut two =
            d.round_dp_with_strategy(2, rust_decimal::RoundingStrategy::MidpointAwayFromZero);
        if two.is_zero() {
            two = Decimal::ZERO;
        }
        two.rescale(2);
        assert_eq!(&*fmt_amount(d), two.to_string(), "{d}");
        let mut own = d.normalize();
        if own.is_zero() {
            own = Decimal::ZERO;
        }
        if own.scale() < 2 {
            own.rescale(2);
        }
        assert_eq!(&*fmt_decimal(d), own.to_string(), "{d}");
    }
    assert_eq!(&*fmt_amount(dec!(-0.004)), "0.00");
    assert_eq!(&*fmt_decimal(dec!(19)), "19.00");
    assert_eq!(&*fmt_decimal(dec!(0.9660)), "0.966");
}
