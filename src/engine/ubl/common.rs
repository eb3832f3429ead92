//! Pieces shared by every UBL builder: namespaces, number formats, the
//! extensions block, parties, taxes, totals and lines, and the document
//! skeleton that each family parameterizes.

use std::borrow::Cow;

use rust_decimal::Decimal;

use super::{BuildInput, UblError};
use crate::engine::codes::nit_check_digit;
use crate::engine::date_text;
use crate::engine::model::{
    Address, AllowanceCharge, Document, DocumentKind, Line, Party, RootElement, TaxRate,
};
use crate::engine::stack_text::StackText;
use crate::engine::totals::{round2, tax_name, ComputedTax, LineTotals, TaxGroup, Totals};
use crate::engine::xml_writer::XmlWriter;

pub const NS_CAC: &str = "urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2";
pub const NS_CBC: &str = "urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2";
pub const NS_DS: &str = "http://www.w3.org/2000/09/xmldsig#";
pub const NS_EXT: &str = "urn:oasis:names:specification:ubl:schema:xsd:CommonExtensionComponents-2";
pub const NS_STS: &str = "dian:gov:co:facturaelectronica:Structures-2-1";
pub const NS_XADES: &str = "http://uri.etsi.org/01903/v1.3.2#";
pub const NS_XADES141: &str = "http://uri.etsi.org/01903/v1.4.1#";
pub const NS_XSI: &str = "http://www.w3.org/2001/XMLSchema-instance";

/// The prefixed namespaces declared on every root (sorted by prefix), so
/// that the signature inserted later needs no declaration of its own.
pub const ROOT_NAMESPACES: [(&str, &str); 8] = [
    ("cac", NS_CAC),
    ("cbc", NS_CBC),
    ("ds", NS_DS),
    ("ext", NS_EXT),
    ("sts", NS_STS),
    ("xades", NS_XADES),
    ("xades141", NS_XADES141),
    ("xsi", NS_XSI),
];

pub const DIAN_AGENCY_ID: &str = "195";
pub const DIAN_AGENCY_NAME: &str = "CO, DIAN (Dirección de Impuestos y Aduanas Nacionales)";
/// NIT of the authority, the authorization provider.
pub const AUTHORITY_NIT: &str = "800197268";
pub const AUTHORITY_NIT_DV: &str = "4";

/// An amount with exactly 2 decimals (rounded half-up), never `-0.00`.
pub fn fmt_amount(d: Decimal) -> NumText {
    let mut r = round2(d);
    if r.is_zero() {
        r = Decimal::ZERO;
    }
    r.rescale(2);
    num_text(r)
}

/// A percent or quantity: its own decimals, at least 2 (`19.00`, `0.966`).
pub fn fmt_decimal(d: Decimal) -> NumText {
    let mut r = d.normalize();
    if r.is_zero() {
        r = Decimal::ZERO;
    }
    if r.scale() < 2 {
        r.rescale(2);
    }
    num_text(r)
}

/// A number's text on the stack. Any `Decimal` fits: at most 29 digits,
/// a sign and a point.
pub type NumText = StackText<40>;

fn num_text(d: Decimal) -> NumText {
    use std::fmt::Write;
    let mut text = NumText::new();
    // Cannot fail: every `Decimal` fits (tested at its extremes).
    let _ = write!(text, "{d}");
    text
}

/// The writer state shared by the builder functions.
pub struct Ctx<'a, 'b> {
    pub w: &'b mut XmlWriter,
    pub currency: &'a str,
}

impl Ctx<'_, '_> {
    pub fn amount(&mut self, name: &str, value: Decimal) {
        let text = fmt_amount(value);
        self.w.leaf(name, &[("currencyID", self.currency)], &text);
    }
}

/// `ext:UBLExtensions`: the first extension holds `sts:DianExtensions`; a
/// health document's `CustomTagGeneral` and a POS receipt's three
/// extensions follow it; the last one is an empty `ext:ExtensionContent`
/// for the signature (protocol.md §3.1, §7.5b).
pub fn write_extensions(w: &mut XmlWriter, input: &BuildInput<'_>) {
    w.open("ext:UBLExtensions");
    write_dian_extension(w, input);
    if let Some(h) = &input.doc.health {
        super::sector::write_health_extension(w, h);
    }
    if input.doc.kind == DocumentKind::Pos {
        super::pos::write_pos_extensions(w, input);
    }
    write_signature_slot(w);
    w.end("ext:UBLExtensions");
}

