//! Dates and times as the documents write them, on the stack: chrono's
//! `format(…).to_string()` parses its pattern and grows a `String` for
//! each of the ~8 a document writes (issue date and time in the XML and in
//! its code, the resolution's dates, the signing time). The text is
//! chrono's own: a value the fast path does not cover (a year outside
//! 0-9999, an offset with seconds, a leap second) is written by chrono,
//! into the same buffer.

use std::fmt::Write as _;

use chrono::{DateTime, Datelike, FixedOffset, NaiveDate, Timelike};

use super::stack_text::StackText;

/// A date or time's text (chrono's longest for these patterns is 33
/// bytes).
pub type DateText = StackText<48>;

fn four_digit_year(year: i32) -> bool {
    (0..=9999).contains(&year)
}

/// `+HH:MM` / `-HH:MM`, or `None` for an offset with seconds.
fn write_offset(t: &mut DateText, offset: &FixedOffset) -> Option<()> {
    let secs = offset.local_minus_utc();
    if secs % 60 != 0 {
        return None;
    }
    let sign = if secs < 0 { '-' } else { '+' };
    let minutes = secs.unsigned_abs() / 60;
    write!(t, "{sign}{:02}:{:02}", minutes / 60, minutes % 60).ok()
}

/// `%Y-%m-%d`.
pub fn date(d: NaiveDate) -> DateText {
    let mut t = DateText::new();
    let fast = four_digit_year(d.year())
        && write!(t, "{:04}-{:02}-{:02}", d.year(), d.month(), d.day()).is_ok();
    if !fast {
        t.clear();
        let _ = write!(t, "{}", d.format("%Y-%m-%d"));
    }
    t
}

/// `%H:%M:%S%:z` (`cbc:IssueTime`).
pub fn time(at: &DateTime<FixedOffset>) -> DateText {
    let mut t = DateText::new();
    let fast = at.nanosecond() < 1_000_000_000
        && write!(t, "{:02}:{:02}:{:02}", at.hour(), at.minute(), at.second()).is_ok()
        && write_offset(&mut t, at.offset()).is_some();
    if !fast {
        t.clear();
        let _ = write!(t, "{}", at.format("%H:%M:%S%:z"));
    }
    t
}

/// `%Y-%m-%dT%H:%M:%S%.3f%:z` (the signing time).
pub fn instant_millis(at: &DateTime<FixedOffset>) -> DateText {
    let mut t = DateText::new();
    let fast = four_digit_year(at.year())
        && at.nanosecond() < 1_000_000_000
        && write!(
            t,
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}",
            at.year(),
            at.month(),
            at.day(),
            at.hour(),
            at.minute(),
            at.second(),
            at.nanosecond() / 1_000_000
        )
        .is_ok()
        && write_offset(&mut t, at.offset()).is_some();
    if !fast {
        t.clear();
        let _ = write!(t, "{}", at.format("%Y-%m-%dT%H:%M:%S%.3f%:z"));
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use proptest::prelude::*;

    fn instant(secs: i64, nanos: u32, offset: i32) -> DateTime<FixedOffset> {
        let naive = DateTime::from_timestamp(secs, nanos).unwrap().naive_utc();
        FixedOffset::east_opt(offset)
            .unwrap()
            .from_utc_datetime(&naive)
    }

    fn same_as_chrono(at: DateTime<FixedOffset>) {
        assert_eq!(&*date(at.date_naive()), at.format("%Y-%m-%d").to_string());
        assert_eq!(&*time(&at), at.format("%H:%M:%S%:z").to_string());
        assert_eq!(
            &*instant_millis(&at),
            at.format("%Y-%m-%dT%H:%M:%S%.3f%:z").to_string()
        );
    }

    #[test]
    fn the_edges_read_as_chrono_writes_them() {
        for (secs, nanos, offset) in [
            (0, 0, 0),
            (1_795_000_000, 999_999_999, -5 * 3600),
            (1_795_000_019, 1_500_000_000, -5 * 3600), // a leap second
            (1_795_000_000, 1_000_000, 5 * 3600 + 30 * 60),
            (1_795_000_000, 0, -(3 * 3600 + 25 * 60 + 7)), // seconds in the offset
            (-62_167_219_200, 0, 0),                       // year 0
            (-62_167_219_201, 0, 0),                       // year -1
            (253_402_300_799, 0, 0),                       // 9999-12-31T23:59:59
            (253_402_300_800, 0, 0),                       // year 10000
            (253_402_300_799, 0, 3600),                    // year 10000 locally
        ] {
            same_as_chrono(instant(secs, nanos, offset));
        }
    }

    proptest! {
        #[test]
        fn any_instant_reads_as_chrono_writes_it(
            secs in -70_000_000_000i64..300_000_000_000,
            nanos in 0u32..2_000_000_000,
            offset in -86_399i32..86_400,
        ) {
            prop_assume!(nanos < 1_000_000_000 || secs % 60 == 59);
            if let Some(naive) = DateTime::from_timestamp(secs, nanos).map(|d| d.naive_utc()) {
                let at = FixedOffset::east_opt(offset).unwrap().from_utc_datetime(&naive);
                same_as_chrono(at);
            }
        }
    }
}
