//! Backups of the data dir (`emisor admin backup|verify|restore`, and
//! `POST /admin/backup` while the server runs).
//!
//! A backup is a directory:
//!
//! - `data/`: a data dir as of one point (`emisor_store::Backup::checkpoint_to`):
//!   the store (`sled/`, the document file log `files/`, the payload log
//!   `payloads/`). Left out: `demo-keys.json` and `admin-token` (secrets in
//!   clear), `listening`, the outbox's sent mail, and the master key, which
//!   is never in the data dir's copy: a backup is useless without it.
//! - `manifest.json`, written last and atomically (a temporary file synced,
//!   renamed, the directory synced): what `verify` and `restore` trust. A
//!   backup without it is incomplete, whatever else it holds.

pub mod export;
pub mod incremental;
pub mod manifest;
pub mod restore;
pub mod schedule;
pub mod verify;

use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::time::Instant;

use chrono::Utc;
use emisor_store::{Backup, Family, Store, StoreError};

pub use manifest::{FileSum, Manifest, MANIFEST, MANIFEST_FORMAT};

/// The data dir's copy inside a backup: `data-N`, N growing with each
/// backup into the same directory (the manifest names the current one).
pub const DATA: &str = "data";
/// The engine's directory in a data dir.
const SLED: &str = "sled";

#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    /// The destination cannot take a backup (not empty, outside the
    /// allowed directory...).
    #[error("{0}")]
    Destination(String),
    /// The destination's file system is full: nothing usable was left.
    #[error("the destination {0} is full (no space left on the device): the incomplete backup was removed")]
    Full(PathBuf),
    #[error("{what} {path}: {source}")]
    Io {
        what: &'static str,
        path: PathBuf,
        source: io::Error,
    },
    #[error("the store: {0}")]
    Store(#[from] StoreError),
    /// A backup found wrong (`verify`, `restore`).
    #[error("{0}")]
    Invalid(String),
}

impl BackupError {
    pub fn io(what: &'static str, path: &Path) -> impl FnOnce(io::Error) -> BackupError {
        let path = path.to_path_buf();
        move |source| BackupError::Io { what, path, source }
    }
}

pub type BackupResult<T> = Result<T, BackupError>;

/// Takes a backup of the open store into `to`: absent or empty, an
/// interrupted backup (replaced), or a complete one, which the new backup
/// follows incrementally: the engine's copy is made anew, and of each log
/// file only what grew since is copied (the rest is linked).
pub fn take(store: &dyn Store, backup: &dyn Backup, to: &Path) -> BackupResult<Manifest> {
    take_following(store, backup, to, None)
}

/// [`take`], following `earlier` (a complete backup elsewhere, read from
/// its directory) when `to` holds none: its log files are linked from
/// there and only what they grew by is copied. Scheduled backups follow
/// the newest one kept this way.
pub fn take_following(
    store: &dyn Store,
    backup: &dyn Backup,
    to: &Path,
    earlier: Option<(PathBuf, Manifest)>,
) -> BackupResult<Manifest> {
    // One backup at a time in a process: two into one directory would take
    // each other's files for an interrupted backup's.
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let started = Instant::now();
    let (base_dir, base) = match prepare_destination(to)? {
        Some(m) => (to.to_path_buf(), Some(m)),
        None => match earlier {
            Some((dir, m)) => (dir, Some(m)),
            None => (to.to_path_buf(), None),
        },
    };
    let generation = base
        .as_ref()
        .map_or(1, |b| generation_of(&b.data).unwrap_or(0) + 1);
    let data_name = format!("{DATA}-{generation}");
    let data = to.join(&data_name);
    let mut counts = None;
    let copy = backup.checkpoint_trees_to(&data, &mut || counts = Some(store.document_counts()));
    let result = copy.map_err(|e| full_or(e, to)).and_then(|(copy, logs)| {
        let counts = counts.unwrap_or_else(|| Ok(Vec::new()))?;
        let mut files = manifest::sum_tree(to, &data.join(SLED)).map_err(|e| full_or_io(e, to))?;
        let mut copied: u64 = files.iter().map(|f| f.bytes).sum();
        for log in &logs {
            let follows = base.as_ref().map(|b| (base_dir.as_path(), b));
            if let Some((sum, written)) =
                incremental::copy_log(to, follows, &data, log).map_err(|e| full_or_io(e, to))?
            {
                copied += written;
                files.push(sum);
            }
        }
        for dir in ["files", "payloads"] {
            let d = data.join(dir);
            if d.exists() {
                fs::File::open(&d)
                    .and_then(|f| f.sync_all())
                    .map_err(|e| full_or_io(e, to))?;
            }
        }
        files.sort_by(|a, b| a.path.cmp(&b.path));
        let mut manifest = Manifest {
            format: MANIFEST_FORMAT,
            emisor_version: env!("CARGO_PKG_VERSION").to_string(),
            engine: "sled".into(),
            data: data_name.clone(),
            created_at: Utc::now(),
            last_document_id: copy.last_document_id.unwrap_or(0),
            pause_ms: copy.paused.as_secs_f64() * 1000.0,
            duration_ms: 0.0,
            collections: copy.collections as u64,
            entries: copy.entries,
            documents: family_counts(&counts),
            by_type_and_state: counts
                .iter()
                .map(|((t, s), n)| manifest::TypeStateCount {
                    tipo: *t,
                    estado: *s,
                    documentos: *n,
                })
                .collect(),
            bytes: files.iter().map(|f| f.bytes).sum(),
            copied_bytes: copied,
            follows: base.as_ref().map(|b| b.created_at),
            files,
        };
        manifest.duration_ms = started.elapsed().as_secs_f64() * 1000.0;
        manifest::write(to, &manifest).map_err(|e| full_or_io(e, to))?;
        Ok(manifest)
    });
    match &result {
        // The backup it follows is no longer needed (its log files stay,
        // linked into the new one).
        Ok(_) => {
            if let Some(b) = base.as_ref().filter(|_| base_dir == to) {
                let _ = fs::remove_dir_all(to.join(&b.data));
            }
        }
        // Nothing half-made is left to fill the disk; without a manifest it
        // would not verify anyway (an earlier manifest still does).
        Err(_) => {
            let _ = fs::remove_dir_all(&data);
        }
    }
    result
}

