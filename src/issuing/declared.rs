//! What a caller declared (totals, taxes), compared by issuing with what the
//! engine computed. Each API says, as data, which amounts its caller
//! declared, under which field, against which computed amount, within what
//! tolerance and in what words a difference is reported; the engine's
//! validation has already compared the document's own declared totals
//! (`legal_monetary_totals`, line amounts).

use rust_decimal::Decimal;

use super::error::FieldError;
use crate::engine::model::{Document, TaxRate};
use crate::engine::totals::{self, cents, round2, Totals, TOLERANCE};

/// Declared values within a cent of ours (the unified API).
pub const CENT: Decimal = TOLERANCE;

/// Declared values within a peso of ours (the Spanish API, decisions.md §5).
pub const PESO: Decimal = Decimal::ONE;

/// One amount the caller declared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Declared {
    /// The caller's field.
    pub field: String,
    pub amount: Decimal,
    /// What it is compared with.
    pub computed: Computed,
    /// The largest difference accepted.
    pub tolerance: Decimal,
    pub wording: Wording,
}

/// What a caller says was paid (a POS sale's payments, added), which must
/// be the document's payable amount to the cent. Compared before anything
/// else issuing does, so its refusal is the payments' alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paid {
    /// The caller's field.
    pub field: String,
    pub amount: Decimal,
}

impl Paid {
    /// The problem when the amount paid is not `document`'s payable amount
    /// (none when its totals do not compute: its validation tells why).
    pub fn problem(&self, document: &Document) -> Option<FieldError> {
        let payable = round2(totals::compute(document).ok()?.payable);
        (self.amount != payable).then(|| {
            FieldError::new(
                self.field.clone(),
                format!(
                    "the payments add up to {} but the total is {}",
                    self.amount.normalize(),
                    cents(payable)
                ),
            )
        })
    }
}

/// How a difference is worded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wording {
    /// `declared 10 but computed 12`.
    English,
    /// `declarado 10 pero calculado 12 (diferencia mayor a 1 peso)`.
    Spanish,
}

/// The part of a tax compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    Taxable,
    Amount,
}

/// A computed amount.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Computed {
    /// The lines' total (`LineExtensionAmount`).
    LineExtension,
    /// The taxes' total.
    TaxTotal,
    /// The withholdings' total.
    WithholdingTotal,
    /// The payable amount before any prepayment.
    BeforePrepaid,
    /// The payable amount net of withholdings (a support document's total).
    NetOfWithholdings,
    /// Tax (or withholding) `at` of line `line`.
    LineTax {
        line: usize,
        withholding: bool,
        at: usize,
        part: Part,
    },
    /// The document's group of a tax code: its amount, the taxable amount
    /// of all its rates (zero when the lines carry no such tax).
    Group {
        code: String,
        withholding: bool,
        part: Part,
    },
    /// The first subtotal of a code at a rate (a percent or an amount per
    /// unit, zero when none).
    Subtotal {
        code: String,
        withholding: bool,
        rate: TaxRate,
        part: Part,
    },
    /// The subtotals of a code at a percent, added.
    AtPercent {
        code: String,
        withholding: bool,
        percent: Decimal,
        part: Part,
    },
}

fn pick((taxable, amount): (Decimal, Decimal), part: Part) -> Decimal {
    match part {
        Part::Taxable => taxable,
        Part::Amount => amount,
    }
}

fn same_rate(a: TaxRate, b: TaxRate) -> bool {
    match (a, b) {
        (TaxRate::Percent(x), TaxRate::Percent(y)) | (TaxRate::PerUnit(x), TaxRate::PerUnit(y)) => {
            x.normalize() == y.normalize()
        }
        _ => false,
    }
}

