//! The duplicate window's payloads (company and SHA-256 of each request) in
//! small append-only files, one per minute, beside sled.
//!
//! Why not a sled tree: at full speed the window holds hundreds of
//! thousands of documents, and sled keeps tens of bytes resident per entry
//! plus a log write and a removal per document. Here a document costs one
//! 60-byte append; start-up reads the
//! window's few files sequentially, and whole files past the window are
//! deleted.
//!
//! The files are not synced with every group commit (an `fdatasync` each)
//! but once a second at most ([`SYNC_EVERY`]), and appends wait in memory
//! until then (a `write` each costs CPU for nothing; both measured in
//! docs/performance.md): the same 60 bytes also go into the file log with
//! the document's request, which is synced before the client is answered.
//! The store keeps in sled the file log's end as of the last sync here; at
//! start-up the records after it, and the requests of documents still
//! half built, give back whatever a crash or a power loss took off these
//! files' tails ([`PayloadLog::restore`]).
//!
//! Record layout, big-endian: CRC-32 of the rest, created-at in µs, the
//! document id, the company id, the hash. A torn tail (a crash mid-append)
//! fails its CRC and ends the file's reading.

use std::collections::{BTreeMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};

use crate::error::StoreResult;
use crate::model::RecentRequest;

pub(crate) const RECORD_LEN: usize = 60;
/// How often at most the files are synced while documents are written.
pub(crate) const SYNC_EVERY: Duration = Duration::from_secs(1);
const MICROS_PER_MINUTE: i64 = 60_000_000;

struct Current {
    minute: i64,
    file: Option<File>,
    /// Records appended to `file` but not yet written to it.
    pending: Vec<u8>,
    /// Files written since the last sync.
    unsynced: Vec<File>,
    /// Whether `file` was appended to since the last sync: a sync with
    /// nothing new costs no `fdatasync`.
    dirty: bool,
    synced_at: Instant,
    /// [`SYNC_EVERY`], or longer in tests.
    sync_every: Duration,
}

pub(crate) struct PayloadLog {
    dir: PathBuf,
    current: Mutex<Current>,
}

fn file_name(minute: i64) -> String {
    format!("{minute:012}.log")
}

fn minute_of(name: &str) -> Option<i64> {
    name.strip_suffix(".log")?.parse().ok()
}

/// A minute's file for appending. One from before a crash (or a failed
/// write) may end in part of a record: cut it, so the records appended now
/// stay aligned.
fn open_aligned(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new().create(true).append(true).open(path)?;
    let len = file.metadata()?.len();
    file.set_len(len - len % RECORD_LEN as u64)?;
    Ok(file)
}

impl Current {
    /// Writes the records waiting in memory to the current file. On a
    /// failure they stay waiting, and the file is reopened (and its tail
    /// cut back to whole records) before the next try.
    fn write_pending(&mut self, dir: &Path) -> io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let file = match self.file.as_mut() {
            Some(f) => f,
            None => self
                .file
                .insert(open_aligned(&dir.join(file_name(self.minute)))?),
        };
        if let Err(e) = file.write_all(&self.pending) {
            self.file = None;
            return Err(e);
        }
        self.pending.clear();
        Ok(())
    }
}

/// A document's record, as appended here and kept with its request.
pub(crate) fn encode(
    at: DateTime<Utc>,
    id: u64,
    company: u64,
    hash: &[u8; 32],
) -> [u8; RECORD_LEN] {
    let mut r = [0u8; RECORD_LEN];
    r[4..12].copy_from_slice(&at.timestamp_micros().to_be_bytes());
    r[12..20].copy_from_slice(&id.to_be_bytes());
    r[20..28].copy_from_slice(&company.to_be_bytes());
    r[28..].copy_from_slice(hash);
    let crc = crc32fast::hash(&r[4..]);
    r[..4].copy_from_slice(&crc.to_be_bytes());
    r
}

