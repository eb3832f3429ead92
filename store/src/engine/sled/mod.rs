//! The embedded store on sled. Most methods are synchronous and may block
//! on disk; the issuing hot path uses `commit_staged`, which hands its
//! writes and fsync to the flusher thread and is awaited instead.

mod backup;
mod checkpoint;
mod documents;
mod import;
pub(crate) mod index;
mod leases;
mod lookup;
mod mail;
mod read_cache;
mod received;
pub(crate) mod repair;
pub(crate) mod rewrite;
pub(crate) mod sealing;
pub(crate) mod search;

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use chrono::{DateTime, NaiveDate, Utc};
use sled::transaction::{
    ConflictableTransactionError, TransactionalTree, UnabortableTransactionError,
};
use sled::{Db, Transactional, Tree};

use crate::durability::file_log::{FileLog, FilePos};
use crate::durability::flusher::{Flusher, Scope};
use crate::durability::group_commit::GroupCommit;
use crate::durability::intents::{self, Intents};
use crate::durability::payload_log::{self, PayloadLog};
use crate::encoding::codec::{decode, encode, id_key, read_u64, scoped_key, scoped_text_key};
use crate::encoding::compress::Dictionaries;
use crate::encoding::trees;
use crate::engine::sled::documents::{join_payload, split_payload};
use crate::engine::sled::lookup::HASHED_INDEXES_KEY;
use crate::engine::sled::read_cache::ReadCache;
use crate::engine::sled::repair::{CLEAN_CLOSE_KEY, DERIVED_V2_KEY, STATE_SETS_KEY};
use crate::engine::sled::rewrite::{
    finish_rewrite, has_superseded, open_db, rewrite_compact, rewrite_sealed, DEFAULT_CACHE_BYTES,
};
use crate::engine::sled::sealing::{check_keys, survey_trees};
use crate::error::{StoreError, StoreResult};
use crate::indexes::counts::{counter_key, value_tail, PENDING_BUILD};
use crate::indexes::doc_index::{marker_token, IndexMarkers, INDEX_BUILT_KEY};
use crate::indexes::hashed_index::HashedIndex;
use crate::indexes::id_sets::{Blocks, IdSets};
use crate::indexes::set_changes::{DerivedTrees, DerivedWriter};
use crate::model::test_set;
use crate::model::*;
use crate::secrets::sealing::{Keyring, SealedInventory};
use crate::traits::{
    ApiKeyStore, CompanyStore, CredentialStore, CustomerStore, SettingsStore, StoreHealth,
};
use checkpoint::Checkpointer;

pub(crate) type TxResult<T> = Result<T, ConflictableTransactionError<StoreError>>;

/// sled behind the store traits. Cheap to clone: one `Arc` (a document
/// clones its store handle several times on its way, and the trees are
/// forty `Arc`s).
#[derive(Clone)]
pub struct SledStore(Arc<Stores>);

impl std::ops::Deref for SledStore {
    type Target = Stores;

    fn deref(&self) -> &Stores {
        &self.0
    }
}

/// What a [`SledStore`] shares: sled's trees and what surrounds them.
pub struct Stores {
    pub(crate) db: Db,
    /// Coalesces the fsyncs of concurrent writers.
    commits: Arc<GroupCommit>,
    /// Async callers' durability requests, served by one thread.
    pub(crate) flusher: Arc<Flusher>,
    /// Document files, outside sled (see `file_log`).
    pub(crate) files: Arc<FileLog>,
    /// New documents between phase one and phase two (`intents`).
    pub(crate) intents: Arc<Intents>,
    /// Serializes phase one of documents (checks, number, record).
    pub(crate) numbering: Arc<Mutex<IdBlock>>,
    /// Serializes customer writes, and holds the customers last written or
    /// read by them ([`RecentCustomers`]).
    customer_writes: Arc<Mutex<RecentCustomers>>,
    /// A restored store's numbering hold (`backup.rs`), read by phase one.
    pub(crate) numbering_hold: Arc<RwLock<Option<NumberingHold>>>,
    /// Marks the store closed cleanly when the last handle goes (held for
    /// its `Drop`).
    #[cfg_attr(not(test), allow(dead_code))]
    closer: Arc<Closer>,
    // Shared values: a document's setup holds them without copying.
    pub(crate) companies_cache: Arc<ReadCache<CompanyId, Arc<Company>>>,
    software_cache: Arc<ReadCache<(CompanyId, u8), Arc<SoftwareRegistration>>>,
    resolutions_cache: Arc<ReadCache<CompanyId, Arc<Vec<NumberingResolution>>>>,
    certificates_cache: Arc<ReadCache<CompanyId, Arc<CertificateRecord>>>,
    /// The master key secrets are sealed under (and, while a rotation
    /// completes, the previous one): see `sealing`.
    pub(crate) keys: Arc<RwLock<Arc<Keyring>>>,
    pub(crate) meta: Tree,
    pub(crate) companies: Tree,
    company_by_nit: Tree,
    pub(crate) software: Tree,
    pub(crate) resolutions: Tree,
    pub(crate) counters: Tree,
    pub(crate) certificates: Tree,
    api_keys: Tree,
    api_key_by_hash: Tree,
    pub(crate) customers: Tree,
    pub(crate) customer_by_ident: Tree,
    pub(crate) documents: Tree,
    pub(crate) document_counts: Tree,
    pub(crate) document_files: Tree,
    /// company ‖ external reference → candidate ids (`lookup`).
    pub(crate) document_refs: HashedIndex,
    /// document code → candidate ids (`lookup`).
    pub(crate) documents_by_code: HashedIndex,
    /// company ‖ environment ‖ number → candidate ids (`search`).
    pub(crate) documents_by_number: HashedIndex,
    /// The words of customers' names (`search`, `indexes/words.rs`).
    pub(crate) customer_words: Tree,
    /// Requests of half-built documents in data dirs written before phase
    /// one kept them in the record's value ([`Self::legacy_requests`]).
    pub(crate) document_requests: Tree,
    /// `document_requests` held entries at open (nothing adds any now).
    pub(crate) legacy_requests: bool,
    pub(crate) documents_by_state: IdSets,
    pub(crate) document_history: Tree,
    pub(crate) usage: Tree,
    pub(crate) jobs: Tree,
    pub(crate) jobs_by_document: Tree,
    pub(crate) events: Tree,
    pub(crate) email_logs: Tree,
    pub(crate) email_logs_by_document: Tree,
    pub(crate) application_responses: Tree,
    pub(crate) document_index: IdSets,
    pub(crate) document_index_counts: Tree,
    pub(crate) document_index_pending: Tree,
    pub(crate) index_markers: Arc<IndexMarkers>,
    /// Writes the derived sets and counts a change moves (`set_changes`).
    pub(crate) derived: DerivedWriter,
    pub(crate) dictionaries: Arc<Dictionaries>,
    pub(crate) recent_payloads: Tree,
    /// The duplicate window: payloads older than it (and a slack) go.
    pub(crate) payload_window_ms: Arc<AtomicU64>,
    /// The duplicate window's payloads ([`PayloadLog`]); `recent_payloads`
    /// holds those of versions before it.
    pub(crate) payloads: Arc<PayloadLog>,
    /// sled's snapshot every few seconds (`checkpoint`).
    _checkpointer: Arc<Checkpointer>,
}

