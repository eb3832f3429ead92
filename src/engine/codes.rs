//! Unique document codes (CUFE, CUDE, CUDS, CUNE, event CUDE), software
//! security code, NIT check digit and verification URLs (protocol.md §1, §2,
//! §7.7), plus [`extract_code_input`], which reads back from a UBL document
//! the values the code formula needs so a holder of the key can recompute it.

use std::fmt::Write as _;

use rust_decimal::Decimal;
use sha2::{Digest, Sha384};

/// UBL common aggregate components namespace.
pub const NS_CAC: &str = "urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2";
/// UBL common basic components namespace.
pub const NS_CBC: &str = "urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2";

/// Catalogue URL prefix, production (environment 1).
pub const QR_URL_PRODUCTION: &str =
    "https://catalogo-vpfe.dian.gov.co/document/searchqr?documentkey=";
/// Catalogue URL prefix, habilitación / test (environment 2).
pub const QR_URL_TEST: &str =
    "https://catalogo-vpfe-hab.dian.gov.co/document/searchqr?documentkey=";

/// Which code a document carries (`cbc:UUID/@schemeName`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum CodeScheme {
    Cufe,
    Cude,
    Cuds,
    Cune,
}

impl CodeScheme {
    /// `CUFE-SHA384`, `CUDE-SHA384`, `CUDS-SHA384`, `CUNE-SHA384`.
    pub fn scheme_name(self) -> &'static str {
        match self {
            CodeScheme::Cufe => "CUFE-SHA384",
            CodeScheme::Cude => "CUDE-SHA384",
            CodeScheme::Cuds => "CUDS-SHA384",
            CodeScheme::Cune => "CUNE-SHA384",
        }
    }

    /// Inverse of [`CodeScheme::scheme_name`].
    pub fn from_scheme_name(name: &str) -> Option<CodeScheme> {
        match name {
            "CUFE-SHA384" => Some(CodeScheme::Cufe),
            "CUDE-SHA384" => Some(CodeScheme::Cude),
            "CUDS-SHA384" => Some(CodeScheme::Cuds),
            "CUNE-SHA384" => Some(CodeScheme::Cune),
            _ => None,
        }
    }
}

/// Inputs of the CUFE/CUDE formula (protocol.md §1.2, §1.3, §1.5): the same 15
/// fields; `key` is the technical key (CUFE) or the software PIN (CUDE).
#[derive(Debug, Clone)]
pub struct InvoiceCodeInput<'a> {
    pub number: &'a str,
    pub issue_date: &'a str,
    pub issue_time: &'a str,
    pub line_extension: Decimal,
    pub tax_iva: Decimal,
    pub tax_inc: Decimal,
    pub tax_ica: Decimal,
    pub payable: Decimal,
    pub supplier_nit: &'a str,
    pub customer_id: &'a str,
    pub key: &'a str,
    pub environment: u8,
}

/// Inputs of the CUDS formula (protocol.md §1.4). `seller_id` is the seller not
/// obliged to invoice (AccountingSupplierParty), `buyer_nit` the obliged buyer
/// who issues the support document (AccountingCustomerParty).
#[derive(Debug, Clone)]
pub struct SupportCodeInput<'a> {
    pub number: &'a str,
    pub issue_date: &'a str,
    pub issue_time: &'a str,
    pub line_extension: Decimal,
    pub tax_iva: Decimal,
    pub payable: Decimal,
    pub seller_id: &'a str,
    pub buyer_nit: &'a str,
    pub pin: &'a str,
    pub environment: u8,
}

/// Inputs of the CUNE formula (protocol.md §1.6). For an adjustment of type
/// "Eliminar" pass zero amounts and `employee_doc = "0"`.
#[derive(Debug, Clone)]
pub struct PayrollCodeInput<'a> {
    pub number: &'a str,
    pub gen_date: &'a str,
    pub gen_time: &'a str,
    pub earnings: Decimal,
    pub deductions: Decimal,
    pub total: Decimal,
    pub employer_nit: &'a str,
    pub employee_doc: &'a str,
    /// `"102"` (NominaIndividual) or `"103"` (NominaIndividualDeAjuste).
    pub xml_type: &'a str,
    pub pin: &'a str,
    pub environment: u8,
}