impl Computed {
    /// The amount in `totals`.
    pub fn of(&self, totals: &Totals) -> Decimal {
        let groups = |withholding: bool| {
            if withholding {
                &totals.withholdings
            } else {
                &totals.taxes
            }
        };
        match self {
            Computed::LineExtension => totals.line_extension,
            Computed::TaxTotal => totals.tax_total,
            Computed::WithholdingTotal => totals.withholding_total,
            Computed::BeforePrepaid => totals.before_prepaid(),
            Computed::NetOfWithholdings => totals.net_of_withholdings(),
            Computed::LineTax {
                line,
                withholding,
                at,
                part,
            } => {
                let tax = totals.lines.get(*line).and_then(|l| {
                    if *withholding {
                        &l.withholdings
                    } else {
                        &l.taxes
                    }
                    .get(*at)
                });
                pick(
                    tax.map(|t| (t.taxable, t.amount)).unwrap_or_default(),
                    *part,
                )
            }
            Computed::Group {
                code,
                withholding,
                part,
            } => {
                let group = groups(*withholding).iter().find(|g| &g.code == code);
                pick(
                    group
                        .map(|g| (g.subtotals.iter().map(|s| s.taxable).sum(), g.amount))
                        .unwrap_or_default(),
                    *part,
                )
            }
            Computed::Subtotal {
                code,
                withholding,
                rate,
                part,
            } => {
                let subtotal = groups(*withholding)
                    .iter()
                    .find(|g| &g.code == code)
                    .and_then(|g| g.subtotals.iter().find(|s| same_rate(s.rate, *rate)));
                pick(
                    subtotal.map(|s| (s.taxable, s.amount)).unwrap_or_default(),
                    *part,
                )
            }
            Computed::AtPercent {
                code,
                withholding,
                percent,
                part,
            } => {
                let group = groups(*withholding).iter().find(|g| &g.code == code);
                let sum = group.map(|g| {
                    g.subtotals
                        .iter()
                        .filter(|s| matches!(s.rate, TaxRate::Percent(r) if r.normalize() == percent.normalize()))
                        .fold((Decimal::ZERO, Decimal::ZERO), |(b, a), s| {
                            (b + s.taxable, a + s.amount)
                        })
                });
                pick(sum.unwrap_or_default(), *part)
            }
        }
    }
}

/// Each declared amount that differs from the computed one by more than
/// its tolerance, in the order declared.
pub fn differences(declared: &[Declared], totals: &Totals) -> Vec<FieldError> {
    declared
        .iter()
        .filter_map(|d| {
            let computed = d.computed.of(totals);
            let differs = d
                .amount
                .checked_sub(computed)
                .is_none_or(|x| x.abs() > d.tolerance);
            differs.then(|| {
                let amount = d.amount;
                let message = match d.wording {
                    Wording::English => format!("declared {amount} but computed {computed}"),
                    Wording::Spanish => format!(
                        "declarado {amount} pero calculado {computed} (diferencia mayor a 1 peso)"
                    ),
                };
                FieldError::new(d.field.clone(), message)
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::model::DocumentKind;
    use crate::engine::ubl::tests::sample;
    use crate::issuing::request::ListTotal;

    #[test]
    fn what_was_paid_is_the_payable_amount_to_the_cent() {
        let document = sample(DocumentKind::Pos);
        let payable = round2(totals::compute(&document).unwrap().payable);
        let paid = |amount| Paid {
            field: "pagos".into(),
            amount,
        };
        assert_eq!(paid(payable).problem(&document), None);
        let problem = paid(payable + Decimal::ONE).problem(&document).unwrap();
        assert_eq!(problem.field, "pagos");
        assert_eq!(
            problem.message,
            format!(
                "the payments add up to {} but the total is {}",
                (payable + Decimal::ONE).normalize(),
                cents(payable)
            )
        );
    }

    #[test]
    fn list_totals_are_written_to_the_cent() {
        let t = totals::compute(&sample(DocumentKind::Pos)).unwrap();
        assert_eq!(
            ListTotal::LineExtension.of(&t),
            Some(cents(t.line_extension))
        );
        assert_eq!(
            ListTotal::PaidWith("10".into()).of(&t),
            Some(format!("10={}", cents(t.payable)))
        );
        let detail = ListTotal::TaxDetail.of(&t);
        assert_eq!(detail.is_some(), !t.taxes.is_empty());
    }
}
