#![allow(clippy::expect_used, clippy::unwrap_used)]
//! The console's document search with 100,000 stored documents: five
//! companies, every family, 400 customers each (names drawn from a few
//! word lists, so a word starts many names), 50 employees each, six
//! states, a year of issue days. The store is filled through its own
//! document-writing path (`SledStore::write_documents`: record, index
//! entries and counters, number and code lookups), in batches of 10,000.
//! Then pages of 20 are measured for each kind of console query: the first
//! page of every family, a deep page, each filter, each kind of search; a
//! pass of 1,000 varied queries per kind prints p50 / p99 / max, and
//! criterion gives the means.
//!
//! `cargo bench -p emisor-store --bench search` (`SEARCH_BENCH_DOCS`
//! changes the count).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use chrono::{NaiveDate, TimeZone, Utc};
use criterion::{criterion_group, criterion_main, Criterion};
use emisor_store::{
    CustomerInput, CustomerStore, DocumentRecord, DocumentSearch, DocumentStore, Environment,
    Family, Keyring, MasterKey, SledStore,
};

const COMPANIES: u64 = 5;
const CUSTOMERS: u64 = 400;
const EMPLOYEES: u64 = 50;
const DAYS: u64 = 365;
const BATCH: usize = 10_000;
const RUNS: u64 = 1_000;

const TRADES: [&str; 10] = [
    "Panadería",
    "Comercializadora",
    "Distribuidora",
    "Ferretería",
    "Droguería",
    "Tienda",
    "Almacén",
    "Inversiones",
    "Servicios",
    "Construcciones",
];
const PLACES: [&str; 10] = [
    "Andina",
    "del Pacífico",
    "Caribe",
    "Llanos",
    "Bogotá",
    "Antioquia",
    "Valle",
    "Santander",
    "Boyacá",
    "Nariño",
];
const FORMS: [&str; 4] = ["S.A.S.", "Ltda", "y Cía", "E.U."];

fn pick(id: u64, salt: u64, n: u64) -> u64 {
    let mut x = id.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ salt.wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
    x ^= x >> 31;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 29;
    x % n
}

fn first_day() -> NaiveDate {
    NaiveDate::from_ymd_opt(2026, 1, 1).unwrap()
}

/// Customer `i` (0-based) of every company: its identification number
/// and name.
fn customer(i: u64) -> (String, String) {
    let name = format!(
        "{} {} {} {}",
        TRADES[(i % 10) as usize],
        PLACES[(i / 10 % 10) as usize],
        FORMS[(i / 100 % 4) as usize],
        i
    );
    (format!("9{:08}", 100 + i), name)
}

fn employee(i: u64) -> String {
    format!("10{:08}", 500 + i)
}

fn prefix(family: Family) -> &'static str {
    match family {
        Family::Invoices => "SETP",
        Family::Support => "DS",
        Family::Pos => "POS",
        Family::Payroll => "NI",
        Family::Received => "R",
    }
}

