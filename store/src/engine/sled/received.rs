//! Received invoices and their events on sled. A record and its indexes
//! (by uploading company and CUFE, the vouched record by CUFE, by buyer,
//! eligible by holder, the counters of both lists, the uploads not yet
//! compared with the authority's copy) change together in one sled
//! transaction, guarded by the record's version: two writers of one
//! invoice never both win.

use sled::transaction::{ConflictableTransactionError, TransactionalTree};
use sled::{Transactional, Tree};

use crate::encoding::codec::{decode, encode, id_key, read_u64, scoped_text_key};
use crate::encoding::trees;
use crate::engine::sled::{abort, tx_encode, SledStore, TxResult};
use crate::error::{StoreError, StoreResult};
use crate::model::received::{CopyState, EventFiles, ReceivedInvoice};
use crate::model::{CompanyId, Environment, Page};
use crate::traits::ReceivedStore;

const BUYER: u8 = b'b';
const ELIGIBLE: u8 = b'e';

/// Whose list an entry is in: a company in one environment. The lists of
/// received and eligible invoices are kept apart per environment, so a
/// test key never pages through production invoices.
type Owner = (CompanyId, Environment);

/// `company ‖ environment`: the prefix of an owner's list entries.
fn owner_prefix((company, env): Owner) -> [u8; 9] {
    let mut k = [0u8; 9];
    k[..8].copy_from_slice(&company.to_be_bytes());
    k[8] = env.authority_code();
    k
}

/// `company ‖ environment ‖ id`: one entry of an owner's list.
fn entry_key(owner: Owner, id: u64) -> [u8; 17] {
    let mut k = [0u8; 17];
    k[..9].copy_from_slice(&owner_prefix(owner));
    k[9..].copy_from_slice(&id.to_be_bytes());
    k
}

fn count_key(kind: u8, owner: Owner) -> [u8; 10] {
    let mut k = [0u8; 10];
    k[0] = kind;
    k[1..].copy_from_slice(&owner_prefix(owner));
    k
}

fn bump(counts: &TransactionalTree, kind: u8, owner: Owner, delta: i64) -> TxResult<()> {
    let key = count_key(kind, owner);
    let current = counts.get(key)?.and_then(|v| read_u64(&v)).unwrap_or(0);
    let next = current.saturating_add_signed(delta);
    counts.insert(key.to_vec(), next.to_be_bytes().to_vec())?;
    Ok(())
}

/// Moves one index entry from `old` to `new` (either may be absent).
fn reindex(
    index: &TransactionalTree,
    counts: &TransactionalTree,
    kind: u8,
    id: u64,
    old: Option<Owner>,
    new: Option<Owner>,
) -> TxResult<()> {
    if old == new {
        return Ok(());
    }
    if let Some(o) = old {
        if index.remove(entry_key(o, id).to_vec())?.is_some() {
            bump(counts, kind, o, -1)?;
        }
    }
    if let Some(o) = new {
        if index
            .insert(entry_key(o, id).to_vec(), Vec::<u8>::new())?
            .is_none()
        {
            bump(counts, kind, o, 1)?;
        }
    }
    Ok(())
}

fn buyer_owner(r: &ReceivedInvoice) -> Option<Owner> {
    r.buyer.company_id.map(|c| (c, r.environment))
}

fn eligible_owner(r: &ReceivedInvoice) -> Option<Owner> {
    r.holder
        .company_id
        .filter(|_| r.eligible)
        .map(|c| (c, r.environment))
}

/// Marks that the received records are keyed by uploading company.
const KEYED_BY_COMPANY_KEY: &[u8] = b"received_keyed_by_company";
/// Marks that the lists by buyer and eligible by holder are kept per
/// environment.
const LISTS_BY_ENVIRONMENT_KEY: &[u8] = b"received_lists_by_environment";

impl SledStore {
    fn tree(&self, name: &str) -> StoreResult<Tree> {
        Ok(self.db.open_tree(name)?)
    }