/// Inputs of the ApplicationResponse CUDE (protocol.md §1.7). No environment.
#[derive(Debug, Clone)]
pub struct EventCodeInput<'a> {
    pub number: &'a str,
    pub issue_date: &'a str,
    pub issue_time: &'a str,
    pub sender_nit: &'a str,
    pub receiver_id: &'a str,
    pub response_code: &'a str,
    pub document_id: &'a str,
    pub document_type_code: &'a str,
    pub pin: &'a str,
}

/// SHA-384 of the UTF-8 bytes, lowercase hex (96 chars).
pub fn sha384_hex(s: &str) -> String {
    hex::encode(Sha384::digest(s.as_bytes()))
}

/// Amount as the code formulas want it: truncated (not rounded) to two
/// decimals, always two digits after a dot, no thousands separator.
pub fn format_amount(d: Decimal) -> String {
    let t = d.trunc_with_scale(2);
    let mut s = String::with_capacity(24);
    // After truncation the scale is <= 2, so `{:.2}` only pads with zeros.
    let _ = write!(s, "{t:.2}");
    s
}

/// Concatenation hashed by [`invoice_code`] (useful for a `cbc:Note` and tests).
pub fn invoice_code_input_string(i: &InvoiceCodeInput<'_>) -> String {
    let mut s = String::with_capacity(256);
    s.push_str(i.number);
    s.push_str(i.issue_date);
    s.push_str(i.issue_time);
    s.push_str(&format_amount(i.line_extension));
    s.push_str("01");
    s.push_str(&format_amount(i.tax_iva));
    s.push_str("04");
    s.push_str(&format_amount(i.tax_inc));
    s.push_str("03");
    s.push_str(&format_amount(i.tax_ica));
    s.push_str(&format_amount(i.payable));
    s.push_str(i.supplier_nit);
    s.push_str(i.customer_id);
    s.push_str(i.key);
    let _ = write!(s, "{}", i.environment);
    s
}

/// CUFE or CUDE (same concatenation, different key).
pub fn invoice_code(input: &InvoiceCodeInput<'_>) -> String {
    sha384_hex(&invoice_code_input_string(input))
}

/// Concatenation hashed by [`support_code`].
pub fn support_code_input_string(i: &SupportCodeInput<'_>) -> String {
    let mut s = String::with_capacity(200);
    s.push_str(i.number);
    s.push_str(i.issue_date);
    s.push_str(i.issue_time);
    s.push_str(&format_amount(i.line_extension));
    s.push_str("01");
    s.push_str(&format_amount(i.tax_iva));
    s.push_str(&format_amount(i.payable));
    s.push_str(i.seller_id);
    s.push_str(i.buyer_nit);
    s.push_str(i.pin);
    let _ = write!(s, "{}", i.environment);
    s
}

/// CUDS of a support document (05) or its adjustment note (95).
pub fn support_code(input: &SupportCodeInput<'_>) -> String {
    sha384_hex(&support_code_input_string(input))
}

/// Concatenation hashed by [`payroll_code`].
pub fn payroll_code_input_string(i: &PayrollCodeInput<'_>) -> String {
    let mut s = String::with_capacity(200);
    s.push_str(i.number);
    s.push_str(i.gen_date);
    s.push_str(i.gen_time);
    s.push_str(&format_amount(i.earnings));
    s.push_str(&format_amount(i.deductions));
    s.push_str(&format_amount(i.total));
    s.push_str(i.employer_nit);
    s.push_str(i.employee_doc);
    s.push_str(i.xml_type);
    s.push_str(i.pin);
    let _ = write!(s, "{}", i.environment);
    s
}

/// CUNE of a payroll document (102 / 103).
pub fn payroll_code(input: &PayrollCodeInput<'_>) -> String {
    sha384_hex(&payroll_code_input_string(input))
}

/// Concatenation hashed by [`event_code`].
pub fn event_code_input_string(i: &EventCodeInput<'_>) -> String {
    [
        i.number,
        i.issue_date,
        i.issue_time,
        i.sender_nit,
        i.receiver_id,
        i.response_code,
        i.document_id,
        i.document_type_code,
        i.pin,
    ]
    .concat()
}

/// CUDE of an ApplicationResponse (events 030–051).
pub fn event_code(input: &EventCodeInput<'_>) -> String {
    sha384_hex(&event_code_input_string(input))
}