/// Document `id` of `total`: the family mix of a retail company, states
/// mostly accepted, issue days growing with ids.
fn document(id: u64, total: u64, customer_ids: &BTreeMap<(u64, u64), u64>) -> DocumentRecord {
    let day = first_day() + chrono::Duration::days(((id - 1) * DAYS / total) as i64);
    let company_id = 1 + pick(id, 8, COMPANIES);
    let family = match pick(id, 1, 20) {
        0..=11 => Family::Invoices,
        12..=15 => Family::Pos,
        16..=18 => Family::Support,
        _ => Family::Payroll,
    };
    let mut list_keys = BTreeMap::new();
    let document_type = match family {
        Family::Invoices => [1, 2, 3, 6][pick(id, 2, 4) as usize],
        Family::Pos => {
            list_keys.insert("id_caja".to_string(), format!("CAJA-{}", pick(id, 3, 20)));
            9
        }
        Family::Support => 4,
        _ => {
            list_keys.insert("tipo".to_string(), "INDIVIDUAL".to_string());
            list_keys.insert("empleado".to_string(), employee(pick(id, 6, EMPLOYEES)));
            11
        }
    };
    let customer_id =
        (family != Family::Payroll).then(|| customer_ids[&(company_id, pick(id, 9, CUSTOMERS))]);
    if family == Family::Support {
        let (number, _) = customer(pick(id, 9, CUSTOMERS));
        list_keys.insert("proveedor".to_string(), number);
    }
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
        company_id,
        environment: Environment::Test,
        document_type,
        resolution_id: 1,
        prefix: prefix(family).into(),
        number: 990_000_000 + id,
        state,
        pending_build: false,
        code: Some(code(id)),
        code_scheme: Some("CUFE-SHA384".into()),
        qr_url: None,
        issue_date: day,
        total: "119000.00".into(),
        external_reference: None,
        customer_id,
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

fn code(id: u64) -> String {
    format!("{:096x}", id.wrapping_mul(0x2545_F491_4F6C_DD1D))
}

fn fill(store: &SledStore, total: u64) -> Duration {
    let mut customer_ids = BTreeMap::new();
    for company in 1..=COMPANIES {
        for i in 0..CUSTOMERS {
            let (number, name) = customer(i);
            let c = store
                .upsert_customer(
                    company,
                    CustomerInput {
                        identification_number: number,
                        name,
                        email: "compras@example.co".into(),
                        ..Default::default()
                    },
                )
                .expect("customer");
            customer_ids.insert((company, i), c.id);
        }
    }
    let started = Instant::now();
    let mut batch = Vec::with_capacity(BATCH);
    for id in 1..=total {
        batch.push(document(id, total, &customer_ids));
        if batch.len() == BATCH {
            store.write_documents(&batch).expect("write");
            batch.clear();
        }
    }
    store.write_documents(&batch).expect("write");
    started.elapsed()
}

fn base(company: u64) -> DocumentSearch {
    DocumentSearch {
        company_id: company,
        environment: Environment::Test,
        family: None,
        from: None,
        to: None,
        states: Vec::new(),
        customer: None,
        number: None,
        text: None,
        page: 1,
        limit: 20,
    }
}

/// A document of `company` (its id), for the searches by number and code.
fn document_of(company: u64, n: u64, total: u64) -> u64 {
    (0..)
        .map(|k| 1 + pick(n, 30 + k, total))
        .find(|id| 1 + pick(*id, 8, COMPANIES) == company)
        .unwrap()
}

/// The `n`th query of each kind, varied over companies, days, customers.
fn query(kind: &str, n: u64, total: u64) -> DocumentSearch {
    let company = 1 + n % COMPANIES;
    let from = first_day() + chrono::Duration::days(pick(n, 20, DAYS - 30) as i64);
    let per_company = total / COMPANIES;
    let (customer_number, customer_name) = customer(pick(n, 21, CUSTOMERS));
    let doc = document_of(company, n, total);
    let q = base(company);
    match kind {
        "first_page" => q,
        // A page from the middle to nine tenths of a company's documents.
        "deep_page" => DocumentSearch {
            page: (per_company / 20 / 2 + pick(n, 22, per_company / 20 * 4 / 10)) as u32,
            ..q
        },
        "family" => DocumentSearch {
            family: Some([Family::Pos, Family::Support, Family::Payroll][(n % 3) as usize]),
            ..q
        },
        "states" => DocumentSearch {
            states: vec![4, 6],
            ..q
        },
        "dates" => DocumentSearch {
            from: Some(from),
            to: Some(from + chrono::Duration::days(30)),
            ..q
        },
        "customer" => DocumentSearch {
            customer: Some(customer_number),
            ..q
        },
        "number" => DocumentSearch {
            number: Some(format!("{}{}", "SETP", 990_000_000 + doc)),
            ..q
        },
        "every_filter" => DocumentSearch {
            family: Some(Family::Invoices),
            states: vec![2],
            from: Some(first_day()),
            to: Some(from + chrono::Duration::days(30)),
            customer: Some(customer_number),
            ..q
        },
        "text_full_number" => DocumentSearch {
            text: Some(format!("SETP{}", 990_000_000 + doc)),
            ..q
        },
        "text_bare_number" => DocumentSearch {
            text: Some(format!("{}", 990_000_000 + doc)),
            ..q
        },
        "text_code" => DocumentSearch {
            text: Some(code(doc)),
            ..q
        },
        "text_customer_number" => DocumentSearch {
            text: Some(customer_number),
            ..q
        },
        "text_employee_number" => DocumentSearch {
            text: Some(employee(pick(n, 23, EMPLOYEES))),
            ..q
        },
        // One word that starts a tenth of the names (40 customers, more
        // than a search reads: the first 20 by name word).
        "text_name_word" => DocumentSearch {
            text: Some(
                PLACES[(pick(n, 21, CUSTOMERS) / 10 % 10) as usize]
                    .split(' ')
                    .next_back()
                    .unwrap()
                    .chars()
                    .take(4)
                    .collect::<String>()
                    .to_lowercase(),
            ),
            ..q
        },
        // Two words: four customers.
        "text_two_words" => DocumentSearch {
            text: Some(
                customer_name
                    .split(' ')
                    .filter(|w| *w != "del")
                    .take(2)
                    .collect::<Vec<_>>()
                    .join(" ")
                    .to_uppercase(),
            ),
            ..q
        },
        _ => DocumentSearch {
            text: Some(customer_name.split(' ').next().unwrap().to_string()),
            states: vec![4],
            page: 2,
            ..q
        },
    }
}

const KINDS: [&str; 15] = [
    "first_page",
    "deep_page",
    "family",
    "states",
    "dates",
    "customer",
    "number",
    "every_filter",
    "text_full_number",
    "text_bare_number",
    "text_code",
    "text_customer_number",
    "text_employee_number",
    "text_name_word",
    "text_two_words",
];

fn percentiles(store: &SledStore, total: u64) {
    for kind in KINDS.iter().copied().chain(["text_trade_rejected_page_2"]) {
        let mut times: Vec<Duration> = Vec::with_capacity(RUNS as usize);
        let (mut items, mut found, mut exact) = (0, 0u64, 0);
        for n in 0..RUNS {
            let q = query(kind, n, total);
            let started = Instant::now();
            let page = store.search_documents(&q).expect("search");
            times.push(started.elapsed());
            items += page.items.len();
            found += page.total;
            exact += usize::from(page.total_exact);
            assert!(page.total >= page.items.len() as u64);
        }
        times.sort();
        let at = |p: f64| times[((times.len() as f64 * p) as usize).min(times.len() - 1)];
        println!(
            "search/{kind}: p50 {:?}, p99 {:?}, max {:?} ({:.1} items a page, {:.0} found, \
             exact total {exact} of {RUNS})",
            at(0.50),
            at(0.99),
            times[times.len() - 1],
            items as f64 / RUNS as f64,
            found as f64 / RUNS as f64,
        );
    }
}

fn bench(c: &mut Criterion) {
    let total: u64 = std::env::var("SEARCH_BENCH_DOCS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let dir = tempfile::tempdir().expect("tempdir");
    let store = SledStore::open(
        dir.path(),
        Keyring::new(MasterKey::generate().expect("key")),
    )
    .expect("store");
    let took = fill(&store, total);
    println!(
        "search: {total} documents written in {:.1} s ({:.1} µs each)",
        took.as_secs_f64(),
        took.as_secs_f64() * 1e6 / total as f64
    );
    percentiles(&store, total);
    let mut group = c.benchmark_group("search");
    for kind in KINDS {
        let mut n = 0;
        group.bench_function(kind, |b| {
            b.iter(|| {
                n += 1;
                store
                    .search_documents(&query(kind, n, total))
                    .expect("search")
            })
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(Duration::from_secs(2));
    targets = bench
}
criterion_main!(benches);
