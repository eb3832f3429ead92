//! Derived data made right after an unclean stop, without reading every
//! document.
//!
//! Phase one and state changes write without sled transactions (see
//! `engine/sled/documents.rs`), document record first, and sled recovers a prefix of
//! its log. The writes that follow a record are derived from it: the
//! numbering counter, the reference index, the month's usage, the
//! per-(type, state) counts and the state index. They come from two
//! serial streams, so a crash can cut short at most the last document of
//! each:
//! - phase one runs under the numbering lock, one document after another
//!   in id order: only the newest record's reference can be missing. Its
//!   state entry, counter and usage wait for the next flush
//!   (`set_changes`): those of the documents above the watermark written
//!   after them are checked. The usage value names the last document it
//!   counted, so a repair knows whether a document is in it.
//! - state changes run on the flusher thread, each behind a marker (see
//!   `doc_index`) whose token grows, and their sets and counts are written
//!   together before the group commit's flush (`set_changes`): every
//!   marked document gets its state entry checked, and each marked count
//!   change is applied unless the count carries a token at least its own.
//!
//! A data dir written before these witnesses existed is recomputed from
//! every document once ([`SledStore::repair_derived`]).
//!
//! A test set's counter (one per company, `test_set`) is also kept above
//! every number of that company with the test set's prefix in its range,
//! whichever resolution gave it: the demo company's own invoice resolution
//! copied the SETP test set before the test sets were built in, and a
//! number it gave is never given again. The first open of a data dir
//! written before then raises the counters once ([`SledStore::seed_test_set_counters`]).

use std::collections::HashMap;

use chrono::Datelike;

use crate::encoding::codec::{decode, id_key, read_u64, with_request};
use crate::encoding::trees;
use crate::engine::sled::SledStore;
use crate::error::StoreResult;
use crate::indexes::counts::{
    count_value, counted, counter_key, read_usage, state_set, usage_key, usage_value, value_tail,
    PENDING_BUILD,
};
use crate::indexes::doc_index::{marker_token, IndexView};
use crate::model::test_set;
use crate::model::DocumentRecord;

/// Written by a clean close, removed by every open.
pub(crate) const CLEAN_CLOSE_KEY: &[u8] = b"clean_close";

/// Written once the derived data carry their witnesses (usage names its
/// last document, counts their last marker, half-built documents have a
/// state entry): from then on a repair reads only the last writes.
pub(crate) const DERIVED_V2_KEY: &[u8] = b"derived_data_v2";

/// Written once the state index holds id sets (`documents_by_state_v2`)
/// built from every document, and the index from before them is dropped.
pub(crate) const STATE_SETS_KEY: &[u8] = b"documents_by_state_v2_built";

/// Written once the test sets' counters have been raised above the numbers
/// documents already hold in their ranges.
pub(crate) const TEST_SETS_SEEDED_KEY: &[u8] = b"test_set_counters_seeded";

/// The counters a document's number must stay below: its resolution's,
/// and that of a test set whose range holds its number.
fn counters_above(d: &DocumentRecord) -> impl Iterator<Item = (Vec<u8>, u64)> + '_ {
    let own = counter_key(d.company_id, d.resolution_id);
    let sets = test_set::TEST_SETS
        .iter()
        .filter(|set| set.id != d.resolution_id && set.holds(&d.prefix, d.number))
        .map(|set| counter_key(d.company_id, set.id));
    std::iter::once(own)
        .chain(sets)
        .map(move |key| (key, d.number + 1))
}

/// What a repair found and fixed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct RepairReport {
    pub documents: u64,
    pub counters_raised: u64,
    pub references_restored: u64,
    pub usage_restored: u64,
    pub counts_restored: u64,
}

fn period(d: &DocumentRecord) -> u32 {
    d.issue_date.year() as u32 * 100 + d.issue_date.month()
}

