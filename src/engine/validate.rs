//! Validation before any XML is built (spec 1.9): company, software
//! registration, numbering resolution (validity on the issue date, number in
//! range), certificate (valid at the signing instant), customer, lines,
//! references of notes, text the XML can carry, and the totals.
//!
//! Every problem found is reported (not only the first), each naming its
//! field, so the API can answer one 422 listing them all.

use std::fmt::Display;

use chrono::{DateTime, NaiveDate, Utc};
use rust_decimal::Decimal;
use serde::Serialize;

use super::codes::nit_check_digit;
use super::model::{
    CargoTransport, Document, DocumentKind, HealthInfo, IssuerContext, LineTax, Party, TaxRate,
};
use super::totals::{self, Totals};
use super::ubl::sector::{code_name, COVERAGES, PAYMENT_MODALITIES, TRANSPORT_UNITS};

/// Maximum number of lines of a document (decisions.md §4).
pub const MAX_LINES: usize = 500;

/// Largest accepted quantity, price or amount: keeps every product far from
/// `Decimal`'s limits.
pub const MAX_AMOUNT: Decimal = Decimal::from_parts(0xA4C6_8000, 0x38D7E, 0, false, 0); // 10^15

/// One validation failure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ValidationError {
    pub field: String,
    pub message: String,
}

impl std::fmt::Display for ValidationError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

/// The signing certificate's validity window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CertificateValidity {
    pub not_before: DateTime<Utc>,
    pub not_after: DateTime<Utc>,
}

/// A character XML 1.0 cannot carry (Rust strings hold no surrogates).
pub fn is_forbidden_xml_char(c: char) -> bool {
    matches!(c, '\u{0}'..='\u{8}' | '\u{B}' | '\u{C}' | '\u{E}'..='\u{1F}' | '\u{FFFE}' | '\u{FFFF}')
}

/// What is wrong with a free-text field bound for a document's XML: a
/// character XML cannot carry, or more than `max` characters.
pub fn text_problem(value: &str, max: usize) -> Option<String> {
    if let Some(c) = value.chars().find(|c| is_forbidden_xml_char(*c)) {
        return Some(format!(
            "contains a character XML cannot carry (U+{:04X})",
            u32::from(c)
        ));
    }
    (value.chars().count() > max).then(|| format!("at most {max} characters"))
}

/// The errors found so far. Field names are taken as `impl Display` (a
/// `&str` or `format_args!`), so the name is only formatted when there is
/// an error to report: a valid document formats none of the hundred-odd.
struct Errors(Vec<ValidationError>);

impl Errors {
    fn push(&mut self, field: impl Display, message: impl Into<String>) {
        self.0.push(ValidationError {
            field: field.to_string(),
            message: message.into(),
        });
    }

    fn required(&mut self, field: impl Display, value: &str) {
        if value.trim().is_empty() {
            self.push(field, "is required");
        }
    }

    fn text(&mut self, field: impl Display, value: &str) {
        if let Some(c) = value.chars().find(|c| is_forbidden_xml_char(*c)) {
            self.push(
                field,
                format!(
                    "contains a character XML cannot carry (U+{:04X})",
                    u32::from(c)
                ),
            );
        }
    }

    fn opt_text(&mut self, field: impl Display, value: Option<&str>) {
        if let Some(v) = value {
            self.text(field, v);
        }
    }

    fn amount(&mut self, field: impl Display, value: Decimal, allow_zero: bool) {
        if value.is_sign_negative() && !value.is_zero() {
            self.push(field, "must not be negative");
        } else if !allow_zero && value.is_zero() {
            self.push(field, "must be greater than zero");
        } else if value > MAX_AMOUNT {
            self.push(field, "is too large");
        }
    }
}

fn digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// Identification types of protocol.md §7.6.
const ID_TYPES: [&str; 13] = [
    "11", "12", "13", "21", "22", "31", "41", "42", "47", "48", "50", "91", "32",
];

