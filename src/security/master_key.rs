//! The master key that seals the store's secrets (`emisor_store::sealing`):
//! where it comes from, its file, opening the store with it, and rotating it.
//!
//! The key is `[security] master_key_file` (default `<data_dir>.key`, beside
//! the data dir), 32 raw bytes, created with mode 0600 on the first start of
//! a store that holds no sealed secret yet; or `EMISOR_SECURITY__MASTER_KEY`
//! (base64). A store whose sealed secrets name another key, or a missing key
//! file beside sealed secrets, refuses to open before anything is written.
//!
//! Rotation (`emisor admin rotate-master-key`) survives a kill at any point:
//! the new key is first made durable as `<file>.new`, then every secret is
//! re-sealed in one transaction, then `<file>.new` replaces `<file>`. A start
//! that finds `<file>.new` accepts both keys, seals whatever is still under
//! the old one and finishes the rename, so after a crash the data dir opens
//! with the new key whichever step the crash interrupted.

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use anyhow::Context;
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use emisor_store::{Keyring, MasterKey, SealedInventory, StoreError, StoreHandle, StoreOptions};
use secrecy::zeroize::Zeroizing;
use secrecy::ExposeSecret;
use serde::Serialize;

use super::permissions::{prepare_data_dir, tighten_file};
use crate::config::Settings;

/// The variable that carries the key instead of the file.
pub const MASTER_KEY_ENV: &str = "EMISOR_SECURITY__MASTER_KEY";

/// Where the master key comes from.
#[derive(Debug)]
pub enum KeySource {
    /// `EMISOR_SECURITY__MASTER_KEY` (or `security.master_key`).
    Environment(MasterKey),
    /// The key file (`security.master_key_file`).
    File(PathBuf),
}

impl KeySource {
    pub fn from_settings(settings: &Settings) -> anyhow::Result<KeySource> {
        let given = settings.security.master_key.expose_secret().trim();
        if given.is_empty() {
            return Ok(KeySource::File(settings.master_key_file()?));
        }
        let bytes = Zeroizing::new(
            B64.decode(given)
                .map_err(|_| anyhow::anyhow!("{MASTER_KEY_ENV} is not base64"))?,
        );
        let key = MasterKey::from_bytes(&bytes).map_err(|_| {
            anyhow::anyhow!(
                "{MASTER_KEY_ENV} must be the base64 of 32 bytes, it has {}",
                bytes.len()
            )
        })?;
        Ok(KeySource::Environment(key))
    }

    fn describe(&self) -> String {
        match self {
            KeySource::Environment(_) => MASTER_KEY_ENV.to_string(),
            KeySource::File(path) => format!("the master key file {}", path.display()),
        }
    }
}

/// `<file>.new`: a rotation's new key until its secrets are re-sealed.
pub fn pending_path(file: &Path) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(".new");
    PathBuf::from(name)
}

/// The store, opened with its master key, and what the operator should be
/// told about it (a key made, a data dir tightened, a rotation finished).
pub struct OpenedStore {
    pub store: StoreHandle,
    pub source: KeySource,
    pub notices: Vec<String>,
}

/// Prepares the data dir (mode 0700, tightened when others could read it)
/// and opens the store with the configured master key.
pub fn open_store(settings: &Settings) -> anyhow::Result<OpenedStore> {
    let dir = settings.data_dir();
    let mut notices = Vec::new();
    let tightened = prepare_data_dir(dir)
        .with_context(|| format!("preparing the data dir {}", dir.display()))?;
    if let Some((path, mode)) = tightened.paths.first() {
        notices.push(format!(
            "the data dir {} was readable by other users ({} {:o}, {} paths in all): \
             tightened to 0700 for directories and 0600 for files",
            dir.display(),
            path.display(),
            mode,
            tightened.paths.len()
        ));
    }
    let source = KeySource::from_settings(settings)?;
    if let KeySource::File(file) = &source {
        if inside(file, dir) {
            notices.push(format!(
                "the master key file {} is inside the data dir: a copy of the data dir then \
                 holds the key that opens it",
                file.display()
            ));
        }
    }
    let mut finish_rotation = None;
    let options = StoreOptions {
        engine: settings.store.engine,
        cache_bytes: settings.store.cache_mb.saturating_mul(1024 * 1024),
        checkpoint_every: std::time::Duration::from_millis(settings.store.checkpoint_ms.max(1)),
        url: Some(emisor_store::SecretText::new(
            secrecy::ExposeSecret::expose_secret(&settings.store.url),
        )),
        pool_size: settings.store.pool_size,
        threads: settings.store.threads,
    };
    let opened = emisor_store::open(dir, options, |inventory| {
        choose_keys(&source, inventory, dir, &mut notices, &mut finish_rotation)
            .map_err(|e| StoreError::MasterKey(format!("{e:#}")))
    });
    let store = match opened {
        Ok(store) => store,
        Err(StoreError::MasterKey(msg)) => anyhow::bail!("{msg}"),
        Err(e) if settings.store.engine == emisor_store::Engine::Postgres => {
            return Err(e).context("opening the store on PostgreSQL ([store] url)")
        }
        Err(e) => {
            return Err(e).with_context(|| {
                format!(
                    "opening the store in {} (is `emisor serve` running on it?)",
                    dir.display()
                )
            })
        }
    };
    if let Some(file) = finish_rotation {
        let pending = pending_path(&file);
        fs::rename(&pending, &file)
            .and_then(|_| sync_parent(&file))
            .with_context(|| format!("moving {} to {}", pending.display(), file.display()))?;
        notices.push(format!(
            "finished an interrupted master key rotation: {} is the key now (id {})",
            file.display(),
            store.keys().keyring().current().id()
        ));
    }
    Ok(OpenedStore {
        store,
        source,
        notices,
    })
}

