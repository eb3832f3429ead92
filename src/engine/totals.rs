//! Line and document totals, as the authority computes them.
//!
//! Every line amount and every tax amount is rounded half-up (midpoint away
//! from zero) to 2 decimals, then summed. Taxes are grouped by tax code (one
//! `cac:TaxTotal` per scheme) and rate (one `cac:TaxSubtotal` per rate).
//! Withholdings (05 ReteIVA, 06 ReteRenta, 07 ReteICA) are grouped the same
//! way but kept apart (`cac:WithholdingTaxTotal`) and do not change the
//! payable amount:
//!
//! ```text
//! payable = line extension + taxes − document allowances + document charges
//! ```
//!
//! All arithmetic is checked: an overflow is an error, never a panic.

use std::collections::BTreeMap;
use std::fmt::Display;

use rust_decimal::{Decimal, RoundingStrategy};
use thiserror::Error;

use super::model::{AllowanceCharge, Document, Line, LineTax, RootElement, TaxRate};

/// Tolerance of [`check_declared`].
pub const TOLERANCE: Decimal = Decimal::from_parts(1, 0, 0, false, 2);

/// Tax code of IVA, the base of ReteIVA.
pub const TAX_IVA: &str = "01";
pub const TAX_ICA: &str = "03";
pub const TAX_INC: &str = "04";
pub const WITHHOLDING_IVA: &str = "05";

#[derive(Debug, Error, PartialEq, Eq)]
pub enum TotalsError {
    #[error("amount overflow while computing {0}")]
    Overflow(String),
    #[error("{field}: declared {declared} but computed {computed}")]
    Mismatch {
        field: String,
        declared: Decimal,
        computed: Decimal,
    },
}

impl TotalsError {
    /// The field the error is about (`legal_monetary_totals.payable_amount`...).
    pub fn field(&self) -> &str {
        match self {
            TotalsError::Overflow(f) => f,
            TotalsError::Mismatch { field, .. } => field,
        }
    }
}

/// Round half-up to 2 decimals.
pub fn round2(d: Decimal) -> Decimal {
    d.round_dp_with_strategy(2, RoundingStrategy::MidpointAwayFromZero)
}

/// An amount to the cent as answers and lists write it, rounded half-up,
/// always with both decimals (`19000.00`).
pub fn cents(d: Decimal) -> String {
    let mut r = round2(d);
    r.rescale(2);
    r.to_string()
}

/// Name of a tax scheme by code (protocol.md §7.6).
pub fn tax_name(code: &str) -> &'static str {
    match code {
        "01" => "IVA",
        "02" => "IC",
        "03" => "ICA",
        "04" => "INC",
        "05" => "ReteIVA",
        "06" => "ReteRenta",
        "07" => "ReteICA",
        "20" => "FtoHorticultura",
        "21" => "Timbre",
        "22" => "INC Bolsas",
        "23" => "INCarbono",
        "24" => "INCombustibles",
        "25" => "Sobretasa Combustibles",
        "26" => "Sordicom",
        "32" => "ICL",
        "34" => "IBUA",
        _ => "Otros tributos",
    }
}

/// A tax or withholding computed on one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ComputedTax {
    pub code: String,
    pub rate: TaxRate,
    /// Taxable base (0.00 for per-unit taxes).
    pub taxable: Decimal,
    pub amount: Decimal,
    /// Quantity the per-unit amount applies to.
    pub quantity: Decimal,
    pub unit_code: String,
}

impl ComputedTax {
    /// Zero-rate ICA or INC with a zero amount: omitted from the XML
    /// (production rule 2, warnings FAX05/FAX14).
    pub fn is_omitted_empty(&self) -> bool {
        (self.code == TAX_ICA || self.code == TAX_INC)
            && self.amount.is_zero()
            && matches!(self.rate, TaxRate::Percent(p) if p.is_zero())
    }
}

/// Totals of one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineTotals {
    /// Quantity × price, rounded, − discounts + charges.
    pub line_extension: Decimal,
    pub allowances: Decimal,
    pub charges: Decimal,
    pub taxes: Vec<ComputedTax>,
    pub withholdings: Vec<ComputedTax>,
}

