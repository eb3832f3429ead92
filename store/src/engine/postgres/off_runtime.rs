//! The PostgreSQL engine as synchronous callers reach it. The `postgres`
//! client blocks on a runtime of its own, which tokio refuses on a thread
//! inside another runtime (start-up and the admin commands call the
//! synchronous traits from async code, as sled allows): such a call runs
//! on a scoped thread of its own, any other where it is. The async handle
//! calls [`PgStore`] on its store threads, outside any runtime.

use chrono::{DateTime, NaiveDate, Utc};

use crate::durability::flusher::{Committed, FlusherPause};
use crate::engine::postgres::{off_runtime, PgStore};
use crate::error::StoreResult;
use crate::model::received::{EventFiles, ReceivedInvoice};
use crate::model::*;
use crate::traits::*;

/// [`PgStore`] for callers that may be on a runtime's thread.
#[derive(Clone)]
pub struct OffRuntime(pub(crate) PgStore);

impl CompanyStore for OffRuntime {
    fn create_company(&self, new: NewCompany) -> StoreResult<Company> {
        off_runtime(|| self.0.create_company(new))
    }

    fn company(&self, id: CompanyId) -> StoreResult<Option<Company>> {
        off_runtime(|| self.0.company(id))
    }

    fn company_by_nit(&self, nit: &str) -> StoreResult<Option<Company>> {
        off_runtime(|| self.0.company_by_nit(nit))
    }

    fn companies(&self) -> StoreResult<Vec<Company>> {
        off_runtime(|| self.0.companies())
    }

    fn update_company(&self, company: &Company) -> StoreResult<()> {
        off_runtime(|| self.0.update_company(company))
    }
}

impl CredentialStore for OffRuntime {
    fn put_software(&self, software: SoftwareRegistration) -> StoreResult<()> {
        off_runtime(|| self.0.put_software(software))
    }

    fn software(
        &self,
        company: CompanyId,
        kind: SoftwareKind,
    ) -> StoreResult<Option<SoftwareRegistration>> {
        off_runtime(|| self.0.software(company, kind))
    }

    fn add_resolution(
        &self,
        company: CompanyId,
        new: NewResolution,
    ) -> StoreResult<NumberingResolution> {
        off_runtime(|| self.0.add_resolution(company, new))
    }

    fn resolutions(&self, company: CompanyId) -> StoreResult<Vec<NumberingResolution>> {
        off_runtime(|| self.0.resolutions(company))
    }

    fn resolution(&self, company: CompanyId, id: u64) -> StoreResult<Option<NumberingResolution>> {
        off_runtime(|| self.0.resolution(company, id))
    }

    fn active_resolution(
        &self,
        company: CompanyId,
        environment: Environment,
        document_type: u8,
        date: NaiveDate,
    ) -> StoreResult<Option<NumberingResolution>> {
        off_runtime(|| {
            self.0
                .active_resolution(company, environment, document_type, date)
        })
    }

    fn next_number(&self, resolution: &NumberingResolution) -> StoreResult<u64> {
        off_runtime(|| self.0.next_number(resolution))
    }

    fn put_certificate(&self, certificate: CertificateRecord) -> StoreResult<()> {
        off_runtime(|| self.0.put_certificate(certificate))
    }

    fn certificate(&self, company: CompanyId) -> StoreResult<Option<CertificateRecord>> {
        off_runtime(|| self.0.certificate(company))
    }
}

impl ApiKeyStore for OffRuntime {
    fn insert_api_key(&self, record: ApiKeyRecord) -> StoreResult<ApiKeyRecord> {
        off_runtime(|| self.0.insert_api_key(record))
    }

    fn api_key_by_hash(&self, hash_hex: &str) -> StoreResult<Option<ApiKeyRecord>> {
        off_runtime(|| self.0.api_key_by_hash(hash_hex))
    }

    fn api_keys(&self, company: CompanyId) -> StoreResult<Vec<ApiKeyRecord>> {
        off_runtime(|| self.0.api_keys(company))
    }

    fn revoke_api_key(&self, id: u64, at: DateTime<Utc>) -> StoreResult<Option<ApiKeyRecord>> {
        off_runtime(|| self.0.revoke_api_key(id, at))
    }
}

