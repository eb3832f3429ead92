//! A hash table over a sled tree with a fixed number of buckets: a lookup
//! key (a document's code, a company's external reference) maps to the ids
//! that may hold it, in at most 2^16 sled entries however many ids there
//! are. sled keeps tens of bytes resident per entry for as long as the
//! tree exists, so one entry per document would grow memory with the
//! store; a bucket grows by about 5 bytes of value per id instead.
//!
//! Bucket key: the first two bytes of the key's SHA-256 (a hash that never
//! changes between builds). Bucket value: its entries in ascending id
//! order, each a fingerprint (u16, the next two bytes, big-endian) and the
//! id's difference from the entry before (from 0 for the first) as a LEB128
//! varint. A fingerprint match is only a candidate: the caller confirms it
//! against the record (at a million ids a lookup meets a false candidate
//! about once in 4,000).
//!
//! Why so tight: every insert rewrites its bucket in sled's log, and sled's
//! segment cleaner rewrites a bucket's whole leaf (17 buckets) whenever it
//! relocates one of its fragments; at a million documents these writes were
//! a fifth of sled's log with 12-byte entries (`trees::SUPERSEDED`).

use std::collections::HashMap;

use sha2::{Digest, Sha256};
use sled::Tree;

use crate::error::StoreResult;

/// Buckets of an index are `2^BUCKET_BITS`.
pub(crate) const BUCKET_BITS: u32 = 16;

/// One entry: a fingerprint and an id.
type Entry = (u16, u64);

#[derive(Clone)]
pub(crate) struct HashedIndex {
    tree: Tree,
    bucket_bits: u32,
    fingerprint_mask: u16,
}

/// A bucket's entries, ascending by id (a malformed tail, which sled never
/// leaves, ends the reading).
fn decode(bucket: &[u8]) -> Vec<Entry> {
    let mut out = Vec::with_capacity(bucket.len() / 4);
    let (mut rest, mut id) = (bucket, 0u64);
    while let [a, b, tail @ ..] = rest {
        let fingerprint = u16::from_be_bytes([*a, *b]);
        let Some((delta, after)) = read_varint(tail) else {
            break;
        };
        id = id.wrapping_add(delta);
        out.push((fingerprint, id));
        rest = after;
    }
    out
}

fn read_varint(bytes: &[u8]) -> Option<(u64, &[u8])> {
    let mut value = 0u64;
    for (i, byte) in bytes.iter().enumerate().take(10) {
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((value, &bytes[i + 1..]));
        }
    }
    None
}

/// `entries` must be ascending by id.
fn encode(entries: &[Entry]) -> Vec<u8> {
    let mut out = Vec::with_capacity(entries.len() * 5);
    let mut previous = 0u64;
    for &(fingerprint, id) in entries {
        out.extend_from_slice(&fingerprint.to_be_bytes());
        let mut delta = id.wrapping_sub(previous);
        loop {
            let byte = (delta & 0x7f) as u8;
            delta >>= 7;
            if delta == 0 {
                out.push(byte);
                break;
            }
            out.push(byte | 0x80);
        }
        previous = id;
    }
    out
}

/// Adds `entry` in its place (nothing if it is there already).
fn add(entries: &mut Vec<Entry>, entry: Entry) {
    if let Err(at) = entries.binary_search_by_key(&(entry.1, entry.0), |&(f, id)| (id, f)) {
        entries.insert(at, entry);
    }
}

fn holds(bucket: Option<&[u8]>, entry: Entry) -> bool {
    bucket.is_some_and(|b| decode(b).contains(&entry))
}

/// sled's merge operator of a bucket: `entry` is a fingerprint and an id
/// ([`entry_bytes`]), added in its place. sled writes the merged value to
/// its log, so reading a bucket never needs the operator.
fn merge_entry(_bucket: &[u8], old: Option<&[u8]>, entry: &[u8]) -> Option<Vec<u8>> {
    let mut entries = old.map(decode).unwrap_or_default();
    if let [a, b, id @ ..] = entry {
        if let Ok(id) = <[u8; 8]>::try_from(id) {
            add(
                &mut entries,
                (u16::from_be_bytes([*a, *b]), u64::from_be_bytes(id)),
            );
        }
    }
    (!entries.is_empty()).then(|| encode(&entries))
}

fn entry_bytes((fingerprint, id): Entry) -> [u8; 10] {
    let mut out = [0u8; 10];
    out[..2].copy_from_slice(&fingerprint.to_be_bytes());
    out[2..].copy_from_slice(&id.to_be_bytes());
    out
}