impl LineTotals {
    /// Sum of the line's tax amounts (saturating; the document totals are
    /// checked).
    pub fn tax_amount(&self) -> Decimal {
        self.taxes
            .iter()
            .fold(Decimal::ZERO, |acc, t| acc.saturating_add(t.amount))
    }
}

/// One rate of one tax scheme (`cac:TaxSubtotal`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaxSubtotal {
    pub rate: TaxRate,
    pub taxable: Decimal,
    pub amount: Decimal,
    /// Sum of quantities (per-unit taxes only).
    pub quantity: Decimal,
    pub unit_code: String,
}

/// One tax scheme (`cac:TaxTotal` / `cac:WithholdingTaxTotal`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaxGroup {
    pub code: String,
    pub amount: Decimal,
    pub subtotals: Vec<TaxSubtotal>,
}

/// Everything the XML and the code need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Totals {
    pub lines: Vec<LineTotals>,
    /// Taxes by code (ascending), empty ICA/INC omitted.
    pub taxes: Vec<TaxGroup>,
    /// Withholdings by code (ascending).
    pub withholdings: Vec<TaxGroup>,
    /// Σ line extensions.
    pub line_extension: Decimal,
    /// Σ line extensions of lines that carry a percentage tax.
    pub tax_exclusive: Decimal,
    /// line extension + taxes.
    pub tax_inclusive: Decimal,
    /// Document-level discounts.
    pub allowance_total: Decimal,
    /// Document-level charges.
    pub charge_total: Decimal,
    pub tax_total: Decimal,
    pub withholding_total: Decimal,
    /// Paid before the invoice: a health invoice's copay
    /// (`cac:PrepaidPayment`, `cbc:PrepaidAmount`); zero otherwise.
    pub prepaid: Decimal,
    /// tax inclusive − allowances + charges − prepaid (`cbc:PayableAmount`).
    pub payable: Decimal,
}

impl Totals {
    /// Total amount of one tax code (0 when absent).
    pub fn tax_amount(&self, code: &str) -> Decimal {
        self.taxes
            .iter()
            .find(|g| g.code == code)
            .map(|g| g.amount)
            .unwrap_or(Decimal::ZERO)
    }

    /// What the document is worth before anything paid in advance: tax
    /// inclusive − allowances + charges (the `total` an invoice reports,
    /// decisions.md "Spanish-named totals").
    pub fn before_prepaid(&self) -> Decimal {
        self.payable.saturating_add(self.prepaid)
    }

    /// Payable minus withholdings (the `total` a support document reports,
    /// spec 2.10).
    pub fn net_of_withholdings(&self) -> Decimal {
        self.payable.saturating_sub(self.withholding_total)
    }
}

fn add(a: Decimal, b: Decimal, what: &(impl Display + ?Sized)) -> Result<Decimal, TotalsError> {
    a.checked_add(b)
        .ok_or_else(|| TotalsError::Overflow(what.to_string()))
}

fn sub(a: Decimal, b: Decimal, what: &(impl Display + ?Sized)) -> Result<Decimal, TotalsError> {
    a.checked_sub(b)
        .ok_or_else(|| TotalsError::Overflow(what.to_string()))
}

fn mul(a: Decimal, b: Decimal, what: &(impl Display + ?Sized)) -> Result<Decimal, TotalsError> {
    a.checked_mul(b)
        .ok_or_else(|| TotalsError::Overflow(what.to_string()))
}

fn percent_of(
    base: Decimal,
    percent: Decimal,
    what: &(impl Display + ?Sized),
) -> Result<Decimal, TotalsError> {
    let product = mul(base, percent, what)?;
    product
        .checked_div(Decimal::ONE_HUNDRED)
        .map(round2)
        .ok_or_else(|| TotalsError::Overflow(what.to_string()))
}

fn sum_allowances(
    items: &[AllowanceCharge],
    charges: bool,
    what: &(impl Display + ?Sized),
) -> Result<Decimal, TotalsError> {
    items
        .iter()
        .filter(|a| a.is_charge == charges)
        .try_fold(Decimal::ZERO, |acc, a| add(acc, round2(a.amount), what))
}

