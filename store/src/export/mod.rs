//! The export file (`emisor admin export`, `emisor admin import`): every
//! record of a store, read through the store traits and written through
//! [`Import`], so any engine writes one and any engine reads one
//! (docs/reference/export-format.md).
//!
//! A file is JSON lines: a header naming the format and its version, one
//! line per record ([`ExportItem`], `entity` first), and a last line
//! `{"entity":"end","records":N}` that tells a whole file from a cut one.
//! Writing always writes the newest version; reading switches on the
//! header's version, one reader per version ever written (`v1`), so a
//! newer emisor reads every older export.

mod v1;

use std::io::{BufRead, Read, Write};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::error::StoreError;
use crate::model::export::{ExportItem, ImportCounts};
use crate::traits::{Backup, Import, MasterKeys, ReceivedStore, Store};

/// `format` of the header line.
pub const FORMAT: &str = "emisor-export";
/// The version this build writes.
pub const VERSION: u32 = 1;
/// A line longer than this is refused (bad input never takes unbounded
/// memory); the largest document line is its signed XML in base64.
pub const MAX_LINE: u64 = 256 * 1024 * 1024;

/// The first line of an export.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Header {
    pub format: String,
    pub version: u32,
    /// The emisor that wrote it.
    pub emisor_version: String,
    pub created_at: DateTime<Utc>,
    /// The master key its secrets are sealed under (its id, never the key).
    pub master_key_id: String,
}

#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("the store: {0}")]
    Store(#[from] StoreError),
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("line {line}: {reason}")]
    Line { line: u64, reason: String },
    #[error(
        "the export's secrets are sealed under master key {exported}, and this data dir's \
         master key is {here}: import it with the master key of the installation it was \
         exported from (EMISOR_SECURITY__MASTER_KEY or [security] master_key_file)"
    )]
    OtherMasterKey { exported: String, here: String },
    #[error("writing line {line}: {reason}")]
    Write { line: u64, reason: String },
}

pub type ExportResult<T> = Result<T, ExportError>;

/// What an export reads from: the store traits.
pub struct Source<'a> {
    pub store: &'a dyn Store,
    pub received: &'a dyn ReceivedStore,
    pub backup: &'a dyn Backup,
    pub keys: &'a dyn MasterKeys,
}

/// What was written or read, by `entity`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Summary {
    pub version: u32,
    pub records: u64,
    pub by_kind: ImportCounts,
}

impl Summary {
    fn count(&mut self, item: &ExportItem) {
        self.records += 1;
        *self.by_kind.entry(item.kind().to_string()).or_insert(0) += 1;
    }
}

/// Writes the whole store to `out` in the newest version.
pub fn export(
    source: &Source<'_>,
    emisor_version: &str,
    out: &mut dyn Write,
) -> ExportResult<Summary> {
    let header = Header {
        format: FORMAT.into(),
        version: VERSION,
        emisor_version: emisor_version.into(),
        created_at: Utc::now(),
        master_key_id: source.keys.keyring().current().id().to_string(),
    };
    let mut writer = v1::Writer::new(out, source.keys.keyring());
    writer.header(&header)?;
    v1::write_all(source, &mut writer)?;
    writer.end()
}

/// Reads an export from `input` into the empty store `target`, line by
/// line (the file is never held whole). A bad line stops it with an error
/// naming the line; what was written before stays, so the caller removes
/// the data dir.
pub fn import(
    input: &mut dyn BufRead,
    target: &dyn Import,
    keys: &dyn MasterKeys,
) -> ExportResult<Summary> {
    let mut lines = Lines::new(input);
    let Some(first) = lines.next()? else {
        return Err(ExportError::Line {
            line: 1,
            reason: "the file is empty: an export starts with its header line".into(),
        });
    };
    let header: Header = serde_json::from_str(&first).map_err(|e| ExportError::Line {
        line: 1,
        reason: format!("not an emisor export's header ({e})"),
    })?;
    if header.format != FORMAT {
        return Err(ExportError::Line {
            line: 1,
            reason: format!("the format is `{}`, not `{FORMAT}`", header.format),
        });
    }
    let keyring = keys.keyring();
    if !keyring.knows(&header.master_key_id) {
        return Err(ExportError::OtherMasterKey {
            exported: header.master_key_id,
            here: keyring.current().id().to_string(),
        });
    }
    target.check_empty_for_import()?;
    let summary = match header.version {
        1 => v1::read(&mut lines, target, keyring)?,
        newer if newer > VERSION => {
            return Err(ExportError::Line {
                line: 1,
                reason: format!(
                    "export format version {newer} was written by a newer emisor ({}); this \
                     one reads versions 1 to {VERSION}",
                    header.emisor_version
                ),
            })
        }
        other => {
            return Err(ExportError::Line {
                line: 1,
                reason: format!("unknown export format version {other}"),
            })
        }
    };
    target.finish_import()?;
    Ok(summary)
}

/// The lines of an export, numbered from 1, each at most [`MAX_LINE`].
pub(crate) struct Lines<'a> {
    input: &'a mut dyn BufRead,
    buf: Vec<u8>,
    pub(crate) number: u64,
}

impl<'a> Lines<'a> {
    fn new(input: &'a mut dyn BufRead) -> Self {
        Lines {
            input,
            buf: Vec::new(),
            number: 0,
        }
    }

    /// The next line without its end, `None` at the end of the file.
    pub(crate) fn next(&mut self) -> ExportResult<Option<String>> {
        self.buf.clear();
        self.number += 1;
        let read = (&mut self.input)
            .take(MAX_LINE + 1)
            .read_until(b'\n', &mut self.buf)
            .map_err(|e| ExportError::Line {
                line: self.number,
                reason: format!("reading: {e}"),
            })?;
        if read == 0 {
            return Ok(None);
        }
        if self.buf.last() == Some(&b'\n') {
            self.buf.pop();
        } else if read as u64 > MAX_LINE {
            return Err(ExportError::Line {
                line: self.number,
                reason: format!("longer than {MAX_LINE} bytes"),
            });
        }
        let text = std::str::from_utf8(&self.buf).map_err(|e| ExportError::Line {
            line: self.number,
            reason: format!("not UTF-8 ({e})"),
        })?;
        Ok(Some(text.to_string()))
    }
}
