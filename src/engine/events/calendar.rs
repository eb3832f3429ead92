//! Business days of Colombia (decisions.md "Business days"): weekends and
//! the national public holidays do not count. Holidays: the fixed ones,
//! those moved to the next Monday (Ley 51 de 1983, "Ley Emiliani"), and
//! those counted from Easter Sunday (Holy Thursday and Good Friday fixed,
//! Ascension, Corpus Christi and Sacred Heart moved to a Monday).

use chrono::{Datelike, Days, NaiveDate, Weekday};

/// Business days a buyer has to claim after the goods' receipt (032)
/// before the acceptance is tacit (034).
pub const TACIT_ACCEPTANCE_BUSINESS_DAYS: u64 = 3;

/// Easter Sunday of `year` (anonymous Gregorian algorithm).
pub fn easter(year: i32) -> Option<NaiveDate> {
    let a = year % 19;
    let b = year / 100;
    let c = year % 100;
    let d = b / 4;
    let e = b % 4;
    let f = (b + 8) / 25;
    let g = (b - f + 1) / 3;
    let h = (19 * a + b - d - g + 15) % 30;
    let i = c / 4;
    let k = c % 4;
    let l = (32 + 2 * e + 2 * i - h - k) % 7;
    let m = (a + 11 * h + 22 * l) / 451;
    let month = (h + l - 7 * m + 114) / 31;
    let day = (h + l - 7 * m + 114) % 31 + 1;
    NaiveDate::from_ymd_opt(year, u32::try_from(month).ok()?, u32::try_from(day).ok()?)
}

/// `date`, or the Monday after it.
fn next_monday(date: NaiveDate) -> NaiveDate {
    let ahead = (7 - date.weekday().num_days_from_monday()) % 7;
    date.checked_add_days(Days::new(u64::from(ahead)))
        .unwrap_or(date)
}

fn shifted(date: NaiveDate, days: i64) -> Option<NaiveDate> {
    if days >= 0 {
        date.checked_add_days(Days::new(days.unsigned_abs()))
    } else {
        date.checked_sub_days(Days::new(days.unsigned_abs()))
    }
}

/// The national public holidays of `year`, sorted.
pub fn holidays(year: i32) -> Vec<NaiveDate> {
    let ymd = |m: u32, d: u32| NaiveDate::from_ymd_opt(year, m, d);
    let mut out: Vec<NaiveDate> = Vec::with_capacity(18);
    // Fixed.
    out.extend(
        [
            ymd(1, 1),
            ymd(5, 1),
            ymd(7, 20),
            ymd(8, 7),
            ymd(12, 8),
            ymd(12, 25),
        ]
        .into_iter()
        .flatten(),
    );
    // Moved to the next Monday.
    out.extend(
        [
            ymd(1, 6),
            ymd(3, 19),
            ymd(6, 29),
            ymd(8, 15),
            ymd(10, 12),
            ymd(11, 1),
            ymd(11, 11),
        ]
        .into_iter()
        .flatten()
        .map(next_monday),
    );
    if let Some(e) = easter(year) {
        out.extend([shifted(e, -3), shifted(e, -2)].into_iter().flatten());
        out.extend(
            [shifted(e, 39), shifted(e, 60), shifted(e, 68)]
                .into_iter()
                .flatten()
                .map(next_monday),
        );
    }
    out.sort();
    out.dedup();
    out
}

/// Neither a weekend nor a national holiday.
pub fn is_business_day(date: NaiveDate) -> bool {
    !matches!(date.weekday(), Weekday::Sat | Weekday::Sun) && !holidays(date.year()).contains(&date)
}

/// The `n`-th business day after `date` (`date` itself never counts).
pub fn add_business_days(date: NaiveDate, n: u64) -> NaiveDate {
    let mut day = date;
    let mut left = n;
    while left > 0 {
        match day.succ_opt() {
            Some(next) => day = next,
            None => return day,
        }
        if is_business_day(day) {
            left -= 1;
        }
    }
    day
}

/// The first day a tacit acceptance may be registered for goods received
/// on `receipt`: the day after the last of the 3 business days to claim.
pub fn tacit_acceptance_from(receipt: NaiveDate) -> NaiveDate {
    let last = add_business_days(receipt, TACIT_ACCEPTANCE_BUSINESS_DAYS);
    last.succ_opt().unwrap_or(last)
}
