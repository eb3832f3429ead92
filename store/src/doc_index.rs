//! The per-company document index: pages of a company's documents of one
//! family, newest first, filtered by issue dates, states and the family's
//! keys, without scanning the documents.
//!
//! Every built document is in one id set (`id_sets`) per *dimension* it
//! belongs to: its scope (company, environment, family), a subset of its
//! indexed family keys (each subset, so any combination of key filters has
//! its own ordered run) and either "any state" or its state. A set's chunk
//! key is the dimension followed by the inverted issue day and inverted
//! block of 64 ids, so a run reads newest first and a date range is one
//! seek, and documents issued one after another share a sled entry. Each
//! (dimension, day) cell has a counter: `total` is a sum of day counters,
//! and a deep page skips whole days by their counts before it reads a chunk.
//!
//! Entries and counters are written after the record, in the document's
//! group commit: gathered with the other documents' and written once per
//! chunk and counter just before its flush (`set_changes`). Before the
//! record, a marker naming the
//! document and its previous indexed view is written; the group commit that
//! makes them durable removes it. sled recovers a prefix of its log, so
//! after an unclean stop the markers left name every document whose entries
//! may be half written, and only those are checked ([`SledStore::repair_index`]).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use chrono::{Datelike, NaiveDate};
use serde::{Deserialize, Serialize};
use sled::Tree;

use crate::codec::{decode, encode, id_key, json_of, parse, read_u64, split_request, with_request};
use crate::error::{StoreError, StoreResult};
use crate::id_sets::Chunk;
use crate::model::*;
use crate::record_parts::{encode_record, Parts, PartsChange};
use crate::set_changes::SetChanges;
use crate::sled_documents::Counted;
use crate::sled_store::SledStore;
use crate::trees;

/// Set in `META` once a data dir's index (as id sets) has been built from
/// its documents.
pub(crate) const INDEX_BUILT_KEY: &[u8] = b"document_index_v2_built";

/// The flag of the index before id sets, removed with its tree.
const INDEX_V1_BUILT_KEY: &[u8] = b"document_index_built";

/// Longest key value indexed; longer values are indexed by this prefix.
const MAX_VALUE: usize = 512;

/// What the index needs of a record (read without decoding all of it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct IndexView {
    id: u64,
    company_id: CompanyId,
    environment: Environment,
    document_type: u8,
    state: u8,
    #[serde(default)]
    pending_build: bool,
    issue_date: NaiveDate,
    #[serde(default)]
    list_keys: BTreeMap<String, String>,
}

impl IndexView {
    /// What its per-(type, state) count and state set need.
    pub(crate) fn counted(&self) -> Counted {
        Counted {
            document_type: self.document_type,
            state: self.state,
            pending_build: self.pending_build,
        }
    }

    /// Its per-(type, state) count, if it is counted.
    pub(crate) fn count_cell(&self) -> Option<[u8; 2]> {
        crate::sled_documents::counted(self.document_type, self.state, self.pending_build)
    }

    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// Its set in the state index.
    pub(crate) fn state_set(&self) -> u8 {
        crate::sled_documents::state_set(self.state, self.pending_build)
    }

    pub(crate) fn of(doc: &DocumentRecord) -> Self {
        IndexView {
            id: doc.id,
            company_id: doc.company_id,
            environment: doc.environment,
            document_type: doc.document_type,
            state: doc.state,
            pending_build: doc.pending_build,
            issue_date: doc.issue_date,
            list_keys: doc.list_keys.clone(),
        }
    }

    fn family(&self) -> Family {
        Family::of_document_type(self.document_type)
    }

    /// Its (dimension, day) cells; none while half built (a document is
    /// listed once its build is stored).
    fn cells(&self) -> Vec<(Vec<u8>, u32)> {
        if self.pending_build {
            return Vec::new();
        }
        let family = self.family();
        let scope = scope(self.company_id, self.environment, family);
        // BTreeMap order: keys sorted by name, as queries encode them.
        let present: Vec<(&str, &str)> = self
            .list_keys
            .iter()
            .filter(|(k, _)| family.indexed_keys().contains(&k.as_str()))
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let day = day_number(self.issue_date);
        let mut out = Vec::with_capacity(2 << present.len());
        for mask in 0u32..(1 << present.len()) {
            let subset: Vec<(&str, &str)> = present
                .iter()
                .enumerate()
                .filter(|(i, _)| mask & (1 << i) != 0)
                .map(|(_, kv)| *kv)
                .collect();
            out.push((dimension(&scope, &subset, None), day));
            out.push((dimension(&scope, &subset, Some(self.state)), day));
        }
        out
    }