/// The extension holding `sts:DianExtensions`.
fn write_dian_extension(w: &mut XmlWriter, input: &BuildInput<'_>) {
    let ctx = input.ctx;
    let res = &ctx.resolution;
    w.open("ext:UBLExtension");
    w.open("ext:ExtensionContent");
    w.open("sts:DianExtensions");
    if input.doc.kind.has_numbering_resolution() {
        w.open("sts:InvoiceControl");
        w.el("sts:InvoiceAuthorization", &res.number);
        w.open("sts:AuthorizationPeriod");
        w.el("cbc:StartDate", &date_text::date(res.valid_from));
        w.el("cbc:EndDate", &date_text::date(res.valid_to));
        w.end("sts:AuthorizationPeriod");
        w.open("sts:AuthorizedInvoices");
        if !res.prefix.is_empty() {
            w.el("sts:Prefix", &res.prefix);
        }
        w.el("sts:From", &res.from.to_string());
        w.el("sts:To", &res.to.to_string());
        w.end("sts:AuthorizedInvoices");
        w.end("sts:InvoiceControl");
    }
    // Every document, the POS adjustment note included, names its source
    // `sts:InvoiceSource`: the authority's `DIAN_UBL_Structures.xsd` requires
    // it and knows no other name (protocol.md §7.5c).
    w.open("sts:InvoiceSource");
    w.leaf(
        "cbc:IdentificationCode",
        &[
            ("listAgencyID", "6"),
            (
                "listAgencyName",
                "United Nations Economic Commission for Europe",
            ),
            (
                "listSchemeURI",
                "urn:oasis:names:specification:ubl:codelist:gc:CountryIdentificationCode-2.1",
            ),
        ],
        "CO",
    );
    w.end("sts:InvoiceSource");
    w.open("sts:SoftwareProvider");
    let dv = ctx.software.provider_check_digit.to_string();
    w.leaf(
        "sts:ProviderID",
        &[
            ("schemeAgencyID", DIAN_AGENCY_ID),
            ("schemeAgencyName", DIAN_AGENCY_NAME),
            ("schemeID", &dv),
            ("schemeName", "31"),
        ],
        &ctx.software.provider_nit,
    );
    w.leaf(
        "sts:SoftwareID",
        &[
            ("schemeAgencyID", DIAN_AGENCY_ID),
            ("schemeAgencyName", DIAN_AGENCY_NAME),
        ],
        &ctx.software.id,
    );
    w.end("sts:SoftwareProvider");
    w.leaf(
        "sts:SoftwareSecurityCode",
        &[
            ("schemeAgencyID", DIAN_AGENCY_ID),
            ("schemeAgencyName", DIAN_AGENCY_NAME),
        ],
        input.software_security_code,
    );
    w.open("sts:AuthorizationProvider");
    w.leaf(
        "sts:AuthorizationProviderID",
        &[
            ("schemeAgencyID", DIAN_AGENCY_ID),
            ("schemeAgencyName", DIAN_AGENCY_NAME),
            ("schemeID", AUTHORITY_NIT_DV),
            ("schemeName", "31"),
        ],
        AUTHORITY_NIT,
    );
    w.end("sts:AuthorizationProvider");
    w.el("sts:QRCode", input.qr_url);
    w.end("sts:DianExtensions");
    w.end("ext:ExtensionContent");
    w.end("ext:UBLExtension");
}

/// `<ext:UBLExtension><ext:ExtensionContent></ext:ExtensionContent></ext:UBLExtension>`,
/// where the signer puts `ds:Signature`.
pub fn write_signature_slot(w: &mut XmlWriter) {
    w.open("ext:UBLExtension");
    w.open("ext:ExtensionContent");
    w.end("ext:ExtensionContent");
    w.end("ext:UBLExtension");
}

/// Municipality and department placeholders of a foreign address: the
/// DIVIPOLA codes are Colombian, so a foreign address carries none
/// (protocol.md §7.5c; the placeholders are Odoo's `l10n_co_dian`).
const FOREIGN_MUNICIPALITY: &str = "00000";
const FOREIGN_DEPARTMENT: &str = "00";

