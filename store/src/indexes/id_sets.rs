//! Sets of document ids stored as bitmap chunks: `prefix ‖ block` → a u64
//! whose bit `i` says id `block × 64 + i` is in the set (block = `id >> 6`,
//! big-endian, or inverted for sets read newest first).
//!
//! sled splits a leaf past 16 entries and keeps a page-table entry per page
//! resident whatever its cache size, so every entry costs RSS for ever; a
//! chunk holds up to 64 ids in one entry. Each chunk changes by one atomic
//! `fetch_and_update`, so concurrent writers are safe, and adding or
//! removing twice changes nothing (the crash repairs re-apply changes).

use std::ops::RangeBounds;

use sled::{IVec, Tree};

use crate::encoding::codec::read_u64;
use crate::error::{StoreError, StoreResult};

/// How a chunk's block is written after the prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Blocks {
    /// Oldest ids first in key order.
    Ascending,
    /// Inverted: newest ids first in key order.
    NewestFirst,
}

/// The id sets of one tree.
#[derive(Clone)]
pub(crate) struct IdSets {
    tree: Tree,
    blocks: Blocks,
    name: &'static str,
}

/// One stored chunk: its key, block and bitmap.
pub(crate) struct Chunk {
    pub(crate) key: IVec,
    pub(crate) block: u64,
    pub(crate) bits: u64,
}

impl Chunk {
    /// Its ids, ascending or descending (bits high to low).
    pub(crate) fn ids(&self, descending: bool) -> Bits {
        Bits {
            bits: self.bits,
            base: self.block << 6,
            descending,
        }
    }
}

/// The ids of one chunk's bitmap.
pub(crate) struct Bits {
    bits: u64,
    base: u64,
    descending: bool,
}

impl Iterator for Bits {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        if self.bits == 0 {
            return None;
        }
        let bit = if self.descending {
            63 - self.bits.leading_zeros()
        } else {
            self.bits.trailing_zeros()
        };
        self.bits &= !(1u64 << bit);
        Some(self.base + u64::from(bit))
    }
}

/// `id`'s bit in its chunk.
pub(crate) fn bit(id: u64) -> u64 {
    1u64 << (id & 63)
}

impl IdSets {
    pub(crate) fn new(tree: Tree, blocks: Blocks, name: &'static str) -> Self {
        IdSets { tree, blocks, name }
    }

    fn block_bytes(&self, block: u64) -> [u8; 8] {
        match self.blocks {
            Blocks::Ascending => block,
            Blocks::NewestFirst => u64::MAX - block,
        }
        .to_be_bytes()
    }

    /// The key of the chunk holding `id` in the set `prefix`.
    pub(crate) fn chunk_key(&self, prefix: &[u8], id: u64) -> Vec<u8> {
        let mut k = Vec::with_capacity(prefix.len() + 8);
        k.extend_from_slice(prefix);
        k.extend_from_slice(&self.block_bytes(id >> 6));
        k
    }

    /// Sets the bits `set` and clears the bits `clear` of a chunk (`block`
    /// of `prefix`) in one write, a chunk left empty going. Returns its
    /// bits before and after.
    pub(crate) fn update_bits(
        &self,
        prefix: &[u8],
        block: u64,
        set: u64,
        clear: u64,
    ) -> StoreResult<(u64, u64)> {
        let key = self.chunk_key(prefix, block << 6);
        let before = self.tree.fetch_and_update(&key, |v| {
            let after = (v.and_then(read_u64).unwrap_or(0) | set) & !clear;
            (after != 0).then(|| after.to_be_bytes().to_vec())
        })?;
        let before = before.and_then(|v| read_u64(&v)).unwrap_or(0);
        Ok((before, (before | set) & !clear))
    }

    /// The bits of `bits` set in a chunk (`block` of `prefix`). Returns
    /// whether any was absent.
    pub(crate) fn add_bits(&self, prefix: &[u8], block: u64, bits: u64) -> StoreResult<bool> {
        let (before, _) = self.update_bits(prefix, block, bits, 0)?;
        Ok(before & bits != bits)
    }

    /// Adds `id` to the set `prefix`; returns whether it was absent.
    pub(crate) fn add(&self, prefix: &[u8], id: u64) -> StoreResult<bool> {
        self.add_bits(prefix, id >> 6, bit(id))
    }

