//! What a node on a shared database takes up from the dead
//! (docs/operations.md, "Several nodes"): each node holds a lease in the
//! database ([`emisor_store::NodeLease`]); every `adopt_interval_s` it
//! looks for the work of nodes whose lease has expired and takes it, each
//! row locked so that two nodes never take the same: their half-built
//! documents are built again into drafts, as a restart builds its own
//! (their callers were never answered), and their queued jobs go on this
//! node's timetable (a transmission that was in flight asks the authority
//! for its status first, so nothing is accepted twice). At its start a
//! node takes up only a dead node's work in the same way.

use std::sync::{Arc, Weak};
use std::time::Duration;

use emisor_store::{NodeLease, StoreError};

use super::resume::{rebuild_when_back, settle_half_built};
use super::Issuing;

/// Registers this node in a shared database and keeps its lease renewed
/// while the handle lives (dropped at a clean stop: the lease ends, and the
/// other nodes take up this node's work at once). `None` on sled.
pub fn join(issuing: &Issuing) -> Result<Option<Arc<NodeLease>>, StoreError> {
    let lease = issuing.settings.resilience.node_lease();
    let held = issuing.store.keep_node_alive(lease)?.map(Arc::new);
    if let Some(node) = issuing.store.node() {
        tracing::info!(node = %node, lease_ms = lease.as_millis() as u64, "serving as a node");
    }
    Ok(held)
}

/// The adoption poll, while `lease` lives.
pub fn start(issuing: &Arc<Issuing>, lease: Option<&Arc<NodeLease>>) {
    let Some(lease) = lease else {
        return;
    };
    let lease: Weak<NodeLease> = Arc::downgrade(lease);
    let issuing = issuing.clone();
    let every = issuing.settings.resilience.adopt_interval();
    actix_web::rt::spawn(async move {
        loop {
            tokio::time::sleep(every).await;
            let Some(held) = lease.upgrade() else {
                return;
            };
            // After a miss of its own, a node leaves the others a lease's
            // time to renew theirs before it judges any dead.
            let (settled, grace) = (held.settled(), held.lease());
            drop(held);
            if !settled {
                continue;
            }
            if let Err(e) = adopt(&issuing, grace, grace).await {
                tracing::warn!(error = %e, "looking for the work of dead nodes");
            }
        }
    });
}

/// Takes up the dead nodes' half-built documents, then their jobs (a row
/// of a previous version's node once overdue by `grace`), a batch at a
/// time until none is left; nothing unless this node's own lease has run
/// without a break for `settle` (checked by the statements themselves: a
/// poll that waited for the database may run just as it comes back, before
/// the other nodes renewed theirs).
pub async fn adopt(
    issuing: &Arc<Issuing>,
    grace: Duration,
    settle: Duration,
) -> Result<(), StoreError> {
    loop {
        let docs = issuing.store.adopt_pending_builds(grace, settle).await?;
        if docs.is_empty() {
            break;
        }
        // Warnings: a node died (or stopped) with work of its own.
        tracing::warn!(
            documents = docs.len(),
            "adopting a dead node's half-built documents"
        );
        for doc in docs {
            let id = doc.id;
            if let Err(e) = settle_half_built(issuing, doc).await {
                // It is this node's now: built once the store answers.
                tracing::warn!(id, error = %e, "an adopted half-built document waits for the store");
                rebuild_when_back(issuing, id);
            }
        }
    }
    loop {
        let jobs = issuing.store.adopt_jobs(grace, settle).await?;
        if jobs.is_empty() {
            return Ok(());
        }
        tracing::warn!(jobs = jobs.len(), "adopted a dead node's queued jobs");
        for job in &jobs {
            issuing.schedule(job);
        }
    }
}