fn write_address(w: &mut XmlWriter, element: &str, a: &Address) {
    let country = if a.country_code.is_empty() {
        "CO"
    } else {
        a.country_code.as_str()
    };
    let foreign = country != "CO";
    w.open(element);
    if foreign {
        w.el("cbc:ID", FOREIGN_MUNICIPALITY);
    } else if !a.municipality_code.is_empty() {
        w.el("cbc:ID", &a.municipality_code);
    }
    if !a.municipality_name.is_empty() {
        w.el("cbc:CityName", &a.municipality_name);
    }
    if let Some(pz) = a.postal_zone.as_deref().filter(|p| !p.is_empty()) {
        w.el("cbc:PostalZone", pz);
    }
    // A foreign address names its region, or failing that its city.
    let subentity = if foreign && a.department_name.is_empty() {
        &a.municipality_name
    } else {
        &a.department_name
    };
    if !subentity.is_empty() {
        w.el("cbc:CountrySubentity", subentity);
    }
    if foreign {
        w.el("cbc:CountrySubentityCode", FOREIGN_DEPARTMENT);
    } else if !a.department_code.is_empty() {
        w.el("cbc:CountrySubentityCode", &a.department_code);
    }
    if !a.line.is_empty() {
        w.open("cac:AddressLine");
        w.el("cbc:Line", &a.line);
        w.end("cac:AddressLine");
    }
    w.open("cac:Country");
    w.el("cbc:IdentificationCode", country);
    if !a.country_name.is_empty() {
        w.leaf("cbc:Name", &[("languageID", "es")], &a.country_name);
    }
    w.end("cac:Country");
    w.end(element);
}

/// `cbc:CompanyID` (or `cbc:ID`) of a party: the number, with the DV in
/// `schemeID` and the identification type in `schemeName`.
fn write_party_id(w: &mut XmlWriter, element: &str, p: &Party) {
    write_scheme_id(w, element, p, &p.id_type, p.effective_check_digit());
}

/// A check digit's text (a single digit, nearly always, is not copied).
fn digit_text(d: u8) -> Cow<'static, str> {
    const DIGITS: [&str; 10] = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"];
    match DIGITS.get(usize::from(d)) {
        Some(text) => Cow::Borrowed(text),
        None => Cow::Owned(d.to_string()),
    }
}

/// `element` holding the party's number, with the authority as the scheme's
/// agency, `scheme_name`, and the check digit (if any) as `schemeID`.
fn write_scheme_id(w: &mut XmlWriter, element: &str, p: &Party, scheme_name: &str, dv: Option<u8>) {
    let dv = dv.map(digit_text);
    let attrs = [
        ("schemeAgencyID", DIAN_AGENCY_ID),
        ("schemeAgencyName", DIAN_AGENCY_NAME),
        ("schemeName", scheme_name),
        ("schemeID", dv.as_deref().unwrap_or_default()),
    ];
    let with_digit = if dv.is_some() { 4 } else { 3 };
    w.leaf(
        element,
        attrs.get(..with_digit).unwrap_or(&attrs),
        &p.id_number,
    );
}

/// `cbc:CompanyID` as a NIT: `schemeName` 31 and the check digit of the
/// number in `schemeID`, whatever document the party holds. The seller of a
/// support document resident in Colombia is written so in
/// `cac:PartyTaxScheme` even when it is a person with a cédula (rules
/// DSAJ25a and DSAJ24b, protocol.md §7.5c).
fn write_nit_id(w: &mut XmlWriter, element: &str, p: &Party) {
    let dv = if p.id_type == "31" {
        p.effective_check_digit()
    } else {
        nit_check_digit(&p.id_number)
    };
    write_scheme_id(w, element, p, "31", dv);
}

/// How a party's `cac:PartyTaxScheme/cbc:CompanyID` is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaxId {
    /// With the party's own identification type.
    AsIdentified,
    /// As a NIT (scheme 31 and check digit), see [`write_nit_id`].
    AsNit,
}

