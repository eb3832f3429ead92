//! The store crate's tests: the sled engine through the store traits, and
//! what each folder promises (`flush`, `index`, `intents`, `mail`,
//! `sealing`, `space`); `db` opens a sled database a dropped store may
//! still hold.

pub(crate) mod db;
mod export;
mod flush;
mod handle;
pub(crate) mod index;
mod intents;
mod leases;
mod mail;
mod postgres;
mod postgres_tls;
mod sealing;
mod search;
mod space;

use chrono::{NaiveDate, Utc};

use crate::engine::sled::RECENT_CUSTOMERS as RECENT_CUSTOMERS_FOR_TESTS;
use crate::*;

/// Opens the store in `dir`, waiting a moment while a store just dropped
/// in this process still holds the lock: sled lets a log write it spawned
/// on its own IO threads finish after the last handle is gone.
pub(crate) fn open_with_keys(
    dir: &std::path::Path,
    keys: impl Fn() -> Keyring,
) -> StoreResult<SledStore> {
    for _ in 0..100 {
        match SledStore::open(dir, keys()) {
            Err(StoreError::Locked(_)) => std::thread::sleep(std::time::Duration::from_millis(20)),
            other => return other,
        }
    }
    panic!("the store in {dir:?} stayed locked");
}

pub(crate) fn open(dir: &std::path::Path) -> SledStore {
    open_with_keys(dir, keys).unwrap()
}

/// The master key of these tests.
pub(crate) fn keys() -> Keyring {
    Keyring::new(MasterKey::from_bytes(&[7u8; 32]).unwrap())
}

pub(crate) fn company() -> NewCompany {
    NewCompany {
        nit: "900000001".into(),
        dv: 9,
        name: "Demo S.A.S.".into(),
        trade_name: None,
        address: "Calle 1".into(),
        municipality_code: "11001".into(),
        municipality_name: "Bogotá".into(),
        department_code: "11".into(),
        department_name: "Bogotá D.C.".into(),
        email: None,
        phone: None,
        organization_type: 1,
        tax_regime: "48".into(),
        tax_responsibilities: "O-13".into(),
        rate_limit_per_minute: None,
        monthly_document_limit: None,
        demo: false,
    }
}

/// A testing key of `company` (its hash `ab…`).
pub(crate) fn test_key(company: CompanyId) -> ApiKeyRecord {
    ApiKeyRecord {
        id: 0,
        company_id: company,
        environment: Environment::Test,
        hash: "ab".repeat(32),
        display_prefix: "sk_test_ab".into(),
        label: None,
        user_id: None,
        created_at: Utc::now(),
        revoked_at: None,
    }
}

pub(crate) fn resolution(from: u64, to: u64) -> NewResolution {
    NewResolution {
        document_type: 1,
        also_serves: Vec::new(),
        resolution_number: "18760000001".into(),
        resolution_date: NaiveDate::from_ymd_opt(2019, 1, 19).unwrap(),
        prefix: "SETP".into(),
        from,
        to,
        valid_from: NaiveDate::from_ymd_opt(2019, 1, 19).unwrap(),
        valid_to: NaiveDate::from_ymd_opt(2030, 1, 19).unwrap(),
        technical_key: "fc8eac422eba16e22ffd8c6f94b3f40a6e38162c".into(),
    }
}

pub(crate) fn new_doc(r: &NumberingResolution, reference: Option<&str>) -> NewDocument {
    NewDocument {
        company_id: r.company_id,
        environment: Environment::Test,
        user_id: None,
        document_type: r.document_type,
        resolution_id: r.id,
        issue_date: NaiveDate::from_ymd_opt(2026, 11, 22).unwrap(),
        external_reference: reference.map(str::to_string),
        customer: None,
        request: b"{}".to_vec(),
        payload_hash: [0; 32],
        api: None,
        list_keys: Default::default(),
        monthly_limit: None,
        period: 202611,
        queued: false,
        issued_at: None,
    }
}

/// Phase two of a half-built document with a one-byte ZIP: staged and
/// committed as built (queued), the staged files handed back.
pub(crate) async fn commit_built(s: &SledStore, d: &mut DocumentRecord) -> StagedFiles {
    d.pending_build = false;
    d.state = state::QUEUED;
    let files = DocumentFiles {
        xml: "<x/>".into(),
        xml_name: "a.xml".into(),
        zip_name: "a.zip".into(),
        zip: ZipFile::Stored(vec![1]),
    };
    let staged = s
        .stage_files(d.id, d.company_id, d.document_type, &files)
        .unwrap();
    s.commit_staged(d.clone(), staged.clone(), None, history("built"))
        .await
        .unwrap();
    staged
}

pub(crate) fn history(event: &str) -> HistoryEntry {
    HistoryEntry {
        at: Utc::now(),
        actor: "test".into(),
        event: event.into(),
        from_state: None,
        to_state: None,
        data: serde_json::Value::Null,
    }
}

#[test]
fn companies_keys_customers_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let (company_id, key_id) = {
        let s = open(dir.path());
        assert!(s.is_empty().unwrap());
        let c = s.create_company(company()).unwrap();
        assert_eq!(c.id, 1);
        assert!(matches!(
            s.create_company(company()),
            Err(StoreError::Conflict(_))
        ));
        let k = s.insert_api_key(test_key(c.id)).unwrap();
        let input = CustomerInput {
            identification_number: "123".into(),
            name: "Ana".into(),
            email: "ana@example.com".into(),
            address: Some("Cra 7".into()),
            ..Default::default()
        };
        let first = s.upsert_customer(c.id, input.clone()).unwrap();
        let second = s
            .upsert_customer(
                c.id,
                CustomerInput {
                    name: "Ana María".into(),
                    address: None,
                    ..input
                },
            )
            .unwrap();
        assert_eq!(first.id, second.id, "upsert by identification number");
        assert_eq!(
            second.address.as_deref(),
            Some("Cra 7"),
            "omitted field kept"
        );
        (c.id, k.id)
    };
    let s = open(dir.path());
    assert!(!s.is_empty().unwrap());
    assert_eq!(s.company(company_id).unwrap().unwrap().nit, "900000001");
    assert_eq!(
        s.api_key_by_hash(&"ab".repeat(32)).unwrap().unwrap().id,
        key_id
    );
    let page = s.customers(company_id, 1, 20, Some("maría")).unwrap();
    assert_eq!(page.total, 1);
    assert_eq!(page.items[0].name, "Ana María");
    let revoked = s.revoke_api_key(key_id, Utc::now()).unwrap().unwrap();
    assert!(revoked.revoked_at.is_some());
}

