//! Amounts and dates as a Colombian reader writes them: `$ 1.234.567,89`,
//! `28/11/2026 14:05` (Colombia time).

use chrono::{DateTime, NaiveDate, Utc};
use rust_decimal::Decimal;

use crate::engine::model::colombia_offset as colombia;

/// Pesos with thousands separated by `.` and two decimals after `,`.
pub fn pesos(amount: &Decimal) -> String {
    let rounded = amount.round_dp(2);
    let negative = rounded.is_sign_negative() && !rounded.is_zero();
    let text = format!("{:.2}", rounded.abs());
    let (whole, cents) = text.split_once('.').unwrap_or((text.as_str(), "00"));
    let mut grouped = String::with_capacity(whole.len() + whole.len() / 3);
    for (i, c) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i) % 3 == 0 {
            grouped.push('.');
        }
        grouped.push(c);
    }
    format!("{}$ {grouped},{cents}", if negative { "-" } else { "" })
}

/// A stored decimal string as pesos; anything else as it is.
pub fn pesos_text(amount: &str) -> String {
    amount
        .parse::<Decimal>()
        .map(|d| pesos(&d))
        .unwrap_or_else(|_| amount.to_string())
}

pub fn date(d: NaiveDate) -> String {
    d.format("%d/%m/%Y").to_string()
}

/// An instant in Colombia time, to the minute.
pub fn instant(at: DateTime<Utc>) -> String {
    at.with_timezone(&colombia())
        .format("%d/%m/%Y %H:%M")
        .to_string()
}

/// An instant in Colombia time, to the second.
pub fn instant_s(at: DateTime<Utc>) -> String {
    at.with_timezone(&colombia())
        .format("%d/%m/%Y %H:%M:%S")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rust_decimal_macros::dec;

    #[test]
    fn pesos_are_written_the_colombian_way() {
        assert_eq!(pesos(&dec!(1234567.891)), "$ 1.234.567,89");
        assert_eq!(pesos(&dec!(0)), "$ 0,00");
        assert_eq!(pesos(&dec!(999)), "$ 999,00");
        assert_eq!(pesos(&dec!(1000)), "$ 1.000,00");
        assert_eq!(pesos(&dec!(-25000.5)), "-$ 25.000,50");
        assert_eq!(pesos_text("119000.00"), "$ 119.000,00");
        assert_eq!(pesos_text("n/a"), "n/a");
    }

    #[test]
    fn instants_are_shown_in_colombia_time() {
        let at = DateTime::parse_from_rfc3339("2026-11-29T03:04:05Z")
            .map(|d| d.with_timezone(&Utc))
            .ok();
        assert_eq!(at.map(instant).as_deref(), Some("28/11/2026 22:04"));
        assert_eq!(
            NaiveDate::from_ymd_opt(2026, 1, 2).map(date).as_deref(),
            Some("02/01/2026")
        );
    }
}
