//! The PostgreSQL engine against a real PostgreSQL: `TEST_PG_URL` (not
//! `EMISOR_…`, which the server reads as settings)
//! names a role that may create databases (`postgres://user:password@host/db`);
//! each test makes a database of its own and drops it. Without the
//! variable each test says why it did nothing and passes.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use chrono::{FixedOffset, NaiveDate, TimeZone, Utc};
use postgres::NoTls;

use super::{company, history, keys, new_doc, resolution, test_key};
use crate::engine::postgres::off_runtime::OffRuntime;
use crate::engine::postgres::{off_runtime, PgOptions, PgStore};
use crate::model::received::{CopyCheck, PartyRef};
use crate::*;

const URL_VAR: &str = "TEST_PG_URL";

/// A database of one test, dropped with it.
struct TestDb {
    admin: String,
    name: String,
    url: String,
}

impl TestDb {
    fn new() -> Option<TestDb> {
        let Ok(admin) = std::env::var(URL_VAR) else {
            eprintln!("skipped: {URL_VAR} is not set (a PostgreSQL URL of a role that may create databases)");
            return None;
        };
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let name = format!(
            "emisor_test_{}_{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed),
            Utc::now().timestamp_subsec_nanos()
        );
        off_runtime(|| {
            let mut client = postgres::Client::connect(&admin, NoTls).unwrap();
            client
                .batch_execute(&format!("CREATE DATABASE {name}"))
                .unwrap();
        });
        let (base, query) = match admin.split_once('?') {
            Some((b, q)) => (b, format!("?{q}")),
            None => (admin.as_str(), String::new()),
        };
        let root = base.rsplit_once('/').map_or(base, |(root, _)| root);
        let url = format!("{root}/{name}{query}");
        Some(TestDb { admin, name, url })
    }

    fn options(&self) -> PgOptions {
        PgOptions::new(SecretText::new(self.url.clone()))
    }

    fn open(&self) -> PgStore {
        PgStore::open(&self.options(), |_| Ok(keys())).unwrap()
    }

    fn client(&self) -> postgres::Client {
        postgres::Client::connect(&self.url, NoTls).unwrap()
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        off_runtime(|| {
            if let Ok(mut c) = postgres::Client::connect(&self.admin, NoTls) {
                let _ = c.batch_execute(&format!(
                    "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                    self.name
                ));
            }
        });
    }
}

/// How many migrations the database's history holds.
fn applied_migrations(db: &TestDb) -> i64 {
    db.client()
        .query_one("SELECT count(*) FROM refinery_schema_history", &[])
        .unwrap()
        .get(0)
}

fn own_resolution(s: &PgStore, from: u64, to: u64) -> NumberingResolution {
    let c = s.create_company(company()).unwrap();
    s.add_resolution(c.id, resolution(from, to)).unwrap()
}

fn files(at: Option<chrono::DateTime<FixedOffset>>) -> DocumentFiles {
    DocumentFiles {
        xml: "<Invoice>ñandú</Invoice>".repeat(50),
        xml_name: "fv.xml".into(),
        zip_name: "z.zip".into(),
        zip: match at {
            Some(at) => ZipFile::Derived { at },
            None => ZipFile::Stored(vec![1, 2, 3]),
        },
    }
}

/// Phase two through the traits: staged, then committed as built.
fn build(s: &PgStore, d: &mut DocumentRecord, code: &str, job: Option<Job>) -> Option<Job> {
    d.pending_build = false;
    d.state = state::QUEUED;
    d.code = Some(code.into());
    d.total = "119000.50".into();
    d.updated_at = Utc::now();
    let staged = s
        .stage_files(d.id, d.company_id, d.document_type, &files(None))
        .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(s.commit_staged(d.clone(), staged, job, history("built")))
        .unwrap()
}

#[test]
fn the_schema_is_migrated_once_and_a_reopen_keeps_everything() {
    let Some(db) = TestDb::new() else { return };
    let s = db.open();
    assert!(s.is_empty().unwrap());
    let c = s.create_company(company()).unwrap();
    assert!(matches!(
        s.create_company(company()),
        Err(StoreError::Conflict(_))
    ));
    s.put_setting("admin_token_hash", "x1").unwrap();
    drop(s);
    let s = db.open();
    assert!(!s.is_empty().unwrap());
    assert_eq!(s.company(c.id).unwrap().unwrap().nit, "900000001");
    assert_eq!(
        s.setting("admin_token_hash").unwrap().as_deref(),
        Some("x1")
    );
    let versions = applied_migrations(&db);
    assert_eq!(
        versions,
        crate::engine::postgres::migrations().len() as i64,
        "each migration, applied once"
    );
    s.check_writable().unwrap();
}

/// A URL naming a standby's host beside the primary's, with
/// `target_session_attrs=read-write` (docs/operations.md, "A standby and
/// its failover"): the store connects to the host that takes writes, past
/// one that does not answer.
#[test]
fn a_url_of_several_hosts_connects_to_the_one_that_takes_writes() {
    let Some(db) = TestDb::new() else { return };
    let (scheme_and_user, rest) = db.url.split_once('@').expect("a URL with a user");
    let sep = if rest.contains('?') { '&' } else { '?' };
    // Port 1 of the loopback: nothing listens there.
    let url = format!("{scheme_and_user}@127.0.0.1:1,{rest}{sep}target_session_attrs=read-write");
    let s = PgStore::open(&PgOptions::new(SecretText::new(url)), |_| Ok(keys())).unwrap();
    let c = s.create_company(company()).unwrap();
    assert_eq!(s.company(c.id).unwrap().unwrap().nit, "900000001");
}

/// A node of an older build, started while an upgrade is under way on a
/// schema a newer build migrated further: it runs no migration and serves
/// on it, as long as every migration it knows is there; one the newer
/// schema lacks stops it.
#[test]
fn an_older_build_serves_on_a_schema_a_newer_build_migrated() {
    let Some(db) = TestDb::new() else { return };
    let s = db.open();
    let c = s.create_company(company()).unwrap();
    drop(s);
    // A newer build's migration: a table this build never reads.
    db.client()
        .batch_execute(
            "CREATE TABLE from_a_newer_build (id bigint PRIMARY KEY);
             INSERT INTO refinery_schema_history (version, name, applied_on, checksum)
             VALUES (999, 'from_a_newer_build', '2026-11-29T00:00:00Z', '1');",
        )
        .unwrap();
    let s = db.open();
    assert_eq!(s.company(c.id).unwrap().unwrap().nit, "900000001");
    s.check_writable().unwrap();
    drop(s);
    let versions = applied_migrations(&db);
    assert_eq!(
        versions,
        crate::engine::postgres::migrations().len() as i64 + 1,
        "nothing run again, nothing removed"
    );

    // A newer schema without one of this build's migrations: refused.
    db.client()
        .batch_execute("DELETE FROM refinery_schema_history WHERE version = 1;")
        .unwrap();
    let refused = PgStore::open(&db.options(), |_| Ok(keys()));
    let Err(StoreError::Database(why)) = refused else {
        panic!("an older build opened a schema without one of its migrations");
    };
    assert!(why.contains("[1]"), "{why}");
}

#[test]
fn secrets_are_sealed_in_the_database_and_another_key_is_refused() {
    let Some(db) = TestDb::new() else { return };
    let s = db.open();
    let r = own_resolution(&s, 1, 10);
    let mut c = s.company(r.company_id).unwrap().unwrap();
    c.webhook_secret = Some(SecretText::new("whsec-very-secret"));
    s.update_company(&c).unwrap();
    let stored: String = db
        .client()
        .query_one(
            "SELECT r.record::text || c.record::text FROM resolutions r, companies c",
            &[],
        )
        .unwrap()
        .get(0);
    assert!(stored.contains("\"sealed\""));
    assert!(!stored.contains("fc8eac422eba16e22ffd8c6f94b3f40a6e38162c"));
    assert!(!stored.contains("whsec-very-secret"));
    assert_eq!(
        s.resolution(r.company_id, r.id)
            .unwrap()
            .unwrap()
            .technical_key,
        r.technical_key
    );
    drop(s);
    let other = Keyring::new(MasterKey::from_bytes(&[9u8; 32]).unwrap());
    match PgStore::open(&db.options(), |_| Ok(other)) {
        Err(StoreError::MasterKey(m)) => assert!(m.contains("sealed under master key"), "{m}"),
        Err(e) => panic!("refused for another reason: {e}"),
        Ok(_) => panic!("a key that does not open the sealed values was taken"),
    }
}

#[test]
fn the_url_is_never_shown() {
    let url = "postgres://emisor:hunter2-pass@127.0.0.1:1/nowhere";
    let mut options = PgOptions::new(SecretText::new(url));
    options.connect_timeout = std::time::Duration::from_millis(300);
    assert!(!format!("{options:?}").contains("hunter2"));
    match PgStore::open(&options, |_| Ok(keys())) {
        Err(e) => {
            assert!(matches!(e, StoreError::Unavailable(_)), "{e}");
            assert!(!e.to_string().contains("hunter2"), "{e}");
        }
        Ok(_) => panic!("nothing listens on port 1"),
    }
    let bad = PgOptions::new(SecretText::new("mysql://u:hunter2@x"));
    match PgStore::open(&bad, |_| Ok(keys())) {
        Err(e) => assert!(!e.to_string().contains("hunter2"), "{e}"),
        Ok(_) => panic!("not a PostgreSQL URL"),
    }
}

