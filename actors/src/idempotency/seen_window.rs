//! The payloads that made documents within the duplicate window, kept
//! compact. Payloads are grouped into generations by when they were noted.
//! Only the newest generation is a hash map (a 16-byte fingerprint, a
//! document id and a time an entry); a closed one becomes sorted columns of
//! 16 bytes an entry with a small index (no load-factor slack, no rehash
//! peaks), and a generation is dropped whole once its newest entry is past
//! the window, so nothing sweeps entries one by one and the allocator gets
//! whole blocks back.
//!
//! A closed generation keeps, of each fingerprint, the top bits its index
//! tells (13 to 17 at a busy server's generations) and the low 64 bits, a
//! document id as 32 bits after the generation's smallest,
//! and a time as a 32-bit count of ticks after the window before its newest
//! entry (a tick is the power of two of nanoseconds that fits a window in 32
//! bits: 128 ns for 5 minutes, 32 µs for a day), rounded up, so an entry
//! lasts up to a tick longer than the window, never shorter.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

/// How many generations a window spans: more make the current map (the
/// one part with load-factor slack) and the peak of closing it smaller, at
/// a lookup more a generation.
const GENERATIONS: u32 = 16;

/// Any odd constant: multiplying by it is a bijection modulo 2^128.
const COMPANY_MIX: u128 = 0x9E37_79B9_7F4A_7C15_F39C_C060_5CED_C835;

/// A payload's key: the first 128 bits of its SHA-256, big-endian, XORed
/// with a mask per company.
///
/// Distinct companies get distinct masks (the multiplication is a
/// bijection), so one body sent by two companies gets two keys. Two
/// different bodies collide only if their hash prefixes differ by exactly
/// the XOR of their companies' masks (zero within a company): a fixed
/// difference, which SHA-256's output hits no more often than it hits
/// equality. Closed generations keep 77 to 81 of the 128 bits at 2,000
/// documents a second (fewer in a generation of a few thousand entries), so
/// a different body is taken for a remembered one with a chance of about
/// one in 2^57 a lookup against a full window; someone trying to make it
/// happen on purpose must find a collision of that many bits (about 2^39
/// hashes) among their own company's bodies, and gets back one of their
/// own documents.
pub(super) fn fingerprint(company: u64, payload_hash: &[u8; 32]) -> u128 {
    let mut prefix = [0u8; 16];
    prefix.copy_from_slice(&payload_hash[..16]);
    u128::from_be_bytes(prefix) ^ u128::from(company).wrapping_mul(COMPANY_MIX)
}

/// Nanoseconds since the window's epoch (when it was made), negative before
/// it: payloads remembered at start-up are older than the window itself.
/// An `i64` spans ±292 years; beyond that it saturates.
type Nanos = i64;

/// Marks an entry superseded by a newer note of its payload (see
/// [`SeenWindow::note`]); never within the window.
const FORGOTTEN: Nanos = Nanos::MIN;

fn nanos(d: Duration) -> Nanos {
    Nanos::try_from(d.as_nanos()).unwrap_or(Nanos::MAX)
}

/// Whether something at `at` is less than `window` before `now` (a time
/// after `now` counts as now, as `Instant::saturating_duration_since` does).
fn within(at: Nanos, now: Nanos, window: Nanos) -> bool {
    at != FORGOTTEN && now.saturating_sub(at).max(0) < window
}

/// The bucket of `key` in an index of `2^bits` buckets: its top bits.
fn bucket(key: u128, bits: u32) -> usize {
    // `checked_shr` covers `bits == 0` (a shift by 128); the result is
    // below 2^bits, so it fits.
    key.checked_shr(u128::BITS - bits).unwrap_or(0) as usize
}

/// What a closed generation keeps of `key` besides its bucket: its low 64
/// bits (so every bit kept is one the bucket does not already tell).
fn remainder(key: u128) -> u64 {
    // Truncation intended.
    key as u64
}