pub(crate) fn abort<T>(e: StoreError) -> TxResult<T> {
    Err(ConflictableTransactionError::Abort(e))
}

pub(crate) fn tx_encode<T: serde::Serialize>(tree: &'static str, value: &T) -> TxResult<Vec<u8>> {
    encode(tree, value).map_err(ConflictableTransactionError::Abort)
}

/// Next value of a named sequence inside a transaction (ids start at 1).
pub(crate) fn next_seq(
    meta: &TransactionalTree,
    name: &str,
) -> Result<u64, UnabortableTransactionError> {
    let key = format!("seq:{name}");
    let current = meta
        .get(key.as_bytes())?
        .and_then(|v| read_u64(&v))
        .unwrap_or(0);
    let next = current + 1;
    meta.insert(key.as_bytes(), &next.to_be_bytes())?;
    Ok(next)
}

/// One group commit: the file log first, then sled, so a reference sled
/// makes durable never points at files that are not. `payloads` says
/// whether the payload log is synced too, or only when due.
fn flush_all(
    db: &Db,
    commits: &GroupCommit,
    logs: &Logs,
    derived: &DerivedWriter,
    payloads: PayloadSync,
) -> StoreResult<()> {
    commits.commit(|| {
        // A full flush makes the held documents' intents durable first, so
        // their counters and usage go with it (`set_changes`). A group
        // commit's flush needs no sync of the file log: its batch synced
        // it before its writes, and what was appended since is intents,
        // whose changes wait for the next batch's sync.
        if payloads == PayloadSync::Now {
            logs.files.sync()?;
        }
        derived.apply_deferred()?;
        let done = derived.markers.before_flush();
        let flushed = logs
            .sync_payloads(payloads)
            .and_then(|()| Ok(db.flush().map(|_| ())?));
        derived.markers.after_flush(done, flushed.is_ok());
        flushed
    })
}

/// When a sync includes the payload log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PayloadSync {
    /// Once its last sync is [`payload_log::SYNC_EVERY`] old (group commits).
    WhenDue,
    /// Now (a full flush, a close).
    Now,
}

/// `meta` key: the file log's end as of the payload log's last sync. Every
/// request record before it has its payload in the synced payload log;
/// those after it are read back at open ([`SledStore::restore_payloads`]).
pub(crate) const PAYLOADS_SYNCED_TO: &[u8] = b"payloads_synced_to";

/// The append-only files beside sled, synced before each sled flush.
#[derive(Clone)]
pub(crate) struct Logs {
    pub files: Arc<FileLog>,
    pub payloads: Arc<PayloadLog>,
    pub meta: Tree,
    /// The documents phase one holds out of sled: the mark never passes
    /// their intents.
    pub intents: Arc<Intents>,
}

impl Logs {
    pub(crate) fn sync(&self, payloads: PayloadSync) -> StoreResult<()> {
        self.files.sync()?;
        self.sync_payloads(payloads)
    }

    /// The payload log, when due (or `Now`), and its mark.
    fn sync_payloads(&self, payloads: PayloadSync) -> StoreResult<()> {
        if payloads == PayloadSync::Now || self.payloads.sync_due() {
            // The end read before the sync: every record before it had its
            // payload appended first. Durable with the sled flush after.
            // Not past an intent still held: the next open reads it back
            // (`intents`).
            let end = self.intents.mark(|| self.files.end());
            self.payloads.sync()?;
            self.meta.insert(PAYLOADS_SYNCED_TO, &end.to_bytes())?;
        }
        Ok(())
    }
}

/// Entries a leaf of the `documents` tree holds before it splits (sled's
/// 16 elsewhere). Records are written in id order, so a split leaves all
/// but four behind (vendor/sled PATCHES.md, 6) and a leaf then holds ~60
/// documents, not ~13: sled keeps a page-table entry, its log locations
/// and its segment accounting resident for every page however small its
/// cache, so that many fewer pages keep resident memory from growing with
/// the store (docs/performance.md).
const DOCUMENT_LEAF_ENTRIES: usize = 64;

/// Document ids reserved in `meta` and not yet used
/// ([`SledStore::next_document_id`]).
#[derive(Default)]
pub(crate) struct IdBlock {
    next: u64,
    end: u64,
}

/// Document ids reserved at a time.
pub(crate) const ID_BLOCK: u64 = 256;

/// The customers upserts last wrote or found, by `company ‖ identification`:
/// the usual invoice names a customer already stored, unchanged, and is
/// then spared two sled reads and a decode. Only upserts write customers,
/// under the lock that holds this, so an entry is what sled holds. Bounded:
/// emptied when full.
#[derive(Default)]
struct RecentCustomers(std::collections::HashMap<Vec<u8>, Customer>);

pub(crate) const RECENT_CUSTOMERS: usize = 1024;

impl RecentCustomers {
    fn get(&self, key: &[u8]) -> Option<&Customer> {
        self.0.get(key)
    }

    fn put(&mut self, key: Vec<u8>, c: &Customer) {
        if self.0.len() >= RECENT_CUSTOMERS && !self.0.contains_key(&key) {
            self.0.clear();
        }
        self.0.insert(key, c.clone());
    }
}

/// Writes the clean-close mark after a last flush. A process killed
/// before this runs leaves no mark, and the next open repairs.
struct Closer {
    db: Db,
    meta: Tree,
    logs: Logs,
    /// Changes deferred to a flush that may not come (a new document's
    /// pending-build entry whose build never finished): written first.
    derived: DerivedWriter,
    armed: AtomicBool,
}

impl Drop for Closer {
    fn drop(&mut self) {
        if !self.armed.load(Ordering::SeqCst) {
            return;
        }
        // The file log first: the held documents' changes go with it.
        let closed = self
            .logs
            .files
            .sync()
            .and_then(|()| self.derived.apply_deferred())
            .and_then(|()| self.logs.sync_payloads(PayloadSync::Now))
            .and_then(|_| Ok(self.meta.insert(CLEAN_CLOSE_KEY, &[1u8])?))
            .and_then(|_| Ok(self.db.flush()?));
        if let Err(e) = closed {
            tracing::error!(error = %e, "could not mark the store closed cleanly");
        }
    }
}

