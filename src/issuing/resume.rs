//! What a restart picks up: documents whose build did not finish are built
//! again with the number they already hold (queued again when a power cut
//! took an answered one's record: `rebuild`), and every stored job goes
//! back on the scheduler (a job that was in flight asks the authority
//! first).

use std::sync::Arc;

use emisor_store::{state, HistoryEntry};

use super::rebuild::rebuild;
use super::Issuing;

pub async fn resume(issuing: &Arc<Issuing>) -> anyhow::Result<()> {
    let pending = issuing.store.pending_builds().await?;
    for doc in pending {
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
