//! An export's records written into an empty sled store (`Import`).
//!
//! Each record goes to its tree under the key the store gives it, with its
//! ids; documents go through the file log as phase two writes them
//! (`documents.rs`). What derives from the records (the document index,
//! the code and reference lookups, the state sets, counts and monthly
//! usage) is not written record by record: [`Import::finish_import`] builds
//! it from every record, as an open does for a data dir written before it,
//! and moves every id sequence past the ids imported.

use crate::encoding::codec::{encode, id_key, read_u64, scoped_key, scoped_text_key};
use crate::encoding::trees;
use crate::engine::sled::lookup::HASHED_INDEXES_KEY;
use crate::engine::sled::repair::{DERIVED_V2_KEY, STATE_SETS_KEY};
use crate::engine::sled::search::NUMBERS_INDEXED_KEY;
use crate::engine::sled::{software_key, SledStore, PAYLOADS_SYNCED_TO};
use crate::error::{StoreError, StoreResult};
use crate::indexes::counts::counter_key;
use crate::indexes::doc_index::INDEX_BUILT_KEY;
use crate::model::export::ExportItem;
use crate::traits::{Import, ReceivedStore};

/// Trees a new store may hold entries in before anything is written.
const NOT_RECORDS: [&str; 2] = [trees::META, trees::DICTIONARIES];

impl Import for SledStore {
    fn check_empty_for_import(&self) -> StoreResult<()> {
        for name in self.db.tree_names() {
            let name = String::from_utf8_lossy(&name).into_owned();
            if name.starts_with("__sled") || NOT_RECORDS.contains(&name.as_str()) {
                continue;
            }
            if !self.db.open_tree(&name)?.is_empty() {
                return Err(StoreError::Conflict(format!(
                    "the data dir already holds records (`{name}`): an import goes into an \
                     empty data dir"
                )));
            }
        }
        Ok(())
    }

    fn import(&self, item: ExportItem) -> StoreResult<()> {
        let _sealing = self.sealing_scope();
        match item {
            ExportItem::Company(c) => {
                self.companies
                    .insert(id_key(c.id), encode(trees::COMPANIES, &c)?)?;
                self.company_by_nit
                    .insert(c.nit.as_bytes(), &id_key(c.id))?;
                self.credentials_changed();
            }
            ExportItem::Software(s) => {
                self.software.insert(
                    software_key(s.company_id, s.kind),
                    encode(trees::SOFTWARE, &s)?,
                )?;
                self.credentials_changed();
            }
            ExportItem::Resolution(r) => {
                self.resolutions.insert(
                    scoped_key(r.company_id, r.id),
                    encode(trees::RESOLUTIONS, &r)?,
                )?;
                self.credentials_changed();
            }
            ExportItem::Counter(c) => {
                self.counters.insert(
                    counter_key(c.company_id, c.resolution_id),
                    &c.next.to_be_bytes(),
                )?;
            }
            ExportItem::Certificate(c) => {
                self.certificates
                    .insert(id_key(c.company_id), encode(trees::CERTIFICATES, &c)?)?;
                self.credentials_changed();
            }
            ExportItem::ApiKey(k) => {
                self.api_keys
                    .insert(id_key(k.id), encode(trees::API_KEYS, &k)?)?;
                self.api_key_by_hash
                    .insert(k.hash.as_bytes(), &id_key(k.id))?;
            }
            ExportItem::Customer(c) => {
                self.customer_by_ident.insert(
                    scoped_text_key(c.company_id, &c.identification_number),
                    &id_key(c.id),
                )?;
                self.add_customer_words(c.company_id, c.id, &c.name)?;
                self.customers.insert(
                    scoped_key(c.company_id, c.id),
                    encode(trees::CUSTOMERS, &c)?,
                )?;
            }
            ExportItem::Setting(s) => {
                self.meta
                    .insert(format!("setting:{}", s.key).as_bytes(), s.value.as_bytes())?;
            }
            ExportItem::Document(d) => self.import_document(*d)?,
            ExportItem::Job(job) => {
                self.put_job_unflushed(job)?;
            }
            ExportItem::EmailLog(log) => self.write_email_log(&log)?,
            ExportItem::Event(e) => {
                self.events
                    .insert(scoped_key(e.company_id, e.id), encode(trees::EVENTS, &e)?)?;
            }
            ExportItem::Received(r) => {
                self.import_received(r.record, r.upload)?;
            }
            ExportItem::EventFiles(f) => self.put_event_files(f.event_id, &f.files)?,
            ExportItem::NumberingHold(hold) => self.put_hold(&hold)?,
        }
        Ok(())
    }

    fn finish_import(&self) -> StoreResult<()> {
        let last_of = |tree: &sled::Tree| -> StoreResult<u64> {
            Ok(tree.last()?.and_then(|(k, _)| read_u64(&k)).unwrap_or(0))
        };
        // Trees keyed `owner ‖ id`: the largest id is anywhere.
        let max_scoped = |tree: &sled::Tree| -> StoreResult<u64> {
            let mut max = 0;
            for item in tree.iter() {
                let (k, _) = item?;
                max = max.max(k.get(8..16).and_then(read_u64).unwrap_or(0));
            }
            Ok(max)
        };
        let mut event_ids = last_of(&self.db.open_tree(trees::EVENT_FILES)?)?;
        let mut after = 0;
        loop {
            let page = self.received_after(after, 1024)?;
            let Some(last) = page.last() else { break };
            after = last.id;
            for r in &page {
                event_ids = r.events.iter().map(|e| e.id).fold(event_ids, u64::max);
            }
        }
        let sequences = [
            (trees::COMPANIES, last_of(&self.companies)?),
            (trees::RESOLUTIONS, max_scoped(&self.resolutions)?),
            (trees::API_KEYS, last_of(&self.api_keys)?),
            (trees::CUSTOMERS, max_scoped(&self.customers)?),
            (trees::DOCUMENTS, last_of(&self.documents)?),
            (trees::JOBS, last_of(&self.jobs)?),
            (trees::EVENTS, max_scoped(&self.events)?),
            (trees::EMAIL_LOGS, last_of(&self.email_logs)?),
            (
                trees::RECEIVED,
                last_of(&self.db.open_tree(trees::RECEIVED)?)?,
            ),
            (trees::EVENT_FILES, event_ids),
        ];
        for (name, max) in sequences {
            let key = format!("seq:{name}");
            self.meta.update_and_fetch(key.as_bytes(), |v| {
                let current = v.and_then(read_u64).unwrap_or(0);
                Some(current.max(max).to_be_bytes().to_vec())
            })?;
        }
        // Built from the records, as an open builds them for a data dir
        // written before them.
        for mark in [
            DERIVED_V2_KEY,
            STATE_SETS_KEY,
            INDEX_BUILT_KEY,
            HASHED_INDEXES_KEY,
            NUMBERS_INDEXED_KEY,
        ] {
            self.meta.remove(mark)?;
        }
        self.build_hashed_indexes_once()?;
        self.build_number_index_once()?;
        self.repair_derived()?;
        self.build_state_index_once()?;
        self.build_index_once()?;
        let newest = self.documents.last()?.and_then(|(k, _)| read_u64(&k));
        self.derived.mark_pending_written(newest.unwrap_or(0))?;
        // The imported requests' payload records carry no hash: none
        // joins the duplicate window.
        self.files.sync()?;
        self.meta
            .insert(PAYLOADS_SYNCED_TO, &self.files.end().to_bytes())?;
        self.credentials_changed();
        self.flush_now()
    }
}
