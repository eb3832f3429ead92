//! A consistent point to copy the store from: the flusher paused, what it
//! wrote made durable, sled's trees copied into a new sled database, then
//! the files beside sled (the document file log, the payload log). Files
//! only grow by appends, so copied after the trees they hold at least every
//! file a copied record points at; their tails past it are what a crash
//! would leave, and the copy opens as a store after a crash does.
//!
//! Writes outside the flusher (admin records, customers, job updates from
//! the synchronous traits) are not held: one landing during the copy is in
//! it or not, and a transaction of two trees may be half in it. A backup
//! that needs them too holds its own callers for the copy.

use std::fs;
use std::io;
use std::path::Path;

use crate::durability::flusher::FlusherPause;
use crate::engine::sled::rewrite::SLED_DIR;
use crate::engine::sled::SledStore;
use crate::error::StoreResult;
use crate::model::CheckpointCopy;
use crate::traits::Backup;

/// Where the file log and the payload log go in a copy (as in a data dir).
const FILES_DIR: &str = "files";
const PAYLOADS_DIR: &str = "payloads";

impl Backup for SledStore {
    fn pause_flusher(&self) -> FlusherPause {
        self.flusher.pause()
    }

    fn checkpoint_to(&self, to: &Path) -> StoreResult<CheckpointCopy> {
        let _paused = self.flusher.pause();
        self.flush_now()?;
        fs::create_dir(to)?;
        let copy = sled::Config::new()
            .path(to.join(SLED_DIR))
            .flush_every_ms(None)
            .open()?;
        let mut out = CheckpointCopy::default();
        for name in self.db.tree_names() {
            let (from, into) = (self.db.open_tree(&name)?, copy.open_tree(&name)?);
            for item in from.iter() {
                let (k, v) = item?;
                into.insert(k, v)?;
                out.entries += 1;
            }
            out.collections += 1;
        }
        copy.flush()?;
        drop(copy);
        out.file_bytes += copy_dir(self.files.dir(), &to.join(FILES_DIR))?;
        out.file_bytes += copy_dir(self.payloads.dir(), &to.join(PAYLOADS_DIR))?;
        Ok(out)
    }
}

/// Copies the files of `from` (not its subdirectories: the logs have none)
/// into a new `to`, each synced, then `to` itself; answers the bytes copied.
fn copy_dir(from: &Path, to: &Path) -> io::Result<u64> {
    fs::create_dir(to)?;
    let mut bytes = 0;
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        if !entry.file_type()?.is_file() {
            continue;
        }
        let target = to.join(entry.file_name());
        bytes += fs::copy(entry.path(), &target)?;
        fs::File::open(&target)?.sync_all()?;
    }
    fs::File::open(to)?.sync_all()?;
    Ok(bytes)
}
