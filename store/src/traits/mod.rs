//! The store traits: everything the service asks of persistence, one trait
//! per concern, and [`Store`], all of them. An engine is one implementation
//! of these traits (`engine/`); handlers and actors see only them (through
//! `AsyncStore` when they are async).

use chrono::{DateTime, NaiveDate, Utc};

use crate::durability::flusher::{Committed, FlusherPause};
use crate::error::StoreResult;
use crate::model::received::{EventFiles, ReceivedInvoice};
use crate::model::*;

pub trait CompanyStore {
    fn create_company(&self, new: NewCompany) -> StoreResult<Company>;
    fn company(&self, id: CompanyId) -> StoreResult<Option<Company>>;
    fn company_by_nit(&self, nit: &str) -> StoreResult<Option<Company>>;
    fn companies(&self) -> StoreResult<Vec<Company>>;
    fn update_company(&self, company: &Company) -> StoreResult<()>;
}

pub trait CredentialStore {
    fn put_software(&self, software: SoftwareRegistration) -> StoreResult<()>;
    fn software(
        &self,
        company: CompanyId,
        kind: SoftwareKind,
    ) -> StoreResult<Option<SoftwareRegistration>>;
    fn add_resolution(
        &self,
        company: CompanyId,
        new: NewResolution,
    ) -> StoreResult<NumberingResolution>;
    /// The company's own resolutions (the test sets are not listed).
    fn resolutions(&self, company: CompanyId) -> StoreResult<Vec<NumberingResolution>>;
    /// The resolution with this id as `company` uses it: one of its own,
    /// or a test set (with the company's counter).
    fn resolution(&self, company: CompanyId, id: u64) -> StoreResult<Option<NumberingResolution>>;
    /// The resolution a new document of `document_type` takes its number
    /// from, valid on `date` with numbers left: in the testing environment
    /// the test set serving the type (every company is numbered from the
    /// authority's test sets there), otherwise the company's newest own
    /// resolution serving it.
    fn active_resolution(
        &self,
        company: CompanyId,
        environment: Environment,
        document_type: u8,
        date: NaiveDate,
    ) -> StoreResult<Option<NumberingResolution>>;
    /// The next number a resolution would give (no number is consumed).
    fn next_number(&self, resolution: &NumberingResolution) -> StoreResult<u64>;
    fn put_certificate(&self, certificate: CertificateRecord) -> StoreResult<()>;
    fn certificate(&self, company: CompanyId) -> StoreResult<Option<CertificateRecord>>;
}

pub trait ApiKeyStore {
    /// Stores a new key record; the store assigns the id.
    fn insert_api_key(&self, record: ApiKeyRecord) -> StoreResult<ApiKeyRecord>;
    fn api_key_by_hash(&self, hash_hex: &str) -> StoreResult<Option<ApiKeyRecord>>;
    fn api_keys(&self, company: CompanyId) -> StoreResult<Vec<ApiKeyRecord>>;
    /// Marks a key revoked; returns it, or `None` when there is no such key.
    fn revoke_api_key(&self, id: u64, at: DateTime<Utc>) -> StoreResult<Option<ApiKeyRecord>>;
}

pub trait CustomerStore {
    /// Creates or updates the customer with this identification number.
    fn upsert_customer(&self, company: CompanyId, input: CustomerInput) -> StoreResult<Customer>;
    fn customer(&self, company: CompanyId, id: u64) -> StoreResult<Option<Customer>>;
    /// `query` matches name or identification number, case-insensitively.
    fn customers(
        &self,
        company: CompanyId,
        page: u32,
        limit: u32,
        query: Option<&str>,
    ) -> StoreResult<Page<Customer>>;
    /// The company's customers in id order: up to `limit` with an id above
    /// `after`.
    fn customers_after(
        &self,
        company: CompanyId,
        after: u64,
        limit: usize,
    ) -> StoreResult<Vec<Customer>>;
}

