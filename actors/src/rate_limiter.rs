//! Per-key request limiter (spec §8): a fixed one-minute window per API key,
//! aligned to the minute so `X-RateLimit-Reset` is the same for every caller
//! of a key. The windows are shared ([`RateWindows`], a `DashMap`): the HTTP
//! workers check on their own thread, since a round trip to another thread
//! cost more CPU than the check (two thread wake-ups a request:
//! docs/performance.md). The actor owns them: it prunes stale windows every minute and
//! answers [`Check`] for callers that only hold its address; a restart keeps
//! them.

use std::sync::Arc;

use actix::{Actor, AsyncContext, Context, Handler, Message, MessageResult};
use dashmap::DashMap;

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

impl RateDecision {
    /// The decision for a request that made `count` the key's count in
    /// the current minute, counted elsewhere (a store several nodes
    /// share): the same answer [`RateWindows::check`] gives.
    pub fn of_count(count: u32, limit: u32, now_unix: i64) -> RateDecision {
        let start = now_unix - now_unix.rem_euclid(WINDOW_S);
        let reset_unix = start + WINDOW_S;
        RateDecision {
            allowed: count <= limit,
            limit,
            remaining: limit.saturating_sub(count),
            reset_unix,
            retry_after_s: (reset_unix - now_unix).max(1),
        }
    }
}

/// The minute `now_unix` falls in: its start (Unix seconds).
pub fn minute_of(now_unix: i64) -> i64 {
    now_unix - now_unix.rem_euclid(WINDOW_S)
}

/// The windows of every key seen in the current minute.
#[derive(Debug, Default)]
pub struct RateWindows {
    windows: DashMap<u64, Window>,
}

impl RateWindows {
    /// The decision for one request, counted when allowed (atomic per key:
    /// the key's entry is locked while it is read and updated).
    pub fn check(&self, c: Check) -> RateDecision {
        let start = c.now_unix - c.now_unix.rem_euclid(WINDOW_S);
        let mut w = self
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
    fn prune(&self, now_unix: i64) {
        let start = now_unix - now_unix.rem_euclid(WINDOW_S);
        self.windows.retain(|_, w| w.start >= start);
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.windows.len()
    }
}

/// Owns the shared windows (see the module's comment).
#[derive(Debug, Default)]
pub struct RateLimiter {
    windows: Arc<RateWindows>,
}

impl RateLimiter {
    pub fn new() -> Self {
        Self::default()
    }

    /// An actor over windows that outlive it (a restarted actor keeps the
    /// counts of the minute).
    pub fn over(windows: Arc<RateWindows>) -> Self {
        RateLimiter { windows }
    }

    /// The decision, also used directly by tests and benchmarks.
    pub fn check(&mut self, c: Check) -> RateDecision {
        self.windows.check(c)
    }
}

impl Actor for RateLimiter {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.run_interval(
            std::time::Duration::from_secs(WINDOW_S as u64),
            |this, _| {
                this.windows.prune(chrono::Utc::now().timestamp());
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
    fn a_count_kept_elsewhere_gives_the_same_decisions() {
        let windows = RateWindows::default();
        let t = 1_700_000_020;
        // Counted elsewhere, every request counts, refused ones too.
        for (n, now) in (1..=5).zip([t, t, t + 1, t + 5, t + 19]) {
            let c = Check {
                key_id: 1,
                limit: 3,
                now_unix: now,
            };
            assert_eq!(RateDecision::of_count(n, 3, now), windows.check(c), "{n}");
        }
        assert_eq!(minute_of(t), 1_699_999_980);
    }

    #[test]
    fn prune_keeps_only_the_current_minute() {
        let mut l = RateLimiter::new();
        check(&mut l, 1, 0);
        check(&mut l, 2, 120);
        l.windows.prune(125);
        assert_eq!(l.windows.len(), 1);
    }

    #[test]
    fn threads_checking_one_key_at_once_are_allowed_exactly_the_limit() {
        let windows = Arc::new(RateWindows::default());
        let allowed: usize = std::thread::scope(|s| {
            let runs: Vec<_> = (0..4)
                .map(|_| {
                    let w = &windows;
                    s.spawn(move || {
                        (0..500)
                            .filter(|_| {
                                w.check(Check {
                                    key_id: 7,
                                    limit: 1_000,
                                    now_unix: 1_700_000_000,
                                })
                                .allowed
                            })
                            .count()
                    })
                })
                .collect();
            runs.into_iter().filter_map(|r| r.join().ok()).sum()
        });
        assert_eq!(allowed, 1_000);
    }

    #[actix::test]
    async fn an_actor_started_over_the_same_windows_keeps_the_minutes_counts() {
        let windows = Arc::new(RateWindows::default());
        let c = Check {
            key_id: 1,
            limit: 2,
            now_unix: 1_700_000_000,
        };
        let first = RateLimiter::over(windows.clone()).start();
        assert_eq!(first.send(c).await.map(|d| d.remaining).ok(), Some(1));
        // A restarted actor (the supervisor's factory) and a caller on its
        // own thread see the same window.
        let second = RateLimiter::over(windows.clone()).start();
        assert_eq!(second.send(c).await.map(|d| d.remaining).ok(), Some(0));
        assert!(!windows.check(c).allowed);
    }
}
