#![allow(clippy::expect_used, clippy::unwrap_used)]
//! The document index with 1,000,000 stored documents: ten companies, every
//! family, six states, a year of issue days. The store is filled through
//! its own document-writing path (`SledStore::write_documents`: record,
//! index entries and counters, per-state counts), in batches of 10,000,
//! each one flush. Then filtered pages of 20 are measured: date range +
//! state, a family key, a key pair + state, and a deep page; criterion
//! gives the means, and a separate pass of 2,000 varied queries per kind
//! prints p50 / p99.
//!
//! `cargo bench -p emisor-store --bench index` (`INDEX_BENCH_DOCS` changes
//! the count). It drives the store crate alone, so it lives there and
//! builds without the server.
//!
//! With `INDEX_BENCH_URL` (the URL of an empty PostgreSQL database) the same
//! documents go into the PostgreSQL engine instead, through its import
//! (`Import::import`, what `emisor admin migrate` and `import` write with:
//! one transaction, the derived counts made at its end), and the same
//! pages are read through its `list_documents`. With `INDEX_BENCH_REUSE`
//! set, a database an earlier run filled is measured as it is;
//! `INDEX_BENCH_PAGES` changes the 2,000 pages of each kind.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use chrono::{NaiveDate, TimeZone, Utc};
use criterion::{criterion_group, criterion_main, Criterion};
use emisor_store::model::export::{ExportItem, ExportedDocument};
use emisor_store::{
    DocumentRecord, DocumentStore, Engine, Environment, Family, Keyring, ListQuery, MasterKey,
    SecretText, SledStore, StoreHandle, StoreOptions,
};

const COMPANIES: u64 = 10;
const DAYS: u64 = 365;
const BATCH: usize = 10_000;

fn pick(id: u64, salt: u64, n: u64) -> u64 {
    let mut x = id.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ salt.wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
    x ^= x >> 31;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 29;
    x % n
}

fn first_day() -> NaiveDate {
    NaiveDate::from_ymd_opt(2025, 1, 1).unwrap()
}

/// Document `id` of `total`: issue days grow with ids (a year), the
/// family mix of a retail company (60 % invoices and notes, 20 % POS,
/// 15 % support documents, 5 % payroll), states mostly accepted.
fn document(id: u64, total: u64) -> DocumentRecord {
    let day = first_day() + chrono::Duration::days(((id - 1) * DAYS / total) as i64);
    let family = match pick(id, 1, 20) {
        0..=11 => Family::Invoices,
        12..=15 => Family::Pos,
        16..=18 => Family::Support,
        _ => Family::Payroll,
    };
    let (document_type, list_keys): (u8, BTreeMap<String, String>) = match family {
        Family::Invoices => ([1, 2, 3, 6][pick(id, 2, 4) as usize], BTreeMap::new()),
        Family::Pos => (
            9,
            [
                ("id_caja".to_string(), format!("CAJA-{}", pick(id, 3, 20))),
                (
                    "id_cajero".to_string(),
                    format!("{}", 1000 + pick(id, 4, 50)),
                ),
            ]
            .into(),
        ),
        Family::Support => (
            4,
            [
                ("proveedor".to_string(), format!("9{:08}", pick(id, 5, 200))),
                ("centro_costos".to_string(), "CC-01".to_string()),
            ]
            .into(),
        ),
        _ => (
            11,
            [(
                "tipo".to_string(),
                if pick(id, 6, 10) == 0 {
                    "AJUSTE"
                } else {
                    "INDIVIDUAL"
                }
                .to_string(),
            )]
            .into(),
        ),
    };
    let state = match pick(id, 7, 100) {
        0..=79 => 2,
        80..=87 => 1,
        88..=93 => 3,
        94..=97 => 4,
        98 => 5,
        _ => 6,
    };
    let at = Utc.from_utc_datetime(&day.and_hms_opt(15, 0, 0).unwrap());
    DocumentRecord {
        id,
        company_id: 1 + pick(id, 8, COMPANIES),
        environment: Environment::Test,
        document_type,
        resolution_id: 1,
        prefix: "SETP".into(),
        number: 990_000_000 + id,
        state,
        pending_build: false,
        code: Some(format!("{:096x}", id)),
        code_scheme: Some("CUFE-SHA384".into()),
        qr_url: Some(format!(
            "https://catalogo-vpfe-hab.dian.gov.co/document/searchqr?documentkey={id:096x}"
        )),
        issue_date: day,
        total: "119000.00".into(),
        external_reference: None,
        // A customer of 2,000 (each its own run in the index).
        customer_id: Some(1 + pick(id, 9, 2_000)),
        user_id: None,
        request: serde_json::Value::Null,
        transmission: None,
        attempts: 1,
        track_id: None,
        application_response_missing: None,
        api: None,
        list_keys,
        issued_at: None,
        authority_events: Vec::new(),
        created_at: at,
        updated_at: at,
    }
}

/// CPU time of the whole process (every thread: sled's flusher too), from
/// `/proc/self/stat`.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime are fields 14 and 15, 12 and 13 after the name.
    (ticks(11) + ticks(12)) / 100.0
}