/// `cac:Party` of a supplier or customer. `corporate_prefix` is the
/// numbering prefix written in `cac:CorporateRegistrationScheme` for the
/// issuing company.
pub fn write_party(w: &mut XmlWriter, p: &Party, corporate_prefix: Option<&str>, tax_id: TaxId) {
    w.open("cac:Party");
    w.open("cac:PartyIdentification");
    write_party_id(w, "cbc:ID", p);
    w.end("cac:PartyIdentification");
    w.open("cac:PartyName");
    w.el("cbc:Name", p.display_name());
    w.end("cac:PartyName");
    if let Some(a) = &p.address {
        w.open("cac:PhysicalLocation");
        write_address(w, "cac:Address", a);
        w.end("cac:PhysicalLocation");
    }
    w.open("cac:PartyTaxScheme");
    w.el("cbc:RegistrationName", &p.name);
    match tax_id {
        TaxId::AsIdentified => write_party_id(w, "cbc:CompanyID", p),
        TaxId::AsNit => write_nit_id(w, "cbc:CompanyID", p),
    }
    let level = if p.tax_responsibilities.is_empty() {
        "R-99-PN"
    } else {
        p.tax_responsibilities.as_str()
    };
    w.leaf("cbc:TaxLevelCode", &[("listName", "48")], level);
    if let Some(a) = &p.address {
        write_address(w, "cac:RegistrationAddress", a);
    }
    w.open("cac:TaxScheme");
    w.el("cbc:ID", &p.tax_scheme.id);
    w.el("cbc:Name", &p.tax_scheme.name);
    w.end("cac:TaxScheme");
    w.end("cac:PartyTaxScheme");
    w.open("cac:PartyLegalEntity");
    w.el("cbc:RegistrationName", &p.name);
    write_party_id(w, "cbc:CompanyID", p);
    if let Some(prefix) = corporate_prefix.filter(|s| !s.is_empty()) {
        w.open("cac:CorporateRegistrationScheme");
        w.el("cbc:ID", prefix);
        w.end("cac:CorporateRegistrationScheme");
    }
    w.end("cac:PartyLegalEntity");
    let phone = p.phone.as_deref().filter(|s| !s.is_empty());
    let email = p.email.as_deref().filter(|s| !s.is_empty());
    if phone.is_some() || email.is_some() {
        w.open("cac:Contact");
        if let Some(ph) = phone {
            w.el("cbc:Telephone", ph);
        }
        if let Some(e) = email {
            w.el("cbc:ElectronicMail", e);
        }
        w.end("cac:Contact");
    }
    w.end("cac:Party");
}

fn write_tax_subtotal(
    c: &mut Ctx<'_, '_>,
    code: &str,
    rate: TaxRate,
    taxable: Decimal,
    amount: Decimal,
    quantity: Decimal,
    unit_code: &str,
) {
    c.w.open("cac:TaxSubtotal");
    c.amount("cbc:TaxableAmount", taxable);
    c.amount("cbc:TaxAmount", amount);
    if let TaxRate::PerUnit(per_unit) = rate {
        c.w.leaf(
            "cbc:BaseUnitMeasure",
            &[("unitCode", unit_code)],
            &fmt_decimal(quantity),
        );
        c.amount("cbc:PerUnitAmount", per_unit);
    }
    c.w.open("cac:TaxCategory");
    if let TaxRate::Percent(p) = rate {
        c.w.el("cbc:Percent", &fmt_decimal(p));
    }
    c.w.open("cac:TaxScheme");
    c.w.el("cbc:ID", code);
    c.w.el("cbc:Name", tax_name(code));
    c.w.end("cac:TaxScheme");
    c.w.end("cac:TaxCategory");
    c.w.end("cac:TaxSubtotal");
}

/// Document-level `cac:TaxTotal` (or `cac:WithholdingTaxTotal`) groups.
pub fn write_tax_groups(c: &mut Ctx<'_, '_>, element: &str, groups: &[TaxGroup]) {
    for g in groups {
        c.w.open(element);
        c.amount("cbc:TaxAmount", g.amount);
        for s in &g.subtotals {
            write_tax_subtotal(
                c,
                &g.code,
                s.rate,
                s.taxable,
                s.amount,
                s.quantity,
                &s.unit_code,
            );
        }
        c.w.end(element);
    }
}

