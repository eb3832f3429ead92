//! The operator's channel (decisions.md "Operator events"): events of the
//! installation rather than of one company, heard on
//! `GET /v1/api/ws/operador` (admin token) and POSTed to
//! `[operator] webhook_url`, signed like the companies' webhooks with
//! `[operator] webhook_secret`.
//!
//! * [`OperatorEvents`]: the sender every part calls (`operador:backup`,
//!   `operador:alerta`, `operador:reconciliacion`).
//! * [`warnings`]: what runs out for a company (numbering, validity,
//!   certificate, plan), and `operador:alerta` once per crossing.
//! * [`reconciliation`]: what the service holds compared with what the
//!   authority holds, and `operador:reconciliacion` once per finding.
//! * [`documents`]: the console's list of documents, filtered and searched.

pub mod documents;
pub mod reconciliation;
pub mod warnings;

use std::sync::Arc;

use chrono::Utc;
use emisor_actors::ws_hub::{Broadcast, Room};
use emisor_store::Job;
use serde_json::json;

use crate::issuing::webhooks::{OPERATOR, WEBHOOK_JOB};
use crate::issuing::Issuing;

/// A backup's outcome.
pub const BACKUP: &str = "operador:backup";
/// A warning crossed (also sent to the company's room and webhook).
pub const ALERT: &str = "operador:alerta";
/// A mismatch with the authority.
pub const RECONCILIATION: &str = "operador:reconciliacion";

/// Sends operator events: to the sockets of the operator's room at once,
/// and to `[operator] webhook_url` as a durable delivery job (retried with
/// the webhook backoff, logged, resumed after a restart like a company's).
#[derive(Clone)]
pub struct OperatorEvents {
    issuing: Arc<Issuing>,
}

impl OperatorEvents {
    pub fn new(issuing: Arc<Issuing>) -> Self {
        OperatorEvents { issuing }
    }

    /// `{"event": event, "data": data}` to the operator's room, and its
    /// webhook delivery queued (durable when this returns).
    pub async fn send(&self, event: &'static str, data: serde_json::Value) {
        let url = &self.issuing.settings.operator.webhook_url;
        if !url.is_empty() {
            let job = Job {
                id: 0,
                kind: WEBHOOK_JOB.into(),
                company_id: OPERATOR,
                document_id: None,
                attempts: 0,
                run_at_ms: Utc::now().timestamp_millis(),
                in_flight: false,
                payload: json!({ "url": url, "event": event, "data": data }),
                created_at: Utc::now(),
            };
            match self.issuing.store.put_job(job).await {
                Ok(job) => self.issuing.schedule(&job),
                Err(e) => tracing::error!(event, error = %e, "could not queue an operator webhook"),
            }
        }
        let b = Broadcast::new(Room::Operator, event, data);
        crate::fanout::broadcast(&self.issuing.store, &self.issuing.hub, b).await;
    }

    pub fn issuing(&self) -> &Arc<Issuing> {
        &self.issuing
    }
}