fn compute_tax(
    tax: &LineTax,
    line: &Line,
    default_base: Decimal,
    what: &(impl Display + ?Sized),
) -> Result<ComputedTax, TotalsError> {
    let (taxable, amount) = match tax.rate {
        TaxRate::Percent(p) => {
            let base = round2(tax.taxable.unwrap_or(default_base));
            (base, percent_of(base, p, what)?)
        }
        TaxRate::PerUnit(a) => (Decimal::ZERO, round2(mul(line.quantity, a, what)?)),
    };
    Ok(ComputedTax {
        code: tax.code.clone(),
        rate: tax.rate,
        taxable,
        amount,
        quantity: line.quantity,
        unit_code: line.unit_code.clone(),
    })
}

/// Totals of one line; `index` only names the line in errors.
pub fn line_totals(line: &Line, index: usize) -> Result<LineTotals, TotalsError> {
    // Named only in an error.
    let what = &format_args!("lines[{index}]");
    let gross = round2(mul(line.quantity, line.unit_price, &what)?);
    let allowances = sum_allowances(&line.allowances_charges, false, &what)?;
    let charges = sum_allowances(&line.allowances_charges, true, &what)?;
    let line_extension = add(sub(gross, allowances, &what)?, charges, &what)?;
    let taxes = line
        .taxes
        .iter()
        .map(|t| compute_tax(t, line, line_extension, &what))
        .collect::<Result<Vec<_>, _>>()?;
    let iva = taxes
        .iter()
        .filter(|t| t.code == TAX_IVA)
        .try_fold(Decimal::ZERO, |acc, t| add(acc, t.amount, &what))?;
    let withholdings = line
        .withholdings
        .iter()
        .map(|w| {
            let base = if w.code == WITHHOLDING_IVA {
                iva
            } else {
                line_extension
            };
            compute_tax(w, line, base, &what)
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(LineTotals {
        line_extension,
        allowances,
        charges,
        taxes,
        withholdings,
    })
}

/// Key of a subtotal: the rate kind and value, normalized so `19` and
/// `19.00` group together.
fn rate_key(rate: TaxRate) -> (u8, Decimal) {
    match rate {
        TaxRate::Percent(p) => (0, p.normalize()),
        TaxRate::PerUnit(a) => (1, a.normalize()),
    }
}

fn group<'a>(
    items: impl Iterator<Item = &'a ComputedTax>,
    what: &(impl Display + ?Sized),
) -> Result<Vec<TaxGroup>, TotalsError> {
    // Keyed by the borrowed code: it is copied once a group, below.
    let mut map: BTreeMap<&str, BTreeMap<(u8, Decimal), TaxSubtotal>> = BTreeMap::new();
    for t in items {
        if t.is_omitted_empty() {
            continue;
        }
        let sub = map
            .entry(t.code.as_str())
            .or_default()
            .entry(rate_key(t.rate))
            .or_insert_with(|| TaxSubtotal {
                rate: t.rate,
                taxable: Decimal::ZERO,
                amount: Decimal::ZERO,
                quantity: Decimal::ZERO,
                unit_code: t.unit_code.clone(),
            });
        sub.taxable = add(sub.taxable, t.taxable, what)?;
        sub.amount = add(sub.amount, t.amount, what)?;
        sub.quantity = add(sub.quantity, t.quantity, what)?;
    }
    map.into_iter()
        .map(|(code, subs)| {
            let subtotals: Vec<TaxSubtotal> = subs.into_values().collect();
            let amount = subtotals
                .iter()
                .try_fold(Decimal::ZERO, |acc, s| add(acc, s.amount, what))?;
            Ok(TaxGroup {
                code: code.to_string(),
                amount,
                subtotals,
            })
        })
        .collect()
}

/// Computes every total of a document.
pub fn compute(doc: &Document) -> Result<Totals, TotalsError> {
    let lines = doc
        .lines
        .iter()
        .enumerate()
        .map(|(i, l)| line_totals(l, i))
        .collect::<Result<Vec<_>, _>>()?;
    let what = "legal_monetary_totals";
    let mut line_extension = Decimal::ZERO;
    let mut tax_exclusive = Decimal::ZERO;
    for l in &lines {
        line_extension = add(line_extension, l.line_extension, what)?;
        if l.taxes
            .iter()
            .any(|t| matches!(t.rate, TaxRate::Percent(_)))
        {
            tax_exclusive = add(tax_exclusive, l.line_extension, what)?;
        }
    }
    let taxes = group(lines.iter().flat_map(|l| l.taxes.iter()), "tax_totals")?;
    let withholdings = group(
        lines.iter().flat_map(|l| l.withholdings.iter()),
        "withholding_tax_totals",
    )?;
    let tax_total = taxes
        .iter()
        .try_fold(Decimal::ZERO, |acc, g| add(acc, g.amount, what))?;
    let withholding_total = withholdings
        .iter()
        .try_fold(Decimal::ZERO, |acc, g| add(acc, g.amount, what))?;
    let tax_inclusive = add(line_extension, tax_total, what)?;
    let allowance_total = sum_allowances(&doc.allowances_charges, false, what)?;
    let charge_total = sum_allowances(&doc.allowances_charges, true, what)?;
    let prepaid = prepaid_of(doc);
    let payable = sub(
        add(
            sub(tax_inclusive, allowance_total, what)?,
            charge_total,
            what,
        )?,
        prepaid,
        what,
    )?;
    Ok(Totals {
        lines,
        taxes,
        withholdings,
        line_extension,
        tax_exclusive,
        tax_inclusive,
        allowance_total,
        charge_total,
        tax_total,
        withholding_total,
        prepaid,
        payable,
    })
}

/// What was paid before the document: the user's copay of a health-sector
/// invoice (the sector's `SS-CUFE` operation, "servicios + aporte del
/// usuario", whose payable amount the copay reduces). Notes adjust an
/// invoice and carry none.
fn prepaid_of(doc: &Document) -> Decimal {
    match (&doc.health, doc.kind.root()) {
        (Some(h), RootElement::Invoice) => h
            .copay
            .filter(|c| c.is_sign_positive() && !c.is_zero())
            .map(|c| c.round_dp_with_strategy(2, RoundingStrategy::MidpointAwayFromZero))
            .unwrap_or(Decimal::ZERO),
        _ => Decimal::ZERO,
    }
}

/// The field's name is formatted only for a mismatch: a document that
/// agrees (nearly all) formats none.
fn compare(
    field: impl Display,
    declared: Option<Decimal>,
    computed: Decimal,
) -> Result<(), TotalsError> {
    match declared {
        Some(d)
            if d.checked_sub(computed)
                .is_none_or(|diff| diff.abs() > TOLERANCE) =>
        {
            Err(TotalsError::Mismatch {
                field: field.to_string(),
                declared: d,
                computed,
            })
        }
        _ => Ok(()),
    }
}

/// `prefix` then `name`, written when displayed.
struct Prefixed(&'static str, &'static str);

impl Display for Prefixed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)?;
        f.write_str(self.1)
    }
}

