//! The code and reference indexes' size with N documents: a store filled
//! through `SledStore::write_documents` (every document with a random
//! 96-hex code and an external reference, ten companies), then both trees
//! read with sled alone. Their entries stay at most 2^16 whatever N is.
//!
//! `cargo run --release -p emisor-store --example hashed_sizes -- [documents] [data-dir]`
//! (100,000 documents in a temporary dir unless told). Then, each in a
//! process of its own, the store opened (time, resident memory, look-ups
//! by code and by reference): as filled; made as an older build left it
//! (per-document trees, no hashed ones) and opened twice, the upgrade and
//! the next; last with the per-document trees written again beside the
//! hashed ones (`probe_*`), for the memory those would cost.

// A measuring tool: failing loudly is what we want.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use std::process::Command;
use std::time::Instant;

use chrono::{NaiveDate, Utc};
use emisor_store::codec::{id_key, scoped_text_key};
use emisor_store::{
    trees, DocumentRecord, DocumentStore, Environment, Keyring, MasterKey, ReceivedStore, SledStore,
};
use sha2::{Digest, Sha384};

fn code(id: u64) -> String {
    Sha384::digest(id.to_be_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn company(id: u64) -> u64 {
    1 + id % 10
}

fn reference(id: u64) -> String {
    format!("PEDIDO-{id:08}")
}

fn keys() -> Keyring {
    Keyring::new(MasterKey::from_bytes(&[7u8; 32]).unwrap())
}

fn document(id: u64) -> DocumentRecord {
    let now = Utc::now();
    DocumentRecord {
        id,
        company_id: company(id),
        environment: Environment::Test,
        document_type: 1,
        resolution_id: 1,
        prefix: "SETP".into(),
        number: 990_000_000 + id,
        state: 2,
        pending_build: false,
        code: Some(code(id)),
        code_scheme: Some("CUFE-SHA384".into()),
        qr_url: None,
        issue_date: NaiveDate::from_ymd_opt(2026, 1, 1).unwrap(),
        total: "119000.00".into(),
        external_reference: Some(reference(id)),
        customer_id: None,
        user_id: None,
        request: serde_json::Value::Null,
        transmission: None,
        attempts: 1,
        track_id: None,
        application_response_missing: None,
        api: None,
        list_keys: Default::default(),
        issued_at: None,
        authority_events: Vec::new(),
        created_at: now,
        updated_at: now,
    }
}

fn open_sled(dir: &Path) -> sled::Db {
    // sled's IO threads may hold the lock a moment after the store is gone.
    for _ in 0..100 {
        match sled::Config::new().path(dir.join("sled")).open() {
            Ok(db) => return db,
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(50)),
        }
    }
    panic!("sled in {dir:?} stayed locked");
}

fn resident_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// `open <dir> <documents>`: resident memory once the store is open, and
/// look-ups of stored and unknown keys.
fn open_and_look_up(dir: &Path, total: u64) {
    let started = Instant::now();
    let store = SledStore::open(dir, keys()).expect("open the store");
    let opened = started.elapsed();
    let rss = resident_kib();
    let ids: Vec<u64> = (0..10_000u64).map(|i| 1 + i * 7_919 % total).collect();
    let started = Instant::now();
    for &id in &ids {
        assert_eq!(store.document_by_code(&code(id)).unwrap(), Some(id));
    }
    let by_code = started.elapsed() / ids.len() as u32;
    let started = Instant::now();
    for &id in &ids {
        let found = store.document_by_reference(company(id), &reference(id));
        assert_eq!(found.unwrap(), Some(id));
    }
    let by_reference = started.elapsed() / ids.len() as u32;
    let started = Instant::now();
    for &id in &ids {
        assert_eq!(store.document_by_code(&code(id + total)).unwrap(), None);
    }
    let unknown = started.elapsed() / ids.len() as u32;
    println!(
        "open in {opened:.1?}: RSS {:.1} MiB; look-up by code {by_code:.1?}, by reference {by_reference:.1?}, \
         unknown code {unknown:.1?}",
        rss as f64 / 1024.0
    );
    store.close().expect("close");
}

/// `probe <dir> <documents>`: the per-document trees as they were, under
/// other names. `downgrade`: under their own names, the hashed indexes and
/// their mark gone, as an older build left a data dir.
fn write_probe(dir: &Path, total: u64, downgrade: bool) {
    let db = open_sled(dir);
    let names = if downgrade {
        db.open_tree(trees::META)
            .unwrap()
            .remove("hashed_code_reference_indexes")
            .unwrap();
        for name in [trees::DOCUMENTS_BY_CODE, trees::DOCUMENT_REFS] {
            db.drop_tree(name).unwrap();
        }
        [trees::LEGACY_DOCUMENTS_BY_CODE, trees::LEGACY_DOCUMENT_REFS]
    } else {
        ["probe_codes", "probe_refs"]
    };
    let codes = db.open_tree(names[0]).unwrap();
    let refs = db.open_tree(names[1]).unwrap();
    for id in 1..=total {
        codes.insert(code(id), &id_key(id)).unwrap();
        refs.insert(scoped_text_key(company(id), &reference(id)), &id_key(id))
            .unwrap();
    }
    db.flush().unwrap();
}

fn run_self(mode: &str, dir: &Path, total: u64) {
    let me = std::env::current_exe().expect("own path");
    let ok = Command::new(me)
        .args([
            mode,
            dir.to_str().expect("a UTF-8 path"),
            &total.to_string(),
        ])
        .status()
        .expect("run")
        .success();
    assert!(ok, "{mode} failed");
}

fn main() {
    let mut args = std::env::args().skip(1);
    let first = args.next();
    if let Some(mode @ ("open" | "probe" | "downgrade")) = first.as_deref() {
        let dir = args.next().expect("a data dir");
        let total = args.next().and_then(|n| n.parse().ok()).expect("documents");
        match mode {
            "open" => open_and_look_up(Path::new(&dir), total),
            _ => write_probe(Path::new(&dir), total, mode == "downgrade"),
        }
        return;
    }
    let total: u64 = first.map_or(100_000, |n| n.parse().expect("a number"));
    let temp = tempfile::tempdir().expect("temp dir");
    let dir = args.next().map_or(temp.path().to_path_buf(), Into::into);

    let store = SledStore::open(&dir, keys()).expect("open the store");
    let started = std::time::Instant::now();
    let ids: Vec<u64> = (1..=total).collect();
    for chunk in ids.chunks(10_000) {
        let docs: Vec<DocumentRecord> = chunk.iter().map(|&id| document(id)).collect();
        store.write_documents(&docs).expect("write");
    }
    println!("{total} documents written in {:.1?}", started.elapsed());
    store.close().expect("close");
    drop(store);

    let db = open_sled(&dir);
    println!(
        "{:<28} {:>9} {:>11} {:>12} {:>13} {:>13}",
        "tree", "entries", "key bytes", "value bytes", "bytes/bucket", "bytes/doc"
    );
    for name in [trees::DOCUMENTS_BY_CODE, trees::DOCUMENT_REFS] {
        let tree = db.open_tree(name).expect("tree");
        let (mut n, mut k, mut v) = (0u64, 0u64, 0u64);
        for item in tree.iter() {
            let (key, value) = item.expect("read");
            n += 1;
            k += key.len() as u64;
            v += value.len() as u64;
        }
        assert!(n <= 1 << 16, "{name}: {n} entries");
        println!(
            "{name:<28} {n:>9} {k:>11} {v:>12} {:>13.1} {:>13.1}",
            (k + v) as f64 / n.max(1) as f64,
            (k + v) as f64 / total.max(1) as f64
        );
    }
    drop(db);

    run_self("open", &dir, total);
    run_self("downgrade", &dir, total);
    println!("as an older build left it: the upgrade's open, then the next");
    run_self("open", &dir, total);
    run_self("open", &dir, total);
    run_self("probe", &dir, total);
    println!("with one entry per document as before beside them:");
    run_self("open", &dir, total);
}