/// The PostgreSQL engine at `url`, filled through its import.
fn fill_postgres(url: &str, dir: &std::path::Path, total: u64) -> (StoreHandle, Duration) {
    let options = StoreOptions {
        engine: Engine::Postgres,
        url: Some(SecretText::new(url)),
        ..StoreOptions::default()
    };
    let handle = emisor_store::open(dir, options, |_| {
        Ok(Keyring::new(MasterKey::generate().expect("key")))
    })
    .expect("store");
    let import = handle.import();
    if std::env::var_os("INDEX_BENCH_REUSE").is_some() && import.check_empty_for_import().is_err() {
        // Filled by an earlier run: measured as it is.
        return (handle, Duration::ZERO);
    }
    import.check_empty_for_import().expect("an empty database");
    let started = Instant::now();
    for id in 1..=total {
        let document = ExportedDocument {
            record: document(id, total),
            request: None,
            files: None,
            history: Vec::new(),
            application_response: None,
        };
        import
            .import(ExportItem::Document(Box::new(document)))
            .expect("import");
    }
    import.finish_import().expect("finish");
    let took = started.elapsed();
    (handle, took)
}

fn fill(store: &SledStore, total: u64) -> Duration {
    let started = Instant::now();
    let mut batch = Vec::with_capacity(BATCH);
    for id in 1..=total {
        batch.push(document(id, total));
        if batch.len() == BATCH {
            store.write_documents(&batch).expect("write");
            batch.clear();
        }
    }
    store.write_documents(&batch).expect("write");
    started.elapsed()
}

fn base(company: u64, family: Family) -> ListQuery {
    ListQuery {
        company_id: company,
        environment: Environment::Test,
        family,
        from: None,
        to: None,
        states: Vec::new(),
        keys: Vec::new(),
        page: 1,
        limit: 20,
    }
}

/// The `n`th query of each kind, varied over companies, days and keys.
fn query(kind: &str, n: u64) -> ListQuery {
    let company = 1 + n % COMPANIES;
    let from = first_day() + chrono::Duration::days(pick(n, 20, DAYS - 30) as i64);
    match kind {
        "date_range_and_state" => ListQuery {
            from: Some(from),
            to: Some(from + chrono::Duration::days(30)),
            states: vec![2],
            ..base(company, Family::Invoices)
        },
        "family_key" => ListQuery {
            keys: vec![("id_caja".into(), format!("CAJA-{}", pick(n, 21, 20)))],
            ..base(company, Family::Pos)
        },
        "key_pair_state_dates" => ListQuery {
            keys: vec![
                ("id_caja".into(), format!("CAJA-{}", pick(n, 21, 20))),
                ("id_cajero".into(), format!("{}", 1000 + pick(n, 22, 50))),
            ],
            states: vec![2, 4],
            from: Some(first_day()),
            to: Some(from + chrono::Duration::days(30)),
            ..base(company, Family::Pos)
        },
        "vendor_page_3" => ListQuery {
            keys: vec![("proveedor".into(), format!("9{:08}", pick(n, 23, 200)))],
            page: 3,
            ..base(company, Family::Support)
        },
        _ => ListQuery {
            // Deep: page 1,500 of all of a company's invoices (~60,000).
            page: 1500 + pick(n, 24, 500) as u32,
            ..base(company, Family::Invoices)
        },
    }
}

const KINDS: [&str; 5] = [
    "date_range_and_state",
    "family_key",
    "key_pair_state_dates",
    "vendor_page_3",
    "deep_page",
];

fn percentiles(store: &dyn DocumentStore) {
    let pages: u64 = std::env::var("INDEX_BENCH_PAGES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    for kind in KINDS {
        let mut times: Vec<Duration> = Vec::with_capacity(pages as usize);
        let mut items = 0;
        for n in 0..pages {
            let q = query(kind, n);
            let started = Instant::now();
            let page = store.list_documents(&q).expect("list");
            times.push(started.elapsed());
            items += page.items.len();
            assert!(page.total >= page.items.len() as u64);
        }
        times.sort();
        let at = |p: f64| times[((times.len() as f64 * p) as usize).min(times.len() - 1)];
        println!(
            "index/{kind}: p50 {:?}, p99 {:?}, max {:?} ({:.1} items a page)",
            at(0.50),
            at(0.99),
            times[times.len() - 1],
            items as f64 / pages as f64
        );
    }
}

fn bench(c: &mut Criterion) {
    let total: u64 = std::env::var("INDEX_BENCH_DOCS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let dir = tempfile::tempdir().expect("tempdir");
    let cpu = cpu_seconds();
    let (sled, postgres, took);
    let store: &dyn DocumentStore = match std::env::var("INDEX_BENCH_URL") {
        Ok(url) => {
            (postgres, took) = fill_postgres(&url, dir.path(), total);
            postgres.store()
        }
        Err(_) => {
            sled = SledStore::open(
                dir.path(),
                Keyring::new(MasterKey::generate().expect("key")),
            )
            .expect("store");
            took = fill(&sled, total);
            &sled
        }
    };
    let cpu = cpu_seconds() - cpu;
    // On PostgreSQL the process's CPU is the client's only.
    println!(
        "index: {total} documents written in {:.1} s ({:.1} µs each; CPU of this process {:.1} µs each)",
        took.as_secs_f64(),
        took.as_secs_f64() * 1e6 / total as f64,
        cpu * 1e6 / total as f64
    );
    percentiles(store);
    let mut group = c.benchmark_group("index");
    for kind in KINDS {
        let mut n = 0;
        group.bench_function(kind, |b| {
            b.iter(|| {
                n += 1;
                store.list_documents(&query(kind, n)).expect("list")
            })
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(50).measurement_time(Duration::from_secs(3));
    targets = bench
}
criterion_main!(benches);