fn check_party(e: &mut Errors, prefix: &str, p: &Party, is_company: bool, email_required: bool) {
    // `prefix.name`, formatted only if reported.
    macro_rules! f {
        ($name:expr) => {
            format_args!("{prefix}.{}", $name)
        };
    }
    e.required(f!("name"), &p.name);
    e.text(f!("name"), &p.name);
    e.opt_text(f!("trade_name"), p.trade_name.as_deref());
    e.required(f!("id_number"), &p.id_number);
    e.text(f!("id_number"), &p.id_number);
    if !ID_TYPES.contains(&p.id_type.as_str()) {
        e.push(
            f!("id_type"),
            format!("unknown identification type `{}`", p.id_type),
        );
    }
    if is_company && p.id_type != "31" {
        e.push(
            f!("id_type"),
            "the issuing company must be identified by NIT (31)",
        );
    }
    if p.id_type == "31" {
        if !digits(&p.id_number) {
            e.push(
                f!("id_number"),
                "a NIT has digits only (no dots, dashes or check digit)",
            );
        } else if let (Some(given), Some(computed)) = (p.check_digit, nit_check_digit(&p.id_number))
        {
            if given != computed {
                e.push(
                    f!("check_digit"),
                    format!("is {given} but the NIT's check digit is {computed}"),
                );
            }
        }
    }
    e.text(f!("tax_responsibilities"), &p.tax_responsibilities);
    e.text(f!("tax_scheme"), &p.tax_scheme.id);
    e.text(f!("tax_scheme"), &p.tax_scheme.name);
    match p.email.as_deref().filter(|s| !s.trim().is_empty()) {
        Some(m) => {
            e.text(f!("email"), m);
            if !m.contains('@') {
                e.push(f!("email"), "is not an e-mail address");
            }
        }
        None if email_required => e.push(f!("email"), "is required"),
        None => {}
    }
    e.opt_text(f!("phone"), p.phone.as_deref());
    match &p.address {
        Some(a) => {
            for (name, v) in [
                ("line", &a.line),
                ("municipality_code", &a.municipality_code),
                ("municipality_name", &a.municipality_name),
                ("department_name", &a.department_name),
                ("department_code", &a.department_code),
                ("country_code", &a.country_code),
                ("country_name", &a.country_name),
            ] {
                e.text(format_args!("{prefix}.address.{name}"), v);
            }
            e.opt_text(f!("address.postal_zone"), a.postal_zone.as_deref());
            if is_company {
                if a.municipality_code.len() != 5 || !digits(&a.municipality_code) {
                    e.push(
                        f!("address.municipality_code"),
                        "must be the 5-digit municipality code",
                    );
                }
                e.required(f!("address.line"), &a.line);
            }
        }
        None if is_company => e.push(f!("address"), "is required"),
        None => {}
    }
}

/// The health annex's required data (see `ubl::sector`).
fn check_health(e: &mut Errors, h: &HealthInfo) {
    e.required("health.provider_code", &h.provider_code);
    for (name, v) in [
        ("health.provider_code", &h.provider_code),
        ("health.contract_number", &h.contract_number),
        ("health.policy_number", &h.policy_number),
    ] {
        e.text(name, v);
    }
    if code_name(PAYMENT_MODALITIES, &h.payment_modality).is_none() {
        e.push(
            "health.payment_modality",
            "is not a code of the payment modalities (01 to 05)",
        );
    }
    if code_name(COVERAGES, &h.coverage).is_none() {
        e.push(
            "health.coverage",
            "is not a code of the coverages (01 to 17)",
        );
    }
    if let (Some(a), Some(b)) = (h.period_start, h.period_end) {
        if a > b {
            e.push("health.period_end", "is before the period's start");
        }
    }
}

/// A freight line's data (see `ubl::sector`).
fn check_transport(e: &mut Errors, i: usize, t: &CargoTransport) {
    for (name, v) in [
        ("rndc_filing", &t.rndc_filing),
        ("consignment", &t.consignment),
    ] {
        e.required(format_args!("lines[{i}].transport.{name}"), v);
        e.text(format_args!("lines[{i}].transport.{name}"), v);
    }
    e.amount(
        format_args!("lines[{i}].transport.freight"),
        t.freight,
        true,
    );
    e.amount(
        format_args!("lines[{i}].transport.quantity"),
        t.quantity,
        false,
    );
    if !TRANSPORT_UNITS.contains(&t.unit_code.as_str()) {
        e.push(
            format_args!("lines[{i}].transport.unit_code"),
            "must be KGM (kilograms) or GLL (gallons)",
        );
    }
}

