//! Documents, their files and history, usage counters and jobs on sled.

use chrono::{DateTime, Utc};

use crate::codec::{decode, encode, id_key, read_u64, scoped_key, scoped_text_key};
use crate::error::{StoreError, StoreResult};
use crate::flusher::Committed;
use crate::model::*;
use crate::sled_store::SledStore;
use crate::test_set;
use crate::trees;
use crate::{CredentialStore, DocumentStore, EventStore, JobStore};

pub(crate) fn count_key(document_type: u8, state: u8) -> [u8; 2] {
    [document_type, state]
}

pub(crate) fn usage_key(company: CompanyId, period: u32) -> [u8; 12] {
    let mut k = [0u8; 12];
    k[..8].copy_from_slice(&company.to_be_bytes());
    k[8..].copy_from_slice(&period.to_be_bytes());
    k
}

/// The two fields of a replaced record its count needs (decoding the
/// whole record just to read them showed in the profile).
#[derive(serde::Deserialize)]
struct Counted {
    document_type: u8,
    state: u8,
    #[serde(default)]
    pending_build: bool,
}

/// The fields of a record [`DocumentStore::recent_requests`] reads.
#[derive(serde::Deserialize)]
struct Created {
    id: u64,
    company_id: CompanyId,
    created_at: DateTime<Utc>,
}

/// A built document's entry in `documents_by_state` (a half-built one
/// has none: it is found by the scan at start-up, the only time one exists
/// without a request working on it).
pub(crate) fn state_key(doc_id: u64, state: u8, pending_build: bool) -> Option<[u8; 9]> {
    if pending_build {
        return None;
    }
    let mut k = [0u8; 9];
    k[0] = state;
    k[1..].copy_from_slice(&doc_id.to_be_bytes());
    Some(k)
}

impl SledStore {
    /// A per-(type, state) count, atomically, outside any transaction.
    fn bump_count(&self, key: [u8; 2], delta: i64) -> StoreResult<()> {
        self.document_counts.fetch_and_update(key, |v| {
            let current = v.and_then(read_u64).unwrap_or(0) as i64;
            Some(((current + delta).max(0) as u64).to_be_bytes().to_vec())
        })?;
        Ok(())
    }

    /// Moves a replaced record's count and state-index entry to its new
    /// state (after the record itself: both are repaired after a crash).
    pub(crate) fn recount(&self, old: Option<&[u8]>, doc: &DocumentRecord) -> StoreResult<()> {
        let new_key = count_key(doc.document_type, doc.state);
        let new_entry = state_key(doc.id, doc.state, doc.pending_build);
        let old: Option<Counted> = old.map(|o| decode(trees::DOCUMENTS, o)).transpose()?;
        let old_entry = old
            .as_ref()
            .and_then(|o| state_key(doc.id, o.state, o.pending_build));
        if old_entry != new_entry {
            if let Some(k) = old_entry {
                self.documents_by_state.remove(k)?;
            }
            if let Some(k) = new_entry {
                self.documents_by_state.insert(k, &[])?;
            }
        }
        if let Some(old) = &old {
            let old_key = count_key(old.document_type, old.state);
            if old_key == new_key {
                return Ok(());
            }
            self.bump_count(old_key, -1)?;
        }
        self.bump_count(new_key, 1)
    }

    /// The documents with an entry under `state` in the state index.
    fn indexed(&self, state: u8) -> StoreResult<Vec<DocumentRecord>> {
        let mut out = Vec::new();
        for entry in self.documents_by_state.scan_prefix([state]) {
            let (k, _) = entry?;
            let Some(id) = k.get(1..).and_then(read_u64) else {
                continue;
            };
            if let Some(d) = self.document(id)? {
                out.push(d);
            }
        }
        Ok(out)
    }

    /// Stores a job (an id is given to a new one) behind its document's
    /// index entry: a crash between the two leaves an entry naming a job
    /// that is not there, which reads as no job.
    fn store_job(&self, job: &mut Job) -> StoreResult<()> {
        if job.id == 0 {
            job.id = self.next_seq_now(trees::JOBS)?;
        }
        if let Some(doc) = job.document_id {
            self.jobs_by_document.insert(id_key(doc), &id_key(job.id))?;
        }
        self.jobs
            .insert(id_key(job.id), encode(trees::JOBS, job)?)?;
        Ok(())
    }

