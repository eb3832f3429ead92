//! The derived id sets and counters a document's change moves (its state
//! set, its document-index sets and day counters, its per-(type, state)
//! count), gathered and written once per chunk and counter.
//!
//! A group commit's documents are numbered one after another, so they share
//! chunks and counters: written one document at a time, each chunk was
//! rewritten once per document, and sled copies a whole leaf for every
//! write. The flusher instead [defers](DerivedWriter::defer) each
//! document's changes and the next flush writes them all
//! ([`DerivedWriter::apply_deferred`]), before sled's flush and so before
//! any caller is answered.
//!
//! Crash safety: every change that moves a set or a count has a marker
//! written before its record (`doc_index`), and these writes come after
//! both, so a crash that lost some of them left the markers that name their
//! documents, which the repair checks. A new document (phase one) has no
//! marker: its pending-build entry, its numbering counter and its month's
//! usage are deferred too (phase one reads them through the deferred
//! values: [`DerivedWriter::counter`], [`DerivedWriter::usage`]), and a
//! watermark written after them ([`PENDING_WRITTEN_TO`]) tells the repair
//! which new documents to check.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use sled::Tree;

use crate::durability::file_log::{FileLog, FilePos};
use crate::encoding::codec::read_u64;
use crate::error::StoreResult;
use crate::indexes::counts::{count_value, read_usage, usage_value, PENDING_BUILD};
use crate::indexes::doc_index::IndexMarkers;
use crate::indexes::id_sets::{bit, IdSets};

/// `meta` key: every document up to this id has its state entry, counter
/// and usage written (phase one defers them to the next flush, so after a
/// crash those above it are checked: `repair`).
pub(crate) const PENDING_WRITTEN_TO: &[u8] = b"pending_entries_written_to";

/// What becomes of some ids of one chunk: the last change of an id wins.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Bits {
    set: u64,
    clear: u64,
}

impl Bits {
    fn add(&mut self, bits: u64) {
        self.set |= bits;
        self.clear &= !bits;
    }

    fn remove(&mut self, bits: u64) {
        self.clear |= bits;
        self.set &= !bits;
    }

    /// These changes, then `later`'s.
    fn then(&mut self, later: Bits) {
        self.remove(later.clear);
        self.add(later.set);
    }
}

/// One document-index set's chunks and the day counter that counts it
/// (none for a party's run).
#[derive(Debug, Default)]
struct IndexRun {
    cell: Option<Vec<u8>>,
    blocks: BTreeMap<u64, Bits>,
}

/// Changes not yet written (see the module's comment).
#[derive(Debug, Default)]
pub(crate) struct SetChanges {
    /// `documents_by_state`: (state set, block) → bits.
    states: BTreeMap<(u8, u64), Bits>,
    /// `document_index`: run key → its chunks and counter cell.
    index: BTreeMap<Vec<u8>, IndexRun>,
    /// `document_counts`: key → (delta, the newest marker token moving it).
    counts: BTreeMap<[u8; 2], (i64, u64)>,
    /// Markers whose document's writes are complete once these are.
    markers: Vec<Vec<u8>>,
    /// The newest new document whose pending-build entry is in these.
    newest_new: u64,
    /// `counters`: key → the next number (phase one's, so only growing).
    counters: BTreeMap<Vec<u8>, u64>,
    /// `usage`: key → (documents counted, the newest of them).
    usage: BTreeMap<[u8; 12], (u64, u64)>,
}

impl SetChanges {
    pub(crate) fn add_state(&mut self, set: u8, id: u64) {
        self.states.entry((set, id >> 6)).or_default().add(bit(id));
    }

    /// A new document's pending-build entry (phase one): once written, the
    /// watermark [`PENDING_WRITTEN_TO`] moves to it.
    pub(crate) fn add_new(&mut self, id: u64) {
        self.add_state(PENDING_BUILD, id);
        self.newest_new = self.newest_new.max(id);
    }

