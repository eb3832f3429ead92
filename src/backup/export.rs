//! `emisor admin export --to FILE` and `emisor admin import --from FILE`
//! (decisions.md, "Data commands"): the whole store as one engine-neutral
//! file (`emisor_store::export`, docs/reference/export-format.md).
//!
//! An export of a running server reads a copy taken at one point (the
//! backup's checkpoint, into a scratch directory beside the file, removed
//! after), so it holds exactly what the store held then. An import goes
//! into an empty data dir and holds every numbering until the operator
//! confirms it, as a restore does (`restore::hold`).

use std::fs;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use emisor_store::export::{self, ExportError, Source, Summary};
use emisor_store::{Backup, Keyring, StoreHandle, StoreOptions};
use flate2::bufread::MultiGzDecoder;
use flate2::write::GzEncoder;
use flate2::Compression;
use serde::Serialize;

use super::{BackupError, BackupResult};

/// What an export wrote or an import read.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ExportView {
    pub archivo: String,
    /// The export format's version.
    pub version: u32,
    pub records: u64,
    /// Records by entity (`company`, `document`, `email_log`…).
    #[schema(value_type = Object)]
    pub by_entity: std::collections::BTreeMap<String, u64>,
    pub documents: u64,
    pub bytes: u64,
    pub duration_ms: f64,
    /// How long issuing was held for the point (a running server's export).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pause_ms: Option<f64>,
}

impl ExportView {
    fn new(file: &Path, summary: Summary, bytes: u64, started: Instant) -> Self {
        ExportView {
            archivo: file.display().to_string(),
            version: summary.version,
            records: summary.records,
            documents: summary.by_kind.get("document").copied().unwrap_or(0),
            by_entity: summary.by_kind,
            bytes,
            duration_ms: started.elapsed().as_secs_f64() * 1000.0,
            pause_ms: None,
        }
    }
}

fn failed(e: ExportError) -> BackupError {
    match e {
        ExportError::Store(s) => BackupError::Store(s),
        other => BackupError::Invalid(other.to_string()),
    }
}

/// Writes the open store to `to`, a new file: a stopped data dir's, or a
/// PostgreSQL database as of one point while other nodes write to it.
pub fn export_store(handle: &StoreHandle, to: &Path) -> BackupResult<ExportView> {
    let point = handle.at_point()?;
    let source = point.as_ref().unwrap_or(handle);
    write_file(to, |out| {
        export::export(&source.export_source(), VERSION, out)
    })
}

/// A running server's export as of one point: on PostgreSQL read from
/// `point`, one snapshot taken while issuing goes on (nothing is held); on
/// sled the store copied at one point into a scratch directory beside
/// `to`, the copy exported, the scratch removed.
pub fn export_point(
    point: Option<Source<'_>>,
    backup: &dyn Backup,
    keys: Keyring,
    to: &Path,
) -> BackupResult<ExportView> {
    if let Some(source) = point {
        let view = write_file(to, |out| export::export(&source, VERSION, out))?;
        return Ok(ExportView {
            pause_ms: Some(0.0),
            ..view
        });
    }
    let scratch = scratch_for(to)?;
    let exported = (|| {
        let started = Instant::now();
        let point = backup.checkpoint_to(&scratch, &mut || {})?;
        let copy = emisor_store::open(&scratch, StoreOptions::default(), |_| Ok(keys))?;
        let written = write_file(to, |out| {
            export::export(&copy.export_source(), VERSION, out)
        });
        copy.close()?;
        written.map(|view| ExportView {
            pause_ms: Some(point.paused.as_secs_f64() * 1000.0),
            duration_ms: started.elapsed().as_secs_f64() * 1000.0,
            ..view
        })
    })();
    let _ = fs::remove_dir_all(&scratch);
    exported
}

/// Reads the export in `from` into the open store (an empty data dir),
/// then holds every numbering and marks the sending jobs in flight.
pub fn import_file(handle: &StoreHandle, from: &Path) -> BackupResult<ExportView> {
    let started = Instant::now();
    let file = fs::File::open(from).map_err(BackupError::io("reading", from))?;
    let bytes = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut input = BufReader::with_capacity(1 << 20, file);
    let magic = input.fill_buf().map_err(BackupError::io("reading", from))?;
    let mut input: Box<dyn BufRead> = if magic.starts_with(&GZIP_MAGIC) {
        Box::new(BufReader::with_capacity(
            1 << 20,
            MultiGzDecoder::new(input),
        ))
    } else {
        Box::new(input)
    };
    let summary = export::import(&mut input, handle.import(), handle.keys()).map_err(failed)?;
    Ok(ExportView::new(from, summary, bytes, started))
}

const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The first bytes of a gzip stream: an export written to `FILE.gz`.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// An export to a `.gz` file is written gzipped (and read back as such,
/// whatever its name).
fn gzipped(to: &Path) -> bool {
    to.extension().is_some_and(|e| e == "gz")
}

/// `to` written whole or not at all: a temporary file beside it, synced
/// and renamed; a file already there is never replaced.
fn write_file(
    to: &Path,
    write: impl FnOnce(&mut dyn Write) -> Result<Summary, ExportError>,
) -> BackupResult<ExportView> {
    let started = Instant::now();
    if to.exists() {
        return Err(BackupError::Destination(format!(
            "{} exists: an export never replaces a file",
            to.display()
        )));
    }
    let partial = with_suffix(to, ".partial");
    let file = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&partial)
        .map_err(BackupError::io("creating", &partial))?;
    let written = (|| {
        let mut out = BufWriter::with_capacity(1 << 20, &file);
        let written = if gzipped(to) {
            // Signed XML in base64 compresses about sevenfold, even fast.
            let mut gz = GzEncoder::new(&mut out, Compression::fast());
            write(&mut gz).and_then(|summary| Ok(gz.finish().map(|_| summary)?))
        } else {
            write(&mut out)
        };
        let summary = written.map_err(|e| match e {
            ExportError::Io(io) => super::full_or_io(io, to),
            other => failed(other),
        })?;
        out.flush().map_err(|e| super::full_or_io(e, to))?;
        drop(out);
        file.sync_all().map_err(|e| super::full_or_io(e, to))?;
        let bytes = file.metadata().map(|m| m.len()).unwrap_or(0);
        fs::rename(&partial, to).map_err(BackupError::io("renaming into", to))?;
        if let Some(dir) = to.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(BackupError::io("syncing", dir))?;
        }
        Ok(ExportView::new(to, summary, bytes, started))
    })();
    if written.is_err() {
        let _ = fs::remove_file(&partial);
    }
    written
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(suffix);
    path.with_file_name(name)
}

/// A directory of its own beside `to` for the point's copy.
fn scratch_for(to: &Path) -> BackupResult<PathBuf> {
    let scratch = with_suffix(to, ".copy");
    if scratch.exists() {
        // Left by an export that was killed: nothing else writes there.
        fs::remove_dir_all(&scratch).map_err(BackupError::io("removing", &scratch))?;
    }
    Ok(scratch)
}