    fn page_of(
        &self,
        index: &str,
        kind: u8,
        owner: Owner,
        page: u32,
        limit: u32,
    ) -> StoreResult<Page<ReceivedInvoice>> {
        let index = self.tree(index)?;
        let records = self.tree(trees::RECEIVED)?;
        let total = self
            .tree(trees::RECEIVED_COUNTS)?
            .get(count_key(kind, owner))?
            .and_then(|v| read_u64(&v))
            .unwrap_or(0);
        let skip = (page.max(1) as usize - 1).saturating_mul(limit as usize);
        let mut items = Vec::with_capacity(limit as usize);
        for entry in index
            .scan_prefix(owner_prefix(owner))
            .rev()
            .skip(skip)
            .take(limit as usize)
        {
            let (key, _) = entry?;
            let Some(id) = key.get(9..).and_then(read_u64) else {
                continue;
            };
            if let Some(v) = records.get(id_key(id))? {
                items.push(decode(trees::RECEIVED, &v)?);
            }
        }
        Ok(Page {
            items,
            page: page.max(1),
            limit,
            total,
        })
    }

    /// [`ReceivedStore::save_received`] without the flush (the async store
    /// runs it on the flusher).
    pub(crate) fn save_received_unflushed(
        &self,
        record: ReceivedInvoice,
        upload: Option<String>,
    ) -> StoreResult<ReceivedInvoice> {
        self.write_received(record, upload, false)
    }

    /// An exported received invoice written as it was: its id and version
    /// kept, indexed like a new one.
    pub(crate) fn import_received(
        &self,
        record: ReceivedInvoice,
        upload: Option<String>,
    ) -> StoreResult<ReceivedInvoice> {
        self.write_received(record, upload, true)
    }

    fn write_received(
        &self,
        mut record: ReceivedInvoice,
        upload: Option<String>,
        imported: bool,
    ) -> StoreResult<ReceivedInvoice> {
        let new = record.id == 0 || imported;
        if record.id == 0 {
            record.id = self.next_seq_now(trees::RECEIVED)?;
        }
        let id = record.id;
        let expected = record.version;
        if !imported {
            record.version += 1;
        }
        let (records, by_cufe, by_buyer, eligible, counts, files, by_company, unchecked) = (
            self.tree(trees::RECEIVED)?,
            self.tree(trees::RECEIVED_BY_CUFE)?,
            self.tree(trees::RECEIVED_BY_BUYER)?,
            self.tree(trees::ELIGIBLE_BY_HOLDER)?,
            self.tree(trees::RECEIVED_COUNTS)?,
            self.tree(trees::RECEIVED_FILES)?,
            self.tree(trees::RECEIVED_BY_COMPANY)?,
            self.tree(trees::RECEIVED_UNCHECKED)?,
        );
        let vouched = record.authority_copy.state == CopyState::Same;
        let stored = (
            &records,
            &by_cufe,
            &by_buyer,
            &eligible,
            &counts,
            &files,
            &by_company,
            &unchecked,
        )
            .transaction(
                |(records, by_cufe, by_buyer, eligible, counts, files, by_company, unchecked)| {
                    let old: Option<ReceivedInvoice> = match records.get(id_key(id))? {
                        Some(v) => Some(
                            decode(trees::RECEIVED, &v)
                                .map_err(ConflictableTransactionError::Abort)?,
                        ),
                        None => None,
                    };
                    let cufe_holder = by_cufe
                        .get(record.cufe.as_bytes())?
                        .and_then(|v| read_u64(&v));
                    if new {
                        if let Some(company) = record.uploaded_by {
                            let key = scoped_text_key(company, &record.cufe);
                            if let Some(existing) = by_company.get(&key)? {
                                let id = read_u64(&existing).unwrap_or(0);
                                return abort(StoreError::DuplicateReference { id });
                            }
                            by_company.insert(key, id_key(id).to_vec())?;
                        }
                        if let (true, Some(existing)) = (vouched, cufe_holder) {
                            return abort(StoreError::DuplicateReference { id: existing });
                        }
                    } else {
                        match &old {
                            Some(o) if o.version == expected => {}
                            Some(_) => {
                                return abort(StoreError::Conflict(
                                    "the invoice changed meanwhile; try again".into(),
                                ))
                            }
                            None => return abort(StoreError::NotFound("received invoice")),
                        }
                    }
                    match cufe_holder {
                        None if vouched => {
                            by_cufe.insert(record.cufe.as_bytes(), id_key(id).to_vec())?;
                        }
                        Some(holder) if holder == id && !vouched => {
                            by_cufe.remove(record.cufe.as_bytes())?;
                        }
                        _ => {}
                    }
                    if record.authority_copy.state == CopyState::Unchecked {
                        unchecked.insert(id_key(id).to_vec(), Vec::<u8>::new())?;
                    } else {
                        unchecked.remove(id_key(id).to_vec())?;
                    }
                    reindex(
                        by_buyer,
                        counts,
                        BUYER,
                        id,
                        old.as_ref().and_then(buyer_owner),
                        buyer_owner(&record),
                    )?;
                    reindex(
                        eligible,
                        counts,
                        ELIGIBLE,
                        id,
                        old.as_ref().and_then(eligible_owner),
                        eligible_owner(&record),
                    )?;
                    if let Some(xml) = &upload {
                        files.insert(id_key(id).to_vec(), xml.as_bytes())?;
                    }
                    records.insert(id_key(id).to_vec(), tx_encode(trees::RECEIVED, &record)?)?;
                    Ok(())
                },
            );
        stored?;
        Ok(record)
    }
}