    /// A new document held out of sled until phase two (`intents`): the
    /// watermark moves past it with its counter and usage, and its record
    /// (with a marker) or its intent gives it a state entry.
    pub(crate) fn note_new(&mut self, id: u64) {
        self.newest_new = self.newest_new.max(id);
    }

    /// A numbering counter's next number, taken by a new document.
    pub(crate) fn set_counter(&mut self, key: Vec<u8>, next: u64) {
        self.counters.insert(key, next);
    }

    /// A month's usage once a new document `last` is counted in it.
    pub(crate) fn set_usage(&mut self, key: [u8; 12], count: u64, last: u64) {
        self.usage.insert(key, (count, last));
    }

    pub(crate) fn remove_state(&mut self, set: u8, id: u64) {
        self.states
            .entry((set, id >> 6))
            .or_default()
            .remove(bit(id));
    }

    fn run(&mut self, run: Vec<u8>, cell: Option<Vec<u8>>) -> &mut IndexRun {
        self.index.entry(run).or_insert_with(|| IndexRun {
            cell,
            blocks: BTreeMap::new(),
        })
    }

    /// `id` into the index set `run`, counted in the day counter `cell`.
    pub(crate) fn add_indexed(&mut self, run: Vec<u8>, cell: Vec<u8>, id: u64) {
        let run = self.run(run, Some(cell));
        run.blocks.entry(id >> 6).or_default().add(bit(id));
    }

    pub(crate) fn remove_indexed(&mut self, run: Vec<u8>, cell: Vec<u8>, id: u64) {
        let run = self.run(run, Some(cell));
        run.blocks.entry(id >> 6).or_default().remove(bit(id));
    }

    /// `id` into the index set `run`, which no day counter counts.
    pub(crate) fn add_uncounted(&mut self, run: Vec<u8>, id: u64) {
        let run = self.run(run, None);
        run.blocks.entry(id >> 6).or_default().add(bit(id));
    }

    pub(crate) fn remove_uncounted(&mut self, run: Vec<u8>, id: u64) {
        let run = self.run(run, None);
        run.blocks.entry(id >> 6).or_default().remove(bit(id));
    }

    /// A per-(type, state) count moved by a change whose marker is `token`.
    pub(crate) fn bump_count(&mut self, key: [u8; 2], delta: i64, token: u64) {
        let count = self.counts.entry(key).or_insert((0, 0));
        count.0 += delta;
        count.1 = count.1.max(token);
    }

    /// The marker of a change in these, removed once they are durable.
    pub(crate) fn marker(&mut self, key: Vec<u8>) {
        self.markers.push(key);
    }

    fn merge(&mut self, other: SetChanges) {
        for (key, bits) in other.states {
            self.states.entry(key).or_default().then(bits);
        }
        for (key, run) in other.index {
            let mine = self.run(key, run.cell);
            for (block, bits) in run.blocks {
                mine.blocks.entry(block).or_default().then(bits);
            }
        }
        for (key, (delta, token)) in other.counts {
            self.bump_count(key, delta, token);
        }
        self.markers.extend(other.markers);
        self.newest_new = self.newest_new.max(other.newest_new);
        // Counters only grow, and a usage that counts a newer document
        // wins, whichever order the changes are merged in (held documents'
        // changes are merged once their intents are durable).
        for (key, next) in other.counters {
            let mine = self.counters.entry(key).or_insert(next);
            *mine = (*mine).max(next);
        }
        for (key, usage) in other.usage {
            let mine = self.usage.entry(key).or_insert(usage);
            if usage.1 > mine.1 {
                *mine = usage;
            }
        }
    }

    fn is_empty(&self) -> bool {
        self.states.is_empty()
            && self.index.is_empty()
            && self.counts.is_empty()
            && self.markers.is_empty()
            && self.newest_new == 0
            && self.counters.is_empty()
            && self.usage.is_empty()
    }
}

/// The trees [`SetChanges`] are written to.
#[derive(Clone)]
pub(crate) struct DerivedTrees {
    pub by_state: IdSets,
    pub index: IdSets,
    pub index_counts: Tree,
    pub counts: Tree,
    pub counters: Tree,
    pub usage: Tree,
    pub meta: Tree,
}

