//! What each sled tree of a stopped server's data dir holds (entries, key
//! and value bytes), beside the bytes sled's files and the file log take
//! on disk: sled's own share is the difference.
//!
//! `cargo run --release -p emisor-store --example store_sizes -- <data-dir>`

// A measuring tool: failing loudly on a bad path is what we want.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

fn disk_bytes(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let meta = entry.metadata().expect("metadata");
        total += if meta.is_dir() {
            disk_bytes(&entry.path())
        } else {
            meta.blocks() * 512
        };
    }
    total
}

fn main() {
    let dir = std::env::args()
        .nth(1)
        .expect("usage: store_sizes <data-dir>");
    let dir = Path::new(&dir);
    let db = sled::Config::new()
        .path(dir.join("sled"))
        .open()
        .expect("open sled (is the server stopped?)");
    let mut rows = Vec::new();
    let (mut keys, mut values) = (0u64, 0u64);
    for name in db.tree_names() {
        let tree = db.open_tree(&name).expect("tree");
        let (mut n, mut k, mut v) = (0u64, 0u64, 0u64);
        for item in tree.iter() {
            let (key, value) = item.expect("read");
            n += 1;
            k += key.len() as u64;
            v += value.len() as u64;
        }
        keys += k;
        values += v;
        rows.push((String::from_utf8_lossy(&name).into_owned(), n, k, v));
    }
    rows.sort_by_key(|r| std::cmp::Reverse(r.2 + r.3));
    println!(
        "{:<28} {:>10} {:>12} {:>14}",
        "tree", "entries", "key bytes", "value bytes"
    );
    for (name, n, k, v) in rows {
        if n > 0 {
            println!("{name:<28} {n:>10} {k:>12} {v:>14}");
        }
    }
    let sled_disk = disk_bytes(&dir.join("sled"));
    let files_disk = disk_bytes(&dir.join("files"));
    println!("keys + values: {} bytes", keys + values);
    println!(
        "sled on disk:  {sled_disk} bytes ({:.2}x)",
        sled_disk as f64 / (keys + values).max(1) as f64
    );
    println!("file log:      {files_disk} bytes");
}