impl SledStore {
    /// Once per data dir written before uploads were compared with the
    /// authority's copy, where one record per CUFE was everyone's: each
    /// upload becomes its uploader's (keyed by company and CUFE), stops
    /// being the CUFE's record and waits to be compared; a record issued
    /// here stays the CUFE's. Redone whole if interrupted (each step is
    /// idempotent); returns the records seen, `None` when done before.
    pub(crate) fn key_received_by_company_once(&self) -> StoreResult<Option<u64>> {
        if self.meta.get(KEYED_BY_COMPANY_KEY)?.is_some() {
            return Ok(None);
        }
        let records = self.tree(trees::RECEIVED)?;
        let (by_cufe, by_company, unchecked) = (
            self.tree(trees::RECEIVED_BY_CUFE)?,
            self.tree(trees::RECEIVED_BY_COMPANY)?,
            self.tree(trees::RECEIVED_UNCHECKED)?,
        );
        let mut seen = 0;
        for item in records.iter() {
            let (key, value) = item?;
            let mut record: ReceivedInvoice = decode(trees::RECEIVED, &value)?;
            match record.uploaded_by {
                Some(company) => {
                    by_company.insert(scoped_text_key(company, &record.cufe), &key)?;
                    let holder = by_cufe
                        .get(record.cufe.as_bytes())?
                        .and_then(|v| read_u64(&v));
                    if holder == Some(record.id) {
                        by_cufe.remove(record.cufe.as_bytes())?;
                    }
                    if record.authority_copy.state == CopyState::Unchecked {
                        unchecked.insert(&key, Vec::<u8>::new())?;
                    }
                }
                None if record.authority_copy.state != CopyState::Same => {
                    record.authority_copy.state = CopyState::Same;
                    records.insert(&key, encode(trees::RECEIVED, &record)?)?;
                }
                None => {}
            }
            seen += 1;
        }
        self.meta.insert(KEYED_BY_COMPANY_KEY, &[1u8])?;
        self.flush_now()?;
        Ok(Some(seen))
    }
}

impl SledStore {
    /// Once per data dir whose lists by buyer and eligible by holder were
    /// kept per company only (both environments in one list): both lists
    /// and their counters are built again from the records, per company
    /// and environment. Redone whole if interrupted (it starts by clearing
    /// them); returns the records seen, `None` when done before.
    pub(crate) fn list_received_by_environment_once(&self) -> StoreResult<Option<u64>> {
        if self.meta.get(LISTS_BY_ENVIRONMENT_KEY)?.is_some() {
            return Ok(None);
        }
        let records = self.tree(trees::RECEIVED)?;
        let (by_buyer, eligible, counts) = (
            self.tree(trees::RECEIVED_BY_BUYER)?,
            self.tree(trees::ELIGIBLE_BY_HOLDER)?,
            self.tree(trees::RECEIVED_COUNTS)?,
        );
        by_buyer.clear()?;
        eligible.clear()?;
        counts.clear()?;
        let mut seen = 0;
        let mut totals = std::collections::BTreeMap::<[u8; 10], u64>::new();
        for item in records.iter() {
            let (_, value) = item?;
            let record: ReceivedInvoice = decode(trees::RECEIVED, &value)?;
            for (index, kind, owner) in [
                (&by_buyer, BUYER, buyer_owner(&record)),
                (&eligible, ELIGIBLE, eligible_owner(&record)),
            ] {
                if let Some(owner) = owner {
                    index.insert(entry_key(owner, record.id), Vec::<u8>::new())?;
                    *totals.entry(count_key(kind, owner)).or_default() += 1;
                }
            }
            seen += 1;
        }
        for (key, total) in totals {
            counts.insert(key, total.to_be_bytes().to_vec())?;
        }
        self.meta.insert(LISTS_BY_ENVIRONMENT_KEY, &[1u8])?;
        self.flush_now()?;
        Ok(Some(seen))
    }
}

