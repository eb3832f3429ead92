//! The one "now" of the business rules that wait for days (the tacit
//! acceptance of an invoice, event 034): the system clock plus a test-only
//! offset. The service and the in-process simulator read it, so a test can
//! move both forward at once: `[testing] clock_offset_s` sets the offset at
//! start, `POST /__sim/clock {"offset_s": N}` changes it while running.
//! Transport timestamps (WS-Security, retries) keep the real clock.

use std::sync::atomic::{AtomicI64, Ordering};

use chrono::{DateTime, FixedOffset, Utc};

static OFFSET_S: AtomicI64 = AtomicI64::new(0);

/// Seconds the business clock runs ahead of the system clock.
pub fn offset_s() -> i64 {
    OFFSET_S.load(Ordering::SeqCst)
}

/// Sets the offset (tests and demos only).
pub fn set_offset_s(seconds: i64) {
    OFFSET_S.store(seconds, Ordering::SeqCst);
}

/// Now, on the business clock.
pub fn now() -> DateTime<Utc> {
    Utc::now() + chrono::Duration::seconds(offset_s())
}

/// [`now`] in Colombia (-05:00).
pub fn colombia_now() -> DateTime<FixedOffset> {
    now().with_timezone(&crate::engine::model::colombia_offset())
}