pub trait DocumentStore {
    /// Phase one of issuing: under the numbering lock, refuses a used external
    /// reference (`Conflict` naming the existing id via
    /// [`StoreError::DuplicateReference`](crate::error::StoreError::DuplicateReference)) or a full month
    /// ([`StoreError::LimitReached`](crate::error::StoreError::LimitReached)), takes the resolution's next number,
    /// and writes the document as a Borrador with `pending_build` set.
    fn create_document(&self, new: NewDocument) -> StoreResult<DocumentRecord>;
    /// Phase two, first step: append the files to the file log (durable
    /// with the [`commit_staged`](Self::commit_staged) that follows).
    fn stage_files(
        &self,
        document_id: u64,
        company: CompanyId,
        document_type: u8,
        files: &DocumentFiles,
    ) -> StoreResult<StagedFiles>;
    /// Phase two, second step, in one round trip: the store's flusher syncs
    /// the staged files, writes the document, history and job, and flushes;
    /// the future resolves once all of it is on disk.
    fn commit_staged(
        &self,
        doc: DocumentRecord,
        files: StagedFiles,
        job: Option<Job>,
        history: HistoryEntry,
    ) -> Committed;
    fn document(&self, id: u64) -> StoreResult<Option<DocumentRecord>>;
    /// The request a document was issued from, as JSON bytes.
    fn document_request(&self, id: u64) -> StoreResult<Option<Vec<u8>>>;
    fn document_files(&self, id: u64) -> StoreResult<Option<DocumentFiles>>;
    fn document_by_reference(
        &self,
        company: CompanyId,
        reference: &str,
    ) -> StoreResult<Option<u64>>;
    /// Saves a changed document with a history line (state changes, answers).
    fn update_document(&self, doc: &DocumentRecord, history: HistoryEntry) -> StoreResult<()>;
    fn history(&self, id: u64) -> StoreResult<Vec<HistoryEntry>>;
    /// Documents of a company (or all) in any of `states`.
    fn documents_in_states(
        &self,
        company: Option<CompanyId>,
        states: &[u8],
    ) -> StoreResult<Vec<DocumentRecord>>;
    /// Documents whose build did not finish (found at start-up).
    fn pending_builds(&self) -> StoreResult<Vec<DocumentRecord>>;
    /// Documents created at or after `since`, newest first, with the
    /// request each was issued from: the duplicate-payload window outlives
    /// a restart.
    fn recent_requests(&self, since: DateTime<Utc>) -> StoreResult<Vec<RecentRequest>>;
    /// Documents issued by a company in a `YYYYMM` period.
    fn monthly_usage(&self, company: CompanyId, period: u32) -> StoreResult<u64>;
    /// Number of documents per (type, state), for metrics.
    fn document_counts(&self) -> StoreResult<Vec<((u8, u8), u64)>>;
    /// A page of a company's built documents of one family, newest first,
    /// from the document index (`total` from its counters, exact).
    fn list_documents(&self, query: &ListQuery) -> StoreResult<Page<DocumentRecord>>;
    /// The console's search: a page of a company's built documents in one
    /// environment, of every family or one, newest first, filtered and
    /// searched through indexes kept with each write ([`DocumentSearch`];
    /// `total` exact unless [`SearchPage::total_exact`] says otherwise).
    fn search_documents(&self, query: &DocumentSearch) -> StoreResult<SearchPage>;
    /// Every document of every company, in id order: up to `limit` with
    /// an id above `after` (an export reads the store with it).
    fn documents_after(&self, after: u64, limit: usize) -> StoreResult<Vec<DocumentRecord>>;
}

/// Company events kept as a log (webhook deliveries, say), newest last.
pub trait EventStore {
    fn append_event(&self, event: EventRecord) -> StoreResult<EventRecord>;
    /// The company's events of `kind`, the most recent `limit`.
    fn events(&self, company: CompanyId, kind: &str, limit: usize)
        -> StoreResult<Vec<EventRecord>>;
    /// The company's events of every kind in id order: up to `limit` with
    /// an id above `after`.
    fn events_after(
        &self,
        company: CompanyId,
        after: u64,
        limit: usize,
    ) -> StoreResult<Vec<EventRecord>>;
}

pub trait JobStore {
    /// Stores (or replaces) a job; id 0 gets a new id.
    fn put_job(&self, job: Job) -> StoreResult<Job>;
    fn remove_job(&self, id: u64) -> StoreResult<()>;
    fn jobs(&self) -> StoreResult<Vec<Job>>;
    fn job(&self, id: u64) -> StoreResult<Option<Job>>;
    fn job_for_document(&self, document_id: u64) -> StoreResult<Option<Job>>;
}