pub(crate) fn software_key(company: CompanyId, kind: SoftwareKind) -> [u8; 9] {
    let mut k = [0u8; 9];
    k[..8].copy_from_slice(&company.to_be_bytes());
    k[8] = kind.tag();
    k
}

/// Until told otherwise ([`SledStore::set_duplicate_window`]): 5 minutes.
const DEFAULT_PAYLOAD_WINDOW_MS: u64 = 300_000;

/// The first marker token of this run: above every token stored in a
/// count or a marker left by the last one.
fn first_marker_token(counts: &Tree, markers: &Tree) -> StoreResult<u64> {
    let mut max = 0;
    for item in counts.iter() {
        let (_, v) = item?;
        max = max.max(value_tail(&v));
    }
    for item in markers.iter() {
        let (k, _) = item?;
        max = max.max(marker_token(&k));
    }
    Ok(max + 1)
}

/// How the store is opened.
#[derive(Debug, Clone, Copy)]
pub struct OpenOptions {
    /// sled's page cache (sled's own accounting: its resident share is
    /// about twice that under load).
    pub cache_bytes: u64,
    /// How often, at most, sled's snapshot is written while the store is
    /// written to (`checkpoint`).
    pub checkpoint_every: std::time::Duration,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            cache_bytes: DEFAULT_CACHE_BYTES,
            checkpoint_every: checkpoint::EVERY,
        }
    }
}

impl SledStore {
    /// How long payloads are kept for the duplicate window (its length,
    /// from the configuration), read back at start-up.
    pub fn set_duplicate_window(&self, window: std::time::Duration) {
        let ms = u64::try_from(window.as_millis()).unwrap_or(u64::MAX);
        self.payload_window_ms.store(ms, Ordering::Relaxed);
    }

    /// Opens (or creates) the store under `dir`, its secrets sealed under
    /// `keys`. Fails with [`StoreError::Locked`] while another process holds
    /// the data dir, and with [`StoreError::MasterKey`] when it holds
    /// secrets sealed under a key `keys` does not have.
    pub fn open(dir: &Path, keys: Keyring) -> StoreResult<Self> {
        Self::open_with(dir, |_| Ok(keys))
    }

    /// [`open`](Self::open) with the keys chosen once the store's sealed
    /// values are known (which keys they name, how many are still plain),
    /// before anything is written: a refusal leaves the data dir as it was.
    /// Plain secrets (stores written before sealing) and secrets under
    /// another accepted key are then sealed under the current key.
    pub fn open_with(
        dir: &Path,
        choose: impl FnOnce(&SealedInventory) -> StoreResult<Keyring>,
    ) -> StoreResult<Self> {
        Self::open_with_options(dir, OpenOptions::default(), choose)
    }

