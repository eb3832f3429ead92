//! Documents, their files and history, usage counters and jobs on sled.

use chrono::{DateTime, Utc};

use crate::durability::file_log::end_of;
use crate::durability::flusher::Committed;
use crate::durability::intents::{self, Intent};
use crate::durability::payload_log;
use crate::encoding::codec::{
    decode, encode, id_key, read_u64, scoped_key, split_request, with_request,
};
use crate::encoding::compress::Kind;
use crate::encoding::record_parts::{encode_record, Parts, PartsChange};
use crate::encoding::trees;
use crate::engine::sled::SledStore;
use crate::error::{StoreError, StoreResult};
use crate::indexes::counts::{counted, counter_key, state_set, usage_key, Counted, PENDING_BUILD};
use crate::indexes::set_changes::{self, SetChanges};
use crate::model::export::ExportedDocument;
use crate::model::FileRef;
use crate::model::*;
use crate::traits::{CredentialStore, DocumentStore, EventStore, JobStore};

/// Tags of a compressed request (JSON never starts with these bytes).
/// A request still in `document_requests` (before phase two) is kept
/// behind its duplicate-window payload record, which phase two writes
/// beside it into the file log ([`crate::durability::payload_log`]).
const REQUEST_WITH_PAYLOAD: u8 = 0xFC;
const REQUEST_PLAIN: u8 = 0xFD;
const REQUEST_WITH_DICTIONARY: u8 = 0xFE;

/// `created_at (µs) ‖ id` → `company ‖ payload hash`: the
/// duplicate window's payloads, read at start-up without any record.
pub(crate) fn payload_key(created_at: DateTime<Utc>, id: u64) -> [u8; 16] {
    let us = u64::try_from(created_at.timestamp_micros()).unwrap_or(0);
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&us.to_be_bytes());
    k[8..].copy_from_slice(&id.to_be_bytes());
    k
}

/// A stored request and its payload record, if it is kept with one
/// ([`REQUEST_WITH_PAYLOAD`]); the file log keeps them in a record's two
/// parts.
pub(crate) fn split_payload(stored: &[u8]) -> (&[u8], &[u8]) {
    match stored.split_first() {
        Some((&REQUEST_WITH_PAYLOAD, rest)) if rest.len() > payload_log::RECORD_LEN => {
            let (payload, packed) = rest.split_at(payload_log::RECORD_LEN);
            (packed, payload)
        }
        _ => (stored, &[]),
    }
}

/// A request as a half-built record keeps it, from the file log's two
/// parts ([`split_payload`] undone).
pub(crate) fn join_payload(packed: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 + payload.len() + packed.len());
    out.push(REQUEST_WITH_PAYLOAD);
    out.extend_from_slice(payload);
    out.extend_from_slice(packed);
    out
}

/// Payloads are kept this much longer than the window, then dropped.
const PAYLOAD_SLACK_MS: i64 = 60_000;

impl SledStore {
    /// A per-(type, state) count, atomically, outside any transaction,
    /// stamped with the marker token of the change that moved it.
    pub(crate) fn bump_count(&self, key: [u8; 2], delta: i64, token: u64) -> StoreResult<()> {
        set_changes::bump_count(&self.document_counts, key, delta, token)
    }

    /// Moves a replaced record's count and state-index entry to its new
    /// state (into `changes`, written after the record). `token` is the
    /// marker of the change ([`SledStore::put_document`]): after a crash
    /// a marked change whose token a count does not carry has not reached
    /// it (`repair`).
    pub(crate) fn recount(
        &self,
        old: Option<Counted>,
        doc: &DocumentRecord,
        token: u64,
        changes: &mut SetChanges,
    ) {
        let new_set = state_set(doc.state, doc.pending_build);
        let old_set = old.as_ref().map(|o| state_set(o.state, o.pending_build));
        if old_set != Some(new_set) {
            if let Some(set) = old_set {
                changes.remove_state(set, doc.id);
            }
            changes.add_state(new_set, doc.id);
        }
        let old_count = old
            .as_ref()
            .and_then(|o| counted(o.document_type, o.state, o.pending_build));
        let new_count = counted(doc.document_type, doc.state, doc.pending_build);
        if old_count != new_count {
            if let Some(k) = old_count {
                changes.bump_count(k, -1, token);
            }
            if let Some(k) = new_count {
                changes.bump_count(k, 1, token);
            }
        }
    }