impl CustomerStore for OffRuntime {
    fn upsert_customer(&self, company: CompanyId, input: CustomerInput) -> StoreResult<Customer> {
        off_runtime(|| self.0.upsert_customer(company, input))
    }

    fn customer(&self, company: CompanyId, id: u64) -> StoreResult<Option<Customer>> {
        off_runtime(|| self.0.customer(company, id))
    }

    fn customers(
        &self,
        company: CompanyId,
        page: u32,
        limit: u32,
        query: Option<&str>,
    ) -> StoreResult<Page<Customer>> {
        off_runtime(|| self.0.customers(company, page, limit, query))
    }

    fn customers_after(
        &self,
        company: CompanyId,
        after: u64,
        limit: usize,
    ) -> StoreResult<Vec<Customer>> {
        off_runtime(|| self.0.customers_after(company, after, limit))
    }
}

impl DocumentStore for OffRuntime {
    fn create_document(&self, new: NewDocument) -> StoreResult<DocumentRecord> {
        off_runtime(|| self.0.create_document(new))
    }

    fn stage_files(
        &self,
        document_id: u64,
        company: CompanyId,
        document_type: u8,
        files: &DocumentFiles,
    ) -> StoreResult<StagedFiles> {
        off_runtime(|| {
            self.0
                .stage_files(document_id, company, document_type, files)
        })
    }

    fn commit_staged(
        &self,
        doc: DocumentRecord,
        files: StagedFiles,
        job: Option<Job>,
        history: HistoryEntry,
    ) -> Committed {
        off_runtime(|| self.0.commit_staged(doc, files, job, history))
    }

    fn document(&self, id: u64) -> StoreResult<Option<DocumentRecord>> {
        off_runtime(|| self.0.document(id))
    }

    fn document_request(&self, id: u64) -> StoreResult<Option<Vec<u8>>> {
        off_runtime(|| self.0.document_request(id))
    }

    fn document_files(&self, id: u64) -> StoreResult<Option<DocumentFiles>> {
        off_runtime(|| self.0.document_files(id))
    }

    fn document_by_reference(
        &self,
        company: CompanyId,
        reference: &str,
    ) -> StoreResult<Option<u64>> {
        off_runtime(|| self.0.document_by_reference(company, reference))
    }

    fn update_document(&self, doc: &DocumentRecord, history: HistoryEntry) -> StoreResult<()> {
        off_runtime(|| self.0.update_document(doc, history))
    }

    fn history(&self, id: u64) -> StoreResult<Vec<HistoryEntry>> {
        off_runtime(|| self.0.history(id))
    }

    fn documents_in_states(
        &self,
        company: Option<CompanyId>,
        states: &[u8],
    ) -> StoreResult<Vec<DocumentRecord>> {
        off_runtime(|| self.0.documents_in_states(company, states))
    }

    fn pending_builds(&self) -> StoreResult<Vec<DocumentRecord>> {
        off_runtime(|| self.0.pending_builds())
    }

    fn recent_requests(&self, since: DateTime<Utc>) -> StoreResult<Vec<RecentRequest>> {
        off_runtime(|| self.0.recent_requests(since))
    }

    fn monthly_usage(&self, company: CompanyId, period: u32) -> StoreResult<u64> {
        off_runtime(|| self.0.monthly_usage(company, period))
    }

    fn document_counts(&self) -> StoreResult<Vec<((u8, u8), u64)>> {
        off_runtime(|| self.0.document_counts())
    }

    fn list_documents(&self, query: &ListQuery) -> StoreResult<Page<DocumentRecord>> {
        off_runtime(|| self.0.list_documents(query))
    }

    fn search_documents(&self, query: &DocumentSearch) -> StoreResult<SearchPage> {
        off_runtime(|| self.0.search_documents(query))
    }

    fn documents_after(&self, after: u64, limit: usize) -> StoreResult<Vec<DocumentRecord>> {
        off_runtime(|| self.0.documents_after(after, limit))
    }
}

impl EventStore for OffRuntime {
    fn append_event(&self, event: EventRecord) -> StoreResult<EventRecord> {
        off_runtime(|| self.0.append_event(event))
    }