impl SledStore {
    /// Every derived value recomputed from every document: once, for a
    /// data dir written before the witnesses ([`DERIVED_V2_KEY`]).
    pub(crate) fn repair_derived(&self) -> StoreResult<RepairReport> {
        let mut report = RepairReport::default();
        let mut next: HashMap<Vec<u8>, u64> = HashMap::new();
        let mut usage: HashMap<[u8; 12], (u64, u64)> = HashMap::new();
        let mut counts: HashMap<[u8; 2], u64> = HashMap::new();
        self.documents_by_state.clear()?;
        let mut states = self.documents_by_state.loader();
        for item in self.documents.iter() {
            let (_, v) = item?;
            let d: DocumentRecord = decode(trees::DOCUMENTS, &v)?;
            report.documents += 1;
            for (key, after) in counters_above(&d) {
                let n = next.entry(key).or_insert(0);
                *n = (*n).max(after);
            }
            let u = usage
                .entry(usage_key(d.company_id, period(&d)))
                .or_insert((0, 0));
            *u = (u.0 + 1, u.1.max(d.id));
            if let Some(k) = counted(d.document_type, d.state, d.pending_build) {
                *counts.entry(k).or_insert(0) += 1;
            }
            states.add(&[state_set(d.state, d.pending_build)], d.id)?;
            self.restore_reference(&d, &mut report)?;
        }
        report.counters_raised = self.raise_counters(next)?;
        self.usage.clear()?;
        for (key, (n, last)) in usage {
            self.usage.insert(key, &usage_value(n, last))?;
        }
        states.finish()?;
        self.state_index_built()?;
        self.document_counts.clear()?;
        for (key, n) in counts {
            self.document_counts.insert(key, &count_value(n, 0))?;
        }
        self.meta.insert(DERIVED_V2_KEY, &[1u8])?;
        self.flush_now()?;
        Ok(report)
    }

    /// After an unclean stop: the derived data of the new documents above
    /// the watermark and of the documents the markers name (see the
    /// module's comment). Runs before the index's own repair, which clears
    /// the markers.
    pub(crate) fn repair_recent(&self) -> StoreResult<RepairReport> {
        let mut report = RepairReport::default();
        // New documents' state entries, counters and usage are written with
        // the flush after them: those above the watermark are checked, and
        // the newest's reference (phase one writes it after its record).
        let newest = self.documents.last()?.and_then(|(k, _)| read_u64(&k));
        if let Some(newest) = newest {
            let from = self.derived.first_unwritten(&self.documents)?.min(newest);
            let mut next: HashMap<Vec<u8>, u64> = HashMap::new();
            for item in self.documents.range(id_key(from)..) {
                let (_, v) = item?;
                let d: DocumentRecord = decode(trees::DOCUMENTS, &v)?;
                report.documents += 1;
                for (key, after) in counters_above(&d) {
                    let n = next.entry(key).or_insert(0);
                    *n = (*n).max(after);
                }
                self.restore_reference(&d, &mut report)?;
                self.restore_usage(&d, &mut report)?;
                self.restore_state_entry(d.id, Some(state_set(d.state, d.pending_build)))?;
            }
            report.counters_raised = self.raise_counters(next)?;
        }
        let mut markers: Vec<(u64, u64, Option<IndexView>)> = Vec::new();
        for item in self.document_index_pending.iter() {
            let (k, v) = item?;
            let Some(id) = read_u64(&k) else { continue };
            let old: Option<IndexView> = decode(trees::DOCUMENT_INDEX_PENDING, &v)?;
            let current = self.view(id)?;
            self.restore_state_entry(id, current.as_ref().map(IndexView::state_set))?;
            report.documents += 1;
            markers.push((marker_token(&k), id, old));
        }
        report.counts_restored = self.restore_counts(markers)?;
        self.flush_now()?;
        Ok(report)
    }

