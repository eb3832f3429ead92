//! `emisor admin restore --from DIR --data-dir NEW`: a data dir that serves
//! what the original served at the backup's point. A restore is a
//! rollback: the original may have given numbers after the point, so every
//! numbering is held (no document takes a number from it) until the
//! operator confirms its next number (`emisor admin numbering confirm`,
//! `POST /admin/companies/{id}/resoluciones/{rid}/confirmar`); and every
//! queued transmission and event is marked in flight, so it asks the
//! authority for its status before any send and nothing is accepted twice.

use std::fs;
use std::io;
use std::path::Path;

use emisor_store::{Backup, NumberingHold, Store};
use serde::Serialize;

use super::manifest;
use super::verify::check_files;
use super::{BackupError, BackupResult, Manifest};

/// Job kinds that send to the authority (`issuing::TRANSMIT_JOB`,
/// `issuing::invoice_events::EVENT_JOB`).
const SENDING_JOBS: [&str; 2] = ["transmit", "invoice_event"];

#[derive(Debug, Serialize)]
pub struct Restored {
    pub last_document_id: u64,
    pub bytes: u64,
    pub documents: u64,
    /// Jobs that will ask the authority before they send.
    pub jobs_marked_in_flight: u64,
    pub numbering_hold: NumberingHold,
}

/// Copies the backup in `from` into the new data dir `to`, refusing a
/// backup whose files do not match its manifest. The store is not opened
/// here: see [`hold`].
pub fn copy_in(from: &Path, to: &Path) -> BackupResult<(Manifest, u64)> {
    let (manifest, problems, _) = check_files(from)?;
    if !problems.is_empty() {
        return Err(BackupError::Invalid(format!(
            "the backup in {} does not match its manifest: {}",
            from.display(),
            problems.join("; ")
        )));
    }
    match fs::read_dir(to) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                return Err(BackupError::Destination(format!(
                    "{} is not empty: restore into a new data dir",
                    to.display()
                )));
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(BackupError::io("reading", to)(e)),
    }
    let bytes = manifest::materialize(from, &manifest, to)
        .map_err(BackupError::io("restoring into", to))?;
    Ok((manifest, bytes))
}

/// On the restored store, opened: holds every numbering and marks the
/// sending jobs in flight.
pub fn hold(
    store: &dyn Store,
    backup: &dyn Backup,
    manifest: &Manifest,
    bytes: u64,
) -> BackupResult<Restored> {
    let (numbering_hold, marked) = hold_all(store, backup)?;
    Ok(Restored {
        last_document_id: manifest.last_document_id,
        bytes,
        documents: manifest.documents.total(),
        jobs_marked_in_flight: marked,
        numbering_hold,
    })
}

/// Every numbering held and every sending job marked in flight (a restored
/// or imported store: the original may have gone on issuing and sending).
/// Answers the hold and how many sending jobs will ask the authority before
/// they send: those marked here and those a send was under way for at the
/// copy's point.
pub fn hold_all(store: &dyn Store, backup: &dyn Backup) -> BackupResult<(NumberingHold, u64)> {
    let numbering_hold = backup.hold_numberings()?;
    let mut marked = 0;
    for mut job in store.jobs()? {
        if !SENDING_JOBS.contains(&job.kind.as_str()) {
            continue;
        }
        if !job.in_flight {
            job.in_flight = true;
            store.put_job(job)?;
        }
        marked += 1;
    }
    store.flush()?;
    Ok((numbering_hold, marked))
}