/// Upserts keep the customers they last wrote in memory: a change is seen
/// by the next upsert, an unchanged repeat is not rewritten, and when the
/// memory is emptied (it is bounded) upserts still find the stored ones.
#[test]
fn repeat_customers_upsert_alike_whether_remembered_or_read_from_sled() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let c = s.create_company(company()).unwrap();
    let ana = |name: &str| CustomerInput {
        identification_number: "123".into(),
        name: name.into(),
        email: "ana@example.com".into(),
        address: Some("Cra 7".into()),
        ..Default::default()
    };
    let first = s.upsert_customer(c.id, ana("Ana")).unwrap();
    let same = s.upsert_customer(c.id, ana("Ana")).unwrap();
    assert_eq!(same, first, "an unchanged repeat is the stored one");
    let renamed = s.upsert_customer(c.id, ana("Ana María")).unwrap();
    assert_eq!((renamed.id, renamed.name.as_str()), (first.id, "Ana María"));
    // Enough others to empty the memory, then Ana again, from sled.
    for n in 0..RECENT_CUSTOMERS_FOR_TESTS + 1 {
        let other = CustomerInput {
            identification_number: format!("9{n}"),
            name: format!("Cliente {n}"),
            ..Default::default()
        };
        s.upsert_customer(c.id, other).unwrap();
    }
    let again = s
        .upsert_customer(
            c.id,
            CustomerInput {
                address: None,
                ..ana("Ana María")
            },
        )
        .unwrap();
    assert_eq!(again, renamed, "found in sled, not rewritten");
    let stored = s.customer(c.id, first.id).unwrap().unwrap();
    assert_eq!(stored.address.as_deref(), Some("Cra 7"));
    assert_eq!(s.customers(c.id, 1, 1, None).unwrap().total, 1026);
}

/// A document's upsert (the id only, a recent customer left as it is
/// not copied) stores what the customers API's upsert stores, step by
/// step: fields left out kept, an empty email keeping the stored one.
#[test]
fn a_documents_customer_upsert_stores_what_the_full_upsert_stores() {
    let (da, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (a, b) = (open(da.path()), open(db.path()));
    let (ca, cb) = (
        a.create_company(company()).unwrap(),
        b.create_company(company()).unwrap(),
    );
    let base = CustomerInput {
        identification_number: "123".into(),
        name: "Ana".into(),
        email: "ana@example.com".into(),
        address: Some("Cra 7".into()),
        phone: Some("300".into()),
        ..Default::default()
    };
    let steps = [
        base.clone(),
        base.clone(),
        CustomerInput {
            phone: None,
            address: None,
            ..base.clone()
        },
        CustomerInput {
            email: String::new(),
            ..base.clone()
        },
        CustomerInput {
            phone: Some("301".into()),
            ..base.clone()
        },
        CustomerInput {
            phone: Some("301".into()),
            ..base.clone()
        },
        CustomerInput {
            email: "otra@example.com".into(),
            municipality_code: Some("11001".into()),
            ..base.clone()
        },
        CustomerInput {
            name: "Ana María".into(),
            ..base.clone()
        },
        base.clone(),
    ];
    let plain = |mut c: Customer| {
        c.created_at = Default::default();
        c.updated_at = Default::default();
        c
    };
    for (i, input) in steps.iter().enumerate() {
        let id = a.upsert_customer_id(ca.id, input).unwrap();
        let full = b.upsert_customer(cb.id, input.clone()).unwrap();
        let stored = a.customer(ca.id, id).unwrap().unwrap();
        assert_eq!(plain(stored), plain(full), "step {i}");
    }
}

#[test]
fn numbers_are_gapless_and_bounded_by_the_range() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let c = s.create_company(company()).unwrap();
    let r = s
        .add_resolution(c.id, resolution(990000000, 990000002))
        .unwrap();
    let today = NaiveDate::from_ymd_opt(2026, 11, 22).unwrap();
    assert_eq!(
        s.active_resolution(c.id, Environment::Live, 1, today)
            .unwrap()
            .unwrap()
            .id,
        r.id
    );
    let numbers: Vec<u64> = (0..3)
        .map(|_| s.create_document(new_doc(&r, None)).unwrap().number)
        .collect();
    assert_eq!(numbers, vec![990000000, 990000001, 990000002]);
    assert!(matches!(
        s.create_document(new_doc(&r, None)),
        Err(StoreError::RangeExhausted { .. })
    ));
    assert!(
        s.active_resolution(c.id, Environment::Live, 1, today)
            .unwrap()
            .is_none(),
        "exhausted"
    );
    // Half-built documents are not counted by state yet.
    assert_eq!(s.document_counts().unwrap(), vec![]);
    assert_eq!(s.monthly_usage(c.id, 202611).unwrap(), 3);
}

#[test]
fn references_and_monthly_limits_refuse_without_consuming_a_number() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let c = s.create_company(company()).unwrap();
    let r = s.add_resolution(c.id, resolution(1, 100)).unwrap();
    let first = s.create_document(new_doc(&r, Some("ref-1"))).unwrap();
    match s.create_document(new_doc(&r, Some("ref-1"))) {
        Err(StoreError::DuplicateReference { id }) => assert_eq!(id, first.id),
        other => panic!("{other:?}"),
    }
    let mut limited = new_doc(&r, None);
    limited.monthly_limit = Some(1);
    assert!(matches!(
        s.create_document(limited),
        Err(StoreError::LimitReached { limit: 1 })
    ));
    assert_eq!(
        s.create_document(new_doc(&r, Some("ref-2")))
            .unwrap()
            .number,
        2,
        "no number lost"
    );
    assert_eq!(
        s.document_by_reference(c.id, "ref-1").unwrap(),
        Some(first.id)
    );
}

