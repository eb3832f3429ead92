//! The business clock: the one "now" of every rule that reads the date
//! (issue dates and times, signing times, "today" checks, event deadlines).
//!
//! It is the system clock, except under `[testing] shared_clock`: then it
//! follows the in-process simulator's test clock (`POST /__sim/clock`,
//! starting at `[testing] clock_offset_s`), so a test can move the service
//! and the authority past a deadline or a midnight together. Off (the
//! default), whatever the simulator's clock says, the service keeps the real
//! time. Transport timestamps (WS-Security, retries) always keep the real
//! clock.

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

use chrono::{DateTime, FixedOffset, Utc};

/// Seconds the simulator's test clock runs ahead of the system clock.
static SIM_OFFSET_S: AtomicI64 = AtomicI64::new(0);
/// Whether the business clock follows the simulator's.
static SHARED: AtomicBool = AtomicBool::new(false);

/// Makes the business clock follow the simulator's test clock, starting
/// `offset_s` ahead of the system clock (`[testing] shared_clock`).
pub fn share_with_simulator(offset_s: i64) {
    SIM_OFFSET_S.store(offset_s, Ordering::SeqCst);
    SHARED.store(true, Ordering::SeqCst);
}

/// Seconds the business clock runs ahead of the system clock.
pub fn offset_s() -> i64 {
    if SHARED.load(Ordering::SeqCst) {
        SIM_OFFSET_S.load(Ordering::SeqCst)
    } else {
        0
    }
}

/// Now, on the business clock.
pub fn now() -> DateTime<Utc> {
    Utc::now() + chrono::Duration::seconds(offset_s())
}

/// [`now`] in Colombia (-05:00).
pub fn colombia_now() -> DateTime<FixedOffset> {
    now().with_timezone(&crate::engine::model::colombia_offset())
}

/// A document's instant as its new record keeps it: nothing while the
/// business clock is the system's (the record's creation time is its
/// instant then, and records stay as they were), `instant` itself when the
/// business clock runs apart (`[testing] shared_clock` moved).
pub fn recorded(instant: DateTime<FixedOffset>) -> Option<DateTime<Utc>> {
    (offset_s() != 0).then(|| instant.with_timezone(&Utc))
}

/// The simulator's test clock (`/__sim/clock`): what the simulator takes as
/// now when it judges dates, whether or not the service follows it.
pub mod simulator {
    use super::*;

    /// Seconds the simulator's clock runs ahead of the system clock.
    pub fn offset_s() -> i64 {
        SIM_OFFSET_S.load(Ordering::SeqCst)
    }

    /// Moves the simulator's clock (and the business clock, when shared).
    pub fn set_offset_s(seconds: i64) {
        SIM_OFFSET_S.store(seconds, Ordering::SeqCst);
    }

    /// Now, on the simulator's clock, in Colombia.
    pub fn colombia_now() -> DateTime<FixedOffset> {
        (Utc::now() + chrono::Duration::seconds(offset_s()))
            .with_timezone(&crate::engine::model::colombia_offset())
    }
}