    /// Single-key writes, no sled transaction: every sled transaction (and
    /// batch) rolls the log buffer twice, each roll a write and a wakeup of
    /// sled's IO threads, which made phase two cost more than signing. sled
    /// recovers a prefix of its log, so the order below keeps a crash
    /// between writes harmless: files, history and job first (unreferenced
    /// until the record says so), the document record last. A record that
    /// never landed leaves the document half-built, which resume rebuilds;
    /// its leftover job finds the document is not queued and ends.
    pub(crate) fn complete_staged(
        &self,
        doc: &DocumentRecord,
        files: &StagedFiles,
        job: Option<Job>,
        history: HistoryEntry,
    ) -> StoreResult<Option<Job>> {
        self.document_files.insert(
            id_key(doc.id),
            encode(trees::DOCUMENT_FILES, &StoredFiles::Logged(files.clone()))?,
        )?;
        let seq = self.next_seq_now(trees::DOCUMENT_HISTORY)?;
        self.document_history.insert(
            scoped_key(doc.id, seq),
            encode(trees::DOCUMENT_HISTORY, &history)?,
        )?;
        let job = match job {
            Some(mut j) => {
                self.store_job(&mut j)?;
                Some(j)
            }
            None => None,
        };
        let old = self.put_document(doc)?;
        self.recount(old.as_deref(), doc)?;
        self.index_code_unflushed(doc.id, doc.code.as_deref())?;
        Ok(job)
    }

    /// The writes of [`DocumentStore::update_document`], not yet flushed
    /// (the async store runs them on the flusher): the record, then its
    /// history line; counts are derived and repaired after a crash.
    pub(crate) fn update_document_unflushed(
        &self,
        doc: &DocumentRecord,
        history: HistoryEntry,
    ) -> StoreResult<()> {
        let old = self.put_document(doc)?;
        let seq = self.next_seq_now(trees::DOCUMENT_HISTORY)?;
        self.document_history.insert(
            scoped_key(doc.id, seq),
            encode(trees::DOCUMENT_HISTORY, &history)?,
        )?;
        self.recount(old.as_deref(), doc)
    }

    /// Whether a document's files are stored (the record that points at
    /// them exists), without reading them.
    pub(crate) fn has_files(&self, id: u64) -> StoreResult<bool> {
        Ok(self.document_files.contains_key(id_key(id))?)
    }

    pub(crate) fn put_job_unflushed(&self, mut job: Job) -> StoreResult<Job> {
        self.store_job(&mut job)?;
        Ok(job)
    }

    pub(crate) fn remove_job_unflushed(&self, id: u64) -> StoreResult<()> {
        if let Some(old) = self.jobs.remove(id_key(id))? {
            let old: Job = decode(trees::JOBS, &old)?;
            if let Some(doc) = old.document_id {
                // Only if it still names this job (a newer one may have replaced it).
                let _ = self.jobs_by_document.compare_and_swap(
                    id_key(doc),
                    Some(&id_key(id)[..]),
                    None as Option<&[u8]>,
                )?;
            }
        }
        Ok(())
    }

    pub(crate) fn append_event_unflushed(&self, mut e: EventRecord) -> StoreResult<EventRecord> {
        e.id = self.next_seq_now(trees::EVENTS)?;
        self.events
            .insert(scoped_key(e.company_id, e.id), encode(trees::EVENTS, &e)?)?;
        Ok(e)
    }

    /// Data dirs from before the index: build it once.
    pub(crate) fn index_jobs_by_document(&self) -> StoreResult<()> {
        if !self.jobs_by_document.is_empty() {
            return Ok(());
        }
        for job in self.jobs()? {
            if let Some(doc) = job.document_id {
                self.jobs_by_document.insert(id_key(doc), &id_key(job.id))?;
            }
        }
        Ok(())
    }
}

