//! The document files (signed XML and ZIP) in append-only segment files
//! beside sled, which keeps only a small reference to each.
//!
//! Why: sled rewrites a whole leaf (up to 16 values) on consolidation and
//! writes leaves over 128 KiB as separate blob files, so a document's files
//! cost many times their size in writes and a file creation each
//! (docs/performance.md). Here a document's
//! files are appended at the end of a segment, written once and never moved
//! (tax documents are kept, not deleted, so there is no compaction). Appends
//! wait in memory until the next sync writes them with one `pwrite` (a
//! batch's documents each made two): nothing points at a record before it
//! is synced.
//!
//! Record layout, little-endian: magic `EMF1`, CRC-32 of everything after it,
//! document id (u64), XML length (u32), ZIP length (u32), the XML, the ZIP.
//! A reader checks the CRC, so a reference to bytes that never reached the
//! disk is reported as corrupt instead of returning garbage.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use crate::error::{StoreError, StoreResult};
use crate::model::FileRef;

const MAGIC: &[u8; 4] = b"EMF1";
const HEADER_LEN: u64 = 24;
/// A new segment is started past this size.
const SEGMENT_LIMIT: u64 = 256 * 1024 * 1024;
const TREE: &str = "document_files";

/// A place in the log: a segment and an offset in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct FilePos {
    pub segment: u32,
    pub offset: u64,
}

impl FilePos {
    pub fn to_bytes(self) -> [u8; 12] {
        let mut b = [0u8; 12];
        b[..4].copy_from_slice(&self.segment.to_be_bytes());
        b[4..].copy_from_slice(&self.offset.to_be_bytes());
        b
    }

    pub fn from_bytes(b: &[u8]) -> Option<Self> {
        Some(FilePos {
            segment: u32::from_be_bytes(b.get(..4)?.try_into().ok()?),
            offset: u64::from_be_bytes(b.get(4..12)?.try_into().ok()?),
        })
    }
}

/// Where the record of `at` ends.
pub(crate) fn end_of(at: &FileRef) -> FilePos {
    FilePos {
        segment: at.segment,
        offset: at.offset + HEADER_LEN + u64::from(at.xml_len) + u64::from(at.zip_len),
    }
}

struct Active {
    segment: u32,
    file: Arc<File>,
    /// The segment's length with the records waiting in `pending`.
    len: u64,
    /// Records appended to `file` and not yet written, which end at `len`.
    pending: Vec<u8>,
    /// Segments written since the last sync (the active one included).
    unsynced: Vec<Arc<File>>,
}

pub struct FileLog {
    dir: PathBuf,
    segment_limit: u64,
    active: Mutex<Active>,
    /// Open handles for reading, by segment.
    readers: Mutex<HashMap<u32, Arc<File>>>,
    /// Held for a whole sync, so a caller never returns while another is
    /// still syncing the records it took.
    syncing: Mutex<()>,
    /// Every record that ends at or before this is durable (the end of
    /// the log as of the last sync that finished).
    synced_to: Mutex<FilePos>,
}

fn segment_path(dir: &Path, segment: u32) -> PathBuf {
    dir.join(format!("{segment:08}.seg"))
}

/// Opens a segment, creating it if needed; a new one's directory entry is
/// synced, so a synced record is never in a file that a power loss forgets.
fn open_segment(dir: &Path, segment: u32) -> io::Result<File> {
    let path = segment_path(dir, segment);
    let existed = path.exists();
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)?;
    if !existed {
        File::open(dir)?.sync_all()?;
    }
    Ok(file)
}

impl Active {
    /// Writes the records waiting in memory where they belong. On a
    /// failure they stay, and the next try writes them at the same place.
    fn write_pending(&mut self) -> io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let at = self.len - self.pending.len() as u64;
        self.file.write_all_at(&self.pending, at)?;
        self.pending.clear();
        // A batch's worth stays allocated; a rare large one is given back.
        self.pending.shrink_to(PENDING_KEPT);
        Ok(())
    }
}

/// The buffer of waiting records keeps at most this much between syncs.
const PENDING_KEPT: usize = 1024 * 1024;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn corrupt(reason: impl Into<String>) -> StoreError {
    StoreError::Corrupt {
        tree: TREE,
        reason: reason.into(),
    }
}

impl FileLog {
    /// Opens the log in `dir`, appending after the newest segment's end. A
    /// torn record at that end (power loss mid-write) stays as unreferenced
    /// bytes: references are only stored after their record was synced.
    pub fn open(dir: &Path) -> StoreResult<Self> {
        Self::open_with_limit(dir, SEGMENT_LIMIT)
    }