/// Compares the totals the caller sent (document and lines) with the computed
/// ones, with a 0.01 tolerance. The error names the first field that
/// disagrees, with the API's names (`legal_monetary_totals.payable_amount`,
/// `lines[0].line_extension_amount`, `lines[0].tax_totals[1].tax_amount`).
pub fn check_declared(doc: &Document, totals: &Totals) -> Result<(), TotalsError> {
    for (i, (line, lt)) in doc.lines.iter().zip(&totals.lines).enumerate() {
        compare(
            format_args!("lines[{i}].line_extension_amount"),
            line.line_extension,
            lt.line_extension,
        )?;
        for (j, (tax, ct)) in line.taxes.iter().zip(&lt.taxes).enumerate() {
            compare(
                format_args!("lines[{i}].tax_totals[{j}].tax_amount"),
                tax.amount,
                ct.amount,
            )?;
        }
        for (j, (tax, ct)) in line.withholdings.iter().zip(&lt.withholdings).enumerate() {
            compare(
                format_args!("lines[{i}].withholdings[{j}].tax_amount"),
                tax.amount,
                ct.amount,
            )?;
        }
    }
    if let Some(d) = &doc.declared {
        let f = |name: &'static str| Prefixed("legal_monetary_totals.", name);
        compare(
            f("line_extension_amount"),
            d.line_extension,
            totals.line_extension,
        )?;
        compare(
            f("tax_exclusive_amount"),
            d.tax_exclusive,
            totals.tax_exclusive,
        )?;
        compare(
            f("tax_inclusive_amount"),
            d.tax_inclusive,
            totals.tax_inclusive,
        )?;
        compare(f("payable_amount"), d.payable, totals.payable)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::model::{DeclaredTotals, DocumentKind, Party};
    use rust_decimal_macros::dec;

    fn doc(lines: Vec<Line>) -> Document {
        Document::new(DocumentKind::Invoice, Party::final_consumer(), lines)
    }

    fn line(q: Decimal, p: Decimal, taxes: Vec<LineTax>) -> Line {
        let mut l = Line::simple("x", q, p);
        l.taxes = taxes;
        l
    }

    #[test]
    fn iva_19_rounds_half_up_per_line() {
        // 3 × 33.335 = 100.005 → 100.01; 19 % of 100.01 = 19.0019 → 19.00
        // 1 × 12.50 ; 19 % = 2.375 → 2.38 (half-up, not banker's 2.38/2.37)
        let d = doc(vec![
            line(
                dec!(3),
                dec!(33.335),
                vec![LineTax::percent("01", dec!(19))],
            ),
            line(dec!(1), dec!(12.50), vec![LineTax::percent("01", dec!(19))]),
        ]);
        let t = compute(&d).unwrap();
        assert_eq!(t.lines[0].line_extension, dec!(100.01));
        assert_eq!(t.lines[0].taxes[0].amount, dec!(19.00));
        assert_eq!(t.lines[1].taxes[0].amount, dec!(2.38));
        assert_eq!(t.line_extension, dec!(112.51));
        assert_eq!(t.tax_total, dec!(21.38));
        assert_eq!(t.payable, dec!(133.89));
        assert_eq!(t.taxes.len(), 1);
        assert_eq!(t.taxes[0].subtotals.len(), 1);
        assert_eq!(t.taxes[0].subtotals[0].taxable, dec!(112.51));
    }

    #[test]
    fn iva_rates_give_one_subtotal_each_and_inc_ica_bags_group_by_code() {
        let mut bag = line(dec!(3), dec!(1000), vec![LineTax::percent("01", dec!(19))]);
        bag.taxes.push(LineTax::per_unit("22", dec!(66)));
        let d = doc(vec![
            line(
                dec!(2),
                dec!(50000),
                vec![
                    LineTax::percent("01", dec!(19)),
                    LineTax::percent("04", dec!(8)),
                ],
            ),
            line(dec!(1), dec!(10000), vec![LineTax::percent("01", dec!(5))]),
            line(
                dec!(1),
                dec!(200000),
                vec![LineTax::percent("03", dec!(0.966))],
            ),
            bag,
        ]);
        let t = compute(&d).unwrap();
        // IVA: 19 % of 100000 + 3000 = 19570; 5 % of 10000 = 500
        let iva = &t.taxes[0];
        assert_eq!(iva.code, "01");
        assert_eq!(iva.subtotals.len(), 2);
        assert_eq!(iva.amount, dec!(20070.00));
        // ICA 0.966 % of 200000 = 1932
        assert_eq!(t.tax_amount("03"), dec!(1932.00));
        // INC 8 % of 100000
        assert_eq!(t.tax_amount("04"), dec!(8000.00));
        // bags: 3 × 66
        assert_eq!(t.tax_amount("22"), dec!(198.00));
        let bags = &t.taxes[3].subtotals[0];
        assert_eq!(bags.quantity, dec!(3));
        assert_eq!(bags.taxable, dec!(0));
        assert_eq!(t.line_extension, dec!(313000));
        assert_eq!(t.tax_exclusive, dec!(313000));
        assert_eq!(t.tax_total, dec!(30200.00));
        assert_eq!(t.tax_inclusive, dec!(343200.00));
        assert_eq!(t.payable, dec!(343200.00));
    }

    #[test]
    fn withholdings_are_apart_and_reteiva_is_on_the_vat() {
        let mut l = line(
            dec!(1),
            dec!(1000000),
            vec![LineTax::percent("01", dec!(19))],
        );
        l.withholdings = vec![
            LineTax::percent("06", dec!(2.5)),
            LineTax::percent("05", dec!(15)),
            LineTax::percent("07", dec!(0.414)),
        ];
        let t = compute(&doc(vec![l])).unwrap();
        assert_eq!(t.payable, dec!(1190000.00));
        // ReteIVA 15 % of 190000 = 28500; ReteRenta 25000; ReteICA 4140
        let codes: Vec<_> = t.withholdings.iter().map(|g| g.code.as_str()).collect();
        assert_eq!(codes, ["05", "06", "07"]);
        assert_eq!(t.withholdings[0].amount, dec!(28500.00));
        assert_eq!(t.withholdings[0].subtotals[0].taxable, dec!(190000.00));
        assert_eq!(t.withholdings[1].amount, dec!(25000.00));
        assert_eq!(t.withholdings[2].amount, dec!(4140.00));
        assert_eq!(t.withholding_total, dec!(57640.00));
        assert_eq!(t.net_of_withholdings(), dec!(1132360.00));
    }

    #[test]
    fn zero_ica_and_inc_are_omitted_but_zero_iva_is_kept() {
        let t = compute(&doc(vec![line(
            dec!(1),
            dec!(100),
            vec![
                LineTax::percent("01", dec!(0)),
                LineTax::percent("03", dec!(0.00)),
                LineTax::percent("04", dec!(0)),
            ],
        )]))
        .unwrap();
        assert_eq!(t.taxes.len(), 1);
        assert_eq!(t.taxes[0].code, "01");
        assert_eq!(t.tax_total, dec!(0));
    }

    #[test]
    fn allowances_and_charges() {
        let mut l = line(dec!(2), dec!(100), vec![LineTax::percent("01", dec!(19))]);
        l.allowances_charges.push(AllowanceCharge {
            is_charge: false,
            reason_code: None,
            reason: "Descuento".into(),
            amount: dec!(20),
        });
        let mut d = doc(vec![l]);
        d.allowances_charges = vec![
            AllowanceCharge {
                is_charge: false,
                reason_code: None,
                reason: "Pronto pago".into(),
                amount: dec!(10),
            },
            AllowanceCharge {
                is_charge: true,
                reason_code: None,
                reason: "Propina".into(),
                amount: dec!(5.555),
            },
        ];
        let t = compute(&d).unwrap();
        assert_eq!(t.lines[0].line_extension, dec!(180));
        assert_eq!(t.tax_total, dec!(34.20));
        assert_eq!(t.allowance_total, dec!(10));
        assert_eq!(t.charge_total, dec!(5.56));
        assert_eq!(t.payable, dec!(209.76));
    }

    #[test]
    fn check_declared_names_the_field() {
        let mut l = line(dec!(1), dec!(100), vec![LineTax::percent("01", dec!(19))]);
        l.line_extension = Some(dec!(100.01));
        let mut d = doc(vec![l]);
        d.declared = Some(DeclaredTotals {
            line_extension: Some(dec!(100)),
            tax_exclusive: Some(dec!(100)),
            tax_inclusive: Some(dec!(119.009)),
            payable: Some(dec!(120)),
        });
        let t = compute(&d).unwrap();
        let e = check_declared(&d, &t).unwrap_err();
        assert_eq!(e.field(), "legal_monetary_totals.payable_amount");
        d.declared = None;
        d.lines[0].taxes[0].amount = Some(dec!(18));
        let e = check_declared(&d, &t).unwrap_err();
        assert_eq!(e.field(), "lines[0].tax_totals[0].tax_amount");
        d.lines[0].taxes[0].amount = Some(dec!(19.01));
        assert!(check_declared(&d, &t).is_ok());
    }

    #[test]
    fn overflow_is_an_error() {
        let d = doc(vec![line(Decimal::MAX, Decimal::MAX, vec![])]);
        assert!(matches!(compute(&d), Err(TotalsError::Overflow(_))));
    }
}
