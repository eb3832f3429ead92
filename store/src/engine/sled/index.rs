//! The document index on sled (`indexes::doc_index`): writing a record
//! with its index changes, reading a page, building the index once, and
//! repairing it after an unclean stop.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::encoding::codec::{
    decode, id_key, json_of, parse, read_u64, split_request, with_request,
};
use crate::encoding::record_parts::{encode_record, Parts, PartsChange};
use crate::encoding::trees;
use crate::engine::sled::SledStore;
use crate::error::{StoreError, StoreResult};
use crate::indexes::counts::Counted;
use crate::indexes::doc_index::{
    cell_key, day_number, dimension, inverted_day, marker_token, move_entries, run_from, scope,
    IndexView, INDEX_BUILT_KEY, INDEX_V1_BUILT_KEY, INDEX_V2_BUILT_KEY,
};
use crate::indexes::set_changes::SetChanges;
use crate::model::*;

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
        // An invoice's authority events only grow: a writer holding a copy
        // read before the events sweep stored some keeps them.
        let kept;
        let doc = match (&old, json.as_deref()) {
            (Some(o), Some(j)) if o.may_hold_authority_events() => {
                match kept_events(doc, parse(trees::DOCUMENTS, j)?) {
                    Some(merged) => {
                        kept = merged;
                        &kept
                    }
                    None => doc,
                }
            }
            _ => doc,
        };
        // A half-built record keeps its request until phase two (the one
        // change with files) moves it to the file log.
        let request = match (&change.files, stored.as_deref()) {
            (None, Some(v)) => split_request(v).1.map(<[u8]>::to_vec),
            _ => None,
        };
        let parts = Parts::merged(json.as_deref(), change)?;
        let new = IndexView::of(doc);
        let moved = new.moved_from(old.as_ref());
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

/// What a stored invoice's record holds of the authority's events.
#[derive(serde::Deserialize)]
struct StoredEvents {
    #[serde(default)]
    authority_events: Vec<received::AuthorityEvent>,
    #[serde(default)]
    list_keys: BTreeMap<String, String>,
}

/// `doc` with the stored events and their list key, when it holds fewer
/// than the stored record (a copy read before they were learned).
fn kept_events(doc: &DocumentRecord, stored: StoredEvents) -> Option<DocumentRecord> {
    if stored.authority_events.len() <= doc.authority_events.len() {
        return None;
    }
    let mut merged = doc.clone();
    merged.authority_events = stored.authority_events;
    match stored.list_keys.get(EVENT_STANDING_KEY) {
        Some(standing) => merged
            .list_keys
            .insert(EVENT_STANDING_KEY.into(), standing.clone()),
        None => merged.list_keys.remove(EVENT_STANDING_KEY),
    };
    Some(merged)
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
        let (first, last) = day_range(q.from, q.to);
        let (ids, total) = self.page_ids(&dims, &[], first, last, q.page, q.limit)?;
        let mut items = Vec::with_capacity(ids.len());
        for id in ids {
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

    /// The ids of a page of the union of the runs `dims` (disjoint sets)
    /// and of `extras` (documents found otherwise, as (day, id), in none of
    /// the runs), issued from day `first` to `last`, newest first (by day,
    /// then id); and how many there are in all.
    pub(crate) fn page_ids(
        &self,
        dims: &[Vec<u8>],
        extras: &[(u32, u64)],
        first: u32,
        last: u32,
        page: u32,
        limit: u32,
    ) -> StoreResult<(Vec<u64>, u64)> {
        if first > last {
            return Ok((Vec::new(), 0));
        }
        // Counters of the days in range, newest first.
        let mut days: BTreeMap<u32, u64> = BTreeMap::new();
        for dim in dims {
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
        let extras: Vec<(u32, u64)> = extras
            .iter()
            .copied()
            .filter(|(day, _)| (first..=last).contains(day))
            .collect();
        for (day, _) in &extras {
            *days.entry(*day).or_insert(0) += 1;
        }
        let total: u64 = days.values().sum();
        let offset = u64::from(page.max(1) - 1) * u64::from(limit);
        if limit == 0 || offset >= total {
            return Ok((Vec::new(), total));
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
        let take = skip + limit as usize;

        // The page's ids: each dimension's run from the start day on
        // (chunks newest first, ids high to low in each), merged newest
        // first by (inverted day, inverted id).
        let mut found: Vec<(u32, Reverse<u64>)> = Vec::with_capacity(take * (dims.len() + 1));
        for dim in dims {
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
        found.extend(
            extras
                .iter()
                .filter(|(day, _)| *day <= start)
                .map(|(day, id)| (u32::MAX - day, Reverse(*id))),
        );
        found.sort();
        let ids = found
            .into_iter()
            .skip(skip)
            .take(limit as usize)
            .map(|(_, Reverse(id))| id)
            .collect();
        Ok((ids, total))
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
                sets.add(&run_from(&dim, day), view.id())?;
                *counts.entry(cell_key(&dim, day)).or_insert(0) += 1;
            }
            if let Some((dim, day)) = view.party_cell() {
                sets.add(&run_from(&dim, day), view.id())?;
            }
            indexed += 1;
        }
        sets.finish()?;
        for (key, n) in counts {
            self.document_index_counts.insert(key, &n.to_be_bytes())?;
        }
        self.meta.insert(INDEX_BUILT_KEY, &[1u8])?;
        self.meta.remove(INDEX_V1_BUILT_KEY)?;
        self.meta.remove(INDEX_V2_BUILT_KEY)?;
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

/// Days `from` to `to` (inclusive) in the index's unit; none is open.
pub(crate) fn day_range(
    from: Option<chrono::NaiveDate>,
    to: Option<chrono::NaiveDate>,
) -> (u32, u32) {
    (
        from.map(day_number).unwrap_or(0),
        to.map(day_number).unwrap_or(u32::MAX - 1),
    )
}

/// Used by tests: the markers a store holds.
#[cfg(test)]
pub(crate) fn pending_markers(store: &SledStore) -> usize {
    store.document_index_pending.len()
}