/// CUDE of an endorsement in blank (events 037/038/039 with
/// `ResponseCode/@listID="2"`): the sender is omitted and the listID follows
/// the response code (protocol.md §1.7 special case). `sender_nit` is ignored.
pub fn event_code_blank_endorsement(input: &EventCodeInput<'_>, list_id: &str) -> String {
    sha384_hex(
        &[
            input.number,
            input.issue_date,
            input.issue_time,
            input.receiver_id,
            input.response_code,
            list_id,
            input.document_id,
            input.document_type_code,
            input.pin,
        ]
        .concat(),
    )
}

/// `sts:SoftwareSecurityCode` / `ProveedorXML/@SoftwareSC`:
/// SHA-384(SoftwareID + PIN + document number).
pub fn software_security_code(software_id: &str, pin: &str, number: &str) -> String {
    sha384_hex(&[software_id, pin, number].concat())
}

/// NIT check digit (DV), protocol.md §7.7. `None` if `nit` is empty, longer
/// than 15 digits or contains anything but ASCII digits.
pub fn nit_check_digit(nit: &str) -> Option<u8> {
    const WEIGHTS: [u32; 15] = [3, 7, 13, 17, 19, 23, 29, 37, 41, 43, 47, 53, 59, 67, 71];
    if nit.is_empty() || nit.len() > WEIGHTS.len() {
        return None;
    }
    let mut sum: u32 = 0;
    for (b, w) in nit.bytes().rev().zip(WEIGHTS.iter()) {
        if !b.is_ascii_digit() {
            return None;
        }
        sum += u32::from(b - b'0') * w;
    }
    let r = (sum % 11) as u8;
    Some(if r <= 1 { r } else { 11 - r })
}

/// Verification URL of a document in the authority's catalogue:
/// environment 1 → production, anything else → habilitación.
pub fn qr_url(environment: u8, code: &str) -> String {
    let prefix = if environment == 1 {
        QR_URL_PRODUCTION
    } else {
        QR_URL_TEST
    };
    let mut s = String::with_capacity(prefix.len() + code.len());
    s.push_str(prefix);
    s.push_str(code);
    s
}

// ---------------------------------------------------------------------------
// Reading the code inputs back from a document
// ---------------------------------------------------------------------------

/// Errors of [`extract_code_input`].
#[derive(Debug, thiserror::Error)]
pub enum CodeError {
    #[error("XML is not well formed: {0}")]
    Xml(String),
    #[error("unsupported root element `{0}` (expected Invoice, CreditNote or DebitNote)")]
    UnsupportedRoot(String),
    #[error("missing element {0}")]
    Missing(&'static str),
    #[error("{field} is not a decimal amount: `{value}`")]
    BadAmount { field: &'static str, value: String },
    #[error("ProfileExecutionID is not an environment digit: `{0}`")]
    BadEnvironment(String),
}

/// Root kind of a UBL document read by [`extract_code_input`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DocumentRoot {
    Invoice,
    CreditNote,
    DebitNote,
}

/// Everything the CUFE/CUDE/CUDS formulas read from a UBL document (all but
/// the key/PIN), plus what the document claims (`uuid`, `uuid_scheme_name`).
/// Amounts are parsed; missing taxes are zero.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtractedCode {
    pub root: DocumentRoot,
    pub number: String,
    pub issue_date: String,
    pub issue_time: String,
    pub line_extension: Decimal,
    pub tax_iva: Decimal,
    pub tax_inc: Decimal,
    pub tax_ica: Decimal,
    pub payable: Decimal,
    pub supplier_id: String,
    pub customer_id: String,
    /// `cbc:ProfileExecutionID` as a digit (1 production, 2 test).
    pub environment: u8,
    /// `cbc:UUID` text (the code the document claims).
    pub uuid: String,
    /// `cbc:UUID/@schemeName` (e.g. `CUFE-SHA384`), empty if absent.
    pub uuid_scheme_name: String,
    /// `cbc:InvoiceTypeCode` / `cbc:CreditNoteTypeCode` / `cbc:DebitNoteTypeCode`
    /// text, empty if absent.
    pub type_code: String,
}

impl ExtractedCode {
    /// CUFE/CUDE input with the given technical key or PIN.
    pub fn invoice_input<'a>(&'a self, key: &'a str) -> InvoiceCodeInput<'a> {
        InvoiceCodeInput {
            number: &self.number,
            issue_date: &self.issue_date,
            issue_time: &self.issue_time,
            line_extension: self.line_extension,
            tax_iva: self.tax_iva,
            tax_inc: self.tax_inc,
            tax_ica: self.tax_ica,
            payable: self.payable,
            supplier_nit: &self.supplier_id,
            customer_id: &self.customer_id,
            key,
            environment: self.environment,
        }
    }