impl HashedIndex {
    pub(crate) fn new(tree: Tree) -> Self {
        tree.set_merge_operator(merge_entry);
        HashedIndex {
            tree,
            bucket_bits: BUCKET_BITS,
            fingerprint_mask: u16::MAX,
        }
    }

    /// Fewer buckets and a narrower fingerprint, so tests meet collisions.
    #[cfg(test)]
    pub(crate) fn with_shape(tree: Tree, bucket_bits: u32, fingerprint_mask: u16) -> Self {
        tree.set_merge_operator(merge_entry);
        HashedIndex {
            tree,
            bucket_bits: bucket_bits.min(BUCKET_BITS),
            fingerprint_mask,
        }
    }

    /// The key's bucket and fingerprint.
    fn slot(&self, key: &[u8]) -> ([u8; 2], u16) {
        let h = Sha256::digest(key);
        let top = u32::from(u16::from_be_bytes([h[0], h[1]]));
        let bucket = (top >> (BUCKET_BITS - self.bucket_bits)) as u16;
        let fingerprint = u16::from_be_bytes([h[2], h[3]]) & self.fingerprint_mask;
        (bucket.to_be_bytes(), fingerprint)
    }

    /// Adds `id` under `key`; true when it was not there yet (a second
    /// insert of the same pair changes nothing).
    pub(crate) fn insert(&self, key: &[u8], id: u64) -> StoreResult<bool> {
        let (bucket, fingerprint) = self.slot(key);
        let entry = (fingerprint, id);
        // A compare-and-swap loop: concurrent writers of a bucket both land.
        // Not read first: the entry is almost always new (a document's
        // first index); one already there is written back unchanged.
        let before = self.tree.fetch_and_update(bucket, |old| {
            let mut entries = old.map(decode).unwrap_or_default();
            add(&mut entries, entry);
            Some(encode(&entries))
        })?;
        Ok(!holds(before.as_deref(), entry))
    }

    /// Adds `id` under `key` without telling whether it was there: one
    /// pass down sled's tree where [`insert`](Self::insert) makes two (a
    /// read, then a compare-and-swap), for the writes of every document.
    pub(crate) fn add(&self, key: &[u8], id: u64) -> StoreResult<()> {
        let (bucket, fingerprint) = self.slot(key);
        self.tree.merge(bucket, entry_bytes((fingerprint, id)))?;
        Ok(())
    }

    /// Removes `id` from under `key`; true when it was there. (No document
    /// gives up its code or reference today: a stale entry would only cost
    /// a few bytes, its candidate failing the record check.)
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn remove(&self, key: &[u8], id: u64) -> StoreResult<bool> {
        let (bucket, fingerprint) = self.slot(key);
        let entry = (fingerprint, id);
        let before = self.tree.fetch_and_update(bucket, |old| {
            let mut entries = decode(old?);
            entries.retain(|e| e != &entry);
            (!entries.is_empty()).then(|| encode(&entries))
        })?;
        Ok(holds(before.as_deref(), entry))
    }

    /// The ids whose fingerprint matches `key`'s, lowest first: each may
    /// hold another key, so the caller reads its record to be sure.
    pub(crate) fn candidates(&self, key: &[u8]) -> StoreResult<Vec<u64>> {
        let (bucket, fingerprint) = self.slot(key);
        let Some(v) = self.tree.get(bucket)? else {
            return Ok(Vec::new());
        };
        Ok(decode(&v)
            .into_iter()
            .filter(|&(f, _)| f == fingerprint)
            .map(|(_, id)| id)
            .collect())
    }

    pub(crate) fn clear(&self) -> StoreResult<()> {
        Ok(self.tree.clear()?)
    }

    /// A rebuild from scratch: the buckets are gathered in memory (16
    /// bytes an id) and each written once, where an insert per id would
    /// rewrite its bucket every time.
    pub(crate) fn rebuild(&self) -> Rebuild<'_> {
        Rebuild {
            index: self,
            buckets: HashMap::new(),
        }
    }
}

pub(crate) struct Rebuild<'a> {
    index: &'a HashedIndex,
    buckets: HashMap<[u8; 2], Vec<Entry>>,
}