fn check_tax(e: &mut Errors, field: impl Display, t: &LineTax, withholding: bool) {
    e.text(format_args!("{field}.code"), &t.code);
    let is_withholding_code = matches!(t.code.as_str(), "05" | "06" | "07");
    if t.code.trim().is_empty() {
        e.push(format_args!("{field}.code"), "is required");
    } else if withholding && !is_withholding_code {
        e.push(
            format_args!("{field}.code"),
            "withholdings are 05, 06 or 07",
        );
    } else if !withholding && is_withholding_code {
        e.push(
            format_args!("{field}.code"),
            "05, 06 and 07 are withholdings, not taxes",
        );
    }
    match t.rate {
        TaxRate::Percent(p) => {
            if p.is_sign_negative() && !p.is_zero() || p > Decimal::ONE_HUNDRED {
                e.push(format_args!("{field}.percent"), "must be between 0 and 100");
            }
        }
        TaxRate::PerUnit(a) => e.amount(format_args!("{field}.per_unit_amount"), a, true),
    }
    if let Some(b) = t.taxable {
        e.amount(format_args!("{field}.taxable_amount"), b, true);
    }
    if let Some(a) = t.amount {
        e.amount(format_args!("{field}.tax_amount"), a, true);
    }
}

/// Every check except the totals; see [`validate_and_total`]. Each named
/// check below adds what it finds, in this order.
pub fn validate(
    doc: &Document,
    ctx: &IssuerContext,
    certificate: Option<CertificateValidity>,
) -> Vec<ValidationError> {
    let mut e = Errors(Vec::new());
    check_issuer(&mut e, ctx);
    check_resolution(&mut e, doc.kind, ctx);
    if let Some(c) = certificate {
        check_certificate(&mut e, ctx, c);
    }
    check_counterparty(&mut e, doc);
    check_header(&mut e, doc);
    check_payments(&mut e, doc, ctx.issue_naive_date());
    check_document_charges(&mut e, doc);
    check_sector_data(&mut e, doc);
    if doc.kind.needs_reference() {
        check_reference(&mut e, doc, ctx.issue_naive_date());
    }
    check_lines(&mut e, doc);
    e.0
}

/// The company, its software and the environment.
fn check_issuer(e: &mut Errors, ctx: &IssuerContext) {
    check_party(e, "company", &ctx.company, true, false);
    let sw = &ctx.software;
    e.required("software.id", &sw.id);
    e.text("software.id", &sw.id);
    e.required("software.pin", &sw.pin);
    if !digits(&sw.provider_nit) {
        e.push("software.provider_nit", "must be a NIT (digits only)");
    } else if nit_check_digit(&sw.provider_nit) != Some(sw.provider_check_digit) {
        e.push(
            "software.provider_check_digit",
            "does not match the provider NIT",
        );
    }
    if !matches!(ctx.environment, 1 | 2) {
        e.push("environment", "must be 1 (production) or 2 (testing)");
    }
}

/// The numbering resolution: valid on the issue date, the number in its
/// range, its technical key where the code needs one.
fn check_resolution(e: &mut Errors, kind: DocumentKind, ctx: &IssuerContext) {
    let res = &ctx.resolution;
    let issue_date = ctx.issue_naive_date();
    if kind.has_numbering_resolution() && !digits(&res.number) {
        e.push(
            "resolution.number",
            "must be the authority's resolution number (digits)",
        );
    }
    if !res.prefix.chars().all(|c| c.is_ascii_alphanumeric()) || res.prefix.len() > 4 {
        e.push("resolution.prefix", "must be up to 4 letters or digits");
    }
    if res.from > res.to {
        e.push("resolution.from", "range start is after its end");
    }
    if issue_date < res.valid_from {
        e.push(
            "resolution.valid_from",
            format!("the resolution is not valid yet on {issue_date}"),
        );
    }
    if issue_date > res.valid_to {
        e.push(
            "resolution.valid_to",
            format!("the resolution expired before {issue_date}"),
        );
    }
    if ctx.number < res.from || ctx.number > res.to {
        e.push(
            "number",
            format!(
                "{} is outside the range {}–{}",
                ctx.number, res.from, res.to
            ),
        );
    }
    if kind.code_key() == super::model::CodeKey::TechnicalKey {
        e.required("resolution.technical_key", &res.technical_key);
    }
}