/// Line-level taxes: one total per tax, each with its subtotal.
fn write_line_taxes(c: &mut Ctx<'_, '_>, element: &str, taxes: &[ComputedTax]) {
    for t in taxes.iter().filter(|t| !t.is_omitted_empty()) {
        c.w.open(element);
        c.amount("cbc:TaxAmount", t.amount);
        write_tax_subtotal(
            c,
            &t.code,
            t.rate,
            t.taxable,
            t.amount,
            t.quantity,
            &t.unit_code,
        );
        c.w.end(element);
    }
}

/// `cac:AllowanceCharge` items; `base` is the amount they apply to.
pub fn write_allowances(c: &mut Ctx<'_, '_>, items: &[AllowanceCharge], base: Decimal) {
    for (i, a) in items.iter().enumerate() {
        c.w.open("cac:AllowanceCharge");
        c.w.el("cbc:ID", &(i + 1).to_string());
        c.w.el(
            "cbc:ChargeIndicator",
            if a.is_charge { "true" } else { "false" },
        );
        if let Some(code) = a.reason_code.as_deref().filter(|s| !s.is_empty()) {
            c.w.el("cbc:AllowanceChargeReasonCode", code);
        }
        if !a.reason.is_empty() {
            c.w.el("cbc:AllowanceChargeReason", &a.reason);
        }
        c.amount("cbc:Amount", a.amount);
        c.amount("cbc:BaseAmount", base);
        c.w.end("cac:AllowanceCharge");
    }
}

/// `cac:LegalMonetaryTotal` / `cac:RequestedMonetaryTotal`.
pub fn write_monetary_total(c: &mut Ctx<'_, '_>, root: RootElement, t: &Totals) {
    let el = root.monetary_total_element();
    c.w.open(el);
    c.amount("cbc:LineExtensionAmount", t.line_extension);
    c.amount("cbc:TaxExclusiveAmount", t.tax_exclusive);
    c.amount("cbc:TaxInclusiveAmount", t.tax_inclusive);
    c.amount("cbc:AllowanceTotalAmount", t.allowance_total);
    c.amount("cbc:ChargeTotalAmount", t.charge_total);
    if !t.prepaid.is_zero() {
        c.amount("cbc:PrepaidAmount", t.prepaid);
    }
    c.amount("cbc:PayableAmount", t.payable);
    c.w.end(el);
}

/// One line in the element order of its root's schema.
pub fn write_line(
    c: &mut Ctx<'_, '_>,
    input: &BuildInput<'_>,
    index: usize,
    line: &Line,
    lt: &LineTotals,
    transport_document: bool,
) {
    let root = input.doc.kind.root();
    let el = root.line_element();
    let number = (index + 1).to_string();
    c.w.open(el);
    if transport_document {
        // Registered in the national cargo registry (1) or not (0).
        let registered = if line.transport.is_some() { "1" } else { "0" };
        c.w.leaf("cbc:ID", &[("schemeID", registered)], &number);
    } else {
        c.w.el("cbc:ID", &number);
    }
    let qty = fmt_decimal(line.quantity);
    c.w.leaf(
        root.quantity_element(),
        &[("unitCode", line.unit_code.as_str())],
        &qty,
    );
    c.amount("cbc:LineExtensionAmount", lt.line_extension);
    // Support documents date each purchase (`InvoicePeriod`, "Por operación").
    if input.doc.kind.issuer_is_buyer() {
        c.w.open("cac:InvoicePeriod");
        c.w.el("cbc:StartDate", &input.ctx.issue_date());
        c.w.el("cbc:DescriptionCode", "1");
        c.w.el("cbc:Description", "Por operación");
        c.w.end("cac:InvoicePeriod");
    }
    let gross = round2(line.quantity.saturating_mul(line.unit_price));
    match root {
        RootElement::Invoice => {
            write_allowances(c, &line.allowances_charges, gross);
            write_line_taxes(c, "cac:TaxTotal", &lt.taxes);
            write_line_taxes(c, "cac:WithholdingTaxTotal", &lt.withholdings);
        }
        // Credit and debit note lines: TaxTotal before AllowanceCharge, no
        // withholdings in the schema.
        RootElement::CreditNote | RootElement::DebitNote => {
            write_line_taxes(c, "cac:TaxTotal", &lt.taxes);
            write_allowances(c, &line.allowances_charges, gross);
        }
    }
    c.w.open("cac:Item");
    c.w.el("cbc:Description", &line.description);
    c.w.open("cac:StandardItemIdentification");
    let code = line
        .item_code
        .as_deref()
        .filter(|s| !s.is_empty())
        .unwrap_or(&number);
    c.w.leaf(
        "cbc:ID",
        &[
            ("schemeID", "999"),
            ("schemeName", "Estándar de adopción del contribuyente"),
        ],
        code,
    );
    c.w.end("cac:StandardItemIdentification");
    if let Some(t) = &line.transport {
        super::sector::write_transport_properties(c.w, t);
    }
    c.w.end("cac:Item");
    c.w.open("cac:Price");
    c.amount_raw("cbc:PriceAmount", line.unit_price);
    c.w.leaf(
        "cbc:BaseQuantity",
        &[("unitCode", line.unit_code.as_str())],
        &qty,
    );
    c.w.end("cac:Price");
    c.w.end(el);
}