    /// The directory of the segments.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    fn open_with_limit(dir: &Path, segment_limit: u64) -> StoreResult<Self> {
        std::fs::create_dir_all(dir)?;
        let newest = std::fs::read_dir(dir)?
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let name = e.file_name();
                let name = name.to_str()?;
                name.strip_suffix(".seg")?.parse::<u32>().ok()
            })
            .max()
            .unwrap_or(1);
        let file = Arc::new(open_segment(dir, newest)?);
        let len = file.metadata()?.len();
        let mut readers = HashMap::new();
        readers.insert(newest, file.clone());
        Ok(FileLog {
            dir: dir.to_path_buf(),
            segment_limit,
            active: Mutex::new(Active {
                segment: newest,
                file,
                len,
                pending: Vec::new(),
                unsynced: Vec::new(),
            }),
            readers: Mutex::new(readers),
            syncing: Mutex::new(()),
            synced_to: Mutex::new(FilePos {
                segment: 0,
                offset: 0,
            }),
        })
    }

    /// Appends one document's files; durable after the next [`sync`](Self::sync).
    pub fn append(&self, document_id: u64, xml: &[u8], zip: &[u8]) -> StoreResult<FileRef> {
        let xml_len = u32::try_from(xml.len()).map_err(|_| corrupt("XML over 4 GiB"))?;
        let zip_len = u32::try_from(zip.len()).map_err(|_| corrupt("ZIP over 4 GiB"))?;
        let record_len = HEADER_LEN + u64::from(xml_len) + u64::from(zip_len);

        let mut active = lock(&self.active);
        if active.len > 0 && active.len + record_len > self.segment_limit {
            // The last segment's records go to it before the next begins.
            active.write_pending()?;
            let segment = active.segment + 1;
            let file = Arc::new(open_segment(&self.dir, segment)?);
            lock(&self.readers).insert(segment, file.clone());
            active.segment = segment;
            active.file = file;
            active.len = 0;
        }
        let offset = active.len;
        let record = &mut active.pending;
        let start = record.len();
        record.extend_from_slice(MAGIC);
        record.extend_from_slice(&[0; 4]);
        record.extend_from_slice(&document_id.to_le_bytes());
        record.extend_from_slice(&xml_len.to_le_bytes());
        record.extend_from_slice(&zip_len.to_le_bytes());
        record.extend_from_slice(xml);
        record.extend_from_slice(zip);
        let crc = crc32fast::hash(&record[start + 8..]);
        record[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
        active.len += record_len;
        if !active.unsynced.iter().any(|f| Arc::ptr_eq(f, &active.file)) {
            let file = active.file.clone();
            active.unsynced.push(file);
        }
        Ok(FileRef {
            segment: active.segment,
            offset,
            xml_len,
            zip_len,
        })
    }

    /// Makes every record appended before this call durable.
    pub fn sync(&self) -> StoreResult<()> {
        let _one_at_a_time = lock(&self.syncing);
        let (pending, end) = {
            let mut active = lock(&self.active);
            active.write_pending()?;
            let end = FilePos {
                segment: active.segment,
                offset: active.len,
            };
            (std::mem::take(&mut active.unsynced), end)
        };
        for (i, file) in pending.iter().enumerate() {
            if let Err(e) = file.sync_data() {
                // Keep the ones not yet synced for the next caller.
                lock(&self.active)
                    .unsynced
                    .extend(pending[i..].iter().cloned());
                return Err(e.into());
            }
        }
        let mut synced_to = lock(&self.synced_to);
        *synced_to = (*synced_to).max(end);
        Ok(())
    }

    /// Every record ending at or before this is durable.
    pub(crate) fn synced_to(&self) -> FilePos {
        *lock(&self.synced_to)
    }

    /// Where the next record will go (every record before it is appended).
    pub fn end(&self) -> FilePos {
        let active = lock(&self.active);
        FilePos {
            segment: active.segment,
            offset: active.len,
        }
    }

    /// Hands every whole record from `from` to the end of the log to `f`
    /// as (document id, first part, second part), in order. A record that
    /// fails its check (a torn write that a crash left, which later appends
    /// went after) is skipped by looking for the next one that passes.
    pub fn scan_from(
        &self,
        from: FilePos,
        mut f: impl FnMut(u64, &[u8], &[u8]),
    ) -> StoreResult<()> {
        lock(&self.active).write_pending()?;
        let last = self.end().segment;
        for segment in from.segment..=last {
            let start = if segment == from.segment {
                from.offset
            } else {
                0
            };
            let file = match self.reader(segment) {
                Ok(file) => file,
                // A segment number never used (the log began later).
                Err(StoreError::Io(e)) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            };
            let len = file.metadata()?.len();
            let mut bytes = vec![0u8; len.saturating_sub(start) as usize];
            file.read_exact_at(&mut bytes, start)?;
            let mut at = 0;
            while at < bytes.len() {
                match parse_record(&bytes[at..]) {
                    Some((id, first, second, record_len)) => {
                        f(id, first, second);
                        at += record_len;
                    }
                    None => match find(&bytes[at + 1..], MAGIC) {
                        Some(next) => at += 1 + next,
                        None => break,
                    },
                }
            }
        }
        Ok(())
    }

    fn reader(&self, segment: u32) -> StoreResult<Arc<File>> {
        let mut readers = lock(&self.readers);
        if let Some(f) = readers.get(&segment) {
            return Ok(f.clone());
        }
        let file = Arc::new(File::open(segment_path(&self.dir, segment))?);
        readers.insert(segment, file.clone());
        Ok(file)
    }

    /// Reads a record back as (XML, ZIP), checking it is the one referenced.
    pub fn read(&self, document_id: u64, at: &FileRef) -> StoreResult<(Vec<u8>, Vec<u8>)> {
        let body = at.xml_len as usize + at.zip_len as usize;
        let mut record = vec![0u8; HEADER_LEN as usize + body];
        {
            // A record still waiting in memory is written first.
            let mut active = lock(&self.active);
            let written = active.len - active.pending.len() as u64;
            if at.segment == active.segment && at.offset + record.len() as u64 > written {
                active.write_pending()?;
            }
        }
        self.reader(at.segment)?
            .read_exact_at(&mut record, at.offset)
            .map_err(|e| corrupt(format!("files of document {document_id}: {e}")))?;
        let stored_crc = u32::from_le_bytes([record[4], record[5], record[6], record[7]]);
        let mut id = [0u8; 8];
        id.copy_from_slice(&record[8..16]);
        if &record[..4] != MAGIC
            || stored_crc != crc32fast::hash(&record[8..])
            || u64::from_le_bytes(id) != document_id
        {
            return Err(corrupt(format!(
                "files of document {document_id}: record at {}:{} fails its check",
                at.segment, at.offset
            )));
        }
        let zip = record.split_off(HEADER_LEN as usize + at.xml_len as usize);
        record.drain(..HEADER_LEN as usize);
        Ok((record, zip))
    }
}