#[tokio::test]
async fn two_phase_issue_with_job_history_and_restart() {
    let dir = tempfile::tempdir().unwrap();
    let id = {
        let s = open(dir.path());
        let c = s.create_company(company()).unwrap();
        let r = s.add_resolution(c.id, resolution(1, 100)).unwrap();
        let mut d = s.create_document(new_doc(&r, None)).unwrap();
        assert_eq!(s.pending_builds().unwrap().len(), 1);
        d.pending_build = false;
        d.state = state::QUEUED;
        d.code = Some("abc".into());
        let files = DocumentFiles {
            xml: "<x/>".into(),
            xml_name: "a.xml".into(),
            zip_name: "a.zip".into(),
            zip: ZipFile::Stored(vec![1, 2, 3]),
        };
        let job = Job {
            id: 0,
            kind: "transmit".into(),
            company_id: c.id,
            document_id: Some(d.id),
            attempts: 0,
            run_at_ms: 0,
            in_flight: false,
            payload: serde_json::Value::Null,
            created_at: Utc::now(),
        };
        let staged = s.stage_files(d.id, c.id, d.document_type, &files).unwrap();
        let job = s
            .commit_staged(d.clone(), staged, Some(job), history("built"))
            .await
            .unwrap()
            .unwrap();
        assert!(job.id > 0);
        d.state = state::ACCEPTED;
        s.update_document(&d, history("accepted")).unwrap();
        s.remove_job(job.id).unwrap();
        d.id
    };
    let s = open(dir.path());
    let d = s.document(id).unwrap().unwrap();
    assert_eq!(d.state, state::ACCEPTED);
    assert!(s.pending_builds().unwrap().is_empty());
    let files = s.document_files(id).unwrap().unwrap();
    assert_eq!(files.zip, ZipFile::Stored(vec![1, 2, 3]));
    assert_eq!(files.xml, "<x/>");
    let h: Vec<String> = s
        .history(id)
        .unwrap()
        .into_iter()
        .map(|h| h.event)
        .collect();
    assert_eq!(h, vec!["built", "accepted"]);
    assert!(s.jobs().unwrap().is_empty());
    assert_eq!(s.document_counts().unwrap(), vec![((1, 2), 1)]);
    assert_eq!(
        s.documents_in_states(None, &[state::ACCEPTED])
            .unwrap()
            .len(),
        1
    );
}

/// A document's own instant (`issued_at`): kept when given, absent from
/// the stored value otherwise (records keep the format they had), and a
/// record without one is dated when its number was taken.
#[test]
fn a_documents_instant_is_kept_when_given_and_old_records_read_without_one() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let c = s.create_company(company()).unwrap();
    let r = s.add_resolution(c.id, resolution(1, 100)).unwrap();

    let plain = s.create_document(new_doc(&r, None)).unwrap();
    assert_eq!(plain.issued_at, None);
    assert_eq!(plain.instant(), plain.created_at);
    let json = serde_json::to_value(&plain).unwrap();
    assert!(json.get("issued_at").is_none(), "{json}");

    let at = Utc::now() + chrono::Duration::days(1);
    let dated = s
        .create_document(NewDocument {
            issued_at: Some(at),
            ..new_doc(&r, None)
        })
        .unwrap();
    assert_eq!(dated.instant(), at);
    assert_eq!(s.document(dated.id).unwrap().unwrap().issued_at, Some(at));

    // A record written before the field existed reads as the plain one.
    let bytes = codec::encode(trees::DOCUMENTS, &json).unwrap();
    let read: DocumentRecord = codec::decode(trees::DOCUMENTS, &bytes).unwrap();
    assert_eq!(read, plain);
}

/// Events the authority lists on an invoice: absent from the stored value
/// of a record without any (records keep the format they had), a record
/// written before they were kept reads with none, and once learned they
/// are read back with the record.
#[test]
fn an_invoices_authority_events_are_kept_and_old_records_read_without_them() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let c = s.create_company(company()).unwrap();
    let r = s.add_resolution(c.id, resolution(1, 100)).unwrap();
    let mut doc = s.create_document(new_doc(&r, None)).unwrap();
    doc.state = state::ACCEPTED;
    doc.pending_build = false;
    s.update_document(&doc, index::history_line()).unwrap();
    let stale = s.document(doc.id).unwrap().unwrap();
    let json = serde_json::to_value(&doc).unwrap();
    assert!(json.get("authority_events").is_none(), "{json}");
    let bytes = codec::encode(trees::DOCUMENTS, &json).unwrap();
    let read: DocumentRecord = codec::decode(trees::DOCUMENTS, &bytes).unwrap();
    assert!(read.authority_events.is_empty());

    doc.authority_events.push(AuthorityEvent {
        code: "031".into(),
        name: "Reclamo de la Factura Electrónica de Venta".into(),
        date: "2026-11-28".into(),
        time: "10:00:00-05:00".into(),
        number: "EV-1".into(),
        cude: "c".repeat(96),
        issuer_nit: Some("800197268".into()),
        recipient_nit: Some("900000001".into()),
        learned_at: Utc::now(),
    });
    doc.list_keys
        .insert(EVENT_STANDING_KEY.into(), "reclamada".into());
    s.update_document(&doc, index::history_line()).unwrap();
    let stored = s.document(doc.id).unwrap().unwrap();
    assert_eq!(stored.authority_events, doc.authority_events);
    assert_eq!(
        stored.list_keys.get(EVENT_STANDING_KEY).map(String::as_str),
        Some("reclamada")
    );

    // A writer holding a copy read before the events were learned keeps them.
    let mut later = stale;
    later.attempts = 7;
    s.update_document(&later, index::history_line()).unwrap();
    let stored = s.document(doc.id).unwrap().unwrap();
    assert_eq!(stored.attempts, 7);
    assert_eq!(stored.authority_events, doc.authority_events);
    let claimed = ListQuery {
        company_id: doc.company_id,
        environment: doc.environment,
        family: Family::Invoices,
        from: None,
        to: None,
        states: vec![],
        keys: vec![(EVENT_STANDING_KEY.into(), "reclamada".into())],
        page: 1,
        limit: 10,
    };
    let listed = s.list_documents(&claimed).unwrap();
    assert_eq!(
        listed.items.iter().map(|d| d.id).collect::<Vec<_>>(),
        [doc.id]
    );
}

#[test]
fn a_documents_user_is_kept_and_old_records_read_without_one() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let c = s.create_company(company()).unwrap();
    let r = s.add_resolution(c.id, resolution(1, 100)).unwrap();
    let doc = s
        .create_document(NewDocument {
            user_id: Some(42),
            ..new_doc(&r, None)
        })
        .unwrap();
    assert_eq!(doc.user_id, Some(42));
    assert_eq!(s.document(doc.id).unwrap().unwrap().user_id, Some(42));

    // A record written before the field existed.
    let mut old = serde_json::to_value(&doc).unwrap();
    old.as_object_mut().unwrap().remove("user_id");
    let bytes = codec::encode(trees::DOCUMENTS, &old).unwrap();
    let read: DocumentRecord = codec::decode(trees::DOCUMENTS, &bytes).unwrap();
    assert_eq!(read.user_id, None);
    assert_eq!(read.id, doc.id);
}