#[test]
fn issuer_records_keys_customers_and_settings() {
    let Some(db) = TestDb::new() else { return };
    let s = db.open();
    let r = own_resolution(&s, 990000000, 995000000);
    let company = r.company_id;
    assert_eq!(s.resolutions(company).unwrap(), vec![r.clone()]);
    assert_eq!(s.next_number(&r).unwrap(), 990000000);
    let date = NaiveDate::from_ymd_opt(2026, 11, 22).unwrap();
    assert_eq!(
        s.active_resolution(company, Environment::Live, 1, date)
            .unwrap(),
        Some(r.clone())
    );
    // The testing environment numbers from the authority's test set.
    let set = s
        .active_resolution(company, Environment::Test, 1, date)
        .unwrap()
        .unwrap();
    assert!(set.is_test_set());

    let k = s.insert_api_key(test_key(company)).unwrap();
    assert!(matches!(
        s.insert_api_key(test_key(company)),
        Err(StoreError::Conflict(_))
    ));
    assert_eq!(
        s.api_key_by_hash(&"ab".repeat(32)).unwrap().unwrap().id,
        k.id
    );
    let revoked = s.revoke_api_key(k.id, Utc::now()).unwrap().unwrap();
    assert!(revoked.revoked_at.is_some());
    assert_eq!(s.api_keys(company).unwrap(), vec![revoked]);
    assert_eq!(s.revoke_api_key(999, Utc::now()).unwrap(), None);

    let input = CustomerInput {
        identification_number: "123".into(),
        name: "Ana".into(),
        email: "ana@example.com".into(),
        address: Some("Cra 7".into()),
        ..Default::default()
    };
    let first = s.upsert_customer(company, input.clone()).unwrap();
    let same = s.upsert_customer(company, input.clone()).unwrap();
    assert_eq!(first, same, "an unchanged customer is not rewritten");
    let second = s
        .upsert_customer(
            company,
            CustomerInput {
                name: "Ana María_50%".into(),
                address: None,
                email: String::new(),
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
    assert_eq!(
        second.email, "ana@example.com",
        "empty email keeps the stored one"
    );
    let page = s.customers(company, 1, 20, Some("MARÍA_50%")).unwrap();
    assert_eq!((page.total, page.items.len()), (1, 1));
    assert_eq!(s.customers(company, 1, 20, Some("a_x")).unwrap().total, 0);
    assert_eq!(s.customers(company, 1, 20, Some("12")).unwrap().total, 1);
    assert_eq!(s.customers_after(company, 0, 10).unwrap(), vec![second]);

    s.put_setting("a", "1").unwrap();
    s.put_setting("a", "2").unwrap();
    assert_eq!(
        s.settings().unwrap(),
        vec![("a".to_string(), "2".to_string())]
    );
}

#[test]
fn numbers_have_no_gap_and_none_twice_across_concurrent_writers() {
    let Some(db) = TestDb::new() else { return };
    let s = Arc::new(db.open());
    let r = own_resolution(&s, 100, 100_000);
    let threads: Vec<_> = (0..6)
        .map(|t| {
            let (s, r) = (s.clone(), r.clone());
            std::thread::spawn(move || {
                let mut numbers = Vec::new();
                for i in 0..20 {
                    // Every third a reference already used by its own
                    // thread: refused without consuming a number.
                    let reference = format!("t{t}-{}", i - i % 3);
                    match s.create_document(new_doc(&r, Some(&reference))) {
                        Ok(d) => numbers.push(d.number),
                        Err(StoreError::DuplicateReference { .. }) => {}
                        Err(e) => panic!("{e}"),
                    }
                }
                numbers
            })
        })
        .collect();
    let mut numbers: Vec<u64> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    numbers.sort_unstable();
    let expected: Vec<u64> = (100..100 + numbers.len() as u64).collect();
    assert_eq!(numbers, expected, "gapless, each number once");
    assert_eq!(numbers.len(), 6 * 7);
    assert_eq!(s.next_number(&r).unwrap(), 100 + 42);
    assert_eq!(s.monthly_usage(r.company_id, 202611).unwrap(), 42);
    assert_eq!(s.pending_builds().unwrap().len(), 42);
}

/// A half-built document whose caller asked for its transmission was never
/// answered (phase two clears the flag in its one transaction): it is found
/// as a draft, built again without being transmitted unasked.
#[test]
fn a_half_built_document_is_found_as_a_draft() {
    let Some(db) = TestDb::new() else { return };
    let s = db.open();
    let r = own_resolution(&s, 1, 100);
    let unanswered = s
        .create_document(NewDocument {
            queued: true,
            ..new_doc(&r, None)
        })
        .unwrap();
    assert_eq!(unanswered.state, state::QUEUED);
    let found = s.pending_builds().unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].id, unanswered.id);
    assert_eq!(found[0].state, state::DRAFT);
}

#[test]
fn a_reference_is_claimed_once_by_concurrent_writers() {
    let Some(db) = TestDb::new() else { return };
    // Two stores: two nodes' pools on one database.
    let (a, b) = (Arc::new(db.open()), Arc::new(db.open()));
    let r = own_resolution(&a, 1, 1000);
    let threads: Vec<_> = (0..8)
        .map(|i| {
            let s = if i % 2 == 0 { a.clone() } else { b.clone() };
            let r = r.clone();
            std::thread::spawn(move || s.create_document(new_doc(&r, Some("ORD-1"))))
        })
        .collect();
    let results: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let won: Vec<&DocumentRecord> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
    assert_eq!(won.len(), 1, "exactly one document");
    for e in results.iter().filter_map(|r| r.as_ref().err()) {
        assert!(
            matches!(e, StoreError::DuplicateReference { id } if *id == won[0].id),
            "{e}"
        );
    }
    assert_eq!(won[0].number, 1);
    assert_eq!(a.next_number(&r).unwrap(), 2, "the refused took no number");
    assert_eq!(
        b.document_by_reference(r.company_id, "ORD-1").unwrap(),
        Some(won[0].id)
    );
}

#[test]
fn limits_and_ranges_refuse_without_consuming_anything() {
    let Some(db) = TestDb::new() else { return };
    let s = db.open();
    let r = own_resolution(&s, 1, 2);
    let mut limited = new_doc(&r, None);
    limited.monthly_limit = Some(1);
    s.create_document(limited.clone()).unwrap();
    assert!(matches!(
        s.create_document(limited),
        Err(StoreError::LimitReached { limit: 1 })
    ));
    s.create_document(new_doc(&r, None)).unwrap();
    assert!(matches!(
        s.create_document(new_doc(&r, None)),
        Err(StoreError::RangeExhausted { .. })
    ));
    assert_eq!(s.next_number(&r).unwrap(), 3);
    assert_eq!(s.monthly_usage(r.company_id, 202611).unwrap(), 2);
}