    /// [`open_with`](Self::open_with) with `options` (sled's page cache,
    /// how often its snapshot is written).
    pub fn open_with_options(
        dir: &Path,
        options: OpenOptions,
        choose: impl FnOnce(&SealedInventory) -> StoreResult<Keyring>,
    ) -> StoreResult<Self> {
        let OpenOptions {
            cache_bytes,
            checkpoint_every,
        } = options;
        finish_rewrite(dir)?;
        let db = open_db(dir, cache_bytes)?;
        let inventory = survey_trees(&db)?;
        let keys = choose(&inventory)?;
        check_keys(&inventory, &keys)?;
        // Indexes of older layouts (`trees::SUPERSEDED`): their
        // replacements are built again from the documents (an older build
        // may have written since), also after a crash during the copy.
        let superseded = has_superseded(&db)?;
        if superseded {
            let meta = db.open_tree(trees::META)?;
            meta.remove(INDEX_BUILT_KEY)?;
            meta.remove(STATE_SETS_KEY)?;
            meta.remove(HASHED_INDEXES_KEY)?;
            db.flush()?;
        }
        // A store from before sealing is copied with its secrets sealed,
        // so that no file keeps the plain ones (`rewrite`).
        let (db, inventory) = if inventory.plain > 0 {
            let db = rewrite_sealed(dir, db, &keys, cache_bytes)?;
            tracing::warn!(
                plain = inventory.plain,
                master_key = keys.current().id(),
                "a store from before sealed secrets: its secrets are sealed under the \
                 current master key now, and sled's files rewritten without the plain ones"
            );
            let sealed = survey_trees(&db)?;
            (db, sealed)
        } else if superseded {
            // Indexes of older layouts: sled would keep their pages
            // resident even once dropped (`rewrite`).
            let db = rewrite_compact(dir, db, cache_bytes)?;
            tracing::warn!(
                "a store with the indexes of an older layout: sled's files rewritten without \
                 them (they are built again from the documents)"
            );
            (db, inventory)
        } else {
            (db, inventory)
        };
        let t = |name: &str| db.open_tree(name);
        let files = Arc::new(FileLog::open(&dir.join("files"))?);
        let payloads = Arc::new(PayloadLog::open(&dir.join("payloads"))?);
        let meta = t(trees::META)?;
        let intents = Arc::new(Intents::default());
        let logs = Logs {
            files: files.clone(),
            payloads: payloads.clone(),
            meta: meta.clone(),
            intents: intents.clone(),
        };
        let commits = Arc::new(GroupCommit::default());
        let document_index_pending = t(trees::DOCUMENT_INDEX_PENDING)?;
        let document_counts = t(trees::DOCUMENT_COUNTS)?;
        let first_token = first_marker_token(&document_counts, &document_index_pending)?;
        let index_markers = Arc::new(IndexMarkers::new(
            document_index_pending.clone(),
            first_token,
        ));
        let documents_by_state = IdSets::new(
            t(trees::DOCUMENTS_BY_STATE)?,
            Blocks::Ascending,
            trees::DOCUMENTS_BY_STATE,
        );
        let document_index = IdSets::new(
            t(trees::DOCUMENT_INDEX)?,
            Blocks::NewestFirst,
            trees::DOCUMENT_INDEX,
        );
        let document_index_counts = t(trees::DOCUMENT_INDEX_COUNTS)?;
        let (counters, usage) = (t(trees::COUNTERS)?, t(trees::USAGE)?);
        let document_requests = t(trees::DOCUMENT_REQUESTS)?;
        let derived = DerivedWriter::new(
            DerivedTrees {
                by_state: documents_by_state.clone(),
                index: document_index.clone(),
                index_counts: document_index_counts.clone(),
                counts: document_counts.clone(),
                counters: counters.clone(),
                usage: usage.clone(),
                meta: meta.clone(),
            },
            index_markers.clone(),
            files.clone(),
        );
        let closer = Arc::new(Closer {
            db: db.clone(),
            meta: meta.clone(),
            logs: logs.clone(),
            derived: derived.clone(),
            armed: AtomicBool::new(true),
        });
        let (flush_db, commits_for_flusher, logs_for_flusher, derived_for_flusher) =
            (db.clone(), commits.clone(), logs.clone(), derived.clone());
        let store = SledStore(Arc::new(Stores {
            meta: meta.clone(),
            companies: t(trees::COMPANIES)?,
            company_by_nit: t(trees::COMPANY_BY_NIT)?,
            software: t(trees::SOFTWARE)?,
            resolutions: t(trees::RESOLUTIONS)?,
            counters,
            certificates: t(trees::CERTIFICATES)?,
            api_keys: t(trees::API_KEYS)?,
            api_key_by_hash: t(trees::API_KEY_BY_HASH)?,
            customers: t(trees::CUSTOMERS)?,
            customer_by_ident: t(trees::CUSTOMER_BY_IDENT)?,
            documents: {
                let documents = t(trees::DOCUMENTS)?;
                documents.set_leaf_split(DOCUMENT_LEAF_ENTRIES);
                documents
            },
            document_counts,
            document_files: t(trees::DOCUMENT_FILES)?,
            document_refs: HashedIndex::new(t(trees::DOCUMENT_REFS)?),
            documents_by_code: HashedIndex::new(t(trees::DOCUMENTS_BY_CODE)?),
            documents_by_number: HashedIndex::new(t(trees::DOCUMENTS_BY_NUMBER)?),
            customer_words: t(trees::CUSTOMER_WORDS)?,
            legacy_requests: !document_requests.is_empty(),
            document_requests,
            documents_by_state,
            document_history: t(trees::DOCUMENT_HISTORY)?,
            usage,
            jobs: t(trees::JOBS)?,
            jobs_by_document: t(trees::JOBS_BY_DOCUMENT)?,
            events: t(trees::EVENTS)?,
            email_logs: t(trees::EMAIL_LOGS)?,
            email_logs_by_document: t(trees::EMAIL_LOGS_BY_DOCUMENT)?,
            application_responses: t(trees::APPLICATION_RESPONSES)?,
            document_index,
            document_index_counts,
            document_index_pending,
            index_markers,
            derived,
            dictionaries: Arc::new(Dictionaries::new(db.clone(), t(trees::DICTIONARIES)?)),
            recent_payloads: t(trees::RECENT_PAYLOADS)?,
            payload_window_ms: Arc::new(AtomicU64::new(DEFAULT_PAYLOAD_WINDOW_MS)),
            flusher: Arc::new(Flusher::start(move |scope| match scope {
                Scope::Files => logs_for_flusher.sync(PayloadSync::WhenDue),
                Scope::All => flush_all(
                    &flush_db,
                    &commits_for_flusher,
                    &logs_for_flusher,
                    &derived_for_flusher,
                    PayloadSync::WhenDue,
                ),
            })?),
            _checkpointer: Arc::new(Checkpointer::start(
                db.clone(),
                commits.clone(),
                checkpoint_every,
            )?),
            files,
            payloads,
            intents,
            commits,
            db,
            closer,
            numbering: Default::default(),
            customer_writes: Default::default(),
            numbering_hold: Arc::new(RwLock::new(backup::load_hold(&meta)?)),
            companies_cache: Default::default(),
            software_cache: Default::default(),
            resolutions_cache: Default::default(),
            certificates_cache: Default::default(),
            keys: Arc::new(RwLock::new(Arc::new(keys))),
        }));
        store.check_schema()?;
        // Before any full flush: one moves the payload mark to the end.
        store.restore_payloads()?;
        store.index_jobs_by_document()?;
        if let Some(n) = store.build_hashed_indexes_once()? {
            tracing::info!(documents = n, "code and reference indexes built");
        }
        if let Some(n) = store.build_number_index_once()? {
            tracing::info!(documents = n, "number index built");
        }
        if let Some(n) = store.build_customer_words_once()? {
            tracing::info!(customers = n, "customer name words indexed");
        }
        if let Some(n) = store.key_received_by_company_once()? {
            if n > 0 {
                tracing::info!(
                    records = n,
                    "received invoices keyed by uploading company; earlier uploads wait to be \
                     compared with the authority's copy"
                );
            }
        }
        if let Some(n) = store.list_received_by_environment_once()? {
            if n > 0 {
                tracing::info!(
                    records = n,
                    "lists of received and eligible invoices kept per environment"
                );
            }
        }
        let seeded = store.seed_test_set_counters()?;
        if seeded > 0 {
            tracing::info!(
                counters = seeded,
                "test set counters raised above the numbers documents already hold"
            );
        }
        let clean = store.meta.remove(CLEAN_CLOSE_KEY)?.is_some();
        let witnessed = store.meta.get(DERIVED_V2_KEY)?.is_some();
        if store.documents.is_empty() {
            if !witnessed {
                store.meta.insert(DERIVED_V2_KEY, &[1u8])?;
            }
        } else if !witnessed {
            // Once per data dir written before the witnesses.
            let report = store.repair_derived()?;
            tracing::info!(?report, "derived data recomputed from every document");
        } else if !clean {
            let report = store.repair_recent()?;
            tracing::warn!(
                ?report,
                "the store was not closed cleanly: the last writes' derived data checked"
            );
        }
        if let Some(n) = store.build_state_index_once()? {
            tracing::info!(documents = n, "state index built as id sets");
        }
        store.open_index(clean)?;
        // Every document has its state entry now (repaired or clean).
        let newest = store.documents.last()?.and_then(|(k, _)| read_u64(&k));
        store.derived.mark_pending_written(newest.unwrap_or(0))?;
        store.seal_remaining(&inventory)?;
        store.drop_stale_payload_tree()?;
        store.flush_now()?;
        Ok(store)
    }

    /// The document index at open: built once for a data dir written
    /// before it; after an unclean stop, the documents its markers name
    /// are checked (only those).
    fn open_index(&self, clean: bool) -> StoreResult<()> {
        if let Some(n) = self.build_index_once()? {
            tracing::info!(documents = n, "document index built");
        } else if clean {
            self.clear_index_markers()?;
        } else {
            let checked = self.repair_index()?;
            tracing::warn!(
                documents = checked,
                "unclean stop: the index entries of the last commits checked"
            );
        }
        Ok(())
    }

    fn check_schema(&self) -> StoreResult<()> {
        match self.meta.get(trees::SCHEMA_KEY)?.and_then(|v| read_u64(&v)) {
            None => {
                self.meta
                    .insert(trees::SCHEMA_KEY, &trees::SCHEMA_VERSION.to_be_bytes())?;
                self.db.flush()?;
                Ok(())
            }
            Some(v) if v <= trees::SCHEMA_VERSION => Ok(()),
            Some(v) => Err(StoreError::UnknownFormat {
                tree: trees::META,
                found: u8::try_from(v).unwrap_or(u8::MAX),
                supported: trees::SCHEMA_VERSION as u8,
            }),
        }
    }

