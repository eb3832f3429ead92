//! Payroll arithmetic and the rules of spec 4.5, in decimal: earnings and
//! deductions summed to the cent, `comprobante` = earnings − deductions,
//! declared totals checked, and the document's own consistency (a basic
//! salary line, one health and one pension line at most, dates in order,
//! days worked at least 1, novelty with its CUNE, exchange rate only with a
//! foreign currency). Errors name the engine's fields (English paths); the
//! API renames them to the caller's.

use rust_decimal::Decimal;

use super::model::{DeductionKind, EarningKind, PayrollDocument, PayrollKind};
use crate::engine::limits;
use crate::engine::validate::ValidationError;

/// The three totals of a payroll (`DevengadosTotal`, `DeduccionesTotal`,
/// `ComprobanteTotal`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PayrollTotals {
    pub earnings: Decimal,
    pub deductions: Decimal,
    pub net: Decimal,
}

/// How far a declared total may be from the computed one (to the peso, as
/// the Spanish-named API's declared totals, decisions.md §5).
pub const DECLARED_TOLERANCE: Decimal = Decimal::ONE;

fn err(field: impl Into<String>, message: impl Into<String>) -> ValidationError {
    ValidationError {
        field: field.into(),
        message: message.into(),
    }
}

/// Money as written: rounded half away from zero to the cent.
pub fn cents(d: Decimal) -> Decimal {
    d.round_dp_with_strategy(2, rust_decimal::RoundingStrategy::MidpointAwayFromZero)
}

/// Largest amount of one line (validation refuses more, so sums of up to
/// [`MAX_LINES`] lines never overflow a `Decimal`).
pub const MAX_AMOUNT: Decimal = Decimal::from_parts(2_764_472_319, 232_830, 0, false, 0); // 999 999 999 999 999
/// Most lines of each kind (decisions.md §4: 500 lines).
pub const MAX_LINES: usize = 500;
/// Most notes and payment dates.
pub const MAX_NOTES: usize = 50;

/// Σ of amounts to the cent, saturating (validation bounds them first).
fn sum(amounts: impl Iterator<Item = Decimal>) -> Decimal {
    amounts.fold(Decimal::ZERO, |acc, a| {
        acc.checked_add(cents(a)).unwrap_or(Decimal::MAX)
    })
}

/// The totals of a document (an `Eliminar` adjustment is all zeros).
pub fn totals(doc: &PayrollDocument) -> PayrollTotals {
    if doc.kind == PayrollKind::Delete {
        return PayrollTotals::default();
    }
    let earnings = sum(doc.earnings.iter().map(|e| e.amount));
    let deductions = sum(doc.deductions.iter().map(|d| d.amount));
    PayrollTotals {
        earnings,
        deductions,
        net: earnings.checked_sub(deductions).unwrap_or(Decimal::MIN),
    }
}

fn check_text(errors: &mut Vec<ValidationError>, field: &str, value: &str, max: usize) {
    if let Some(problem) = crate::engine::validate::text_problem(value, max) {
        errors.push(err(field, problem));
    }
}

/// Validates a document and computes its totals; every problem is listed.
pub fn validate_and_total(doc: &PayrollDocument) -> Result<PayrollTotals, Vec<ValidationError>> {
    let mut errors = Vec::new();
    if doc.kind != PayrollKind::Delete {
        check_content(doc, &mut errors);
    }
    if doc.kind.is_adjustment() && doc.predecessor.is_none() {
        errors.push(err(
            "predecessor",
            "an adjustment names the payroll it adjusts",
        ));
    }
    if doc.notes.len() > MAX_NOTES {
        errors.push(err("notes", format!("at most {MAX_NOTES} notes")));
    }
    for (i, n) in doc.notes.iter().enumerate() {
        check_text(&mut errors, &format!("notes[{i}]"), n, limits::PAYROLL_NOTE);
    }
    if let Some(t) = &doc.generation_time {
        if !valid_time(t) {
            errors.push(err(
                "generation_time",
                "must be HH:MM:SS-05:00 (Colombia time)",
            ));
        }
    }
    let t = totals(doc);
    if doc.kind != PayrollKind::Delete {
        let declared = [
            ("declared.earnings", doc.declared.earnings, t.earnings),
            ("declared.deductions", doc.declared.deductions, t.deductions),
            ("declared.net", doc.declared.net, t.net),
        ];
        for (field, given, computed) in declared {
            if let Some(given) = given {
                let off = given
                    .checked_sub(computed)
                    .is_none_or(|d| d.abs() > DECLARED_TOLERANCE);
                if off {
                    errors.push(err(
                        field,
                        format!("declared {given} but the lines add up to {computed}"),
                    ));
                }
            }
        }
        if t.net < Decimal::ZERO {
            errors.push(err(
                "deductions",
                format!(
                    "the deductions ({}) exceed the earnings ({})",
                    t.deductions, t.earnings
                ),
            ));
        }
    }
    if errors.is_empty() {
        Ok(t)
    } else {
        Err(errors)
    }
}