#[test]
fn concurrent_allocation_never_repeats_a_number() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let c = s.create_company(company()).unwrap();
    let r = s.add_resolution(c.id, resolution(1, 1000)).unwrap();
    let mut all: Vec<u64> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..4)
            .map(|_| {
                scope.spawn(|| {
                    (0..25)
                        .map(|_| s.create_document(new_doc(&r, None)).unwrap().number)
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    all.sort_unstable();
    assert_eq!(all, (1..=100).collect::<Vec<_>>());
}

#[test]
fn second_open_of_the_same_dir_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let _first = open(dir.path());
    assert!(SledStore::open(dir.path(), keys()).is_err());
}

#[test]
fn an_unclean_stop_that_lost_the_newest_documents_derived_writes_is_repaired_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let (r, ids) = {
        let s = open(dir.path());
        let c = s.create_company(company()).unwrap();
        let r = s.add_resolution(c.id, resolution(1, 100)).unwrap();
        let ids: Vec<u64> = ["a", "b", "c"]
            .iter()
            .map(|reference| s.create_document(new_doc(&r, Some(reference))).unwrap().id)
            .collect();
        // What a crash right after the third record can lose (sled keeps a
        // prefix of its log, and phase one runs one document at a time):
        // the writes that follow it, and only those; and the pending-build
        // entries of all three, which wait for the next group commit's
        // flush (`set_changes`): sled alone is flushed below.
        s.counters
            .insert(crate::encoding::codec::id_key(r.id), &3u64.to_be_bytes())
            .unwrap();
        s.document_refs
            .remove(&crate::encoding::codec::scoped_text_key(c.id, "c"), ids[2])
            .unwrap();
        s.usage
            .insert(
                crate::indexes::counts::usage_key(c.id, 202611),
                &crate::indexes::counts::usage_value(2, ids[1]),
            )
            .unwrap();
        s.db.flush().unwrap();
        s.close_uncleanly();
        (r, ids)
    };
    let s = open(dir.path());
    assert_eq!(
        s.next_number(&r).unwrap(),
        4,
        "number 3 is never given twice"
    );
    assert_eq!(
        s.document_by_reference(r.company_id, "c").unwrap(),
        Some(ids[2])
    );
    assert_eq!(s.monthly_usage(r.company_id, 202611).unwrap(), 3);
    let pending: Vec<u64> = s.pending_builds().unwrap().iter().map(|d| d.id).collect();
    assert_eq!(
        pending, ids,
        "the half-built documents are found by their entries"
    );
    assert_eq!(s.create_document(new_doc(&r, None)).unwrap().number, 4);
    // A repair that found everything in place changes nothing.
    s.close_uncleanly();
    drop(s);
    let s = open(dir.path());
    assert_eq!(s.monthly_usage(r.company_id, 202611).unwrap(), 4);
}

/// Phase one keeps the request in the half-built record's value (one
/// entry, not two); a change before the build keeps it there, and phase
/// two moves it to the file log with the XML.
#[tokio::test]
async fn a_half_built_documents_request_stays_in_its_record_until_phase_two() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let c = s.create_company(company()).unwrap();
    let r = s.add_resolution(c.id, resolution(1, 100)).unwrap();
    let mut new = new_doc(&r, Some("ref-1"));
    new.request = br#"{"numero":"1"}"#.to_vec();
    let mut d = s.create_document(new).unwrap();
    let value = s
        .documents
        .get(crate::encoding::codec::id_key(d.id))
        .unwrap()
        .unwrap();
    assert_eq!(value[0], crate::encoding::codec::FORMAT_WITH_REQUEST);
    assert!(s.document_requests.is_empty(), "no entry of its own");
    assert_eq!(
        s.document_request(d.id).unwrap().unwrap(),
        br#"{"numero":"1"}"#
    );
    // A change that is not the build (a note, a state) keeps it.
    s.update_document(&d, history("noted")).unwrap();
    assert_eq!(
        s.document_request(d.id).unwrap().unwrap(),
        br#"{"numero":"1"}"#
    );
    assert_eq!(s.document(d.id).unwrap().unwrap().number, 1);
    assert!(commit_built(&s, &mut d).await.request_at.is_some());
    let value = s
        .documents
        .get(crate::encoding::codec::id_key(d.id))
        .unwrap()
        .unwrap();
    assert_eq!(
        value[0],
        crate::encoding::codec::FORMAT_ZSTD_V1,
        "the record alone"
    );
    assert_eq!(
        s.document_request(d.id).unwrap().unwrap(),
        br#"{"numero":"1"}"#,
        "read from the file log"
    );
    let h: Vec<String> = s
        .history(d.id)
        .unwrap()
        .into_iter()
        .map(|h| h.event)
        .collect();
    assert_eq!(h, vec!["noted", "built"]);
}

/// A data dir written before kept a half-built document's request in
/// `document_requests`: it is still read, built and removed from there.
#[tokio::test]
async fn a_half_built_request_in_the_old_tree_is_still_read_and_moved() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = {
        let s = open(dir.path());
        let c = s.create_company(company()).unwrap();
        let r = s.add_resolution(c.id, resolution(1, 100)).unwrap();
        let mut new = new_doc(&r, None);
        new.request = br#"{"old":true}"#.to_vec();
        let d = s.create_document(new).unwrap();
        // As an earlier format held it: the record alone, the request
        // in a tree of its own.
        let key = crate::encoding::codec::id_key(d.id);
        let value = s.documents.get(key).unwrap().unwrap();
        let (record, request) = crate::encoding::codec::split_request(&value);
        s.document_requests.insert(key, request.unwrap()).unwrap();
        s.documents.insert(key, record).unwrap();
        s.flush_now().unwrap();
        d
    };
    let s = open(dir.path());
    assert!(s.legacy_requests);
    assert_eq!(
        s.document_request(d.id).unwrap().unwrap(),
        br#"{"old":true}"#
    );
    commit_built(&s, &mut d).await;
    assert!(s.document_requests.is_empty(), "moved to the file log");
    assert_eq!(
        s.document_request(d.id).unwrap().unwrap(),
        br#"{"old":true}"#
    );
}

/// Phase one's counters and usage wait for the next flush, read back
/// through what is deferred until then; a crash that loses them leaves
/// the records, from which the next open raises them again.
#[test]
fn deferred_counters_and_usage_lost_in_a_crash_come_back_from_the_new_documents() {
    let dir = tempfile::tempdir().unwrap();
    let r = {
        let s = open(dir.path());
        let c = s.create_company(company()).unwrap();
        let r = s.add_resolution(c.id, resolution(1, 100)).unwrap();
        for _ in 0..3 {
            s.create_document(new_doc(&r, None)).unwrap();
        }
        assert_eq!(s.next_number(&r).unwrap(), 4, "read through the deferred");
        assert_eq!(s.monthly_usage(r.company_id, 202611).unwrap(), 3);
        assert_eq!(
            s.counters
                .get(crate::encoding::codec::id_key(r.id))
                .unwrap()
                .map(|v| v.to_vec()),
            Some(1u64.to_be_bytes().to_vec()),
            "not written before a flush"
        );
        // Sled alone flushed: the deferred writes are lost as in a crash.
        s.db.flush().unwrap();
        s.close_uncleanly();
        r
    };
    let s = open(dir.path());
    assert_eq!(s.next_number(&r).unwrap(), 4, "no number given twice");
    assert_eq!(s.monthly_usage(r.company_id, 202611).unwrap(), 3);
    assert_eq!(s.create_document(new_doc(&r, None)).unwrap().number, 4);
    s.flush_now().unwrap();
    assert_eq!(
        s.counters
            .get(crate::encoding::codec::id_key(r.id))
            .unwrap()
            .map(|v| v.to_vec()),
        Some(5u64.to_be_bytes().to_vec()),
        "written by the flush"
    );
    assert_eq!(s.monthly_usage(r.company_id, 202611).unwrap(), 4);
}