/// The number of a `data-N` directory.
fn generation_of(name: &str) -> Option<u64> {
    name.strip_prefix(DATA)?.strip_prefix('-')?.parse().ok()
}

fn family_counts(counts: &[((u8, u8), u64)]) -> manifest::FamilyCounts {
    let mut out = manifest::FamilyCounts::default();
    for ((t, _), n) in counts {
        let slot = match Family::of_document_type(*t) {
            Family::Invoices => &mut out.facturacion,
            Family::Support => &mut out.documentos_soporte,
            Family::Pos => &mut out.pos,
            Family::Payroll => &mut out.nomina,
            Family::Received => &mut out.recibidos,
        };
        *slot += n;
    }
    out
}

/// A destination takes a backup when it is absent or empty, holds an
/// interrupted backup (`data-N` directories without a manifest naming them,
/// removed here), or a complete one (answered: the new one follows it).
fn prepare_destination(to: &Path) -> BackupResult<Option<Manifest>> {
    let base = if to.join(MANIFEST).exists() {
        Some(manifest::read(to).map_err(BackupError::Destination)?)
    } else {
        None
    };
    match fs::read_dir(to) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            fs::create_dir_all(to).map_err(BackupError::io("creating", to))?
        }
        Err(e) => return Err(BackupError::io("reading", to)(e)),
        Ok(entries) => {
            for entry in entries {
                let entry = entry.map_err(BackupError::io("reading", to))?;
                let name = entry.file_name();
                let name = name.to_string_lossy();
                let ours = base.as_ref().is_some_and(|b| b.data == name);
                if name == MANIFEST && base.is_some() || ours {
                    continue;
                }
                if generation_of(&name).is_some() || name == manifest::MANIFEST_TMP {
                    let path = entry.path();
                    let removed = if path.is_dir() {
                        fs::remove_dir_all(&path)
                    } else {
                        fs::remove_file(&path)
                    };
                    removed.map_err(BackupError::io("removing", &path))?;
                } else {
                    return Err(BackupError::Destination(format!(
                        "{} holds {name}, which no backup wrote: give an empty or new directory, \
                         or one holding a backup",
                        to.display()
                    )));
                }
            }
        }
    }
    Ok(base)
}

/// ENOSPC names the destination full; other errors stay as they are.
fn full_or(e: StoreError, to: &Path) -> BackupError {
    match e {
        StoreError::Io(io) => full_or_io(io, to),
        other => BackupError::Store(other),
    }
}

fn full_or_io(e: io::Error, to: &Path) -> BackupError {
    if e.raw_os_error() == Some(libc::ENOSPC) || e.kind() == io::ErrorKind::StorageFull {
        BackupError::Full(to.to_path_buf())
    } else {
        BackupError::Io {
            what: "writing the backup in",
            path: to.to_path_buf(),
            source: e,
        }
    }
}

/// The directory a backup through the admin API goes to: `given` (relative
/// to `root`, or absolute) must lie under `root`, `[backup] dir`, so the
/// admin token writes nowhere else.
pub fn destination_under(root: &Path, given: &str) -> Result<PathBuf, String> {
    if root.as_os_str().is_empty() {
        return Err("backups through the admin API go under [backup] dir, which is not set".into());
    }
    let given = Path::new(given);
    if given.as_os_str().is_empty() {
        return Err("is required".into());
    }
    if given
        .components()
        .any(|c| matches!(c, Component::ParentDir | Component::CurDir))
    {
        return Err("must not contain `.` or `..`".into());
    }
    let root = fs::canonicalize(root)
        .map_err(|e| format!("[backup] dir {} is not usable: {e}", root.display()))?;
    let full = if given.is_absolute() {
        given.to_path_buf()
    } else {
        root.join(given)
    };
    // The deepest part that exists, resolved (a symbolic link inside the
    // directory may not lead out of it), then the rest.
    let mut existing = full.as_path();
    let mut rest = Vec::new();
    while !existing.exists() {
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                existing = parent;
            }
            _ => break,
        }
    }
    let mut resolved =
        fs::canonicalize(existing).map_err(|e| format!("{}: {e}", existing.display()))?;
    for name in rest.iter().rev() {
        resolved.push(name);
    }
    if resolved == root || !resolved.starts_with(&root) {
        return Err(format!(
            "must lie under [backup] dir ({}), in a directory of its own",
            root.display()
        ));
    }
    Ok(resolved)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_admin_destination_stays_under_the_backup_dir() {
        let root = tempfile::tempdir().unwrap();
        let other = tempfile::tempdir().unwrap();
        let r = root.path();
        let ok = destination_under(r, "nightly/1").unwrap();
        assert!(ok.starts_with(fs::canonicalize(r).unwrap()), "{ok:?}");
        assert!(destination_under(r, "../x").is_err());
        assert!(destination_under(r, other.path().to_str().unwrap()).is_err());
        assert!(destination_under(r, r.to_str().unwrap()).is_err());
        std::os::unix::fs::symlink(other.path(), r.join("out")).unwrap();
        assert!(destination_under(r, "out/x").is_err());
        assert!(destination_under(Path::new(""), "x").is_err());
    }
}