    /// The id sets it is in: one per cell.
    pub(crate) fn entries(&self) -> BTreeSet<Vec<u8>> {
        self.cells()
            .into_iter()
            .map(|(dim, day)| run_from(&dim, day))
            .collect()
    }
}

/// Days since the common era, the index's date unit.
fn day_number(d: NaiveDate) -> u32 {
    u32::try_from(d.num_days_from_ce()).unwrap_or(0)
}

fn scope(company: CompanyId, environment: Environment, family: Family) -> Vec<u8> {
    let mut k = Vec::with_capacity(32);
    k.extend_from_slice(&company.to_be_bytes());
    k.push(environment.authority_code());
    k.push(family.tag());
    k
}

/// Scope ‖ keys (count, then each name and value length-prefixed) ‖ state
/// (0 any, 1 then the state): self-delimiting, so no dimension's run is a
/// prefix of another's.
fn dimension(scope: &[u8], keys: &[(&str, &str)], state: Option<u8>) -> Vec<u8> {
    let mut k = scope.to_vec();
    k.push(keys.len() as u8);
    for (name, value) in keys {
        let name = &name.as_bytes()[..name.len().min(255)];
        let value = &value.as_bytes()[..value.len().min(MAX_VALUE)];
        k.push(name.len() as u8);
        k.extend_from_slice(name);
        k.extend_from_slice(&(value.len() as u16).to_be_bytes());
        k.extend_from_slice(value);
    }
    match state {
        None => k.push(0),
        Some(s) => k.extend_from_slice(&[1, s]),
    }
    k
}

fn cell_key(dim: &[u8], day: u32) -> Vec<u8> {
    let mut k = Vec::with_capacity(dim.len() + 4);
    k.extend_from_slice(dim);
    k.extend_from_slice(&day.to_be_bytes());
    k
}

/// The inverted day in a chunk's key (after its dimension).
fn inverted_day(dim: &[u8], chunk: &Chunk) -> u32 {
    chunk
        .key
        .get(dim.len()..dim.len() + 4)
        .and_then(|b| <[u8; 4]>::try_from(b).ok())
        .map(u32::from_be_bytes)
        .unwrap_or(u32::MAX)
}

/// The markers of index changes not yet known durable.
pub(crate) struct IndexMarkers {
    tree: Tree,
    next: AtomicU64,
    /// Markers whose document's writes are complete, to remove once a
    /// flush that started after them has finished.
    written: Mutex<Vec<Vec<u8>>>,
}

/// The token in a marker's key (`id ‖ token`).
pub(crate) fn marker_token(key: &[u8]) -> u64 {
    key.get(8..).and_then(read_u64).unwrap_or(0)
}

impl IndexMarkers {
    /// Tokens start at `first`: above every token a stored count or
    /// marker holds, so they keep growing across restarts.
    pub(crate) fn new(tree: Tree, first: u64) -> Self {
        IndexMarkers {
            tree,
            next: AtomicU64::new(first.max(1)),
            written: Mutex::default(),
        }
    }

    /// `id ‖ token` → the document's view before the change (if any).
    fn mark(&self, id: u64, old: Option<&IndexView>) -> StoreResult<Vec<u8>> {
        let mut key = id_key(id).to_vec();
        key.extend_from_slice(&self.next.fetch_add(1, Ordering::Relaxed).to_be_bytes());
        self.tree
            .insert(&key, encode(trees::DOCUMENT_INDEX_PENDING, &old)?)?;
        Ok(key)
    }

    /// The token the next marker gets (tests build markers by hand).
    #[cfg(test)]
    pub(crate) fn next_token(&self) -> u64 {
        self.next.load(Ordering::Relaxed)
    }

