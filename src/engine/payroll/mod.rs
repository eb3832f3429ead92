//! Electronic payroll (spec 2.12): `NominaIndividual` (TipoXML 102) and
//! `NominaIndividualDeAjuste` (103). Pure, like the rest of the engine:
//!
//! * [`model`]: the payroll document in English names.
//! * [`totals`]: the arithmetic and rules of spec 4.5.
//! * [`xml`]: the XML of the authority's 1.0.6 schemas.
//! * [`issue`]: validate → totals → CUNE → XML → XAdES → ZIP, with the
//!   number and instant in an [`IssuerContext`] (the payroll software's id
//!   and PIN, the company's `NOM` resolution).

pub mod model;
pub mod totals;
pub mod xml;

use chrono::{DateTime, Datelike, FixedOffset};
use rust_decimal::Decimal;

use self::model::{PayrollDocument, PayrollKind};
use self::totals::PayrollTotals;
use super::codes::{self, CodeScheme, PayrollCodeInput};
use super::model::IssuerContext;
use super::pipeline::{EngineError, IssuedDocument};
use super::signing_key::SigningKey;
use super::totals::Totals;
use super::xades;

/// `FechaGen` and `HoraGen` of a document: the caller's when given,
/// otherwise the issue instant in Colombia.
pub fn generation(doc: &PayrollDocument, ctx: &IssuerContext) -> (String, String) {
    let date = doc
        .generation_date
        .map(|d| d.format("%Y-%m-%d").to_string())
        .unwrap_or_else(|| ctx.issue_date().to_string());
    let time = doc
        .generation_time
        .clone()
        .unwrap_or_else(|| ctx.issue_time().to_string());
    (date, time)
}

/// The CUNE of exactly what the XML says (protocol.md §1.6): an `Eliminar`
/// codes zero amounts and employee `0`.
pub fn cune(
    doc: &PayrollDocument,
    ctx: &IssuerContext,
    totals: &PayrollTotals,
    gen_date: &str,
    gen_time: &str,
) -> String {
    let number = ctx.document_number();
    let delete = doc.kind == PayrollKind::Delete;
    let zero = Decimal::ZERO;
    codes::payroll_code(&PayrollCodeInput {
        number: &number,
        gen_date,
        gen_time,
        earnings: if delete { zero } else { totals.earnings },
        deductions: if delete { zero } else { totals.deductions },
        total: if delete { zero } else { totals.net },
        employer_nit: &ctx.company.id_number,
        employee_doc: if delete { "0" } else { &doc.employee.id_number },
        xml_type: doc.kind.xml_type(),
        pin: &ctx.software.pin,
        environment: ctx.environment,
    })
}

/// What the printed QR code of a payroll document carries (payroll annex
/// §13.1): the values the CUNE is made of, as written in the XML.
#[derive(Debug, Clone, Copy)]
pub struct PrintedQr<'a> {
    pub number: &'a str,
    pub gen_date: &'a str,
    pub gen_time: &'a str,
    pub employer_nit: &'a str,
    /// `0` for an `Eliminar`.
    pub employee_doc: &'a str,
    /// Amounts as written (`0.00` for an `Eliminar`).
    pub earnings: &'a str,
    pub deductions: &'a str,
    pub net: &'a str,
    pub cune: &'a str,
    /// `TipoNota` of an adjustment (1 replace, 2 delete).
    pub note_type: Option<&'a str>,
    pub url: &'a str,
}

/// The text of the printed QR code (payroll annex §13.1): one
/// `Name: value` per line, ending with the verification URL. It belongs on
/// the graphical representation only: the XML's `CodigoQR` holds the URL
/// alone (rules NIE021, NIAE021, NIAE234).
pub fn printed_qr_text(q: &PrintedQr<'_>) -> String {
    let mut lines = vec![
        format!("NumNIE: {}", q.number),
        format!("FecNIE: {}", q.gen_date),
        format!("HorNIE: {}", q.gen_time),
        format!("NitNIE: {}", q.employer_nit),
        format!("DocEmp: {}", q.employee_doc),
        format!("ValDev: {}", q.earnings),
        format!("ValDed: {}", q.deductions),
        format!("ValTol: {}", q.net),
        format!("CUNE: {}", q.cune),
    ];
    if let Some(t) = q.note_type {
        lines.push(format!("TipoNota: {t}"));
    }
    lines.push(format!("QRCode: {}", q.url));
    lines.join("\n")
}

/// Payroll file names (protocol.md §5.1): `nie`/`niae` + NIT (10 digits) +
/// year (2) + consecutive (8 hex); the ZIP `z` + the same. No provider code.
pub fn file_names(kind: PayrollKind, nit: &str, year: i32, consecutive: u32) -> (String, String) {
    let digits: String = nit.chars().filter(|c| c.is_ascii_digit()).collect();
    let tail = format!("{digits:0>10}{:02}{consecutive:08x}", year.rem_euclid(100));
    let prefix = if kind == PayrollKind::Individual {
        "nie"
    } else {
        "niae"
    };
    (format!("{prefix}{tail}.xml"), format!("z{tail}.zip"))
}

/// The engine's `Totals` carrying a payroll's: the record's `total` is the
/// payable amount, here the `comprobante`.
fn as_totals(t: &PayrollTotals) -> Totals {
    Totals {
        lines: Vec::new(),
        taxes: Vec::new(),
        withholdings: Vec::new(),
        line_extension: t.earnings,
        tax_exclusive: t.earnings,
        tax_inclusive: t.earnings,
        allowance_total: t.deductions,
        charge_total: Decimal::ZERO,
        tax_total: Decimal::ZERO,
        withholding_total: t.deductions,
        prepaid: Decimal::ZERO,
        payable: t.net,
    }
}

/// Validates, totals, codes, builds, signs and zips a payroll document.
pub fn issue(
    doc: &PayrollDocument,
    ctx: &IssuerContext,
    key: &SigningKey,
) -> Result<IssuedDocument, EngineError> {
    let totals = totals::validate_and_total(doc).map_err(EngineError::Validation)?;
    let (gen_date, gen_time) = generation(doc, ctx);
    let code = cune(doc, ctx, &totals, &gen_date, &gen_time);
    let url = codes::qr_url(ctx.environment, &code);
    let number = ctx.document_number();
    let ssc = codes::software_security_code(&ctx.software.id, &ctx.software.pin, &number);
    let unsigned = xml::build(&xml::PayrollBuildInput {
        doc,
        ctx,
        totals: &totals,
        cune: &code,
        qr_url: &url,
        software_security_code: &ssc,
        gen_date: &gen_date,
        gen_time: &gen_time,
    })
    .map_err(|e| EngineError::Build(e.into()))?;
    let instant: DateTime<FixedOffset> = ctx.colombia_instant();
    let signed = xades::sign(&unsigned, key, instant)?;
    let consecutive = ctx
        .file_consecutive
        .unwrap_or(u32::try_from(ctx.number % (u64::from(u32::MAX) + 1)).unwrap_or(0));
    let (xml_name, zip_name) = file_names(
        doc.kind,
        &ctx.company.id_number,
        instant.year(),
        consecutive,
    );
    Ok(IssuedDocument {
        xml: signed,
        code,
        scheme: CodeScheme::Cune,
        qr_url: url,
        number,
        signed_at: instant,
        attached_name: xml_name.replacen("ni", "ad", 1),
        zip_name,
        xml_name,
        totals: as_totals(&totals),
    })
}

#[cfg(test)]
pub(crate) mod tests;