/// Emails of documents (log entries with their durable jobs) and the
/// authority's ApplicationResponses.
pub trait MailStore {
    /// Keeps the ApplicationResponse of an accepted document (compressed).
    fn put_application_response(&self, document_id: u64, xml: &str) -> StoreResult<()>;
    fn application_response(&self, document_id: u64) -> StoreResult<Option<String>>;
    /// Writes a new email (id 0 gets an id) with its job, job first; the
    /// job's payload names the log. Durable on return.
    fn queue_email(&self, log: EmailLog, job: Job) -> StoreResult<(EmailLog, Job)>;
    fn email_log(&self, id: u64) -> StoreResult<Option<EmailLog>>;
    /// A document's emails, oldest first.
    fn email_logs(&self, document_id: u64) -> StoreResult<Vec<EmailLog>>;
    /// Saves an email's log after an attempt, with its job's fate.
    fn update_email(&self, log: &EmailLog, job: EmailJob) -> StoreResult<()>;
}

/// Small named values of the installation (the admin token's hash, say).
pub trait SettingsStore {
    fn setting(&self, key: &str) -> StoreResult<Option<String>>;
    fn put_setting(&self, key: &str, value: &str) -> StoreResult<()>;
    /// Every setting, by key.
    fn settings(&self) -> StoreResult<Vec<(String, String)>>;
}

pub trait StoreHealth {
    /// True when no company exists yet (first start).
    fn is_empty(&self) -> StoreResult<bool>;
    /// Writes, flushes and deletes a probe value.
    fn check_writable(&self) -> StoreResult<()>;
    fn flush(&self) -> StoreResult<()>;
}

/// Everything the service needs from persistence.
pub trait Store:
    CompanyStore
    + CredentialStore
    + ApiKeyStore
    + CustomerStore
    + DocumentStore
    + JobStore
    + JobLeases
    + EventStore
    + MailStore
    + SettingsStore
    + StoreHealth
    + Send
    + Sync
{
}

impl<T> Store for T where
    T: CompanyStore
        + CredentialStore
        + ApiKeyStore
        + CustomerStore
        + DocumentStore
        + JobStore
        + JobLeases
        + EventStore
        + MailStore
        + SettingsStore
        + StoreHealth
        + Send
        + Sync
{
}

/// What the events and the registry need from the store.
pub trait ReceivedStore {
    fn received(&self, id: u64) -> StoreResult<Option<ReceivedInvoice>>;
    /// The record every party finds by `cufe`: the vouched one.
    fn received_by_cufe(&self, cufe: &str) -> StoreResult<Option<ReceivedInvoice>>;
    /// `company`'s upload of `cufe`.
    fn received_upload_of(
        &self,
        company: CompanyId,
        cufe: &str,
    ) -> StoreResult<Option<ReceivedInvoice>>;
    /// Ids of the uploads not yet compared with the authority's copy.
    fn unchecked_received(&self) -> StoreResult<Vec<u64>>;
    /// Writes `record` (id 0: a new one, refused as
    /// [`StoreError::DuplicateReference`](crate::error::StoreError::DuplicateReference) when its uploader already has an
    /// upload of its CUFE, or when it is vouched for and the CUFE already
    /// has a vouched record) if the stored version is still
    /// `record.version`; returns it as stored. A record vouched for
    /// becomes the CUFE's when it has none; one that is not stops being it.
    fn save_received(
        &self,
        record: ReceivedInvoice,
        upload: Option<String>,
    ) -> StoreResult<ReceivedInvoice>;
    /// The buyer's received invoices in `environment`, newest first.
    fn received_page(
        &self,
        buyer: CompanyId,
        environment: Environment,
        page: u32,
        limit: u32,
    ) -> StoreResult<Page<ReceivedInvoice>>;
    /// Invoices the company holds in `environment` that may be registered
    /// as titles, newest first.
    fn eligible_page(
        &self,
        holder: CompanyId,
        environment: Environment,
        page: u32,
        limit: u32,
    ) -> StoreResult<Page<ReceivedInvoice>>;
    fn received_upload(&self, id: u64) -> StoreResult<Option<String>>;
    fn next_event_id(&self) -> StoreResult<u64>;
    fn put_event_files(&self, event_id: u64, files: &EventFiles) -> StoreResult<()>;
    fn event_files(&self, event_id: u64) -> StoreResult<Option<EventFiles>>;
    /// The document whose code (CUFE, CUDE…) this is.
    fn document_by_code(&self, code: &str) -> StoreResult<Option<u64>>;
    /// Every received invoice in id order: up to `limit` with an id above
    /// `after`.
    fn received_after(&self, after: u64, limit: usize) -> StoreResult<Vec<ReceivedInvoice>>;
}

