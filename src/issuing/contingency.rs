//! Contingency documents (T03, T04) are issued as drafts while the
//! authority is unreachable and sent later, on request: this queues the
//! chosen pending ones for background transmission.

use chrono::Utc;
use emisor_store::{state, CompanyId, DocumentRecord, Environment, HistoryEntry};

use super::error::IssueResult;
use super::kind::invoicing_kind;
use super::transmit::new_job;
use super::Issuing;
use crate::engine::model::DocumentKind;

/// Why a requested document was not queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotQueued {
    /// Not a pending contingency document of this company and environment.
    NotPending,
    /// Its build never finished: there is nothing to send.
    NoFiles,
}

impl NotQueued {
    pub fn message(self) -> &'static str {
        match self {
            NotQueued::NotPending => {
                "not a pending contingency document of this company and environment"
            }
            NotQueued::NoFiles => "document has no files",
        }
    }
}

/// What a queueing did.
#[derive(Debug, Default)]
pub struct Queued {
    /// How many contingency documents were pending.
    pub pending: usize,
    /// Each queued document with its job id.
    pub queued: Vec<(DocumentRecord, u64)>,
    pub refused: Vec<(u64, NotQueued)>,
}

/// Queues `company`'s pending contingency documents of `environment` named
/// in `ids` (all of them when `ids` is empty), in one durable write, and
/// schedules them.
pub async fn queue(
    issuing: &Issuing,
    (company, environment): (CompanyId, Environment),
    ids: &[u64],
) -> IssueResult<Queued> {
    let pending: Vec<_> = issuing
        .store
        .documents_in_states(Some(company), vec![state::DRAFT])
        .await?
        .into_iter()
        .filter(|d| {
            d.environment == environment
                && invoicing_kind(d).is_some_and(DocumentKind::is_contingency)
                && !d.pending_build
        })
        .collect();
    let mut out = Queued {
        pending: pending.len(),
        ..Queued::default()
    };
    let chosen: Vec<DocumentRecord> = if ids.is_empty() {
        pending
    } else {
        ids.iter()
            .filter_map(|id| match pending.iter().find(|d| d.id == *id) {
                Some(d) => Some(d.clone()),
                None => {
                    out.refused.push((*id, NotQueued::NotPending));
                    None
                }
            })
            .collect()
    };
    let mut changes = Vec::new();
    for mut doc in chosen {
        if !issuing.store.has_files(doc.id).await? {
            out.refused.push((doc.id, NotQueued::NoFiles));
            continue;
        }
        doc.state = state::QUEUED;
        doc.updated_at = Utc::now();
        let entry = HistoryEntry {
            at: Utc::now(),
            actor: "api".into(),
            event: "contingency_queued".into(),
            from_state: Some(state::DRAFT),
            to_state: Some(state::QUEUED),
            data: serde_json::Value::Null,
        };
        changes.push((doc.clone(), new_job(&doc), entry));
    }
    let docs: Vec<DocumentRecord> = changes.iter().map(|(d, _, _)| d.clone()).collect();
    let jobs = issuing.store.update_documents_with_jobs(changes).await?;
    for (doc, job) in docs.into_iter().zip(jobs) {
        issuing.schedule(&job);
        out.queued.push((doc, job.id));
    }
    Ok(out)
}