    /// Removes `id` from the set `prefix` (a chunk left empty goes);
    /// returns whether it was present.
    pub(crate) fn remove(&self, prefix: &[u8], id: u64) -> StoreResult<bool> {
        let (before, _) = self.update_bits(prefix, id >> 6, 0, bit(id))?;
        Ok(before & bit(id) != 0)
    }

    /// The bitmap of chunk `block` of the set `prefix` (0 when absent).
    pub(crate) fn bits(&self, prefix: &[u8], block: u64) -> StoreResult<u64> {
        Ok(self
            .tree
            .get(self.chunk_key(prefix, block << 6))?
            .and_then(|v| read_u64(&v))
            .unwrap_or(0))
    }

    pub(crate) fn contains(&self, prefix: &[u8], id: u64) -> StoreResult<bool> {
        Ok(self
            .tree
            .get(self.chunk_key(prefix, id))?
            .and_then(|v| read_u64(&v))
            .is_some_and(|bits| bits & bit(id) != 0))
    }

    /// A stored entry read as a chunk (its key ends with the block).
    fn chunk(&self, key: IVec, value: &[u8]) -> StoreResult<Chunk> {
        let stored = key.len().checked_sub(8).and_then(|at| read_u64(&key[at..]));
        match (stored, read_u64(value)) {
            (Some(b), Some(bits)) => Ok(Chunk {
                block: match self.blocks {
                    Blocks::Ascending => b,
                    Blocks::NewestFirst => u64::MAX - b,
                },
                key,
                bits,
            }),
            _ => Err(StoreError::Corrupt {
                tree: self.name,
                reason: "an id set chunk is not a block and a bitmap".into(),
            }),
        }
    }

    /// The chunks of a key range, in key order.
    pub(crate) fn chunks<R: RangeBounds<Vec<u8>>>(
        &self,
        range: R,
    ) -> impl Iterator<Item = StoreResult<Chunk>> + '_ {
        self.tree.range(range).map(|item| {
            let (k, v) = item?;
            self.chunk(k, &v)
        })
    }

    /// The ids of the set `prefix`, ascending or descending.
    pub(crate) fn ids(
        &self,
        prefix: &[u8],
        descending: bool,
    ) -> impl Iterator<Item = StoreResult<u64>> + '_ {
        let scan = self.tree.scan_prefix(prefix);
        // Key order is id order, reversed for inverted blocks.
        let reverse = descending != (self.blocks == Blocks::NewestFirst);
        let entries: Box<dyn Iterator<Item = sled::Result<(IVec, IVec)>>> = if reverse {
            Box::new(scan.rev())
        } else {
            Box::new(scan)
        };
        entries.flat_map(move |item| {
            let chunk = item
                .map_err(StoreError::from)
                .and_then(|(k, v)| self.chunk(k, &v));
            let (ids, error) = match chunk {
                Ok(c) => (Some(c.ids(descending)), None),
                Err(e) => (None, Some(Err(e))),
            };
            error.into_iter().chain(ids.into_iter().flatten().map(Ok))
        })
    }

    /// How many ids the set `prefix` holds.
    pub(crate) fn count(&self, prefix: &[u8]) -> StoreResult<u64> {
        let mut n = 0;
        for item in self.tree.scan_prefix(prefix) {
            let (k, v) = item?;
            n += u64::from(self.chunk(k, &v)?.bits.count_ones());
        }
        Ok(n)
    }

    pub(crate) fn clear(&self) -> StoreResult<()> {
        Ok(self.tree.clear()?)
    }

    /// Stored chunks (sled entries).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.tree.len()
    }

    /// A one-time build from ids in ascending order: one write per chunk.
    pub(crate) fn loader(&self) -> Loader<'_> {
        Loader {
            sets: self,
            block: 0,
            chunks: Default::default(),
        }
    }
}

/// Gathers the bits of the current block's chunks, written when the ids
/// move to another block (ids out of order are still right, only slower).
pub(crate) struct Loader<'a> {
    sets: &'a IdSets,
    block: u64,
    chunks: std::collections::HashMap<Vec<u8>, u64>,
}