    /// CUDS input with the given PIN.
    pub fn support_input<'a>(&'a self, pin: &'a str) -> SupportCodeInput<'a> {
        SupportCodeInput {
            number: &self.number,
            issue_date: &self.issue_date,
            issue_time: &self.issue_time,
            line_extension: self.line_extension,
            tax_iva: self.tax_iva,
            payable: self.payable,
            seller_id: &self.supplier_id,
            buyer_nit: &self.customer_id,
            pin,
            environment: self.environment,
        }
    }

    /// Recompute the code with `key` using the formula `uuid_scheme_name`
    /// names (CUDS for `CUDS-SHA384`, the invoice formula otherwise).
    pub fn recompute(&self, key: &str) -> String {
        match CodeScheme::from_scheme_name(&self.uuid_scheme_name) {
            Some(CodeScheme::Cuds) => support_code(&self.support_input(key)),
            _ => invoice_code(&self.invoice_input(key)),
        }
    }
}

type Node<'a, 'i> = roxmltree::Node<'a, 'i>;

fn child<'a, 'i>(n: Node<'a, 'i>, ns: &str, name: &str) -> Option<Node<'a, 'i>> {
    n.children().find(|c| {
        c.is_element() && c.tag_name().name() == name && c.tag_name().namespace() == Some(ns)
    })
}

fn path<'a, 'i>(n: Node<'a, 'i>, steps: &[(&str, &str)]) -> Option<Node<'a, 'i>> {
    let mut cur = n;
    for (ns, name) in steps {
        cur = child(cur, ns, name)?;
    }
    Some(cur)
}

fn text_of(n: Option<Node<'_, '_>>) -> Option<String> {
    n.map(|n| n.text().unwrap_or("").trim().to_string())
}

fn amount(field: &'static str, n: Option<Node<'_, '_>>) -> Result<Decimal, CodeError> {
    let Some(n) = n else {
        return Ok(Decimal::ZERO);
    };
    let t = n.text().unwrap_or("").trim();
    if t.is_empty() {
        return Ok(Decimal::ZERO);
    }
    let bad = || CodeError::BadAmount {
        field,
        value: t.chars().take(64).collect(),
    };
    // Plain decimal notation only (no exponent, no `_` separators).
    let digits = t.strip_prefix(['-', '+']).unwrap_or(t);
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    let plain = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if (int.is_empty() && frac.is_empty()) || !plain(int) || !plain(frac) {
        return Err(bad());
    }
    t.parse::<Decimal>().map_err(|_| bad())
}

fn party_company_id(root: Node<'_, '_>, party: &str) -> Option<String> {
    text_of(path(
        root,
        &[
            (NS_CAC, party),
            (NS_CAC, "Party"),
            (NS_CAC, "PartyTaxScheme"),
            (NS_CBC, "CompanyID"),
        ],
    ))
}