impl ReceivedStore for SledStore {
    fn received(&self, id: u64) -> StoreResult<Option<ReceivedInvoice>> {
        Self::get_decode(&self.tree(trees::RECEIVED)?, trees::RECEIVED, &id_key(id))
    }

    fn received_by_cufe(&self, cufe: &str) -> StoreResult<Option<ReceivedInvoice>> {
        match self.tree(trees::RECEIVED_BY_CUFE)?.get(cufe.as_bytes())? {
            Some(v) => match read_u64(&v) {
                Some(id) => self.received(id),
                None => Ok(None),
            },
            None => Ok(None),
        }
    }

    fn received_upload_of(
        &self,
        company: CompanyId,
        cufe: &str,
    ) -> StoreResult<Option<ReceivedInvoice>> {
        let key = scoped_text_key(company, cufe);
        match self.tree(trees::RECEIVED_BY_COMPANY)?.get(key)? {
            Some(v) => match read_u64(&v) {
                Some(id) => self.received(id),
                None => Ok(None),
            },
            None => Ok(None),
        }
    }

    fn unchecked_received(&self) -> StoreResult<Vec<u64>> {
        let mut ids = Vec::new();
        for item in self.tree(trees::RECEIVED_UNCHECKED)?.iter() {
            let (key, _) = item?;
            if let Some(id) = read_u64(&key) {
                ids.push(id);
            }
        }
        Ok(ids)
    }

    fn save_received(
        &self,
        record: ReceivedInvoice,
        upload: Option<String>,
    ) -> StoreResult<ReceivedInvoice> {
        let stored = self.save_received_unflushed(record, upload)?;
        self.flush_now()?;
        Ok(stored)
    }

    fn received_page(
        &self,
        buyer: CompanyId,
        environment: Environment,
        page: u32,
        limit: u32,
    ) -> StoreResult<Page<ReceivedInvoice>> {
        let owner = (buyer, environment);
        self.page_of(trees::RECEIVED_BY_BUYER, BUYER, owner, page, limit)
    }

    fn eligible_page(
        &self,
        holder: CompanyId,
        environment: Environment,
        page: u32,
        limit: u32,
    ) -> StoreResult<Page<ReceivedInvoice>> {
        let owner = (holder, environment);
        self.page_of(trees::ELIGIBLE_BY_HOLDER, ELIGIBLE, owner, page, limit)
    }

    fn received_upload(&self, id: u64) -> StoreResult<Option<String>> {
        Ok(self
            .tree(trees::RECEIVED_FILES)?
            .get(id_key(id))?
            .map(|v| String::from_utf8_lossy(&v).into_owned()))
    }

    fn next_event_id(&self) -> StoreResult<u64> {
        self.next_seq_now(trees::EVENT_FILES)
    }

    fn put_event_files(&self, event_id: u64, files: &EventFiles) -> StoreResult<()> {
        self.tree(trees::EVENT_FILES)?
            .insert(id_key(event_id), encode(trees::EVENT_FILES, files)?)?;
        Ok(())
    }

    fn event_files(&self, event_id: u64) -> StoreResult<Option<EventFiles>> {
        Self::get_decode(
            &self.tree(trees::EVENT_FILES)?,
            trees::EVENT_FILES,
            &id_key(event_id),
        )
    }

    fn received_after(&self, after: u64, limit: usize) -> StoreResult<Vec<ReceivedInvoice>> {
        let mut out = Vec::new();
        for item in self
            .tree(trees::RECEIVED)?
            .range(id_key(after.saturating_add(1))..)
            .take(limit)
        {
            let (_, v) = item?;
            out.push(decode(trees::RECEIVED, &v)?);
        }
        Ok(out)
    }

    fn document_by_code(&self, code: &str) -> StoreResult<Option<u64>> {
        self.find_by_code(code)
    }
}