impl Loader<'_> {
    pub(crate) fn add(&mut self, prefix: &[u8], id: u64) -> StoreResult<()> {
        if id >> 6 != self.block {
            self.write()?;
            self.block = id >> 6;
        }
        *self.chunks.entry(prefix.to_vec()).or_insert(0) |= bit(id);
        Ok(())
    }

    fn write(&mut self) -> StoreResult<()> {
        for (prefix, bits) in self.chunks.drain() {
            self.sets.add_bits(&prefix, self.block, bits)?;
        }
        Ok(())
    }

    pub(crate) fn finish(mut self) -> StoreResult<()> {
        self.write()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sets(blocks: Blocks) -> IdSets {
        let db = sled::Config::new().temporary(true).open().unwrap();
        IdSets::new(db.open_tree("sets").unwrap(), blocks, "sets")
    }

    fn all(s: &IdSets, prefix: &[u8], descending: bool) -> Vec<u64> {
        s.ids(prefix, descending)
            .collect::<StoreResult<_>>()
            .unwrap()
    }

    #[test]
    fn ids_come_back_in_either_order_whatever_the_key_order() {
        let ids = [1u64, 2, 63, 64, 65, 127, 128, 1000, 4097, u64::MAX - 3];
        for blocks in [Blocks::Ascending, Blocks::NewestFirst] {
            let s = sets(blocks);
            for id in ids.iter().rev() {
                assert!(s.add(b"a", *id).unwrap());
            }
            s.add(b"b", 5).unwrap();
            assert_eq!(all(&s, b"a", false), ids);
            let mut down = ids.to_vec();
            down.reverse();
            assert_eq!(all(&s, b"a", true), down);
            assert_eq!(s.count(b"a").unwrap(), ids.len() as u64);
            assert!(s.contains(b"a", 64).unwrap() && !s.contains(b"a", 66).unwrap());
        }
    }

    #[test]
    fn adding_or_removing_twice_changes_nothing_and_an_empty_chunk_goes() {
        let s = sets(Blocks::Ascending);
        assert!(s.add(b"p", 10).unwrap());
        assert!(!s.add(b"p", 10).unwrap());
        assert!(s.add(b"p", 11).unwrap());
        assert_eq!(s.len(), 1, "one chunk for a block");
        assert!(s.remove(b"p", 10).unwrap());
        assert!(!s.remove(b"p", 10).unwrap());
        assert_eq!(all(&s, b"p", false), [11]);
        assert!(s.remove(b"p", 11).unwrap());
        assert_eq!(s.len(), 0, "an empty chunk is removed");
        assert!(!s.remove(b"p", 11).unwrap());
        assert_eq!(s.len(), 0);
    }

    #[test]
    fn newest_first_chunks_read_newest_first_in_key_order() {
        let s = sets(Blocks::NewestFirst);
        for id in [3u64, 70, 200, 201] {
            s.add(b"x", id).unwrap();
        }
        let mut read = Vec::new();
        for c in s.chunks(b"x".to_vec()..) {
            read.extend(c.unwrap().ids(true));
        }
        assert_eq!(read, [201, 200, 70, 3]);
    }

    #[test]
    fn concurrent_writers_lose_no_bit() {
        let s = sets(Blocks::Ascending);
        std::thread::scope(|scope| {
            for t in 0..4u64 {
                let s = s.clone();
                scope.spawn(move || {
                    for i in 0..256u64 {
                        s.add(b"c", i * 4 + t).unwrap();
                    }
                });
            }
        });
        assert_eq!(all(&s, b"c", false), (0..1024).collect::<Vec<_>>());
        std::thread::scope(|scope| {
            for t in 0..4u64 {
                let s = s.clone();
                scope.spawn(move || {
                    for i in 0..256u64 {
                        s.remove(b"c", i * 4 + t).unwrap();
                    }
                });
            }
        });
        assert_eq!(s.len(), 0);
    }

    #[test]
    fn a_loader_writes_one_chunk_per_block_and_set() {
        let s = sets(Blocks::NewestFirst);
        let mut l = s.loader();
        for id in 0..640u64 {
            l.add(if id % 2 == 0 { b"e" } else { b"o" }, id).unwrap();
        }
        l.add(b"e", 2).unwrap(); // out of order: merged, not lost
        l.finish().unwrap();
        assert_eq!(s.len(), 20, "10 blocks × 2 sets");
        assert_eq!(s.count(b"e").unwrap(), 320);
        assert_eq!(all(&s, b"o", false).len(), 320);
    }
}