    /// Returns once every write this thread made before the call is on
    /// disk; concurrent callers share one fsync (group commit).
    /// Versions before the payload log kept the duplicate window in a tree;
    /// once its newest payload is a day old nothing in it can matter.
    fn drop_stale_payload_tree(&self) -> StoreResult<()> {
        let day_ago = (Utc::now() - chrono::Duration::days(1)).timestamp_micros() as u64;
        let stale = self
            .recent_payloads
            .last()?
            .is_some_and(|(k, _)| read_u64(&k).is_some_and(|us| us < day_ago));
        if stale {
            self.recent_payloads.clear()?;
        }
        Ok(())
    }

    /// The payloads a power loss took off the payload log's tail, put back
    /// from the file log's records after the mark of its last sync.
    fn restore_payloads(&self) -> StoreResult<()> {
        let Some(from) = self
            .meta
            .get(PAYLOADS_SYNCED_TO)?
            .and_then(|v| FilePos::from_bytes(&v))
        else {
            // A new data dir, or one whose payload log was synced with
            // every commit: nothing to look for. From here, a mark.
            self.meta
                .insert(PAYLOADS_SYNCED_TO, &self.files.end().to_bytes())?;
            return Ok(());
        };
        let mut found = Vec::new();
        let mut held = Vec::new();
        // Documents whose XML is here: phase two reached the disk.
        let mut staged = std::collections::HashSet::new();
        self.files.scan_from(from, |id, first, second| {
            let (payload, record) = intents::decode_second(second);
            if let Some(p) = payload_log::decode(payload).filter(|p| p.document_id == id) {
                found.push(p);
                if let Some(record) = record {
                    held.push((id, record.to_vec(), join_payload(first, payload)));
                }
            } else {
                staged.insert(id);
            }
        })?;
        // Documents held out of sled when the last process stopped
        // (`intents`): written half-built, for resume to build.
        let recovered = self.recover_held(held, &staged)?;
        if recovered > 0 {
            tracing::warn!(
                recovered,
                "documents numbered but not built when the last process stopped written back half-built"
            );
        }
        // Documents not built yet keep theirs in front of their request
        // (appends wait in memory: a killed process took them along):
        // those with a pending-build entry, and those above the watermark,
        // whose entries wait for a flush (`set_changes`).
        let mut pending: std::collections::BTreeSet<u64> = self
            .documents_by_state
            .ids(&[PENDING_BUILD], false)
            .collect::<StoreResult<_>>()?;
        let from = self.derived.first_unwritten(&self.documents)?;
        for item in self.documents.range(id_key(from)..) {
            let (k, _) = item?;
            pending.extend(read_u64(&k));
        }
        for id in pending {
            if let Some(stored) = self.pending_request(id)? {
                let (_, payload) = split_payload(&stored);
                found.extend(payload_log::decode(payload).filter(|p| p.document_id == id));
            }
        }
        let restored = self.payloads.restore(&found)?;
        if restored > 0 {
            tracing::warn!(
                restored,
                "duplicate-window payloads lost from the payload log's tail put back from the file log"
            );
        }
        // Everything found is durable now: the next open starts here.
        self.meta
            .insert(PAYLOADS_SYNCED_TO, &self.files.end().to_bytes())?;
        Ok(())
    }

    /// [`AsyncStore::sync_power_safe`](crate::AsyncStore::sync_power_safe).
    pub(crate) fn sync_power_safe(&self) -> StoreResult<()> {
        self.db.flush_durable()?;
        Ok(())
    }

    pub(crate) fn flush_now(&self) -> StoreResult<()> {
        let logs = Logs {
            files: self.files.clone(),
            payloads: self.payloads.clone(),
            meta: self.meta.clone(),
            intents: self.intents.clone(),
        };
        flush_all(
            &self.db,
            &self.commits,
            &logs,
            &self.derived,
            PayloadSync::Now,
        )
    }

    /// Next value of a named sequence outside a transaction: an atomic
    /// update of the same key [`next_seq`] uses, so the two never collide.
    pub(crate) fn next_seq_now(&self, name: &str) -> StoreResult<u64> {
        self.advance_seq(name, 1)
    }

    /// Moves a named sequence `by` values at once; its new last value.
    fn advance_seq(&self, name: &str, by: u64) -> StoreResult<u64> {
        let key = format!("seq:{name}");
        let last = self.meta.update_and_fetch(key.as_bytes(), |v| {
            let current = v.and_then(read_u64).unwrap_or(0);
            Some((current + by).to_be_bytes().to_vec())
        })?;
        Ok(last.and_then(|v| read_u64(&v)).unwrap_or(by))
    }

    /// The next document id, from the block `numbering` holds (taken under
    /// that lock): the sequence in `meta` moves a block at a time, one
    /// sled update per [`ID_BLOCK`] documents instead of one each. The
    /// block is reserved in sled before any id of it is used, so a record
    /// sled recovers never has an id above the sequence; ids a process
    /// left unused are skipped (ids need not be dense; numbers are).
    pub(crate) fn next_document_id(&self, block: &mut IdBlock) -> StoreResult<u64> {
        if block.next >= block.end {
            let last = self.advance_seq(trees::DOCUMENTS, ID_BLOCK)?;
            block.next = last - ID_BLOCK + 1;
            block.end = last + 1;
        }
        let id = block.next;
        block.next += 1;
        Ok(id)
    }

    /// A graceful stop, while other handles may still be alive (actors,
    /// store threads): the flusher takes no more writes, everything is
    /// flushed, and the clean-close mark is written, so the next open
    /// skips the repair. Call it once nothing writes any more.
    pub fn close(&self) -> StoreResult<()> {
        self.flusher.stop();
        self.flush_now()?;
        self.meta.insert(CLEAN_CLOSE_KEY, &[1u8])?;
        self.flush_now()
    }

    #[cfg(test)]
    pub(crate) fn index_markers_next_for_tests(&self) -> u64 {
        self.index_markers.next_token()
    }

    /// Test hook: this handle closes like a killed process (no mark).
    #[cfg(test)]
    pub(crate) fn close_uncleanly(&self) {
        self.closer.armed.store(false, Ordering::SeqCst);
    }

    /// Forgets the cached credentials after a write to any of them.
    pub(crate) fn credentials_changed(&self) {
        self.companies_cache.clear();
        self.software_cache.clear();
        self.resolutions_cache.clear();
        self.certificates_cache.clear();
    }

    pub(crate) fn scan_decode<T: serde::de::DeserializeOwned>(
        tree: &Tree,
        name: &'static str,
        prefix: &[u8],
    ) -> StoreResult<Vec<T>> {
        tree.scan_prefix(prefix)
            .map(|r| {
                let (_, v) = r?;
                decode(name, &v)
            })
            .collect()
    }

