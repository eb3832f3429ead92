//! Scheduled backups (`[backup] dir, interval_s, keep`): every `interval_s`
//! a backup into `<dir>/emisor-<UTC time>`, logged, its figures in
//! `/metrics`; then only the newest `keep` complete ones are kept. None
//! when `dir` is empty. Each follows the newest complete one, as a second
//! backup into one directory does: the engine's trees copied anew, the
//! log files linked from it and only their growth copied. On PostgreSQL
//! none is scheduled: start-up says so once.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use emisor_store::AsyncStore;

use super::manifest::{Manifest, MANIFEST};
use crate::config::Settings;
use crate::metrics::{
    BACKUP_BYTES, BACKUP_DURATION, BACKUP_FAILURES, BACKUP_LAST_SUCCESS, BACKUP_PAUSE,
};
use crate::operator::{OperatorEvents, BACKUP};

/// The prefix of a scheduled backup's directory; only these are pruned.
pub const PREFIX: &str = "emisor-";

/// Why a PostgreSQL store has no scheduled backups: said once at start.
pub const NOT_ON_POSTGRES: &str = "scheduled backups ([backup] interval_s) do not run on \
    PostgreSQL: back the database up with PostgreSQL's own tools (pg_basebackup with WAL \
    archiving, a replica, pg_dump; docs/operations.md, \"PostgreSQL\")";

/// Runs until the process ends.
pub async fn run(store: AsyncStore, settings: Arc<Settings>, operator: OperatorEvents) {
    let dir = settings.backup.dir.clone();
    if dir.as_os_str().is_empty() || settings.backup.interval_s == 0 {
        return;
    }
    if settings.store.engine == emisor_store::Engine::Postgres {
        tracing::warn!(interval_s = settings.backup.interval_s, "{NOT_ON_POSTGRES}");
        return;
    }
    let every = Duration::from_secs(settings.backup.interval_s);
    loop {
        actix_web::rt::time::sleep(every).await;
        once(&store, &dir, settings.backup.keep, &operator).await;
    }
}

async fn once(store: &AsyncStore, dir: &Path, keep: u32, operator: &OperatorEvents) {
    let to = dir.join(format!(
        "{PREFIX}{}",
        Utc::now().format("%Y%m%dT%H%M%S%.3fZ")
    ));
    let (at, newest) = (to.clone(), newest_complete(dir));
    let taken = store
        .on_own_thread(move |store, backup| super::take_following(store, backup, &at, newest))
        .await;
    match taken {
        Ok(Ok(m)) => {
            metrics::gauge!(BACKUP_LAST_SUCCESS).set(Utc::now().timestamp() as f64);
            metrics::gauge!(BACKUP_BYTES).set(m.bytes as f64);
            metrics::gauge!(BACKUP_DURATION).set(m.duration_ms / 1000.0);
            metrics::gauge!(BACKUP_PAUSE).set(m.pause_ms / 1000.0);
            tracing::info!(
                to = %to.display(),
                bytes = m.bytes,
                documents = m.documents.total(),
                pause_ms = m.pause_ms,
                duration_ms = m.duration_ms,
                "scheduled backup complete"
            );
            if let Err(e) = prune(dir, keep as usize) {
                tracing::warn!(dir = %dir.display(), error = %e, "could not remove old backups");
            }
            operator.send(BACKUP, outcome(&to, Ok(&m))).await;
        }
        Ok(Err(e)) => {
            failed(&to, &e.to_string());
            operator
                .send(BACKUP, outcome(&to, Err(&e.to_string())))
                .await;
        }
        Err(e) => {
            failed(&to, &e.to_string());
            operator
                .send(BACKUP, outcome(&to, Err(&e.to_string())))
                .await;
        }
    }
}

/// The data of `operador:backup`: where, and the backup's figures or why
/// it failed.
pub fn outcome(to: &Path, result: Result<&Manifest, &str>) -> serde_json::Value {
    let destino = to.display().to_string();
    match result {
        Ok(m) => serde_json::json!({
            "ok": true,
            "destino": destino,
            "bytes": m.bytes,
            "documentos": m.documents.total(),
            "pause_ms": m.pause_ms,
            "duration_ms": m.duration_ms,
        }),
        Err(error) => serde_json::json!({ "ok": false, "destino": destino, "error": error }),
    }
}

fn failed(to: &Path, error: &str) {
    metrics::counter!(BACKUP_FAILURES).increment(1);
    tracing::error!(to = %to.display(), error, "scheduled backup failed");
}

/// The newest complete scheduled backup in `dir` with its manifest: the
/// next one follows it (its log files linked, only their growth copied).
fn newest_complete(dir: &Path) -> Option<(PathBuf, Manifest)> {
    let mut ours = scheduled(dir).ok()?;
    ours.sort();
    ours.into_iter()
        .rev()
        .find_map(|p| super::manifest::read(&p).ok().map(|m| (p, m)))
}

/// The scheduled backups' directories in `dir`, in no order.
fn scheduled(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    Ok(fs::read_dir(dir)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.is_dir()
                && p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(PREFIX))
        })
        .collect())
}

/// Removes all but the newest `keep` complete scheduled backups (their
/// names sort by time); an incomplete one is left to the next backup's
/// caller to look at, except those older than the newest complete one.
pub fn prune(dir: &Path, keep: usize) -> std::io::Result<Vec<PathBuf>> {
    let mut ours = scheduled(dir)?;
    ours.sort();
    let complete: Vec<&PathBuf> = ours.iter().filter(|p| p.join(MANIFEST).exists()).collect();
    let Some(newest) = complete.last().map(|p| (*p).clone()) else {
        return Ok(Vec::new());
    };
    let kept: Vec<PathBuf> = complete
        .iter()
        .rev()
        .take(keep.max(1))
        .map(|p| (*p).clone())
        .collect();
    let mut removed = Vec::new();
    for p in &ours {
        let stale_incomplete = !p.join(MANIFEST).exists() && *p < newest;
        if (p.join(MANIFEST).exists() && !kept.contains(p)) || stale_incomplete {
            fs::remove_dir_all(p)?;
            removed.push(p.clone());
        }
    }
    Ok(removed)
}
