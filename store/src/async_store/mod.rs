//! The store as async code sees it. Every method but one is `async` and
//! never blocks the caller's thread: reads and admin writes run on a few store threads
//! of its own ([`crate::async_store::pool`]),
//! the frequent writes (document updates, jobs, events, customers) are
//! carried to the flusher thread and made durable in its next group commit,
//! and the credentials read on every document come from memory when cached.
//!
//! Modules with async code (the API, issuing, operations) hold this handle
//! only (its one blocking method, [`AsyncStore::create_checked_blocking`],
//! is called on the signer pool's threads); the synchronous traits of
//! `lib.rs` are for the CLI, start-up and code that already runs on a
//! blocking thread (see [`AsyncStore::blocking`]).

mod pool;
mod received;

use std::sync::Arc;

use chrono::{DateTime, NaiveDate, Utc};

use crate::async_store::pool::StorePool;
use crate::durability::flusher::{delivered, Committed, IncomingCommit};
use crate::engine::sled::SledStore;
use crate::error::{StoreError, StoreResult};
use crate::model::*;
use crate::secrets::sealing::Keyring;
use crate::traits::{
    ApiKeyStore, Backup, CompanyStore, CredentialStore, CustomerStore, DocumentStore, EventStore,
    JobLeases, JobStore, MailStore, SettingsStore, Store, StoreHealth,
};

/// Everything the store holds for issuing one document type of a company,
/// read together: what is missing is `None`, for the caller to name.
#[derive(Debug, Clone)]
pub struct IssuerRecords {
    pub company: Option<Arc<Company>>,
    pub software: Option<Arc<SoftwareRegistration>>,
    pub resolution: Option<NumberingResolution>,
    pub certificate: Option<Arc<CertificateRecord>>,
    /// The resolution's next number (none is taken).
    pub next_number: Option<u64>,
}

/// Everything for issuing of `kind` a company holds (see [`IssuerRecords`]).
fn read_issuer_records(
    s: &SledStore,
    company: CompanyId,
    kind: SoftwareKind,
    resolution: ResolutionChoice,
) -> StoreResult<IssuerRecords> {
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
    Ok(IssuerRecords {
        company: s.shared_company(company)?,
        software: s.shared_software(company, kind)?,
        resolution,
        certificate: s.shared_certificate(company)?,
        next_number,
    })
}

/// Which resolution [`AsyncStore::issuer_records`] reads.
#[derive(Debug, Clone, Copy)]
pub enum ResolutionChoice {
    /// The one with this id (a document being built again keeps its own).
    Id(u64),
    /// The one a new document of `document_type` in `environment` takes
    /// its number from on `date` ([`CredentialStore::active_resolution`]).
    Active {
        environment: Environment,
        document_type: u8,
        date: NaiveDate,
    },
}

/// Threads serving the blocking calls: enough for the calls that overlap
/// (most are memory reads), few enough to keep the server small.
const STORE_THREADS: usize = 4;

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

/// Cheap to clone: one `SledStore` (itself `Arc`s) and its threads.
#[derive(Clone)]
pub struct AsyncStore {
    store: SledStore,
    pool: Arc<StorePool>,
    numbers: Arc<std::sync::OnceLock<NumberWatch>>,
}

impl AsyncStore {
    pub fn new(store: SledStore) -> StoreResult<Self> {
        let pool = StorePool::start(STORE_THREADS)
            .map_err(|e| StoreError::Durability(format!("starting the store threads: {e}")))?;
        Ok(AsyncStore {
            store,
            pool: Arc::new(pool),
            numbers: Arc::default(),
        })
    }