/// Keeps [`SetChanges`] for the next flush, which writes them.
#[derive(Clone)]
pub(crate) struct DerivedWriter {
    trees: DerivedTrees,
    pub(crate) markers: Arc<IndexMarkers>,
    /// Deferred changes; held while any changes are written, so writes
    /// happen in the order their changes were made (count tokens only grow)
    /// and a read through them never sees a value between the two.
    deferred: Arc<Mutex<Deferred>>,
    /// Tells how far it is durable: held documents' changes wait for it.
    files: Arc<FileLog>,
}

/// Changes waiting for a flush.
#[derive(Default)]
struct Deferred {
    /// Written by the next flush.
    ready: SetChanges,
    /// Phase one's changes of documents held out of sled (`intents`), each
    /// with the end of its intent in the file log: a counter or usage that
    /// counts a document goes to sled only once the intent that brings the
    /// document back after a crash is durable. In phase one's order.
    awaiting: VecDeque<(FilePos, SetChanges)>,
}

impl Deferred {
    /// The awaiting changes whose intents end at or before `synced`, moved
    /// to `ready` (in order).
    fn release(&mut self, synced: FilePos) {
        while self.awaiting.front().is_some_and(|(end, _)| *end <= synced) {
            if let Some((_, changes)) = self.awaiting.pop_front() {
                self.ready.merge(changes);
            }
        }
    }

    /// Every deferred change to `key`'s counter, newest last.
    fn counters<'a>(&'a self, key: &'a [u8]) -> impl Iterator<Item = u64> + 'a {
        std::iter::once(&self.ready)
            .chain(self.awaiting.iter().map(|(_, c)| c))
            .filter_map(move |c| c.counters.get(key).copied())
    }

    fn usages(&self, key: [u8; 12]) -> impl Iterator<Item = (u64, u64)> + '_ {
        std::iter::once(&self.ready)
            .chain(self.awaiting.iter().map(|(_, c)| c))
            .filter_map(move |c| c.usage.get(&key).copied())
    }
}