/// A state change cut short after its record: its marker is left, and the
/// counts and state entry follow the record on the next open, once.
#[test]
fn an_unclean_stop_inside_a_state_change_is_repaired_from_its_marker() {
    let dir = tempfile::tempdir().unwrap();
    let id = {
        let s = open(dir.path());
        let c = s.create_company(company()).unwrap();
        let r = s.add_resolution(c.id, resolution(1, 100)).unwrap();
        let mut d = s.create_document(new_doc(&r, None)).unwrap();
        d.pending_build = false;
        d.state = state::QUEUED;
        s.update_document(&d, history("built")).unwrap();
        let mut accepted = d.clone();
        accepted.state = state::ACCEPTED;
        // The change's marker and record landed; the state index and the
        // counts after them did not.
        let token = s.index_markers_next_for_tests();
        let mut marker = crate::encoding::codec::id_key(d.id).to_vec();
        marker.extend_from_slice(&token.to_be_bytes());
        let old = crate::indexes::doc_index::IndexView::of(&d);
        s.document_index_pending
            .insert(
                marker,
                crate::encoding::codec::encode("t", &Some(old)).unwrap(),
            )
            .unwrap();
        s.documents
            .insert(
                crate::encoding::codec::id_key(d.id),
                crate::encoding::codec::encode("t", &accepted).unwrap(),
            )
            .unwrap();
        s.flush().unwrap();
        s.close_uncleanly();
        d.id
    };
    let s = open(dir.path());
    assert_eq!(
        s.document_counts().unwrap(),
        vec![((1, state::ACCEPTED), 1)],
        "moved from queued to accepted once"
    );
    let accepted = s.documents_in_states(None, &[state::ACCEPTED]).unwrap();
    assert_eq!(accepted.iter().map(|d| d.id).collect::<Vec<_>>(), vec![id]);
    assert!(s
        .documents_in_states(None, &[state::QUEUED])
        .unwrap()
        .is_empty());
    // Opening uncleanly again does not move the counts a second time.
    s.close_uncleanly();
    drop(s);
    let s = open(dir.path());
    assert_eq!(
        s.document_counts().unwrap(),
        vec![((1, state::ACCEPTED), 1)]
    );
}

/// A group commit cut short after its records and one of the counts it
/// moves (`set_changes` writes a batch's counts together, after its
/// records): every change its markers name reaches the counts it missed,
/// once, also a document changed twice in the batch.
#[test]
fn an_unclean_stop_inside_a_group_commits_counts_is_repaired_from_its_markers() {
    let dir = tempfile::tempdir().unwrap();
    {
        let s = open(dir.path());
        let c = s.create_company(company()).unwrap();
        let r = s.add_resolution(c.id, resolution(1, 100)).unwrap();
        let mut queued = Vec::new();
        for _ in 0..3 {
            let mut d = s.create_document(new_doc(&r, None)).unwrap();
            d.pending_build = false;
            d.state = state::QUEUED;
            s.update_document(&d, history("built")).unwrap();
            queued.push(d);
        }
        let with_state = |d: &DocumentRecord, state: u8| {
            let mut d = d.clone();
            d.state = state;
            d
        };
        // The batch: 1 and 2 accepted, 3 accepted then rejected.
        let changes = [
            (queued[0].clone(), with_state(&queued[0], state::ACCEPTED)),
            (queued[1].clone(), with_state(&queued[1], state::ACCEPTED)),
            (queued[2].clone(), with_state(&queued[2], state::ACCEPTED)),
            (
                with_state(&queued[2], state::ACCEPTED),
                with_state(&queued[2], state::REJECTED),
            ),
        ];
        let mut token = s.index_markers_next_for_tests();
        for (old, new) in &changes {
            let mut marker = crate::encoding::codec::id_key(old.id).to_vec();
            marker.extend_from_slice(&token.to_be_bytes());
            let view = crate::indexes::doc_index::IndexView::of(old);
            s.document_index_pending
                .insert(
                    marker,
                    crate::encoding::codec::encode("t", &Some(view)).unwrap(),
                )
                .unwrap();
            s.documents
                .insert(
                    crate::encoding::codec::id_key(new.id),
                    crate::encoding::codec::encode("t", new).unwrap(),
                )
                .unwrap();
            token += 1;
        }
        // Of the batch's counts only the accepted one landed (+2, stamped
        // with its newest token).
        s.bump_count(
            crate::indexes::counts::count_key(1, state::ACCEPTED),
            2,
            token - 1,
        )
        .unwrap();
        s.flush().unwrap();
        s.close_uncleanly();
    }
    let expected = vec![((1, state::ACCEPTED), 2), ((1, state::REJECTED), 1)];
    let s = open(dir.path());
    assert_eq!(s.document_counts().unwrap(), expected);
    let rejected = s.documents_in_states(None, &[state::REJECTED]).unwrap();
    assert_eq!(rejected.len(), 1);
    assert_eq!(
        s.documents_in_states(None, &[state::ACCEPTED])
            .unwrap()
            .len(),
        2
    );
    // Opening uncleanly again moves nothing a second time.
    s.close_uncleanly();
    drop(s);
    let s = open(dir.path());
    assert_eq!(s.document_counts().unwrap(), expected);
}

/// A new document's pending-build entry waits for a flush; a store
/// dropped before any writes it first, so the clean open finds the
/// half-built document without a repair.
#[test]
fn a_store_dropped_before_any_flush_keeps_its_half_built_documents() {
    let dir = tempfile::tempdir().unwrap();
    let id = {
        let s = open(dir.path());
        let c = s.create_company(company()).unwrap();
        let r = s.add_resolution(c.id, resolution(1, 100)).unwrap();
        s.create_document(new_doc(&r, None)).unwrap().id
    };
    let s = open(dir.path());
    let pending: Vec<u64> = s.pending_builds().unwrap().iter().map(|d| d.id).collect();
    assert_eq!(pending, vec![id]);
}