    fn events(
        &self,
        company: CompanyId,
        kind: &str,
        limit: usize,
    ) -> StoreResult<Vec<EventRecord>> {
        off_runtime(|| self.0.events(company, kind, limit))
    }

    fn events_after(
        &self,
        company: CompanyId,
        after: u64,
        limit: usize,
    ) -> StoreResult<Vec<EventRecord>> {
        off_runtime(|| self.0.events_after(company, after, limit))
    }
}

impl JobStore for OffRuntime {
    fn put_job(&self, job: Job) -> StoreResult<Job> {
        off_runtime(|| self.0.put_job(job))
    }

    fn remove_job(&self, id: u64) -> StoreResult<()> {
        off_runtime(|| self.0.remove_job(id))
    }

    fn jobs(&self) -> StoreResult<Vec<Job>> {
        off_runtime(|| self.0.jobs())
    }

    fn job(&self, id: u64) -> StoreResult<Option<Job>> {
        off_runtime(|| self.0.job(id))
    }

    fn job_for_document(&self, document_id: u64) -> StoreResult<Option<Job>> {
        off_runtime(|| self.0.job_for_document(document_id))
    }
}

impl MailStore for OffRuntime {
    fn put_application_response(&self, document_id: u64, xml: &str) -> StoreResult<()> {
        off_runtime(|| self.0.put_application_response(document_id, xml))
    }

    fn application_response(&self, document_id: u64) -> StoreResult<Option<String>> {
        off_runtime(|| self.0.application_response(document_id))
    }

    fn queue_email(&self, log: EmailLog, job: Job) -> StoreResult<(EmailLog, Job)> {
        off_runtime(|| self.0.queue_email(log, job))
    }

    fn email_log(&self, id: u64) -> StoreResult<Option<EmailLog>> {
        off_runtime(|| self.0.email_log(id))
    }

    fn email_logs(&self, document_id: u64) -> StoreResult<Vec<EmailLog>> {
        off_runtime(|| self.0.email_logs(document_id))
    }

    fn update_email(&self, log: &EmailLog, job: EmailJob) -> StoreResult<()> {
        off_runtime(|| self.0.update_email(log, job))
    }
}

impl SettingsStore for OffRuntime {
    fn setting(&self, key: &str) -> StoreResult<Option<String>> {
        off_runtime(|| self.0.setting(key))
    }

    fn put_setting(&self, key: &str, value: &str) -> StoreResult<()> {
        off_runtime(|| self.0.put_setting(key, value))
    }

    fn settings(&self) -> StoreResult<Vec<(String, String)>> {
        off_runtime(|| self.0.settings())
    }
}

impl StoreHealth for OffRuntime {
    fn is_empty(&self) -> StoreResult<bool> {
        off_runtime(|| self.0.is_empty())
    }

    fn check_writable(&self) -> StoreResult<()> {
        off_runtime(|| self.0.check_writable())
    }

    fn flush(&self) -> StoreResult<()> {
        off_runtime(|| self.0.flush())
    }
}

impl ReceivedStore for OffRuntime {
    fn received(&self, id: u64) -> StoreResult<Option<ReceivedInvoice>> {
        off_runtime(|| self.0.received(id))
    }

    fn received_by_cufe(&self, cufe: &str) -> StoreResult<Option<ReceivedInvoice>> {
        off_runtime(|| self.0.received_by_cufe(cufe))
    }

    fn received_upload_of(
        &self,
        company: CompanyId,
        cufe: &str,
    ) -> StoreResult<Option<ReceivedInvoice>> {
        off_runtime(|| self.0.received_upload_of(company, cufe))
    }

    fn unchecked_received(&self) -> StoreResult<Vec<u64>> {
        off_runtime(|| self.0.unchecked_received())
    }

    fn save_received(
        &self,
        record: ReceivedInvoice,
        upload: Option<String>,
    ) -> StoreResult<ReceivedInvoice> {
        off_runtime(|| self.0.save_received(record, upload))
    }

    fn received_page(
        &self,
        buyer: CompanyId,
        environment: Environment,
        page: u32,
        limit: u32,
    ) -> StoreResult<Page<ReceivedInvoice>> {
        off_runtime(|| self.0.received_page(buyer, environment, page, limit))
    }

