//! The code and reference indexes' size with N documents: a store filled
//! through `SledStore::write_documents` (every document with a random
//! 96-hex code and an external reference, ten companies), then both trees
//! read with sled alone. Their entries stay at most 2^16 whatever N is.
//!
//! `cargo run --release -p emisor-store --example hashed_sizes -- [documents] [data-dir]`
//! (100,000 documents in a temporary dir unless told).

// A measuring tool: failing loudly is what we want.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use chrono::{NaiveDate, Utc};
use emisor_store::{trees, DocumentRecord, Environment, Keyring, MasterKey, SledStore};
use sha2::{Digest, Sha384};

fn document(id: u64) -> DocumentRecord {
    let now = Utc::now();
    let code: String = Sha384::digest(id.to_be_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    DocumentRecord {
        id,
        company_id: 1 + id % 10,
        environment: Environment::Test,
        document_type: 1,
        resolution_id: 1,
        prefix: "SETP".into(),
        number: 990_000_000 + id,
        state: 2,
        pending_build: false,
        code: Some(code),
        code_scheme: Some("CUFE-SHA384".into()),
        qr_url: None,
        issue_date: NaiveDate::from_ymd_opt(2026, 1, 1).unwrap(),
        total: "119000.00".into(),
        external_reference: Some(format!("PEDIDO-{id:08}")),
        customer_id: None,
        user_id: None,
        request: serde_json::Value::Null,
        transmission: None,
        attempts: 1,
        track_id: None,
        application_response_missing: None,
        api: None,
        list_keys: Default::default(),
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

fn main() {
    let mut args = std::env::args().skip(1);
    let total: u64 = args
        .next()
        .map_or(100_000, |n| n.parse().expect("a number"));
    let temp = tempfile::tempdir().expect("temp dir");
    let dir = args.next().map_or(temp.path().to_path_buf(), Into::into);

    let keys = Keyring::new(MasterKey::from_bytes(&[7u8; 32]).unwrap());
    let store = SledStore::open(&dir, keys).expect("open the store");
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
}