/// Writing an export's records into an empty store
/// (`crate::export::import`): each as it was, with its ids, numbers,
/// states, history and files; what the engine derives from them (indexes,
/// counts, usage, its sequences) is made by [`finish_import`](Self::finish_import).
pub trait Import {
    /// Refuses a store that holds anything (an import goes into an empty
    /// data dir).
    fn check_empty_for_import(&self) -> StoreResult<()>;
    fn import(&self, item: crate::model::export::ExportItem) -> StoreResult<()>;
    /// After the last record: the derived data made (at the latest when
    /// the store is next opened) and everything durable.
    fn finish_import(&self) -> StoreResult<()>;
}

/// The master key the engine seals secrets under (`secrets::sealing`).
pub trait MasterKeys {
    /// The keys in use: the current one, and while a rotation completes,
    /// the previous one.
    fn keyring(&self) -> std::sync::Arc<crate::secrets::sealing::Keyring>;
    /// Re-seals every secret under `new` in one transaction and makes it
    /// the current key; answers how many records were re-sealed.
    fn rotate_master_key(&self, new: crate::secrets::sealing::MasterKey) -> StoreResult<usize>;
}

/// Job claims with leases, so that several workers (or processes, on an
/// engine that allows them) share the job queue without running a job
/// twice at once. Times are given by the caller (Unix milliseconds).
pub trait JobLeases {
    /// Claims `job` for `worker` until `now_ms + for_ms`. `None` while
    /// another worker's lease has not expired; a worker claiming a job it
    /// holds renews it.
    fn claim_job(
        &self,
        job: u64,
        worker: &str,
        now_ms: i64,
        for_ms: i64,
    ) -> StoreResult<Option<JobLease>>;
    /// Extends `worker`'s lease on `job` to `now_ms + for_ms`. `None` when
    /// the worker holds no live lease on it (released, expired, or taken).
    fn renew_job_lease(
        &self,
        job: u64,
        worker: &str,
        now_ms: i64,
        for_ms: i64,
    ) -> StoreResult<Option<JobLease>>;
    /// Ends `worker`'s lease on `job`; false when it held none.
    fn release_job(&self, job: u64, worker: &str) -> StoreResult<bool>;
    /// The lease on `job`, live or expired.
    fn job_lease(&self, job: u64) -> StoreResult<Option<JobLease>>;
}

/// What a backup and a restore need of an engine: a consistent point to
/// copy from, and a restored store's numberings held until confirmed.
pub trait Backup {
    /// Holds the group commits (documents' phase two, their jobs) between
    /// batches until the guard is dropped.
    fn pause_flusher(&self) -> FlusherPause;
    /// Copies the store into `to` (a directory that does not exist yet) as
    /// of one point: phase one held, the flusher paused and everything
    /// before it durable, the engine's collections copied, then the files
    /// beside it up to their length at the point (so every record copied
    /// finds its files). `at_point` runs while the point holds (counts read
    /// there match the copy). The copy opens as a store of its own.
    fn checkpoint_to(
        &self,
        to: &std::path::Path,
        at_point: &mut dyn FnMut(),
    ) -> StoreResult<CheckpointCopy>;
    /// [`checkpoint_to`](Self::checkpoint_to) without the files beside the
    /// engine: what it would copy, each with its length at the point, for
    /// the caller to copy (an incremental backup copies only what grew).
    fn checkpoint_trees_to(
        &self,
        to: &std::path::Path,
        at_point: &mut dyn FnMut(),
    ) -> StoreResult<(CheckpointCopy, Vec<LogFile>)>;
    /// Holds every numbering that exists now: no document takes a number
    /// from it until [`confirm_numbering`](Self::confirm_numbering).
    fn hold_numberings(&self) -> StoreResult<NumberingHold>;
    fn numbering_hold(&self) -> StoreResult<Option<NumberingHold>>;
    /// Releases one held numbering, going on from `next` (at least the
    /// store's own next number; `None`: the store's, nothing was issued
    /// since the backup).
    fn confirm_numbering(
        &self,
        company: CompanyId,
        resolution_id: u64,
        next: Option<u64>,
    ) -> StoreResult<ConfirmedNumbering>;
}
