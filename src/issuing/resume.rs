//! What a restart picks up: documents whose build did not finish are built
//! again with the number they already hold (queued again when a power cut
//! took an answered one's record: `rebuild`), and every stored job goes
//! back on the scheduler (a job that was in flight asks the authority
//! first). On a shared database only a dead node's work is taken up
//! ([`super::adopt`]).

use std::sync::Arc;
use std::time::Duration;

use emisor_store::{state, HistoryEntry, StoreError};

use super::error::IssueError;
use super::rebuild::rebuild;
use super::Issuing;

/// How often a document left half-built by a store that went away asks
/// whether it is back.
const STORE_RETRY: Duration = Duration::from_secs(1);

pub async fn resume(issuing: &Arc<Issuing>) -> anyhow::Result<()> {
    if issuing.store.is_shared() {
        // Other nodes may be serving: only a dead node's work is this
        // node's to take up, under the rule of the adoption poll (at
        // once: this node's lease has just begun).
        let lease = issuing.settings.resilience.node_lease();
        super::adopt::adopt(issuing, lease, Duration::ZERO).await?;
        return Ok(());
    }
    let pending = issuing.store.pending_builds().await?;
    for doc in pending {
        settle_half_built(issuing, doc).await?;
    }
    let jobs = issuing.store.jobs().await?;
    let n = jobs.len();
    for job in jobs {
        issuing.schedule(&job);
    }
    if n > 0 {
        tracing::info!(jobs = n, "resumed queued jobs");
    }
    Ok(())
}

/// A half-built document (its caller never answered) built again with its
/// number, into a draft; one that cannot be is left a draft as it is.
pub(crate) async fn settle_half_built(
    issuing: &Arc<Issuing>,
    doc: emisor_store::DocumentRecord,
) -> Result<(), StoreError> {
    match rebuild(issuing, doc.clone()).await {
        Ok(_) => tracing::info!(id = doc.id, "half-built document rebuilt"),
        Err(e) => {
            tracing::error!(id = doc.id, error = %e, "could not rebuild a half-built document");
            let mut d = doc;
            d.pending_build = false;
            d.state = state::DRAFT;
            let entry = HistoryEntry {
                at: chrono::Utc::now(),
                actor: "recovery".into(),
                event: "rebuild_failed".into(),
                from_state: None,
                to_state: Some(state::DRAFT),
                data: serde_json::json!({ "error": e.to_string() }),
            };
            issuing.store.update_document(d, entry).await?;
        }
    }
    Ok(())
}

/// Document `id`, numbered and built while its phase two was refused
/// because the store went away, is built again once the store answers:
/// into a draft, as a restart would (its caller heard 503, so it is not
/// transmitted unasked), so no number waits half-built until the next
/// start. One whose phase two did commit (its answer lost with the
/// connection) only has its stored job scheduled.
pub(crate) fn rebuild_when_back(issuing: &Arc<Issuing>, id: u64) {
    let issuing = issuing.clone();
    actix_web::rt::spawn(async move {
        loop {
            tokio::time::sleep(STORE_RETRY).await;
            let finished = match issuing.store.document(id).await {
                Ok(Some(mut doc)) if doc.pending_build => {
                    doc.state = state::DRAFT;
                    match rebuild(&issuing, doc).await {
                        Err(IssueError::Store(StoreError::Unavailable(_))) => false,
                        Ok(()) => true,
                        Err(e) => {
                            tracing::error!(id, error = %e, "could not rebuild a half-built document");
                            true
                        }
                    }
                }
                Ok(Some(_)) => match issuing.store.job_for_document(id).await {
                    Ok(job) => {
                        if let Some(job) = job {
                            issuing.schedule(&job);
                        }
                        true
                    }
                    Err(StoreError::Unavailable(_)) => false,
                    Err(e) => {
                        tracing::error!(id, error = %e, "reading a document's job");
                        true
                    }
                },
                Ok(None) => true,
                Err(StoreError::Unavailable(_)) => false,
                Err(e) => {
                    tracing::error!(id, error = %e, "reading a half-built document");
                    true
                }
            };
            if finished {
                tracing::info!(
                    id,
                    "a document whose phase two the store refused is settled"
                );
                return;
            }
        }
    });
}
