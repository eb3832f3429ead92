//! What a caller may send, in one place for every API (unified,
//! Spanish-named, POS, support documents, payroll, events and the registry)
//! and for the OpenAPI document's `maxLength` (a test there holds the
//! document to these values): how long a free-text field may be, and which
//! dates a document may carry.
//!
//! Lengths count characters (Unicode scalar values), as `maxLength` does.
//! A name is the authority's `RegistrationName` bound (450); descriptions,
//! notes and reasons, whose lengths the authority leaves open, get 4,000:
//! far more than any printed document shows, and few enough that drawing
//! them stays cheap.

use chrono::{Datelike, NaiveDate};

/// A person's or company's name, an address line.
pub const NAME: usize = 450;
/// A description, a note, a reason, an observation.
pub const TEXT: usize = 4000;
/// A free-form code or reference (an item code, `referencia_externa`).
pub const CODE: usize = 100;
/// Payroll's own bounds (its earlier limits, kept): names and places,
/// descriptions of earnings and deductions, notes.
pub const PAYROLL_NAME: usize = 200;
pub const PAYROLL_DESCRIPTION: usize = 500;
pub const PAYROLL_NOTE: usize = 5000;

/// Years a date may have: `xs:date` (and so every date the authority's
/// schemas take) has four-digit years, and year 0 does not exist in it.
pub const YEARS: std::ops::RangeInclusive<i32> = 1..=9999;

/// What is wrong with a date bound for a document, if anything.
pub fn date_problem(date: NaiveDate) -> Option<&'static str> {
    (!YEARS.contains(&date.year())).then_some("must be a date between 0001-01-01 and 9999-12-31")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_have_four_digit_years_from_one() {
        let d = |s: &str| s.parse::<NaiveDate>().unwrap();
        assert_eq!(date_problem(d("0001-01-01")), None);
        assert_eq!(date_problem(d("9999-12-31")), None);
        assert!(date_problem(d("+10000-01-01")).is_some());
        assert!(date_problem(d("0000-12-31")).is_some());
        assert!(date_problem(d("-0001-01-01")).is_some());
    }
}
