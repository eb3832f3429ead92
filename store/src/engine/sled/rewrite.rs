//! Sealing a store written before sealing existed. Sealing its plain
//! secrets in place would leave the plain values in sled's file, in space
//! sled has not reused yet, where a copy of the data dir would still find
//! them. So the store is copied once into a new sled directory with its
//! secrets sealed on the way, and the new directory replaces the old one:
//! no file of the data dir then ever held them. Every record is copied as
//! it is; only the secret fields change.
//!
//! The same copy, without resealing, leaves behind the trees of an older
//! layout ([`trees::SUPERSEDED`]): sled 0.34 keeps a page-table entry per
//! page it ever held resident, and dropping a tree in place neither frees
//! them nor keeps memory low while it runs (a drop raised the resident size
//! of the opens after it, and peaked far higher while it ran:
//! docs/performance.md); a copy holds only the live pages.
//!
//! A crash at any point leaves a store that opens: until the new directory
//! is complete (its `complete` mark written) the old one is the store and
//! the copy starts over; once it is complete, [`finish_rewrite`] puts it in
//! place if the crash came between the two renames.

use std::fs;
use std::io;
use std::path::Path;

use sled::Db;

use crate::encoding::codec::{decode, encode};
use crate::encoding::trees;
use crate::engine::sled::sealing::{secret_fields, SEALED_TREES};
use crate::error::{StoreError, StoreResult};
use crate::secrets::sealing::{self, Keyring};

/// The store's sled directory under the data dir.
pub(crate) const SLED_DIR: &str = "sled";
/// The sealed copy while it is being written.
const REWRITE_DIR: &str = "sled.sealing";
/// The store from before sealing, between the renames.
const PLAIN_DIR: &str = "sled.plain";
/// Written into [`REWRITE_DIR`] once the copy is complete and on disk.
const COMPLETE: &str = "complete";

/// sled's page cache unless configured (`[store] cache_mb`). Its default
/// is 1 GiB; documents are written once and read rarely, and the files
/// live outside sled, so a small cache keeps the server lean.
pub const DEFAULT_CACHE_BYTES: u64 = 4 * 1024 * 1024;

/// Opens sled in `dir` with the store's settings.
pub(crate) fn open_db(dir: &Path, cache_bytes: u64) -> StoreResult<Db> {
    sled::Config::new()
        .path(dir.join(SLED_DIR))
        // Flushes happen explicitly after every mutation; this is only
        // the background safety net.
        .flush_every_ms(Some(1000))
        .cache_capacity(cache_bytes)
        .open()
        .map_err(|e| match e {
            sled::Error::Io(io) if io.kind() == io::ErrorKind::WouldBlock => {
                StoreError::Locked(io.to_string())
            }
            sled::Error::Io(io) if io.to_string().contains("lock") => {
                StoreError::Locked(io.to_string())
            }
            other => StoreError::Engine(other),
        })
}

/// Before sled is opened: completes or discards what a crash during a
/// rewrite left.
pub(crate) fn finish_rewrite(dir: &Path) -> StoreResult<()> {
    let (sled_dir, rewrite, plain) = (
        dir.join(SLED_DIR),
        dir.join(REWRITE_DIR),
        dir.join(PLAIN_DIR),
    );
    if rewrite.exists() {
        if !sled_dir.exists() && rewrite.join(COMPLETE).exists() {
            // Between the renames: the sealed copy is the store.
            fs::rename(&rewrite, &sled_dir)?;
            sync_dir(dir)?;
        } else {
            // An unfinished copy: the old store is intact, the copy is
            // made again.
            fs::remove_dir_all(&rewrite)?;
        }
    }
    if plain.exists() && sled_dir.exists() {
        fs::remove_dir_all(&plain)?;
        sync_dir(dir)?;
    }
    Ok(())
}

/// Whether `db` holds entries in a tree of an older layout
/// ([`trees::SUPERSEDED`]); an empty one is just dropped.
pub(crate) fn has_superseded(db: &Db) -> StoreResult<bool> {
    let names = db.tree_names();
    let mut found = false;
    for name in trees::SUPERSEDED {
        if !names.iter().any(|n| n == name.as_bytes()) {
            continue;
        }
        if db.open_tree(name)?.is_empty() {
            db.drop_tree(name)?;
        } else {
            found = true;
        }
    }
    Ok(found)
}

