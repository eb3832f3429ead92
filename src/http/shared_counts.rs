//! The per-key rate limit on a store several nodes share (spec §8,
//! docs/operations.md "Several nodes"), counted in the store in batches.
//!
//! A node takes requests from a key's count in the store ahead of use (one
//! `INSERT … ON CONFLICT` adds them all) and allows them from memory; what
//! it took and did not allow it gives back a few times a second. A take is
//! a share of what was left of the key's limit when the node last looked
//! ([`SHARE_OF_LEFT`]); once that share is small (near the limit) a take is
//! one request, so each request is counted in the store as it comes, as
//! without batches. Every request allowed on any node was first counted in
//! the store within the limit, so the limit holds exactly across nodes: the
//! 101st request of a minute limited to 100 is a 429 whichever node gets
//! it. What is taken and not yet used is counted against the key until it
//! is given back ([`GIVE_BACK_EVERY`]): meanwhile another node may refuse
//! a request the limit would allow, by at most what the others hold.
//!
//! `X-RateLimit-Remaining` is exact while requests are counted one by one
//! (near the limit, and for every limit below [`BATCHED_FROM`]); away from
//! the limit it is what this node knows: the store's count at its last take
//! less what it holds unused.

use std::sync::Arc;
use std::time::Duration;

use dashmap::DashMap;
use emisor_actors::rate_limiter::{minute_of, Check, RateDecision, WINDOW_S};
use emisor_store::{AsyncStore, StoreResult};

/// A take is this fraction of what was left of the key's limit.
pub const SHARE_OF_LEFT: u32 = 16;
/// A take smaller than this is one request (exact counting).
pub const MIN_TAKE: u32 = 16;
/// Limits below this are counted one request at a time throughout.
pub const BATCHED_FROM: u32 = SHARE_OF_LEFT * MIN_TAKE;
/// At most this many requests in one take (a few ticks of a busy node).
pub const MAX_TAKE: u32 = 1 << 16;
/// How often a node gives back what it holds unused.
pub const GIVE_BACK_EVERY: Duration = Duration::from_millis(200);

/// What this node holds of each key's count in the current minute.
#[derive(Debug, Default)]
pub struct SharedCounts {
    keys: DashMap<u64, Held>,
}

#[derive(Debug, Default, Clone, Copy)]
struct Held {
    minute: i64,
    /// Counted in the store by this node and not yet allowed.
    unused: u32,
    /// Counted in the store by this node and refused (past the limit).
    refused: u32,
    /// The key's count in the store as this node last saw it.
    counted: u32,
}

impl Held {
    /// Requests counted and made, as far as this node knows.
    fn made(&self) -> u32 {
        self.counted
            .saturating_sub(self.unused)
            .saturating_sub(self.refused)
    }
}

impl SharedCounts {
    /// The decision for one request of `c.key_id` from what this node holds,
    /// or `None` when it holds nothing: then [`take`](Self::take) says how
    /// many to count in the store.
    pub fn allow_held(&self, c: &Check) -> Option<RateDecision> {
        let minute = minute_of(c.now_unix);
        let mut held = self.keys.get_mut(&c.key_id)?;
        if held.minute != minute || held.unused == 0 {
            return None;
        }
        held.unused -= 1;
        Some(decision(true, held.made(), c))
    }

    /// How many requests of `c.key_id` to count in the store for this one:
    /// a share of what was left when this node last looked, or one.
    pub fn take(&self, c: &Check) -> u32 {
        if c.limit < BATCHED_FROM {
            return 1;
        }
        let minute = minute_of(c.now_unix);
        let counted = self
            .keys
            .get(&c.key_id)
            .filter(|h| h.minute == minute)
            .map_or(0, |h| h.counted);
        let share = c.limit.saturating_sub(counted) / SHARE_OF_LEFT;
        if share < MIN_TAKE {
            1
        } else {
            share.min(MAX_TAKE)
        }
    }

    /// The store counted `took` requests of `c.key_id`, making its count
    /// `count`: this request is allowed if the first of them was within the
    /// limit, and the rest within it are held for the next ones.
    pub fn took(&self, c: &Check, took: u32, count: u32) -> RateDecision {
        let minute = minute_of(c.now_unix);
        let before = count.saturating_sub(took);
        let within = c.limit.saturating_sub(before).min(took);
        let mut held = self.keys.entry(c.key_id).or_default();
        if held.minute != minute {
            *held = Held {
                minute,
                ..Held::default()
            };
        }
        held.unused += within.saturating_sub(1);
        held.refused += took - within;
        held.counted = held.counted.max(count);
        decision(within > 0, held.made(), c)
    }

    /// What this node holds unused or refused in the current minute, to be
    /// given back to the store (`(key, minute, n)` each), and no longer
    /// held; the keys of past minutes are forgotten.
    pub fn to_give_back(&self, now_unix: i64) -> Vec<(u64, i64, u32)> {
        let minute = minute_of(now_unix);
        self.keys.retain(|_, h| h.minute >= minute);
        let mut back = Vec::new();
        for mut held in self.keys.iter_mut() {
            let n = held.unused + held.refused;
            if n > 0 {
                back.push((*held.key(), held.minute, n));
                held.counted = held.counted.saturating_sub(n);
                held.unused = 0;
                held.refused = 0;
            }
        }
        back
    }
}

/// The decision for a request of `c`, `made` requests of the minute made.
fn decision(allowed: bool, made: u32, c: &Check) -> RateDecision {
    let reset_unix = minute_of(c.now_unix) + WINDOW_S;
    RateDecision {
        allowed,
        limit: c.limit,
        remaining: c.limit.saturating_sub(made),
        reset_unix,
        retry_after_s: (reset_unix - c.now_unix).max(1),
    }
}