#[test]
fn a_clean_close_skips_the_repair_and_keeps_the_counter() {
    let dir = tempfile::tempdir().unwrap();
    let r = {
        let s = open(dir.path());
        let c = s.create_company(company()).unwrap();
        let r = s.add_resolution(c.id, resolution(1, 100)).unwrap();
        s.create_document(new_doc(&r, None)).unwrap();
        r
    };
    let s = open(dir.path());
    assert_eq!(s.next_number(&r).unwrap(), 2);
    assert_eq!(
        s.meta
            .get(crate::engine::sled::repair::CLEAN_CLOSE_KEY)
            .unwrap(),
        None,
        "removed on open"
    );
}

#[test]
fn a_documents_job_is_found_by_index_and_forgotten_when_removed() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let job = |doc: u64| Job {
        id: 0,
        kind: "transmit".into(),
        company_id: 1,
        document_id: Some(doc),
        attempts: 0,
        run_at_ms: 0,
        in_flight: false,
        payload: serde_json::Value::Null,
        created_at: Utc::now(),
    };
    let a = s.put_job(job(7)).unwrap();
    let b = s.put_job(job(8)).unwrap();
    assert_eq!(s.job_for_document(7).unwrap().unwrap().id, a.id);
    assert_eq!(s.job_for_document(8).unwrap().unwrap().id, b.id);
    assert_eq!(s.job_for_document(9).unwrap(), None);
    // Updating keeps it; removing forgets it.
    let mut a2 = a.clone();
    a2.attempts = 3;
    s.put_job(a2).unwrap();
    assert_eq!(s.job_for_document(7).unwrap().unwrap().attempts, 3);
    s.remove_job(a.id).unwrap();
    assert_eq!(s.job_for_document(7).unwrap(), None);
    assert_eq!(s.job_for_document(8).unwrap().unwrap().id, b.id);
}

#[test]
fn recent_requests_are_the_payloads_of_the_documents_since_a_time() {
    use sha2::Digest;
    let dir = tempfile::tempdir().unwrap();
    let body = |n: u32| format!("{{\"n\":{n}}}").into_bytes();
    let hash = |n: u32| -> [u8; 32] { sha2::Sha256::digest(body(n)).into() };
    let (since, a, b) = {
        let s = open(dir.path());
        let c = s.create_company(company()).unwrap();
        let r = s.add_resolution(c.id, resolution(1, 100)).unwrap();
        let make = |n: u32| {
            let mut new = new_doc(&r, None);
            new.request = body(n);
            new.payload_hash = hash(n);
            s.create_document(new).unwrap()
        };
        let old = make(1);
        std::thread::sleep(std::time::Duration::from_millis(20));
        let since = Utc::now();
        let a = make(2);
        let b = make(3);
        assert!(old.created_at < since);
        assert_eq!(s.recent_requests(Utc::now()).unwrap(), vec![]);
        s.flush().unwrap();
        (since, a, b)
    };
    // Read back after a reopen, without reading any record.
    let s = open(dir.path());
    let got: Vec<(u64, u64, [u8; 32])> = s
        .recent_requests(since)
        .unwrap()
        .into_iter()
        .map(|r| (r.document_id, r.company_id, r.payload_hash))
        .collect();
    assert_eq!(
        got,
        vec![(a.id, a.company_id, hash(2)), (b.id, b.company_id, hash(3))]
    );
    // Payloads older than the window (and its slack) are dropped as new
    // documents come.
    s.set_duplicate_window(std::time::Duration::ZERO);
    let r = s.resolutions(a.company_id).unwrap().remove(0);
    let mut late = new_doc(&r, None);
    late.request = body(4);
    let _ = s.create_document(late).unwrap();
    let all = s
        .recent_requests(since - chrono::Duration::hours(1))
        .unwrap();
    assert_eq!(all.len(), 4, "within the slack all stay");
    assert!(
        s.recent_payloads.is_empty(),
        "kept in the payload log, not in sled"
    );
}

/// The payload log is synced once a second at most; a power loss may take
/// its tail. The documents answered for have their payload in the file
/// log too (with their request), and the next open puts them back.
#[tokio::test]
async fn payloads_lost_from_the_payload_log_come_back_from_the_file_log_and_half_built_requests() {
    use sha2::Digest;
    let dir = tempfile::tempdir().unwrap();
    let body = |n: u32| format!("{{\"n\":{n}}}").into_bytes();
    let hash = |n: u32| -> [u8; 32] { sha2::Sha256::digest(body(n)).into() };
    let lose_payload_log = || {
        for f in std::fs::read_dir(dir.path().join("payloads")).unwrap() {
            std::fs::remove_file(f.unwrap().path()).unwrap();
        }
    };
    let since = Utc::now();
    let (built, pending) = {
        let s = open(dir.path());
        let c = s.create_company(company()).unwrap();
        let r = s.add_resolution(c.id, resolution(1, 100)).unwrap();
        // A slow test machine could reach the sync's second in between.
        s.payloads
            .set_sync_every(std::time::Duration::from_secs(3600));
        let make = |n: u32| {
            let mut new = new_doc(&r, None);
            new.request = body(n);
            new.payload_hash = hash(n);
            s.create_document(new).unwrap()
        };
        let mut built = Vec::new();
        for n in 1..=3 {
            let mut d = make(n);
            d.pending_build = false;
            let files = DocumentFiles {
                xml: format!("<Invoice n=\"{n}\"/>"),
                xml_name: format!("fv{n}.xml"),
                zip_name: format!("z{n}.zip"),
                zip: ZipFile::Stored(vec![n as u8]),
            };
            let staged = s.stage_files(d.id, c.id, d.document_type, &files).unwrap();
            s.commit_staged(d.clone(), staged, None, history("built"))
                .await
                .unwrap();
            built.push((d.id, d.company_id, hash(n)));
        }
        // Phase one only: its request (kept behind its payload) reads back.
        let pending = make(4);
        assert_eq!(s.document_request(pending.id).unwrap().unwrap(), body(4));
        s.close_uncleanly();
        (built, (pending.id, pending.company_id, hash(4)))
    };
    lose_payload_log();
    {
        let s = open(dir.path());
        let mut got: Vec<(u64, u64, [u8; 32])> = s
            .recent_requests(since)
            .unwrap()
            .into_iter()
            .map(|r| (r.document_id, r.company_id, r.payload_hash))
            .collect();
        got.sort();
        let mut expected = built.clone();
        // The half-built one's, from its request: resume builds it, and a
        // client retrying it must be told it exists.
        expected.push(pending);
        assert_eq!(got, expected, "every numbered document's payload is back");
        for (n, (id, ..)) in (1..=3).zip(&built) {
            assert_eq!(s.document_request(*id).unwrap().unwrap(), body(n));
        }
        assert_eq!(s.document_request(pending.0).unwrap().unwrap(), body(4));
    }
    // Put back and synced at that open, which moved the mark past them:
    // the next open reads nothing of the file log (here, only the document
    // still half built comes back, the payload log having been taken away
    // behind the store's back).
    lose_payload_log();
    let s = open(dir.path());
    let got: Vec<u64> = s
        .recent_requests(since)
        .unwrap()
        .iter()
        .map(|r| r.document_id)
        .collect();
    assert_eq!(got, [pending.0]);
}