impl Ctx<'_, '_> {
    /// An amount that may carry more than 2 decimals (unit prices).
    pub fn amount_raw(&mut self, name: &str, value: Decimal) {
        let text = fmt_decimal(value);
        self.w.leaf(name, &[("currencyID", self.currency)], &text);
    }
}

/// Family-specific choices of the document skeleton.
pub struct Shape<'a> {
    /// `AccountingSupplierParty`.
    pub supplier: &'a Party,
    /// `AccountingCustomerParty`.
    pub customer: &'a Party,
    /// Whether the company (and its numbering prefix) is the supplier.
    pub company_is_supplier: bool,
}

/// Which party plays which role for this kind.
pub fn shape<'a>(input: &BuildInput<'a>) -> Shape<'a> {
    if input.doc.kind.issuer_is_buyer() {
        Shape {
            supplier: &input.doc.counterparty,
            customer: &input.ctx.company,
            company_is_supplier: false,
        }
    } else {
        Shape {
            supplier: &input.ctx.company,
            customer: &input.doc.counterparty,
            company_is_supplier: true,
        }
    }
}

fn write_reference(w: &mut XmlWriter, input: &BuildInput<'_>) {
    let doc = input.doc;
    if let Some(concept) = &doc.note_concept {
        w.open("cac:DiscrepancyResponse");
        if let Some(r) = &doc.billing_reference {
            w.el("cbc:ReferenceID", &r.number);
        }
        w.el("cbc:ResponseCode", &concept.code);
        if !concept.description.is_empty() {
            w.el("cbc:Description", &concept.description);
        }
        w.end("cac:DiscrepancyResponse");
    }
    write_billing_reference(w, doc);
}

/// `cac:BillingReference`; a POS adjustment names the type of what it
/// adjusts, 20 (protocol.md §7.5c).
fn write_billing_reference(w: &mut XmlWriter, doc: &Document) {
    if let Some(r) = &doc.billing_reference {
        w.open("cac:BillingReference");
        w.open("cac:InvoiceDocumentReference");
        w.el("cbc:ID", &r.number);
        w.leaf(
            "cbc:UUID",
            &[("schemeName", r.scheme.scheme_name())],
            &r.code,
        );
        w.el(
            "cbc:IssueDate",
            &r.issue_date.format("%Y-%m-%d").to_string(),
        );
        if doc.kind == DocumentKind::PosAdjustment {
            w.el("cbc:DocumentTypeCode", DocumentKind::Pos.type_code());
        }
        w.end("cac:InvoiceDocumentReference");
        w.end("cac:BillingReference");
    }
}

/// A contingency T03 names the paper (talonario) invoice it transcribes:
/// the one given, or its own number and issue date (protocol.md §7.5c,
/// decisions.md §5 "Contingency T03").
fn write_paper_reference(w: &mut XmlWriter, input: &BuildInput<'_>) {
    if input.doc.kind != DocumentKind::ContingencyT03 {
        return;
    }
    let (number, date) = match &input.doc.paper_reference {
        Some(r) => (r.number.clone(), date_text::date(r.issue_date)),
        None => (input.ctx.document_number(), input.ctx.issue_date()),
    };
    w.open("cac:AdditionalDocumentReference");
    w.el("cbc:ID", &number);
    w.el("cbc:IssueDate", &date);
    w.el(
        "cbc:DocumentTypeCode",
        DocumentKind::ContingencyT03.type_code(),
    );
    w.end("cac:AdditionalDocumentReference");
}

