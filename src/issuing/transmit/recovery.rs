//! Recovery (spec 3.1): documents waiting for the authority or dead are
//! queued again once the authority answers.

use chrono::Utc;
use emisor_store::{state, ServiceTask};
use futures_util::future::BoxFuture;

use super::{history, new_job, now_ms};
use crate::issuing::Issuing;

/// Recovery (spec 3.1): documents waiting for the authority (5) or dead
/// (6) are queued again, with a fresh attempt budget, once it is available.
/// With several nodes, the pass runs on the one holding its lease.
pub struct Recovery(pub std::sync::Arc<Issuing>);

impl emisor_actors::recovery_ticker::Recovery for Recovery {
    fn recover(&self) -> BoxFuture<'static, usize> {
        let issuing = self.0.clone();
        Box::pin(async move {
            // Once per service: on the node holding the task's lease.
            if !issuing
                .store
                .hold_service_task(ServiceTask::Recovery)
                .await
                .runs()
            {
                return 0;
            }
            let docs = match issuing
                .store
                .documents_in_states(None, vec![state::WAITING_AUTHORITY, state::DEAD_LETTER])
                .await
            {
                Ok(d) => d,
                Err(e) => {
                    tracing::error!(error = %e, "recovery could not list documents");
                    return 0;
                }
            };
            // Asked, not inferred from the breaker: an open breaker whose
            // pause is over says only that a probe may be tried.
            if docs.is_empty() || !issuing.authority_answers(&docs).await {
                return 0;
            }
            let mut n = 0;
            for mut doc in docs {
                let mut job = match issuing.store.job_for_document(doc.id).await {
                    Ok(Some(mut j)) => {
                        j.attempts = 0;
                        j.run_at_ms = now_ms();
                        j
                    }
                    Ok(None) => new_job(&doc),
                    Err(_) => continue,
                };
                // An earlier attempt may have reached the authority (a lost
                // answer): ask for the code's status before sending again.
                job.in_flight = true;
                let from = doc.state;
                doc.state = state::QUEUED;
                doc.updated_at = Utc::now();
                let entry = history(
                    "recovery",
                    "requeued",
                    from,
                    state::QUEUED,
                    serde_json::Value::Null,
                );
                if let Ok(job) = issuing
                    .store
                    .update_document_with_job(doc, job, entry)
                    .await
                {
                    issuing.schedule(&job);
                    n += 1;
                }
            }
            n
        })
    }
}