    /// Runs `f` on one of the store's threads.
    pub(crate) async fn off_thread<T: Send + 'static>(
        &self,
        f: impl FnOnce(&SledStore) -> StoreResult<T> + Send + 'static,
    ) -> StoreResult<T> {
        let store = self.store.clone();
        self.pool.run(move || f(&store)).await
    }

    /// Runs `f` on the flusher thread; resolves once it is on disk.
    pub(crate) fn durable<T: Send + 'static>(
        &self,
        f: impl FnOnce(&SledStore) -> StoreResult<T> + Send + 'static,
    ) -> Committed<T> {
        let store = self.store.clone();
        self.store.flusher.commit(move || f(&store))
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
        let store = self.store.clone();
        let (tx, rx) = tokio::sync::oneshot::channel();
        std::thread::Builder::new()
            .name("store-backup".into())
            .spawn(move || {
                let _ = tx.send(f(&store, &store));
            })
            .map_err(|e| StoreError::Durability(format!("starting a store thread: {e}")))?;
        rx.await
            .map_err(|_| StoreError::Durability("the store thread stopped".into()))
    }

    /// The master keys the store's secrets are sealed under: a copy of
    /// the store (an export's point) opens with them.
    pub fn keyring(&self) -> Keyring {
        crate::traits::MasterKeys::keyring(&self.store)
            .as_ref()
            .clone()
    }

    // Companies and credentials.

    pub async fn company(&self, id: CompanyId) -> StoreResult<Option<Company>> {
        if let Some(c) = self.store.companies_cache.peek(id) {
            return Ok(Some(Arc::unwrap_or_clone(c)));
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
        self.off_thread(move |s| read_issuer_records(s, company, kind, resolution))
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
        let records = read_issuer_records(&self.store, company, kind, resolution)?;
        let range = records
            .resolution
            .as_ref()
            .filter(|r| !r.is_test_set())
            .map(|r| (r.from, r.to));
        let (new, kept) = check(records)?;
        // Held out of sled until its commit (`intents`): the caller hands
        // it to [`commit_document_then`](Self::commit_document_then), or,
        // if its build fails, to [`keep_pending_blocking`](Self::keep_pending_blocking).
        let doc = self.store.number_document(new, true)?;
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
        self.store.keep_pending(id)
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
        self.durable(move |s| s.upsert_customer_unflushed(company, &input))
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
        self.store.set_duplicate_window(window);
    }

    /// Phase one of issuing ([`DocumentStore::create_document`]).
    pub async fn create_document(&self, new: NewDocument) -> StoreResult<DocumentRecord> {
        self.off_thread(move |s| s.create_document(new)).await
    }

    /// Tells the flusher a document's phase two is coming (it is queued for
    /// its build): a group commit waits for it, within its window, until
    /// the guard is dropped (once the commit was handed over, or failed).
    pub fn incoming_commit(&self) -> IncomingCommit {
        self.store.flusher.incoming()
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
        let (stager, writer, keeper) = (self.store.clone(), self.store.clone(), self.store.clone());
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
        self.store.flusher.stage_and_commit_then(
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
        self.off_thread(move |s| s.has_files(id)).await
    }

    /// Saves a changed document with a history line, durable on return.
    pub async fn update_document(
        &self,
        doc: DocumentRecord,
        history: HistoryEntry,
    ) -> StoreResult<()> {
        self.durable(move |s| s.update_document_unflushed(&doc, history))
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
        self.durable(move |s| {
            let job = s.put_job_unflushed(job)?;
            s.update_document_unflushed(&doc, history)?;
            Ok(job)
        })
        .await
    }

    /// [`update_document_with_job`](Self::update_document_with_job) for
    /// several documents, in one group commit.
    pub async fn update_documents_with_jobs(
        &self,
        changes: Vec<(DocumentRecord, Job, HistoryEntry)>,
    ) -> StoreResult<Vec<Job>> {
        self.durable(move |s| {
            changes
                .into_iter()
                .map(|(doc, job, history)| {
                    let job = s.put_job_unflushed(job)?;
                    s.update_document_unflushed(&doc, history)?;
                    Ok(job)
                })
                .collect()
        })
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
        self.durable(move |s| {
            s.update_document_unflushed(&doc, history)?;
            match job {
                Some(id) => s.remove_job_unflushed(id),
                None => Ok(()),
            }
        })
        .await
    }

    /// Makes every write durable so far survive a power cut too: sled's
    /// log synced with an fsync (a group commit's flush waits for its
    /// writes with `sync_file_range`, which a power cut may undo; sled
    /// syncs its log once a second). For a change that must never be lost
    /// once acted upon: a document re-dated before it is sent, whose new
    /// code the authority may accept.
    pub async fn sync_power_safe(&self) -> StoreResult<()> {
        self.off_thread(|s| s.sync_power_safe()).await
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
        self.durable(move |s| s.put_job_unflushed(job)).await
    }

    pub async fn remove_job(&self, id: u64) -> StoreResult<()> {
        self.durable(move |s| s.remove_job_unflushed(id)).await
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
        self.durable(move |s| s.append_event_unflushed(event)).await
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
        self.durable(move |s| s.put_application_response_unflushed(document_id, &xml))
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
        self.durable(move |s| {
            s.accept_document_unflushed(&doc, job, history, application_response.as_deref(), email)
        })
        .await
    }

    /// A new email and its job, durable on return ([`MailStore::queue_email`]).
    pub async fn queue_email(&self, log: EmailLog, job: Job) -> StoreResult<(EmailLog, Job)> {
        self.durable(move |s| s.queue_email_unflushed(log, job))
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
        self.durable(move |s| s.update_email_unflushed(&log, job))
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
