//! Wrong admin tokens, counted per client address. The token has 256 bits,
//! so guessing it is hopeless; counting still makes a guesser visible and
//! slow: each wrong token is logged (never the token itself), and an
//! address that sent [`BUDGET`] wrong tokens within a [`WINDOW`] gets 429
//! with `Retry-After` on every admin request until the window ends, the
//! right token included (an answer that told the right token apart would
//! let the guessing go on at full speed).
//!
//! A limiter rather than a fixed delay on each failure: a delay holds no
//! more than a timer per request, so a guesser with many connections is
//! not slowed at all, while a limiter caps each address at [`BUDGET`]
//! guesses a minute. IPv6 addresses count by their /64, which one client
//! usually holds whole.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Wrong tokens an address may send within a [`WINDOW`].
pub const BUDGET: u32 = 10;
/// The window the [`BUDGET`] counts in, from an address's first failure.
pub const WINDOW: Duration = Duration::from_secs(60);
/// Addresses tracked at once; past it, expired windows are dropped.
const MAX_ADDRESSES: usize = 10_000;

#[derive(Debug, Clone, Copy)]
struct Window {
    started: Instant,
    failures: u32,
}

impl Window {
    fn live(&self, now: Instant) -> bool {
        now.saturating_duration_since(self.started) < WINDOW
    }
}

#[derive(Debug, Default)]
pub struct TokenFailures {
    by_address: Mutex<HashMap<IpAddr, Window>>,
}

/// The address a client is counted by: itself, or its /64 for IPv6.
pub fn counted_address(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(std::net::Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
    }
}

impl TokenFailures {
    /// Whole seconds `ip` must wait before its next admin request, if it
    /// used up its budget.
    pub fn wait(&self, ip: IpAddr, now: Instant) -> Option<u64> {
        let map = self.by_address.lock().unwrap_or_else(|e| e.into_inner());
        let w = map.get(&counted_address(ip))?;
        if !w.live(now) || w.failures < BUDGET {
            return None;
        }
        let left = WINDOW.saturating_sub(now.saturating_duration_since(w.started));
        Some(left.as_secs_f64().ceil().max(1.0) as u64)
    }

    /// Counts a wrong token from `ip`; returns the failures in its window.
    pub fn failed(&self, ip: IpAddr, now: Instant) -> u32 {
        let mut map = self.by_address.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() >= MAX_ADDRESSES {
            map.retain(|_, w| w.live(now));
        }
        let w = map.entry(counted_address(ip)).or_insert(Window {
            started: now,
            failures: 0,
        });
        if !w.live(now) {
            *w = Window {
                started: now,
                failures: 0,
            };
        }
        w.failures = w.failures.saturating_add(1);
        w.failures
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_waits_once_its_budget_is_spent_and_no_other_does() {
        let f = TokenFailures::default();
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let b: IpAddr = "192.0.2.2".parse().unwrap();
        let t0 = Instant::now();
        for n in 1..BUDGET {
            assert_eq!(f.failed(a, t0), n);
            assert_eq!(f.wait(a, t0), None);
        }
        assert_eq!(f.failed(a, t0), BUDGET);
        assert_eq!(f.wait(a, t0), Some(60));
        assert_eq!(f.wait(a, t0 + Duration::from_secs(45)), Some(15));
        assert_eq!(f.wait(b, t0), None, "another address is not held");
        // The window ends: the address starts afresh.
        let later = t0 + WINDOW;
        assert_eq!(f.wait(a, later), None);
        assert_eq!(f.failed(a, later), 1);
    }

    #[test]
    fn ipv6_counts_by_its_64_and_mapped_ipv4_as_ipv4() {
        let one: IpAddr = "2001:db8:1:2::1".parse().unwrap();
        let other: IpAddr = "2001:db8:1:2:ffff::9".parse().unwrap();
        assert_eq!(counted_address(one), counted_address(other));
        let mapped: IpAddr = "::ffff:192.0.2.1".parse().unwrap();
        assert_eq!(
            counted_address(mapped),
            "192.0.2.1".parse::<IpAddr>().unwrap()
        );
    }
}
