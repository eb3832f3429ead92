//! Transmitting stored documents to the authority, every step written
//! down before the next: the job is marked in flight before the call, the
//! answer is stored before anyone is told. A job found in flight after a
//! crash asks the authority for the document's status first, so nothing is
//! sent twice. A document whose day is over is dated again before it is
//! sent ([`crate::issuing::same_day`]: annex 1.9).
//!
//! * [`calls`]: where a company's documents go, its credentials, one call
//!   through the paced transmitter, the breaker's state.
//! * [`send`]: one transmission of a stored document and its recorded
//!   outcome.
//! * [`jobs`]: the transmission job and the scheduler's runner of every
//!   stored job.
//! * [`recovery`]: documents waiting for the authority queued again once
//!   it answers.
//! * [`reconcile`]: what the authority holds of a stored document, and a
//!   queued one it accepted recorded under its job's claim.

pub mod calls;
pub mod jobs;
pub mod reconcile;
pub mod recovery;
pub mod send;

use chrono::Utc;
use emisor_store::{DocumentRecord, HistoryEntry};

use crate::authority::Transmission;

pub use calls::{HABILITACION_URL, PRODUCTION_URL};
pub use jobs::{new_job, JobRunner};
pub use recovery::Recovery;

/// What one transmission ended in, for the synchronous answer.
#[derive(Debug, Clone)]
pub struct Sent {
    pub doc: DocumentRecord,
    pub transmission: Transmission,
    /// The XML it carries now, when this transmission re-dated it for the
    /// day it was sent (`same_day`): the one its caller holds is stale.
    pub xml: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum TransmitError {
    #[error("document {0} not found")]
    NotFound(u64),
    #[error("document {0} has no files")]
    NoFiles(u64),
    #[error(transparent)]
    Store(#[from] emisor_store::StoreError),
    #[error("signing credentials: {0}")]
    Credentials(String),
    #[error("building the ZIP: {0}")]
    Zip(String),
    #[error("dating the document for its send: {0}")]
    Redate(String),
}

fn history(actor: &str, event: &str, from: u8, to: u8, data: serde_json::Value) -> HistoryEntry {
    HistoryEntry {
        at: Utc::now(),
        actor: actor.into(),
        event: event.into(),
        from_state: Some(from),
        to_state: Some(to),
        data,
    }
}

fn now_ms() -> i64 {
    Utc::now().timestamp_millis()
}

/// A transmission object for failures that never reached a verdict.
fn failure_transmission(description: String, retryable: bool) -> Transmission {
    Transmission {
        is_valid: false,
        status_code: String::new(),
        status_description: description.clone(),
        errors: vec![description],
        retryable,
        ..Transmission::default()
    }
}

/// The transmission with its tracking key (spec 2.4 `zipKey`, equal to the
/// record's `tax_track_id`): the authority's ZipKey when it gave one (async
/// sends), otherwise the document's code, which is what a status query for
/// a SendBillSync document takes.
fn tracked(mut t: Transmission, doc: &DocumentRecord) -> Transmission {
    if t.zip_key.is_none() {
        t.zip_key = doc.track_id.clone().or_else(|| doc.code.clone());
    }
    t
}