#[cfg(test)]
mod tests {
    use chrono::{NaiveDate, Utc};

    use super::*;
    use crate::encoding::codec::scoped_key;
    use crate::model::received::{CopyCheck, PartyRef};
    use crate::model::Environment;
    use crate::{CompanyStore, CredentialStore, DocumentStore};

    fn party(nit: &str, company: Option<u64>) -> PartyRef {
        PartyRef {
            id_number: nit.into(),
            id_type: "31".into(),
            check_digit: None,
            name: format!("Empresa {nit}"),
            company_id: company,
        }
    }

    fn invoice(cufe: &str) -> ReceivedInvoice {
        let now = Utc::now();
        ReceivedInvoice {
            id: 0,
            version: 0,
            cufe: cufe.into(),
            environment: Environment::Test,
            number: "SETP990000001".into(),
            type_code: "01".into(),
            issue_date: NaiveDate::from_ymd_opt(2026, 1, 2).unwrap(),
            due_date: None,
            currency: "COP".into(),
            total: "1190.00".into(),
            vendor: party("900000001", Some(1)),
            buyer: party("800197268", Some(2)),
            holder: party("900000001", Some(1)),
            uploaded_by: Some(2),
            document_id: None,
            eligible: false,
            authority_copy: CopyCheck::same("equal"),
            events: Vec::new(),
            created_at: now,
            updated_at: now,
        }
    }

    #[test]
    fn one_record_per_cufe_written_by_version_with_its_indexes() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::tests::open(dir.path());
        let first = store
            .save_received(invoice("c1"), Some("<Invoice/>".into()))
            .unwrap();
        assert_eq!((first.id, first.version), (1, 1));
        match store.save_received(invoice("c1"), None) {
            Err(StoreError::DuplicateReference { id }) => assert_eq!(id, 1),
            other => panic!("{other:?}"),
        }
        let second = store.save_received(invoice("c2"), None).unwrap();
        assert_eq!(
            store.received_upload(1).unwrap().as_deref(),
            Some("<Invoice/>")
        );
        assert_eq!(
            store.received_by_cufe("c2").unwrap().map(|r| r.id),
            Some(second.id)
        );

        // The buyer's list, newest first, with its total.
        let page = store.received_page(2, Environment::Test, 1, 1).unwrap();
        assert_eq!((page.total, page.items[0].id), (2, second.id));
        assert_eq!(
            store
                .received_page(2, Environment::Test, 2, 1)
                .unwrap()
                .items[0]
                .id,
            1
        );
        assert_eq!(
            store
                .received_page(1, Environment::Test, 1, 20)
                .unwrap()
                .total,
            0
        );