/// The certificate is valid at the signing instant (= the issue instant).
fn check_certificate(e: &mut Errors, ctx: &IssuerContext, c: CertificateValidity) {
    let at = ctx.issue_instant.with_timezone(&Utc);
    if at < c.not_before {
        e.push(
            "certificate",
            format!("is not valid before {}", c.not_before),
        );
    } else if at > c.not_after {
        e.push("certificate", format!("expired on {}", c.not_after));
    }
}

/// The other party: the customer, or the vendor of a support document.
fn check_counterparty(e: &mut Errors, doc: &Document) {
    let kind = doc.kind;
    let who = if kind.issuer_is_buyer() {
        "supplier"
    } else {
        "customer"
    };
    let email_required = matches!(
        kind,
        DocumentKind::Invoice
            | DocumentKind::ExportInvoice
            | DocumentKind::ContingencyT03
            | DocumentKind::ContingencyT04
    );
    check_party(e, who, &doc.counterparty, false, email_required);
}

/// Currency, exchange rate, operation type, delivery terms, notes.
fn check_header(e: &mut Errors, doc: &Document) {
    if doc.currency.len() != 3 || !doc.currency.bytes().all(|b| b.is_ascii_uppercase()) {
        e.push("currency", "must be an ISO 4217 code such as COP");
    }
    if doc.currency != "COP" && doc.exchange_rate.is_none() {
        e.push(
            "exchange_rate",
            "is required for a foreign-currency document",
        );
    }
    if let Some(x) = &doc.exchange_rate {
        e.amount("exchange_rate.calculation_rate", x.rate, false);
        e.text("exchange_rate.source_currency", &x.source_currency);
        e.text("exchange_rate.target_currency", &x.target_currency);
    }
    if let Some(op) = &doc.operation_type {
        if op.is_empty()
            || op.len() > 4
            || !op.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        {
            e.push("operation_type", "is not an operation type code");
        }
    }
    e.opt_text("delivery_terms", doc.delivery_terms.as_deref());
    for (i, n) in doc.notes.iter().enumerate() {
        e.text(format_args!("notes[{i}]"), n);
    }
}

/// Payment form and means; a credit's due date.
fn check_payments(e: &mut Errors, doc: &Document, issue_date: NaiveDate) {
    for (i, p) in doc.payments.iter().enumerate() {
        if !matches!(p.form.as_str(), "1" | "2") {
            e.push(
                format_args!("payment_form[{i}].form"),
                "must be 1 (cash) or 2 (credit)",
            );
        }
        if p.method.is_empty() || !p.method.chars().all(|c| c.is_ascii_alphanumeric()) {
            e.push(
                format_args!("payment_form[{i}].method"),
                "is not a payment means code",
            );
        }
        if p.form == "2" {
            match p.due_date {
                None => e.push(
                    format_args!("payment_form[{i}].due_date"),
                    "is required for credit",
                ),
                Some(d) if d < issue_date => e.push(
                    format_args!("payment_form[{i}].due_date"),
                    "is before the issue date",
                ),
                _ => {}
            }
        }
    }
}

/// Document-level discounts and charges.
fn check_document_charges(e: &mut Errors, doc: &Document) {
    for (i, a) in doc.allowances_charges.iter().enumerate() {
        e.amount(
            format_args!("allowance_charges[{i}].amount"),
            a.amount,
            true,
        );
        e.text(format_args!("allowance_charges[{i}].reason"), &a.reason);
        e.opt_text(
            format_args!("allowance_charges[{i}].reason_code"),
            a.reason_code.as_deref(),
        );
    }
}

