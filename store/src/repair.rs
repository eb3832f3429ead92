//! Derived data rebuilt from the documents after an unclean stop.
//!
//! Phase one and state changes write without sled transactions (see
//! `sled_documents`), document record first. sled recovers a prefix of its
//! log, so a crash can lose the writes that follow a record: the numbering
//! counter, the reference index, the month's usage, the per-state counts
//! and the state index. All five follow from the documents themselves, so the first open after
//! a stop that did not close the store cleanly recomputes them.
//!
//! A test set's counter (one per company, `test_set`) is also kept above
//! every number of that company with the test set's prefix in its range,
//! whichever resolution gave it: the demo company's own invoice resolution
//! copied the SETP test set before the test sets were built in, and a
//! number it gave is never given again. The first open of a data dir
//! written before then raises the counters once ([`SledStore::seed_test_set_counters`]).

use std::collections::HashMap;

use chrono::Datelike;

use crate::codec::{decode, id_key, read_u64, scoped_text_key};
use crate::error::StoreResult;
use crate::model::DocumentRecord;
use crate::sled_documents::{count_key, state_key, usage_key};
use crate::sled_store::SledStore;
use crate::test_set;
use crate::trees;

/// Written by a clean close, removed by every open.
pub(crate) const CLEAN_CLOSE_KEY: &[u8] = b"clean_close";

/// Written once the test sets' counters have been raised above the numbers
/// documents already hold in their ranges.
pub(crate) const TEST_SETS_SEEDED_KEY: &[u8] = b"test_set_counters_seeded";

/// The counters a document's number must stay below: its resolution's,
/// and that of a test set whose range holds its number.
fn counters_above(d: &DocumentRecord) -> impl Iterator<Item = (Vec<u8>, u64)> + '_ {
    let own = test_set::counter_key(d.company_id, d.resolution_id);
    let sets = test_set::TEST_SETS
        .iter()
        .filter(|set| set.id != d.resolution_id && set.holds(&d.prefix, d.number))
        .map(|set| test_set::counter_key(d.company_id, set.id));
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
}

impl SledStore {
    pub(crate) fn repair_derived(&self) -> StoreResult<RepairReport> {
        let mut report = RepairReport::default();
        let mut next: HashMap<Vec<u8>, u64> = HashMap::new();
        let mut usage: HashMap<[u8; 12], u64> = HashMap::new();
        let mut counts: HashMap<[u8; 2], u64> = HashMap::new();
        let mut states = Vec::new();
        for item in self.documents.iter() {
            let (_, v) = item?;
            let d: DocumentRecord = decode(trees::DOCUMENTS, &v)?;
            report.documents += 1;
            for (key, after) in counters_above(&d) {
                let n = next.entry(key).or_insert(0);
                *n = (*n).max(after);
            }
            let period = d.issue_date.year() as u32 * 100 + d.issue_date.month();
            *usage.entry(usage_key(d.company_id, period)).or_insert(0) += 1;
            *counts
                .entry(count_key(d.document_type, d.state))
                .or_insert(0) += 1;
            states.extend(state_key(d.id, d.state, d.pending_build));
            if let Some(reference) = &d.external_reference {
                let key = scoped_text_key(d.company_id, reference);
                if self.document_refs.get(&key)?.is_none() {
                    self.document_refs.insert(key, &id_key(d.id))?;
                    report.references_restored += 1;
                }
            }
        }
        report.counters_raised = self.raise_counters(next)?;
        self.usage.clear()?;
        for (key, n) in usage {
            self.usage.insert(key, &n.to_be_bytes())?;
        }
        self.documents_by_state.clear()?;
        for key in states {
            self.documents_by_state.insert(key, &[])?;
        }
        self.document_counts.clear()?;
        for (key, n) in counts {
            self.document_counts.insert(key, &n.to_be_bytes())?;
        }
        self.flush_now()?;
        Ok(report)
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
