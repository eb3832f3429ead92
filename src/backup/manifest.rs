//! `manifest.json`: the contract between a backup and `verify`/`restore`
//! (docs/storage.md, "Backups").

use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub const MANIFEST: &str = "manifest.json";
pub const MANIFEST_TMP: &str = "manifest.json.tmp";
/// Raised when the manifest or the backup's layout changes; a newer emisor
/// reads every older format.
pub const MANIFEST_FORMAT: u32 = 1;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Manifest {
    pub format: u32,
    pub emisor_version: String,
    /// The store engine the copy is in (`sled`).
    pub engine: String,
    /// The directory of the backup holding the data dir's copy (`data-N`).
    pub data: String,
    /// When the copy was complete.
    pub created_at: DateTime<Utc>,
    /// The store's last committed document at the point.
    pub last_document_id: u64,
    /// How long issuing was held for the point.
    pub pause_ms: f64,
    /// The whole backup, checksums and manifest included.
    pub duration_ms: f64,
    /// The engine's collections and their entries in the copy.
    pub collections: u64,
    pub entries: u64,
    /// Documents per family at the point.
    pub documents: FamilyCounts,
    pub by_type_and_state: Vec<TypeStateCount>,
    /// Bytes of every file listed.
    pub bytes: u64,
    /// Bytes this backup wrote: all of them for a first backup; the
    /// engine's copy and what the logs grew by for one that follows another
    /// in the same directory.
    pub copied_bytes: u64,
    /// The backup this one followed in the same directory (its
    /// `created_at`), if any.
    pub follows: Option<DateTime<Utc>>,
    /// Every file of the backup but the manifest, by path from the backup's
    /// directory (`/`-separated).
    pub files: Vec<FileSum>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct FamilyCounts {
    pub facturacion: u64,
    pub documentos_soporte: u64,
    pub pos: u64,
    pub nomina: u64,
    pub recibidos: u64,
}

impl FamilyCounts {
    pub fn total(&self) -> u64 {
        self.facturacion + self.documentos_soporte + self.pos + self.nomina + self.recibidos
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct TypeStateCount {
    pub tipo: u8,
    pub estado: u8,
    pub documentos: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct FileSum {
    pub path: String,
    pub bytes: u64,
    /// SHA-256, hex.
    pub sha256: String,
}

/// SHA-256 and length of a file, read in blocks.
pub fn sum_file(path: &Path) -> io::Result<(u64, String)> {
    sum_prefix(&mut fs::File::open(path)?, u64::MAX)
}

/// SHA-256 of the first `len` bytes of `file` (fewer if it is shorter),
/// with how many there were.
pub fn sum_prefix(file: &mut fs::File, len: u64) -> io::Result<(u64, String)> {
    use std::io::Seek;
    file.seek(io::SeekFrom::Start(0))?;
    let mut hash = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut bytes = 0u64;
    let mut reader = file.take(len);
    loop {
        let n = reader.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hash.update(buf.get(..n).unwrap_or(&buf));
        bytes += n as u64;
    }
    Ok((bytes, hex::encode(hash.finalize())))
}

/// Copies the files `manifest` lists (each its first `bytes`) into `to`,
/// named from inside the manifest's data directory: the data dir as the
/// backup holds it. Answers the bytes copied.
pub fn materialize(dir: &Path, manifest: &Manifest, to: &Path) -> io::Result<u64> {
    let prefix = format!("{}/", manifest.data);
    let mut copied = 0;
    fs::create_dir_all(to)?;
    for f in &manifest.files {
        let Some(inside) = f.path.strip_prefix(&prefix) else {
            continue;
        };
        let target = to.join(inside);
        if let Some(parent) = target.parent() {
            fs::create_dir_all(parent)?;
        }
        let mut out = fs::File::create(&target)?;
        copied += io::copy(
            &mut fs::File::open(dir.join(&f.path))?.take(f.bytes),
            &mut out,
        )?;
        out.sync_all()?;
    }
    for d in [
        to.join("files"),
        to.join("payloads"),
        to.join("sled"),
        to.to_path_buf(),
    ] {
        if d.is_dir() {
            fs::File::open(&d)?.sync_all()?;
        }
    }
    Ok(copied)
}

/// Every file under `dir`, summed, named from `base`, sorted by path.
pub fn sum_tree(base: &Path, dir: &Path) -> io::Result<Vec<FileSum>> {
    let mut out = Vec::new();
    for path in files_under(dir)? {
        let (bytes, sha256) = sum_file(&path)?;
        out.push(FileSum {
            path: relative(base, &path),
            bytes,
            sha256,
        });
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

/// Every regular file under `dir`, at any depth.
pub fn files_under(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in fs::read_dir(&d)? {
            let entry = entry?;
            let kind = entry.file_type()?;
            if kind.is_dir() {
                todo.push(entry.path());
            } else if kind.is_file() {
                out.push(entry.path());
            }
        }
    }
    Ok(out)
}

pub fn relative(base: &Path, path: &Path) -> String {
    path.strip_prefix(base)
        .unwrap_or(path)
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// Writes the manifest last and atomically: a temporary file synced,
/// renamed over, the directory synced. A crash before the rename leaves no
/// manifest, and so no backup that `verify` calls complete.
pub fn write(dir: &Path, manifest: &Manifest) -> io::Result<()> {
    let tmp = dir.join(MANIFEST_TMP);
    let bytes = serde_json::to_vec_pretty(manifest).map_err(io::Error::other)?;
    let mut file = fs::File::create(&tmp)?;
    file.write_all(&bytes)?;
    file.sync_all()?;
    drop(file);
    fs::rename(&tmp, dir.join(MANIFEST))?;
    fs::File::open(dir)?.sync_all()
}

/// The manifest of the backup in `dir`; an error says why there is none.
pub fn read(dir: &Path) -> Result<Manifest, String> {
    let path = dir.join(MANIFEST);
    let text = match fs::read(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(format!(
                "{} has no {MANIFEST}: it is not a complete backup",
                dir.display()
            ))
        }
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let manifest: Manifest =
        serde_json::from_slice(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    if manifest.format > MANIFEST_FORMAT {
        return Err(format!(
            "{} is of backup format {}; this emisor reads up to {MANIFEST_FORMAT}",
            path.display(),
            manifest.format
        ));
    }
    Ok(manifest)
}