    pub(crate) fn get_decode<T: serde::de::DeserializeOwned>(
        tree: &Tree,
        name: &'static str,
        key: &[u8],
    ) -> StoreResult<Option<T>> {
        tree.get(key)?.map(|v| decode(name, &v)).transpose()
    }
}

impl CompanyStore for SledStore {
    fn create_company(&self, new: NewCompany) -> StoreResult<Company> {
        let _sealing = self.sealing_scope();
        let company = (&self.meta, &self.companies, &self.company_by_nit).transaction(
            |(meta, companies, by_nit)| {
                if by_nit.get(new.nit.as_bytes())?.is_some() {
                    return abort(StoreError::Conflict(format!(
                        "a company with NIT {} already exists",
                        new.nit
                    )));
                }
                let id = next_seq(meta, trees::COMPANIES)?;
                let company = Company {
                    id,
                    nit: new.nit.clone(),
                    dv: new.dv,
                    name: new.name.clone(),
                    trade_name: new.trade_name.clone(),
                    address: new.address.clone(),
                    municipality_code: new.municipality_code.clone(),
                    municipality_name: new.municipality_name.clone(),
                    department_code: new.department_code.clone(),
                    department_name: new.department_name.clone(),
                    email: new.email.clone(),
                    phone: new.phone.clone(),
                    organization_type: new.organization_type,
                    tax_regime: new.tax_regime.clone(),
                    tax_responsibilities: new.tax_responsibilities.clone(),
                    rate_limit_per_minute: new.rate_limit_per_minute,
                    monthly_document_limit: new.monthly_document_limit,
                    webhook_url: None,
                    webhook_secret: None,
                    demo: new.demo,
                    created_at: Utc::now(),
                };
                companies.insert(&id_key(id), tx_encode(trees::COMPANIES, &company)?)?;
                by_nit.insert(new.nit.as_bytes(), &id_key(id))?;
                Ok(company)
            },
        )?;
        self.credentials_changed();
        self.flush_now()?;
        Ok(company)
    }

    fn company(&self, id: CompanyId) -> StoreResult<Option<Company>> {
        Ok(self.shared_company(id)?.map(Arc::unwrap_or_clone))
    }

    fn company_by_nit(&self, nit: &str) -> StoreResult<Option<Company>> {
        match self
            .company_by_nit
            .get(nit.as_bytes())?
            .and_then(|v| read_u64(&v))
        {
            Some(id) => self.company(id),
            None => Ok(None),
        }
    }

    fn companies(&self) -> StoreResult<Vec<Company>> {
        let _sealing = self.sealing_scope();
        Self::scan_decode(&self.companies, trees::COMPANIES, &[])
    }

    fn update_company(&self, company: &Company) -> StoreResult<()> {
        let _sealing = self.sealing_scope();
        if self.companies.get(id_key(company.id))?.is_none() {
            return Err(StoreError::NotFound("company"));
        }
        self.companies
            .insert(id_key(company.id), encode(trees::COMPANIES, company)?)?;
        self.credentials_changed();
        self.flush_now()
    }
}

impl CredentialStore for SledStore {
    fn put_software(&self, software: SoftwareRegistration) -> StoreResult<()> {
        let _sealing = self.sealing_scope();
        self.software.insert(
            software_key(software.company_id, software.kind),
            encode(trees::SOFTWARE, &software)?,
        )?;
        self.credentials_changed();
        self.flush_now()
    }

    fn software(
        &self,
        company: CompanyId,
        kind: SoftwareKind,
    ) -> StoreResult<Option<SoftwareRegistration>> {
        Ok(self
            .shared_software(company, kind)?
            .map(Arc::unwrap_or_clone))
    }

    fn add_resolution(
        &self,
        company: CompanyId,
        new: NewResolution,
    ) -> StoreResult<NumberingResolution> {
        let _sealing = self.sealing_scope();
        let resolution = (&self.meta, &self.resolutions, &self.counters).transaction(
            |(meta, resolutions, counters)| {
                let id = next_seq(meta, trees::RESOLUTIONS)?;
                if test_set::by_id(id).is_some() || id >= test_set::TEST_SET_ID_BASE {
                    return abort(StoreError::Conflict(
                        "resolution ids have reached the test sets' ids".into(),
                    ));
                }
                let r = NumberingResolution {
                    id,
                    company_id: company,
                    document_type: new.document_type,
                    also_serves: new.also_serves.clone(),
                    resolution_number: new.resolution_number.clone(),
                    resolution_date: new.resolution_date,
                    prefix: new.prefix.clone(),
                    from: new.from,
                    to: new.to,
                    valid_from: new.valid_from,
                    valid_to: new.valid_to,
                    technical_key: new.technical_key.clone(),
                    created_at: Utc::now(),
                };
                resolutions.insert(
                    &scoped_key(company, id)[..],
                    tx_encode(trees::RESOLUTIONS, &r)?,
                )?;
                counters.insert(counter_key(company, id), &new.from.to_be_bytes())?;
                Ok(r)
            },
        )?;
        self.credentials_changed();
        self.flush_now()?;
        Ok(resolution)
    }

    fn resolutions(&self, company: CompanyId) -> StoreResult<Vec<NumberingResolution>> {
        Ok(Arc::unwrap_or_clone(self.shared_resolutions(company)?))
    }

    fn resolution(&self, company: CompanyId, id: u64) -> StoreResult<Option<NumberingResolution>> {
        if let Some(set) = test_set::by_id(id) {
            return Ok(Some(set.resolution(company)));
        }
        Ok(self
            .shared_resolutions(company)?
            .iter()
            .find(|r| r.id == id)
            .cloned())
    }

    fn active_resolution(
        &self,
        company: CompanyId,
        environment: Environment,
        document_type: u8,
        date: NaiveDate,
    ) -> StoreResult<Option<NumberingResolution>> {
        if let Some(set) = test_set::for_document_type(document_type) {
            if environment == Environment::Test {
                let r = set.resolution(company);
                let open = r.valid_from <= date && date <= r.valid_to;
                return Ok((open && self.next_number(&r)? <= r.to).then_some(r));
            }
        }
        let all = self.shared_resolutions(company)?;
        let mut candidates: Vec<&NumberingResolution> = all
            .iter()
            .filter(|r| r.serves(document_type))
            .filter(|r| r.valid_from <= date && date <= r.valid_to)
            .collect();
        candidates.sort_by_key(|r| std::cmp::Reverse(r.id));
        for r in candidates {
            if self.next_number(r)? <= r.to {
                return Ok(Some(r.clone()));
            }
        }
        Ok(None)
    }

