//! The store as async code sees it. Every method but one is `async` and
//! never blocks the caller's thread: reads and admin writes run on a few store threads
//! of its own ([`crate::async_store::pool`]).
//! On sled the frequent writes (document updates, jobs, events, customers)
//! are carried to the flusher thread and made durable in its next group
//! commit, and the credentials read on every document come from memory
//! when cached; on PostgreSQL each is a transaction on a store thread,
//! durable once committed (`durable` is the seam: its future resolves once
//! the write is durable, on either engine).
//!
//! Modules with async code (the API, issuing, operations) hold this handle
//! only (its one blocking method, [`AsyncStore::create_checked_blocking`],
//! is called on the signer pool's threads); the synchronous traits of
//! `lib.rs` are for the CLI, start-up and code that already runs on a
//! blocking thread (see [`AsyncStore::blocking`]).

mod nodes;
pub use nodes::{AuthoritySlot, Heard, NodeLease, PayloadClaim};
mod pool;
mod received;
mod service_lease;
pub use service_lease::{Holding, ServiceTask};

use std::sync::Arc;

use chrono::{DateTime, NaiveDate, Utc};

use crate::async_store::pool::StorePool;
use crate::durability::flusher::{delivered, Committed, IncomingCommit};
use crate::engine::postgres::PgStore;
use crate::engine::sled::SledStore;
use crate::error::{StoreError, StoreResult};
use crate::model::*;
use crate::secrets::sealing::Keyring;
use crate::traits::{
    Backup, CredentialStore, CustomerStore, DocumentStore, EventStore, JobStore, MailStore,
    MasterKeys, ReceivedStore, Store,
};

/// The engine behind the handle.
#[derive(Clone)]
pub(crate) enum Engine {
    Sled(SledStore),
    Postgres(PgStore),
}

/// What async code asks of an engine.
pub(crate) trait EngineStore: Store + ReceivedStore + Backup + MasterKeys {}

impl<T: Store + ReceivedStore + Backup + MasterKeys> EngineStore for T {}

impl Engine {
    fn as_dyn(&self) -> &dyn EngineStore {
        match self {
            Engine::Sled(s) => s,
            Engine::Postgres(p) => p,
        }
    }
}

/// Everything for issuing of `kind` a company holds (see [`IssuerRecords`]).
fn read_issuer_records(
    engine: &Engine,
    company: CompanyId,
    kind: SoftwareKind,
    resolution: ResolutionChoice,
) -> StoreResult<IssuerRecords> {
    let s = match engine {
        Engine::Sled(s) => s,
        // In as few statements as it can: each round trip costs more than
        // the reads themselves.
        Engine::Postgres(p) => return p.issuer_records(company, kind, resolution),
    };
    let resolution = match resolution {
        ResolutionChoice::Id(id) => s.resolution(company, id)?,
        ResolutionChoice::Active {
            environment,
            document_type,
            date,
        } => s.active_resolution(company, environment, document_type, date)?,
    };
    let next_number = match &resolution {
        Some(r) => Some(s.next_number(r)?),
        None => None,
    };
    // sled's cached records, shared without copying.
    Ok(IssuerRecords {
        company: s.shared_company(company)?,
        software: s.shared_software(company, kind)?,
        resolution,
        certificate: s.shared_certificate(company)?,
        next_number,
    })
}

/// Threads serving the blocking calls: enough for the calls that overlap
/// (most are memory reads), few enough to keep the server small.
const STORE_THREADS: usize = 4;

/// On PostgreSQL a call waits on the network and the database's commit:
/// more threads overlap them (each holds one of the engine's connections
/// while it runs). The default of `[store] threads`.
pub(crate) const POSTGRES_STORE_THREADS: usize = 16;

/// A number a new document took from one of a company's own resolutions
/// (never a test set's), as [`AsyncStore::watch_numbers`] reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NumberTaken {
    pub company: CompanyId,
    pub resolution: u64,
    pub number: u64,
    /// The resolution's range.
    pub from: u64,
    pub to: u64,
}