/// A record back, if it is one and passes its check.
pub(crate) fn decode(r: &[u8]) -> Option<RecentRequest> {
    if r.len() != RECORD_LEN {
        return None;
    }
    let u64_at = |i: usize| r.get(i..i + 8)?.try_into().ok().map(u64::from_be_bytes);
    let crc = u32::from_be_bytes(r.get(..4)?.try_into().ok()?);
    if crc != crc32fast::hash(r.get(4..)?) {
        return None;
    }
    Some(RecentRequest {
        created_at: DateTime::from_timestamp_micros(u64_at(4)? as i64)?,
        document_id: u64_at(12)?,
        company_id: u64_at(20)?,
        payload_hash: r.get(28..RECORD_LEN)?.try_into().ok()?,
    })
}

/// A file's records up to the first that fails its check: a torn tail (a
/// crash mid-append) ends the file's reading.
fn valid_records(bytes: &[u8]) -> impl Iterator<Item = RecentRequest> + '_ {
    bytes.chunks(RECORD_LEN).map_while(decode)
}

impl PayloadLog {
    /// The directory of the minute files.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    pub(crate) fn open(dir: &Path) -> io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        Ok(PayloadLog {
            dir: dir.to_path_buf(),
            current: Mutex::new(Current {
                minute: i64::MIN,
                file: None,
                pending: Vec::new(),
                unsynced: Vec::new(),
                dirty: false,
                synced_at: Instant::now(),
                sync_every: SYNC_EVERY,
            }),
        })
    }

    fn minutes(&self) -> io::Result<Vec<i64>> {
        let mut out: Vec<i64> = std::fs::read_dir(&self.dir)?
            .filter_map(|e| e.ok()?.file_name().to_str().and_then(minute_of))
            .collect();
        out.sort_unstable();
        Ok(out)
    }

    /// Appends a document's payload ([`encode`]d, created at `at`); files
    /// of minutes before `keep_from` are deleted when a new minute's file
    /// is started.
    pub(crate) fn append(
        &self,
        at: DateTime<Utc>,
        record: &[u8; RECORD_LEN],
        keep_from: DateTime<Utc>,
    ) -> StoreResult<()> {
        let minute = at.timestamp_micros().div_euclid(MICROS_PER_MINUTE);
        let mut c = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        if c.file.is_none() || c.minute != minute {
            // The last minute's records go to its own file first.
            c.write_pending(&self.dir)?;
            let file = open_aligned(&self.dir.join(file_name(minute)))?;
            if let Some(old) = c.file.replace(file) {
                c.unsynced.push(old);
            }
            c.minute = minute;
            // The new file's directory entry is synced with the next sync.
            c.unsynced.push(File::open(&self.dir)?);
            self.prune(keep_from.timestamp_micros().div_euclid(MICROS_PER_MINUTE))?;
        }
        c.pending.extend_from_slice(record);
        c.dirty = true;
        Ok(())
    }

    /// Deletes the files of minutes wholly before `minute`.
    fn prune(&self, minute: i64) -> io::Result<()> {
        for m in self.minutes()?.into_iter().filter(|m| *m < minute) {
            std::fs::remove_file(self.dir.join(file_name(m)))?;
        }
        Ok(())
    }

    /// Whether appends are waiting for a sync and the last one is
    /// [`SYNC_EVERY`] old.
    pub(crate) fn sync_due(&self) -> bool {
        let c = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        (c.dirty || !c.unsynced.is_empty()) && c.synced_at.elapsed() >= c.sync_every
    }

    /// Test hook: group commits leave the files unsynced this long.
    #[cfg(test)]
    pub(crate) fn set_sync_every(&self, every: Duration) {
        self.current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .sync_every = every;
    }

    /// Makes every append before this call durable.
    pub(crate) fn sync(&self) -> io::Result<()> {
        let (current, older) = {
            let mut c = self.current.lock().unwrap_or_else(PoisonError::into_inner);
            c.write_pending(&self.dir)?;
            c.synced_at = Instant::now();
            let current = match std::mem::take(&mut c.dirty) {
                true => c.file.as_ref().map(File::try_clone).transpose()?,
                false => None,
            };
            (current, std::mem::take(&mut c.unsynced))
        };
        for f in older.iter().chain(current.as_ref()) {
            if let Err(e) = f.sync_data() {
                // The current file is synced again by the next caller.
                self.current
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .dirty = true;
                return Err(e);
            }
        }
        Ok(())
    }

    /// Puts back the payloads a power loss took off the files' tails (found
    /// in the file log): each missing one is appended to its minute's
    /// file, and those files are synced (what a killed process left in
    /// them may not be yet). Returns how many were missing. Only at open,
    /// before any append.
    pub(crate) fn restore(&self, found: &[RecentRequest]) -> StoreResult<usize> {
        let mut by_minute: BTreeMap<i64, Vec<&RecentRequest>> = BTreeMap::new();
        for p in found {
            let minute = p
                .created_at
                .timestamp_micros()
                .div_euclid(MICROS_PER_MINUTE);
            by_minute.entry(minute).or_default().push(p);
        }
        let mut restored = 0;
        for (minute, payloads) in &by_minute {
            let mut file = OpenOptions::new()
                .read(true)
                .append(true)
                .create(true)
                .open(self.dir.join(file_name(*minute)))?;
            let mut bytes = Vec::new();
            file.read_to_end(&mut bytes)?;
            // What follows a torn tail is cut.
            let valid: Vec<RecentRequest> = valid_records(&bytes).collect();
            let present: HashSet<u64> = valid.iter().map(|p| p.document_id).collect();
            let missing: Vec<u8> = payloads
                .iter()
                .filter(|p| !present.contains(&p.document_id))
                .flat_map(|p| encode(p.created_at, p.document_id, p.company_id, &p.payload_hash))
                .collect();
            if !missing.is_empty() {
                file.set_len((valid.len() * RECORD_LEN) as u64)?;
                file.write_all(&missing)?;
                restored += missing.len() / RECORD_LEN;
            }
            file.sync_data()?;
        }
        if !by_minute.is_empty() {
            File::open(&self.dir)?.sync_all()?;
        }
        Ok(restored)
    }

    /// The payloads of documents created at or after `since`, oldest first.
    pub(crate) fn since(&self, since: DateTime<Utc>) -> StoreResult<Vec<RecentRequest>> {
        let first = since.timestamp_micros().div_euclid(MICROS_PER_MINUTE);
        // What waits in memory is read with the rest.
        self.current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .write_pending(&self.dir)?;
        let mut out = Vec::new();
        for m in self.minutes()?.into_iter().filter(|m| *m >= first) {
            let mut bytes = Vec::new();
            match File::open(self.dir.join(file_name(m))) {
                Ok(mut f) => f.read_to_end(&mut bytes)?,
                // Pruned meanwhile: nothing of it is in the window.
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e.into()),
            };
            out.extend(valid_records(&bytes).filter(|p| p.created_at >= since));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    #[test]
    fn payloads_read_back_from_the_window_and_old_minutes_are_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let log = PayloadLog::open(dir.path()).unwrap();
        let t0 = at("2026-11-23T10:00:30Z");
        for i in 0..5u64 {
            let t = t0 + Duration::seconds(40 * i as i64);
            let record = encode(t, i + 1, 7, &[i as u8; 32]);
            log.append(t, &record, t - Duration::minutes(2)).unwrap();
        }
        log.sync().unwrap();
        let back = log.since(t0 + Duration::seconds(80)).unwrap();
        let ids: Vec<u64> = back.iter().map(|p| p.document_id).collect();
        assert_eq!(ids, [3, 4, 5]);
        assert_eq!(back[0].payload_hash, [2u8; 32]);
        assert_eq!(back[0].company_id, 7);
        // The last append (10:03:10) kept from 10:01:10: 10:00's file went.
        assert_eq!(
            log.minutes().unwrap().first(),
            Some(&(t0.timestamp() / 60 + 1))
        );
    }

    #[test]
    fn appends_wait_in_memory_until_a_sync_or_a_reading() {
        let dir = tempfile::tempdir().unwrap();
        let t = at("2026-11-23T10:00:00Z");
        let path = dir.path().join(file_name(t.timestamp() / 60));
        let log = PayloadLog::open(dir.path()).unwrap();
        log.append(t, &encode(t, 1, 7, &[1; 32]), t).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
        log.sync().unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), RECORD_LEN as u64);
        log.append(t, &encode(t, 2, 7, &[2; 32]), t).unwrap();
        assert_eq!(ids_since(&log, t), [1, 2]);
        // A new minute's file: the last minute's records are written first.
        let next = t + Duration::seconds(60);
        log.append(next, &encode(next, 3, 7, &[3; 32]), t).unwrap();
        log.append(next, &encode(next, 4, 7, &[4; 32]), t).unwrap();
        assert_eq!(ids_since(&log, t), [1, 2, 3, 4]);
        // A process that dies before the next sync loses what waits (the
        // store gives it back from the file log and the half-built
        // documents' requests at its next open).
        log.append(next, &encode(next, 5, 7, &[5; 32]), t).unwrap();
        drop(log);
        let log = PayloadLog::open(dir.path()).unwrap();
        assert_eq!(ids_since(&log, t), [1, 2, 3, 4]);
    }

    /// A log in `dir` holding document 1's synced record at `t`, then half
    /// a record, as a crash mid-append (or a power loss) leaves it; reopened.
    fn one_record_then_a_torn_tail(dir: &Path, t: DateTime<Utc>) -> PayloadLog {
        {
            let log = PayloadLog::open(dir).unwrap();
            log.append(t, &encode(t, 1, 7, &[1; 32]), t).unwrap();
            log.sync().unwrap();
        }
        let path = dir.join(file_name(t.timestamp() / 60));
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(&[0xAB; 30]).unwrap();
        PayloadLog::open(dir).unwrap()
    }

    fn ids_since(log: &PayloadLog, t: DateTime<Utc>) -> Vec<u64> {
        log.since(t)
            .unwrap()
            .iter()
            .map(|p| p.document_id)
            .collect()
    }

    #[test]
    fn restore_appends_only_the_missing_payloads_after_a_torn_tail_is_cut() {
        let dir = tempfile::tempdir().unwrap();
        let t = at("2026-11-23T10:00:00Z");
        let p = |id: u64, secs: i64| RecentRequest {
            created_at: t + Duration::seconds(secs),
            document_id: id,
            company_id: 7,
            payload_hash: [id as u8; 32],
        };
        let log = one_record_then_a_torn_tail(dir.path(), t);
        // 1 is there; 2 lost its record; 3 is of the next minute.
        let restored = log.restore(&[p(1, 0), p(2, 10), p(3, 70)]).unwrap();
        assert_eq!(restored, 2);
        let back = ids_since(&log, t);
        assert_eq!(back, [1, 2, 3]);
        assert_eq!(log.since(t).unwrap()[1], p(2, 10));
        // Again: nothing missing any more.
        assert_eq!(log.restore(&[p(1, 0), p(2, 10), p(3, 70)]).unwrap(), 0);
    }

    #[test]
    fn a_torn_tail_ends_the_reading_and_a_reopened_log_appends_after_it() {
        let dir = tempfile::tempdir().unwrap();
        let t = at("2026-11-23T10:00:00Z");
        let log = one_record_then_a_torn_tail(dir.path(), t);
        let ids = ids_since(&log, t);
        assert_eq!(ids, [1]);
        log.append(t, &encode(t, 2, 7, &[2; 32]), t).unwrap();
        let ids = ids_since(&log, t);
        assert_eq!(ids, [1, 2]);
    }
}