fn write_delivery_terms(w: &mut XmlWriter, doc: &Document) {
    if let Some(terms) = doc.delivery_terms.as_deref().filter(|s| !s.is_empty()) {
        w.open("cac:DeliveryTerms");
        w.el("cbc:LossRiskResponsibilityCode", terms);
        w.end("cac:DeliveryTerms");
    }
}

fn write_payment_means(w: &mut XmlWriter, doc: &Document) {
    let default = [crate::engine::model::Payment::default()];
    let payments = if doc.payments.is_empty() {
        &default[..]
    } else {
        &doc.payments[..]
    };
    for p in payments {
        w.open("cac:PaymentMeans");
        w.el("cbc:ID", &p.form);
        w.el("cbc:PaymentMeansCode", &p.method);
        if let Some(d) = p.due_date {
            w.el("cbc:PaymentDueDate", &d.format("%Y-%m-%d").to_string());
        }
        w.end("cac:PaymentMeans");
    }
}

/// `cac:PrepaidPayment`: what was paid before the invoice (a health
/// invoice's copay), received on its issue date.
fn write_prepaid_payment(c: &mut Ctx<'_, '_>, prepaid: Decimal, issue_date: &str) {
    if prepaid.is_zero() {
        return;
    }
    c.w.open("cac:PrepaidPayment");
    c.w.el("cbc:ID", "1");
    c.amount("cbc:PaidAmount", prepaid);
    c.w.el("cbc:ReceivedDate", issue_date);
    c.w.el("cbc:PaidDate", issue_date);
    c.w.el("cbc:InstructionID", "Copago / cuota moderadora del usuario");
    c.w.end("cac:PrepaidPayment");
}

fn write_exchange_rate(w: &mut XmlWriter, doc: &Document) {
    if let Some(x) = &doc.exchange_rate {
        w.open("cac:PaymentExchangeRate");
        w.el("cbc:SourceCurrencyCode", &x.source_currency);
        w.el("cbc:SourceCurrencyBaseRate", "1.00");
        w.el("cbc:TargetCurrencyCode", &x.target_currency);
        w.el("cbc:TargetCurrencyBaseRate", "1.00");
        w.el("cbc:CalculationRate", &fmt_decimal(x.rate));
        w.el("cbc:Date", &x.date.format("%Y-%m-%d").to_string());
        w.end("cac:PaymentExchangeRate");
    }
}