impl DerivedWriter {
    pub(crate) fn new(
        trees: DerivedTrees,
        markers: Arc<IndexMarkers>,
        files: Arc<FileLog>,
    ) -> Self {
        DerivedWriter {
            trees,
            markers,
            files,
            deferred: Arc::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Deferred> {
        self.deferred.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Keeps `changes` for the next flush ([`apply_deferred`](Self::apply_deferred)).
    pub(crate) fn defer(&self, changes: SetChanges) {
        self.lock().ready.merge(changes);
    }

    /// Phase one's changes of a held document whose intent ends at `end`
    /// in the file log: written by the first flush after a sync of the
    /// file log that covers it.
    pub(crate) fn defer_held(&self, changes: SetChanges, end: FilePos) {
        self.lock().awaiting.push_back((end, changes));
    }

    /// Writes every deferred change: called by each flush before sled's.
    pub(crate) fn apply_deferred(&self) -> StoreResult<()> {
        let mut deferred = self.lock();
        deferred.release(self.files.synced_to());
        if deferred.ready.is_empty() {
            return Ok(());
        }
        let all = std::mem::take(&mut deferred.ready);
        self.write(all)
    }

    /// A numbering counter's next number: deferred, else stored.
    pub(crate) fn counter(&self, key: &[u8]) -> StoreResult<Option<u64>> {
        let deferred = self.lock();
        // A counter only grows.
        if let Some(next) = deferred.counters(key).max() {
            return Ok(Some(next));
        }
        Ok(self.trees.counters.get(key)?.and_then(|v| read_u64(&v)))
    }

    /// A month's usage (documents, the newest counted): deferred, else
    /// stored, else none.
    pub(crate) fn usage(&self, key: [u8; 12]) -> StoreResult<(u64, u64)> {
        let deferred = self.lock();
        // The one that counts the newest document.
        if let Some(usage) = deferred.usages(key).max_by_key(|(_, last)| *last) {
            return Ok(usage);
        }
        Ok(read_usage(self.trees.usage.get(key)?.as_deref()))
    }

    fn write(&self, changes: SetChanges) -> StoreResult<()> {
        let trees = &self.trees;
        for ((set, block), bits) in changes.states {
            trees
                .by_state
                .update_bits(&[set], block, bits.set, bits.clear)?;
        }
        for (key, next) in changes.counters {
            trees.counters.insert(key, &next.to_be_bytes())?;
        }
        for (key, (count, last)) in changes.usage {
            trees.usage.insert(key, &usage_value(count, last))?;
        }
        if changes.newest_new > 0 {
            self.mark_pending_written(changes.newest_new)?;
        }
        for (run, IndexRun { cell, blocks }) in changes.index {
            let mut delta = 0i64;
            for (block, bits) in blocks {
                let (before, after) = trees.index.update_bits(&run, block, bits.set, bits.clear)?;
                delta += i64::from(after.count_ones()) - i64::from(before.count_ones());
            }
            if let Some(cell) = cell.filter(|_| delta != 0) {
                trees.index_counts.fetch_and_update(&cell, |v| {
                    let n = v.and_then(read_u64).unwrap_or(0) as i64 + delta;
                    (n > 0).then(|| (n as u64).to_be_bytes().to_vec())
                })?;
            }
        }
        // Written even when the changes cancel: the stamp says every
        // change up to it is in the count, whichever markers a crash left.
        for (key, (delta, token)) in changes.counts {
            bump_count(&trees.counts, key, delta, token)?;
        }
        for marker in changes.markers {
            self.markers.written(marker);
        }
        Ok(())
    }
}

impl DerivedWriter {
    /// Every document up to `id` has its state entry, counter and usage
    /// (never moves back).
    pub(crate) fn mark_pending_written(&self, id: u64) -> StoreResult<()> {
        self.trees.meta.fetch_and_update(PENDING_WRITTEN_TO, |v| {
            Some(
                v.and_then(read_u64)
                    .unwrap_or(0)
                    .max(id)
                    .to_be_bytes()
                    .to_vec(),
            )
        })?;
        Ok(())
    }

    /// The first new document that may lack its state entry: above the
    /// watermark, or (a data dir written before it, which wrote each entry
    /// with its record) the newest of `documents`.
    pub(crate) fn first_unwritten(&self, documents: &Tree) -> StoreResult<u64> {
        match self
            .trees
            .meta
            .get(PENDING_WRITTEN_TO)?
            .and_then(|v| read_u64(&v))
        {
            Some(w) => Ok(w.saturating_add(1)),
            None => Ok(documents
                .last()?
                .and_then(|(k, _)| read_u64(&k))
                .unwrap_or(0)),
        }
    }
}

/// A per-(type, state) count moved atomically, stamped with the newest
/// marker token that moved it (a stamp never goes back).
pub(crate) fn bump_count(counts: &Tree, key: [u8; 2], delta: i64, token: u64) -> StoreResult<()> {
    counts.fetch_and_update(key, |v| {
        let current = v.and_then(read_u64).unwrap_or(0) as i64;
        let stamp = v.map(crate::indexes::counts::value_tail).unwrap_or(0);
        Some(count_value((current + delta).max(0) as u64, token.max(stamp)).to_vec())
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_change_of_an_id_wins_and_merging_keeps_the_order() {
        let mut first = SetChanges::default();
        first.add_state(1, 5);
        first.remove_state(1, 6);
        let mut second = SetChanges::default();
        second.remove_state(1, 5);
        second.add_state(1, 6);
        second.add_state(1, 7);
        first.merge(second);
        let bits = first.states[&(1, 0)];
        assert_eq!(bits.set, (1 << 6) | (1 << 7));
        assert_eq!(bits.clear, 1 << 5);
    }

    #[test]
    fn counts_sum_and_keep_the_newest_token() {
        let mut c = SetChanges::default();
        c.bump_count([1, 2], 1, 9);
        c.bump_count([1, 2], 1, 7);
        c.bump_count([1, 2], -1, 8);
        assert_eq!(c.counts[&[1, 2]], (1, 9));
    }
}