/// Health data, the point of sale, a contingency's paper reference.
fn check_sector_data(e: &mut Errors, doc: &Document) {
    if let Some(h) = &doc.health {
        check_health(e, h);
    }
    if let Some(p) = &doc.point_of_sale {
        for (name, v) in [
            ("point_of_sale.register_id", &p.register_id),
            ("point_of_sale.cashier_id", &p.cashier_id),
        ] {
            e.required(name, v);
            e.text(name, v);
        }
    }
    if let Some(r) = &doc.paper_reference {
        e.required("paper_reference.number", &r.number);
        e.text("paper_reference.number", &r.number);
    }
}

/// A note's reference to the original and its concept.
fn check_reference(e: &mut Errors, doc: &Document, issue_date: NaiveDate) {
    let kind = doc.kind;
    match &doc.billing_reference {
        None => e.push(
            "billing_reference",
            "a note must reference the original document",
        ),
        Some(r) => {
            e.required("billing_reference.number", &r.number);
            e.text("billing_reference.number", &r.number);
            e.required("billing_reference.code", &r.code);
            if !r.code.bytes().all(|b| b.is_ascii_hexdigit()) {
                e.push(
                    "billing_reference.code",
                    "must be the original document's code (hex)",
                );
            }
            if r.issue_date > issue_date {
                e.push(
                    "billing_reference.issue_date",
                    "is after the note's issue date",
                );
            }
        }
    }
    let allowed: &[&str] = match kind {
        DocumentKind::DebitNote => &["1", "2", "3", "4"],
        DocumentKind::SupportAdjustment => &["1", "2", "3"],
        _ => &["1", "2", "3", "4", "5", "6"],
    };
    match &doc.note_concept {
        None => e.push("note_concept", "is required for a note"),
        Some(c) => {
            if !allowed.contains(&c.code.as_str()) {
                e.push(
                    "note_concept.code",
                    format!("must be one of {}", allowed.join(", ")),
                );
            }
            e.text("note_concept.description", &c.description);
        }
    }
}

/// The lines: at least one, at most [`MAX_LINES`], each with its amounts,
/// taxes, withholdings, charges and cargo data.
fn check_lines(e: &mut Errors, doc: &Document) {
    if doc.lines.is_empty() {
        e.push("lines", "at least one line is required");
    }
    if doc.lines.len() > MAX_LINES {
        e.push("lines", format!("at most {MAX_LINES} lines"));
    }
    for (i, l) in doc.lines.iter().enumerate().take(MAX_LINES + 1) {
        // `lines[i].name`, formatted only if reported.
        macro_rules! f {
            ($($name:tt)*) => {
                format_args!("lines[{i}].{}", format_args!($($name)*))
            };
        }
        e.required(f!("description"), &l.description);
        e.text(f!("description"), &l.description);
        e.amount(f!("quantity"), l.quantity, false);
        e.amount(f!("price_amount"), l.unit_price, true);
        if l.unit_code.trim().is_empty() {
            e.push(f!("unit_measure"), "is required");
        }
        e.text(f!("unit_measure"), &l.unit_code);
        e.opt_text(f!("code"), l.item_code.as_deref());
        if let Some(x) = l.line_extension {
            e.amount(f!("line_extension_amount"), x, true);
        }
        for (j, t) in l.taxes.iter().enumerate() {
            check_tax(e, f!("tax_totals[{j}]"), t, false);
        }
        for (j, t) in l.withholdings.iter().enumerate() {
            check_tax(e, f!("withholdings[{j}]"), t, true);
        }
        for (j, a) in l.allowances_charges.iter().enumerate() {
            e.amount(f!("allowance_charges[{j}].amount"), a.amount, true);
            e.text(f!("allowance_charges[{j}].reason"), &a.reason);
        }
        if let Some(t) = &l.transport {
            check_transport(e, i, t);
        }
    }
}