impl DocumentStore for SledStore {
    /// Phase one without a sled transaction (each would roll sled's log
    /// buffer twice, waking its IO threads): one lock makes the checks and
    /// the number atomic among documents, and the writes go in an order a
    /// crash can only cut short. The document record goes first and is the
    /// truth; the counter, reference, usage and counts after it are derived
    /// from the documents, and [`SledStore::repair_derived`] rebuilds them
    /// on the first open after an unclean stop.
    fn create_document(&self, new: NewDocument) -> StoreResult<DocumentRecord> {
        let resolution = self
            .resolution(new.company_id, new.resolution_id)?
            .ok_or(StoreError::NotFound("numbering resolution"))?;
        let ref_key = new
            .external_reference
            .as_deref()
            .map(|r| scoped_text_key(new.company_id, r));
        let ukey = usage_key(new.company_id, new.period);

        let _numbering = self
            .numbering
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(k) = &ref_key {
            if let Some(existing) = self.document_refs.get(k)?.and_then(|v| read_u64(&v)) {
                return Err(StoreError::DuplicateReference { id: existing });
            }
        }
        let used = self
            .usage
            .get(ukey)?
            .and_then(|v| read_u64(&v))
            .unwrap_or(0);
        if let Some(limit) = new.monthly_limit {
            if used >= limit {
                return Err(StoreError::LimitReached { limit });
            }
        }
        let number = self.next_number(&resolution)?;
        if number < resolution.from || number > resolution.to {
            return Err(StoreError::RangeExhausted {
                resolution_id: resolution.id,
            });
        }
        let customer_id = match &new.customer {
            Some(c) => Some(
                self.upsert_customer_unflushed(new.company_id, c.clone())?
                    .id,
            ),
            None => None,
        };
        let id = self.next_seq_now(trees::DOCUMENTS)?;
        let now = Utc::now();
        let doc = DocumentRecord {
            id,
            company_id: new.company_id,
            environment: new.environment,
            document_type: new.document_type,
            resolution_id: resolution.id,
            prefix: resolution.prefix.clone(),
            number,
            state: state::DRAFT,
            pending_build: true,
            code: None,
            code_scheme: None,
            qr_url: None,
            issue_date: new.issue_date,
            total: String::new(),
            external_reference: new.external_reference.clone(),
            customer_id,
            user_id: new.user_id,
            request: serde_json::Value::Null,
            transmission: None,
            attempts: 0,
            track_id: None,
            application_response_missing: None,
            api: new.api.clone(),
            list_keys: new.list_keys.clone(),
            created_at: now,
            updated_at: now,
        };
        // The request before the record: a record never lacks its request.
        self.document_requests.insert(id_key(id), new.request)?;
        self.documents
            .insert(id_key(id), encode(trees::DOCUMENTS, &doc)?)?;
        self.counters.insert(
            test_set::counter_key(new.company_id, resolution.id),
            &(number + 1).to_be_bytes(),
        )?;
        if let Some(k) = &ref_key {
            self.document_refs.insert(k, &id_key(id))?;
        }
        self.usage.insert(ukey, &(used + 1).to_be_bytes())?;
        self.recount(None, &doc)?;
        // No flush here: until phase two is flushed nothing was promised to
        // a client; a document found half-built after a crash is rebuilt.
        Ok(doc)
    }

    fn stage_files(&self, document_id: u64, files: &DocumentFiles) -> StoreResult<StagedFiles> {
        let at = self
            .files
            .append(document_id, files.xml.as_bytes(), &files.zip)?;
        Ok(StagedFiles {
            xml_name: files.xml_name.clone(),
            zip_name: files.zip_name.clone(),
            at,
        })
    }

    fn commit_staged(
        &self,
        doc: DocumentRecord,
        files: StagedFiles,
        job: Option<Job>,
        history: HistoryEntry,
    ) -> Committed {
        let store = self.clone();
        self.flusher
            .commit(move || store.complete_staged(&doc, &files, job, history))
    }

    fn document(&self, id: u64) -> StoreResult<Option<DocumentRecord>> {
        Self::get_decode(&self.documents, trees::DOCUMENTS, &id_key(id))
    }

    fn document_request(&self, id: u64) -> StoreResult<Option<Vec<u8>>> {
        if let Some(raw) = self.document_requests.get(id_key(id))? {
            return Ok(Some(raw.to_vec()));
        }
        Ok(self
            .document(id)?
            .filter(|d| !d.request.is_null())
            .map(|d| d.request.to_string().into_bytes()))
    }

    fn document_files(&self, id: u64) -> StoreResult<Option<DocumentFiles>> {
        let stored: Option<StoredFiles> =
            Self::get_decode(&self.document_files, trees::DOCUMENT_FILES, &id_key(id))?;
        match stored {
            None => Ok(None),
            Some(StoredFiles::Inline(files)) => Ok(Some(files)),
            Some(StoredFiles::Logged(staged)) => {
                let (xml, zip) = self.files.read(id, &staged.at)?;
                let xml = String::from_utf8(xml).map_err(|e| StoreError::Corrupt {
                    tree: trees::DOCUMENT_FILES,
                    reason: format!("XML of document {id}: {e}"),
                })?;
                Ok(Some(DocumentFiles {
                    xml,
                    xml_name: staged.xml_name,
                    zip,
                    zip_name: staged.zip_name,
                }))
            }
        }
    }

    fn document_by_reference(
        &self,
        company: CompanyId,
        reference: &str,
    ) -> StoreResult<Option<u64>> {
        Ok(self
            .document_refs
            .get(scoped_text_key(company, reference))?
            .and_then(|v| read_u64(&v)))
    }