/// Writes a whole Invoice / CreditNote / DebitNote, in the element order of
/// the root's schema. Returns the unsigned XML (declaration + canonical root).
pub fn write_document(input: &BuildInput<'_>) -> Result<String, UblError> {
    let doc = input.doc;
    let ctx = input.ctx;
    let totals = input.totals;
    let kind = doc.kind;
    let root = kind.root();
    let shape = shape(input);
    let number = ctx.document_number();
    let env = ctx.environment.to_string();

    // Header, parties and totals come to 10–14 KB, a line to 1–2 KB: room
    // for the whole document so the buffer is never copied while growing.
    let mut w = XmlWriter::with_capacity(12 * 1024 + doc.lines.len() * 2048);
    w.declaration();
    w.root_start(root.name(), root.namespace(), &ROOT_NAMESPACES, &[]);
    write_extensions(&mut w, input);
    w.el("cbc:UBLVersionID", "UBL 2.1");
    w.el("cbc:CustomizationID", doc.customization_id());
    w.el("cbc:ProfileID", kind.profile_id());
    w.el("cbc:ProfileExecutionID", &env);
    w.el("cbc:ID", &number);
    w.leaf(
        "cbc:UUID",
        &[
            ("schemeID", env.as_str()),
            ("schemeName", kind.code_scheme().scheme_name()),
        ],
        input.code,
    );
    w.el("cbc:IssueDate", &ctx.issue_date());
    w.el("cbc:IssueTime", &ctx.issue_time());
    match root {
        RootElement::Invoice => {
            let due = doc.payments.iter().find_map(|p| p.due_date);
            if let Some(d) = due {
                w.el("cbc:DueDate", &d.format("%Y-%m-%d").to_string());
            }
            w.el("cbc:InvoiceTypeCode", kind.type_code());
        }
        RootElement::CreditNote => w.el("cbc:CreditNoteTypeCode", kind.type_code()),
        // The DebitNote schema has no type code element.
        RootElement::DebitNote => {}
    }
    for n in doc.notes.iter().filter(|n| !n.is_empty()) {
        w.el("cbc:Note", n);
    }
    w.leaf(
        "cbc:DocumentCurrencyCode",
        &[
            ("listAgencyID", "6"),
            (
                "listAgencyName",
                "United Nations Economic Commission for Europe",
            ),
            ("listID", "ISO 4217 Alpha"),
        ],
        &doc.currency,
    );
    w.el("cbc:LineCountNumeric", &doc.lines.len().to_string());
    if let Some(h) = &doc.health {
        super::sector::write_health_period(&mut w, h, &ctx.issue_date());
    }
    if root != RootElement::Invoice {
        write_reference(&mut w, input);
    } else {
        // An invoice may reference another document; BillingReference sits
        // after LineCountNumeric as in the notes.
        write_billing_reference(&mut w, doc);
        write_paper_reference(&mut w, input);
    }

    w.open("cac:AccountingSupplierParty");
    w.el(
        "cbc:AdditionalAccountID",
        shape.supplier.organization_type.code(),
    );
    let prefix = ctx.resolution.prefix.as_str();
    // DSAJ25a/DSAJ24b: a resident vendor (operation 10) as a NIT.
    let supplier_tax_id = if kind.issuer_is_buyer() && doc.customization_id() == "10" {
        TaxId::AsNit
    } else {
        TaxId::AsIdentified
    };
    write_party(
        &mut w,
        shape.supplier,
        shape.company_is_supplier.then_some(prefix),
        supplier_tax_id,
    );
    w.end("cac:AccountingSupplierParty");
    w.open("cac:AccountingCustomerParty");
    w.el(
        "cbc:AdditionalAccountID",
        shape.customer.organization_type.code(),
    );
    write_party(
        &mut w,
        shape.customer,
        (!shape.company_is_supplier).then_some(prefix),
        TaxId::AsIdentified,
    );
    w.end("cac:AccountingCustomerParty");

    let base = totals.line_extension;
    let mut c = Ctx {
        w: &mut w,
        currency: &doc.currency,
    };
    match root {
        RootElement::Invoice => {
            write_delivery_terms(c.w, doc);
            write_payment_means(c.w, doc);
            write_prepaid_payment(&mut c, totals.prepaid, &ctx.issue_date());
            write_allowances(&mut c, &doc.allowances_charges, base);
            write_exchange_rate(c.w, doc);
            write_tax_groups(&mut c, "cac:TaxTotal", &totals.taxes);
            write_tax_groups(&mut c, "cac:WithholdingTaxTotal", &totals.withholdings);
        }
        RootElement::CreditNote => {
            write_delivery_terms(c.w, doc);
            write_payment_means(c.w, doc);
            write_exchange_rate(c.w, doc);
            write_allowances(&mut c, &doc.allowances_charges, base);
            write_tax_groups(&mut c, "cac:TaxTotal", &totals.taxes);
        }
        RootElement::DebitNote => {
            write_allowances(&mut c, &doc.allowances_charges, base);
            write_delivery_terms(c.w, doc);
            write_payment_means(c.w, doc);
            write_exchange_rate(c.w, doc);
            write_tax_groups(&mut c, "cac:TaxTotal", &totals.taxes);
        }
    }
    write_monetary_total(&mut c, root, totals);
    let transport_document = doc.lines.iter().any(|l| l.transport.is_some());
    for (i, (line, lt)) in doc.lines.iter().zip(&totals.lines).enumerate() {
        write_line(&mut c, input, i, line, lt, transport_document);
    }
    w.end(root.name());
    Ok(w.finish()?)
}

/// The kinds a family builder accepts; anything else is a programming error
/// reported as [`UblError::WrongKind`].
pub fn expect_kind(kind: DocumentKind, allowed: &[DocumentKind]) -> Result<(), UblError> {
    if allowed.contains(&kind) {
        Ok(())
    } else {
        Err(UblError::WrongKind(kind))
    }
}