    fn eligible_page(
        &self,
        holder: CompanyId,
        environment: Environment,
        page: u32,
        limit: u32,
    ) -> StoreResult<Page<ReceivedInvoice>> {
        off_runtime(|| self.0.eligible_page(holder, environment, page, limit))
    }

    fn received_upload(&self, id: u64) -> StoreResult<Option<String>> {
        off_runtime(|| self.0.received_upload(id))
    }

    fn next_event_id(&self) -> StoreResult<u64> {
        off_runtime(|| self.0.next_event_id())
    }

    fn put_event_files(&self, event_id: u64, files: &EventFiles) -> StoreResult<()> {
        off_runtime(|| self.0.put_event_files(event_id, files))
    }

    fn event_files(&self, event_id: u64) -> StoreResult<Option<EventFiles>> {
        off_runtime(|| self.0.event_files(event_id))
    }

    fn document_by_code(&self, code: &str) -> StoreResult<Option<u64>> {
        off_runtime(|| self.0.document_by_code(code))
    }

    fn received_after(&self, after: u64, limit: usize) -> StoreResult<Vec<ReceivedInvoice>> {
        off_runtime(|| self.0.received_after(after, limit))
    }
}

impl Import for OffRuntime {
    fn check_empty_for_import(&self) -> StoreResult<()> {
        off_runtime(|| self.0.check_empty_for_import())
    }

    fn import(&self, item: crate::model::export::ExportItem) -> StoreResult<()> {
        off_runtime(|| self.0.import(item))
    }

    fn finish_import(&self) -> StoreResult<()> {
        off_runtime(|| self.0.finish_import())
    }
}

impl MasterKeys for OffRuntime {
    fn keyring(&self) -> std::sync::Arc<crate::secrets::sealing::Keyring> {
        self.0.keyring()
    }

    fn rotate_master_key(&self, new: crate::secrets::sealing::MasterKey) -> StoreResult<usize> {
        off_runtime(|| self.0.rotate_master_key(new))
    }
}

impl JobLeases for OffRuntime {
    fn claim_job(
        &self,
        job: u64,
        worker: &str,
        now_ms: i64,
        for_ms: i64,
    ) -> StoreResult<Option<JobLease>> {
        off_runtime(|| self.0.claim_job(job, worker, now_ms, for_ms))
    }

    fn renew_job_lease(
        &self,
        job: u64,
        worker: &str,
        now_ms: i64,
        for_ms: i64,
    ) -> StoreResult<Option<JobLease>> {
        off_runtime(|| self.0.renew_job_lease(job, worker, now_ms, for_ms))
    }

    fn release_job(&self, job: u64, worker: &str) -> StoreResult<bool> {
        off_runtime(|| self.0.release_job(job, worker))
    }

    fn job_lease(&self, job: u64) -> StoreResult<Option<JobLease>> {
        off_runtime(|| self.0.job_lease(job))
    }
}

impl Backup for OffRuntime {
    fn pause_flusher(&self) -> FlusherPause {
        self.0.pause_flusher()
    }

    fn checkpoint_to(
        &self,
        to: &std::path::Path,
        at_point: &mut dyn FnMut(),
    ) -> StoreResult<CheckpointCopy> {
        self.0.checkpoint_to(to, at_point)
    }

    fn checkpoint_trees_to(
        &self,
        to: &std::path::Path,
        at_point: &mut dyn FnMut(),
    ) -> StoreResult<(CheckpointCopy, Vec<LogFile>)> {
        self.0.checkpoint_trees_to(to, at_point)
    }

    fn hold_numberings(&self) -> StoreResult<NumberingHold> {
        off_runtime(|| self.0.hold_numberings())
    }

    fn numbering_hold(&self) -> StoreResult<Option<NumberingHold>> {
        off_runtime(|| self.0.numbering_hold())
    }

    fn confirm_numbering(
        &self,
        company: CompanyId,
        resolution_id: u64,
        next: Option<u64>,
    ) -> StoreResult<ConfirmedNumbering> {
        off_runtime(|| self.0.confirm_numbering(company, resolution_id, next))
    }
}