/// Decides the keys once the store's sealed values are known (nothing is
/// written before this answers).
fn choose_keys(
    source: &KeySource,
    inventory: &SealedInventory,
    dir: &Path,
    notices: &mut Vec<String>,
    finish_rotation: &mut Option<PathBuf>,
) -> anyhow::Result<Keyring> {
    let sealed_under = || {
        inventory
            .key_ids
            .iter()
            .cloned()
            .collect::<Vec<_>>()
            .join(", ")
    };
    let refuse = |keys: &Keyring| -> anyhow::Result<()> {
        if inventory.key_ids.iter().all(|id| keys.knows(id)) {
            return Ok(());
        }
        anyhow::bail!(
            "{} (key id {}) does not open the secrets in the data dir {}, which are sealed under \
             master key {}: start with the key this data dir was sealed with (restore it from \
             your backup). Nothing was changed.",
            source.describe(),
            keys.current().id(),
            dir.display(),
            sealed_under()
        )
    };
    let file = match source {
        KeySource::Environment(key) => {
            let keys = Keyring::new(MasterKey::from_bytes(key.expose_bytes())?);
            refuse(&keys)?;
            return Ok(keys);
        }
        KeySource::File(file) => file,
    };
    let pending = pending_path(file);
    let keys = match (
        read_key_file(file, notices)?,
        read_key_file(&pending, notices)?,
    ) {
        (None, None) if !inventory.key_ids.is_empty() => anyhow::bail!(
            "the data dir {} holds secrets sealed under master key {}, but the master key file \
             {} does not exist: restore it from your backup (or give the key in {}). Nothing \
             was changed.",
            dir.display(),
            sealed_under(),
            file.display(),
            MASTER_KEY_ENV
        ),
        (None, None) => {
            let key = MasterKey::generate()?;
            write_key_file(file, &key)
                .with_context(|| format!("creating the master key file {}", file.display()))?;
            notices.push(format!(
                "created the master key {} (id {}): back it up apart from the data dir; \
                 without it the stored certificates, PINs and technical keys cannot be read",
                file.display(),
                key.id()
            ));
            Keyring::new(key)
        }
        (Some(key), None) => Keyring::new(key),
        (current, Some(new)) => {
            *finish_rotation = Some(file.clone());
            match current {
                Some(old) => Keyring::new(new).accepting(old),
                None => Keyring::new(new),
            }
        }
    };
    refuse(&keys)?;
    Ok(keys)
}

/// A key file's key; `None` when there is no such file. A file others can
/// read is tightened to 0600 (and the operator told).
fn read_key_file(path: &Path, notices: &mut Vec<String>) -> anyhow::Result<Option<MasterKey>> {
    let bytes = match fs::read(path) {
        Ok(b) => Zeroizing::new(b),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(e).with_context(|| format!("reading the master key {}", path.display()))
        }
    };
    let key = MasterKey::from_bytes(&bytes).map_err(|_| {
        anyhow::anyhow!(
            "{} is not a master key: it has {} bytes, a key has 32",
            path.display(),
            bytes.len()
        )
    })?;
    let tightened = tighten_file(path)
        .with_context(|| format!("restricting the mode of {}", path.display()))?;
    if let Some((_, mode)) = tightened.paths.first() {
        notices.push(format!(
            "the master key file {} was readable by other users (mode {mode:o}): tightened to 0600",
            path.display()
        ));
    }
    Ok(Some(key))
}

/// Writes a new key file: mode 0600 from the start, never over an existing
/// file, on disk (with its directory entry) before it returns.
pub fn write_key_file(path: &Path, key: &MasterKey) -> io::Result<()> {
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(key.expose_bytes())?;
    f.sync_all()?;
    sync_parent(path)
}