    pub(crate) fn written(&self, key: Vec<u8>) {
        self.lock().push(key);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Vec<u8>>> {
        self.written.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Before a flush: the markers it will make redundant.
    pub(crate) fn before_flush(&self) -> Vec<Vec<u8>> {
        std::mem::take(&mut *self.lock())
    }

    /// After the flush: removes them (durable with a later flush; a marker
    /// that outlives a crash only costs its document a check).
    pub(crate) fn after_flush(&self, done: Vec<Vec<u8>>, flushed: bool) {
        if !flushed {
            self.lock().extend(done);
            return;
        }
        for key in done {
            if let Err(e) = self.tree.remove(key) {
                tracing::warn!(error = %e, "could not remove a document index marker");
            }
        }
    }
}

/// The id set of a (dimension, day) cell, newest day first: also the
/// key bound to read a dimension's run from `day` (newest) on.
pub(crate) fn run_from(dim: &[u8], day: u32) -> Vec<u8> {
    let mut k = dim.to_vec();
    k.extend_from_slice(&(u32::MAX - day).to_be_bytes());
    k
}

impl SledStore {
    /// Writes a document record after its marker: the marker, the record
    /// (its stored parts merged with `change`), and into `changes` the
    /// index entries and counters that moved (written after the record).
    /// Returns what the count of the record it replaced needs, and the
    /// marker's token (0: no marker, the record stayed in the same cells).
    pub(crate) fn put_document(
        &self,
        doc: &DocumentRecord,
        change: PartsChange,
        changes: &mut SetChanges,
    ) -> StoreResult<(Option<Counted>, u64)> {
        self.put_record(doc, change, changes, false)
    }

    /// [`put_document`](Self::put_document); `fresh` when no record of the
    /// document can be stored yet (a held one, `intents`): none is read.
    pub(crate) fn put_record(
        &self,
        doc: &DocumentRecord,
        change: PartsChange,
        changes: &mut SetChanges,
        fresh: bool,
    ) -> StoreResult<(Option<Counted>, u64)> {
        let key = id_key(doc.id);
        let stored = if fresh {
            None
        } else {
            self.documents.get(key)?
        };
        let json = stored
            .as_deref()
            .map(|v| json_of(trees::DOCUMENTS, v))
            .transpose()?;
        let old: Option<IndexView> = json
            .as_deref()
            .map(|j| parse(trees::DOCUMENTS, j))
            .transpose()?;
        // A half-built record keeps its request until phase two (the one
        // change with files) moves it to the file log.
        let request = match (&change.files, stored.as_deref()) {
            (None, Some(v)) => split_request(v).1.map(<[u8]>::to_vec),
            _ => None,
        };
        let parts = Parts::merged(json.as_deref(), change)?;
        let new = IndexView::of(doc);
        let moved = old.as_ref().map(IndexView::cells) != Some(new.cells());
        let marker = if moved {
            Some(self.index_markers.mark(doc.id, old.as_ref())?)
        } else {
            None
        };
        let mut value = encode_record(doc, &parts)?;
        if let Some(request) = request {
            value = with_request(&value, &request);
        }
        let replaced = self.documents.insert(key, value)?;
        // The value read above, unless a writer came between: then the
        // one replaced is decompressed and read for its count.
        let replaced = match replaced {
            None => None,
            Some(r) if Some(&r) == stored.as_ref() => old.as_ref().map(IndexView::counted),
            Some(r) => Some(decode(trees::DOCUMENTS, &r)?),
        };
        let mut token = 0;
        if let Some(marker) = marker {
            move_entries(old.as_ref(), &new, changes);
            token = marker_token(&marker);
            changes.marker(marker);
        }
        Ok((replaced, token))
    }
}

/// The index sets and day counters a record leaves and joins. A counter
/// moves only with its set's bit (`set_changes`).
fn move_entries(old: Option<&IndexView>, new: &IndexView, changes: &mut SetChanges) {
    let before: BTreeSet<(Vec<u8>, u32)> = old
        .map(|o| o.cells().into_iter().collect())
        .unwrap_or_default();
    let after: BTreeSet<(Vec<u8>, u32)> = new.cells().into_iter().collect();
    for (dim, day) in before.difference(&after) {
        changes.remove_indexed(run_from(dim, *day), cell_key(dim, *day), new.id);
    }
    for (dim, day) in after.difference(&before) {
        changes.add_indexed(run_from(dim, *day), cell_key(dim, *day), new.id);
    }
}

impl SledStore {
    /// Records written as they are (their index and counts with them), one
    /// flush for all: imports, and the index benchmark's million documents.
    pub fn write_documents(&self, docs: &[DocumentRecord]) -> StoreResult<()> {
        let mut changes = SetChanges::default();
        for doc in docs {
            self.index_lookup_keys(doc)?;
            let (old, token) = self.put_document(doc, PartsChange::default(), &mut changes)?;
            self.recount(old, doc, token, &mut changes);
        }
        self.derived.defer(changes);
        self.flush_now()
    }

    /// A page of a company's documents ([`crate::DocumentStore::list_documents`]).
    pub(crate) fn list_indexed(&self, q: &ListQuery) -> StoreResult<Page<DocumentRecord>> {
        // What this store wrote is listed, flushed or not.
        self.derived.apply_deferred()?;
        let empty = |total| Page {
            items: Vec::new(),
            page: q.page,
            limit: q.limit,
            total,
        };
        let indexed = q.family.indexed_keys();
        let mut keys: BTreeMap<&str, &str> = BTreeMap::new();
        for (name, value) in &q.keys {
            if !indexed.contains(&name.as_str()) {
                return Err(StoreError::UnindexedKey {
                    family: q.family.name(),
                    key: name.clone(),
                });
            }
            if keys.insert(name, value).is_some_and(|v| v != value) {
                // Two values for one key: nothing matches both.
                return Ok(empty(0));
            }
        }
        let keys: Vec<(&str, &str)> = keys.into_iter().collect();
        let scope = scope(q.company_id, q.environment, q.family);
        let states: BTreeSet<u8> = q.states.iter().copied().collect();
        let dims: Vec<Vec<u8>> = if states.is_empty() {
            vec![dimension(&scope, &keys, None)]
        } else {
            states
                .iter()
                .map(|s| dimension(&scope, &keys, Some(*s)))
                .collect()
        };
        let first = q.from.map(day_number).unwrap_or(0);
        let last = q.to.map(day_number).unwrap_or(u32::MAX - 1);
        if first > last {
            return Ok(empty(0));
        }

        // Counters of the days in range, newest first.
        let mut days: BTreeMap<u32, u64> = BTreeMap::new();
        for dim in &dims {
            for cell in self
                .document_index_counts
                .range(cell_key(dim, first)..=cell_key(dim, last))
            {
                let (k, v) = cell?;
                let day = k
                    .len()
                    .checked_sub(4)
                    .and_then(|at| k.get(at..))
                    .and_then(|b| <[u8; 4]>::try_from(b).ok())
                    .map(u32::from_be_bytes)
                    .unwrap_or(0);
                *days.entry(day).or_insert(0) += read_u64(&v).unwrap_or(0);
            }
        }
        let total: u64 = days.values().sum();
        let offset = u64::from(q.page.max(1) - 1) * u64::from(q.limit);
        if q.limit == 0 || offset >= total {
            return Ok(empty(total));
        }
        // Whole days before the page are skipped by their counts.
        let mut before = 0;
        let mut start = last;
        for (day, n) in days.iter().rev() {
            if before + n > offset {
                start = *day;
                break;
            }
            before += n;
        }
        let skip = (offset - before) as usize;
        let take = skip + q.limit as usize;

        // The page's ids: each dimension's run from the start day on
        // (chunks newest first, ids high to low in each), merged newest
        // first by (inverted day, inverted id).
        let mut found: Vec<(u32, Reverse<u64>)> = Vec::with_capacity(take * dims.len());
        for dim in &dims {
            let mut end = run_from(dim, first);
            end.extend_from_slice(&[0xFF; 8]);
            let mut read = 0;
            for chunk in self.document_index.chunks(run_from(dim, start)..=end) {
                let chunk = chunk?;
                let day = inverted_day(dim, &chunk);
                let ids = chunk.ids(true).take(take - read);
                let before = found.len();
                found.extend(ids.map(|id| (day, Reverse(id))));
                read += found.len() - before;
                if read >= take {
                    break;
                }
            }
        }
        found.sort();
        let mut items = Vec::with_capacity(q.limit as usize);
        for (_, Reverse(id)) in found.into_iter().skip(skip).take(q.limit as usize) {
            if let Some(doc) = Self::get_decode(&self.documents, trees::DOCUMENTS, &id_key(id))? {
                items.push(doc);
            }
        }
        Ok(Page {
            items,
            page: q.page,
            limit: q.limit,
            total,
        })
    }

    /// Once per data dir (written before the index, or before it held id
    /// sets): the index and its counters built from every document, and
    /// the index it replaces dropped.
    pub(crate) fn build_index_once(&self) -> StoreResult<Option<u64>> {
        if self.meta.get(INDEX_BUILT_KEY)?.is_some() {
            return Ok(None);
        }
        self.document_index.clear()?;
        self.document_index_counts.clear()?;
        self.document_index_pending.clear()?;
        let mut counts: HashMap<Vec<u8>, u64> = HashMap::new();
        // Records in id order: one write per chunk.
        let mut sets = self.document_index.loader();
        let mut indexed = 0;
        for item in self.documents.iter() {
            let (_, v) = item?;
            let view: IndexView = decode(trees::DOCUMENTS, &v)?;
            for (dim, day) in view.cells() {
                sets.add(&run_from(&dim, day), view.id)?;
                *counts.entry(cell_key(&dim, day)).or_insert(0) += 1;
            }
            indexed += 1;
        }
        sets.finish()?;
        for (key, n) in counts {
            self.document_index_counts.insert(key, &n.to_be_bytes())?;
        }
        self.meta.insert(INDEX_BUILT_KEY, &[1u8])?;
        self.meta.remove(INDEX_V1_BUILT_KEY)?;
        self.db.drop_tree(trees::DOCUMENT_INDEX_V1)?;
        self.flush_now()?;
        Ok(Some(indexed))
    }

    /// After an unclean stop: the documents named by markers get exactly
    /// the entries of their stored record, and the counter cells they
    /// touch are recounted from the entries of that day. Returns how many
    /// documents were checked.
    pub(crate) fn repair_index(&self) -> StoreResult<u64> {
        let mut olds: BTreeMap<u64, Vec<IndexView>> = BTreeMap::new();
        for item in self.document_index_pending.iter() {
            let (k, v) = item?;
            let Some(id) = read_u64(&k) else { continue };
            let old: Option<IndexView> = decode(trees::DOCUMENT_INDEX_PENDING, &v)?;
            olds.entry(id).or_default().extend(old);
        }
        let mut cells: BTreeSet<(Vec<u8>, u32)> = BTreeSet::new();
        for (id, old) in &olds {
            for view in old {
                for set in view.entries() {
                    self.document_index.remove(&set, *id)?;
                }
                cells.extend(view.cells());
            }
            let current: Option<IndexView> = self
                .documents
                .get(id_key(*id))?
                .map(|v| decode(trees::DOCUMENTS, &v))
                .transpose()?;
            if let Some(view) = current {
                for set in view.entries() {
                    self.document_index.add(&set, *id)?;
                }
                cells.extend(view.cells());
            }
        }
        for (dim, day) in cells {
            let n = self.document_index.count(&run_from(&dim, day))?;
            let key = cell_key(&dim, day);
            if n == 0 {
                self.document_index_counts.remove(key)?;
            } else {
                self.document_index_counts.insert(key, &n.to_be_bytes())?;
            }
        }
        self.document_index_pending.clear()?;
        self.flush_now()?;
        Ok(olds.len() as u64)
    }

    /// A clean open: every change the markers name is durable.
    pub(crate) fn clear_index_markers(&self) -> StoreResult<()> {
        if !self.document_index_pending.is_empty() {
            self.document_index_pending.clear()?;
        }
        Ok(())
    }
}

/// Used by tests: the markers a store holds.
#[cfg(test)]
pub(crate) fn pending_markers(store: &SledStore) -> usize {
    store.document_index_pending.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(keys: &[(&str, &str)]) -> IndexView {
        IndexView {
            id: 7,
            company_id: 1,
            environment: Environment::Test,
            document_type: 9,
            state: 2,
            pending_build: false,
            issue_date: NaiveDate::from_ymd_opt(2026, 3, 4).unwrap(),
            list_keys: keys
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    #[test]
    fn a_pos_receipt_is_in_every_combination_of_its_keys_with_and_without_its_state() {
        let v = view(&[
            ("id_caja", "C1"),
            ("id_cajero", "7"),
            ("centro_costos", "x"),
        ]);
        // {}, {caja}, {cajero}, {caja, cajero} × {any, state 2}; centro_costos is not indexed.
        assert_eq!(v.entries().len(), 8);
        let half_built = IndexView {
            pending_build: true,
            ..v
        };
        assert!(half_built.entries().is_empty());
    }

    #[test]
    fn dimensions_are_not_prefixes_of_each_other() {
        let s = scope(1, Environment::Test, Family::Pos);
        let a = dimension(&s, &[("id_caja", "C")], None);
        let b = dimension(&s, &[("id_caja", "C1")], None);
        let c = dimension(&s, &[], Some(2));
        assert!(!b.starts_with(&a) && !a.starts_with(&b));
        assert!(!c.starts_with(&dimension(&s, &[], None)));
    }
}
