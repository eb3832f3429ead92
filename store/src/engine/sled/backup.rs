//! A consistent point to copy the store from, with issuing held only
//! briefly. Every tree is watched (sled's subscribers: every write, in order
//! per key) from a moment when nothing of phase one or the flusher is
//! half-written; the trees are copied while issuing goes on; the changes
//! seen meanwhile are applied to the copy, in rounds, without a pause; then
//! the point: phase one held (the numbering lock) and the flusher paused,
//! what they wrote made durable, the last changes applied, and the length of
//! every file beside sled (the document file log, the payload log) noted.
//! Each of those files is then copied up to its noted length with issuing
//! going again. The files only grow by appends, so the copy holds every
//! file a copied record points at and nothing written after the point: an
//! intent appended later would otherwise come back, at the copy's first
//! open, as a document the original had not numbered at the point.
//!
//! The pause is the point alone: the changes left after the catch-up
//! rounds (at most about [`POINT_BACKLOG`] unless writes outrun the
//! copy) and the flush. Writes outside phase one and the flusher (admin
//! records, settings, leases, mail logs: the synchronous traits' other
//! writers) are not held by the point: one that completes before it is in
//! the copy, and one still being written at the point is not; one already
//! under way when the trees were first watched may be missed.

use std::fs;
use std::io::{self, Read, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sled::{Event, IVec, Subscriber};

use chrono::Utc;

use crate::durability::flusher::FlusherPause;
use crate::encoding::trees;
use crate::engine::sled::rewrite::SLED_DIR;
use crate::engine::sled::SledStore;
use crate::error::{StoreError, StoreResult};
use crate::indexes::counts::counter_key;
use crate::model::test_set::TEST_SETS;
use crate::model::{
    CheckpointCopy, CompanyId, ConfirmedNumbering, HeldNumbering, LogFile, NumberingHold,
};
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
        let (mut out, logs) = self.checkpoint_trees_to(to, at_point)?;
        for dir in [FILES_DIR, PAYLOADS_DIR] {
            fs::create_dir(to.join(dir))?;
        }
        for log in &logs {
            out.file_bytes += copy_prefix(log, &to.join(log.dir).join(&log.name))?;
        }
        for dir in [FILES_DIR, PAYLOADS_DIR] {
            fs::File::open(to.join(dir))?.sync_all()?;
        }
        Ok(out)
    }

    fn checkpoint_trees_to(
        &self,
        to: &Path,
        at_point: &mut dyn FnMut(),
    ) -> StoreResult<(CheckpointCopy, Vec<LogFile>)> {
        // A file system error (a full destination) as one, not as sled's.
        self.trees_to(to, at_point).map_err(|e| match e {
            StoreError::Engine(sled::Error::Io(io)) => StoreError::Io(io),
            other => other,
        })
    }

    fn hold_numberings(&self) -> StoreResult<NumberingHold> {
        let _numbering = self
            .numbering
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        self.flush_now()?;
        // A company's own resolutions (`company ‖ id`), and every test set
        // for every company: the original may have begun one after the
        // backup.
        let mut pairs = Vec::new();
        for key in self.resolutions.iter().keys() {
            if let Ok(k) = <[u8; 16]>::try_from(&key?[..]) {
                let company = u64::from_be_bytes(k[..8].try_into().unwrap_or_default());
                let id = u64::from_be_bytes(k[8..].try_into().unwrap_or_default());
                pairs.push((company, id));
            }
        }
        for key in self.companies.iter().keys() {
            if let Ok(k) = <[u8; 8]>::try_from(&key?[..]) {
                let company = u64::from_be_bytes(k);
                pairs.extend(TEST_SETS.iter().map(|set| (company, set.id)));
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

/// Rounds of catching up before the point; the point applies what is left.
const CATCH_UP_ROUNDS: usize = 8;
/// Changes few enough to apply during the point.
const POINT_BACKLOG: usize = 2_000;

type Watched = Vec<(IVec, Subscriber)>;

/// The changes of every tree since it was watched, gathered by a thread
/// (a watcher that is not read holds the writers once 1024 events wait).
struct Changes {
    events: Arc<Mutex<Vec<(IVec, Event)>>>,
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Watched>,
}

impl Changes {
    fn watch(mut watchers: Watched) -> StoreResult<Changes> {
        let events: Arc<Mutex<Vec<(IVec, Event)>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let (gathered, stopped) = (events.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("store-backup-watch".into())
            .spawn(move || {
                while !stopped.load(Ordering::Acquire) {
                    let mut any = false;
                    for (name, watcher) in &mut watchers {
                        while let Ok(event) = watcher.next_timeout(Duration::ZERO) {
                            lock(&gathered).push((name.clone(), event));
                            any = true;
                        }
                    }
                    if !any {
                        std::thread::sleep(Duration::from_micros(200));
                    }
                }
                watchers
            })?;
        Ok(Changes {
            events,
            stop,
            thread,
        })
    }

    fn take(&self) -> Vec<(IVec, Event)> {
        std::mem::take(&mut *lock(&self.events))
    }

    /// Stops the thread: what it gathered, and the watchers back.
    fn stop(self) -> StoreResult<(Vec<(IVec, Event)>, Watched)> {
        self.stop.store(true, Ordering::Release);
        let watchers = self
            .thread
            .join()
            .map_err(|_| StoreError::Durability("the backup's watching thread stopped".into()))?;
        let events = std::mem::take(&mut *lock(&self.events));
        Ok((events, watchers))
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Applies changes to the copy in the order they happened (per key, the
/// order sled guarantees); answers how many.
fn apply(copy: &sled::Db, events: Vec<(IVec, Event)>) -> StoreResult<usize> {
    let n = events.len();
    for (name, event) in events {
        let tree = copy.open_tree(&name)?;
        match event {
            Event::Insert { key, value } => {
                tree.insert(key, value)?;
            }
            Event::Remove { key } => {
                tree.remove(key)?;
            }
        }
    }
    Ok(n)
}

impl SledStore {
    fn trees_to(
        &self,
        to: &Path,
        at_point: &mut dyn FnMut(),
    ) -> StoreResult<(CheckpointCopy, Vec<LogFile>)> {
        fs::create_dir(to)?;
        let copy = sled::Config::new()
            .path(to.join(SLED_DIR))
            .flush_every_ms(None)
            .open()?;
        let mut out = CheckpointCopy::default();
        let names = self.db.tree_names();
        // Every change from here on is seen: watched while nothing of
        // phase one or the flusher is half-written.
        let watchers = {
            let _numbering = self.hold_numbering();
            let _paused = self.flusher.pause();
            names
                .iter()
                .map(|name| Ok((name.clone(), self.db.open_tree(name)?.watch_prefix(vec![]))))
                .collect::<StoreResult<Vec<_>>>()?
        };
        let changes = Changes::watch(watchers)?;
        // Copied while issuing goes on: a key read before its change is
        // set right when the change is applied below, in order.
        for name in &names {
            let (from, into) = (self.db.open_tree(name)?, copy.open_tree(name)?);
            for item in from.iter() {
                let (k, v) = item?;
                into.insert(k, v)?;
                out.entries += 1;
            }
            out.collections += 1;
        }
        // Catching up with what changed meanwhile, still without a pause,
        // until little is left for the point.
        for _ in 0..CATCH_UP_ROUNDS {
            if apply(&copy, changes.take())? < POINT_BACKLOG {
                break;
            }
        }
        let noted = {
            // Phase one first (it never waits on the flusher while holding
            // the numbering lock), then the flusher between batches.
            let _numbering = self.hold_numbering();
            let paused_at = Instant::now();
            let _paused = self.flusher.pause();
            self.flush_now()?;
            let (mut rest, mut watchers) = changes.stop()?;
            for (name, watcher) in &mut watchers {
                // Those written before the point are in the channel; one
                // still being written by a caller the point does not hold
                // is after it.
                while let Ok(event) = watcher.next_timeout(Duration::ZERO) {
                    rest.push((name.clone(), event));
                }
            }
            apply(&copy, rest)?;
            drop(watchers);
            // A tree made during the copy was not watched: copied now, whole
            // (new trees start empty).
            for name in self.db.tree_names() {
                if !names.contains(&name) {
                    let (from, into) = (self.db.open_tree(&name)?, copy.open_tree(&name)?);
                    for item in from.iter() {
                        let (k, v) = item?;
                        into.insert(k, v)?;
                        out.entries += 1;
                    }
                    out.collections += 1;
                }
            }
            let mut noted = note_lengths(self.files.dir(), FILES_DIR)?;
            noted.extend(note_lengths(self.payloads.dir(), PAYLOADS_DIR)?);
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
        Ok((out, noted))
    }

    fn hold_numbering(&self) -> std::sync::MutexGuard<'_, crate::engine::sled::IdBlock> {
        lock(&self.numbering)
    }

    fn read_hold(&self) -> Option<NumberingHold> {
        self.numbering_hold
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    pub(crate) fn put_hold(&self, hold: &NumberingHold) -> StoreResult<()> {
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
/// their lengths now, to go under `into` in a copy.
fn note_lengths(dir: &Path, into: &'static str) -> io::Result<Vec<LogFile>> {
    let mut files = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let meta = entry.metadata()?;
        if meta.is_file() {
            files.push(LogFile {
                dir: into,
                name: entry.file_name(),
                source: entry.path(),
                len: meta.len(),
            });
        }
    }
    files.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(files)
}

/// Copies the first `len` bytes of a log file to `target`, synced; a file
/// removed since it was noted (a payload minute past the window) is left
/// out. Answers the bytes copied.
fn copy_prefix(log: &LogFile, target: &Path) -> io::Result<u64> {
    let from = match fs::File::open(&log.source) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    let mut out = fs::File::create(target)?;
    let bytes = io::copy(&mut from.take(log.len), &mut out)?;
    out.flush()?;
    out.sync_all()?;
    Ok(bytes)
}