/// Writes `<file>.new` whole or not at all (a temporary file renamed).
fn write_pending(file: &Path, key: &MasterKey) -> io::Result<()> {
    let pending = pending_path(file);
    let mut tmp = pending.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let _ = fs::remove_file(&tmp);
    write_key_file(&tmp, key)?;
    fs::rename(&tmp, &pending)?;
    sync_parent(&pending)
}

/// Makes a rename or a creation in `path`'s directory durable.
fn sync_parent(path: &Path) -> io::Result<()> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    fs::File::open(parent)?.sync_all()
}

fn inside(file: &Path, dir: &Path) -> bool {
    match (std::path::absolute(file), std::path::absolute(dir)) {
        (Ok(f), Ok(d)) => f.starts_with(d),
        _ => false,
    }
}

/// A step of a rotation at which a test may stop it (`--pause-at`), to
/// kill the process there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RotationStep {
    /// The new key is on disk, no secret re-sealed yet.
    NewKeyWritten,
    /// Every secret is re-sealed under the new key, the key file not yet
    /// replaced.
    Resealed,
}

/// What a rotation did.
#[derive(Debug, Serialize)]
pub struct Rotation {
    pub old_key_id: String,
    pub new_key_id: String,
    pub records_resealed: usize,
    /// Where the new key is.
    pub master_key_file: String,
}

/// `emisor admin rotate-master-key`: a new key, every secret re-sealed
/// under it in one transaction, the key file replaced. With the key in
/// `EMISOR_SECURITY__MASTER_KEY`, the new key is written to `out`, and the
/// variable must carry it from then on.
pub fn rotate(
    settings: &Settings,
    out: Option<&Path>,
    pause_at: Option<RotationStep>,
) -> anyhow::Result<(Rotation, Vec<String>)> {
    let OpenedStore {
        store,
        source,
        notices,
    } = open_store(settings)?;
    let old_key_id = store.keys().keyring().current().id().to_string();
    let new = MasterKey::generate()?;
    let new_key_id = new.id().to_string();
    let target = match (&source, out) {
        (KeySource::File(file), None) => {
            write_pending(file, &new)
                .with_context(|| format!("writing {}", pending_path(file).display()))?;
            file.clone()
        }
        (KeySource::File(_), Some(_)) => anyhow::bail!(
            "--out is for a key given in {MASTER_KEY_ENV}; the key file is replaced in place"
        ),
        (KeySource::Environment(_), Some(out)) => {
            write_key_file(out, &new).with_context(|| format!("writing {}", out.display()))?;
            out.to_path_buf()
        }
        (KeySource::Environment(_), None) => anyhow::bail!(
            "the master key comes from {MASTER_KEY_ENV}: give --out FILE for the new key"
        ),
    };
    pause(pause_at, RotationStep::NewKeyWritten);
    let records_resealed = store.keys().rotate_master_key(new)?;
    pause(pause_at, RotationStep::Resealed);
    if let KeySource::File(file) = &source {
        let pending = pending_path(file);
        fs::rename(&pending, file)
            .and_then(|_| sync_parent(file))
            .with_context(|| format!("moving {} to {}", pending.display(), file.display()))?;
    }
    Ok((
        Rotation {
            old_key_id,
            new_key_id,
            records_resealed,
            master_key_file: target.display().to_string(),
        },
        notices,
    ))
}

/// Stops here for good when asked to (the caller kills the process).
fn pause(at: Option<RotationStep>, step: RotationStep) {
    if at != Some(step) {
        return;
    }
    println!("paused at {step:?}");
    let _ = io::stdout().flush();
    loop {
        std::thread::sleep(std::time::Duration::from_secs(3600));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_key_file_is_0600_32_bytes_and_never_overwritten() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("data.key");
        let key = MasterKey::generate().unwrap();
        write_key_file(&path, &key).unwrap();
        let meta = fs::metadata(&path).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        assert_eq!(fs::read(&path).unwrap(), key.expose_bytes());
        let other = MasterKey::generate().unwrap();
        let err = write_key_file(&path, &other).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        let mut notices = Vec::new();
        let read = read_key_file(&path, &mut notices).unwrap().unwrap();
        assert_eq!(read.id(), key.id());
        assert!(notices.is_empty());

        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
        read_key_file(&path, &mut notices).unwrap().unwrap();
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert!(notices[0].contains("tightened"), "{notices:?}");

        fs::write(tmp.path().join("short.key"), [1u8; 5]).unwrap();
        let err = read_key_file(&tmp.path().join("short.key"), &mut notices)
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("short.key") && err.contains("5 bytes"),
            "{err}"
        );
        assert!(read_key_file(&tmp.path().join("none.key"), &mut notices)
            .unwrap()
            .is_none());
    }

    #[test]
    fn the_pending_key_sits_beside_the_key() {
        assert_eq!(
            pending_path(Path::new("./data.key")),
            PathBuf::from("./data.key.new")
        );
    }
}
