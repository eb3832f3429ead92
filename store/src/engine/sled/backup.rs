//! A consistent point to copy the store from: phase one held (the
//! numbering lock) and the flusher paused, what they wrote made durable,
//! sled's trees copied into a new sled database and the length of every
//! file beside sled (the document file log, the payload log) noted; then,
//! with issuing going again, each of those files copied up to its noted
//! length. The files only grow by appends, so the copy holds every file a
//! copied record points at and nothing written after the point: an intent
//! appended later would otherwise come back, at the copy's first open, as
//! a document the original had not numbered at the point.
//!
//! Writes outside phase one and the flusher (admin records, settings,
//! leases, mail logs: the synchronous traits' other writers) are not held:
//! one landing during the copy is in it or not, and a transaction of two
//! trees (a company and its NIT index, say) may be half in it. A backup that
//! needs them too holds their callers for the copy (the admin API runs one
//! admin change at a time with it).

use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use chrono::Utc;

use crate::durability::flusher::FlusherPause;
use crate::encoding::trees;
use crate::engine::sled::rewrite::SLED_DIR;
use crate::engine::sled::SledStore;
use crate::error::{StoreError, StoreResult};
use crate::indexes::counts::counter_key;
use crate::model::{CheckpointCopy, CompanyId, ConfirmedNumbering, HeldNumbering, NumberingHold};
use crate::traits::{Backup, CredentialStore};

/// Where the file log and the payload log go in a copy (as in a data dir).
const FILES_DIR: &str = "files";
const PAYLOADS_DIR: &str = "payloads";
/// The `meta` entry of a restored store's numbering hold.
pub(crate) const NUMBERING_HOLD: &[u8] = b"numbering_hold";

impl Backup for SledStore {
    fn pause_flusher(&self) -> FlusherPause {
        self.flusher.pause()
    }

    fn checkpoint_to(&self, to: &Path, at_point: &mut dyn FnMut()) -> StoreResult<CheckpointCopy> {
        fs::create_dir(to)?;
        let copy = sled::Config::new()
            .path(to.join(SLED_DIR))
            .flush_every_ms(None)
            .open()?;
        let mut out = CheckpointCopy::default();
        let noted = {
            // Phase one first (it never waits on the flusher while holding
            // the numbering lock), then the flusher between batches.
            let _numbering = self
                .numbering
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let paused_at = Instant::now();
            let _paused = self.flusher.pause();
            self.flush_now()?;
            for name in self.db.tree_names() {
                let (from, into) = (self.db.open_tree(&name)?, copy.open_tree(&name)?);
                for item in from.iter() {
                    let (k, v) = item?;
                    into.insert(k, v)?;
                    out.entries += 1;
                }
                out.collections += 1;
            }
            let noted = [
                (self.files.dir().to_path_buf(), to.join(FILES_DIR)),
                (self.payloads.dir().to_path_buf(), to.join(PAYLOADS_DIR)),
            ]
            .map(|(from, into)| note_lengths(&from).map(|files| (files, into)));
            at_point();
            out.paused = paused_at.elapsed();
            noted
        };
        out.last_document_id = copy
            .open_tree(trees::DOCUMENTS)?
            .last()?
            .and_then(|(k, _)| <[u8; 8]>::try_from(&k[..]).ok())
            .map(u64::from_be_bytes);
        copy.flush()?;
        drop(copy);
        for noted in noted {
            let (files, into) = noted?;
            out.file_bytes += copy_prefixes(&files, &into)?;
        }
        Ok(out)
    }

    fn hold_numberings(&self) -> StoreResult<NumberingHold> {
        let _numbering = self
            .numbering
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        self.flush_now()?;
        // A company's own resolutions (`company ‖ id`), and the test sets a
        // company numbered from (their counters are `company ‖ id`).
        let mut pairs = Vec::new();
        for tree in [&self.resolutions, &self.counters] {
            for key in tree.iter().keys() {
                if let Ok(k) = <[u8; 16]>::try_from(&key?[..]) {
                    let company = u64::from_be_bytes(k[..8].try_into().unwrap_or_default());
                    let id = u64::from_be_bytes(k[8..].try_into().unwrap_or_default());
                    pairs.push((company, id));
                }
            }
        }
        pairs.sort_unstable();
        pairs.dedup();
        let mut held = Vec::new();
        for (company, id) in pairs {
            if let Some(r) = self.resolution(company, id)? {
                held.push(HeldNumbering {
                    company_id: company,
                    resolution_id: id,
                    next: self.next_number(&r)?,
                    prefix: r.prefix,
                });
            }
        }
        let hold = NumberingHold {
            since: Utc::now(),
            held,
            confirmed: Vec::new(),
        };
        self.put_hold(&hold)?;
        Ok(hold)
    }

