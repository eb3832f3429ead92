//! Business days of Colombia (decisions.md "Business days"): weekends and
//! the national public holidays do not count, and the legal windows of the
//! receipt events are counted as the authority's validator counts them. Holidays: the fixed ones,
//! those moved to the next Monday (Ley 51 de 1983, "Ley Emiliani"), and
//! those counted from Easter Sunday (Holy Thursday and Good Friday fixed,
//! Ascension, Corpus Christi and Sacred Heart moved to a Monday).

use chrono::{Datelike, Days, NaiveDate, Weekday};

/// Business days a buyer has to claim or accept after the goods' receipt
/// (032) before the acceptance is tacit (034).
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
    !is_weekend(date) && !holidays(date.year()).contains(&date)
}

fn is_weekend(date: NaiveDate) -> bool {
    matches!(date.weekday(), Weekday::Sat | Weekday::Sun)
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

/// Business days from `first` to `last`, counted as the authority's
/// validator counts them (`BusinessDaysHolidays.BusinessDaysUntil`): the
/// calendar days between the two dates, less the weekend days of the whole
/// weeks and of the remainder (the remainder's Saturday and Sunday counted
/// when they lie between the two days of the week, both included), less
/// every holiday from `first` to `last`, both included. Its list of holidays
/// is of weekdays ("excluidos los fines de semana"): a holiday on a weekend
/// is not taken off twice. Negative when `last` comes before `first` (the
/// validator refuses those).
pub fn business_days_until(first: NaiveDate, last: NaiveDate) -> i64 {
    let span = (last - first).num_days();
    if span < 0 {
        return span;
    }
    let full_weeks = span / 7;
    let mut days = span;
    if span > full_weeks * 7 {
        // Monday 1 … Sunday 7.
        let first_dow = i64::from(first.weekday().number_from_monday());
        let mut last_dow = i64::from(last.weekday().number_from_monday());
        if last_dow < first_dow {
            last_dow += 7;
        }
        if first_dow <= 6 {
            if last_dow >= 7 {
                days -= 2;
            } else if last_dow >= 6 {
                days -= 1;
            }
        } else if last_dow >= 7 {
            days -= 1;
        }
    }
    days -= 2 * full_weeks;
    for year in first.year()..=last.year() {
        days -= holidays(year)
            .into_iter()
            .filter(|h| (first..=last).contains(h) && !is_weekend(*h))
            .count() as i64;
    }
    days
}

/// Whether a claim (031) or an express acceptance (033) signed on `event`
/// is inside the legal window after goods received on `receipt` (rules
/// DC24z, DC24c): at most [`TACIT_ACCEPTANCE_BUSINESS_DAYS`] counted as
/// [`business_days_until`] counts them.
pub fn within_claim_window(receipt: NaiveDate, event: NaiveDate) -> bool {
    business_days_until(receipt, event) <= TACIT_ACCEPTANCE_BUSINESS_DAYS as i64
}

/// Whether a tacit acceptance (034) signed on `event` comes after the
/// window of goods received on `receipt` (rule DC24e).
pub fn tacit_acceptance_allowed(receipt: NaiveDate, event: NaiveDate) -> bool {
    business_days_until(receipt, event) > TACIT_ACCEPTANCE_BUSINESS_DAYS as i64
}

/// The first day a tacit acceptance may be registered for goods received
/// on `receipt`; the day before it is the last day of the claim window.
pub fn tacit_acceptance_from(receipt: NaiveDate) -> NaiveDate {
    let mut day = receipt;
    // The count grows by at least one every business day: a few weeks of
    // holidays at most.
    for _ in 0..60 {
        if tacit_acceptance_allowed(receipt, day) {
            return day;
        }
        match day.succ_opt() {
            Some(next) => day = next,
            None => return day,
        }
    }
    day
}

/// The last day a claim (031) or an express acceptance (033) may be
/// registered for goods received on `receipt`.
pub fn claim_window_last_day(receipt: NaiveDate) -> NaiveDate {
    let from = tacit_acceptance_from(receipt);
    from.pred_opt().unwrap_or(from)
}