    /// The documents found held when the last process stopped (`intents`:
    /// each id, its record and its request), unless their record was
    /// written since: written half-built, with their state entry,
    /// reference, usage and counters. One whose XML is in the file log
    /// (`staged`) passed phase two's sync, so its caller was likely
    /// answered before a power cut took its record: it keeps its target
    /// state (`NewDocument::queued`) and is built again into it; any
    /// other was never answered and waits as a draft, as before. Returns
    /// how many.
    pub(crate) fn recover_held(
        &self,
        mut held: Vec<(u64, Vec<u8>, Vec<u8>)>,
        staged: &std::collections::HashSet<u64>,
    ) -> StoreResult<u64> {
        held.sort_by_key(|(id, _, _)| *id);
        let mut report = RepairReport::default();
        let mut next: HashMap<Vec<u8>, u64> = HashMap::new();
        let mut recovered = 0;
        for (id, record, request) in held {
            if self.documents.contains_key(id_key(id))? {
                continue;
            }
            let mut d: DocumentRecord = decode(trees::DOCUMENTS, &record)?;
            let record = if staged.contains(&id) {
                record
            } else {
                as_draft(&mut d)?
            };
            self.documents
                .insert(id_key(id), with_request(&record, &request))?;
            for (key, after) in counters_above(&d) {
                let n = next.entry(key).or_insert(0);
                *n = (*n).max(after);
            }
            self.restore_reference(&d, &mut report)?;
            self.restore_usage(&d, &mut report)?;
            self.restore_state_entry(id, Some(state_set(d.state, d.pending_build)))?;
            recovered += 1;
        }
        // Durable with the open's flush (the payload mark moves only then,
        // so a crash before it finds them again).
        self.raise_counters(next)?;
        Ok(recovered)
    }

    /// A new document counted in its month's usage unless the usage names
    /// it or a newer one (documents are checked in id order).
    fn restore_usage(&self, d: &DocumentRecord, report: &mut RepairReport) -> StoreResult<()> {
        let key = usage_key(d.company_id, period(d));
        let (n, last) = read_usage(self.usage.get(key)?.as_deref());
        if last < d.id {
            self.usage.insert(key, &usage_value(n + 1, d.id))?;
            report.usage_restored += 1;
        }
        Ok(())
    }

    /// The per-(type, state) counts of the marked changes that did not
    /// reach them. A marked change moved its document from the marker's
    /// view to the next marker's of the same document, or to the stored
    /// record; each count it moved carries a token at least its own once
    /// it has it (`set_changes`: a group commit's counts are written
    /// together, after its records, stamped with their newest token).
    fn restore_counts(&self, mut markers: Vec<(u64, u64, Option<IndexView>)>) -> StoreResult<u64> {
        markers.sort_by_key(|(token, _, _)| std::cmp::Reverse(*token));
        let mut next: HashMap<u64, Option<IndexView>> = HashMap::new();
        let mut moves = Vec::new();
        for (token, id, old) in markers {
            let after = match next.remove(&id) {
                Some(view) => view,
                None => self.view(id)?,
            };
            let before = old.as_ref().and_then(IndexView::count_cell);
            let after_cell = after.as_ref().and_then(IndexView::count_cell);
            if before != after_cell {
                moves.push((token, before, after_cell));
            }
            next.insert(id, old);
        }
        // Stamps as recovered, read before any count is restored.
        let mut stamps: HashMap<[u8; 2], u64> = HashMap::new();
        let mut deltas: HashMap<[u8; 2], (i64, u64)> = HashMap::new();
        let mut restored = 0;
        for (token, before, after) in moves {
            let mut missing = false;
            for (key, delta) in [(before, -1), (after, 1)] {
                let Some(key) = key else { continue };
                let stamp = match stamps.get(&key) {
                    Some(s) => *s,
                    None => {
                        let s = self.document_counts.get(key)?.map_or(0, |v| value_tail(&v));
                        stamps.insert(key, s);
                        s
                    }
                };
                if stamp < token {
                    let d = deltas.entry(key).or_insert((0, 0));
                    d.0 += delta;
                    d.1 = d.1.max(token);
                    missing = true;
                }
            }
            restored += u64::from(missing);
        }
        for (key, (delta, token)) in deltas {
            self.bump_count(key, delta, token)?;
        }
        Ok(restored)
    }