    fn numbering_hold(&self) -> StoreResult<Option<NumberingHold>> {
        Ok(self.read_hold())
    }

    fn confirm_numbering(
        &self,
        company: CompanyId,
        resolution_id: u64,
        next: Option<u64>,
    ) -> StoreResult<ConfirmedNumbering> {
        let _numbering = self
            .numbering
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut hold = self
            .read_hold()
            .ok_or_else(|| StoreError::Conflict("no numbering is held".into()))?;
        let resolution = self
            .resolution(company, resolution_id)?
            .ok_or(StoreError::NotFound("numbering resolution"))?;
        // Deferred counters written first, so the one set below is not
        // overwritten by an older one.
        self.flush_now()?;
        let current = self.next_number(&resolution)?;
        let next = next.unwrap_or(current);
        if next < current {
            return Err(StoreError::Conflict(format!(
                "the next number of this numbering is already {current}: a smaller one \
                 would be given twice"
            )));
        }
        if next > resolution.to.saturating_add(1) {
            return Err(StoreError::Conflict(format!(
                "{next} is past the end of the range ({})",
                resolution.to
            )));
        }
        if next > current {
            self.counters
                .insert(counter_key(company, resolution_id), &next.to_be_bytes())?;
        }
        let confirmed = ConfirmedNumbering {
            company_id: company,
            resolution_id,
            next,
            at: Utc::now(),
        };
        hold.confirmed
            .retain(|c| (c.company_id, c.resolution_id) != (company, resolution_id));
        hold.confirmed.push(confirmed.clone());
        self.put_hold(&hold)?;
        Ok(confirmed)
    }
}

impl SledStore {
    fn read_hold(&self) -> Option<NumberingHold> {
        self.numbering_hold
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    fn put_hold(&self, hold: &NumberingHold) -> StoreResult<()> {
        let bytes = serde_json::to_vec(hold).map_err(|e| StoreError::Corrupt {
            tree: trees::META,
            reason: e.to_string(),
        })?;
        self.meta.insert(NUMBERING_HOLD, bytes)?;
        self.flush_now()?;
        *self
            .numbering_hold
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(hold.clone());
        Ok(())
    }

    /// Refuses a number from a numbering a restore holds (one that existed
    /// at the hold and is not confirmed yet). Called under the numbering
    /// lock.
    pub(crate) fn check_numbering_hold(
        &self,
        company: CompanyId,
        resolution_id: u64,
    ) -> StoreResult<()> {
        let hold = self
            .numbering_hold
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match &*hold {
            Some(h)
                if h.held
                    .iter()
                    .any(|n| (n.company_id, n.resolution_id) == (company, resolution_id))
                    && !h
                        .confirmed
                        .iter()
                        .any(|c| (c.company_id, c.resolution_id) == (company, resolution_id)) =>
            {
                Err(StoreError::NumberingHeld { resolution_id })
            }
            _ => Ok(()),
        }
    }
}

/// A restored store's hold, as `meta` keeps it.
pub(crate) fn load_hold(meta: &sled::Tree) -> StoreResult<Option<NumberingHold>> {
    match meta.get(NUMBERING_HOLD)? {
        None => Ok(None),
        Some(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| StoreError::Corrupt {
                tree: trees::META,
                reason: e.to_string(),
            }),
    }
}

/// The files of `dir` (not its subdirectories: the logs have none) with
/// their lengths now.
fn note_lengths(dir: &Path) -> io::Result<Vec<(PathBuf, u64)>> {
    let mut files = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let meta = entry.metadata()?;
        if meta.is_file() {
            files.push((entry.path(), meta.len()));
        }
    }
    Ok(files)
}

/// Copies the first `len` bytes of each file into a new `to`, each synced,
/// then `to` itself; answers the bytes copied. A file removed since it was
/// noted (a payload minute past the window) is left out.
fn copy_prefixes(files: &[(PathBuf, u64)], to: &Path) -> io::Result<u64> {
    fs::create_dir(to)?;
    let mut bytes = 0;
    for (path, len) in files {
        let from = match fs::File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        let Some(name) = path.file_name() else {
            continue;
        };
        let mut target = fs::File::create(to.join(name))?;
        bytes += io::copy(&mut from.take(*len), &mut target)?;
        target.flush()?;
        target.sync_all()?;
    }
    fs::File::open(to)?.sync_all()?;
    Ok(bytes)
}