    /// Single-key writes (see `complete_staged`): the record, then its
    /// history line; counts are derived and repaired after a crash.
    fn update_document(&self, doc: &DocumentRecord, history: HistoryEntry) -> StoreResult<()> {
        self.update_document_unflushed(doc, history)?;
        self.flush_now()
    }

    fn history(&self, id: u64) -> StoreResult<Vec<HistoryEntry>> {
        Self::scan_decode(
            &self.document_history,
            trees::DOCUMENT_HISTORY,
            &id.to_be_bytes(),
        )
    }

    fn documents_in_states(
        &self,
        company: Option<CompanyId>,
        states: &[u8],
    ) -> StoreResult<Vec<DocumentRecord>> {
        let mut out = Vec::new();
        for &state in states {
            out.extend(
                self.indexed(state)?
                    .into_iter()
                    // The index may lag a record by a crash; the record wins.
                    .filter(|d| d.state == state && !d.pending_build)
                    .filter(|d| company.is_none_or(|c| c == d.company_id)),
            );
        }
        out.sort_by_key(|d| d.id);
        Ok(out)
    }

    fn pending_builds(&self) -> StoreResult<Vec<DocumentRecord>> {
        let mut out = Vec::new();
        for r in self.documents.iter() {
            let (_, v) = r?;
            let d: DocumentRecord = decode(trees::DOCUMENTS, &v)?;
            if d.pending_build {
                out.push(d);
            }
        }
        Ok(out)
    }

    fn recent_requests(&self, since: DateTime<Utc>) -> StoreResult<Vec<RecentRequest>> {
        let mut out = Vec::new();
        // Ids grow with creation time (both are taken under the numbering
        // lock), so the newest come first and the walk stops at the window.
        for r in self.documents.iter().rev() {
            let (_, v) = r?;
            let d: Created = decode(trees::DOCUMENTS, &v)?;
            if d.created_at < since {
                break;
            }
            if let Some(request) = self.document_request(d.id)? {
                out.push(RecentRequest {
                    document_id: d.id,
                    company_id: d.company_id,
                    created_at: d.created_at,
                    request,
                });
            }
        }
        Ok(out)
    }

    fn monthly_usage(&self, company: CompanyId, period: u32) -> StoreResult<u64> {
        Ok(self
            .usage
            .get(usage_key(company, period))?
            .and_then(|v| read_u64(&v))
            .unwrap_or(0))
    }

    fn list_documents(&self, query: &ListQuery) -> StoreResult<Page<DocumentRecord>> {
        self.list_indexed(query)
    }

    fn document_counts(&self) -> StoreResult<Vec<((u8, u8), u64)>> {
        self.document_counts
            .iter()
            .map(|r| {
                let (k, v) = r?;
                let key = (
                    k.first().copied().unwrap_or(0),
                    k.get(1).copied().unwrap_or(0),
                );
                Ok((key, read_u64(&v).unwrap_or(0)))
            })
            .collect()
    }
}

impl JobStore for SledStore {
    fn put_job(&self, job: Job) -> StoreResult<Job> {
        let job = self.put_job_unflushed(job)?;
        self.flush_now()?;
        Ok(job)
    }

    fn remove_job(&self, id: u64) -> StoreResult<()> {
        self.remove_job_unflushed(id)?;
        self.flush_now()
    }

    fn jobs(&self) -> StoreResult<Vec<Job>> {
        Self::scan_decode(&self.jobs, trees::JOBS, &[])
    }

    fn job(&self, id: u64) -> StoreResult<Option<Job>> {
        Self::get_decode(&self.jobs, trees::JOBS, &id_key(id))
    }

    fn job_for_document(&self, document_id: u64) -> StoreResult<Option<Job>> {
        let Some(id) = self
            .jobs_by_document
            .get(id_key(document_id))?
            .and_then(|v| read_u64(&v))
        else {
            return Ok(None);
        };
        Ok(self.job(id)?.filter(|j| j.document_id == Some(document_id)))
    }
}

impl EventStore for SledStore {
    fn append_event(&self, event: EventRecord) -> StoreResult<EventRecord> {
        let e = self.append_event_unflushed(event)?;
        self.flush_now()?;
        Ok(e)
    }

    fn events(
        &self,
        company: CompanyId,
        kind: &str,
        limit: usize,
    ) -> StoreResult<Vec<EventRecord>> {
        let mut out = Vec::new();
        for r in self.events.scan_prefix(company.to_be_bytes()).rev() {
            let (_, v) = r?;
            let e: EventRecord = decode(trees::EVENTS, &v)?;
            if e.kind == kind {
                out.push(e);
                if out.len() >= limit {
                    break;
                }
            }
        }
        out.reverse();
        Ok(out)
    }
}