/// `HH:MM:SS-05:00`.
fn valid_time(t: &str) -> bool {
    t.len() == 14
        && t.ends_with("-05:00")
        && chrono::NaiveTime::parse_from_str(&t[..8], "%H:%M:%S").is_ok()
}

fn check_content(doc: &PayrollDocument, errors: &mut Vec<ValidationError>) {
    let p = &doc.period;
    if p.days_worked < 1 {
        errors.push(err("period.days_worked", "must be at least 1"));
    }
    if p.settlement_end < p.settlement_start {
        errors.push(err(
            "period.settlement_end",
            format!(
                "must not be before the settlement start ({})",
                p.settlement_start
            ),
        ));
    }
    if let (Some(hired), Some(retired)) = (p.hired, p.retired) {
        if retired < hired {
            errors.push(err(
                "period.retired",
                format!("must not be before the hire date ({hired})"),
            ));
        }
    }
    if let Some(hired) = p.hired {
        if hired > p.settlement_end {
            errors.push(err("period.hired", "must not be after the settlement end"));
        }
    }
    let e = &doc.employee;
    if e.id_number.is_empty() || !e.id_number.bytes().all(|b| b.is_ascii_digit()) {
        errors.push(err("employee.id_number", "must be digits only"));
    } else if e.id_number.len() > 20 {
        errors.push(err("employee.id_number", "at most 20 digits"));
    }
    for (field, value) in [
        ("employee.first_name", Some(&e.first_name)),
        ("employee.first_surname", Some(&e.first_surname)),
        ("employee.other_names", e.other_names.as_ref()),
        ("employee.second_surname", e.second_surname.as_ref()),
        ("employee.code", e.code.as_ref()),
        ("employee.work_address", e.work_address.as_ref()),
    ] {
        if let Some(v) = value {
            check_text(errors, field, v, limits::PAYROLL_NAME);
        }
    }
    if e.first_name.trim().is_empty() {
        errors.push(err("employee.first_name", "is required"));
    }
    if e.first_surname.trim().is_empty() {
        errors.push(err("employee.first_surname", "is required"));
    }
    for (field, code) in [
        ("employee.id_type", &e.id_type),
        ("employee.worker_type", &e.worker_type),
        ("employee.worker_subtype", &e.worker_subtype),
        ("employee.contract_type", &e.contract_type),
        ("payroll_period", &doc.payroll_period),
        ("payment.form", &doc.payment.form),
    ] {
        if code.is_empty() || code.len() > 3 || !code.bytes().all(|b| b.is_ascii_digit()) {
            errors.push(err(field, "must be a numeric code"));
        }
    }
    check_text(errors, "payment.method", &doc.payment.method, 10);
    if let Some(s) = e.salary {
        if s < Decimal::ZERO {
            errors.push(err("employee.salary", "must not be negative"));
        }
    }

    let o = &doc.employer;
    let pl = &doc.place;
    let pay = &doc.payment;
    for (field, value) in [
        ("employee.email", e.email.as_ref()),
        ("employee.work_country", e.work_country.as_ref()),
        ("employee.work_department", e.work_department.as_ref()),
        ("employee.work_municipality", e.work_municipality.as_ref()),
        ("employer.name", o.name.as_ref()),
        ("employer.country", o.country.as_ref()),
        ("employer.department", o.department.as_ref()),
        ("employer.municipality", o.municipality.as_ref()),
        ("employer.address", o.address.as_ref()),
        ("place.country", pl.country.as_ref()),
        ("place.department", pl.department.as_ref()),
        ("place.municipality", pl.municipality.as_ref()),
        ("place.language", pl.language.as_ref()),
        ("payment.bank", pay.bank.as_ref()),
        ("payment.account_type", pay.account_type.as_ref()),
        ("payment.account_number", pay.account_number.as_ref()),
    ] {
        if let Some(v) = value {
            check_text(errors, field, v, limits::PAYROLL_NAME);
        }
    }
    if p.days_worked > 100_000 {
        errors.push(err("period.days_worked", "at most 100000"));
    }
    if doc.earnings.len() > MAX_LINES {
        errors.push(err("earnings", format!("at most {MAX_LINES} lines")));
    }
    if doc.deductions.len() > MAX_LINES {
        errors.push(err("deductions", format!("at most {MAX_LINES} lines")));
    }
    if doc.payment_dates.len() > MAX_NOTES {
        errors.push(err("payment_dates", format!("at most {MAX_NOTES} dates")));
    }
    let dates = [
        ("period.hired", p.hired),
        ("period.retired", p.retired),
        ("period.settlement_start", Some(p.settlement_start)),
        ("period.settlement_end", Some(p.settlement_end)),
        ("generation_date", doc.generation_date),
    ];
    for (field, date) in dates {
        if let Some(problem) = date.and_then(limits::date_problem) {
            errors.push(err(field, problem));
        }
    }
    for (i, d) in doc.payment_dates.iter().enumerate().take(MAX_NOTES) {
        if let Some(problem) = limits::date_problem(*d) {
            errors.push(err(format!("payment_dates[{i}]"), problem));
        }
    }
    let too_large = |d: Decimal| d.abs() > MAX_AMOUNT;
    for (field, value) in [
        ("employee.salary", e.salary),
        ("exchange_rate", doc.exchange_rate),
        ("rounding", doc.rounding),
        ("declared.earnings", doc.declared.earnings),
        ("declared.deductions", doc.declared.deductions),
        ("declared.net", doc.declared.net),
    ] {
        if value.is_some_and(too_large) {
            errors.push(err(field, format!("at most {MAX_AMOUNT}")));
        }
    }
    for (i, l) in doc.earnings.iter().enumerate() {
        for (name, value) in [
            ("amount", Some(l.amount)),
            ("quantity", l.quantity),
            ("percent", l.percent),
        ] {
            if value.is_some_and(too_large) {
                errors.push(err(
                    format!("earnings[{i}].{name}"),
                    format!("at most {MAX_AMOUNT}"),
                ));
            }
        }
    }
    for (i, l) in doc.deductions.iter().enumerate() {
        for (name, value) in [
            ("amount", Some(l.amount)),
            ("percent", l.percent),
            ("base", l.base),
        ] {
            if value.is_some_and(too_large) {
                errors.push(err(
                    format!("deductions[{i}].{name}"),
                    format!("at most {MAX_AMOUNT}"),
                ));
            }
        }
    }

    let basics = doc
        .earnings
        .iter()
        .enumerate()
        .filter(|(_, l)| l.kind == EarningKind::Basic)
        .map(|(i, _)| i)
        .collect::<Vec<_>>();
    match basics.as_slice() {
        [] if doc.kind == PayrollKind::Individual => errors.push(err(
            "earnings",
            "a BASICO line (the salary of the days worked) is required",
        )),
        [_, second, ..] => errors.push(err(
            format!("earnings[{second}].kind"),
            "only one BASICO line is allowed",
        )),
        _ => {}
    }
    for (i, l) in doc.earnings.iter().enumerate() {
        if l.amount < Decimal::ZERO {
            errors.push(err(format!("earnings[{i}].amount"), "must not be negative"));
        }
        if let Some(q) = l.quantity {
            if q < Decimal::ZERO {
                errors.push(err(
                    format!("earnings[{i}].quantity"),
                    "must not be negative",
                ));
            }
        }
        if l.kind == EarningKind::Basic {
            if let Some(q) = l.quantity {
                if q < Decimal::ONE || q.fract() != Decimal::ZERO {
                    errors.push(err(
                        format!("earnings[{i}].quantity"),
                        "must be a whole number of days, at least 1",
                    ));
                }
            }
        }
        if let Some(d) = &l.description {
            check_text(
                errors,
                &format!("earnings[{i}].description"),
                d,
                limits::PAYROLL_DESCRIPTION,
            );
        }
    }
    let mut seen = Vec::new();
    for (i, l) in doc.deductions.iter().enumerate() {
        if l.amount < Decimal::ZERO {
            errors.push(err(
                format!("deductions[{i}].amount"),
                "must not be negative",
            ));
        }
        if matches!(
            l.kind,
            DeductionKind::Health | DeductionKind::Pension | DeductionKind::SolidarityFund
        ) {
            if seen.contains(&l.kind) {
                errors.push(err(
                    format!("deductions[{i}].kind"),
                    "this concept may appear only once",
                ));
            }
            seen.push(l.kind);
        }
        if let Some(d) = &l.description {
            check_text(
                errors,
                &format!("deductions[{i}].description"),
                d,
                limits::PAYROLL_DESCRIPTION,
            );
        }
    }
    if let Some(novelty) = &doc.novelty {
        if !is_code(novelty) {
            errors.push(err(
                "novelty",
                "must be the 96-character CUNE of the earlier payroll",
            ));
        }
    }
    match (&doc.exchange_rate, doc.currency.as_str()) {
        (Some(_), "COP") => errors.push(err(
            "exchange_rate",
            "applies only when the currency is not COP",
        )),
        (Some(r), _) if *r <= Decimal::ZERO => {
            errors.push(err("exchange_rate", "must be greater than zero"))
        }
        _ => {}
    }
    if doc.currency.len() != 3 || !doc.currency.bytes().all(|b| b.is_ascii_uppercase()) {
        errors.push(err("currency", "must be an ISO 4217 code such as COP"));
    }
}

