//! The data commands of `emisor admin` (decisions.md, "Data commands"):
//! `backup`, `verify`, `restore`, `export`, `import` and a restored (or
//! imported) data dir's `numbering`.
//!
//! `backup` and `export` find a running server by `<data-dir>/listening`:
//! when the address there answers `GET /healthz`, the server does it
//! (`POST /admin/backup`, `POST /admin/export`, the destination under its
//! `[backup] dir`);
//! otherwise the data dir is opened here, which fails clearly if a server
//! holds it without answering.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use emisor_store::{MasterKey, StoreHandle};
use serde::Serialize;

use super::backup::{confirmed_next, BackupView};
use super::cli::{admin_token, listening_url, NumberingCommand};
use crate::backup::{self, export, restore, verify};
use crate::config::Settings;
use crate::security::master_key::open_store;

fn print<T: Serialize>(value: &T) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}

/// Opens the configured data dir's store (its notices on stderr), runs
/// `work` on it and closes it, whether `work` succeeded or not.
fn with_store<T>(
    settings: &Settings,
    work: impl FnOnce(&StoreHandle) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    let opened = open_store(settings)?;
    for notice in &opened.notices {
        eprintln!("{notice}");
    }
    let handle = opened.store;
    let done = work(&handle);
    handle.close()?;
    done
}

pub fn export(
    settings: &Settings,
    to: &Path,
    server: Option<String>,
    token: Option<String>,
) -> anyhow::Result<()> {
    if let Some(url) = running_server(settings, server) {
        let token = admin_token(settings, token)?;
        return through(&url, &token, "export", to);
    }
    let written = with_store(settings, |handle| Ok(export::export_store(handle, to)?))?;
    print(&written)
}

/// Reads an export into the configured data dir, new or empty; on any
/// failure nothing is left there.
pub fn import(settings: &Settings, from: &Path) -> anyhow::Result<()> {
    let dir = settings.data_dir();
    if let Ok(mut entries) = std::fs::read_dir(dir) {
        if entries.next().is_some() {
            anyhow::bail!(
                "{} is not empty: import into a new data dir (--data-dir NEW)",
                dir.display()
            );
        }
    }
    let existed = dir.exists();
    let imported = with_store(settings, |handle| {
        let view = export::import_file(handle, from)?;
        let (numbering_hold, jobs_marked_in_flight) =
            restore::hold_all(handle.store(), handle.backup())?;
        Ok(serde_json::json!({
            "import": view,
            "jobs_marked_in_flight": jobs_marked_in_flight,
            "numbering_hold": numbering_hold,
        }))
    });
    match imported {
        Ok(report) => print(&report),
        Err(e) => {
            empty(dir, existed);
            Err(e.context(format!(
                "importing {} into {} (nothing was left there)",
                from.display(),
                dir.display()
            )))
        }
    }
}

/// `emisor admin migrate`: the sled data dir `from` exported to a file
/// beside it (0600, removed after), the file imported into the database at
/// `url`, which must be empty, under the data dir's master key; the
/// numberings held and the sending jobs marked in flight, as after an
/// import. A failed import leaves the database empty (one transaction).
pub fn migrate(settings: &Settings, from: &Path, url: String) -> anyhow::Result<()> {
    let mut source = settings.clone();
    source.store.data_dir = from.to_path_buf();
    source.store.engine = emisor_store::Engine::Sled;
    let file = from.with_extension("migrate.jsonl");
    let exported = with_store(&source, |handle| Ok(export::export_store(handle, &file)?))
        .with_context(|| format!("exporting {}", from.display()));
    let exported = match exported {
        Ok(view) => view,
        Err(e) => {
            let _ = std::fs::remove_file(&file);
            return Err(e);
        }
    };
    // The same data dir, for its master key; the store is the database.
    let mut target = source;
    target.store.engine = emisor_store::Engine::Postgres;
    target.store.url = secrecy::SecretString::from(url);
    let imported = with_store(&target, |handle| {
        let view = export::import_file(handle, &file)?;
        let (numbering_hold, jobs_marked_in_flight) =
            restore::hold_all(handle.store(), handle.backup())?;
        Ok(serde_json::json!({
            "export": exported,
            "import": view,
            "jobs_marked_in_flight": jobs_marked_in_flight,
            "numbering_hold": numbering_hold,
        }))
    });
    let _ = std::fs::remove_file(&file);
    print(&imported.context("importing into PostgreSQL (the database was left as it was)")?)
}

pub fn backup(
    settings: &Settings,
    to: &Path,
    server: Option<String>,
    token: Option<String>,
) -> anyhow::Result<()> {
    if let Some(url) = running_server(settings, server) {
        let token = admin_token(settings, token)?;
        return through(&url, &token, "backup", to);
    }
    // Refused before the destination is made, as the admin API does.
    if settings.store.engine == emisor_store::Engine::Postgres {
        anyhow::bail!(emisor_store::POSTGRES_BACKUPS);
    }
    let manifest = with_store(settings, |handle| {
        Ok(backup::take(handle.store(), handle.backup(), to)?)
    })?;
    print(&BackupView::new(to.display().to_string(), &manifest))
}