        // A stale version loses; eligibility moves with the holder.
        let mut stale = first.clone();
        let mut current = first;
        current.eligible = true;
        let current = store.save_received(current, None).unwrap();
        stale.eligible = true;
        assert!(matches!(
            store.save_received(stale, None),
            Err(StoreError::Conflict(_))
        ));
        assert_eq!(
            store
                .eligible_page(1, Environment::Test, 1, 20)
                .unwrap()
                .total,
            1
        );
        let mut endorsed = current;
        endorsed.holder = party("901234567", Some(3));
        store.save_received(endorsed.clone(), None).unwrap();
        assert_eq!(
            store
                .eligible_page(1, Environment::Test, 1, 20)
                .unwrap()
                .total,
            0
        );
        let held = store.eligible_page(3, Environment::Test, 1, 20).unwrap();
        assert_eq!((held.total, held.items[0].cufe.as_str()), (1, "c1"));
    }

    #[test]
    fn uploads_are_each_company_s_and_only_a_vouched_one_is_the_cufe_s() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::tests::open(dir.path());
        // Company 3 uploads something that is not the authority's copy.
        let mut forged = invoice("c1");
        forged.uploaded_by = Some(3);
        forged.buyer = party("900000003", Some(3));
        forged.authority_copy = CopyCheck::differs("not the authority's");
        let forged = store.save_received(forged, Some("<x/>".into())).unwrap();
        assert_eq!(store.received_by_cufe("c1").unwrap(), None);
        // The real buyer's upload is not locked out, and is the CUFE's.
        let genuine = store.save_received(invoice("c1"), None).unwrap();
        assert_ne!(genuine.id, forged.id);
        assert_eq!(
            store.received_by_cufe("c1").unwrap().map(|r| r.id),
            Some(genuine.id)
        );
        assert_eq!(
            store.received_upload_of(3, "c1").unwrap().map(|r| r.id),
            Some(forged.id)
        );
        assert_eq!(
            store.received_upload_of(2, "c1").unwrap().map(|r| r.id),
            Some(genuine.id)
        );
        // Each company uploads a CUFE once; a second vouched record of a
        // CUFE is refused (its id given).
        assert!(matches!(
            store.save_received(invoice("c1"), None),
            Err(StoreError::DuplicateReference { id }) if id == genuine.id
        ));
        let mut adopted = invoice("c1");
        adopted.uploaded_by = None;
        assert!(matches!(
            store.save_received(adopted, None),
            Err(StoreError::DuplicateReference { id }) if id == genuine.id
        ));
        // One that stops being vouched stops being the CUFE's.
        let mut flagged = genuine;
        flagged.authority_copy = CopyCheck::differs("x");
        let flagged = store.save_received(flagged, None).unwrap();
        assert_eq!(store.received_by_cufe("c1").unwrap(), None);
        // An unchecked one waits to be compared, then becomes the CUFE's.
        let mut unchecked = flagged;
        unchecked.authority_copy = CopyCheck::default();
        let unchecked = store.save_received(unchecked, None).unwrap();
        assert_eq!(store.unchecked_received().unwrap(), vec![unchecked.id]);
        let mut same = unchecked;
        same.authority_copy = CopyCheck::same("equal");
        let same = store.save_received(same, None).unwrap();
        assert!(store.unchecked_received().unwrap().is_empty());
        assert_eq!(
            store.received_by_cufe("c1").unwrap().map(|r| r.id),
            Some(same.id)
        );
    }

    #[test]
    fn each_environment_has_its_own_lists() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::tests::open(dir.path());
        let mut test = invoice("t1");
        test.eligible = true;
        store.save_received(test, None).unwrap();
        let mut live = invoice("l1");
        live.environment = Environment::Live;
        live.eligible = true;
        let live = store.save_received(live, None).unwrap();
        let live_page = store.received_page(2, Environment::Live, 1, 20).unwrap();
        assert_eq!((live_page.total, live_page.items.len()), (1, 1));
        assert_eq!(live_page.items[0].id, live.id);
        let test_page = store.received_page(2, Environment::Test, 1, 20).unwrap();
        assert_eq!(
            (test_page.total, test_page.items[0].cufe.as_str()),
            (1, "t1")
        );
        let held = store.eligible_page(1, Environment::Live, 1, 20).unwrap();
        assert_eq!((held.total, held.items[0].cufe.as_str()), (1, "l1"));
        assert_eq!(
            store
                .eligible_page(1, Environment::Test, 1, 20)
                .unwrap()
                .total,
            1
        );
    }

    /// A data dir whose lists were per company only (`company ‖ id` keys,
    /// `kind ‖ company` counters, no mark) has them rebuilt per
    /// environment at open.
    #[test]
    fn a_data_dir_with_lists_per_company_is_listed_per_environment_at_open() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = crate::tests::open(dir.path());
            let mut test = invoice("t1");
            test.eligible = true;
            let test = store.save_received(test, None).unwrap();
            let mut live = invoice("l1");
            live.environment = Environment::Live;
            let live = store.save_received(live, None).unwrap();
            // What the format before wrote for those two records.
            let (by_buyer, eligible, counts) = (
                store.tree(trees::RECEIVED_BY_BUYER).unwrap(),
                store.tree(trees::ELIGIBLE_BY_HOLDER).unwrap(),
                store.tree(trees::RECEIVED_COUNTS).unwrap(),
            );
            for tree in [&by_buyer, &eligible, &counts] {
                tree.clear().unwrap();
            }
            for id in [test.id, live.id] {
                by_buyer
                    .insert(scoped_key(2, id), Vec::<u8>::new())
                    .unwrap();
            }
            eligible
                .insert(scoped_key(1, test.id), Vec::<u8>::new())
                .unwrap();
            let old_count = |kind: u8, company: u64, n: u64| {
                let mut k = vec![kind];
                k.extend_from_slice(&company.to_be_bytes());
                counts.insert(k, n.to_be_bytes().to_vec()).unwrap();
            };
            old_count(BUYER, 2, 2);
            old_count(ELIGIBLE, 1, 1);
            store.meta.remove(LISTS_BY_ENVIRONMENT_KEY).unwrap();
            store.close().unwrap();
        }
        let store = crate::tests::open(dir.path());
        let test = store.received_page(2, Environment::Test, 1, 20).unwrap();
        assert_eq!((test.total, test.items[0].cufe.as_str()), (1, "t1"));
        let live = store.received_page(2, Environment::Live, 1, 20).unwrap();
        assert_eq!((live.total, live.items[0].cufe.as_str()), (1, "l1"));
        assert_eq!(
            store
                .eligible_page(1, Environment::Test, 1, 20)
                .unwrap()
                .total,
            1
        );
        assert_eq!(
            store
                .eligible_page(1, Environment::Live, 1, 20)
                .unwrap()
                .total,
            0
        );
        // Writes after the rebuild keep the counters right.
        let mut again = store.received_by_cufe("t1").unwrap().unwrap();
        again.eligible = false;
        store.save_received(again, None).unwrap();
        assert_eq!(
            store
                .eligible_page(1, Environment::Test, 1, 20)
                .unwrap()
                .total,
            0
        );
    }

    #[test]
    fn a_data_dir_with_one_record_per_cufe_is_keyed_by_uploader_at_open() {
        let dir = tempfile::tempdir().unwrap();
        let (uploaded, issued) = {
            let store = crate::tests::open(dir.path());
            // What the format before wrote: the record under its CUFE
            // alone, no copy state, no key by company, no mark.
            let put = |id: u64, r: &ReceivedInvoice| {
                let mut v: serde_json::Value = serde_json::to_value(r).unwrap();
                v.as_object_mut().unwrap().remove("authority_copy");
                store
                    .tree(trees::RECEIVED)
                    .unwrap()
                    .insert(id_key(id), encode(trees::RECEIVED, &v).unwrap())
                    .unwrap();
                store
                    .tree(trees::RECEIVED_BY_CUFE)
                    .unwrap()
                    .insert(r.cufe.as_bytes(), &id_key(id))
                    .unwrap();
            };
            let mut uploaded = invoice("c1");
            uploaded.id = 1;
            uploaded.uploaded_by = Some(7);
            put(1, &uploaded);
            let mut issued = invoice("c2");
            issued.id = 2;
            issued.uploaded_by = None;
            put(2, &issued);
            store.meta.remove(KEYED_BY_COMPANY_KEY).unwrap();
            store.close().unwrap();
            (uploaded, issued)
        };
        let store = crate::tests::open(dir.path());
        let r = store.received_upload_of(7, "c1").unwrap().unwrap();
        assert_eq!(
            (r.id, r.authority_copy.state),
            (uploaded.id, CopyState::Unchecked)
        );
        assert_eq!(store.received_by_cufe("c1").unwrap(), None);
        assert_eq!(store.unchecked_received().unwrap(), vec![1]);
        let i = store.received_by_cufe("c2").unwrap().unwrap();
        assert_eq!((i.id, i.authority_copy.state), (issued.id, CopyState::Same));
        // The real buyer's upload is not locked out.
        let mut genuine = invoice("c1");
        genuine.uploaded_by = Some(2);
        store.save_received(genuine, None).unwrap();
    }

    #[test]
    fn documents_are_found_by_code() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::tests::open(dir.path());
        let c = store.create_company(crate::tests::company()).unwrap();
        let r = store
            .add_resolution(c.id, crate::tests::resolution(1, 100))
            .unwrap();
        let mut d = store
            .create_document(crate::tests::new_doc(&r, None))
            .unwrap();
        d.pending_build = false;
        d.code = Some("abc".into());
        store.index_code_unflushed(d.id, d.code.as_deref()).unwrap();
        store.index_code_unflushed(43, None).unwrap();
        store
            .update_document(&d, crate::tests::history("built"))
            .unwrap();
        assert_eq!(store.document_by_code("abc").unwrap(), Some(d.id));
        assert_eq!(store.document_by_code("zzz").unwrap(), None);
        // An entry whose record does not hold the code is no answer.
        store.index_code_unflushed(99, Some("zzz")).unwrap();
        store.index_code_unflushed(d.id, Some("zzz")).unwrap();
        assert_eq!(store.document_by_code("zzz").unwrap(), None);
    }
}