/// The async handle's writes go through the flusher: durable when they
/// resolve, even if the process dies right after (no clean-close mark).
#[tokio::test]
async fn async_writes_are_on_disk_when_they_resolve() {
    let dir = tempfile::tempdir().unwrap();
    let (doc_id, job_id) = {
        let s = open(dir.path());
        let c = s.create_company(company()).unwrap();
        let r = s.add_resolution(c.id, resolution(1, 100)).unwrap();
        let a = AsyncStore::new(s.clone()).unwrap();
        let mut doc = a.create_document(new_doc(&r, Some("x"))).await.unwrap();
        doc.pending_build = false;
        doc.state = state::QUEUED;
        let job = Job {
            id: 0,
            kind: "transmit".into(),
            company_id: c.id,
            document_id: Some(doc.id),
            attempts: 0,
            run_at_ms: 0,
            in_flight: false,
            payload: serde_json::Value::Null,
            created_at: Utc::now(),
        };
        let job = a
            .update_document_with_job(doc.clone(), job, history("queued"))
            .await
            .unwrap();
        let dropped = a
            .put_job(Job {
                id: 0,
                ..job.clone()
            })
            .await
            .unwrap();
        a.remove_job(dropped.id).await.unwrap();
        let event = a
            .append_event(EventRecord {
                id: 0,
                company_id: c.id,
                document_id: Some(doc.id),
                kind: "webhook_delivery".into(),
                at: Utc::now(),
                data: serde_json::Value::Null,
            })
            .await
            .unwrap();
        assert!(event.id > 0);
        s.close_uncleanly();
        (doc.id, job.id)
    };
    let s = open(dir.path());
    let doc = s.document(doc_id).unwrap().unwrap();
    assert_eq!(doc.state, state::QUEUED);
    assert_eq!(s.history(doc_id).unwrap().len(), 1);
    assert_eq!(
        s.job_for_document(doc_id).unwrap().map(|j| j.id),
        Some(job_id)
    );
    assert_eq!(s.jobs().unwrap().len(), 1, "the removed job stays removed");
    assert_eq!(
        s.events(doc.company_id, "webhook_delivery", 10)
            .unwrap()
            .len(),
        1
    );

    // A document's outcome and the end of its job, in one commit.
    let a = AsyncStore::new(s.clone()).unwrap();
    let mut done = doc.clone();
    done.state = state::ACCEPTED;
    a.finish_document(done, Some(job_id), history("accepted"))
        .await
        .unwrap();
    assert_eq!(s.document(doc_id).unwrap().unwrap().state, state::ACCEPTED);
    assert!(s.job_for_document(doc_id).unwrap().is_none());
    assert!(a.has_files(doc_id).await.is_ok_and(|has| !has));
}

/// An own resolution of `company` for `types` (the first the main one).
fn own(s: &SledStore, company: CompanyId, types: &[u8], prefix: &str) -> NumberingResolution {
    s.add_resolution(
        company,
        NewResolution {
            document_type: types[0],
            also_serves: types[1..].to_vec(),
            prefix: prefix.into(),
            technical_key: "0123abcd".into(),
            ..resolution(1, 1000)
        },
    )
    .unwrap()
}

/// A document of `company` numbered from the resolution `environment`
/// gives `document_type` today.
fn issue_in(
    s: &SledStore,
    company: CompanyId,
    env: Environment,
    document_type: u8,
) -> DocumentRecord {
    let today = NaiveDate::from_ymd_opt(2026, 11, 22).unwrap();
    let r = s
        .active_resolution(company, env, document_type, today)
        .unwrap()
        .unwrap_or_else(|| panic!("no resolution for type {document_type} in {env:?}"));
    s.create_document(NewDocument {
        environment: env,
        document_type,
        ..new_doc(&r, None)
    })
    .unwrap()
}

fn full(d: &DocumentRecord) -> String {
    d.full_number()
}

#[test]
fn the_testing_environment_numbers_from_the_test_sets_with_a_counter_per_company() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let a = s.create_company(company()).unwrap().id;
    let b = s
        .create_company(NewCompany {
            nit: "900000002".into(),
            ..company()
        })
        .unwrap()
        .id;
    for c in [a, b] {
        own(&s, c, &[1, 6, 8], "FE");
        own(&s, c, &[2], "NC");
        own(&s, c, &[4], "DS");
        own(&s, c, &[7], "CONT");
        own(&s, c, &[9], "POS");
    }
    use Environment::{Live, Test};
    // Invoices, exports and T04 share SETP; each company counts on its own.
    let got: Vec<String> = [(a, 1), (a, 6), (b, 1), (a, 8), (b, 8)]
        .iter()
        .map(|&(c, t)| full(&issue_in(&s, c, Test, t)))
        .collect();
    assert_eq!(
        got,
        [
            "SETP990000000",
            "SETP990000001",
            "SETP990000000",
            "SETP990000002",
            "SETP990000001"
        ]
    );
    assert_eq!(full(&issue_in(&s, a, Test, 4)), "SEDS984000000");
    assert_eq!(full(&issue_in(&s, b, Test, 4)), "SEDS984000000");
    assert_eq!(full(&issue_in(&s, a, Test, 9)), "EPOS1");
    // Notes and T03 keep the company's own prefixes in the testing environment.
    assert_eq!(full(&issue_in(&s, a, Test, 2)), "NC1");
    assert_eq!(full(&issue_in(&s, a, Test, 7)), "CONT1");
    // Production: the company's own resolutions, one serving 1, 6 and 8.
    let live: Vec<String> = [1, 6, 8, 4, 9]
        .iter()
        .map(|&t| full(&issue_in(&s, a, Live, t)))
        .collect();
    assert_eq!(live, ["FE1", "FE2", "FE3", "DS1", "POS1"]);
    // The test sets are not the company's resolutions; a built document
    // finds its own again by id.
    let setp = test_set::for_document_type(1).unwrap();
    assert!(s.resolutions(a).unwrap().iter().all(|r| !r.is_test_set()));
    let again = s.resolution(b, setp.id).unwrap().unwrap();
    assert_eq!((again.company_id, again.prefix.as_str()), (b, "SETP"));
    assert_eq!(s.next_number(&again).unwrap(), 990000002);
    // A type without an own resolution has none in production.
    let today = NaiveDate::from_ymd_opt(2026, 11, 22).unwrap();
    assert!(s.active_resolution(a, Live, 3, today).unwrap().is_none());
    assert!(s.active_resolution(a, Test, 3, today).unwrap().is_none());
}

