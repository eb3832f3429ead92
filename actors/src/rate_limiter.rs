//! Per-key request limiter (spec §8): a fixed one-minute window per API key,
//! aligned to the minute so `X-RateLimit-Reset` is the same for every caller
//! of a key. One actor owns all windows; the check is a few hash-map
//! operations, so a single mailbox keeps up with the HTTP workers.

use std::collections::HashMap;

use actix::{Actor, AsyncContext, Context, Handler, Message, MessageResult};

use crate::{Ping, Pong};

pub const WINDOW_S: i64 = 60;

/// May this key make one more request at `now_unix`?
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "RateDecision")]
pub struct Check {
    pub key_id: u64,
    pub limit: u32,
    pub now_unix: i64,
}

/// What the HTTP layer turns into `X-RateLimit-*` and `Retry-After`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateDecision {
    pub allowed: bool,
    pub limit: u32,
    pub remaining: u32,
    /// Unix time at which the window resets.
    pub reset_unix: i64,
    /// Seconds to wait; only meaningful when `allowed` is false.
    pub retry_after_s: i64,
}

#[derive(Debug, Clone, Copy)]
struct Window {
    start: i64,
    count: u32,
}

/// The windows of every key seen in the current minute.
#[derive(Debug, Default)]
pub struct RateLimiter {
    windows: HashMap<u64, Window>,
}

impl RateLimiter {
    pub fn new() -> Self {
        Self::default()
    }

    /// The pure decision, also used directly by tests and benchmarks.
    pub fn check(&mut self, c: Check) -> RateDecision {
        let start = c.now_unix - c.now_unix.rem_euclid(WINDOW_S);
        let w = self
            .windows
            .entry(c.key_id)
            .or_insert(Window { start, count: 0 });
        if w.start != start {
            *w = Window { start, count: 0 };
        }
        let reset_unix = start + WINDOW_S;
        let allowed = w.count < c.limit;
        if allowed {
            w.count += 1;
        }
        RateDecision {
            allowed,
            limit: c.limit,
            remaining: c.limit.saturating_sub(w.count),
            reset_unix,
            retry_after_s: (reset_unix - c.now_unix).max(1),
        }
    }

    /// Drops windows older than the current minute.
    fn prune(&mut self, now_unix: i64) {
        let start = now_unix - now_unix.rem_euclid(WINDOW_S);
        self.windows.retain(|_, w| w.start >= start);
    }
}

impl Actor for RateLimiter {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.run_interval(
            std::time::Duration::from_secs(WINDOW_S as u64),
            |this, _| {
                this.prune(chrono::Utc::now().timestamp());
            },
        );
    }
}

impl Handler<Check> for RateLimiter {
    type Result = MessageResult<Check>;

    fn handle(&mut self, msg: Check, _: &mut Self::Context) -> Self::Result {
        MessageResult(self.check(msg))
    }
}

impl Handler<Ping> for RateLimiter {
    type Result = MessageResult<Ping>;

    fn handle(&mut self, _: Ping, _: &mut Self::Context) -> Self::Result {
        MessageResult(Pong)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(l: &mut RateLimiter, key_id: u64, now_unix: i64) -> RateDecision {
        l.check(Check {
            key_id,
            limit: 3,
            now_unix,
        })
    }

    #[test]
    fn limit_then_refuse_until_the_minute_turns() {
        let mut l = RateLimiter::new();
        let t = 1_700_000_020; // 40 s into the minute starting at 1_699_999_980
        assert_eq!(check(&mut l, 1, t).remaining, 2);
        assert_eq!(check(&mut l, 1, t).remaining, 1);
        let third = check(&mut l, 1, t + 1);
        assert!(third.allowed);
        assert_eq!(third.remaining, 0);
        let fourth = check(&mut l, 1, t + 5);
        assert!(!fourth.allowed);
        assert_eq!(fourth.reset_unix, 1_700_000_040);
        assert_eq!(fourth.retry_after_s, 15);
        assert!(check(&mut l, 2, t).allowed, "other keys unaffected");
        assert!(check(&mut l, 1, 1_700_000_040).allowed, "new window");
    }

    #[test]
    fn prune_keeps_only_the_current_minute() {
        let mut l = RateLimiter::new();
        check(&mut l, 1, 0);
        check(&mut l, 2, 120);
        l.prune(125);
        assert_eq!(l.windows.len(), 1);
    }
}