    fn view(&self, id: u64) -> StoreResult<Option<IndexView>> {
        self.documents
            .get(id_key(id))?
            .map(|v| decode(trees::DOCUMENTS, &v))
            .transpose()
    }

    /// A document made a member of exactly the state set `want` (none
    /// when it has no record): every state byte in use is looked at.
    fn restore_state_entry(&self, id: u64, want: Option<u8>) -> StoreResult<()> {
        for set in (0..16).chain([PENDING_BUILD]) {
            // Looked at first: a removal of what is absent still writes.
            if Some(set) != want && self.documents_by_state.contains(&[set], id)? {
                self.documents_by_state.remove(&[set], id)?;
            }
        }
        if let Some(set) = want {
            self.documents_by_state.add(&[set], id)?;
        }
        Ok(())
    }

    /// Once per data dir written before the state index held id sets: it
    /// is built from every document. Returns how many were read.
    pub(crate) fn build_state_index_once(&self) -> StoreResult<Option<u64>> {
        if self.meta.get(STATE_SETS_KEY)?.is_some() {
            return Ok(None);
        }
        self.documents_by_state.clear()?;
        // Records in id order: one write per chunk.
        let mut states = self.documents_by_state.loader();
        let mut n = 0;
        for item in self.documents.iter() {
            let (_, v) = item?;
            let view: IndexView = decode(trees::DOCUMENTS, &v)?;
            states.add(&[view.state_set()], view.id())?;
            n += 1;
        }
        states.finish()?;
        self.state_index_built()?;
        self.flush_now()?;
        Ok(Some(n))
    }

    /// The state index is whole: marked so, and the one it replaced goes.
    fn state_index_built(&self) -> StoreResult<()> {
        self.meta.insert(STATE_SETS_KEY, &[1u8])?;
        self.db.drop_tree(trees::DOCUMENTS_BY_STATE_V1)?;
        Ok(())
    }

    fn restore_reference(&self, d: &DocumentRecord, report: &mut RepairReport) -> StoreResult<()> {
        if let Some(reference) = &d.external_reference {
            if self.index_reference(d.company_id, reference, d.id)? {
                report.references_restored += 1;
            }
        }
        Ok(())
    }

    /// A counter only moves up: a number given once is never given again.
    fn raise_counters(&self, next: HashMap<Vec<u8>, u64>) -> StoreResult<u64> {
        let mut raised = 0;
        for (key, next_number) in next {
            let stored = self.counters.get(&key)?.and_then(|v| read_u64(&v));
            if stored.is_none_or(|s| s < next_number) {
                self.counters.insert(key, &next_number.to_be_bytes())?;
                raised += 1;
            }
        }
        Ok(raised)
    }

    /// Once per data dir: the test sets' counters of each company start
    /// above the numbers its documents already hold in their ranges.
    pub(crate) fn seed_test_set_counters(&self) -> StoreResult<u64> {
        if self.meta.get(TEST_SETS_SEEDED_KEY)?.is_some() {
            return Ok(0);
        }
        let mut next: HashMap<Vec<u8>, u64> = HashMap::new();
        for item in self.documents.iter() {
            let (_, v) = item?;
            let d: DocumentRecord = decode(trees::DOCUMENTS, &v)?;
            for (key, after) in counters_above(&d).skip(1) {
                let n = next.entry(key).or_insert(0);
                *n = (*n).max(after);
            }
        }
        let raised = self.raise_counters(next)?;
        self.meta.insert(TEST_SETS_SEEDED_KEY, &[1u8])?;
        self.flush_now()?;
        Ok(raised)
    }
}

/// A half-built document's record with DRAFT as the state it is built
/// into: its caller was not answered (or was answered with an error), so
/// it is not transmitted unasked.
pub(crate) fn as_draft(d: &mut DocumentRecord) -> StoreResult<Vec<u8>> {
    d.state = crate::model::state::DRAFT;
    crate::encoding::codec::encode(trees::DOCUMENTS, d)
}