/// Documents for one customer from two nodes at once, each changing a
/// field of its own: the customer ends with every last change (a change
/// is written over the row as it is then, never over an older read).
#[test]
fn a_customer_changed_by_concurrent_documents_keeps_every_change() {
    let Some(db) = TestDb::new() else { return };
    let (a, b) = (Arc::new(db.open()), Arc::new(db.open()));
    let r = own_resolution(&a, 1, 10_000);
    let threads: Vec<_> = [(a.clone(), "address"), (b.clone(), "phone")]
        .into_iter()
        .map(|(s, field)| {
            let r = r.clone();
            std::thread::spawn(move || {
                for i in 0..40 {
                    let value = Some(format!("{field}-{i}"));
                    let mut input = CustomerInput {
                        identification_number: "900123".into(),
                        name: "Cliente".into(),
                        email: "c@example.com".into(),
                        ..Default::default()
                    };
                    match field {
                        "address" => input.address = value,
                        _ => input.phone = value,
                    }
                    // Each change, then the same customer unchanged.
                    for _ in 0..2 {
                        let mut new = new_doc(&r, None);
                        new.customer = Some(input.clone());
                        s.create_document(new).unwrap();
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let page = a.customers(r.company_id, 1, 10, None).unwrap();
    assert_eq!(page.total, 1, "one customer");
    let c = &page.items[0];
    assert_eq!(c.address.as_deref(), Some("address-39"));
    assert_eq!(c.phone.as_deref(), Some("phone-39"));
    assert_eq!(a.next_number(&r).unwrap(), 161, "every document numbered");
}

/// Phase two without a job is one statement; with a job, or over a record
/// holding authority events the built copy lacks, one transaction: the
/// files, the record (its events kept), one history line, the job.
#[test]
fn phase_two_writes_all_of_it_or_nothing() {
    let Some(db) = TestDb::new() else { return };
    let s = db.open();
    let r = own_resolution(&s, 1, 1000);
    let built = |d: &DocumentRecord| {
        let mut d = d.clone();
        d.pending_build = false;
        d.state = state::QUEUED;
        d.code = Some(format!("cufe-{}", d.id));
        d
    };
    let history_of = |id: u64| s.history(id).unwrap().len();

    let d = built(&s.create_document(new_doc(&r, None)).unwrap());
    assert_eq!(
        s.complete_document(&d, &files(None), None, &history("built"))
            .unwrap(),
        None
    );
    assert_eq!(s.document(d.id).unwrap().unwrap(), d);
    assert_eq!(s.document_files(d.id).unwrap(), Some(files(None)));
    assert_eq!(history_of(d.id), 1);

    let e = built(&s.create_document(new_doc(&r, None)).unwrap());
    let job = Job {
        id: 0,
        kind: "transmit".into(),
        company_id: r.company_id,
        document_id: Some(e.id),
        attempts: 0,
        run_at_ms: 5,
        in_flight: false,
        payload: serde_json::Value::Null,
        created_at: Utc::now(),
    };
    let job = s
        .complete_document(&e, &files(None), Some(job), &history("built"))
        .unwrap()
        .unwrap();
    assert_eq!(s.job_for_document(e.id).unwrap(), Some(job));
    assert_eq!(s.document(e.id).unwrap().unwrap(), e);
    assert_eq!(history_of(e.id), 1);

    // Built again from a copy without the events the sweep stored since.
    let mut with_events = e.clone();
    with_events.authority_events.push(
        serde_json::from_value(serde_json::json!({
            "code": "030", "name": "Acuse de recibo", "date": "2026-11-21",
            "learned_at": "2026-11-21T10:00:00Z"
        }))
        .unwrap(),
    );
    with_events
        .list_keys
        .insert(EVENT_STANDING_KEY.into(), "recibida".into());
    s.update_document(&with_events, history("event")).unwrap();
    let mut rebuilt = e.clone();
    rebuilt.code = Some("cufe-again".into());
    s.complete_document(&rebuilt, &files(None), None, &history("rebuilt"))
        .unwrap();
    let stored = s.document(e.id).unwrap().unwrap();
    assert_eq!(stored.code.as_deref(), Some("cufe-again"));
    assert_eq!(stored.authority_events, with_events.authority_events);
    assert_eq!(
        stored.list_keys.get(EVENT_STANDING_KEY).map(String::as_str),
        Some("recibida")
    );
    assert_eq!(history_of(e.id), 3, "one line each: built, event, rebuilt");

    // No such document: nothing written.
    let mut missing = d.clone();
    missing.id = 999_999;
    assert!(matches!(
        s.complete_document(&missing, &files(None), None, &history("built")),
        Err(StoreError::NotFound(_))
    ));
    let orphans: i64 = db
        .client()
        .query_one(
            "SELECT (SELECT count(*) FROM document_files WHERE document_id = 999999)
                  + (SELECT count(*) FROM document_history WHERE document_id = 999999)",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(orphans, 0);
}

#[test]
fn phase_two_files_history_and_lists() {
    let Some(db) = TestDb::new() else { return };
    let s = db.open();
    let r = own_resolution(&s, 1, 1000);
    let mut customer_doc = new_doc(&r, Some("A-1"));
    customer_doc.customer = Some(CustomerInput {
        identification_number: "800".into(),
        name: "Cliente".into(),
        ..Default::default()
    });
    customer_doc.payload_hash = [7; 32];
    customer_doc.request = br#"{"numero": 1}"#.to_vec();
    let before = Utc::now() - chrono::Duration::seconds(1);
    let mut d = s.create_document(customer_doc).unwrap();
    assert!(d.customer_id.is_some());
    assert_eq!(s.document_files(d.id).unwrap(), None, "not built yet");
    assert_eq!(
        s.document_request(d.id).unwrap().as_deref(),
        Some(&br#"{"numero": 1}"#[..])
    );
    let job = Job {
        id: 0,
        kind: "transmit".into(),
        company_id: r.company_id,
        document_id: Some(d.id),
        attempts: 0,
        run_at_ms: 5,
        in_flight: false,
        payload: serde_json::Value::Null,
        created_at: Utc::now(),
    };
    let job = build(&s, &mut d, "cufe-1", Some(job)).unwrap();
    assert_ne!(job.id, 0);
    assert_eq!(s.job_for_document(d.id).unwrap(), Some(job.clone()));
    assert_eq!(s.document(d.id).unwrap().unwrap(), d);
    assert_eq!(s.document_files(d.id).unwrap(), Some(files(None)));
    assert_eq!(s.history(d.id).unwrap()[0].event, "built");

    // A derived ZIP keeps its stamp's offset.
    let bogota = FixedOffset::west_opt(5 * 3600).unwrap();
    let at = bogota.with_ymd_and_hms(2026, 11, 22, 8, 30, 0).unwrap();
    let mut e = s.create_document(new_doc(&r, None)).unwrap();
    e.pending_build = false;
    e.state = state::ACCEPTED;
    e.issue_date = NaiveDate::from_ymd_opt(2026, 11, 20).unwrap();
    e.list_keys
        .insert(EVENT_STANDING_KEY.into(), "aceptada".into());
    s.complete_document(&e, &files(Some(at)), None, &history("built"))
        .unwrap();
    assert_eq!(s.document_files(e.id).unwrap(), Some(files(Some(at))));
    let pending = s.create_document(new_doc(&r, None)).unwrap();

    let q = |states: Vec<u8>, keys: Vec<(&str, &str)>, from: Option<u32>| ListQuery {
        company_id: r.company_id,
        environment: Environment::Test,
        family: Family::Invoices,
        from: from.map(|d| NaiveDate::from_ymd_opt(2026, 11, d).unwrap()),
        to: None,
        states,
        keys: keys
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        page: 1,
        limit: 10,
    };
    let ids = |p: Page<DocumentRecord>| (p.total, p.items.iter().map(|d| d.id).collect::<Vec<_>>());
    assert_eq!(
        ids(s.list_documents(&q(vec![], vec![], None)).unwrap()),
        (2, vec![d.id, e.id])
    );
    assert_eq!(
        ids(s
            .list_documents(&q(vec![state::ACCEPTED], vec![], None))
            .unwrap()),
        (1, vec![e.id])
    );
    assert_eq!(
        ids(s
            .list_documents(&q(vec![], vec![(EVENT_STANDING_KEY, "aceptada")], None))
            .unwrap()),
        (1, vec![e.id])
    );
    assert_eq!(
        ids(s.list_documents(&q(vec![], vec![], Some(21))).unwrap()),
        (1, vec![d.id])
    );
    assert!(matches!(
        s.list_documents(&q(vec![], vec![("id_caja", "1")], None)),
        Err(StoreError::UnindexedKey { .. })
    ));

    // An older copy without the events the sweep stored keeps them.
    let mut stale = e.clone();
    stale.list_keys.clear();
    stale.authority_events.clear();
    e.authority_events.push(
        serde_json::from_value(serde_json::json!({
            "code": "033", "name": "Aceptación expresa", "date": "2026-11-21",
            "learned_at": "2026-11-21T10:00:00Z"
        }))
        .unwrap(),
    );
    s.update_document(&e, history("event")).unwrap();
    s.update_document(&stale, history("stale")).unwrap();
    let kept = s.document(e.id).unwrap().unwrap();
    assert_eq!(kept.authority_events, e.authority_events);
    assert_eq!(
        kept.list_keys.get(EVENT_STANDING_KEY).map(String::as_str),
        Some("aceptada")
    );

    assert_eq!(
        s.documents_in_states(Some(r.company_id), &[state::QUEUED, state::ACCEPTED])
            .unwrap()
            .iter()
            .map(|d| d.id)
            .collect::<Vec<_>>(),
        vec![d.id, e.id]
    );
    assert_eq!(s.pending_builds().unwrap(), vec![pending.clone()]);
    s.keep_pending(pending.id).unwrap();
    assert_eq!(s.pending_builds().unwrap()[0].state, state::DRAFT);
    let recent = s.recent_requests(before).unwrap();
    assert_eq!(recent.len(), 3);
    assert_eq!(recent[0].payload_hash, [7; 32]);
    let mut counts = s.document_counts().unwrap();
    counts.sort_unstable();
    assert_eq!(
        counts,
        vec![((1, state::ACCEPTED), 1), ((1, state::QUEUED), 1)]
    );
    assert_eq!(s.documents_after(d.id, 10).unwrap().len(), 2);
    let numeric: String = db
        .client()
        .query_one(
            "SELECT total::text FROM documents WHERE id = $1",
            &[&(d.id as i64)],
        )
        .unwrap()
        .get(0);
    assert_eq!(numeric, "119000.50", "money is numeric");
    let customer: Option<i64> = db
        .client()
        .query_one(
            "SELECT customer_id FROM documents WHERE id = $1",
            &[&(d.id as i64)],
        )
        .unwrap()
        .get(0);
    assert_eq!(customer.map(|c| c as u64), d.customer_id);
}

#[test]
fn leases_jobs_events_and_mail() {
    let Some(db) = TestDb::new() else { return };
    let s = db.open();
    // Leases, as on sled (`tests/leases.rs`).
    let lease = s.claim_job(7, "a", 1_000, 500).unwrap().unwrap();
    assert_eq!(lease.expires_at_ms, 1_500);
    assert_eq!(s.claim_job(7, "b", 1_200, 500).unwrap(), None);
    assert_eq!(
        s.renew_job_lease(7, "a", 1_400, 500)
            .unwrap()
            .unwrap()
            .expires_at_ms,
        1_900
    );
    assert_eq!(s.claim_job(7, "b", 1_800, 500).unwrap(), None);
    let taken = s.claim_job(7, "b", 1_900, 500).unwrap().unwrap();
    assert_eq!(
        taken.worker,
        format!("b@{}", s.node()),
        "named with its node"
    );
    assert_eq!(s.renew_job_lease(7, "a", 1_950, 500).unwrap(), None);
    assert!(!s.release_job(7, "a").unwrap());
    assert!(s.release_job(7, "b").unwrap());
    assert_eq!(s.job_lease(7).unwrap(), None);

    let r = own_resolution(&s, 1, 10);
    let d = s.create_document(new_doc(&r, None)).unwrap();
    let job = Job {
        id: 0,
        kind: "email".into(),
        company_id: r.company_id,
        document_id: Some(d.id),
        attempts: 0,
        run_at_ms: 1,
        in_flight: false,
        payload: serde_json::Value::Null,
        created_at: Utc::now(),
    };
    let log = EmailLog {
        id: 0,
        company_id: r.company_id,
        document_id: d.id,
        to: vec!["a@example.com".into()],
        cc: Vec::new(),
        status: email_status::QUEUED.into(),
        attempts: 0,
        last_error: None,
        created_at: Utc::now(),
        sent_at: None,
        message_id: "m1".into(),
        subject: "s".into(),
        automatic: true,
        resend_of: None,
        note: None,
        history: Vec::new(),
    };
    let mut accepted = d.clone();
    accepted.pending_build = false;
    accepted.state = state::ACCEPTED;
    let queued = s
        .accept_document(
            &accepted,
            None,
            &history("accepted"),
            Some("<AR/>"),
            Some((log.clone(), job.clone())),
        )
        .unwrap()
        .unwrap();
    assert_eq!(queued.1.payload["email_id"], queued.0.id);
    // Accepted twice over: mailed once.
    assert_eq!(
        s.accept_document(&accepted, None, &history("again"), None, Some((log, job)))
            .unwrap(),
        None
    );
    assert_eq!(
        s.application_response(d.id).unwrap().as_deref(),
        Some("<AR/>")
    );
    let (mut sent, mail_job) = queued;
    sent.status = email_status::SENT.into();
    s.update_email(&sent, EmailJob::Remove(mail_job.id))
        .unwrap();
    assert_eq!(s.email_logs(d.id).unwrap(), vec![sent.clone()]);
    assert_eq!(s.email_log(sent.id).unwrap(), Some(sent));
    assert_eq!(s.job(mail_job.id).unwrap(), None);
    assert!(s.jobs().unwrap().is_empty());

    for kind in ["webhook", "other", "webhook"] {
        s.append_event(EventRecord {
            id: 0,
            company_id: r.company_id,
            document_id: None,
            kind: kind.into(),
            at: Utc::now(),
            data: serde_json::Value::Null,
        })
        .unwrap();
    }
    let hooks = s.events(r.company_id, "webhook", 1).unwrap();
    assert_eq!(hooks.len(), 1);
    assert_eq!(hooks[0].id, 3, "the most recent");
    assert_eq!(s.events_after(r.company_id, 1, 10).unwrap().len(), 2);
}

#[tokio::test]
async fn the_async_handle_on_postgres_commits_before_it_answers() {
    let Some(db) = TestDb::new() else { return };
    let dir = tempfile::tempdir().unwrap();
    let options = StoreOptions {
        engine: Engine::Postgres,
        url: Some(SecretText::new(db.url.clone())),
        ..StoreOptions::default()
    };
    let handle = crate::open(dir.path(), options, |_| Ok(keys())).unwrap();
    assert_eq!(handle.engine(), Engine::Postgres);
    let r = {
        let s = handle.store();
        let c = s.create_company(company()).unwrap();
        s.add_resolution(c.id, resolution(1, 100)).unwrap()
    };
    let store = handle.start_async().unwrap();
    let (choice, writer) = (ResolutionChoice::Id(r.id), store.clone());
    let (doc, ()) = tokio::task::spawn_blocking(move || {
        writer.create_checked_blocking::<(), StoreError>(
            r.company_id,
            SoftwareKind::Invoicing,
            choice,
            |records| {
                assert_eq!(records.next_number, Some(1));
                Ok((
                    new_doc(records.resolution.as_ref().unwrap(), Some("R-1")),
                    (),
                ))
            },
        )
    })
    .await
    .unwrap()
    .unwrap();
    // Phase one is committed: another node sees the number taken.
    let other = OffRuntime(db.open());
    assert_eq!(other.next_number(&r).unwrap(), 2);
    assert_eq!(other.pending_builds().unwrap().len(), 1);

    let mut built = doc.clone();
    built.pending_build = false;
    built.state = state::QUEUED;
    built.code = Some("cufe-async".into());
    let job = Job {
        id: 0,
        kind: "transmit".into(),
        company_id: r.company_id,
        document_id: Some(doc.id),
        attempts: 0,
        run_at_ms: 0,
        in_flight: false,
        payload: serde_json::Value::Null,
        created_at: Utc::now(),
    };
    let _incoming = store.incoming_commit();
    let (job, files) = store
        .commit_document(built.clone(), files(None), Some(job), history("built"))
        .await
        .unwrap();
    let job = job.unwrap();
    // Committed when answered: read through another pool.
    assert_eq!(other.document(doc.id).unwrap().unwrap(), built);
    assert_eq!(other.document_files(doc.id).unwrap(), Some(files));
    assert_eq!(other.job_for_document(doc.id).unwrap(), Some(job.clone()));
    assert_eq!(other.document_by_code("cufe-async").unwrap(), Some(doc.id));

    let mut sent = built.clone();
    sent.state = state::ACCEPTED;
    store
        .finish_accepted(
            sent.clone(),
            Some(job.id),
            history("accepted"),
            Some("<AR/>".into()),
            None,
        )
        .await
        .unwrap();
    assert_eq!(
        other.document(doc.id).unwrap().unwrap().state,
        state::ACCEPTED
    );
    assert_eq!(other.job(job.id).unwrap(), None);
    assert_eq!(
        store.application_response(doc.id).await.unwrap().as_deref(),
        Some("<AR/>")
    );
    assert_eq!(store.history(doc.id).await.unwrap().len(), 2);
    let claimed = store.claim_job(job.id, "w", 0, 10).await.unwrap();
    assert!(claimed.is_some());
    // A backup's copy point is PostgreSQL's own.
    let refused = store
        .on_own_thread(|_, backup| {
            backup
                .checkpoint_to(std::path::Path::new("/nonexistent"), &mut || {})
                .map(|_| ())
        })
        .await
        .unwrap();
    assert!(matches!(refused, Err(StoreError::NotOnThisEngine(_))));
    handle.close().unwrap();
}

fn party(nit: &str, company: Option<u64>) -> PartyRef {
    PartyRef {
        id_number: nit.into(),
        id_type: "31".into(),
        check_digit: None,
        name: format!("Empresa {nit}"),
        company_id: company,
    }
}

fn invoice(cufe: &str, uploaded_by: Option<u64>, copy: CopyCheck) -> ReceivedInvoice {
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
        uploaded_by,
        document_id: None,
        eligible: false,
        authority_copy: copy,
        events: Vec::new(),
        created_at: now,
        updated_at: now,
    }
}

#[test]
fn received_invoices_one_upload_per_company_one_record_per_cufe_by_version() {
    let Some(db) = TestDb::new() else { return };
    let s = db.open();
    let first = s
        .save_received(
            invoice("c1", Some(2), CopyCheck::default()),
            Some("<Invoice/>".into()),
        )
        .unwrap();
    assert_eq!(first.version, 1);
    match s.save_received(invoice("c1", Some(2), CopyCheck::default()), None) {
        Err(StoreError::DuplicateReference { id }) => assert_eq!(id, first.id),
        other => panic!("{other:?}"),
    }
    assert_eq!(s.unchecked_received().unwrap(), vec![first.id]);
    assert_eq!(
        s.received_by_cufe("c1").unwrap(),
        None,
        "unchecked: not the CUFE's"
    );
    assert_eq!(
        s.received_upload(first.id).unwrap().as_deref(),
        Some("<Invoice/>")
    );

    // Compared and found equal: the CUFE's record from then on.
    let mut checked = first.clone();
    checked.authority_copy = CopyCheck::same("equal");
    checked.eligible = true;
    let checked = s.save_received(checked, None).unwrap();
    assert_eq!(checked.version, 2);
    assert!(s.unchecked_received().unwrap().is_empty());
    assert_eq!(
        s.received_by_cufe("c1").unwrap().map(|r| r.id),
        Some(first.id)
    );
    assert_eq!(
        s.received_upload(first.id).unwrap().as_deref(),
        Some("<Invoice/>")
    );
    // A second vouched record of the CUFE is refused.
    match s.save_received(invoice("c1", None, CopyCheck::same("issued")), None) {
        Err(StoreError::DuplicateReference { id }) => assert_eq!(id, first.id),
        other => panic!("{other:?}"),
    }
    // A writer holding the first version loses.
    assert!(matches!(
        s.save_received(first.clone(), None),
        Err(StoreError::Conflict(_))
    ));
    assert_eq!(
        s.received_upload_of(2, "c1").unwrap().map(|r| r.version),
        Some(2)
    );

    let second = s
        .save_received(invoice("c2", Some(2), CopyCheck::same("equal")), None)
        .unwrap();
    let page = s.received_page(2, Environment::Test, 1, 1).unwrap();
    assert_eq!((page.total, page.items[0].id), (2, second.id));
    assert_eq!(
        s.received_page(2, Environment::Live, 1, 10).unwrap().total,
        0
    );
    let eligible = s.eligible_page(1, Environment::Test, 1, 10).unwrap();
    assert_eq!((eligible.total, eligible.items[0].id), (1, first.id));

    let event = s.next_event_id().unwrap();
    assert!(s.next_event_id().unwrap() > event);
    let files = EventFiles {
        xml: "<ApplicationResponse/>".into(),
        zip_name: "z.zip".into(),
        zip: vec![1, 2],
    };
    s.put_event_files(event, &files).unwrap();
    assert_eq!(s.event_files(event).unwrap(), Some(files));
    assert_eq!(s.received_after(first.id, 10).unwrap(), vec![second]);
}

#[test]
fn an_export_of_version_1_imports_into_postgres() {
    let Some(db) = TestDb::new() else { return };
    let s = db.open();
    let file = include_bytes!("export-v1.jsonl");
    crate::export::import(&mut std::io::BufReader::new(&file[..]), &s, &s).unwrap();
    let c = &s.companies().unwrap()[0];
    assert_eq!(c.nit, "900000001");
    assert_eq!(c.webhook_secret.as_ref().unwrap().expose(), "whsec");
    let docs = s.documents_after(0, 10).unwrap();
    assert_eq!(docs.len(), 2);
    assert_eq!(s.document_files(docs[0].id).unwrap().unwrap().xml, "<x/>");
    assert_eq!(s.history(docs[0].id).unwrap().len(), 2);
    assert!(docs[1].pending_build);
    assert_eq!(
        s.document_by_reference(c.id, "REF-1").unwrap(),
        Some(docs[0].id)
    );
    assert_eq!(s.email_logs(docs[0].id).unwrap().len(), 1);
    assert_eq!(s.received_after(0, 10).unwrap()[0].events[0].id, 41);
    assert!(s.event_files(41).unwrap().is_some());
    assert!(
        s.next_event_id().unwrap() > 41,
        "sequences moved past the ids"
    );
    assert_eq!(
        s.settings().unwrap(),
        vec![("alertas".to_string(), "{\"x\":1}".to_string())]
    );
    // Numbering goes on after the imported counters; a second import is refused.
    let r = s.resolutions(c.id).unwrap().pop().unwrap();
    let next = s.next_number(&r).unwrap();
    assert_eq!(s.create_document(new_doc(&r, None)).unwrap().number, next);
    assert!(s.create_document(new_doc(&r, None)).unwrap().id > docs[1].id);
    assert!(matches!(
        s.check_empty_for_import(),
        Err(StoreError::Conflict(_))
    ));
}

#[test]
fn a_point_reads_the_store_as_it_was_while_it_is_written() {
    let Some(db) = TestDb::new() else { return };
    let s = db.open();
    let file = include_bytes!("export-v1.jsonl");
    crate::export::import(&mut std::io::BufReader::new(&file[..]), &s, &s).unwrap();
    let point = s.at_point().unwrap();
    let c = s.companies().unwrap()[0].clone();
    let r = s.resolutions(c.id).unwrap().pop().unwrap();
    let added = s.create_document(new_doc(&r, None)).unwrap();
    s.put_setting("otra", "1").unwrap();
    assert_eq!(s.documents_after(0, 10).unwrap().len(), 3);
    // Two readers at once: the second connection reads the same snapshot.
    let held = point.conn().unwrap();
    assert_eq!(point.documents_after(0, 10).unwrap().len(), 2);
    drop(held);
    assert_eq!(point.settings().unwrap().len(), 1);
    assert!(point.document(added.id).unwrap().is_none());
    assert!(point.next_number(&r).unwrap() < s.next_number(&r).unwrap());
    // Its export holds what the store held at the point.
    let source = crate::export::Source {
        store: &point,
        received: &point,
        backup: &point,
        keys: &point,
    };
    let summary = crate::export::export(&source, "test", &mut Vec::new()).unwrap();
    assert_eq!(summary.by_kind["document"], 2);
    assert_eq!(summary.by_kind["setting"], 1);
    // Dropped, its transactions end: nothing of it is left open.
    drop(point);
    let mut client = db.client();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let open: i64 = client
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() \
                 AND state LIKE 'idle in transaction%'",
                &[],
            )
            .unwrap()
            .get(0);
        if open == 0 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{open} left open");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn an_imported_store_holds_its_numberings_until_each_is_confirmed() {
    let Some(db) = TestDb::new() else { return };
    let s = db.open();
    let r = own_resolution(&s, 1, 100);
    s.create_document(new_doc(&r, None)).unwrap();
    let hold = s.hold_numberings().unwrap();
    assert!(hold
        .held
        .iter()
        .any(|h| (h.resolution_id, h.next) == (r.id, 2)));
    assert_eq!(s.numbering_hold().unwrap(), Some(hold));
    assert!(matches!(
        s.create_document(new_doc(&r, None)),
        Err(StoreError::NumberingHeld { .. })
    ));
    assert!(matches!(
        s.confirm_numbering(r.company_id, r.id, Some(1)),
        Err(StoreError::Conflict(_))
    ));
    let confirmed = s.confirm_numbering(r.company_id, r.id, Some(10)).unwrap();
    assert_eq!(confirmed.next, 10);
    assert_eq!(s.create_document(new_doc(&r, None)).unwrap().number, 10);
}

#[test]
fn an_import_cut_short_leaves_the_database_empty() {
    let Some(db) = TestDb::new() else { return };
    let file = include_bytes!("export-v1.jsonl");
    let text = std::str::from_utf8(file).unwrap();
    let cut: String = text
        .lines()
        .filter(|l| !l.contains("\"entity\":\"end\""))
        .map(|l| format!("{l}\n"))
        .collect();
    {
        let s = db.open();
        let imported = crate::export::import(&mut std::io::BufReader::new(cut.as_bytes()), &s, &s);
        assert!(imported.is_err(), "a file without its end line is refused");
    }
    // The import's one transaction never committed.
    let s = db.open();
    s.check_empty_for_import().unwrap();
    assert!(s.is_empty().unwrap());
    crate::export::import(&mut std::io::BufReader::new(&file[..]), &s, &s).unwrap();
    assert_eq!(s.documents_after(0, 10).unwrap().len(), 2);
}

#[test]
fn the_consoles_search_finds_by_number_code_customer_and_name() {
    let Some(db) = TestDb::new() else { return };
    let s = db.open();
    let r = own_resolution(&s, 990000000, 995000000);
    let mut docs = Vec::new();
    for (name, ident) in [("Álvaro Gómez", "111"), ("Beatriz Ruiz", "222")] {
        let mut new = new_doc(&r, None);
        new.customer = Some(CustomerInput {
            identification_number: ident.into(),
            name: name.into(),
            ..Default::default()
        });
        let mut d = s.create_document(new).unwrap();
        d.pending_build = false;
        d.state = state::ACCEPTED;
        d.code = Some(format!("CUFE{ident}"));
        s.complete_document(&d, &files(None), None, &history("built"))
            .unwrap();
        docs.push(d);
    }
    let q = |text: Option<&str>, customer: Option<&str>, number: Option<&str>| DocumentSearch {
        company_id: r.company_id,
        environment: Environment::Test,
        family: None,
        from: None,
        to: None,
        states: Vec::new(),
        customer: customer.map(str::to_string),
        number: number.map(str::to_string),
        text: text.map(str::to_string),
        page: 1,
        limit: 10,
    };
    let ids = |p: SearchPage| (p.total, p.items.iter().map(|d| d.id).collect::<Vec<_>>());
    let (a, b) = (docs[0].id, docs[1].id);
    assert_eq!(
        ids(s.search_documents(&q(None, None, None)).unwrap()),
        (2, vec![b, a])
    );
    assert_eq!(
        ids(s.search_documents(&q(Some("alv"), None, None)).unwrap()),
        (1, vec![a])
    );
    assert_eq!(
        ids(s
            .search_documents(&q(Some("GOMEZ alv"), None, None))
            .unwrap()),
        (1, vec![a])
    );
    assert_eq!(
        ids(s.search_documents(&q(Some("222"), None, None)).unwrap()),
        (1, vec![b])
    );
    assert_eq!(
        ids(s.search_documents(&q(Some("cufe111"), None, None)).unwrap()),
        (1, vec![a])
    );
    assert_eq!(
        ids(s
            .search_documents(&q(Some("setp990000001"), None, None))
            .unwrap()),
        (1, vec![b])
    );
    assert_eq!(
        ids(s.search_documents(&q(None, Some("111"), None)).unwrap()),
        (1, vec![a])
    );
    assert_eq!(
        ids(s
            .search_documents(&q(None, None, Some("990000000")))
            .unwrap()),
        (1, vec![a])
    );
    assert_eq!(
        ids(s.search_documents(&q(Some("nadie"), None, None)).unwrap()),
        (0, vec![])
    );
    assert!(
        s.search_documents(&q(Some("alv"), None, None))
            .unwrap()
            .total_exact
    );
}

/// The payload window several nodes share: a claim in progress and a
/// payload that made a document are refused through another pool (another
/// node), a released claim is free again, an expired one is taken over.
#[test]
fn payload_claims_hold_across_two_pools() {
    use crate::engine::postgres::nodes::PayloadClaim;
    use std::time::Duration;
    let Some(db) = TestDb::new() else { return };
    let (a, b) = (db.open(), db.open());
    let minute = Duration::from_secs(60);
    let hash = [7; 32];
    assert_eq!(
        a.claim_payload(1, &hash, 11, minute, minute).unwrap(),
        PayloadClaim::Claimed { token: 11 }
    );
    assert_eq!(
        b.claim_payload(1, &hash, 12, minute, minute).unwrap(),
        PayloadClaim::InProgress
    );
    assert_eq!(
        b.claim_payload(2, &hash, 13, minute, minute).unwrap(),
        PayloadClaim::Claimed { token: 13 },
        "another company's payload is its own"
    );
    // Another token's release frees nothing.
    b.release_payload(1, &hash, 12).unwrap();
    assert_eq!(
        b.claim_payload(1, &hash, 14, minute, minute).unwrap(),
        PayloadClaim::InProgress
    );
    a.complete_payload(1, &hash, 11, 42, minute).unwrap();
    assert_eq!(
        b.claim_payload(1, &hash, 15, minute, minute).unwrap(),
        PayloadClaim::Made { document_id: 42 }
    );
    // A made payload is not released; a claim in progress is.
    a.release_payload(1, &hash, 11).unwrap();
    assert_eq!(
        b.claim_payload(1, &hash, 16, minute, minute).unwrap(),
        PayloadClaim::Made { document_id: 42 }
    );
    b.release_payload(2, &hash, 13).unwrap();
    assert_eq!(
        a.claim_payload(2, &hash, 17, Duration::ZERO, minute)
            .unwrap(),
        PayloadClaim::Claimed { token: 17 }
    );
    // Expired at once (a node that died mid-request): taken over.
    assert_eq!(
        b.claim_payload(2, &hash, 18, minute, minute).unwrap(),
        PayloadClaim::Claimed { token: 18 }
    );
}

/// A database of the version before phase one's function opens with it,
/// and its numbering, usage and references go on where they were.
#[test]
fn a_database_before_phase_ones_function_numbers_on() {
    let Some(db) = TestDb::new() else { return };
    let s = db.open();
    let r = own_resolution(&s, 1, 3);
    let first = s.create_document(new_doc(&r, Some("ref-1"))).unwrap();
    assert_eq!(first.number, 1);
    drop(s);
    db.client()
        .batch_execute(&format!("{UNDO_V9} {UNDO_V8} {UNDO_V7}"))
        .unwrap();
    let s = db.open();
    let second = s.create_document(new_doc(&r, None)).unwrap();
    assert_eq!(second.number, 2);
    assert_eq!(s.document(second.id).unwrap().unwrap(), second);
    assert!(matches!(
        s.create_document(new_doc(&r, Some("ref-1"))),
        Err(StoreError::DuplicateReference { id }) if id == first.id
    ));
    let mut full = new_doc(&r, None);
    full.monthly_limit = Some(2);
    assert!(matches!(
        s.create_document(full),
        Err(StoreError::LimitReached { limit: 2 })
    ));
    assert_eq!(s.create_document(new_doc(&r, None)).unwrap().number, 3);
    assert!(matches!(
        s.create_document(new_doc(&r, None)),
        Err(StoreError::RangeExhausted { .. })
    ));
}

/// A claimed payload's document completes the claim in its phase two's
/// commit, with the job or without: another node hears the document at
/// once, and the completion afterwards writes nothing more. A claim whose
/// phase one refused stays in progress until released.
#[test]
fn phase_two_completes_the_payloads_claim_in_its_commit() {
    use crate::engine::postgres::nodes::PayloadClaim;
    use std::time::Duration;
    let Some(db) = TestDb::new() else { return };
    let (a, b) = (db.open(), db.open());
    let r = own_resolution(&a, 1, 1000);
    let minute = Duration::from_secs(60);
    let built = |d: &DocumentRecord| {
        let mut d = d.clone();
        d.pending_build = false;
        d.state = state::DRAFT;
        d
    };
    for (token, hash, with_job) in [(31, [8; 32], false), (33, [9; 32], true)] {
        assert_eq!(
            a.claim_payload(r.company_id, &hash, token, minute, minute)
                .unwrap(),
            PayloadClaim::Claimed { token }
        );
        let mut new = new_doc(&r, None);
        new.payload_hash = hash;
        let d = built(&a.create_document(new).unwrap());
        assert_eq!(
            b.claim_payload(r.company_id, &hash, token + 1, minute, minute)
                .unwrap(),
            PayloadClaim::InProgress
        );
        let job = with_job.then(|| Job {
            id: 0,
            kind: "transmit".into(),
            company_id: r.company_id,
            document_id: Some(d.id),
            attempts: 0,
            run_at_ms: 5,
            in_flight: false,
            payload: serde_json::Value::Null,
            created_at: Utc::now(),
        });
        a.complete_document(&d, &files(None), job, &history("built"))
            .unwrap();
        assert_eq!(
            b.claim_payload(r.company_id, &hash, token + 1, minute, minute)
                .unwrap(),
            PayloadClaim::Made { document_id: d.id },
            "completed in phase two's commit"
        );
        assert!(
            a.claims.end(token),
            "its completion has nothing left to write"
        );
        assert!(!a.claims.end(token));
    }
    // Refused in phase one (the month is full): no document, the claim
    // in progress until its request releases it.
    let hash = [10; 32];
    a.claim_payload(r.company_id, &hash, 35, minute, minute)
        .unwrap();
    let mut new = new_doc(&r, None);
    new.payload_hash = hash;
    new.monthly_limit = Some(0);
    assert!(matches!(
        a.create_document(new),
        Err(StoreError::LimitReached { .. })
    ));
    a.release_payload(r.company_id, &hash, 35).unwrap();
    assert_eq!(
        b.claim_payload(r.company_id, &hash, 36, minute, minute)
            .unwrap(),
        PayloadClaim::Claimed { token: 36 }
    );
}

/// Requests counted per key and minute through two pools add up.
#[test]
fn requests_are_counted_per_key_and_minute_across_two_pools() {
    let Some(db) = TestDb::new() else { return };
    let (a, b) = (Arc::new(db.open()), Arc::new(db.open()));
    let counts: Vec<u32> = std::thread::scope(|s| {
        let runs: Vec<_> = (0..4)
            .map(|i| {
                let s2 = if i % 2 == 0 { a.clone() } else { b.clone() };
                s.spawn(move || {
                    (0..25)
                        .map(|_| s2.count_requests(9, 1_700_000_040, 1).unwrap())
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        runs.into_iter().flat_map(|r| r.join().unwrap()).collect()
    });
    let mut sorted = counts.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (1..=100).collect::<Vec<u32>>(), "each count once");
    assert_eq!(
        a.count_requests(9, 1_700_000_100, 1).unwrap(),
        1,
        "a new minute"
    );
    assert_eq!(
        b.count_requests(10, 1_700_000_040, 1).unwrap(),
        1,
        "another key"
    );

    // Several at once, and taken back (in one statement for several keys,
    // never below nothing; a minute not counted is left alone).
    assert_eq!(a.count_requests(9, 1_700_000_100, 500).unwrap(), 501);
    b.uncount_requests(&[
        (9, 1_700_000_100, 450),
        (10, 1_700_000_040, 5),
        (11, 1_700_000_040, 1),
    ])
    .unwrap();
    assert_eq!(a.count_requests(9, 1_700_000_100, 1).unwrap(), 52);
    assert_eq!(a.count_requests(10, 1_700_000_040, 1).unwrap(), 1);
    assert_eq!(a.count_requests(11, 1_700_000_040, 1).unwrap(), 1);
}

/// A database migrated before the shared window's tables opens with them,
/// and a payload that made a document in the last five minutes is refused
/// on every node from the first request.
#[test]
fn a_database_before_the_shared_window_opens_with_its_recent_payloads() {
    use crate::engine::postgres::nodes::PayloadClaim;
    let Some(db) = TestDb::new() else { return };
    let s = db.open();
    let r = own_resolution(&s, 1, 100);
    let mut new = new_doc(&r, None);
    new.payload_hash = [5; 32];
    let made = s.create_document(new).unwrap();
    drop(s);
    // The database as the version before left it.
    db.client()
        .batch_execute(&format!(
            "{UNDO_V9} {UNDO_V8} {UNDO_V7} {UNDO_V6} {UNDO_V4}
                 DROP TABLE payload_claims, rate_windows, authority_starts;
                 DELETE FROM refinery_schema_history WHERE version = 3;"
        ))
        .unwrap();
    let s = db.open();
    assert_eq!(
        s.claim_payload(
            r.company_id,
            &[5; 32],
            21,
            std::time::Duration::from_secs(60),
            std::time::Duration::from_secs(60)
        )
        .unwrap(),
        PayloadClaim::Made {
            document_id: made.id
        }
    );
    assert_eq!(s.count_requests(1, 0, 1).unwrap(), 1);
    assert_eq!(s.document(made.id).unwrap().unwrap().number, 1);
}

/// The authority's in-flight slots and pacing, shared by two pools: three
/// slots in all, freed on release or drop; three starts a window, then the
/// wait until the oldest leaves it.
#[test]
fn authority_slots_and_starts_are_shared_by_two_pools() {
    use std::time::Duration;
    let Some(db) = TestDb::new() else { return };
    let (a, b) = (db.open(), db.open());
    let first = a.try_authority_slot(3).unwrap().expect("a slot");
    let second = b.try_authority_slot(3).unwrap().expect("a slot");
    let third = a.try_authority_slot(3).unwrap().expect("a slot");
    assert!(b.try_authority_slot(3).unwrap().is_none(), "three in all");
    second.release();
    let again = b.try_authority_slot(3).unwrap().expect("a freed slot");
    drop(first);
    assert!(a.try_authority_slot(3).unwrap().is_some(), "freed on drop");
    drop((third, again));

    let window = Duration::from_secs(10);
    for s in [&a, &b, &a] {
        assert_eq!(s.take_authority_start(3, window).unwrap(), Ok(()));
    }
    let wait = b
        .take_authority_start(3, window)
        .unwrap()
        .expect_err("a fourth start waits");
    assert!(wait > Duration::from_secs(9) && wait <= window, "{wait:?}");
}

/// The next thing a listener hears, waiting at most ten seconds.
fn heard(rx: &mut tokio::sync::mpsc::Receiver<crate::Heard>) -> crate::Heard {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match rx.try_recv() {
            Ok(h) => return h,
            Err(tokio::sync::mpsc::error::TryRecvError::Empty) => {
                assert!(std::time::Instant::now() < deadline, "nothing heard");
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Err(e) => panic!("the listener stopped: {e}"),
        }
    }
}

/// A listener on one pool hears what another publishes, in order: a small
/// note as the payload itself, one over the payload limit read back from
/// its row.
#[test]
fn notes_published_through_one_pool_are_heard_through_another() {
    use crate::engine::postgres::node_events::{CHANNEL, MAX_INLINE};
    use crate::Heard;
    let Some(db) = TestDb::new() else { return };
    let (a, b) = (db.open(), db.open());
    let (tx, mut rx) = tokio::sync::mpsc::channel(16);
    b.listen(tx).unwrap();
    assert_eq!(heard(&mut rx), Heard::Listening);
    let large = format!("{{\"big\":\"{}\"}}", "x".repeat(MAX_INLINE * 2));
    a.publish("{\"n\":1}").unwrap();
    a.publish(&large).unwrap();
    a.publish("{\"n\":3}").unwrap();
    assert_eq!(heard(&mut rx), Heard::Note("{\"n\":1}".into()));
    assert_eq!(heard(&mut rx), Heard::Note(large));
    assert_eq!(heard(&mut rx), Heard::Note("{\"n\":3}".into()));
    // A notification someone else sends on the channel naming no row is
    // passed over.
    db.client()
        .execute("SELECT pg_notify($1, '#999')", &[&CHANNEL])
        .unwrap();
    a.publish("{\"n\":4}").unwrap();
    assert_eq!(heard(&mut rx), Heard::Note("{\"n\":4}".into()));
    drop(rx);
}

/// A database migrated before the nodes' events table opens with it: a
/// large note goes through, and the keys revoked since an instant are
/// found (not one revoked before it).
#[test]
fn a_database_before_the_node_events_opens_and_carries_large_notes() {
    use crate::engine::postgres::node_events::MAX_INLINE;
    use crate::Heard;
    let Some(db) = TestDb::new() else { return };
    let s = db.open();
    let company = s.create_company(company()).unwrap().id;
    let old = s.insert_api_key(test_key(company)).unwrap();
    s.revoke_api_key(old.id, Utc::now() - chrono::Duration::hours(1))
        .unwrap();
    let before = Utc::now() - chrono::Duration::seconds(1);
    let mut second = test_key(company);
    second.hash = "cd".repeat(32);
    let revoked = s.insert_api_key(second).unwrap();
    s.revoke_api_key(revoked.id, Utc::now()).unwrap();
    drop(s);
    // The database as version 4 left it.
    db.client()
        .batch_execute(&format!("{UNDO_V9} {UNDO_V8} {UNDO_V7} {UNDO_V6}"))
        .unwrap();
    let s = db.open();
    let (tx, mut rx) = tokio::sync::mpsc::channel(4);
    s.listen(tx).unwrap();
    assert_eq!(heard(&mut rx), Heard::Listening);
    let large = "y".repeat(MAX_INLINE + 1);
    s.publish(&large).unwrap();
    assert_eq!(heard(&mut rx), Heard::Note(large));
    assert_eq!(s.keys_revoked_since(before).unwrap(), vec![revoked.id]);
    assert!(s
        .keys_revoked_since(Utc::now() + chrono::Duration::seconds(60))
        .unwrap()
        .is_empty());
    let minute = std::time::Duration::from_secs(60);
    s.put_console_session(&[1; 32], None, &serde_json::json!({"who": "admin"}), minute)
        .unwrap();
    assert!(s.console_session(&[1; 32]).unwrap().is_some());
}

/// A console session stored through one pool is read through another
/// until it ends, its key's sessions end, or it expires; a change to its
/// record is seen by both.
#[test]
fn console_sessions_are_shared_by_two_pools() {
    use serde_json::json;
    use std::time::Duration;
    let Some(db) = TestDb::new() else { return };
    let (a, b) = (db.open(), db.open());
    let minute = Duration::from_secs(60);
    a.put_console_session(&[1; 32], Some(7), &json!({"env": "test"}), minute)
        .unwrap();
    a.put_console_session(&[2; 32], Some(7), &json!({"env": "test"}), minute)
        .unwrap();
    a.put_console_session(&[3; 32], None, &json!({"env": "test"}), minute)
        .unwrap();
    a.put_console_session(&[4; 32], None, &json!({}), Duration::ZERO)
        .unwrap();
    let (record, left) = b.console_session(&[1; 32]).unwrap().expect("shared");
    assert_eq!(record, json!({"env": "test"}));
    assert!(left > Duration::from_secs(50) && left <= minute, "{left:?}");
    assert!(b.console_session(&[4; 32]).unwrap().is_none(), "expired");
    assert!(b.console_session(&[9; 32]).unwrap().is_none(), "unknown");
    b.set_console_session(&[3; 32], &json!({"env": "live"}))
        .unwrap();
    assert_eq!(
        a.console_session(&[3; 32]).unwrap().map(|(r, _)| r),
        Some(json!({"env": "live"}))
    );
    b.end_console_sessions_of_key(7).unwrap();
    assert!(a.console_session(&[1; 32]).unwrap().is_none());
    assert!(a.console_session(&[2; 32]).unwrap().is_none());
    a.end_console_session(&[3; 32]).unwrap();
    assert!(b.console_session(&[3; 32]).unwrap().is_none());
}

/// A once-per-service task's lease, held by one of two nodes at a time:
/// the holder keeps it, the other is refused; the holder's session ended
/// (killed by the database, as when its node dies or its connection is
/// lost), the holder no longer holds it and the other takes it; the
/// tasks' leases are independent.
#[test]
fn a_service_task_is_held_by_one_node_and_moves_when_its_session_ends() {
    use crate::engine::postgres::service_lease::{Holding, ServiceTask};
    let Some(db) = TestDb::new() else { return };
    let (a, b) = (db.open(), db.open());
    let recovery = ServiceTask::Recovery;
    assert_eq!(a.hold_service_task(recovery).unwrap(), Holding::Taken);
    assert_eq!(b.hold_service_task(recovery).unwrap(), Holding::Not);
    assert_eq!(a.hold_service_task(recovery).unwrap(), Holding::Kept);
    assert_eq!(b.hold_service_task(recovery).unwrap(), Holding::Not);
    assert_eq!(
        b.hold_service_task(ServiceTask::Warnings).unwrap(),
        Holding::Taken,
        "another task's lease is free"
    );
    assert_eq!(
        a.hold_service_task(ServiceTask::Warnings).unwrap(),
        Holding::Not
    );

    // The holder's lease session ends (pg_terminate_backend: what the
    // database does to the session of a node found dead).
    let ended: i64 = db
        .client()
        .query_one(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
             WHERE application_name = 'emisor service lease' AND datname = current_database()
               AND pid IN (SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND objid = 1)",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(ended, 1, "one session held the recovery's lease");
    // The database frees the lock once the session is gone.
    let mut taken = Holding::Not;
    for _ in 0..200 {
        taken = b.hold_service_task(recovery).unwrap();
        if taken.runs() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(taken, Holding::Taken, "the other node takes it");
    // The old holder learns it lost it, and is refused.
    assert_eq!(a.hold_service_task(recovery).unwrap(), Holding::Not);
    assert_eq!(b.hold_service_task(recovery).unwrap(), Holding::Kept);

    // A store closed (a node stopping) frees its leases at once.
    b.drop_service_leases();
    assert_eq!(a.hold_service_task(recovery).unwrap(), Holding::Taken);
    assert_eq!(
        a.hold_service_task(ServiceTask::Warnings).unwrap(),
        Holding::Taken
    );
}

/// The start-up lock: a second node's set-up waits until the first one's
/// lock is released, and a lock dropped unreleased (a node dying mid-set-up)
/// frees it too.
#[test]
fn the_start_up_lock_lets_one_node_set_up_at_a_time() {
    use std::sync::mpsc;
    let Some(db) = TestDb::new() else { return };
    let (a, b) = (db.open(), db.open());
    let first = a.start_lock().unwrap();
    let (tx, rx) = mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let second = b.start_lock().unwrap();
        tx.send(()).unwrap();
        second.release().unwrap();
    });
    // The second's session waits on the lock (seen by the database).
    let mut client = db.client();
    while client
        .query_one(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted",
            &[],
        )
        .unwrap()
        .get::<_, i64>(0)
        == 0
    {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(
        rx.try_recv().is_err(),
        "the second waits while the first holds it"
    );
    first.release().unwrap();
    rx.recv().unwrap();
    waiter.join().unwrap();

    let held = a.start_lock().unwrap();
    drop(held);
    a.start_lock().unwrap().release().unwrap();
}

/// What the jobs' index of each node (V9) added, taken away again.
const UNDO_V9: &str = "DROP INDEX jobs_of_node, jobs_without_node;
    CREATE INDEX jobs_by_node ON jobs (node);
    DELETE FROM refinery_schema_history WHERE version = 9;";

/// What the node events' and console sessions' migration (V6) added, taken
/// away again.
const UNDO_V6: &str = "DROP TABLE node_events, console_sessions;
    DELETE FROM refinery_schema_history WHERE version = 6;";

/// What phase one's function (V7) added, taken away again.
const UNDO_V7: &str = "DROP FUNCTION emisor_number_document;
    DELETE FROM refinery_schema_history WHERE version = 7;";

/// What the node leases' migration (V4) added, taken away again.
const UNDO_V4: &str = "DROP TABLE node_leases;
    ALTER TABLE jobs DROP COLUMN node;
    ALTER TABLE job_leases DROP COLUMN node;
    ALTER TABLE documents DROP COLUMN build_node;
    DELETE FROM refinery_schema_history WHERE version = 4;";

/// A job of `company`, due at `run_at_ms`.
fn job_at(company: CompanyId, run_at_ms: i64) -> Job {
    Job {
        id: 0,
        kind: "transmit".into(),
        company_id: company,
        document_id: None,
        attempts: 0,
        run_at_ms,
        in_flight: true,
        payload: serde_json::Value::Null,
        created_at: Utc::now(),
    }
}

/// Node `s` dead: its lease expired (as a killed node's does).
fn expire(db: &TestDb, s: &PgStore) {
    db.client()
        .execute(
            "UPDATE node_leases SET expires_at = now() - interval '1 second' WHERE node = $1",
            &[&s.node()],
        )
        .unwrap();
}

/// Two nodes on one database: a live node's claim is never taken, even by
/// a worker of the same name on the other node; a dead node's claim, its
/// queued jobs and its half-built documents are taken over, each once.
#[test]
fn a_live_nodes_claims_and_work_stay_its_own_and_a_dead_nodes_are_taken_over() {
    use std::time::Duration;
    let Some(db) = TestDb::new() else { return };
    let (a, b) = (db.open(), db.open());
    assert_ne!(a.node(), b.node(), "each open is a node of its own");
    let hour = Duration::from_secs(3600);
    a.renew_node_lease(hour).unwrap();
    b.renew_node_lease(hour).unwrap();
    let now = Utc::now().timestamp_millis();
    let held = a.claim_job(7, "transmit", now, 900_000).unwrap().unwrap();
    assert_eq!(held.worker, format!("transmit@{}", a.node()));
    assert_eq!(
        b.claim_job(7, "transmit", now, 900_000).unwrap(),
        None,
        "a live node's claim is not taken by the same worker elsewhere"
    );
    assert!(!b.release_job(7, "transmit").unwrap(), "nor released");
    // A claim of the previous schema (no node) holds until it expires.
    db.client()
        .execute(
            "INSERT INTO job_leases (job_id, worker, expires_at_ms) VALUES (8, 'transmit', $1)",
            &[&(now + 1_000)],
        )
        .unwrap();
    assert_eq!(b.claim_job(8, "transmit", now, 500).unwrap(), None);
    assert!(b
        .claim_job(8, "transmit", now + 1_000, 500)
        .unwrap()
        .is_some());

    // a's work: a queued job and a half-built document.
    let r = own_resolution(&a, 1, 100);
    let job = a.put_job(job_at(r.company_id, now + 60_000)).unwrap();
    let half = a.create_document(new_doc(&r, None)).unwrap();
    assert!(
        b.adopt_jobs(hour, Duration::ZERO).unwrap().is_empty(),
        "a is alive"
    );
    assert!(b
        .adopt_pending_builds(hour, Duration::ZERO)
        .unwrap()
        .is_empty());
    assert_eq!(a.own_jobs().unwrap().len(), 1);

    expire(&db, &a);
    let taken = b.claim_job(7, "transmit", now, 900_000).unwrap().unwrap();
    assert_eq!(
        taken.worker,
        format!("transmit@{}", b.node()),
        "a dead node's claim is taken"
    );
    let adopted = b.adopt_jobs(hour, Duration::ZERO).unwrap();
    assert_eq!(adopted.iter().map(|j| j.id).collect::<Vec<_>>(), [job.id]);
    assert!(
        adopted[0].in_flight,
        "as the dead node left it: asks the authority first"
    );
    assert_eq!(b.own_jobs().unwrap().len(), 1);
    assert!(a.own_jobs().unwrap().is_empty());
    let docs = b.adopt_pending_builds(hour, Duration::ZERO).unwrap();
    assert_eq!(docs.iter().map(|d| d.id).collect::<Vec<_>>(), [half.id]);
    assert_eq!(docs[0].state, state::DRAFT);
    // a, judged dead, finds its phase two refused; b's goes through.
    let mut built = half.clone();
    built.pending_build = false;
    built.state = state::QUEUED;
    let refused = a.complete_document(&built, &files(None), None, &history("built"));
    assert!(
        matches!(refused, Err(StoreError::Unavailable(_))),
        "{refused:?}"
    );
    assert!(a.document(half.id).unwrap().unwrap().pending_build);
    built.state = state::DRAFT;
    b.complete_document(&built, &files(None), None, &history("built"))
        .unwrap();
    assert!(!b.document(half.id).unwrap().unwrap().pending_build);
    // Adopted once: b is alive.
    a.renew_node_lease(hour).unwrap();
    assert!(a.adopt_jobs(hour, Duration::ZERO).unwrap().is_empty());
    assert!(a
        .adopt_pending_builds(hour, Duration::ZERO)
        .unwrap()
        .is_empty());
}

/// Two nodes adopting a dead node's many jobs at once take each once.
#[test]
fn a_dead_nodes_jobs_are_adopted_once_by_nodes_adopting_together() {
    use std::time::Duration;
    let Some(db) = TestDb::new() else { return };
    let (dead, b, c) = (db.open(), Arc::new(db.open()), Arc::new(db.open()));
    let hour = Duration::from_secs(3600);
    let r = own_resolution(&dead, 1, 10);
    let mut ids: Vec<u64> = (0..1_200)
        .map(|i| dead.put_job(job_at(r.company_id, i)).unwrap().id)
        .collect();
    for s in [&b, &c] {
        s.renew_node_lease(hour).unwrap();
    }
    let adopted: Vec<Vec<u64>> = std::thread::scope(|scope| {
        let runs: Vec<_> = [b.clone(), c.clone()]
            .into_iter()
            .map(|s| {
                scope.spawn(move || {
                    let mut mine = Vec::new();
                    loop {
                        let batch = s.adopt_jobs(hour, Duration::ZERO).unwrap();
                        if batch.is_empty() {
                            return mine;
                        }
                        assert!(batch.len() <= 500, "a batch at a time");
                        mine.extend(batch.iter().map(|j| j.id));
                    }
                })
            })
            .collect();
        runs.into_iter().map(|r| r.join().unwrap()).collect()
    });
    let mut all: Vec<u64> = adopted.concat();
    all.sort_unstable();
    ids.sort_unstable();
    assert_eq!(all, ids, "each job adopted by exactly one node");
    assert_eq!(
        b.own_jobs().unwrap().len() + c.own_jobs().unwrap().len(),
        1_200
    );
}

/// The lease is renewed on a thread of its own while held and ended when
/// dropped (a clean stop).
#[test]
fn a_nodes_lease_lives_while_held_and_ends_when_dropped() {
    use std::time::Duration;
    let Some(db) = TestDb::new() else { return };
    let s = db.open();
    let lease = s.keep_node_alive(Duration::from_millis(400)).unwrap();
    assert!(lease.settled());
    let live = |db: &TestDb| -> i64 {
        db.client()
            .query_one(
                "SELECT count(*) FROM node_leases WHERE expires_at > now()",
                &[],
            )
            .unwrap()
            .get(0)
    };
    // Longer than the lease: renewed meanwhile.
    std::thread::sleep(Duration::from_millis(900));
    assert_eq!(live(&db), 1);
    drop(lease);
    let rows: i64 = db
        .client()
        .query_one("SELECT count(*) FROM node_leases", &[])
        .unwrap()
        .get(0);
    assert_eq!(rows, 0, "a clean stop ends the lease");
}

/// A database of the previous version (before node leases) opens with its
/// jobs, claims and half-built documents, which name no node: a job is
/// adopted once overdue by the grace, a half-built document once untouched
/// for it, a claim once expired.
#[test]
fn a_database_before_node_leases_opens_and_its_work_is_adopted_when_overdue() {
    use std::time::Duration;
    let Some(db) = TestDb::new() else { return };
    let s = db.open();
    let r = own_resolution(&s, 1, 100);
    let now = Utc::now().timestamp_millis();
    let overdue = s.put_job(job_at(r.company_id, now - 120_000)).unwrap();
    let due_now = s.put_job(job_at(r.company_id, now)).unwrap();
    let half = s.create_document(new_doc(&r, None)).unwrap();
    s.claim_job(overdue.id, "transmit", now, 60_000)
        .unwrap()
        .unwrap();
    drop(s);
    // The database as the version before left it.
    db.client()
        .batch_execute(&format!(
            "{UNDO_V9} {UNDO_V8} {UNDO_V7} {UNDO_V6} {UNDO_V4} UPDATE job_leases SET worker = 'transmit';"
        ))
        .unwrap();
    let s = db.open();
    s.renew_node_lease(Duration::from_secs(3600)).unwrap();
    let minute = Duration::from_secs(60);
    let adopted = s.adopt_jobs(minute, Duration::ZERO).unwrap();
    assert_eq!(
        adopted.iter().map(|j| j.id).collect::<Vec<_>>(),
        [overdue.id]
    );
    assert!(s.job(due_now.id).unwrap().is_some());
    assert!(
        s.adopt_pending_builds(minute, Duration::ZERO)
            .unwrap()
            .is_empty(),
        "touched just now"
    );
    let docs = s
        .adopt_pending_builds(Duration::ZERO, Duration::ZERO)
        .unwrap();
    assert_eq!(docs.iter().map(|d| d.id).collect::<Vec<_>>(), [half.id]);
    assert_eq!(s.claim_job(overdue.id, "transmit", now, 1).unwrap(), None);
    assert!(s
        .claim_job(overdue.id, "transmit", now + 60_000, 1)
        .unwrap()
        .is_some());
    assert_eq!(s.document(half.id).unwrap().unwrap().number, 1);
}

/// A node adopts only once its own lease has run without a break for the
/// settling time; a renewal after its lease expired starts that time again
/// (the database was away: the others get the time to renew theirs).
#[test]
fn a_node_adopts_only_once_its_own_lease_has_run_unbroken() {
    use std::time::Duration;
    let Some(db) = TestDb::new() else { return };
    let (dead, b) = (db.open(), db.open());
    let (hour, minute) = (Duration::from_secs(3600), Duration::from_secs(60));
    let r = own_resolution(&dead, 1, 10);
    let job = dead.put_job(job_at(r.company_id, 0)).unwrap();
    b.renew_node_lease(hour).unwrap();
    assert!(
        b.adopt_jobs(hour, minute).unwrap().is_empty(),
        "just renewed"
    );
    let back = |db: &TestDb, s: &PgStore, expires: &str| {
        db.client()
            .execute(
                &format!(
                    "UPDATE node_leases SET live_since = now() - interval '2 minutes',
                         expires_at = {expires} WHERE node = $1"
                ),
                &[&s.node()],
            )
            .unwrap();
    };
    // Expired, then renewed: unbroken only from the renewal.
    back(&db, &b, "now() - interval '1 second'");
    b.renew_node_lease(hour).unwrap();
    assert!(b.adopt_jobs(hour, minute).unwrap().is_empty(), "broken");
    // Renewed while live: the time runs on.
    back(&db, &b, "now() + interval '1 hour'");
    b.renew_node_lease(hour).unwrap();
    let adopted = b.adopt_jobs(hour, minute).unwrap();
    assert_eq!(adopted.iter().map(|j| j.id).collect::<Vec<_>>(), [job.id]);
}

/// `n` jobs of node `node`, written by the database from a stored job's
/// record (many at once; their records name their own ids).
fn many_jobs_of(db: &TestDb, template: &Job, node: &str, n: i64) {
    db.client()
        .execute(
            "INSERT INTO jobs (id, kind, company_id, document_id, run_at_ms, created_at, record, node)
             SELECT i, j.kind, j.company_id, NULL, j.run_at_ms, j.created_at,
                    j.record || jsonb_build_object('id', i), $2
             FROM jobs j, generate_series((SELECT max(id) + 1 FROM jobs),
                                          (SELECT max(id) + $3 FROM jobs)) i
             WHERE j.id = $1",
            &[&(template.id as i64), &node, &n],
        )
        .unwrap();
    db.client()
        .execute("SELECT setval('job_ids', (SELECT max(id) FROM jobs))", &[])
        .unwrap();
}

/// The rows of `jobs` the adoption's two statements scan as `adopter`
/// (the database's own count, `EXPLAIN ANALYZE`, in a transaction rolled
/// back), whether any of them came from reading the whole table, and the
/// plans.
fn jobs_rows_read_by_adoption(db: &TestDb, adopter: &PgStore) -> (f64, bool, String) {
    use crate::engine::postgres::node_lease::{adopt_jobs_sql, dead_job_owners_sql};
    fn walk(node: &serde_json::Value, read: &mut f64, whole: &mut bool) {
        let scan = node["Node Type"]
            .as_str()
            .is_some_and(|t| t.ends_with("Scan"));
        if scan && node["Relation Name"] == "jobs" {
            let loops = node["Actual Loops"].as_f64().unwrap_or(1.0);
            *read += node["Actual Rows"].as_f64().unwrap_or(0.0) * loops
                + node["Rows Removed by Filter"].as_f64().unwrap_or(0.0);
            *whole |= node["Node Type"] == "Seq Scan";
        }
        for child in node["Plans"].as_array().into_iter().flatten() {
            walk(child, read, whole);
        }
    }
    let mut client = db.client();
    let mut tx = client.transaction().unwrap();
    let dead: Vec<String> = tx
        .query(&dead_job_owners_sql(), &[&adopter.node()])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let overdue_ms = Utc::now().timestamp_millis() - 3_600_000;
    let plans: Vec<serde_json::Value> = [
        tx.query_one(
            &format!("EXPLAIN (ANALYZE, FORMAT JSON) {}", dead_job_owners_sql()),
            &[&adopter.node()],
        )
        .unwrap()
        .get(0),
        tx.query_one(
            &format!("EXPLAIN (ANALYZE, FORMAT JSON) {}", adopt_jobs_sql()),
            &[&adopter.node(), &overdue_ms, &500i64, &0f64, &dead],
        )
        .unwrap()
        .get(0),
    ]
    .into();
    tx.rollback().unwrap();
    let (mut read, mut whole) = (0.0, false);
    for plan in &plans {
        walk(&plan[0]["Plan"], &mut read, &mut whole);
    }
    (read, whole, serde_json::Value::from(plans).to_string())
}

/// The adoption poll reads the jobs of dead nodes only: with 60 000 jobs
/// queued by two live nodes it reads a handful of index entries (one per
/// node holding jobs); with a dead node's 20 jobs besides, about those,
/// and it takes exactly those; a dead node's 3 000 newest jobs are taken a
/// batch at a time through `jobs_of_node`, each batch reading about what
/// it takes.
#[test]
fn the_adoption_poll_reads_only_the_jobs_of_dead_nodes() {
    use std::time::Duration;
    let Some(db) = TestDb::new() else { return };
    let (a, b, dead, late) = (db.open(), db.open(), db.open(), db.open());
    let hour = Duration::from_secs(3600);
    for s in [&a, &b, &late] {
        s.renew_node_lease(hour).unwrap();
    }
    let r = own_resolution(&a, 1, 10);
    let now = Utc::now().timestamp_millis();
    let template = a.put_job(job_at(r.company_id, now)).unwrap();
    many_jobs_of(&db, &template, a.node(), 30_000);
    many_jobs_of(&db, &template, b.node(), 30_000);
    db.client().batch_execute("ANALYZE jobs").unwrap();

    let (read, whole, plan) = jobs_rows_read_by_adoption(&db, &b);
    assert!(!whole, "no job read to judge its node: {plan}");
    assert!(read <= 10.0, "{read} rows of jobs read: {plan}");
    assert!(b.adopt_jobs(hour, Duration::ZERO).unwrap().is_empty());

    let theirs: Vec<u64> = (0..20)
        .map(|i| dead.put_job(job_at(r.company_id, now + i)).unwrap().id)
        .collect();
    let (read, whole, plan) = jobs_rows_read_by_adoption(&db, &b);
    assert!(!whole, "{plan}");
    assert!(read <= 100.0, "{read} rows of jobs read: {plan}");
    let adopted = b.adopt_jobs(hour, Duration::ZERO).unwrap();
    assert_eq!(adopted.iter().map(|j| j.id).collect::<Vec<_>>(), theirs);
    assert!(b.adopt_jobs(hour, Duration::ZERO).unwrap().is_empty());

    // A node whose jobs are the newest dies: the oldest of them first.
    many_jobs_of(&db, &template, late.node(), 3_000);
    db.client().batch_execute("ANALYZE jobs").unwrap();
    expire(&db, &late);
    let (read, whole, plan) = jobs_rows_read_by_adoption(&db, &b);
    assert!(!whole, "{plan}");
    assert!(read <= 1_600.0, "{read} rows of jobs read: {plan}");
    assert!(plan.contains("jobs_of_node"), "{plan}");
    let mut taken = 0;
    loop {
        let batch = b.adopt_jobs(hour, Duration::ZERO).unwrap();
        if batch.is_empty() {
            break;
        }
        assert!(batch.len() <= 500);
        taken += batch.len();
    }
    assert_eq!(taken, 3_000);
    assert_eq!(b.own_jobs().unwrap().len(), 33_020);
}

/// A database of the version before the jobs' index of each node (V6)
/// opens, is given the index, and its dead node's jobs are adopted, each
/// once, oldest first; a node of that version's statement runs on the new
/// schema as before.
#[test]
fn a_database_before_the_jobs_index_of_each_node_opens_and_adopts_as_before() {
    use std::time::Duration;
    let Some(db) = TestDb::new() else { return };
    let dead = db.open();
    let r = own_resolution(&dead, 1, 10);
    let now = Utc::now().timestamp_millis();
    let theirs: Vec<u64> = (0..3)
        .map(|i| dead.put_job(job_at(r.company_id, now + i)).unwrap().id)
        .collect();
    drop(dead);
    // The database as version 6 left it.
    db.client()
        .batch_execute(&format!("{UNDO_V9} {UNDO_V8} {UNDO_V7}"))
        .unwrap();
    let indexed = |db: &TestDb| -> i64 {
        db.client()
            .query_one(
                "SELECT count(*) FROM pg_indexes
                 WHERE indexname IN ('jobs_of_node', 'jobs_without_node')",
                &[],
            )
            .unwrap()
            .get(0)
    };
    assert_eq!(indexed(&db), 0);
    let b = db.open();
    assert_eq!(indexed(&db), 2, "migrated");
    assert_eq!(
        applied_migrations(&db),
        crate::engine::postgres::migrations().len() as i64
    );
    b.renew_node_lease(Duration::from_secs(3600)).unwrap();
    let adopted = b
        .adopt_jobs(Duration::from_secs(3600), Duration::ZERO)
        .unwrap();
    assert_eq!(adopted.iter().map(|j| j.id).collect::<Vec<_>>(), theirs);

    // A version-6 node's adoption statement, on the new schema: it runs,
    // and finds nothing of a live node's.
    let c = db.open();
    c.renew_node_lease(Duration::from_secs(3600)).unwrap();
    let v6 = format!(
        "UPDATE jobs SET node = $1 WHERE id IN (
             SELECT j.id FROM jobs j
             WHERE j.node IS DISTINCT FROM $1 AND {}
               AND CASE WHEN j.node IS NULL THEN j.run_at_ms < $2 ELSE {} END
             ORDER BY j.id LIMIT $3
             FOR UPDATE SKIP LOCKED)
         RETURNING record",
        "EXISTS (SELECT 1 FROM node_leases me WHERE me.node = $1 AND me.expires_at > now()
             AND me.live_since <= now() - make_interval(secs => $4::float8))",
        "NOT EXISTS (SELECT 1 FROM node_leases n WHERE n.node = j.node AND n.expires_at > now())"
    );
    let rows = db
        .client()
        .query(&v6, &[&c.node(), &now, &500i64, &0f64])
        .unwrap();
    assert!(rows.is_empty(), "b is alive");
    assert_eq!(b.own_jobs().unwrap().len(), 3);
}

/// What the kept counts' migration (V8) added, taken away again.
const UNDO_V8: &str = "DROP TRIGGER document_counts_on_insert ON documents;
    DROP TRIGGER document_counts_on_update ON documents;
    DROP TRIGGER document_counts_on_delete ON documents;
    DROP TABLE document_counts, document_count_changes;
    DROP INDEX documents_list_by_evento, documents_list_by_proveedor, documents_list_by_id_caja,
        documents_list_by_id_cajero, documents_list_by_tipo;
    DROP FUNCTION document_counts_move(), document_count_subsets(smallint, jsonb),
        document_count_keys(smallint), document_count_max_value();
    DELETE FROM refinery_schema_history WHERE version = 8;";

/// A list page as the rows say it is: every matching row counted, the
/// page by `OFFSET` (the statements the kept counts stand in for).
fn listed_by_rows(c: &mut postgres::Client, q: &ListQuery) -> (u64, Vec<u64>) {
    let keys: serde_json::Map<String, serde_json::Value> = q
        .keys
        .iter()
        .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
        .collect();
    let keys = postgres::types::Json(serde_json::Value::Object(keys));
    let states: Vec<i16> = q.states.iter().map(|s| i16::from(*s)).collect();
    let filter = "company_id = $1 AND environment = 2 AND family = $2 AND NOT pending_build
        AND (cardinality($3::smallint[]) = 0 OR state = ANY($3)) AND list_keys @> $4
        AND ($5::date IS NULL OR issue_date >= $5) AND ($6::date IS NULL OR issue_date <= $6)";
    let (company, family) = (q.company_id as i64, i16::from(q.family.tag()));
    let offset = i64::from((q.page - 1) * q.limit);
    let total: i64 = c
        .query_one(
            &format!("SELECT count(*) FROM documents WHERE {filter}"),
            &[&company, &family, &states, &keys, &q.from, &q.to],
        )
        .unwrap()
        .get(0);
    let ids = c
        .query(
            &format!(
                "SELECT id FROM documents WHERE {filter}
                 ORDER BY issue_date DESC, id DESC LIMIT $7 OFFSET $8"
            ),
            &[
                &company,
                &family,
                &states,
                &keys,
                &q.from,
                &q.to,
                &i64::from(q.limit),
                &offset,
            ],
        )
        .unwrap()
        .iter()
        .map(|r| r.get::<_, i64>(0) as u64)
        .collect();
    (total as u64, ids)
}

/// Every combination of filters and pages the documents below give,
/// listed through the store and by rows: the same totals and pages.
fn lists_agree_with_rows(db: &TestDb, s: &PgStore, company: CompanyId, long: &str) {
    let day = |d| NaiveDate::from_ymd_opt(2026, 11, d).unwrap();
    let states = [
        vec![],
        vec![state::ACCEPTED],
        vec![state::QUEUED, state::REJECTED],
    ];
    let dates = [
        (None, None),
        (Some(day(12)), None),
        (Some(day(11)), Some(day(13))),
    ];
    let keys: [Vec<(&str, &str)>; 5] = [
        vec![],
        vec![("id_caja", "C1")],
        vec![("id_caja", "C0"), ("id_cajero", "1")],
        vec![("id_cajero", "0")],
        vec![("id_caja", long)],
    ];
    let mut listed = 0;
    let mut c = db.client();
    for family in [Family::Invoices, Family::Pos] {
        for states in &states {
            for &(from, to) in &dates {
                for keys in keys
                    .iter()
                    .filter(|k| family == Family::Pos || k.is_empty())
                {
                    for page in 1..=5 {
                        let q = ListQuery {
                            company_id: company,
                            environment: Environment::Test,
                            family,
                            from,
                            to,
                            states: states.clone(),
                            keys: keys
                                .iter()
                                .map(|(k, v)| (k.to_string(), v.to_string()))
                                .collect(),
                            page,
                            limit: 3,
                        };
                        let p = s.list_documents(&q).unwrap();
                        let got = (p.total, p.items.iter().map(|d| d.id).collect());
                        assert_eq!(got, listed_by_rows(&mut c, &q), "{q:?}");
                        listed += p.items.len();
                    }
                }
            }
        }
    }
    assert!(listed > 100, "the combinations list documents: {listed}");
}

#[test]
fn a_database_before_the_kept_counts_is_counted_and_its_lists_stay_exact() {
    let Some(db) = TestDb::new() else { return };
    let s = db.open();
    let invoices = own_resolution(&s, 1, 1000);
    let pos = s
        .add_resolution(
            invoices.company_id,
            NewResolution {
                document_type: 9,
                prefix: "POS".into(),
                ..resolution(1, 1000)
            },
        )
        .unwrap();
    let company = invoices.company_id;
    let long = "L".repeat(201);
    let states = [
        state::QUEUED,
        state::ACCEPTED,
        state::ACCEPTED,
        state::REJECTED,
    ];
    let mut docs = Vec::new();
    for i in 0..48u32 {
        let r = if i % 2 == 0 { &invoices } else { &pos };
        let mut new = new_doc(r, None);
        new.issue_date = NaiveDate::from_ymd_opt(2026, 11, 10 + i % 5).unwrap();
        if r.document_type == 9 {
            let caja = if i % 11 == 1 {
                long.clone()
            } else {
                format!("C{}", i % 3)
            };
            new.list_keys.insert("id_caja".into(), caja);
            new.list_keys
                .insert("id_cajero".into(), (i / 2 % 2).to_string());
        }
        let mut d = s.create_document(new).unwrap();
        if i % 9 == 4 {
            continue; // left half built: in no list
        }
        d.pending_build = false;
        d.state = states[i as usize % states.len()];
        s.complete_document(&d, &files(None), None, &history("built"))
            .unwrap();
        docs.push(d);
    }
    drop(s);

    // The database as version 6 left it, with its documents.
    db.client()
        .batch_execute(&format!("{UNDO_V9} {UNDO_V8} {UNDO_V7}"))
        .unwrap();
    let s = db.open();
    let folded: i64 = db
        .client()
        .query_one("SELECT count(*) FROM document_counts", &[])
        .unwrap()
        .get(0);
    assert!(folded > 0, "the migration counted the stored documents");
    lists_agree_with_rows(&db, &s, company, &long);

    // States, keys and days change; each change is a row of its own until folded.
    for (i, d) in docs.iter_mut().enumerate() {
        match i % 4 {
            0 => d.state = state::ACCEPTED,
            1 => d.state = state::REJECTED,
            2 if d.document_type == 9 => {
                d.list_keys.insert("id_caja".into(), "C1".into());
            }
            _ => continue,
        }
        s.update_document(d, history("changed")).unwrap();
    }
    let changes = || -> i64 {
        db.client()
            .query_one("SELECT count(*) FROM document_count_changes", &[])
            .unwrap()
            .get(0)
    };
    assert!(changes() > 0);
    lists_agree_with_rows(&db, &s, company, &long);
    assert!(s.fold_document_counts().unwrap() > 0);
    assert_eq!(changes(), 0, "every change folded");
    lists_agree_with_rows(&db, &s, company, &long);
}

#[test]
fn the_kept_counts_know_each_familys_indexed_keys() {
    let Some(db) = TestDb::new() else { return };
    let _s = db.open();
    let mut c = db.client();
    for family in [
        Family::Invoices,
        Family::Support,
        Family::Pos,
        Family::Payroll,
        Family::Received,
    ] {
        let keys: Vec<String> = c
            .query_one(
                "SELECT document_count_keys($1)",
                &[&i16::from(family.tag())],
            )
            .unwrap()
            .get(0);
        assert_eq!(keys, family.indexed_keys(), "{family:?}");
    }
}