/// The decision for one request on a shared store: from what this node
/// holds, or after counting a take in the store.
pub async fn check(
    store: &AsyncStore,
    counts: &SharedCounts,
    c: Check,
) -> StoreResult<RateDecision> {
    if let Some(d) = counts.allow_held(&c) {
        return Ok(d);
    }
    let took = counts.take(&c);
    let count = store
        .count_requests(c.key_id, minute_of(c.now_unix), took)
        .await?;
    Ok(counts.took(&c, took, count))
}

/// Gives back what this node holds unused every [`GIVE_BACK_EVERY`] (a
/// shared store only). A give-back that fails leaves those requests counted
/// for the rest of the minute: the limit is never passed for it.
pub fn start(store: &AsyncStore, counts: Arc<SharedCounts>) {
    if !store.is_shared() {
        return;
    }
    let store = store.clone();
    actix_web::rt::spawn(async move {
        let mut ticks = tokio::time::interval(GIVE_BACK_EVERY);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            let back = counts.to_give_back(chrono::Utc::now().timestamp());
            if back.is_empty() {
                continue;
            }
            if let Err(e) = store.uncount_requests(back).await {
                tracing::warn!(error = %e, "giving back requests held for the rate limit");
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Half past a minute.
    const NOW: i64 = 1_700_000_010;

    fn check(limit: u32) -> Check {
        Check {
            key_id: 7,
            limit,
            now_unix: NOW,
        }
    }

    /// The store's count, as one node's takes move it.
    struct Store(u32);

    impl Store {
        fn request(&mut self, counts: &SharedCounts, c: &Check) -> RateDecision {
            if let Some(d) = counts.allow_held(c) {
                return d;
            }
            let took = counts.take(c);
            self.0 += took;
            counts.took(c, took, self.0)
        }

        fn give_back(&mut self, counts: &SharedCounts) {
            for (_, _, n) in counts.to_give_back(NOW) {
                self.0 -= n;
            }
        }
    }

    #[test]
    fn a_small_limit_is_counted_one_by_one_with_exact_headers() {
        let (counts, mut store) = (SharedCounts::default(), Store(0));
        let c = check(100);
        for i in 1..=100 {
            assert_eq!(counts.take(&c), 1);
            let d = store.request(&counts, &c);
            assert!(d.allowed, "{i}");
            assert_eq!(d.remaining, 100 - i);
        }
        let d = store.request(&counts, &c);
        assert!(!d.allowed);
        assert_eq!(d.remaining, 0);
        assert_eq!(d.retry_after_s, 30);
        // The refused one is given back.
        store.give_back(&counts);
        assert_eq!(store.0, 100);
    }

    #[test]
    fn nodes_taking_shares_never_allow_more_than_the_limit() {
        let limit = 10_000;
        let c = check(limit);
        let nodes: Vec<SharedCounts> = (0..3).map(|_| SharedCounts::default()).collect();
        let mut store = Store(0);
        let mut allowed = 0;
        // The store's round trips while away from the limit.
        let mut takes = 0;
        for i in 0..30_000 {
            let node = &nodes[i % 3];
            if counts_held(node) == 0 && allowed < limit - BATCHED_FROM {
                takes += 1;
            }
            if store.request(node, &c).allowed {
                allowed += 1;
            }
            if i % 997 == 0 {
                for n in &nodes {
                    store.give_back(n);
                }
            }
        }
        assert_eq!(
            allowed, limit,
            "every request within the limit, none past it"
        );
        assert!(takes < 200, "batched away from the limit: {takes} takes");
        for n in &nodes {
            store.give_back(n);
        }
        assert_eq!(store.0, limit, "what was not made is given back");
    }

    fn counts_held(counts: &SharedCounts) -> u32 {
        counts.keys.get(&7).map_or(0, |h| h.unused)
    }

    #[test]
    fn a_take_is_a_share_of_what_is_left_then_one_near_the_limit() {
        let (counts, mut store) = (SharedCounts::default(), Store(0));
        let c = check(100_000);
        assert_eq!(counts.take(&c), 100_000 / SHARE_OF_LEFT);
        let d = store.request(&counts, &c);
        assert!(d.allowed);
        assert_eq!(d.remaining, 99_999, "what this node made");
        // Another node counted most of the minute meanwhile.
        store.0 = 99_900;
        counts.to_give_back(NOW);
        let d = store.request(&counts, &c);
        assert!(d.allowed);
        assert_eq!(counts.take(&c), 1, "near the limit: one by one");
        // A new minute starts afresh.
        let next = Check {
            now_unix: NOW + 60,
            ..c
        };
        assert_eq!(counts.take(&next), 100_000 / SHARE_OF_LEFT);
    }

    #[test]
    fn a_take_past_the_limit_allows_what_is_within_and_gives_back_the_rest() {
        let (counts, mut store) = (SharedCounts::default(), Store(0));
        let c = check(1_000);
        // The node last saw nothing counted; the store holds 990.
        store.0 = 990;
        let took = counts.take(&c);
        assert_eq!(took, 1_000 / SHARE_OF_LEFT);
        store.0 += took;
        let d = counts.took(&c, took, store.0);
        assert!(d.allowed);
        let mut more = 0;
        while counts.allow_held(&c).is_some() {
            more += 1;
        }
        assert_eq!(more, 9, "ten within the limit in all");
        store.give_back(&counts);
        assert_eq!(store.0, 1_000);
        let d = store.request(&counts, &c);
        assert!(!d.allowed);
    }
}