    fn next_number(&self, resolution: &NumberingResolution) -> StoreResult<u64> {
        Ok(self
            .derived
            .counter(&counter_key(resolution.company_id, resolution.id))?
            .unwrap_or(resolution.from))
    }

    fn put_certificate(&self, certificate: CertificateRecord) -> StoreResult<()> {
        let _sealing = self.sealing_scope();
        self.certificates.insert(
            id_key(certificate.company_id),
            encode(trees::CERTIFICATES, &certificate)?,
        )?;
        self.credentials_changed();
        self.flush_now()
    }

    fn certificate(&self, company: CompanyId) -> StoreResult<Option<CertificateRecord>> {
        Ok(self.shared_certificate(company)?.map(Arc::unwrap_or_clone))
    }
}

/// The records read for every document, shared with the read cache: a
/// document's setup holds them without copying their strings and the
/// certificate's bytes.
impl SledStore {
    pub(crate) fn shared_company(&self, id: CompanyId) -> StoreResult<Option<Arc<Company>>> {
        let _sealing = self.sealing_scope();
        self.companies_cache.get_or_load(id, || {
            Ok(Self::get_decode(&self.companies, trees::COMPANIES, &id_key(id))?.map(Arc::new))
        })
    }

    pub(crate) fn shared_software(
        &self,
        company: CompanyId,
        kind: SoftwareKind,
    ) -> StoreResult<Option<Arc<SoftwareRegistration>>> {
        let _sealing = self.sealing_scope();
        self.software_cache.get_or_load((company, kind.tag()), || {
            Ok(Self::get_decode(
                &self.software,
                trees::SOFTWARE,
                &software_key(company, kind),
            )?
            .map(Arc::new))
        })
    }

    pub(crate) fn shared_resolutions(
        &self,
        company: CompanyId,
    ) -> StoreResult<Arc<Vec<NumberingResolution>>> {
        let _sealing = self.sealing_scope();
        let all = self.resolutions_cache.get_or_load(company, || {
            Self::scan_decode(
                &self.resolutions,
                trees::RESOLUTIONS,
                &company.to_be_bytes(),
            )
            .map(|v| Some(Arc::new(v)))
        })?;
        Ok(all.unwrap_or_default())
    }

    pub(crate) fn shared_certificate(
        &self,
        company: CompanyId,
    ) -> StoreResult<Option<Arc<CertificateRecord>>> {
        let _sealing = self.sealing_scope();
        self.certificates_cache.get_or_load(company, || {
            Ok(
                Self::get_decode(&self.certificates, trees::CERTIFICATES, &id_key(company))?
                    .map(Arc::new),
            )
        })
    }
}

impl ApiKeyStore for SledStore {
    fn insert_api_key(&self, record: ApiKeyRecord) -> StoreResult<ApiKeyRecord> {
        let stored = (&self.meta, &self.api_keys, &self.api_key_by_hash).transaction(
            |(meta, keys, by_hash)| {
                if by_hash.get(record.hash.as_bytes())?.is_some() {
                    return abort(StoreError::Conflict("API key hash already stored".into()));
                }
                let id = next_seq(meta, trees::API_KEYS)?;
                let mut r = record.clone();
                r.id = id;
                keys.insert(&id_key(id), tx_encode(trees::API_KEYS, &r)?)?;
                by_hash.insert(r.hash.as_bytes(), &id_key(id))?;
                Ok(r)
            },
        )?;
        self.flush_now()?;
        Ok(stored)
    }

    fn api_key_by_hash(&self, hash_hex: &str) -> StoreResult<Option<ApiKeyRecord>> {
        match self
            .api_key_by_hash
            .get(hash_hex.as_bytes())?
            .and_then(|v| read_u64(&v))
        {
            Some(id) => Self::get_decode(&self.api_keys, trees::API_KEYS, &id_key(id)),
            None => Ok(None),
        }
    }

    fn api_keys(&self, company: CompanyId) -> StoreResult<Vec<ApiKeyRecord>> {
        let all: Vec<ApiKeyRecord> = Self::scan_decode(&self.api_keys, trees::API_KEYS, &[])?;
        Ok(all
            .into_iter()
            .filter(|k| k.company_id == company)
            .collect())
    }

    fn revoke_api_key(&self, id: u64, at: DateTime<Utc>) -> StoreResult<Option<ApiKeyRecord>> {
        let Some(mut key) =
            Self::get_decode::<ApiKeyRecord>(&self.api_keys, trees::API_KEYS, &id_key(id))?
        else {
            return Ok(None);
        };
        if key.revoked_at.is_none() {
            key.revoked_at = Some(at);
            self.api_keys
                .insert(id_key(id), encode(trees::API_KEYS, &key)?)?;
            self.flush_now()?;
        }
        Ok(Some(key))
    }
}

impl SledStore {
    /// The upsert without the flush, for phase one of a document (phase
    /// two's flush makes the customer durable too).
    /// The id [`upsert_customer_unflushed`](Self::upsert_customer_unflushed)
    /// gives, without copying a recent customer the input leaves as it is
    /// (the usual invoice: the same customer again).
    pub(crate) fn upsert_customer_id(
        &self,
        company: CompanyId,
        input: &CustomerInput,
    ) -> StoreResult<u64> {
        {
            let recent = self
                .customer_writes
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let ident_key = scoped_text_key(company, &input.identification_number);
            if let Some(c) = recent.get(&ident_key).filter(|c| unchanged_by(c, input)) {
                return Ok(c.id);
            }
        }
        Ok(self.upsert_customer_unflushed(company, input)?.id)
    }

