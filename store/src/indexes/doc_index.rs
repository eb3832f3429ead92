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
//! may be half written, and only those are checked ([``SledStore::repair_index``]).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use chrono::{Datelike, NaiveDate};
use serde::{Deserialize, Serialize};
use sled::Tree;

use crate::encoding::codec::{encode, id_key, read_u64};
use crate::encoding::trees;
use crate::error::StoreResult;
use crate::indexes::counts::Counted;
use crate::indexes::id_sets::Chunk;
use crate::indexes::set_changes::SetChanges;
use crate::model::*;

/// Set in `META` once a data dir's index (as id sets, with the party
/// runs) has been built from its documents.
pub(crate) const INDEX_BUILT_KEY: &[u8] = b"document_index_v3_built";

/// The flag of the index without the party runs: a data dir that holds it
/// is built again once.
pub(crate) const INDEX_V2_BUILT_KEY: &[u8] = b"document_index_v2_built";

/// The flag of the index before id sets, removed with its tree.
pub(crate) const INDEX_V1_BUILT_KEY: &[u8] = b"document_index_built";

/// Longest key value indexed; longer values are indexed by this prefix.
const MAX_VALUE: usize = 512;

/// The key names of the party runs; `@` starts no family key, so no key
/// filter of a list reaches them.
const CUSTOMER_KEY: &str = "@cliente";
const EMPLOYEE_KEY: &str = "@empleado";

/// The list key of a payroll's employee identification number.
pub(crate) const EMPLOYEE_LIST_KEY: &str = "empleado";

/// Whom a document is for, as the index keys it: the customer record a
/// buyer or a support document's supplier was stored as (by its id, so a
/// customer renamed keeps its run), or a payroll's employee by
/// identification number (payroll stores no customer).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Party {
    Customer(u64),
    Employee(String),
}

impl Party {
    /// Its dimension's key (name, value).
    fn key(&self) -> (&'static str, String) {
        match self {
            Party::Customer(id) => (CUSTOMER_KEY, id.to_string()),
            Party::Employee(number) => (EMPLOYEE_KEY, number.clone()),
        }
    }

    /// The party of a document of `family`.
    pub(crate) fn of(
        family: Family,
        customer_id: Option<u64>,
        list_keys: &BTreeMap<String, String>,
    ) -> Option<Party> {
        if family == Family::Payroll {
            list_keys
                .get(EMPLOYEE_LIST_KEY)
                .filter(|n| !n.is_empty())
                .map(|n| Party::Employee(n.clone()))
        } else {
            customer_id.map(Party::Customer)
        }
    }

    /// The dimension of `scope`'s documents of this party.
    pub(crate) fn dimension(&self, scope: &[u8]) -> Vec<u8> {
        let (name, value) = self.key();
        dimension(scope, &[(name, &value)], None)
    }
}

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
    #[serde(default)]
    customer_id: Option<u64>,
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
        crate::indexes::counts::counted(self.document_type, self.state, self.pending_build)
    }

    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// Its set in the state index.
    pub(crate) fn state_set(&self) -> u8 {
        crate::indexes::counts::state_set(self.state, self.pending_build)
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
            customer_id: doc.customer_id,
        }
    }

    fn family(&self) -> Family {
        Family::of_document_type(self.document_type)
    }

    /// Whether the record may hold events the authority listed (an
    /// accepted invoice): only those are read for them on a write.
    pub(crate) fn may_hold_authority_events(&self) -> bool {
        self.state == state::ACCEPTED && self.family() == Family::Invoices
    }

    /// Its (dimension, day) cells; none while half built (a document is
    /// listed once its build is stored).
    pub(crate) fn cells(&self) -> Vec<(Vec<u8>, u32)> {
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

    /// Its party's run ([`Party`]) and day, if it has a party and is built.
    /// Not counted and not by state: one write when the document is built,
    /// none when its state changes (a search by party counts its run's
    /// entries, with the state index's for a state filter).
    pub(crate) fn party_cell(&self) -> Option<(Vec<u8>, u32)> {
        if self.pending_build {
            return None;
        }
        let family = self.family();
        let party = Party::of(family, self.customer_id, &self.list_keys)?;
        let scope = scope(self.company_id, self.environment, family);
        Some((party.dimension(&scope), day_number(self.issue_date)))
    }

    /// Whether a change from `old` moves it in the index.
    pub(crate) fn moved_from(&self, old: Option<&IndexView>) -> bool {
        old.map(|o| (o.cells(), o.party_cell())) != Some((self.cells(), self.party_cell()))
    }

    /// The id sets it is in: one per cell, and its party's run.
    pub(crate) fn entries(&self) -> BTreeSet<Vec<u8>> {
        self.cells()
            .into_iter()
            .chain(self.party_cell())
            .map(|(dim, day)| run_from(&dim, day))
            .collect()
    }
}