    /// The documents with an entry under `state` in the state index.
    fn indexed(&self, state: u8) -> StoreResult<Vec<DocumentRecord>> {
        self.derived.apply_deferred()?;
        let mut out = Vec::new();
        for id in self.documents_by_state.ids(&[state], false) {
            if let Some(d) = self.document(id?)? {
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
    /// between writes harmless: the job and the code index entry first
    /// (unreferenced until the record says so), then the record with its
    /// files and history line, then what is derived from it, and last the
    /// request's sled copy, once the record points at the one in the file
    /// log. A record that never landed leaves the document half-built,
    /// which resume rebuilds; its leftover job finds the document is not
    /// queued and ends.
    pub(crate) fn complete_staged(
        &self,
        doc: &DocumentRecord,
        files: &StagedFiles,
        job: Option<Job>,
        history: HistoryEntry,
    ) -> StoreResult<Option<Job>> {
        let job = match job {
            Some(mut j) => {
                self.store_job(&mut j)?;
                Some(j)
            }
            None => None,
        };
        // The code before the record (see `lookup`): a built record
        // sled recovers always has its code indexed.
        self.index_code_unflushed(doc.id, doc.code.as_deref())?;
        self.index_number_unflushed(doc)?;
        // The files' place and the history line go in the record's value
        // (record_parts): one sled entry per document.
        let change = PartsChange {
            files: Some(files.clone()),
            history: Some(history),
        };
        let mut changes = SetChanges::default();
        let held = self.intents.request_at(doc.id).is_some();
        let (old, token) = self.put_record(doc, change, &mut changes, held)?;
        // Its record is written: no longer held.
        self.intents.take(doc.id);
        self.recount(old, doc, token, &mut changes);
        // The sets and counts with the group commit's other documents:
        // written by the flush that answers its callers.
        self.derived.defer(changes);
        // The request moved to the file log with the XML (stage_files);
        // the record's new value is without it.
        if self.legacy_requests && files.request_at.is_some() {
            self.document_requests.remove(id_key(doc.id))?;
        }
        Ok(job)
    }

    /// Phase one ([`DocumentStore::create_document`]); `held` keeps the new
    /// record out of sled until phase two (`intents`).
    pub(crate) fn number_document(
        &self,
        new: NewDocument,
        held: bool,
    ) -> StoreResult<DocumentRecord> {
        let resolution = self
            .resolution(new.company_id, new.resolution_id)?
            .ok_or(StoreError::NotFound("numbering resolution"))?;
        let ukey = usage_key(new.company_id, new.period);

        let mut numbering = self
            .numbering
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Confirmed against the holder's record (held, pending or built): a hash
        // collision never refuses a reference.
        if let Some(r) = new.external_reference.as_deref() {
            if let Some(existing) = self.find_by_reference(new.company_id, r)? {
                return Err(StoreError::DuplicateReference { id: existing });
            }
        }
        self.check_numbering_hold(new.company_id, resolution.id)?;
        let (used, _) = self.derived.usage(ukey)?;
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
            Some(c) => Some(self.upsert_customer_id(new.company_id, c)?),
            None => None,
        };
        let id = self.next_document_id(&mut numbering)?;
        let now = Utc::now();
        let doc = new.half_built(id, &resolution, number, customer_id, now);
        // The request with the record, in sled (behind the record's value)
        // or in the file log (a held document's intent), until phase two
        // points the record at it: a record never lacks its request.
        let payload = payload_log::encode(now, id, new.company_id, &new.payload_hash);
        let request = self.pack_request(new.company_id, &new.request, &payload)?;
        let record = encode(trees::DOCUMENTS, &doc)?;
        let intent_end = if held {
            Some(end_of(&self.hold(&doc, record, request)?))
        } else {
            self.documents
                .insert(id_key(id), with_request(&record, &request))?;
            None
        };
        // Its pending-build entry (a held one has none until it is kept),
        // counter and usage with the next flush's (`set_changes`; read back
        // through it until then), a held one's once its intent is durable.
        let mut changes = SetChanges::default();
        changes.set_counter(counter_key(new.company_id, resolution.id), number + 1);
        changes.set_usage(ukey, used + 1, id);
        match intent_end {
            Some(end) => {
                changes.note_new(doc.id);
                self.derived.defer_held(changes, end);
            }
            None => {
                changes.add_new(doc.id);
                self.derived.defer(changes);
            }
        }
        if let Some(r) = new.external_reference.as_deref() {
            if let Err(e) = self.add_reference(new.company_id, r, id) {
                // Kept half-built, as a record written before it would be
                // (its number stays taken).
                self.keep_pending(id)?;
                return Err(e);
            }
        }
        self.remember_payload(&doc, &payload)?;
        // No flush here: until phase two is flushed nothing was promised to
        // a client; a document found half-built after a crash is rebuilt.
        Ok(doc)
    }

    /// Phase one's record and request of a held document: the request
    /// appended to the file log with the record behind its payload, and
    /// the document held in memory (`intents`).
    fn hold(
        &self,
        doc: &DocumentRecord,
        record: Vec<u8>,
        request: Vec<u8>,
    ) -> StoreResult<FileRef> {
        let second = intents::encode_second(split_payload(&request).1, &record);
        self.intents.append(doc.id, || {
            let at = self
                .files
                .append(doc.id, split_payload(&request).0, &second)?;
            Ok::<_, StoreError>(Intent {
                company: doc.company_id,
                reference: doc.external_reference.clone(),
                record,
                request,
                at,
            })
        })
    }

    /// A held document written half-built, as phase one would have
    /// written it without holding it: its build or its commit failed, and
    /// start-up rebuilds it. Nothing if it is not held (its record is
    /// written).
    pub(crate) fn keep_pending(&self, id: u64) -> StoreResult<()> {
        let Some(intent) = self.intents.take(id) else {
            return Ok(());
        };
        // Its caller hears of the failure: a draft, not queued.
        let mut d: DocumentRecord = decode(trees::DOCUMENTS, &intent.record)?;
        let record = crate::engine::sled::repair::as_draft(&mut d)?;
        self.documents
            .insert(id_key(id), with_request(&record, &intent.request))?;
        // Its entry only: the watermark moves past it with its counter,
        // once its intent is durable, so until then a repair checks it.
        let mut changes = SetChanges::default();
        changes.add_state(PENDING_BUILD, id);
        self.derived.defer(changes);
        Ok(())
    }

    /// The writes of [`DocumentStore::update_document`], not yet flushed
    /// (the async store runs them on the flusher): the record with its new
    /// history line; counts are derived and repaired after a crash.
    pub(crate) fn update_document_unflushed(
        &self,
        doc: &DocumentRecord,
        history: HistoryEntry,
    ) -> StoreResult<()> {
        let mut changes = SetChanges::default();
        let (old, token) = self.put_document(doc, PartsChange::history(history), &mut changes)?;
        self.recount(old, doc, token, &mut changes);
        self.derived.defer(changes);
        Ok(())
    }

    /// A request as `document_requests` keeps it: its payload record
    /// behind [`REQUEST_WITH_PAYLOAD`], then a tag byte, the dictionary's
    /// id if any, the zstd frame (older values: the JSON, or no payload).
    fn pack_request(
        &self,
        company: CompanyId,
        json: &[u8],
        payload: &[u8; payload_log::RECORD_LEN],
    ) -> StoreResult<Vec<u8>> {
        let (dictionary, frame) = self.dictionaries.compress(company, Kind::Request, json)?;
        let mut out = Vec::with_capacity(1 + payload.len() + 9 + frame.len());
        out.push(REQUEST_WITH_PAYLOAD);
        out.extend_from_slice(payload);
        match dictionary {
            Some(id) => {
                out.push(REQUEST_WITH_DICTIONARY);
                out.extend_from_slice(&id.to_be_bytes());
            }
            None => out.push(REQUEST_PLAIN),
        }
        out.extend_from_slice(&frame);
        Ok(out)
    }

    /// A half-built document's request as phase one stored it (behind its
    /// payload record): in its record's value, or (data dirs written
    /// before) in `document_requests`.
    pub(crate) fn pending_request(&self, id: u64) -> StoreResult<Option<Vec<u8>>> {
        let value = self.documents.get(id_key(id))?;
        self.pending_request_in(id, value.as_deref())
    }

    /// [`Self::pending_request`] with the record's value already read.
    fn pending_request_in(&self, id: u64, value: Option<&[u8]>) -> StoreResult<Option<Vec<u8>>> {
        if let Some((_, Some(stored))) = value.map(split_request) {
            return Ok(Some(stored.to_vec()));
        }
        if !self.legacy_requests {
            return Ok(None);
        }
        Ok(self.document_requests.get(id_key(id))?.map(|v| v.to_vec()))
    }

    fn unpack_request(&self, stored: &[u8]) -> StoreResult<Vec<u8>> {
        let (stored, _) = split_payload(stored);
        match stored.split_first() {
            Some((&REQUEST_PLAIN, frame)) => self.dictionaries.decompress(None, frame),
            Some((&REQUEST_WITH_DICTIONARY, rest)) if rest.len() > 8 => {
                let (id, frame) = rest.split_at(8);
                self.dictionaries.decompress(read_u64(id), frame)
            }
            // JSON as received, before requests were compressed.
            _ => Ok(stored.to_vec()),
        }
    }

    /// An exported document written as it was (`Import`): its record with
    /// its request and history, its files in the file log, its
    /// ApplicationResponse. Its derived data wait for `finish_import`.
    pub(crate) fn import_document(&self, d: ExportedDocument) -> StoreResult<()> {
        let ExportedDocument {
            mut record,
            request,
            files,
            history,
            application_response,
        } = d;
        let id = record.id;
        // The request goes to the file log with the files (below), as
        // phase two leaves it; kept once, not also in the record.
        let request = match request {
            Some(json) => {
                record.request = serde_json::Value::Null;
                // No payload hash is exported: the duplicate window is
                // minutes long, and the imported documents are older.
                let payload =
                    payload_log::encode(record.created_at, id, record.company_id, &[0u8; 32]);
                Some(self.pack_request(record.company_id, &json, &payload)?)
            }
            None => None,
        };
        let mut parts = Parts {
            stored_files: None,
            history_lines: history,
        };
        let value = encode_record(&record, &parts)?;
        let value = match &request {
            Some(r) => with_request(&value, r),
            None => value,
        };
        self.documents.insert(id_key(id), value)?;
        if let Some(files) = files {
            let files = files.files().ok_or_else(|| StoreError::Corrupt {
                tree: trees::DOCUMENT_FILES,
                reason: format!("the XML of document {id} is not UTF-8"),
            })?;
            let staged = self.stage_files(id, record.company_id, record.document_type, &files)?;
            parts.stored_files = Some(staged);
            self.documents
                .insert(id_key(id), encode_record(&record, &parts)?)?;
        }
        if let Some(xml) = application_response {
            self.put_application_response_unflushed(id, &xml)?;
        }
        Ok(())
    }

    /// The document's payload in the duplicate window's log; the log
    /// deletes its files past the window as it goes.
    fn remember_payload(
        &self,
        doc: &DocumentRecord,
        record: &[u8; payload_log::RECORD_LEN],
    ) -> StoreResult<()> {
        let window = self
            .payload_window_ms
            .load(std::sync::atomic::Ordering::Relaxed);
        let kept = i64::try_from(window)
            .ok()
            .and_then(|w| w.checked_add(PAYLOAD_SLACK_MS))
            .and_then(chrono::Duration::try_milliseconds)
            .and_then(|d| doc.created_at.checked_sub_signed(d))
            // A window longer than time keeps everything.
            .unwrap_or(DateTime::<Utc>::MIN_UTC);
        self.payloads.append(doc.created_at, record, kept)
    }

    /// Whether a document's files are stored (the record that points at
    /// them exists), without reading them.
    pub(crate) fn has_files(&self, id: u64) -> StoreResult<bool> {
        Ok(self.record_files(id)?.is_some() || self.document_files.contains_key(id_key(id))?)
    }

    /// Where the record's value says the document's files are.
    fn record_files(&self, id: u64) -> StoreResult<Option<StagedFiles>> {
        match self.documents.get(id_key(id))? {
            Some(value) => Ok(Parts::of(&value)?.stored_files),
            None => Ok(None),
        }
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
        self.number_document(new, false)
    }

    fn stage_files(
        &self,
        document_id: u64,
        company: CompanyId,
        document_type: u8,
        files: &DocumentFiles,
    ) -> StoreResult<StagedFiles> {
        let (dictionary, xml) =
            self.dictionaries
                .compress(company, Kind::Xml(document_type), files.xml.as_bytes())?;
        let (zip, zip_at): (&[u8], _) = match &files.zip {
            ZipFile::Stored(bytes) => (bytes, None),
            ZipFile::Derived { at } => (&[], Some(*at)),
        };
        let at = self.files.append(document_id, &xml, zip)?;
        // The request (already compressed) joins the XML in the file log,
        // so a built document keeps nothing in `document_requests`.
        // Its duplicate-window payload goes with it, so the payload log
        // need not be synced with every commit (`payload_log`).
        // A held document's request is there already (phase one).
        let request_at = match self.intents.request_at(document_id) {
            Some(at) => Some(at),
            None => match self.pending_request(document_id)? {
                Some(stored) => {
                    let (packed, payload) = split_payload(&stored);
                    Some(self.files.append(document_id, packed, payload)?)
                }
                None => None,
            },
        };
        Ok(StagedFiles {
            xml_name: files.xml_name.clone(),
            zip_name: files.zip_name.clone(),
            at,
            compressed: true,
            dictionary,
            zip_at,
            request_at,
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
        let value = self.documents.get(id_key(id))?;
        if let Some(stored) = self.pending_request_in(id, value.as_deref())? {
            return self.unpack_request(&stored).map(Some);
        }
        let Some(value) = value else {
            return Ok(None);
        };
        if let Some(at) = Parts::of(&value)?.stored_files.and_then(|f| f.request_at) {
            let (packed, _) = self.files.read(id, &at)?;
            return self.unpack_request(&packed).map(Some);
        }
        let doc: DocumentRecord = decode(trees::DOCUMENTS, &value)?;
        Ok((!doc.request.is_null()).then(|| doc.request.to_string().into_bytes()))
    }

    fn document_files(&self, id: u64) -> StoreResult<Option<DocumentFiles>> {
        let stored = match self.record_files(id)? {
            Some(staged) => Some(StoredFiles::Logged(staged)),
            None => Self::get_decode(&self.document_files, trees::DOCUMENT_FILES, &id_key(id))?,
        };
        match stored {
            None => Ok(None),
            Some(StoredFiles::Inline(f)) => Ok(Some(DocumentFiles {
                xml: f.xml,
                xml_name: f.xml_name,
                zip_name: f.zip_name,
                zip: ZipFile::Stored(f.zip),
            })),
            Some(StoredFiles::Logged(staged)) => {
                let (mut xml, zip) = self.files.read(id, &staged.at)?;
                if staged.compressed {
                    xml = self.dictionaries.decompress(staged.dictionary, &xml)?;
                }
                let xml = String::from_utf8(xml).map_err(|e| StoreError::Corrupt {
                    tree: trees::DOCUMENT_FILES,
                    reason: format!("XML of document {id}: {e}"),
                })?;
                let zip = match staged.zip_at {
                    Some(at) if zip.is_empty() => ZipFile::Derived { at },
                    _ => ZipFile::Stored(zip),
                };
                Ok(Some(DocumentFiles {
                    xml,
                    xml_name: staged.xml_name,
                    zip_name: staged.zip_name,
                    zip,
                }))
            }
        }
    }

    fn document_by_reference(
        &self,
        company: CompanyId,
        reference: &str,
    ) -> StoreResult<Option<u64>> {
        self.find_by_reference(company, reference)
    }

    /// Single-key writes (see `complete_staged`): the record, then its
    /// history line; counts are derived and repaired after a crash.
    fn update_document(&self, doc: &DocumentRecord, history: HistoryEntry) -> StoreResult<()> {
        self.update_document_unflushed(doc, history)?;
        self.flush_now()
    }

    fn history(&self, id: u64) -> StoreResult<Vec<HistoryEntry>> {
        // Lines of data dirs written before records kept them come first.
        let mut lines: Vec<HistoryEntry> = Self::scan_decode(
            &self.document_history,
            trees::DOCUMENT_HISTORY,
            &id.to_be_bytes(),
        )?;
        if let Some(value) = self.documents.get(id_key(id))? {
            lines.extend(Parts::of(&value)?.history_lines);
        }
        Ok(lines)
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
        self.derived.apply_deferred()?;
        let mut out = Vec::new();
        for id in self.documents_by_state.ids(&[PENDING_BUILD], false) {
            // The index may lag a record by a crash; the record wins.
            if let Some(d) = self.document(id?)?.filter(|d| d.pending_build) {
                out.push(d);
            }
        }
        Ok(out)
    }

    fn recent_requests(&self, since: DateTime<Utc>) -> StoreResult<Vec<RecentRequest>> {
        let mut out = Vec::new();
        for r in self.recent_payloads.range(payload_key(since, 0)..) {
            let (k, v) = r?;
            let (Some(us), Some(id), Some(company)) =
                (read_u64(&k), k.get(8..).and_then(read_u64), read_u64(&v))
            else {
                continue;
            };
            let Ok(hash) = <[u8; 32]>::try_from(v.get(8..).unwrap_or_default()) else {
                continue;
            };
            out.push(RecentRequest {
                document_id: id,
                company_id: company,
                created_at: DateTime::from_timestamp_micros(us as i64).unwrap_or_default(),
                payload_hash: hash,
            });
        }
        // Versions before the payload log kept them in the tree above.
        out.extend(self.payloads.since(since)?);
        Ok(out)
    }

    fn monthly_usage(&self, company: CompanyId, period: u32) -> StoreResult<u64> {
        Ok(self.derived.usage(usage_key(company, period))?.0)
    }

    fn list_documents(&self, query: &ListQuery) -> StoreResult<Page<DocumentRecord>> {
        self.list_indexed(query)
    }

    fn search_documents(&self, query: &DocumentSearch) -> StoreResult<SearchPage> {
        self.search_indexed(query)
    }

    fn documents_after(&self, after: u64, limit: usize) -> StoreResult<Vec<DocumentRecord>> {
        let from = after.saturating_add(1);
        let mut out = Vec::with_capacity(limit.min(1024));
        for item in self.documents.range(id_key(from)..).take(limit) {
            let (_, v) = item?;
            out.push(decode(trees::DOCUMENTS, &v)?);
        }
        Ok(out)
    }

    fn document_counts(&self) -> StoreResult<Vec<((u8, u8), u64)>> {
        self.derived.apply_deferred()?;
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
            // A count at zero keeps its key (and token) for the repair.
            .filter(|c| !matches!(c, Ok((_, 0))))
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

    fn events_after(
        &self,
        company: CompanyId,
        after: u64,
        limit: usize,
    ) -> StoreResult<Vec<EventRecord>> {
        Self::scoped_after(&self.events, trees::EVENTS, company, after, limit)
    }
}