/// Removes what a failed import wrote into `dir`: the whole dir when the
/// import made it, else what is inside it (an empty dir the operator made
/// stays).
fn empty(dir: &Path, existed: bool) {
    if !existed {
        let _ = std::fs::remove_dir_all(dir);
        return;
    }
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let path = entry.path();
            let _ = if path.is_dir() {
                std::fs::remove_dir_all(&path)
            } else {
                std::fs::remove_file(&path)
            };
        }
    }
}

/// The running server to ask: `--server`, else the address in
/// `<data-dir>/listening` when it answers.
fn running_server(settings: &Settings, server: Option<String>) -> Option<String> {
    server.or_else(|| {
        listening_url(settings.data_dir())
            .ok()
            .filter(|url| answers(url))
    })
}

/// Whether a server answers `GET /healthz` at `url`.
fn answers(url: &str) -> bool {
    actix_web::rt::System::new().block_on(async {
        awc::Client::builder()
            .timeout(Duration::from_secs(3))
            .finish()
            .get(format!("{url}/healthz"))
            .send()
            .await
            .is_ok_and(|r| r.status().is_success())
    })
}

/// `POST /admin/{what}` (`backup`, `export`) with the destination.
fn through(url: &str, token: &str, what: &str, to: &Path) -> anyhow::Result<()> {
    let destino = std::path::absolute(to)
        .with_context(|| format!("resolving {}", to.display()))?
        .display()
        .to_string();
    actix_web::rt::System::new().block_on(async move {
        let path = format!("{url}/admin/{what}");
        let mut res = awc::Client::builder()
            .timeout(Duration::from_secs(24 * 3600))
            .finish()
            .post(&path)
            .bearer_auth(token)
            .send_json(&serde_json::json!({ "destino": destino }))
            .await
            .map_err(|e| anyhow::anyhow!("{path}: {e}"))?;
        let body: serde_json::Value = res
            .json()
            .limit(1 << 20)
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        if !res.status().is_success() {
            let detail = body
                .pointer("/error/details/0/message")
                .and_then(serde_json::Value::as_str)
                .map(|d| format!(": {d}"))
                .unwrap_or_default();
            anyhow::bail!(
                "the server refused the {what}: {}{detail}",
                body.get("message")
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or("no message")
            );
        }
        print(body.get("data").unwrap_or(&serde_json::Value::Null))
    })
}

pub fn verify(from: &Path, key: Option<&Path>) -> anyhow::Result<()> {
    let key = key.map(read_key).transpose()?;
    let report = verify::verify(from, key)?;
    print(&report)?;
    if !report.problems.is_empty() {
        anyhow::bail!(
            "the backup in {} has {} problems",
            from.display(),
            report.problems.len()
        );
    }
    Ok(())
}

/// A master key file: 32 raw bytes, or their base64.
fn read_key(file: &Path) -> anyhow::Result<MasterKey> {
    let bytes = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
    let raw = if bytes.len() == 32 {
        bytes
    } else {
        B64.decode(String::from_utf8_lossy(&bytes).trim())
            .with_context(|| format!("{} is neither 32 bytes nor their base64", file.display()))?
    };
    Ok(MasterKey::from_bytes(&raw)?)
}

pub fn restore(settings: &Settings, from: &Path, data_dir: &Path) -> anyhow::Result<()> {
    let (manifest, bytes) = restore::copy_in(from, data_dir)?;
    let mut settings = settings.clone();
    settings.store.data_dir = PathBuf::from(data_dir);
    let held = with_store(&settings, |handle| {
        Ok(restore::hold(
            handle.store(),
            handle.backup(),
            &manifest,
            bytes,
        )?)
    });
    match held {
        Ok(restored) => print(&restored),
        Err(e) => {
            // A copy that never got its hold must not be started.
            let _ = std::fs::remove_dir_all(data_dir);
            Err(e.context(format!(
                "restoring into {} (nothing was left there)",
                data_dir.display()
            )))
        }
    }
}

pub fn numbering(settings: &Settings, command: NumberingCommand) -> anyhow::Result<()> {
    let opened = open_store(settings)?;
    let handle = opened.store;
    let out = match command {
        NumberingCommand::Hold => serde_json::to_value(handle.backup().numbering_hold()?)?,
        NumberingCommand::Confirm {
            company,
            resolution,
            siguiente,
            nada_emitido,
        } => {
            let next = confirmed_next(siguiente, nada_emitido).map_err(anyhow::Error::msg)?;
            serde_json::to_value(
                handle
                    .backup()
                    .confirm_numbering(company, resolution, next)?,
            )?
        }
    };
    handle.close()?;
    print(&out)
}