/// The record at the start of `bytes`, if whole and passing its check:
/// (document id, first part, second part, its length).
fn parse_record(bytes: &[u8]) -> Option<(u64, &[u8], &[u8], usize)> {
    let u32_at = |i: usize| Some(u32::from_le_bytes(bytes.get(i..i + 4)?.try_into().ok()?));
    if bytes.get(..4)? != MAGIC {
        return None;
    }
    let first = u32_at(16)? as usize;
    let second = u32_at(20)? as usize;
    let len = HEADER_LEN as usize + first + second;
    let record = bytes.get(..len)?;
    if u32_at(4)? != crc32fast::hash(&record[8..]) {
        return None;
    }
    let id = u64::from_le_bytes(record[8..16].try_into().ok()?);
    let body = &record[HEADER_LEN as usize..];
    Some((id, &body[..first], &body[first..], len))
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appended_records_read_back_after_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let refs: Vec<_> = {
            let log = FileLog::open(dir.path()).unwrap();
            let refs = (1..=20u64)
                .map(|id| {
                    let xml = format!("<Invoice id=\"{id}\"/>").repeat(id as usize);
                    log.append(id, xml.as_bytes(), &[id as u8; 7]).unwrap()
                })
                .collect();
            log.sync().unwrap();
            refs
        };
        let log = FileLog::open(dir.path()).unwrap();
        for (i, r) in refs.iter().enumerate() {
            let id = i as u64 + 1;
            let (xml, zip) = log.read(id, r).unwrap();
            assert_eq!(
                xml,
                format!("<Invoice id=\"{id}\"/>")
                    .repeat(id as usize)
                    .as_bytes()
            );
            assert_eq!(zip, vec![id as u8; 7]);
        }
        // Appends after reopening go after the existing records.
        let next = log.append(21, b"<x/>", b"z").unwrap();
        assert!(next.offset > refs.last().unwrap().offset);
    }

    #[test]
    fn appends_wait_in_memory_until_a_sync_but_read_back_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let log = FileLog::open(dir.path()).unwrap();
        let on_disk = || {
            std::fs::metadata(segment_path(dir.path(), 1))
                .unwrap()
                .len()
        };
        let a = log.append(1, b"<a/>", b"za").unwrap();
        let b = log.append(2, b"<b/>", b"").unwrap();
        assert_eq!(on_disk(), 0);
        assert_eq!(log.end().offset, 2 * HEADER_LEN + 10);
        // Reading one writes what waits.
        assert_eq!(log.read(2, &b).unwrap(), (b"<b/>".to_vec(), vec![]));
        assert_eq!(on_disk(), 2 * HEADER_LEN + 10);
        let c = log.append(3, b"<c/>", b"zc").unwrap();
        log.sync().unwrap();
        assert_eq!(on_disk(), 3 * HEADER_LEN + 16);
        assert_eq!(log.read(1, &a).unwrap(), (b"<a/>".to_vec(), b"za".to_vec()));
        assert_eq!(log.read(3, &c).unwrap(), (b"<c/>".to_vec(), b"zc".to_vec()));
        // A process that dies before the next sync loses what waits, which
        // nothing points at yet; a reopened log appends at the end on disk.
        log.append(4, b"<d/>", b"").unwrap();
        drop(log);
        let log = FileLog::open(dir.path()).unwrap();
        assert_eq!(log.end().offset, 3 * HEADER_LEN + 16);
    }

    #[test]
    fn records_roll_over_to_new_segments_and_read_back_from_each() {
        let dir = tempfile::tempdir().unwrap();
        let refs: Vec<_> = {
            let log = FileLog::open_with_limit(dir.path(), 100).unwrap();
            let refs = (1..=5u64)
                .map(|id| log.append(id, &[b'x'; 60], b"PK").unwrap())
                .collect();
            log.sync().unwrap();
            refs
        };
        let segments: Vec<u32> = refs.iter().map(|r| r.segment).collect();
        assert_eq!(
            segments,
            vec![1, 2, 3, 4, 5],
            "one record per 100-byte segment"
        );
        let log = FileLog::open_with_limit(dir.path(), 100).unwrap();
        for (i, r) in refs.iter().enumerate() {
            assert_eq!(log.read(i as u64 + 1, r).unwrap().1, b"PK");
        }
        assert_eq!(log.append(6, b"<x/>", b"").unwrap().segment, 6);
    }

    #[test]
    fn a_scan_reads_every_record_after_a_place_across_segments_past_a_torn_one() {
        let dir = tempfile::tempdir().unwrap();
        let log = FileLog::open_with_limit(dir.path(), 200).unwrap();
        log.append(1, &[b'a'; 60], b"").unwrap();
        let from = log.end();
        log.append(2, &[b'b'; 60], b"two").unwrap();
        // A torn record (a crash mid-write), then appends after it, as a
        // reopened log makes them: at the segment's end.
        let torn = log.append(3, &[b'c'; 60], b"").unwrap();
        log.sync().unwrap();
        let file = OpenOptions::new()
            .write(true)
            .open(segment_path(dir.path(), torn.segment))
            .unwrap();
        file.write_all_at(&[0; 30], torn.offset + 20).unwrap();
        for id in 4..=6u64 {
            log.append(id, &[b'd'; 60], &id.to_le_bytes()).unwrap();
        }
        assert!(
            log.end().segment > from.segment,
            "the records span segments"
        );
        let mut seen = Vec::new();
        log.scan_from(from, |id, first, second| {
            seen.push((id, first.len(), second.to_vec()))
        })
        .unwrap();
        let ids: Vec<u64> = seen.iter().map(|s| s.0).collect();
        assert_eq!(ids, [2, 4, 5, 6]);
        assert_eq!(seen[0], (2, 60, b"two".to_vec()));
        assert_eq!(seen[3].2, 6u64.to_le_bytes());
        // From the end: nothing.
        let mut none = 0;
        log.scan_from(log.end(), |_, _, _| none += 1).unwrap();
        assert_eq!(none, 0);
    }

    #[test]
    fn a_damaged_or_foreign_record_is_reported_not_returned() {
        let dir = tempfile::tempdir().unwrap();
        let log = FileLog::open(dir.path()).unwrap();
        let r = log.append(7, b"<Invoice/>", b"PK").unwrap();
        assert!(matches!(log.read(8, &r), Err(StoreError::Corrupt { .. })));
        let file = OpenOptions::new()
            .write(true)
            .open(segment_path(dir.path(), r.segment))
            .unwrap();
        file.write_all_at(b"X", r.offset + HEADER_LEN + 2).unwrap();
        assert!(matches!(log.read(7, &r), Err(StoreError::Corrupt { .. })));
        // A reference past the end (bytes that never reached the disk).
        let beyond = FileRef {
            offset: r.offset + 1000,
            ..r
        };
        assert!(matches!(
            log.read(7, &beyond),
            Err(StoreError::Corrupt { .. })
        ));
    }
}