/// Read from a UBL Invoice / CreditNote / DebitNote the values the code
/// formula uses (protocol.md §1.2–1.4). Taxes 01/04/03 come from the FIRST
/// document-level `cac:TaxTotal` whose subtotal names that scheme (as the
/// authority's validator does); totals from `cac:LegalMonetaryTotal`, or
/// `cac:RequestedMonetaryTotal` for a DebitNote (falling back to the other).
pub fn extract_code_input(xml: &str) -> Result<ExtractedCode, CodeError> {
    let doc = roxmltree::Document::parse(xml).map_err(|e| CodeError::Xml(e.to_string()))?;
    let root = doc.root_element();
    let kind = match root.tag_name().name() {
        "Invoice" => DocumentRoot::Invoice,
        "CreditNote" => DocumentRoot::CreditNote,
        "DebitNote" => DocumentRoot::DebitNote,
        other => return Err(CodeError::UnsupportedRoot(other.chars().take(64).collect())),
    };

    let number = text_of(child(root, NS_CBC, "ID")).ok_or(CodeError::Missing("cbc:ID"))?;
    let issue_date =
        text_of(child(root, NS_CBC, "IssueDate")).ok_or(CodeError::Missing("cbc:IssueDate"))?;
    let issue_time =
        text_of(child(root, NS_CBC, "IssueTime")).ok_or(CodeError::Missing("cbc:IssueTime"))?;
    let env_text = text_of(child(root, NS_CBC, "ProfileExecutionID"))
        .ok_or(CodeError::Missing("cbc:ProfileExecutionID"))?;
    let environment = match env_text.as_str() {
        "1" => 1,
        "2" => 2,
        _ => {
            return Err(CodeError::BadEnvironment(
                env_text.chars().take(16).collect(),
            ))
        }
    };
    let uuid_node = child(root, NS_CBC, "UUID");
    let uuid = text_of(uuid_node).unwrap_or_default();
    let uuid_scheme_name = uuid_node
        .and_then(|n| n.attribute("schemeName"))
        .unwrap_or("")
        .to_string();
    let type_code = text_of(
        child(root, NS_CBC, "InvoiceTypeCode")
            .or_else(|| child(root, NS_CBC, "CreditNoteTypeCode"))
            .or_else(|| child(root, NS_CBC, "DebitNoteTypeCode")),
    )
    .unwrap_or_default();

    let (first, second) = if kind == DocumentRoot::DebitNote {
        ("RequestedMonetaryTotal", "LegalMonetaryTotal")
    } else {
        ("LegalMonetaryTotal", "RequestedMonetaryTotal")
    };
    let totals = child(root, NS_CAC, first)
        .or_else(|| child(root, NS_CAC, second))
        .ok_or(CodeError::Missing("cac:LegalMonetaryTotal"))?;
    let line_extension = amount(
        "LineExtensionAmount",
        child(totals, NS_CBC, "LineExtensionAmount"),
    )?;
    let payable = amount("PayableAmount", child(totals, NS_CBC, "PayableAmount"))?;

    let mut taxes: [Option<Node<'_, '_>>; 3] = [None, None, None];
    for tt in root.children().filter(|c| {
        c.is_element()
            && c.tag_name().name() == "TaxTotal"
            && c.tag_name().namespace() == Some(NS_CAC)
    }) {
        let scheme = text_of(path(
            tt,
            &[
                (NS_CAC, "TaxSubtotal"),
                (NS_CAC, "TaxCategory"),
                (NS_CAC, "TaxScheme"),
                (NS_CBC, "ID"),
            ],
        ));
        let slot = match scheme.as_deref() {
            Some("01") => 0,
            Some("04") => 1,
            Some("03") => 2,
            _ => continue,
        };
        if let Some(s) = taxes.get_mut(slot) {
            if s.is_none() {
                *s = Some(tt);
            }
        }
    }
    let [iva, inc, ica] = taxes;
    let tax_iva = amount(
        "TaxAmount(01)",
        iva.and_then(|t| child(t, NS_CBC, "TaxAmount")),
    )?;
    let tax_inc = amount(
        "TaxAmount(04)",
        inc.and_then(|t| child(t, NS_CBC, "TaxAmount")),
    )?;
    let tax_ica = amount(
        "TaxAmount(03)",
        ica.and_then(|t| child(t, NS_CBC, "TaxAmount")),
    )?;

    let supplier_id = party_company_id(root, "AccountingSupplierParty")
        .ok_or(CodeError::Missing("AccountingSupplierParty CompanyID"))?;
    let customer_id = party_company_id(root, "AccountingCustomerParty")
        .ok_or(CodeError::Missing("AccountingCustomerParty CompanyID"))?;

    Ok(ExtractedCode {
        root: kind,
        number,
        issue_date,
        issue_time,
        line_extension,
        tax_iva,
        tax_inc,
        tax_ica,
        payable,
        supplier_id,
        customer_id,
        environment,
        uuid,
        uuid_scheme_name,
        type_code,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rust_decimal_macros::dec;

    #[test]
    fn v1_cufe_annex_example() {
        let i = InvoiceCodeInput {
            number: "323200000129",
            issue_date: "2019-01-16",
            issue_time: "10:53:10-05:00",
            line_extension: dec!(1500000),
            tax_iva: dec!(285000),
            tax_inc: dec!(0),
            tax_ica: dec!(0),
            payable: dec!(1785000.00),
            supplier_nit: "700085371",
            customer_id: "800199436",
            key: "693ff6f2a553c3646a063436fd4dd9ded0311471",
            environment: 1,
        };
        assert_eq!(
            invoice_code_input_string(&i),
            "3232000001292019-01-1610:53:10-05:001500000.0001285000.00040.00030.001785000.00700085371800199436693ff6f2a553c3646a063436fd4dd9ded03114711"
        );
        assert_eq!(
            invoice_code(&i),
            "8bb918b19ba22a694f1da11c643b5e9de39adf60311cf179179e9b33381030bcd4c3c3f156c506ed5908f9276f5bd9b4"
        );
    }

    #[test]
    fn v2_cude_type03_example() {
        let i = InvoiceCodeInput {
            number: "8110007871",
            issue_date: "2019-02-20",
            issue_time: "16:46:55-05:00",
            line_extension: dec!(235.28),
            tax_iva: dec!(19.00),
            tax_inc: dec!(0),
            tax_ica: dec!(8.28),
            payable: dec!(262.56),
            supplier_nit: "900373076",
            customer_id: "8355990",
            key: "12345",
            environment: 2,
        };
        assert_eq!(
            invoice_code(&i),
            "955327eb55f8bdf16d069358a063d87e1577a292cb088ec186ed60bbc38e750b7b3980659b278ead789b95f9c51a9ef7"
        );
    }

    #[test]
    fn v3_cude_credit_note_example() {
        let i = InvoiceCodeInput {
            number: "8110007871",
            issue_date: "2019-01-12",
            issue_time: "07:00:00-05:00",
            line_extension: dec!(5000),
            tax_iva: dec!(950),
            tax_inc: dec!(0),
            tax_ica: dec!(0),
            payable: dec!(5950),
            supplier_nit: "900373076",
            customer_id: "8355990",
            key: "12301",
            environment: 1,
        };
        assert_eq!(
            invoice_code(&i),
            "907e4444decc9e59c160a2fb3b6659b33dc5b632a5008922b9a62f83f757b1c448e47f5867f2b50dbdb96f48c7681168"
        );
    }

    #[test]
    fn v4_cude_debit_note_recomputed_not_annex_erratum() {
        let i = InvoiceCodeInput {
            number: "ND1001",
            issue_date: "2019-01-18",
            issue_time: "10:58:00-05:00",
            line_extension: dec!(30000),
            tax_iva: dec!(0),
            tax_inc: dec!(2400),
            tax_ica: dec!(0),
            payable: dec!(32400),
            supplier_nit: "900197264",
            customer_id: "10254102",
            key: "10201",
            environment: 2,
        };
        let got = invoice_code(&i);
        assert_eq!(
            got,
            "3fa73a86d57d9341c536afde1f85c4efd9d4591c2c22bce4dfb0e6b0d2e83b8f047a8bde7098292e9d2493e60d1c31da"
        );
        // The annex prints b9483dc2…8ecd4: an erratum (protocol.md §1.9 V4).
        assert!(!got.starts_with("b9483dc2"));
    }

    #[test]
    fn v5_event_cude_030() {
        let i = EventCodeInput {
            number: "1",
            issue_date: "2019-04-30",
            issue_time: "19:48:50-05:00",
            sender_nit: "99998888",
            receiver_id: "800197268",
            response_code: "030",
            document_id: "FE123",
            document_type_code: "01",
            pin: "11111",
        };
        assert_eq!(
            event_code(&i),
            "0d91ba25b01f5e7dbda870a11b274501d3a62a73e91932c473c86c93f12a142a2ac45876efcde3e679024a01c0be41f9"
        );
        assert_eq!(
            event_code_input_string(&i),
            "12019-04-3019:48:50-05:0099998888800197268030FE1230111111"
        );
    }

    #[test]
    fn v6_cuds_dsno_example() {
        let i = SupportCodeInput {
            number: "0000000001",
            issue_date: "2020-10-24",
            issue_time: "14:04:35-05:00",
            line_extension: dec!(15000),
            tax_iva: dec!(19),
            payable: dec!(16350),
            seller_id: "900373076",
            buyer_nit: "8355990",
            pin: "12345",
            environment: 1,
        };
        assert_eq!(
            support_code(&i),
            "bf4bb6920d5054ac065ddb7e6df0398e63e3ba2ff29cb341edd7d46ee8f2ea1802f84aaca91a19a24623e5e3baff3a71"
        );
    }

    #[test]
    fn v7_cuds_dian_unit_test() {
        let i = SupportCodeInput {
            number: "DS236000000",
            issue_date: "2022-02-18",
            issue_time: "13:34:59-05:00",
            line_extension: dec!(3899000.00),
            tax_iva: dec!(432530.00),
            payable: dec!(4152176.00),
            seller_id: "1020",
            buyer_nit: "20227859",
            pin: "12345",
            environment: 2,
        };
        assert_eq!(
            support_code(&i),
            "b42c77ce05c477e20ed50aa84f43019dd36019d6564dbbd650c50acdf531fd1945809d7da8a97f1cf6681eabdd8d4358"
        );
    }

    fn v8_input(time: &str) -> PayrollCodeInput<'_> {
        PayrollCodeInput {
            number: "N00001",
            gen_date: "2020-01-16",
            gen_time: time,
            earnings: dec!(3500000),
            deductions: dec!(1000000),
            total: dec!(2500000),
            employer_nit: "700085371",
            employee_doc: "800199436",
            xml_type: "102",
            pin: "693",
            environment: 1,
        }
    }

    #[test]
    fn v8_cune_annex_example_does_not_reproduce() {
        let i = v8_input("10:53:10-05:00");
        assert_eq!(
            payroll_code_input_string(&i),
            "N000012020-01-1610:53:10-05:003500000.001000000.002500000.007000853718001994361026931"
        );
        let got = payroll_code(&i);
        // protocol.md §1.9 V8: the annex prints 16560dc8…; recomputed dae35b4d…a2bd.
        assert_ne!(
            got,
            "16560dc8956122e84ffb743c817fe7d494e058a44d9ca3fa4c234c268b4f766003253fbee7ea4af9682dd57210f3bac2"
        );
        assert!(
            got.starts_with("dae35b4d") && got.ends_with("a2bd"),
            "{got}"
        );
    }

    #[test]
    fn v9_cune_facho_self_consistency() {
        let i = v8_input("1053:10-05:00");
        assert_eq!(
            payroll_code(&i),
            "b8f9b6c24de07ffd92ea5467433a3b69357cfaffa7c19722db94b2e0eca41d057085a54f484b5da15ff585e773b0b0ab"
        );
    }

    #[test]
    fn software_security_code_cross_check() {
        assert_eq!(
            software_security_code("abc", "12345", "SETP990000001"),
            "ef061d791ea17f22a34df2d5d18726509bcbe69139a7527a7e3d94c5d534899d5ff886f5a360c0fe87a71d600b67e3eb"
        );
    }

    #[test]
    fn v10_nit_check_digit() {
        assert_eq!(nit_check_digit("800197268"), Some(4));
        assert_eq!(nit_check_digit("700085371"), Some(1));
        assert_eq!(nit_check_digit("900373076"), Some(4));
        assert_eq!(nit_check_digit(""), None);
        assert_eq!(nit_check_digit("90037307-6"), None);
        assert_eq!(nit_check_digit("１２"), None);
        assert_eq!(nit_check_digit("1234567890123456"), None);
        assert!(nit_check_digit("999999999999999").is_some());
    }

    #[test]
    fn format_amount_truncates_and_pads() {
        assert_eq!(format_amount(dec!(1000)), "1000.00");
        assert_eq!(format_amount(dec!(1.999)), "1.99");
        assert_eq!(format_amount(dec!(1.5)), "1.50");
        assert_eq!(format_amount(dec!(0)), "0.00");
        assert_eq!(format_amount(dec!(-2.345)), "-2.34");
        assert_eq!(format_amount(dec!(1234567.005)), "1234567.00");
        assert_eq!(format_amount(dec!(0.0000001)), "0.00");
    }

    #[test]
    fn qr_urls_per_environment() {
        assert_eq!(
            qr_url(1, "abc"),
            "https://catalogo-vpfe.dian.gov.co/document/searchqr?documentkey=abc"
        );
        assert_eq!(
            qr_url(2, "abc"),
            "https://catalogo-vpfe-hab.dian.gov.co/document/searchqr?documentkey=abc"
        );
    }

    const SAMPLE: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<Invoice xmlns="urn:oasis:names:specification:ubl:schema:xsd:Invoice-2" xmlns:cac="urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2" xmlns:cbc="urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2">
  <cbc:ProfileExecutionID>1</cbc:ProfileExecutionID>
  <cbc:ID>323200000129</cbc:ID>
  <cbc:UUID schemeID="1" schemeName="CUFE-SHA384">8bb918b19ba22a694f1da11c643b5e9de39adf60311cf179179e9b33381030bcd4c3c3f156c506ed5908f9276f5bd9b4</cbc:UUID>
  <cbc:IssueDate>2019-01-16</cbc:IssueDate>
  <cbc:IssueTime>10:53:10-05:00</cbc:IssueTime>
  <cbc:InvoiceTypeCode>01</cbc:InvoiceTypeCode>
  <cac:AccountingSupplierParty><cac:Party><cac:PartyTaxScheme><cbc:CompanyID schemeID="1">700085371</cbc:CompanyID></cac:PartyTaxScheme></cac:Party></cac:AccountingSupplierParty>
  <cac:AccountingCustomerParty><cac:Party><cac:PartyTaxScheme><cbc:CompanyID>800199436</cbc:CompanyID></cac:PartyTaxScheme></cac:Party></cac:AccountingCustomerParty>
  <cac:TaxTotal><cbc:TaxAmount currencyID="COP">285000.00</cbc:TaxAmount><cac:TaxSubtotal><cac:TaxCategory><cac:TaxScheme><cbc:ID>01</cbc:ID></cac:TaxScheme></cac:TaxCategory></cac:TaxSubtotal></cac:TaxTotal>
  <cac:TaxTotal><cbc:TaxAmount currencyID="COP">999.00</cbc:TaxAmount><cac:TaxSubtotal><cac:TaxCategory><cac:TaxScheme><cbc:ID>01</cbc:ID></cac:TaxScheme></cac:TaxCategory></cac:TaxSubtotal></cac:TaxTotal>
  <cac:LegalMonetaryTotal><cbc:LineExtensionAmount currencyID="COP">1500000.00</cbc:LineExtensionAmount><cbc:PayableAmount currencyID="COP">1785000.00</cbc:PayableAmount></cac:LegalMonetaryTotal>
  <cac:InvoiceLine><cac:TaxTotal><cbc:TaxAmount>7.00</cbc:TaxAmount><cac:TaxSubtotal><cac:TaxCategory><cac:TaxScheme><cbc:ID>04</cbc:ID></cac:TaxScheme></cac:TaxCategory></cac:TaxSubtotal></cac:TaxTotal></cac:InvoiceLine>
</Invoice>"#;

    #[test]
    fn extract_recomputes_v1_from_xml() {
        let e = extract_code_input(SAMPLE).unwrap();
        assert_eq!(e.root, DocumentRoot::Invoice);
        assert_eq!(e.tax_iva, dec!(285000.00)); // first TaxTotal wins
        assert_eq!(e.tax_inc, dec!(0)); // line-level TaxTotal ignored
        assert_eq!(e.type_code, "01");
        assert_eq!(e.uuid_scheme_name, "CUFE-SHA384");
        assert_eq!(
            e.recompute("693ff6f2a553c3646a063436fd4dd9ded0311471"),
            e.uuid
        );
    }

    #[test]
    fn extract_debit_note_uses_requested_monetary_total() {
        let xml = SAMPLE
            .replace(
                "<Invoice xmlns=\"urn:oasis:names:specification:ubl:schema:xsd:Invoice-2\"",
                "<DebitNote xmlns=\"urn:oasis:names:specification:ubl:schema:xsd:DebitNote-2\"",
            )
            .replace("</Invoice>", "</DebitNote>")
            .replace("LegalMonetaryTotal>", "RequestedMonetaryTotal>");
        let e = extract_code_input(&xml).unwrap();
        assert_eq!(e.root, DocumentRoot::DebitNote);
        assert_eq!(e.payable, dec!(1785000));
    }

    #[test]
    fn extract_rejects_bad_input_without_panicking() {
        assert!(matches!(extract_code_input("<a"), Err(CodeError::Xml(_))));
        assert!(matches!(
            extract_code_input("<Foo/>"),
            Err(CodeError::UnsupportedRoot(_))
        ));
        for amount in ["1.5e3", "1_000", "abc", ".", "-", "1.2.3", "９"] {
            let bad = SAMPLE.replace(
                "1500000.00</cbc:LineExtensionAmount>",
                &format!("{amount}</cbc:LineExtensionAmount>"),
            );
            assert!(
                matches!(extract_code_input(&bad), Err(CodeError::BadAmount { .. })),
                "{amount}"
            );
        }
        let bad_env = SAMPLE.replace(">1</cbc:ProfileExecutionID>", ">9</cbc:ProfileExecutionID>");
        assert!(matches!(
            extract_code_input(&bad_env),
            Err(CodeError::BadEnvironment(_))
        ));
    }
}