/// Days since the common era, the index's date unit.
pub(crate) fn day_number(d: NaiveDate) -> u32 {
    u32::try_from(d.num_days_from_ce()).unwrap_or(0)
}

pub(crate) fn scope(company: CompanyId, environment: Environment, family: Family) -> Vec<u8> {
    let mut k = Vec::with_capacity(32);
    k.extend_from_slice(&company.to_be_bytes());
    k.push(environment.authority_code());
    k.push(family.tag());
    k
}

/// Scope ‖ keys (count, then each name and value length-prefixed) ‖ state
/// (0 any, 1 then the state): self-delimiting, so no dimension's run is a
/// prefix of another's.
pub(crate) fn dimension(scope: &[u8], keys: &[(&str, &str)], state: Option<u8>) -> Vec<u8> {
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

pub(crate) fn cell_key(dim: &[u8], day: u32) -> Vec<u8> {
    let mut k = Vec::with_capacity(dim.len() + 4);
    k.extend_from_slice(dim);
    k.extend_from_slice(&day.to_be_bytes());
    k
}

/// The inverted day in a chunk's key (after its dimension).
pub(crate) fn inverted_day(dim: &[u8], chunk: &Chunk) -> u32 {
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
    pub(crate) fn mark(&self, id: u64, old: Option<&IndexView>) -> StoreResult<Vec<u8>> {
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

/// The index sets and day counters a record leaves and joins. A counter
/// moves only with its set's bit (`set_changes`).
pub(crate) fn move_entries(old: Option<&IndexView>, new: &IndexView, changes: &mut SetChanges) {
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
    let (before, after) = (old.and_then(IndexView::party_cell), new.party_cell());
    if before != after {
        if let Some((dim, day)) = before {
            changes.remove_uncounted(run_from(&dim, day), new.id);
        }
        if let Some((dim, day)) = after {
            changes.add_uncounted(run_from(&dim, day), new.id);
        }
    }
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
            customer_id: None,
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
    fn a_document_with_a_party_is_in_its_run_and_a_payroll_by_its_employee() {
        let sale = IndexView {
            customer_id: Some(42),
            ..view(&[("id_caja", "C1")])
        };
        // {}, {caja} × {any, state}, and the customer's run.
        assert_eq!(sale.entries().len(), 5);
        assert_eq!(sale.cells().len(), 4, "the party's run is not counted");
        let s = scope(1, Environment::Test, Family::Pos);
        let customer = Party::Customer(42).dimension(&s);
        assert_eq!(sale.party_cell().map(|c| c.0), Some(customer.clone()));
        let rejected = IndexView {
            state: 4,
            ..sale.clone()
        };
        assert!(rejected.moved_from(Some(&sale)));
        assert_eq!(rejected.party_cell(), sale.party_cell(), "no state in it");
        let payroll = IndexView {
            document_type: 11,
            customer_id: Some(9),
            ..view(&[("tipo", "INDIVIDUAL"), ("empleado", "1020")])
        };
        let p = scope(1, Environment::Test, Family::Payroll);
        let employee = Party::Employee("1020".into()).dimension(&p);
        assert_eq!(payroll.party_cell().map(|c| c.0), Some(employee));
        // A party's run is never a family key's run.
        assert!(!customer.starts_with(&dimension(&s, &[("id_caja", "7")], None)));
        let half_built = IndexView {
            pending_build: true,
            ..sale
        };
        assert!(half_built.party_cell().is_none());
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