/// The shift from nanoseconds to ticks: the smallest that fits a window
/// (and the rounding up) in a `u32` tick count, with 0 left for "none".
fn tick_shift(window: Nanos) -> u32 {
    let mut shift = 0;
    while window.max(0) >> shift >= Nanos::from(u32::MAX) - 1 {
        shift += 1;
    }
    shift
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Slot {
    document_id: u64,
    at: Nanos,
}

/// A closed generation's document ids.
#[derive(Debug)]
enum Ids {
    /// After the smallest, when they all fit 32 bits of it (always, for
    /// the store's sequential ids).
    After {
        first: u64,
        offsets: Box<[u32]>,
    },
    Whole(Box<[u64]>),
}

impl Ids {
    fn new(ids: Vec<u64>) -> Self {
        let first = ids.iter().copied().min().unwrap_or(0);
        let offsets: Option<Box<[u32]>> = ids
            .iter()
            .map(|&id| u32::try_from(id - first).ok())
            .collect();
        match offsets {
            Some(offsets) => Ids::After { first, offsets },
            None => Ids::Whole(ids.into_boxed_slice()),
        }
    }

    fn get(&self, i: usize) -> Option<u64> {
        match self {
            Ids::After { first, offsets } => Some(first + u64::from(*offsets.get(i)?)),
            Ids::Whole(ids) => ids.get(i).copied(),
        }
    }
}

/// A closed generation: its entries sorted by key, as columns.
#[derive(Debug)]
struct Generation {
    /// Its newest entry's time: the whole generation expires with it.
    newest: Nanos,
    /// Ticks count from here (a window before `newest`): anything older
    /// is past the window whenever the generation is asked.
    base: Nanos,
    shift: u32,
    /// The [`remainder`]s of the keys, ascending within each bucket;
    /// `ids` and `ticks` in the same order.
    keys: Box<[u64]>,
    ids: Ids,
    /// Ticks after `base`, rounded up; 0 for forgotten or already past.
    ticks: Box<[u32]>,
    /// The keys whose top `bits` bits are `b` are
    /// `keys[starts[b]..starts[b + 1]]`. Fingerprints are uniform, so a
    /// lookup reads a handful of neighbouring keys instead of binary
    /// searching ~17 levels of cold memory; the bucket is still binary
    /// searched, so crafted bodies piling into one bucket cost no more
    /// than a plain binary search.
    starts: Box<[u32]>,
    bits: u32,
}

impl Generation {
    fn close(entries: HashMap<u128, Slot>, window: Nanos, shift: u32) -> Self {
        // 2^bits in (n/8, n/4]: four to eight keys a bucket on average,
        // half a byte to a byte of index an entry.
        let bits = (usize::BITS - entries.len().leading_zeros()).saturating_sub(3);
        let mut entries: Vec<(u128, Slot)> = entries.into_iter().collect();
        entries.sort_unstable_by_key(|&(key, _)| (bucket(key, bits), remainder(key)));
        let newest = entries.iter().map(|(_, s)| s.at).max().unwrap_or(FORGOTTEN);
        let base = newest.saturating_sub(window);
        let mut starts = vec![0u32; (1 << bits) + 1];
        let mut keys = Vec::with_capacity(entries.len());
        let mut ids = Vec::with_capacity(entries.len());
        let mut ticks = Vec::with_capacity(entries.len());
        for (i, (key, slot)) in entries.into_iter().enumerate() {
            // A generation is one span of a window's notes: far fewer
            // than 2^32.
            starts[bucket(key, bits) + 1] = u32::try_from(i + 1).unwrap_or(u32::MAX);
            keys.push(remainder(key));
            ids.push(slot.document_id);
            ticks.push(Self::tick(slot.at, base, shift));
        }
        // An empty bucket starts and ends where the one before it ended.
        for b in 1..starts.len() {
            starts[b] = starts[b].max(starts[b - 1]);
        }
        Generation {
            newest,
            base,
            shift,
            keys: keys.into_boxed_slice(),
            ids: Ids::new(ids),
            ticks: ticks.into_boxed_slice(),
            starts: starts.into_boxed_slice(),
            bits,
        }
    }

    /// `at` in ticks after `base`, rounded up (0 if not after it).
    fn tick(at: Nanos, base: Nanos, shift: u32) -> u32 {
        if at == FORGOTTEN || at <= base {
            return 0;
        }
        let after = at.saturating_sub(base);
        let ticks = (after + ((1 << shift) - 1)) >> shift;
        u32::try_from(ticks).unwrap_or(u32::MAX)
    }

    fn at(&self, i: usize) -> Nanos {
        match self.ticks.get(i) {
            None | Some(0) => FORGOTTEN,
            Some(&t) => self.base.saturating_add(Nanos::from(t) << self.shift),
        }
    }

    fn position(&self, key: u128) -> Option<usize> {
        let b = bucket(key, self.bits);
        let start = *self.starts.get(b)? as usize;
        let end = *self.starts.get(b + 1)? as usize;
        let i = self
            .keys
            .get(start..end)?
            .binary_search(&remainder(key))
            .ok()?;
        Some(start + i)
    }

    fn get(&self, key: u128) -> Option<Slot> {
        let i = self.position(key)?;
        Some(Slot {
            document_id: self.ids.get(i)?,
            at: self.at(i),
        })
    }

    /// Marks entry `i` forgotten.
    fn forget(&mut self, i: usize) {
        if let Some(tick) = self.ticks.get_mut(i) {
            *tick = 0;
        }
    }

    /// How many of its entries are within the window before `now`.
    fn live(&self, now: Nanos, window: Nanos) -> usize {
        (0..self.keys.len())
            .filter(|&i| within(self.at(i), now, window))
            .count()
    }
}

/// Which document each payload made within the window, by fingerprint.
///
/// Like one map of fingerprint → (document, time) it holds at most one live
/// entry a payload: noting a payload again supersedes the older entry
/// (unless that one is newer). Newer entries live in newer generations, so
/// a lookup returns the first entry it finds, newest generation first.
#[derive(Debug)]
pub(super) struct SeenWindow {
    epoch: Instant,
    window: Nanos,
    /// A generation's length: a sixteenth of the window.
    span: Nanos,
    /// Closed generations' [`tick_shift`].
    shift: u32,
    /// The generation taking notes, opened at `opened`.
    current: HashMap<u128, Slot>,
    opened: Nanos,
    /// Closed generations, oldest first.
    closed: VecDeque<Generation>,
}

impl SeenWindow {
    pub(super) fn new(window: Duration, now: Instant) -> Self {
        let window = nanos(window);
        SeenWindow {
            epoch: now,
            window,
            span: (window / Nanos::from(GENERATIONS)).max(1),
            shift: tick_shift(window),
            current: HashMap::new(),
            opened: 0,
            closed: VecDeque::new(),
        }
    }

    fn since_epoch(&self, t: Instant) -> Nanos {
        match t.checked_duration_since(self.epoch) {
            Some(after) => nanos(after),
            // At least -i64::MAX: never `FORGOTTEN`.
            None => -nanos(self.epoch.duration_since(t)),
        }
    }

    /// The document made from payload `key` within the window before `now`.
    pub(super) fn get(&self, key: u128, now: Instant) -> Option<u64> {
        let found = match self.current.get(&key) {
            Some(slot) => *slot,
            None => self.closed.iter().rev().find_map(|g| g.get(key))?,
        };
        within(found.at, self.since_epoch(now), self.window).then_some(found.document_id)
    }

    /// Remembers that payload `key` made `document_id` at `at`; the newest
    /// document of a payload wins.
    pub(super) fn note(&mut self, key: u128, document_id: u64, at: Instant) {
        let at = self.since_epoch(at);
        self.roll(at);
        if let Some(old) = self.current.get(&key) {
            if old.at > at {
                return;
            }
            // The insert below replaces it.
        } else if let Some((g, i)) = self
            .closed
            .iter_mut()
            .rev()
            .find_map(|g| g.position(key).map(|i| (g, i)))
        {
            if g.at(i) > at {
                return;
            }
            // Kept until its generation goes, but no longer counted.
            g.forget(i);
        }
        self.current.insert(key, Slot { document_id, at });
    }

    /// Closes the current generation once it is a span old (if it holds
    /// anything) and opens the next at `now`.
    fn roll(&mut self, now: Nanos) {
        if now.saturating_sub(self.opened) < self.span {
            return;
        }
        let entries = std::mem::take(&mut self.current);
        if !entries.is_empty() {
            self.closed
                .push_back(Generation::close(entries, self.window, self.shift));
        }
        self.opened = now;
    }

    /// Rolls the generations and drops every closed one whose newest entry
    /// is past the window before `now`: O(generations), so every claim can
    /// run it. The current generation is closed by the first roll a span
    /// after it opened, and then expires like any other.
    pub(super) fn prune(&mut self, now: Instant) {
        let now = self.since_epoch(now);
        self.roll(now);
        let window = self.window;
        self.closed.retain(|g| within(g.newest, now, window));
    }

    /// How many payloads are remembered within the window before `now`,
    /// exactly: O(entries), for stats.
    pub(super) fn len(&self, now: Instant) -> usize {
        let now = self.since_epoch(now);
        let window = self.window;
        self.current
            .values()
            .filter(|s| within(s.at, now, window))
            .count()
            + self
                .closed
                .iter()
                .map(|g| g.live(now, window))
                .sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WINDOW: Duration = Duration::from_secs(300);
    const SPAN: Duration = Duration::from_millis(18_750);

    /// Uniform fingerprints without hashing anything (xorshift).
    struct Keys(u64);

    impl Keys {
        fn next(&mut self) -> u128 {
            let mut half = || {
                self.0 ^= self.0 << 13;
                self.0 ^= self.0 >> 7;
                self.0 ^= self.0 << 17;
                self.0
            };
            (u128::from(half()) << 64) | u128::from(half())
        }
    }

    impl SeenWindow {
        fn generations(&self) -> usize {
            self.closed.len() + usize::from(!self.current.is_empty())
        }

        fn entries(&self) -> usize {
            self.current.len() + self.closed.iter().map(|g| g.keys.len()).sum::<usize>()
        }

        /// Heap bytes, computed from the lengths and `capacity()`s: a
        /// hashbrown table has `capacity / 7 * 8` buckets (from 8 up) of
        /// one entry plus one control byte.
        fn heap_bytes(&self) -> usize {
            let closed: usize = self
                .closed
                .iter()
                .map(|g| {
                    let ids = match &g.ids {
                        Ids::After { offsets, .. } => offsets.len() * size_of::<u32>(),
                        Ids::Whole(ids) => ids.len() * size_of::<u64>(),
                    };
                    g.keys.len() * size_of::<u64>()
                        + ids
                        + g.ticks.len() * size_of::<u32>()
                        + g.starts.len() * size_of::<u32>()
                })
                .sum();
            closed + map_bytes(self.current.capacity(), size_of::<(u128, Slot)>())
        }
    }

    fn map_bytes(capacity: usize, entry: usize) -> usize {
        let buckets = if capacity < 7 {
            capacity + usize::from(capacity > 0)
        } else {
            capacity / 7 * 8
        };
        buckets * (entry + 1)
    }

    #[test]
    fn an_entry_is_found_within_the_window_and_not_after() {
        let t = Instant::now();
        let mut w = SeenWindow::new(WINDOW, t);
        w.note(7, 42, t);
        assert_eq!(w.get(7, t), Some(42));
        assert_eq!(w.get(8, t), None);
        // Closed into a sorted generation: still found.
        w.prune(t + SPAN);
        assert_eq!(w.closed.len(), 1);
        assert_eq!(w.get(7, t + WINDOW - Duration::from_nanos(1)), Some(42));
        assert_eq!(w.get(7, t + WINDOW), None);
        assert_eq!(w.len(t), 1);
        assert_eq!(w.len(t + WINDOW), 0);
    }

    #[test]
    fn the_newest_document_of_a_payload_wins_across_generations() {
        let t = Instant::now();
        let mut w = SeenWindow::new(WINDOW, t);
        w.note(7, 1, t);
        w.note(7, 2, t + SPAN * 2);
        assert_eq!(w.closed.len(), 1);
        assert_eq!(w.get(7, t + SPAN * 2), Some(2));
        // An older note does not override it, in a later generation either.
        w.note(7, 3, t + SPAN);
        w.note(7, 4, t + SPAN * 4);
        w.note(7, 5, t + SPAN * 3);
        assert_eq!(w.get(7, t + SPAN * 4), Some(4));
        // One payload, however many generations saw it.
        assert_eq!(w.len(t + SPAN * 4), 1);
        // It lasts a window from its newest note.
        assert_eq!(w.get(7, t + SPAN * 4 + WINDOW / 2), Some(4));
        assert_eq!(w.get(7, t + SPAN * 4 + WINDOW), None);
    }

    #[test]
    fn generations_are_dropped_whole_after_the_window() {
        let t = Instant::now();
        let mut w = SeenWindow::new(WINDOW, t);
        let mut keys = Keys(0x9E37_79B9_7F4A_7C15);
        let step = Duration::from_millis(100);
        let notes = 2 * WINDOW.as_millis() as u32 / 100;
        let mut last = t;
        for i in 0..notes {
            last = t + step * i;
            w.note(keys.next(), u64::from(i), last);
            w.prune(last);
            // A window and at most a span more: 17 generations at most.
            assert!(w.generations() <= 17, "{}", w.generations());
            assert!(w.entries() <= 3000 + 188, "{}", w.entries());
        }
        assert_eq!(w.len(last), 3000);
        w.prune(last + WINDOW);
        assert_eq!((w.generations(), w.entries(), w.len(last)), (0, 0, 0));
        assert_eq!(w.heap_bytes(), 0);
    }

    #[test]
    fn entries_from_before_the_epoch_count_within_the_window_only() {
        let t = Instant::now() + WINDOW * 2;
        let mut w = SeenWindow::new(WINDOW, t);
        w.note(1, 10, t - Duration::from_secs(60));
        w.note(2, 11, t - WINDOW - Duration::from_secs(1));
        assert_eq!(w.get(1, t), Some(10));
        assert_eq!(w.get(2, t), None);
        assert_eq!(w.len(t), 1);
        w.prune(t + SPAN);
        assert_eq!(w.get(1, t + SPAN), Some(10));
        assert_eq!(w.get(1, t + WINDOW - Duration::from_secs(60)), None);
    }

    #[test]
    fn two_companies_with_the_same_body_have_distinct_keys() {
        let hash = [7u8; 32];
        let (a, b) = (fingerprint(1, &hash), fingerprint(2, &hash));
        assert_ne!(a, b);
        assert_ne!(fingerprint(0, &hash), a);
        let t = Instant::now();
        let mut w = SeenWindow::new(WINDOW, t);
        w.note(a, 1, t);
        assert_eq!(w.get(a, t), Some(1));
        assert_eq!(w.get(b, t), None);
    }

    #[test]
    fn a_closed_generation_finds_every_key_and_no_other() {
        let t = Instant::now();
        for n in [1, 2, 7, 8, 9, 1000] {
            let mut w = SeenWindow::new(WINDOW, t);
            let mut keys = Keys(u64::try_from(n).unwrap());
            let noted: Vec<u128> = (0..n).map(|_| keys.next()).collect();
            for (i, &k) in noted.iter().enumerate() {
                w.note(k, i as u64, t);
            }
            // The extremes of the key space land in the first and last bucket.
            w.note(0, u64::MAX, t);
            w.note(u128::MAX, u64::MAX - 1, t);
            w.prune(t + SPAN);
            assert_eq!((w.closed.len(), w.entries()), (1, n + 2));
            for (i, &k) in noted.iter().enumerate() {
                assert_eq!(w.get(k, t), Some(i as u64));
            }
            assert_eq!(w.get(0, t), Some(u64::MAX));
            assert_eq!(w.get(u128::MAX, t), Some(u64::MAX - 1));
            for _ in 0..1000 {
                assert_eq!(w.get(keys.next(), t), None);
            }
        }
    }

    /// Notes `per_second` payloads for `seconds`, pruning as claims do.
    fn steady_load(per_second: u32, seconds: u32) -> SeenWindow {
        let t = Instant::now();
        let mut w = SeenWindow::new(WINDOW, t);
        let mut keys = Keys(1);
        let step = Duration::from_secs(1) / per_second;
        for i in 0..per_second * seconds {
            let now = t + step * i;
            w.prune(now);
            w.note(keys.next(), u64::from(i), now);
        }
        w
    }

    /// Bytes an entry, computed from `size_of` and the capacities: 16 bytes
    /// of entry and a half to one of index in a closed generation; the
    /// current map (a sixteenth of the entries) 33 bytes a bucket at a load
    /// of 7/16-7/8.
    #[test]
    fn steady_load_costs_under_24_bytes_an_entry() {
        let w = steady_load(20, 450);
        assert!((16..=17).contains(&w.generations()), "{}", w.generations());
        let bytes = w.heap_bytes() as f64 / w.entries() as f64;
        assert!(bytes < 24.0, "{bytes}");
    }

    #[test]
    fn a_closed_entry_lasts_the_window_and_at_most_a_tick_more() {
        // 128 ns ticks for five minutes; times off the tick grid.
        assert_eq!(tick_shift(nanos(WINDOW)), 7);
        let t = Instant::now();
        let mut w = SeenWindow::new(WINDOW, t);
        let at = t + Duration::from_nanos(1_000_003);
        w.note(7, 42, at);
        w.note(8, 43, at + Duration::from_nanos(77));
        w.prune(at + SPAN);
        assert_eq!(w.closed.len(), 1);
        assert_eq!(w.get(7, at + WINDOW - Duration::from_nanos(1)), Some(42));
        assert_eq!(w.get(7, at + WINDOW + Duration::from_nanos(128)), None);
        assert_eq!(w.get(8, at + WINDOW + Duration::from_nanos(76)), Some(43));
        assert_eq!(w.get(8, at + WINDOW + Duration::from_nanos(77 + 128)), None);
        // A short window is exact to the nanosecond.
        let short = Duration::from_millis(800);
        let mut w = SeenWindow::new(short, t);
        w.note(7, 42, at);
        w.prune(at + short / 8);
        assert_eq!(w.closed.len(), 1);
        assert_eq!(w.get(7, at + short - Duration::from_nanos(1)), Some(42));
        assert_eq!(w.get(7, at + short), None);
    }

    #[test]
    fn ids_far_apart_in_one_generation_are_kept_whole() {
        let t = Instant::now();
        let mut w = SeenWindow::new(WINDOW, t);
        w.note(1, 5, t);
        w.note(2, 5 + (1 << 40), t);
        w.note(3, u64::MAX, t);
        w.prune(t + SPAN);
        assert!(matches!(w.closed[0].ids, Ids::Whole(_)));
        assert_eq!(w.get(1, t), Some(5));
        assert_eq!(w.get(2, t), Some(5 + (1 << 40)));
        assert_eq!(w.get(3, t), Some(u64::MAX));
        w.note(4, 1 << 40, t + SPAN);
        w.note(5, (1 << 40) + u64::from(u32::MAX), t + SPAN);
        w.prune(t + SPAN * 2);
        assert!(matches!(w.closed[1].ids, Ids::After { first, .. } if first == 1 << 40));
        assert_eq!(w.get(5, t + SPAN), Some((1 << 40) + u64::from(u32::MAX)));
    }

    /// Full load (2 000 documents a second for 330 s) against one hash map
    /// of the same entries; prints both (its figures: docs/performance.md).
    /// Slow in a debug build, so run by hand:
    /// `cargo test -p emisor-actors --lib full_load -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn full_load_bytes_an_entry() {
        let w = steady_load(2000, 330);
        let entries = w.entries();
        let new = w.heap_bytes();
        let mut old: HashMap<(u64, [u8; 16]), (u64, Instant)> = HashMap::new();
        let mut keys = Keys(1);
        let t = Instant::now();
        for i in 0..entries {
            let k = keys.next().to_be_bytes();
            old.insert((i as u64, k), (i as u64, t));
        }
        let old_entry = size_of::<((u64, [u8; 16]), (u64, Instant))>();
        let old = map_bytes(old.capacity(), old_entry);
        println!(
            "{entries} entries in {} generations: new {new} B ({:.1} B/entry), \
             old map of {old_entry}-byte entries {old} B ({:.1} B/entry)",
            w.generations(),
            new as f64 / entries as f64,
            old as f64 / entries as f64,
        );
    }
}