/// Called on the issuing thread right after a number is taken: must only
/// look and hand over (a channel send), never wait.
pub type NumberWatch = Arc<dyn Fn(NumberTaken) + Send + Sync>;

/// Cheap to clone: one engine (itself `Arc`s) and its threads.
#[derive(Clone)]
pub struct AsyncStore {
    engine: Engine,
    pool: Arc<StorePool>,
    numbers: Arc<std::sync::OnceLock<NumberWatch>>,
}

impl AsyncStore {
    pub fn new(store: SledStore) -> StoreResult<Self> {
        Self::start(Engine::Sled(store), STORE_THREADS)
    }

    /// The handle of the PostgreSQL engine.
    pub(crate) fn on_postgres(store: PgStore, threads: usize) -> StoreResult<Self> {
        Self::start(Engine::Postgres(store), threads.max(1))
    }

    fn start(engine: Engine, threads: usize) -> StoreResult<Self> {
        let pool = StorePool::start(threads)
            .map_err(|e| StoreError::Durability(format!("starting the store threads: {e}")))?;
        Ok(AsyncStore {
            engine,
            pool: Arc::new(pool),
            numbers: Arc::default(),
        })
    }

    /// Runs `f` on one of the store's threads.
    pub(crate) async fn off_thread<T: Send + 'static>(
        &self,
        f: impl FnOnce(&dyn EngineStore) -> StoreResult<T> + Send + 'static,
    ) -> StoreResult<T> {
        let engine = self.engine.clone();
        self.pool.run(move || f(engine.as_dyn())).await
    }

    /// A write that resolves once it is durable: on sled, `sled` runs on
    /// the flusher thread in its next group commit; on PostgreSQL, `pg`
    /// runs on a store thread and commits its transaction.
    pub(crate) fn durable<T: Send + 'static>(
        &self,
        sled: impl FnOnce(&SledStore) -> StoreResult<T> + Send + 'static,
        pg: impl FnOnce(&PgStore) -> StoreResult<T> + Send + 'static,
    ) -> Committed<T> {
        match &self.engine {
            Engine::Sled(s) => {
                let store = s.clone();
                s.flusher.commit(move || sled(&store))
            }
            Engine::Postgres(p) => {
                let (store, pool) = (p.clone(), self.pool.clone());
                Box::pin(async move { pool.run(move || pg(&store)).await })
            }
        }
    }

    /// Synchronous domain code that needs the whole store (provisioning a
    /// company, say), run on a store thread where it may wait on disk.
    pub async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&dyn Store) -> T + Send + 'static,
    ) -> StoreResult<T> {
        self.off_thread(move |s| Ok(f(s))).await
    }

    /// Runs `f` on a thread of its own, with the store and its backup
    /// side: a backup or a restore's confirmation, which may take long and
    /// must not hold one of the store's threads meanwhile.
    pub async fn on_own_thread<T: Send + 'static>(
        &self,
        f: impl FnOnce(&dyn Store, &dyn Backup) -> T + Send + 'static,
    ) -> StoreResult<T> {
        let engine = self.engine.clone();
        let (tx, rx) = tokio::sync::oneshot::channel();
        std::thread::Builder::new()
            .name("store-backup".into())
            .spawn(move || {
                let store = engine.as_dyn();
                let _ = tx.send(f(store, store));
            })
            .map_err(|e| StoreError::Durability(format!("starting a store thread: {e}")))?;
        rx.await
            .map_err(|_| StoreError::Durability("the store thread stopped".into()))
    }

    /// Runs `f` on a thread of its own with the store as of one point
    /// while it serves, where the engine reads one in place (an export):
    /// on PostgreSQL one snapshot, `Some`, its transactions ended after
    /// `f`; on sled `None`, and `f` takes its point as a copy through the
    /// store's [`Backup`] ([`Backup::checkpoint_to`]).
    pub async fn at_point<T: Send + 'static>(
        &self,
        f: impl FnOnce(Option<crate::export::Source<'_>>, &dyn Backup) -> T + Send + 'static,
    ) -> StoreResult<T> {
        let engine = self.engine.clone();
        self.on_own_thread(move |_, backup| match &engine {
            Engine::Sled(_) => Ok(f(None, backup)),
            Engine::Postgres(p) => {
                let point = p.at_point()?;
                let source = crate::export::Source {
                    store: &point,
                    received: &point,
                    backup: &point,
                    keys: &point,
                };
                Ok(f(Some(source), &point))
            }
        })
        .await?
    }

    /// The master keys the store's secrets are sealed under: a copy of
    /// the store (an export's point) opens with them.
    pub fn keyring(&self) -> Keyring {
        self.engine.as_dyn().keyring().as_ref().clone()
    }

    // Companies and credentials.

    pub async fn company(&self, id: CompanyId) -> StoreResult<Option<Company>> {
        if let Engine::Sled(s) = &self.engine {
            if let Some(c) = s.companies_cache.peek(id) {
                return Ok(Some(Arc::unwrap_or_clone(c)));
            }
        }
        self.off_thread(move |s| s.company(id)).await
    }

    pub async fn companies(&self) -> StoreResult<Vec<Company>> {
        self.off_thread(|s| s.companies()).await
    }

    pub async fn update_company(&self, company: Company) -> StoreResult<()> {
        self.off_thread(move |s| s.update_company(&company)).await
    }

    pub async fn software(
        &self,
        company: CompanyId,
        kind: SoftwareKind,
    ) -> StoreResult<Option<SoftwareRegistration>> {
        self.off_thread(move |s| s.software(company, kind)).await
    }

    pub async fn put_software(&self, software: SoftwareRegistration) -> StoreResult<()> {
        self.off_thread(move |s| s.put_software(software)).await
    }

    pub async fn resolutions(&self, company: CompanyId) -> StoreResult<Vec<NumberingResolution>> {
        self.off_thread(move |s| s.resolutions(company)).await
    }

    pub async fn add_resolution(
        &self,
        company: CompanyId,
        new: NewResolution,
    ) -> StoreResult<NumberingResolution> {
        self.off_thread(move |s| s.add_resolution(company, new))
            .await
    }

    pub async fn active_resolution(
        &self,
        company: CompanyId,
        environment: Environment,
        document_type: u8,
        date: NaiveDate,
    ) -> StoreResult<Option<NumberingResolution>> {
        self.off_thread(move |s| s.active_resolution(company, environment, document_type, date))
            .await
    }

    pub async fn next_number(&self, resolution: NumberingResolution) -> StoreResult<u64> {
        self.off_thread(move |s| s.next_number(&resolution)).await
    }

    pub async fn certificate(&self, company: CompanyId) -> StoreResult<Option<CertificateRecord>> {
        self.off_thread(move |s| s.certificate(company)).await
    }

    /// Company, software, resolution, certificate and next number in one
    /// trip off the async threads (the issuing path reads all of them).
    pub async fn issuer_records(
        &self,
        company: CompanyId,
        kind: SoftwareKind,
        resolution: ResolutionChoice,
    ) -> StoreResult<IssuerRecords> {
        let engine = self.engine.clone();
        self.pool
            .run(move || read_issuer_records(&engine, company, kind, resolution))
            .await
    }

    /// Phase one of issuing, on the caller's thread: the issuer's records
    /// read, `check` run on them (all a request must pass before a number
    /// is taken; it gives the document to create and what the caller
    /// keeps), then the document created. A refusal, by `check` or by the
    /// store, writes nothing. Blocking, unlike the rest of this facade: the
    /// issuing path calls it on the signer pool, in the job that then
    /// builds the document (one trip off the async threads for both; each
    /// trip costs two thread wake-ups, more than the reads themselves).
    pub fn create_checked_blocking<X, E>(
        &self,
        company: CompanyId,
        kind: SoftwareKind,
        resolution: ResolutionChoice,
        check: impl FnOnce(IssuerRecords) -> Result<(NewDocument, X), E>,
    ) -> Result<(DocumentRecord, X), E>
    where
        E: From<StoreError>,
    {
        self.create_checked_for_blocking(company, kind, resolution, None, check)
    }

    /// [`create_checked_blocking`](Self::create_checked_blocking) for a
    /// document whose customer has identification number `customer`: on
    /// PostgreSQL the customer as stored and the document's id are read
    /// with the issuer's records (one round trip fewer in phase one).
    pub fn create_checked_for_blocking<X, E>(
        &self,
        company: CompanyId,
        kind: SoftwareKind,
        resolution: ResolutionChoice,
        customer: Option<&str>,
        check: impl FnOnce(IssuerRecords) -> Result<(NewDocument, X), E>,
    ) -> Result<(DocumentRecord, X), E>
    where
        E: From<StoreError>,
    {
        let (records, ahead) = match &self.engine {
            Engine::Postgres(p) => {
                p.issuer_records_ahead(company, kind, resolution, Some(customer))?
            }
            Engine::Sled(_) => (
                read_issuer_records(&self.engine, company, kind, resolution)?,
                None,
            ),
        };
        let resolution = records.resolution.clone();
        let range = resolution
            .as_ref()
            .filter(|r| !r.is_test_set())
            .map(|r| (r.from, r.to));
        let (new, kept) = check(records)?;
        // Held out of sled until its commit (`intents`): the caller hands
        // it to [`commit_document_then`](Self::commit_document_then), or,
        // if its build fails, to [`keep_pending_blocking`](Self::keep_pending_blocking).
        let doc = match &self.engine {
            Engine::Sled(s) => s.number_document(new, true)?,
            // Committed half-built: a node that dies before phase two
            // leaves it for any node's resume.
            Engine::Postgres(p) => p.create_numbered_ahead(new, resolution, ahead)?,
        };
        if let (Some((from, to)), Some(watch)) = (range, self.numbers.get()) {
            watch(NumberTaken {
                company: doc.company_id,
                resolution: doc.resolution_id,
                number: doc.number,
                from,
                to,
            });
        }
        Ok((doc, kept))
    }

    /// Has `watch` told of every number taken from a company's own
    /// resolution from now on (the first watch set stays).
    pub fn watch_numbers(&self, watch: NumberWatch) {
        let _ = self.numbers.set(watch);
    }

    /// A document from [`create_checked_blocking`](Self::create_checked_blocking)
    /// whose build failed, written half-built (start-up rebuilds it, as
    /// any document whose build did not finish). Blocking, like it.
    pub fn keep_pending_blocking(&self, id: u64) -> StoreResult<()> {
        match &self.engine {
            Engine::Sled(s) => s.keep_pending(id),
            Engine::Postgres(p) => p.keep_pending(id),
        }
    }

    // API keys and settings.

    pub async fn api_key_by_hash(&self, hash_hex: String) -> StoreResult<Option<ApiKeyRecord>> {
        self.off_thread(move |s| s.api_key_by_hash(&hash_hex)).await
    }

    pub async fn api_keys(&self, company: CompanyId) -> StoreResult<Vec<ApiKeyRecord>> {
        self.off_thread(move |s| s.api_keys(company)).await
    }

    pub async fn revoke_api_key(
        &self,
        id: u64,
        at: DateTime<Utc>,
    ) -> StoreResult<Option<ApiKeyRecord>> {
        self.off_thread(move |s| s.revoke_api_key(id, at)).await
    }

    pub async fn setting(&self, key: String) -> StoreResult<Option<String>> {
        self.off_thread(move |s| s.setting(&key)).await
    }

    pub async fn put_setting(&self, key: String, value: String) -> StoreResult<()> {
        self.off_thread(move |s| s.put_setting(&key, &value)).await
    }

    // Customers.

    pub async fn upsert_customer(
        &self,
        company: CompanyId,
        input: CustomerInput,
    ) -> StoreResult<Customer> {
        let input_pg = input.clone();
        self.durable(
            move |s| s.upsert_customer_unflushed(company, &input),
            move |p| p.upsert_customer(company, input_pg),
        )
        .await
    }

    pub async fn customers(
        &self,
        company: CompanyId,
        page: u32,
        limit: u32,
        query: Option<String>,
    ) -> StoreResult<Page<Customer>> {
        self.off_thread(move |s| s.customers(company, page, limit, query.as_deref()))
            .await
    }

    // Documents.

    /// How long the duplicate window's payloads are kept (never blocks).
    pub fn set_duplicate_window(&self, window: std::time::Duration) {
        // On PostgreSQL the window is read back from the documents.
        if let Engine::Sled(s) = &self.engine {
            s.set_duplicate_window(window);
        }
    }

    /// Phase one of issuing ([`DocumentStore::create_document`]).
    pub async fn create_document(&self, new: NewDocument) -> StoreResult<DocumentRecord> {
        self.off_thread(move |s| s.create_document(new)).await
    }

    /// Tells the flusher a document's phase two is coming (it is queued for
    /// its build): a group commit waits for it, within its window, until
    /// the guard is dropped (once the commit was handed over, or failed).
    pub fn incoming_commit(&self) -> IncomingCommit {
        match &self.engine {
            Engine::Sled(s) => s.flusher.incoming(),
            Engine::Postgres(_) => IncomingCommit::unawaited(),
        }
    }

    /// Phase two of a document in one round trip to the flusher: its files
    /// appended to the file log, synced with the batch, then its record,
    /// history and job written and flushed. Resolves once all of it is on
    /// disk, with the stored job and the files handed back.
    pub fn commit_document(
        &self,
        doc: DocumentRecord,
        files: DocumentFiles,
        job: Option<Job>,
        history: HistoryEntry,
    ) -> Committed<(Option<Job>, DocumentFiles)> {
        let (deliver, committed) = delivered();
        self.commit_document_then(doc, files, job, history, move |result| {
            deliver(result.map(|(job, files, _)| (job, files)))
        });
        committed
    }

    /// [`commit_document`](Self::commit_document) whose outcome (with the
    /// document handed back) goes to `deliver`, called on the store's
    /// flusher thread once durable: a caller that answers a client from
    /// there is woken once, by it (at once with the error when the store
    /// is closing).
    pub fn commit_document_then(
        &self,
        doc: DocumentRecord,
        files: DocumentFiles,
        job: Option<Job>,
        history: HistoryEntry,
        deliver: impl FnOnce(StoreResult<(Option<Job>, DocumentFiles, DocumentRecord)>) + Send + 'static,
    ) {
        let store = match &self.engine {
            Engine::Sled(s) => s,
            Engine::Postgres(p) => {
                return self.commit_on_postgres(p, doc, files, job, history, deliver)
            }
        };
        let (stager, writer, keeper) = (store.clone(), store.clone(), store.clone());
        let id = doc.id;
        // A held document (`intents`) whose commit failed before its record
        // was written is written half-built instead.
        let deliver = move |result: StoreResult<_>| {
            if result.is_err() {
                if let Err(e) = keeper.keep_pending(id) {
                    tracing::error!(error = %e, id, "a document whose commit failed could not be kept half-built");
                }
            }
            deliver(result)
        };
        store.flusher.stage_and_commit_then(
            move || {
                let staged =
                    stager.stage_files(doc.id, doc.company_id, doc.document_type, &files)?;
                Ok((staged, files, doc))
            },
            move |(staged, files, doc)| {
                let job = writer.complete_staged(&doc, &staged, job, history)?;
                Ok((job, files, doc))
            },
            deliver,
        )
    }

    /// [`commit_document_then`](Self::commit_document_then) on PostgreSQL:
    /// phase two in one transaction on a store thread, `deliver` called
    /// there once it is committed; a failed one leaves the document
    /// half-built, for resume.
    fn commit_on_postgres(
        &self,
        p: &PgStore,
        doc: DocumentRecord,
        files: DocumentFiles,
        job: Option<Job>,
        history: HistoryEntry,
        deliver: impl FnOnce(StoreResult<(Option<Job>, DocumentFiles, DocumentRecord)>) + Send + 'static,
    ) {
        let store = p.clone();
        // Taken by the store thread, or here when none will run it.
        let slot = Arc::new(std::sync::Mutex::new(Some(deliver)));
        let taken = |slot: &std::sync::Mutex<Option<_>>| {
            slot.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take()
        };
        let on_thread = slot.clone();
        let handed = self.pool.spawn(move || {
            let Some(deliver) = taken(&on_thread) else {
                return;
            };
            let id = doc.id;
            let result = store
                .complete_document(&doc, &files, job, &history)
                .map(|job| (job, files, doc));
            if result.is_err() {
                if let Err(e) = store.keep_pending(id) {
                    tracing::error!(error = %e, id, "a document whose commit failed could not be kept half-built");
                }
            }
            deliver(result);
        });
        if !handed {
            if let Some(deliver) = taken(&slot) {
                deliver(Err(StoreError::Durability("the store is closing".into())));
            }
        }
    }

    pub async fn document(&self, id: u64) -> StoreResult<Option<DocumentRecord>> {
        self.off_thread(move |s| s.document(id)).await
    }

    pub async fn document_request(&self, id: u64) -> StoreResult<Option<Vec<u8>>> {
        self.off_thread(move |s| s.document_request(id)).await
    }

    pub async fn document_files(&self, id: u64) -> StoreResult<Option<DocumentFiles>> {
        self.off_thread(move |s| s.document_files(id)).await
    }

    /// Whether the document's files are stored, without reading them.
    pub async fn has_files(&self, id: u64) -> StoreResult<bool> {
        let engine = self.engine.clone();
        self.pool
            .run(move || match &engine {
                Engine::Sled(s) => s.has_files(id),
                Engine::Postgres(p) => p.has_files(id),
            })
            .await
    }

    /// Saves a changed document with a history line, durable on return.
    pub async fn update_document(
        &self,
        doc: DocumentRecord,
        history: HistoryEntry,
    ) -> StoreResult<()> {
        let (doc_pg, history_pg) = (doc.clone(), history.clone());
        self.durable(
            move |s| s.update_document_unflushed(&doc, history),
            move |p| {
                p.update_document_with(&doc_pg, &history_pg, None, None)
                    .map(|_| ())
            },
        )
        .await
    }

    /// Saves a changed document and its transmission job together, durable
    /// on return (the job written first: a crash between the two leaves a
    /// job whose document is not queued, which the job runner drops).
    pub async fn update_document_with_job(
        &self,
        doc: DocumentRecord,
        job: Job,
        history: HistoryEntry,
    ) -> StoreResult<Job> {
        let (doc_pg, job_pg, history_pg) = (doc.clone(), job.clone(), history.clone());
        self.durable(
            move |s| {
                let job = s.put_job_unflushed(job)?;
                s.update_document_unflushed(&doc, history)?;
                Ok(job)
            },
            move |p| {
                p.update_document_with(&doc_pg, &history_pg, Some(job_pg), None)?
                    .ok_or(StoreError::NotFound("job"))
            },
        )
        .await
    }

    /// [`update_document_with_job`](Self::update_document_with_job) for
    /// several documents, in one group commit.
    pub async fn update_documents_with_jobs(
        &self,
        changes: Vec<(DocumentRecord, Job, HistoryEntry)>,
    ) -> StoreResult<Vec<Job>> {
        let changes_pg = changes.clone();
        self.durable(
            move |s| {
                changes
                    .into_iter()
                    .map(|(doc, job, history)| {
                        let job = s.put_job_unflushed(job)?;
                        s.update_document_unflushed(&doc, history)?;
                        Ok(job)
                    })
                    .collect()
            },
            move |p| p.update_documents_with_jobs(changes_pg),
        )
        .await
    }

    /// Saves a document's final outcome and drops its job, durable on
    /// return (the record first: a crash between the two leaves a job for
    /// a finished document, which the job runner drops).
    pub async fn finish_document(
        &self,
        doc: DocumentRecord,
        job: Option<u64>,
        history: HistoryEntry,
    ) -> StoreResult<()> {
        let (doc_pg, history_pg) = (doc.clone(), history.clone());
        self.durable(
            move |s| {
                s.update_document_unflushed(&doc, history)?;
                match job {
                    Some(id) => s.remove_job_unflushed(id),
                    None => Ok(()),
                }
            },
            move |p| {
                p.update_document_with(&doc_pg, &history_pg, None, job)
                    .map(|_| ())
            },
        )
        .await
    }

    /// Makes every write durable so far survive a power cut too: sled's
    /// log synced with an fsync (a group commit's flush waits for its
    /// writes with `sync_file_range`, which a power cut may undo; sled
    /// syncs its log once a second). For a change that must never be lost
    /// once acted upon: a document re-dated before it is sent, whose new
    /// code the authority may accept.
    pub async fn sync_power_safe(&self) -> StoreResult<()> {
        match &self.engine {
            Engine::Sled(s) => {
                let s = s.clone();
                self.pool.run(move || s.sync_power_safe()).await
            }
            // A commit is fsynced by PostgreSQL before it returns.
            Engine::Postgres(_) => Ok(()),
        }
    }

    pub async fn history(&self, id: u64) -> StoreResult<Vec<HistoryEntry>> {
        self.off_thread(move |s| s.history(id)).await
    }

    pub async fn documents_in_states(
        &self,
        company: Option<CompanyId>,
        states: Vec<u8>,
    ) -> StoreResult<Vec<DocumentRecord>> {
        self.off_thread(move |s| s.documents_in_states(company, &states))
            .await
    }

    pub async fn pending_builds(&self) -> StoreResult<Vec<DocumentRecord>> {
        self.off_thread(|s| s.pending_builds()).await
    }

    pub async fn recent_requests(&self, since: DateTime<Utc>) -> StoreResult<Vec<RecentRequest>> {
        self.off_thread(move |s| s.recent_requests(since)).await
    }

    pub async fn monthly_usage(&self, company: CompanyId, period: u32) -> StoreResult<u64> {
        self.off_thread(move |s| s.monthly_usage(company, period))
            .await
    }

    /// A page of a company's documents of one family, newest first, from
    /// the document index ([`DocumentStore::list_documents`]).
    pub async fn list_documents(&self, q: ListQuery) -> StoreResult<Page<DocumentRecord>> {
        self.off_thread(move |s| s.list_documents(&q)).await
    }

    /// The console's search ([`DocumentStore::search_documents`]).
    pub async fn search_documents(&self, q: DocumentSearch) -> StoreResult<SearchPage> {
        self.off_thread(move |s| s.search_documents(&q)).await
    }

    pub async fn document_counts(&self) -> StoreResult<Vec<((u8, u8), u64)>> {
        self.off_thread(|s| s.document_counts()).await
    }

    // Jobs.

    /// Stores (or replaces) a job, durable on return; id 0 gets a new id.
    pub async fn put_job(&self, job: Job) -> StoreResult<Job> {
        let job_pg = job.clone();
        self.durable(
            move |s| s.put_job_unflushed(job),
            move |p| p.put_job(job_pg),
        )
        .await
    }

    pub async fn remove_job(&self, id: u64) -> StoreResult<()> {
        self.durable(
            move |s| s.remove_job_unflushed(id),
            move |p| p.remove_job(id),
        )
        .await
    }

    pub async fn jobs(&self) -> StoreResult<Vec<Job>> {
        self.off_thread(|s| s.jobs()).await
    }

    pub async fn job(&self, id: u64) -> StoreResult<Option<Job>> {
        self.off_thread(move |s| s.job(id)).await
    }

    pub async fn job_for_document(&self, document_id: u64) -> StoreResult<Option<Job>> {
        self.off_thread(move |s| s.job_for_document(document_id))
            .await
    }

    /// Claims `job` for `worker` for `for_ms` ([`JobLeases::claim_job`]);
    /// `None` while another worker's lease is live. Durable on return.
    pub async fn claim_job(
        &self,
        job: u64,
        worker: &'static str,
        now_ms: i64,
        for_ms: i64,
    ) -> StoreResult<Option<JobLease>> {
        self.off_thread(move |s| s.claim_job(job, worker, now_ms, for_ms))
            .await
    }

    /// Ends `worker`'s lease on `job` ([`JobLeases::release_job`]).
    pub async fn release_job(&self, job: u64, worker: &'static str) -> StoreResult<bool> {
        self.off_thread(move |s| s.release_job(job, worker)).await
    }

    // Events.

    pub async fn append_event(&self, event: EventRecord) -> StoreResult<EventRecord> {
        let event_pg = event.clone();
        self.durable(
            move |s| s.append_event_unflushed(event),
            move |p| p.append_event(event_pg),
        )
        .await
    }

    pub async fn events(
        &self,
        company: CompanyId,
        kind: &'static str,
        limit: usize,
    ) -> StoreResult<Vec<EventRecord>> {
        self.off_thread(move |s| s.events(company, kind, limit))
            .await
    }

    // Mail.

    /// The authority's ApplicationResponse of an accepted document; `None`
    /// for documents accepted before it was kept.
    pub async fn application_response(&self, document_id: u64) -> StoreResult<Option<String>> {
        self.off_thread(move |s| s.application_response(document_id))
            .await
    }

    pub async fn put_application_response(&self, document_id: u64, xml: String) -> StoreResult<()> {
        let xml_pg = xml.clone();
        self.durable(
            move |s| s.put_application_response_unflushed(document_id, &xml),
            move |p| p.put_application_response(document_id, &xml_pg),
        )
        .await
    }

    /// [`finish_document`](Self::finish_document) for an acceptance: the
    /// ApplicationResponse and the automatic email (unless the document
    /// has one already) in the same group commit. Returns the email queued.
    pub async fn finish_accepted(
        &self,
        doc: DocumentRecord,
        job: Option<u64>,
        history: HistoryEntry,
        application_response: Option<String>,
        email: Option<(EmailLog, Job)>,
    ) -> StoreResult<Option<(EmailLog, Job)>> {
        let (doc_pg, history_pg, response_pg, email_pg) = (
            doc.clone(),
            history.clone(),
            application_response.clone(),
            email.clone(),
        );
        self.durable(
            move |s| {
                s.accept_document_unflushed(
                    &doc,
                    job,
                    history,
                    application_response.as_deref(),
                    email,
                )
            },
            move |p| p.accept_document(&doc_pg, job, &history_pg, response_pg.as_deref(), email_pg),
        )
        .await
    }

    /// A new email and its job, durable on return ([`MailStore::queue_email`]).
    pub async fn queue_email(&self, log: EmailLog, job: Job) -> StoreResult<(EmailLog, Job)> {
        let (log_pg, job_pg) = (log.clone(), job.clone());
        self.durable(
            move |s| s.queue_email_unflushed(log, job),
            move |p| p.queue_email(log_pg, job_pg),
        )
        .await
    }

    pub async fn email_log(&self, id: u64) -> StoreResult<Option<EmailLog>> {
        self.off_thread(move |s| s.email_log(id)).await
    }

    pub async fn email_logs(&self, document_id: u64) -> StoreResult<Vec<EmailLog>> {
        self.off_thread(move |s| s.email_logs(document_id)).await
    }

    /// An email's log after an attempt and its job's fate, durable on return.
    pub async fn update_email(&self, log: EmailLog, job: EmailJob) -> StoreResult<()> {
        let (log_pg, job_pg) = (log.clone(), job.clone());
        self.durable(
            move |s| s.update_email_unflushed(&log, job),
            move |p| p.update_email(&log_pg, job_pg),
        )
        .await
    }

    pub async fn customer(&self, company: CompanyId, id: u64) -> StoreResult<Option<Customer>> {
        self.off_thread(move |s| s.customer(company, id)).await
    }

    // Health.

    /// Writes, flushes and deletes a probe value.
    pub async fn check_writable(&self) -> StoreResult<()> {
        self.off_thread(|s| s.check_writable()).await
    }
}