/// All checks, then the totals: computed, compared with what the caller
/// declared (0.01 tolerance), and required non-negative. Returns the totals
/// when everything holds.
pub fn validate_and_total(
    doc: &Document,
    ctx: &IssuerContext,
    certificate: Option<CertificateValidity>,
) -> Result<Totals, Vec<ValidationError>> {
    let mut errors = validate(doc, ctx, certificate);
    if !errors.is_empty() {
        return Err(errors);
    }
    match totals::compute(doc) {
        Err(err) => errors.push(ValidationError {
            field: err.field().to_string(),
            message: err.to_string(),
        }),
        Ok(t) => {
            if let Err(err) = totals::check_declared(doc, &t) {
                errors.push(ValidationError {
                    field: err.field().to_string(),
                    message: err.to_string(),
                });
            }
            for (i, lt) in t.lines.iter().enumerate() {
                if lt.line_extension.is_sign_negative() && !lt.line_extension.is_zero() {
                    errors.push(ValidationError {
                        field: format!("lines[{i}].line_extension_amount"),
                        message: "discounts exceed the line amount".into(),
                    });
                }
            }
            if t.payable.is_sign_negative() && !t.payable.is_zero() {
                let before = t.before_prepaid();
                if t.prepaid.is_zero() || (before.is_sign_negative() && !before.is_zero()) {
                    errors.push(ValidationError {
                        field: "legal_monetary_totals.payable_amount".into(),
                        message: "discounts exceed the document amount".into(),
                    });
                } else {
                    errors.push(ValidationError {
                        field: "health.copay".into(),
                        message: format!("exceeds the amount to pay ({})", before.round_dp(2)),
                    });
                }
            }
            if errors.is_empty() {
                return Ok(t);
            }
        }
    }
    Err(errors)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::model::{Line, NoteConcept};
    use crate::engine::ubl::tests::{context, date, sample};
    use rust_decimal_macros::dec;

    fn fields(errors: &[ValidationError]) -> Vec<&str> {
        errors.iter().map(|e| e.field.as_str()).collect()
    }

    #[test]
    fn every_sample_is_valid() {
        for kind in DocumentKind::ALL {
            let errs = validate(&sample(kind), &context(kind), None);
            assert!(errs.is_empty(), "{kind:?}: {errs:?}");
            assert!(validate_and_total(&sample(kind), &context(kind), None).is_ok());
        }
    }

    #[test]
    fn resolution_range_and_validity() {
        let doc = sample(DocumentKind::Invoice);
        let mut ctx = context(DocumentKind::Invoice);
        ctx.number = 995000001;
        ctx.resolution.valid_to = date("2025-03-13");
        let errs = validate(&doc, &ctx, None);
        assert_eq!(fields(&errs), ["resolution.valid_to", "number"]);
        ctx.number = 990000000;
        ctx.resolution.valid_to = date("2025-03-14");
        ctx.resolution.valid_from = date("2025-03-15");
        assert_eq!(
            fields(&validate(&doc, &ctx, None)),
            ["resolution.valid_from"]
        );
    }

    #[test]
    fn certificate_window_is_checked_at_the_issue_instant() {
        let doc = sample(DocumentKind::Invoice);
        let ctx = context(DocumentKind::Invoice);
        let at = ctx.issue_instant.with_timezone(&Utc);
        let ok = CertificateValidity {
            not_before: at - chrono::Duration::days(1),
            not_after: at + chrono::Duration::days(1),
        };
        assert!(validate(&doc, &ctx, Some(ok)).is_empty());
        let expired = CertificateValidity {
            not_before: at - chrono::Duration::days(2),
            not_after: at - chrono::Duration::seconds(1),
        };
        assert_eq!(
            fields(&validate(&doc, &ctx, Some(expired))),
            ["certificate"]
        );
    }

    #[test]
    fn customer_and_company_are_complete() {
        let mut doc = sample(DocumentKind::Invoice);
        doc.counterparty.email = None;
        doc.counterparty.name = " ".into();
        doc.counterparty.check_digit = Some(5);
        let mut ctx = context(DocumentKind::Invoice);
        std::sync::Arc::make_mut(&mut ctx.company).address = None;
        ctx.software.provider_check_digit = 7;
        let errs = validate(&doc, &ctx, None);
        assert_eq!(
            fields(&errs),
            [
                "company.address",
                "software.provider_check_digit",
                "customer.name",
                "customer.check_digit",
                "customer.email"
            ]
        );
    }

    #[test]
    fn nit_check_digit_is_computed_when_absent() {
        let mut doc = sample(DocumentKind::Invoice);
        doc.counterparty.check_digit = None;
        assert!(validate(&doc, &context(DocumentKind::Invoice), None).is_empty());
        assert_eq!(doc.counterparty.effective_check_digit(), Some(4));
    }

    /// Field names of nested paths (built lazily, only when reported).
    #[test]
    fn nested_field_names() {
        let mut doc = sample(DocumentKind::Invoice);
        let mut ctx = context(DocumentKind::Invoice);
        if let Some(a) = std::sync::Arc::make_mut(&mut ctx.company).address.as_mut() {
            a.country_name = "x\u{1}".into();
        }
        doc.counterparty.trade_name = Some("\u{2}".into());
        doc.payments = vec![crate::engine::model::Payment {
            form: "3".into(),
            method: "10".into(),
            due_date: None,
        }];
        doc.lines[0].taxes = vec![LineTax::percent("01", dec!(101))];
        doc.lines[0].allowances_charges = vec![crate::engine::model::AllowanceCharge {
            is_charge: false,
            reason_code: None,
            reason: "\u{3}".into(),
            amount: dec!(-1),
        }];
        let errs = validate(&doc, &ctx, None);
        assert_eq!(
            fields(&errs),
            [
                "company.address.country_name",
                "customer.trade_name",
                "payment_form[0].form",
                "lines[0].tax_totals[0].percent",
                "lines[0].allowance_charges[0].amount",
                "lines[0].allowance_charges[0].reason"
            ]
        );
    }

    #[test]
    fn lines_notes_and_text() {
        let mut doc = sample(DocumentKind::CreditNote);
        doc.billing_reference = None;
        doc.note_concept = Some(NoteConcept {
            code: "9".into(),
            description: "bad \u{1} char".into(),
        });
        doc.lines[0].description = "x\u{FFFF}".into();
        doc.lines[1].quantity = dec!(-1);
        doc.lines[2].withholdings = vec![LineTax::percent("01", dec!(19))];
        let errs = validate(&doc, &context(DocumentKind::CreditNote), None);
        assert_eq!(
            fields(&errs),
            [
                "billing_reference",
                "note_concept.code",
                "note_concept.description",
                "lines[0].description",
                "lines[1].quantity",
                "lines[2].withholdings[0].code"
            ]
        );
        doc.lines = vec![Line::simple("a", dec!(1), dec!(1)); MAX_LINES + 1];
        doc.lines.push(Line::simple("", dec!(1), dec!(1)));
        let errs = validate(
            &sample(DocumentKind::Invoice),
            &context(DocumentKind::Invoice),
            None,
        );
        assert!(errs.is_empty());
        let mut big = sample(DocumentKind::Invoice);
        big.lines = doc.lines.clone();
        assert_eq!(
            fields(&validate(&big, &context(DocumentKind::Invoice), None)),
            ["lines"]
        );
        big.lines.clear();
        assert_eq!(
            fields(&validate(&big, &context(DocumentKind::Invoice), None)),
            ["lines"]
        );
    }

    #[test]
    fn declared_totals_mismatch_is_a_validation_error() {
        let mut doc = sample(DocumentKind::Invoice);
        doc.declared = Some(crate::engine::model::DeclaredTotals {
            payable: Some(dec!(1)),
            ..Default::default()
        });
        let errs = validate_and_total(&doc, &context(DocumentKind::Invoice), None).unwrap_err();
        assert_eq!(fields(&errs), ["legal_monetary_totals.payable_amount"]);
    }

    #[test]
    fn max_amount_is_ten_to_the_fifteenth() {
        assert_eq!(MAX_AMOUNT, dec!(1000000000000000));
    }
}
