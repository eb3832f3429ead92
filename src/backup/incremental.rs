//! A log file (the document file log's segments, the payload log's
//! minutes) into a backup: when the backup followed holds the start of it,
//! that file is linked and only what grew since is appended; otherwise it
//! is copied whole. A linked file grows for both backups; each manifest
//! covers its first `bytes` only, so the older one still verifies.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;

use emisor_store::LogFile;

use super::manifest::{sum_prefix, FileSum, Manifest};

/// Copies `log` into the backup directory `to`, under `data`, following
/// `base` (an earlier backup's directory and manifest: `to` itself, or
/// another backup on the same file system); answers its entry in the
/// manifest and the bytes written, or `None` when the file went away since
/// the point (a payload minute past the window).
pub fn copy_log(
    to: &Path,
    base: Option<(&Path, &Manifest)>,
    data: &Path,
    log: &LogFile,
) -> io::Result<Option<(FileSum, u64)>> {
    let mut source = match File::open(&log.source) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let dir = data.join(log.dir);
    fs::create_dir_all(&dir)?;
    let target = dir.join(&log.name);
    let name = log.name.to_string_lossy();
    let followed = base.and_then(|(dir, b)| {
        let path = format!("{}/{}/{name}", b.data, log.dir);
        let f = b.files.iter().find(|f| f.path == path).cloned()?;
        Some((dir.join(&f.path), f))
    });
    let mut start = 0;
    if let Some((linked, f)) = followed.filter(|(_, f)| f.bytes <= log.len) {
        // Still the start of the store's file (the logs only grow).
        // (A backup whose file went missing is not followed: copied whole.)
        if sum_prefix(&mut source, f.bytes)? == (f.bytes, f.sha256.clone())
            && fs::hard_link(&linked, &target).is_ok()
        {
            // An interrupted backup may have appended past it.
            OpenOptions::new()
                .write(true)
                .open(&target)?
                .set_len(f.bytes)?;
            start = f.bytes;
        }
    }
    let mut out = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(start == 0)
        .open(&target)?;
    out.seek(SeekFrom::Start(start))?;
    source.seek(SeekFrom::Start(start))?;
    let written = io::copy(&mut (&mut source).take(log.len - start), &mut out)?;
    out.flush()?;
    out.sync_all()?;
    drop(out);
    let (bytes, sha256) = sum_prefix(&mut File::open(&target)?, start + written)?;
    let path = super::manifest::relative(to, &target);
    Ok(Some((
        FileSum {
            path,
            bytes,
            sha256,
        },
        written,
    )))
}