/// 96 lowercase hex characters (a SHA-384 code).
pub fn is_code(s: &str) -> bool {
    s.len() == 96 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::payroll::tests::sample;
    use rust_decimal_macros::dec;

    #[test]
    fn totals_add_up_to_the_cent() {
        let doc = sample(PayrollKind::Individual);
        let t = validate_and_total(&doc).unwrap();
        assert_eq!(t.earnings, dec!(1300000) + dec!(162000) + dec!(54166.67));
        assert_eq!(t.deductions, dec!(104000));
        assert_eq!(t.net, t.earnings - t.deductions);
    }

    #[test]
    fn the_largest_amount_is_what_it_says() {
        assert_eq!(MAX_AMOUNT, dec!(999999999999999));
    }

    #[test]
    fn an_eliminar_is_all_zeros() {
        let mut doc = sample(PayrollKind::Delete);
        doc.earnings.clear();
        assert_eq!(validate_and_total(&doc).unwrap(), PayrollTotals::default());
    }

    fn fields(doc: &PayrollDocument) -> Vec<String> {
        validate_and_total(doc)
            .unwrap_err()
            .into_iter()
            .map(|e| e.field)
            .collect()
    }

    #[test]
    fn each_rule_names_its_field() {
        let mut doc = sample(PayrollKind::Individual);
        doc.earnings.retain(|e| e.kind != EarningKind::Basic);
        assert_eq!(fields(&doc), ["earnings"]);

        let mut doc = sample(PayrollKind::Individual);
        doc.period.days_worked = 0;
        assert_eq!(fields(&doc), ["period.days_worked"]);

        let mut doc = sample(PayrollKind::Individual);
        doc.period.settlement_end = doc.period.settlement_start.pred_opt().unwrap();
        assert_eq!(fields(&doc), ["period.settlement_end"]);

        let mut doc = sample(PayrollKind::Individual);
        doc.exchange_rate = Some(dec!(4000));
        assert_eq!(fields(&doc), ["exchange_rate"]);

        let mut doc = sample(PayrollKind::Individual);
        doc.declared.net = Some(dec!(1));
        assert_eq!(fields(&doc), ["declared.net"]);

        let mut doc = sample(PayrollKind::Individual);
        doc.deductions[0].amount = dec!(99999999);
        assert_eq!(fields(&doc), ["deductions"]);

        let mut doc = sample(PayrollKind::Individual);
        doc.deductions.push(doc.deductions[0].clone());
        assert_eq!(fields(&doc), ["deductions[2].kind"]);
    }
}