    pub(crate) fn upsert_customer_unflushed(
        &self,
        company: CompanyId,
        input: &CustomerInput,
    ) -> StoreResult<Customer> {
        // One writer at a time; the index goes first, so a crash between
        // the two writes leaves an index entry the next upsert reuses.
        let mut recent = self
            .customer_writes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let ident_key = scoped_text_key(company, &input.identification_number);
        let now = Utc::now();
        let (indexed, existing) = match recent.get(&ident_key) {
            Some(c) => (Some(c.id), Some(c.clone())),
            None => {
                let indexed = self
                    .customer_by_ident
                    .get(&ident_key)?
                    .and_then(|v| read_u64(&v));
                let existing: Option<Customer> = match indexed {
                    Some(id) => Self::get_decode(
                        &self.customers,
                        trees::CUSTOMERS,
                        &scoped_key(company, id),
                    )?,
                    None => None,
                };
                (indexed, existing)
            }
        };
        // A repeat customer with nothing new (the usual invoice) is not
        // rewritten: its `updated_at` is when its data last changed.
        let existing = match existing {
            Some(old) if unchanged_by(&old, input) => {
                recent.put(ident_key, &old);
                return Ok(old);
            }
            other => other,
        };
        let (id, created_at) = match (&existing, indexed) {
            (Some(c), _) => (c.id, c.created_at),
            (None, Some(id)) => (id, now),
            (None, None) => (self.next_seq_now(trees::CUSTOMERS)?, now),
        };
        // Optional fields the caller left out keep their stored value.
        let keep = |new: &Option<String>, old: Option<&Option<String>>| {
            new.clone().or_else(|| old.cloned().flatten())
        };
        let old = existing.as_ref();
        let c = Customer {
            id,
            company_id: company,
            identification_number: input.identification_number.clone(),
            name: input.name.clone(),
            // A counterparty named without email (a POS buyer, a support
            // document's vendor) keeps the one it had.
            email: match (input.email.is_empty(), old) {
                (true, Some(o)) => o.email.clone(),
                _ => input.email.clone(),
            },
            id_type_code: keep(&input.id_type_code, old.map(|o| &o.id_type_code)),
            organization_type_code: keep(
                &input.organization_type_code,
                old.map(|o| &o.organization_type_code),
            ),
            address: keep(&input.address, old.map(|o| &o.address)),
            municipality_code: keep(&input.municipality_code, old.map(|o| &o.municipality_code)),
            municipality_name: keep(&input.municipality_name, old.map(|o| &o.municipality_name)),
            country_code: keep(&input.country_code, old.map(|o| &o.country_code)),
            phone: keep(&input.phone, old.map(|o| &o.phone)),
            created_at,
            updated_at: now,
        };

        if indexed.is_none() {
            self.customer_by_ident.insert(&ident_key, &id_key(id))?;
        }
        // The name's words before the record, the old name's after: a
        // word always finds the customer, and a stale one fails the
        // search's check against the record.
        let old_name = old.map(|o| o.name.as_str()).filter(|n| *n != c.name);
        if old_name.is_some() || old.is_none() {
            self.add_customer_words(company, id, &c.name)?;
        }
        self.customers
            .insert(scoped_key(company, id), encode(trees::CUSTOMERS, &c)?)?;
        if let Some(old_name) = old_name {
            self.remove_customer_words(company, id, old_name, &c.name)?;
        }
        recent.put(ident_key, &c);
        Ok(c)
    }
}

/// Whether upserting `input` over `c` would leave it as it is: what
/// [`SledStore::upsert_customer_unflushed`] builds (a field left out keeps
/// its stored value, an empty email keeps the stored one) equals `c`.
fn unchanged_by(c: &Customer, input: &CustomerInput) -> bool {
    let kept = |new: &Option<String>, old: &Option<String>| new.is_none() || new == old;
    c.identification_number == input.identification_number
        && c.name == input.name
        && (input.email.is_empty() || c.email == input.email)
        && kept(&input.id_type_code, &c.id_type_code)
        && kept(&input.organization_type_code, &c.organization_type_code)
        && kept(&input.address, &c.address)
        && kept(&input.municipality_code, &c.municipality_code)
        && kept(&input.municipality_name, &c.municipality_name)
        && kept(&input.country_code, &c.country_code)
        && kept(&input.phone, &c.phone)
}

impl CustomerStore for SledStore {
    fn upsert_customer(&self, company: CompanyId, input: CustomerInput) -> StoreResult<Customer> {
        let c = self.upsert_customer_unflushed(company, &input)?;
        self.flush_now()?;
        Ok(c)
    }

    fn customers_after(
        &self,
        company: CompanyId,
        after: u64,
        limit: usize,
    ) -> StoreResult<Vec<Customer>> {
        Self::scoped_after(&self.customers, trees::CUSTOMERS, company, after, limit)
    }

    fn customer(&self, company: CompanyId, id: u64) -> StoreResult<Option<Customer>> {
        Self::get_decode(&self.customers, trees::CUSTOMERS, &scoped_key(company, id))
    }

    fn customers(
        &self,
        company: CompanyId,
        page: u32,
        limit: u32,
        query: Option<&str>,
    ) -> StoreResult<Page<Customer>> {
        let needle = query.map(|q| q.to_lowercase()).filter(|q| !q.is_empty());
        let all: Vec<Customer> =
            Self::scan_decode(&self.customers, trees::CUSTOMERS, &company.to_be_bytes())?;
        let matching: Vec<Customer> = all
            .into_iter()
            .filter(|c| match &needle {
                Some(n) => {
                    c.name.to_lowercase().contains(n.as_str())
                        || c.identification_number.contains(n.as_str())
                }
                None => true,
            })
            .collect();
        let total = matching.len() as u64;
        let skip = (page.saturating_sub(1) as usize).saturating_mul(limit as usize);
        let items = matching
            .into_iter()
            .skip(skip)
            .take(limit as usize)
            .collect();
        Ok(Page {
            items,
            page,
            limit,
            total,
        })
    }
}

impl SledStore {
    /// Values of `tree` keyed `company ‖ id`, in id order from `after + 1`.
    fn scoped_after<T: serde::de::DeserializeOwned>(
        tree: &Tree,
        name: &'static str,
        company: CompanyId,
        after: u64,
        limit: usize,
    ) -> StoreResult<Vec<T>> {
        let prefix = company.to_be_bytes();
        let mut out = Vec::new();
        for item in tree
            .range(scoped_key(company, after.saturating_add(1))..)
            .take(limit)
        {
            let (k, v) = item?;
            if !k.starts_with(&prefix) {
                break;
            }
            out.push(decode(name, &v)?);
        }
        Ok(out)
    }
}

impl SettingsStore for SledStore {
    fn setting(&self, key: &str) -> StoreResult<Option<String>> {
        Ok(self
            .meta
            .get(format!("setting:{key}").as_bytes())?
            .map(|v| String::from_utf8_lossy(&v).into_owned()))
    }

    fn put_setting(&self, key: &str, value: &str) -> StoreResult<()> {
        self.meta
            .insert(format!("setting:{key}").as_bytes(), value.as_bytes())?;
        self.flush_now()
    }

    fn settings(&self) -> StoreResult<Vec<(String, String)>> {
        let mut out = Vec::new();
        for item in self.meta.scan_prefix(b"setting:") {
            let (k, v) = item?;
            let key = String::from_utf8_lossy(k.get(8..).unwrap_or_default()).into_owned();
            out.push((key, String::from_utf8_lossy(&v).into_owned()));
        }
        Ok(out)
    }
}

impl StoreHealth for SledStore {
    fn is_empty(&self) -> StoreResult<bool> {
        Ok(self.companies.is_empty())
    }

    fn check_writable(&self) -> StoreResult<()> {
        self.meta
            .insert(b"probe", &Utc::now().timestamp().to_be_bytes())?;
        self.meta.remove(b"probe")?;
        self.flush_now()
    }

    fn flush(&self) -> StoreResult<()> {
        self.flush_now()
    }
}