#[test]
fn test_set_counters_are_repaired_per_company_after_an_unclean_stop() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = {
        let s = open(dir.path());
        let a = s.create_company(company()).unwrap().id;
        let b = s
            .create_company(NewCompany {
                nit: "900000002".into(),
                ..company()
            })
            .unwrap()
            .id;
        for _ in 0..3 {
            issue_in(&s, a, Environment::Test, 1);
        }
        issue_in(&s, b, Environment::Test, 4);
        // What a crash right after the newest record could lose: its
        // counter (phase one runs one document at a time, and sled keeps a
        // prefix of its log, so the older documents' writes are there).
        let seds = test_set::for_document_type(4).unwrap().id;
        s.counters
            .remove(crate::indexes::counts::counter_key(b, seds))
            .unwrap();
        s.flush().unwrap();
        s.close_uncleanly();
        (a, b)
    };
    let s = open(dir.path());
    assert_eq!(
        full(&issue_in(&s, a, Environment::Test, 8)),
        "SETP990000003",
        "no test-set number is given twice"
    );
    assert_eq!(
        full(&issue_in(&s, b, Environment::Test, 4)),
        "SEDS984000001"
    );
    assert_eq!(
        full(&issue_in(&s, b, Environment::Test, 1)),
        "SETP990000000"
    );
}

#[test]
fn numbers_issued_before_the_test_sets_were_built_in_are_never_given_again() {
    let dir = tempfile::tempdir().unwrap();
    let c = {
        let s = open(dir.path());
        let c = s.create_company(company()).unwrap();
        // The old demo company: its own type-1 resolution copied SETP.
        let old = s
            .add_resolution(c.id, resolution(990000000, 995000000))
            .unwrap();
        for _ in 0..3 {
            s.create_document(new_doc(&old, None)).unwrap();
        }
        // A data dir written before the seeding existed carries no mark.
        s.meta
            .remove(crate::engine::sled::repair::TEST_SETS_SEEDED_KEY)
            .unwrap();
        s.flush().unwrap();
        c.id
    };
    let s = open(dir.path());
    let first = issue_in(&s, c, Environment::Test, 1);
    assert_eq!(full(&first), "SETP990000003");
    assert!(s
        .resolution(c, first.resolution_id)
        .unwrap()
        .unwrap()
        .is_test_set());
    drop(s);
    // Once seeded, a later open leaves the counter alone.
    let s = open(dir.path());
    assert_eq!(
        full(&issue_in(&s, c, Environment::Test, 1)),
        "SETP990000004"
    );
}

/// The XML is stored once, compressed against the company's dictionary;
/// a derived ZIP comes back as its recipe, a stored one as its bytes; the
/// request comes back as received; all of it after a reopen too.
#[tokio::test]
async fn files_and_requests_are_stored_compressed_and_read_back_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let xml = |n: u64| {
        let lines: String = (0..30)
            .map(|i| format!("<cac:InvoiceLine><cbc:ID>{i}</cbc:ID><cbc:Note>Bogotá {n}</cbc:Note></cac:InvoiceLine>"))
            .collect();
        format!("<Invoice><cbc:ID>SETP{n}</cbc:ID>{lines}</Invoice>")
    };
    let request = |n: u64| {
        format!(
            r#"{{"referencia_externa":"r-{n}","notas":"{}"}}"#,
            "x".repeat(600)
        )
        .into_bytes()
    };
    let at = chrono::DateTime::parse_from_rfc3339("2026-11-22T10:11:12-05:00").unwrap();
    let mut ids = Vec::new();
    {
        let s = open(dir.path());
        let c = s.create_company(company()).unwrap();
        let r = s.add_resolution(c.id, resolution(1, 100)).unwrap();
        for n in 1..=3 {
            let mut new = new_doc(&r, None);
            new.request = request(n);
            let mut d = s.create_document(new).unwrap();
            d.pending_build = false;
            d.state = state::ACCEPTED;
            let files = DocumentFiles {
                xml: xml(n),
                xml_name: format!("fv{n}.xml"),
                zip_name: format!("z{n}.zip"),
                zip: ZipFile::Derived { at },
            };
            let staged = s.stage_files(d.id, c.id, d.document_type, &files).unwrap();
            assert!(staged.compressed);
            // The first of its kind teaches the dictionary of the next.
            assert_eq!(staged.dictionary.is_some(), n > 1);
            assert_eq!(staged.at.zip_len, 0);
            if n > 1 {
                assert!(staged.at.xml_len * 5 < xml(n).len() as u32, "{staged:?}");
            }
            s.commit_staged(d.clone(), staged, None, history("built"))
                .await
                .unwrap();
            ids.push(d.id);
        }
    }
    let s = open(dir.path());
    for (n, id) in (1..=3).zip(ids) {
        let files = s.document_files(id).unwrap().unwrap();
        assert_eq!(files.xml, xml(n));
        assert_eq!(files.xml_name, format!("fv{n}.xml"));
        assert_eq!(files.zip, ZipFile::Derived { at });
        assert_eq!(s.document_request(id).unwrap().unwrap(), request(n));
    }
}

/// Document ids come from blocks reserved in sled: they only grow, a
/// block at a time, across clean and unclean closes alike.
#[test]
fn document_ids_only_grow_across_reopens_and_blocks() {
    use crate::engine::sled::ID_BLOCK;
    let dir = tempfile::tempdir().unwrap();
    let make =
        |s: &SledStore, r: &NumberingResolution| s.create_document(new_doc(r, None)).unwrap();
    let (r, mut ids) = {
        let s = open(dir.path());
        let c = s.create_company(company()).unwrap();
        let r = s.add_resolution(c.id, resolution(1, 10_000)).unwrap();
        // Past one block: the next one is reserved on the way.
        let ids: Vec<u64> = (0..=ID_BLOCK).map(|_| make(&s, &r).id).collect();
        assert_eq!(ids[..2], [1, 2]);
        assert_eq!(*ids.last().unwrap(), ID_BLOCK + 1);
        s.close_uncleanly();
        (r, ids)
    };
    let s = open(dir.path());
    let next = make(&s, &r);
    assert_eq!(
        next.id,
        2 * ID_BLOCK + 1,
        "the rest of a used block is skipped"
    );
    assert_eq!(next.number, ID_BLOCK + 2, "numbers stay consecutive");
    ids.push(next.id);
    drop(s);
    let s = open(dir.path());
    ids.push(make(&s, &r).id);
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
}