/// Copies the store in `db` (under `dir`) to a new sled directory with
/// every secret sealed under `keys`' current key, puts the copy in place of
/// the old one, removes the old one, and opens the copy.
pub(crate) fn rewrite_sealed(
    dir: &Path,
    db: Db,
    keys: &Keyring,
    cache_bytes: u64,
) -> StoreResult<Db> {
    rewrite(dir, db, Some(keys), cache_bytes)
}

/// The same copy with every value as it is, for a store that holds trees
/// of an older layout: the copy leaves them out.
pub(crate) fn rewrite_compact(dir: &Path, db: Db, cache_bytes: u64) -> StoreResult<Db> {
    rewrite(dir, db, None, cache_bytes)
}

fn rewrite(dir: &Path, db: Db, keys: Option<&Keyring>, cache_bytes: u64) -> StoreResult<Db> {
    let target = dir.join(REWRITE_DIR);
    if target.exists() {
        fs::remove_dir_all(&target)?;
    }
    {
        let copy = sled::Config::new()
            .path(&target)
            .cache_capacity(cache_bytes)
            .open()?;
        for name in db.tree_names() {
            if trees::SUPERSEDED
                .iter()
                .any(|t| t.as_bytes() == name.as_ref())
            {
                continue;
            }
            let from = db.open_tree(&name)?;
            let to = copy.open_tree(&name)?;
            let sealed = keys.and_then(|keys| {
                let tree = SEALED_TREES
                    .iter()
                    .find(|t| t.as_bytes() == name.as_ref())?;
                Some((tree, keys))
            });
            for item in from.iter() {
                let (k, v) = item?;
                match sealed {
                    Some((tree, keys)) => {
                        let mut record: serde_json::Value = decode(tree, &v)?;
                        sealing::reseal(tree, secret_fields(tree), &mut record, keys)?;
                        to.insert(k, encode(tree, &record)?)?;
                    }
                    None => {
                        to.insert(k, v)?;
                    }
                }
            }
        }
        copy.flush()?;
    }
    let mark = fs::File::create(target.join(COMPLETE))?;
    mark.sync_all()?;
    sync_dir(&target)?;
    drop(db);
    fs::rename(dir.join(SLED_DIR), dir.join(PLAIN_DIR))?;
    fs::rename(&target, dir.join(SLED_DIR))?;
    sync_dir(dir)?;
    fs::remove_dir_all(dir.join(PLAIN_DIR))?;
    fs::remove_file(dir.join(SLED_DIR).join(COMPLETE))?;
    sync_dir(dir)?;
    // The copy's handle was just dropped: sled may hold its lock a moment
    // longer while its IO threads finish.
    let mut tries = 0;
    loop {
        match open_db(dir, cache_bytes) {
            Err(StoreError::Locked(_)) if tries < 100 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            other => return other,
        }
    }
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    fs::File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crash_between_the_renames_puts_the_complete_copy_in_place() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        fs::create_dir(dir.join(PLAIN_DIR)).unwrap();
        fs::create_dir(dir.join(REWRITE_DIR)).unwrap();
        fs::write(dir.join(REWRITE_DIR).join("db"), b"sealed").unwrap();
        fs::write(dir.join(REWRITE_DIR).join(COMPLETE), b"").unwrap();
        finish_rewrite(dir).unwrap();
        assert_eq!(fs::read(dir.join(SLED_DIR).join("db")).unwrap(), b"sealed");
        assert!(!dir.join(PLAIN_DIR).exists());
        assert!(!dir.join(REWRITE_DIR).exists());
    }

    #[test]
    fn an_unfinished_copy_is_discarded_and_the_old_store_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        fs::create_dir(dir.join(SLED_DIR)).unwrap();
        fs::write(dir.join(SLED_DIR).join("db"), b"plain").unwrap();
        fs::create_dir(dir.join(REWRITE_DIR)).unwrap();
        fs::write(dir.join(REWRITE_DIR).join("db"), b"half").unwrap();
        finish_rewrite(dir).unwrap();
        assert_eq!(fs::read(dir.join(SLED_DIR).join("db")).unwrap(), b"plain");
        assert!(!dir.join(REWRITE_DIR).exists());
        // A complete copy beside a store still in place is not used
        // either: the rename that would make it the store never began.
        fs::create_dir(dir.join(REWRITE_DIR)).unwrap();
        fs::write(dir.join(REWRITE_DIR).join(COMPLETE), b"").unwrap();
        finish_rewrite(dir).unwrap();
        assert_eq!(fs::read(dir.join(SLED_DIR).join("db")).unwrap(), b"plain");
    }
}