impl Rebuild<'_> {
    pub(crate) fn add(&mut self, key: &[u8], id: u64) {
        let (bucket, fingerprint) = self.index.slot(key);
        self.buckets
            .entry(bucket)
            .or_default()
            .push((fingerprint, id));
    }

    /// Replaces whatever the tree held with the buckets gathered.
    pub(crate) fn write(self) -> StoreResult<()> {
        self.index.clear()?;
        for (bucket, mut entries) in self.buckets {
            entries.sort_unstable_by_key(|&(f, id)| (id, f));
            entries.dedup();
            self.index.tree.insert(bucket, encode(&entries))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> (tempfile::TempDir, Tree) {
        let dir = tempfile::tempdir().unwrap();
        let db = sled::Config::new().path(dir.path()).open().unwrap();
        let tree = db.open_tree("t").unwrap();
        (dir, tree)
    }

    #[test]
    fn insert_is_idempotent_and_remove_takes_one_id() {
        let (_dir, t) = tree();
        let index = HashedIndex::new(t.clone());
        assert!(index.insert(b"a", 1).unwrap());
        assert!(!index.insert(b"a", 1).unwrap(), "same pair twice: once");
        assert!(index.insert(b"a", 2).unwrap());
        assert_eq!(index.candidates(b"a").unwrap(), vec![1, 2]);
        assert!(index.candidates(b"b").unwrap().is_empty());
        assert!(index.remove(b"a", 1).unwrap());
        assert!(!index.remove(b"a", 1).unwrap());
        assert_eq!(index.candidates(b"a").unwrap(), vec![2]);
        assert!(index.remove(b"a", 2).unwrap());
        assert!(t.is_empty(), "an emptied bucket is removed");
    }

    #[test]
    fn add_merges_into_the_bucket_as_insert_does() {
        let (_dir, t) = tree();
        let index = HashedIndex::with_shape(t.clone(), 1, u16::MAX);
        let other = HashedIndex::with_shape(tree().1, 1, u16::MAX);
        for i in [5u64, 1, 9, 1, 3] {
            index.add(format!("k{i}").as_bytes(), i).unwrap();
            other.insert(format!("k{i}").as_bytes(), i).unwrap();
        }
        assert_eq!(
            t.iter().collect::<Result<Vec<_>, _>>().unwrap(),
            other.tree.iter().collect::<Result<Vec<_>, _>>().unwrap(),
            "the same buckets, byte for byte"
        );
        assert_eq!(index.candidates(b"k9").unwrap(), vec![9]);
        assert!(
            !index.insert(b"k9", 9).unwrap(),
            "insert sees what add wrote"
        );
    }

    /// An index far larger than sled's cache: its leaves are read back
    /// from the log, each fragment of a leaf (the merges' deltas) whole in
    /// one read (`vendor/sled`, PATCHES.md item 9), and every id is found.
    #[test]
    fn an_index_larger_than_the_cache_reads_its_leaves_back_whole() {
        let dir = tempfile::tempdir().unwrap();
        let db = sled::Config::new()
            .path(dir.path())
            .cache_capacity(16 * 1024)
            .open()
            .unwrap();
        let index = HashedIndex::new(db.open_tree("h").unwrap());
        for i in 0..20_000u64 {
            index.add(format!("key-{i}").as_bytes(), i).unwrap();
        }
        db.flush().unwrap();
        for i in (0..20_000u64).step_by(7) {
            assert!(
                index
                    .candidates(format!("key-{i}").as_bytes())
                    .unwrap()
                    .contains(&i),
                "{i}"
            );
        }
    }

    #[test]
    fn keys_sharing_a_bucket_are_told_apart_by_fingerprint() {
        let (_dir, t) = tree();
        // Two buckets: 100 keys share them, each keeps its own ids.
        let index = HashedIndex::with_shape(t.clone(), 1, u16::MAX);
        for i in 0..100u64 {
            index.insert(format!("k{i}").as_bytes(), i).unwrap();
        }
        assert!(t.len() <= 2);
        for i in 0..100u64 {
            assert_eq!(
                index.candidates(format!("k{i}").as_bytes()).unwrap(),
                vec![i]
            );
        }
        index.remove(b"k7", 7).unwrap();
        assert!(index.candidates(b"k7").unwrap().is_empty());
        assert_eq!(index.candidates(b"k8").unwrap(), vec![8]);
    }

    #[test]
    fn colliding_fingerprints_give_every_candidate() {
        let (_dir, t) = tree();
        // One bucket and no fingerprint bits: every key collides.
        let index = HashedIndex::with_shape(t.clone(), 0, 0);
        index.insert(b"x", 1).unwrap();
        index.insert(b"y", 2).unwrap();
        assert_eq!(index.candidates(b"z").unwrap(), vec![1, 2]);
        assert_eq!(t.len(), 1);
        index.remove(b"x", 1).unwrap();
        assert_eq!(index.candidates(b"x").unwrap(), vec![2]);
    }

    #[test]
    fn the_real_shape_has_at_most_two_to_the_sixteen_buckets() {
        let (_dir, t) = tree();
        let index = HashedIndex::new(t.clone());
        for i in 0..100_000u64 {
            index.insert(&i.to_be_bytes(), i).unwrap();
        }
        let buckets = t.len();
        assert!(buckets <= 1 << 16, "{buckets} buckets");
        // 100k keys over 2^16 buckets leave about 51k of them in use.
        assert!(buckets > 45_000, "keys spread over the buckets: {buckets}");
        for i in (0..100_000u64).step_by(997) {
            assert!(index.candidates(&i.to_be_bytes()).unwrap().contains(&i));
        }
    }

    #[test]
    fn concurrent_writers_of_one_bucket_all_land() {
        let (_dir, t) = tree();
        let index = HashedIndex::with_shape(t, 0, u16::MAX);
        std::thread::scope(|s| {
            for w in 0..4u64 {
                let index = index.clone();
                s.spawn(move || {
                    for i in 0..50u64 {
                        index
                            .insert(format!("{w}-{i}").as_bytes(), w * 100 + i)
                            .unwrap();
                    }
                });
            }
        });
        for w in 0..4u64 {
            for i in 0..50u64 {
                let c = index.candidates(format!("{w}-{i}").as_bytes()).unwrap();
                assert!(c.contains(&(w * 100 + i)));
            }
        }
    }

    #[test]
    fn a_rebuild_replaces_the_tree_with_the_same_buckets_inserts_make() {
        let (_dir, t) = tree();
        let (_dir2, t2) = tree();
        let index = HashedIndex::with_shape(t.clone(), 4, u16::MAX);
        let inserted = HashedIndex::with_shape(t2.clone(), 4, u16::MAX);
        index.insert(b"stale", 99).unwrap();
        let mut rebuild = index.rebuild();
        for i in 0..200u64 {
            rebuild.add(format!("k{i}").as_bytes(), i);
            inserted.insert(format!("k{i}").as_bytes(), i).unwrap();
        }
        rebuild.add(b"k1", 1);
        rebuild.write().unwrap();
        assert!(index.candidates(b"stale").unwrap().is_empty());
        let all = |t: &Tree| -> Vec<_> { t.iter().map(|r| r.unwrap()).collect() };
        assert_eq!(all(&t), all(&t2));
    }

    #[test]
    fn ids_inserted_out_of_order_come_back_ascending() {
        let (_dir, t) = tree();
        let index = HashedIndex::with_shape(t, 0, 0);
        for id in [900_000_000_000u64, 3, 70_000, 1, u64::MAX, 0] {
            assert!(index.insert(&id.to_be_bytes(), id).unwrap());
        }
        assert_eq!(
            index.candidates(b"any").unwrap(),
            vec![0, 1, 3, 70_000, 900_000_000_000, u64::MAX]
        );
    }

    #[test]
    fn a_bucket_spends_about_five_bytes_an_id() {
        let (_dir, t) = tree();
        let index = HashedIndex::new(t.clone());
        let mut rebuild = index.rebuild();
        for i in 0..1_000_000u64 {
            rebuild.add(format!("load-{i}").as_bytes(), i + 1);
        }
        rebuild.write().unwrap();
        let bytes: usize = t.iter().map(|r| r.unwrap().1.len()).sum();
        // A fingerprint (2) and a delta of ~65,536 (3 bytes of varint).
        assert!(bytes <= 5_100_000, "{bytes} bytes for a million ids");
        for i in (0..1_000_000u64).step_by(99_991) {
            let key = format!("load-{i}");
            assert!(index.candidates(key.as_bytes()).unwrap().contains(&(i + 1)));
        }
    }

    #[test]
    fn the_hash_is_stable() {
        // SHA-256 of "abc" starts ba 78 16 bf: bucket ba78, fingerprint 16bf.
        let (_dir, t) = tree();
        let index = HashedIndex::new(t.clone());
        assert_eq!(index.slot(b"abc"), ([0xba, 0x78], 0x16bf));
        index.insert(b"abc", 5).unwrap();
        let stored = t.get([0xba, 0x78]).unwrap().unwrap();
        assert_eq!(stored.as_ref(), &[0x16, 0xbf, 5][..]);
    }
}
