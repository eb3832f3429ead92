//! Reconciliation with the authority: what the service holds compared with
//! what the authority holds, every `[reconciliation] interval_s`.
//!
//! A pass asks the authority (`GetStatus` by the document's code, one query
//! at a time, behind transmissions in the paced transmitter) about:
//!
//! * every document queued (state 3) for longer than `stuck_after_s` and
//!   sent at least once (one never sent cannot be at the authority): one
//!   the authority accepted while the service lost the answer is recorded
//!   as accepted (state 2) under its transmission job's claim, so no worker
//!   sends or moves it meanwhile; one whose claim a worker holds is left to
//!   it ([`crate::issuing::transmit::reconcile`]);
//! * `sample_percent` percent of the documents accepted (state 2) and
//!   issued in the last `sample_days` days: one the authority does not know,
//!   or rejected, is a mismatch.
//!
//! Each finding is written to the report (setting `reconciliacion:informe`,
//! the last [`KEPT`] findings and the last pass), durable before it is
//! sent, once, as `operador:reconciliacion`: a finding already in the report
//! is not sent again, after a restart either. `/metrics` counts findings by
//! kind and documents asked, never per company. A pass that cannot reach the
//! authority stops there; the next one starts over.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, FixedOffset, Utc};
use emisor_actors::panic_boundary::guarded;
use emisor_store::{
    state, AsyncStore, DocumentRecord, Environment, Family, ListQuery, ServiceTask, StoreError,
    StoreResult,
};
use rand::Rng;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{OperatorEvents, RECONCILIATION};
use crate::config::ReconciliationSettings;
use crate::issuing::transmit::reconcile::{AskError, AuthorityView, Reconciled};

/// The report's setting key.
const REPORT_KEY: &str = "reconciliacion:informe";

/// Findings the report keeps (the newest).
pub const KEPT: usize = 1000;

/// The families whose documents are transmitted.
const TRANSMITTED: [Family; 4] = [
    Family::Invoices,
    Family::Support,
    Family::Pos,
    Family::Payroll,
];

/// A queued document the authority had accepted: recorded as accepted.
pub const ACCEPTED_UNANSWERED: &str = "aceptado_sin_respuesta";
/// An accepted document the authority does not know.
pub const UNKNOWN: &str = "desconocido";
/// An accepted document the authority rejected.
pub const REJECTED: &str = "rechazado";

/// What the report holds: the newest findings (oldest first) and the
/// last pass. A data dir without it has found nothing yet.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema, PartialEq)]
#[serde(default)]
pub struct Report {
    pub hallazgos: Vec<Finding>,
    pub ultima_pasada: Option<Pass>,
}

/// One difference between what the service held and what the authority
/// holds.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq)]
pub struct Finding {
    /// `{id_documento}:{tipo}`: a finding is reported once.
    pub clave: String,
    /// `aceptado_sin_respuesta` (queued here, accepted there: now recorded
    /// as accepted), `desconocido` (accepted here, unknown there),
    /// `rechazado` (accepted here, rejected there).
    pub tipo: String,
    /// When it was found (Colombia time).
    #[schema(value_type = String)]
    pub fecha: DateTime<FixedOffset>,
    pub id_empresa: u64,
    /// `test` or `live`.
    pub ambiente: String,
    pub id_documento: u64,
    pub tipo_documento: u8,
    pub prefijo: String,
    pub numero: u64,
    /// The document's code (CUFE, CUDE, CUDS, CUNE).
    pub codigo: String,
    /// The state the service held (spec 3.1).
    pub estado_servicio: u8,
    /// `aceptado`, `rechazado` or `desconocido`.
    pub estado_autoridad: String,
    /// The authority's status answer: code, description, errors.
    #[schema(value_type = Object)]
    pub respuesta_autoridad: serde_json::Value,
    /// True when the service's record was set right (state 2).
    pub corregido: bool,
}

/// What one pass did.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema, PartialEq)]
pub struct Pass {
    #[schema(value_type = String)]
    pub inicio: Option<DateTime<FixedOffset>>,
    #[schema(value_type = String)]
    pub fin: Option<DateTime<FixedOffset>>,
    /// Queued documents past `stuck_after_s`.
    pub en_cola: u64,
    /// Of those, asked about.
    pub en_cola_consultados: u64,
    /// Of those, left to the transmission worker holding their claim.
    pub en_cola_en_curso: u64,
    /// Of those, never sent yet (waiting their turn): not asked about.
    pub en_cola_sin_envio: u64,
    /// Accepted documents in the sampled days, and how many were asked.
    pub aceptados: u64,
    pub aceptados_consultados: u64,
    /// Queued documents found accepted and recorded as accepted.
    pub corregidos: u64,
    /// Accepted documents the authority does not know, or rejected.
    pub discrepancias: u64,
    /// Findings sent for the first time.
    pub hallazgos_nuevos: u64,
    /// Set when the authority could not be asked and the pass stopped.
    pub interrumpida: Option<String>,
}

/// The reconciler: its passes never overlap (the periodic one and one an
/// operator asks for).
pub struct Reconciler {
    operator: OperatorEvents,
    settings: ReconciliationSettings,
    pass: tokio::sync::Mutex<()>,
}

impl Reconciler {
    pub fn new(operator: OperatorEvents) -> Arc<Reconciler> {
        let settings = operator.issuing().settings.reconciliation.clone();
        Arc::new(Reconciler {
            operator,
            settings,
            pass: tokio::sync::Mutex::new(()),
        })
    }

    fn store(&self) -> &AsyncStore {
        &self.operator.issuing().store
    }

    /// The stored report (empty when none is stored, or when it cannot be
    /// read: then findings are reported again).
    pub async fn report(&self) -> StoreResult<Report> {
        read_report(self.store()).await
    }

    /// One pass now (after the one running, if any); its summary.
    pub async fn run(&self) -> StoreResult<Pass> {
        let _one = self.pass.lock().await;
        let mut pass = Pass {
            inicio: Some(crate::clock::colombia_now()),
            ..Pass::default()
        };
        let mut report = self.report().await?;
        let known: BTreeSet<String> = report.hallazgos.iter().map(|f| f.clave.clone()).collect();
        let mut found = Vec::new();
        let outcome = self.compare(&mut pass, &mut found).await;
        if let Err(e) = &outcome {
            pass.interrumpida = Some(e.to_string());
        }
        let new: Vec<Finding> = found
            .into_iter()
            .filter(|f| !known.contains(&f.clave))
            .collect();
        pass.hallazgos_nuevos = new.len() as u64;
        pass.fin = Some(crate::clock::colombia_now());
        report.hallazgos.extend(new.iter().cloned());
        let excess = report.hallazgos.len().saturating_sub(KEPT);
        report.hallazgos.drain(..excess);
        report.ultima_pasada = Some(pass.clone());
        // Durable before anything is sent: a crash after it never sends a
        // finding twice.
        let text = serde_json::to_string(&report).unwrap_or_default();
        self.store().put_setting(REPORT_KEY.into(), text).await?;
        for f in new {
            metrics::counter!(crate::metrics::RECONCILIATION_FINDINGS, "tipo" => f.tipo.clone())
                .increment(1);
            tracing::warn!(
                document = f.id_documento,
                kind = %f.tipo,
                "reconciliation finding"
            );
            let data = serde_json::to_value(&f).unwrap_or_default();
            self.operator.send(RECONCILIATION, data).await;
        }
        metrics::gauge!(crate::metrics::RECONCILIATION_LAST_PASS)
            .set(Utc::now().timestamp() as f64);
        Ok(pass)
    }

    /// Asks about the queued documents, then the sample of accepted ones;
    /// stops at the first query the authority does not answer.
    async fn compare(&self, pass: &mut Pass, found: &mut Vec<Finding>) -> Result<(), PassError> {
        let issuing = self.operator.issuing();
        let stuck_since = Utc::now() - Duration::from_secs(self.settings.stuck_after_s);
        let queued = self
            .store()
            .documents_in_states(None, vec![state::QUEUED])
            .await?;
        for doc in queued.into_iter().filter(|d| d.updated_at <= stuck_since) {
            pass.en_cola += 1;
            match issuing.reconcile_queued(doc.id).await {
                Ok(Reconciled::Claimed) => pass.en_cola_en_curso += 1,
                Ok(Reconciled::Moved) => {}
                Ok(Reconciled::NotSent) => pass.en_cola_sin_envio += 1,
                Ok(Reconciled::Asked(view)) => {
                    pass.en_cola_consultados += 1;
                    metrics::counter!(crate::metrics::RECONCILIATION_ASKED, "estado" => "3")
                        .increment(1);
                    if let AuthorityView::Accepted(_) = view.as_ref() {
                        pass.corregidos += 1;
                        found.push(finding(&doc, ACCEPTED_UNANSWERED, &view, true));
                    }
                }
                Err(e @ AskError::Unreachable(_)) => return Err(e.into()),
                Err(e) => skipped(&doc, &e),
            }
        }
        let sample = self.sample(pass).await?;
        for doc in sample {
            pass.aceptados_consultados += 1;
            let view = match issuing.authority_view(&doc).await {
                Ok(view) => view,
                Err(e @ AskError::Unreachable(_)) => return Err(e.into()),
                Err(e) => {
                    skipped(&doc, &e);
                    continue;
                }
            };
            metrics::counter!(crate::metrics::RECONCILIATION_ASKED, "estado" => "2").increment(1);
            let kind = match &view {
                AuthorityView::Unknown(_) => UNKNOWN,
                AuthorityView::Rejected(_) => REJECTED,
                AuthorityView::Accepted(_) | AuthorityView::Unsettled(_) => continue,
            };
            pass.discrepancias += 1;
            found.push(finding(&doc, kind, &view, false));
        }
        Ok(())
    }

    /// The accepted documents of every company issued in the last
    /// `sample_days` days, each kept with `sample_percent` % chance.
    async fn sample(&self, pass: &mut Pass) -> StoreResult<Vec<DocumentRecord>> {
        let percent = u32::from(self.settings.sample_percent);
        if percent == 0 {
            return Ok(Vec::new());
        }
        let from = crate::clock::colombia_now().date_naive()
            - chrono::Days::new(u64::from(self.settings.sample_days));
        let mut out = Vec::new();
        for company in self.store().companies().await? {
            for environment in [Environment::Test, Environment::Live] {
                for family in TRANSMITTED {
                    let mut page = 1;
                    loop {
                        let q = ListQuery {
                            company_id: company.id,
                            environment,
                            family,
                            from: Some(from),
                            to: None,
                            states: vec![state::ACCEPTED],
                            keys: Vec::new(),
                            page,
                            limit: 100,
                        };
                        let listed = self.store().list_documents(q).await?;
                        let n = listed.items.len();
                        pass.aceptados += n as u64;
                        let mut rng = rand::thread_rng();
                        out.extend(
                            listed
                                .items
                                .into_iter()
                                .filter(|_| percent >= 100 || rng.gen_range(0..100) < percent),
                        );
                        if n < 100 {
                            break;
                        }
                        page += 1;
                    }
                }
            }
        }
        Ok(out)
    }
}

/// Why a pass stopped.
#[derive(Debug, thiserror::Error)]
enum PassError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Ask(#[from] AskError),
}

/// A document that cannot be asked about (no code, no credentials): the
/// pass goes on with the next.
fn skipped(doc: &DocumentRecord, e: &AskError) {
    tracing::warn!(document = doc.id, error = %e, "reconciliation skipped a document");
}

async fn read_report(store: &AsyncStore) -> StoreResult<Report> {
    let Some(text) = store.setting(REPORT_KEY.into()).await? else {
        return Ok(Report::default());
    };
    Ok(serde_json::from_str(&text).unwrap_or_else(|e| {
        tracing::warn!(error = %e, "unreadable reconciliation report; starting afresh");
        Report::default()
    }))
}

fn finding(doc: &DocumentRecord, kind: &str, view: &AuthorityView, corrected: bool) -> Finding {
    let t = view.transmission();
    Finding {
        clave: format!("{}:{kind}", doc.id),
        tipo: kind.into(),
        fecha: crate::clock::colombia_now(),
        id_empresa: doc.company_id,
        ambiente: match doc.environment {
            Environment::Test => "test".into(),
            Environment::Live => "live".into(),
        },
        id_documento: doc.id,
        tipo_documento: doc.document_type,
        prefijo: doc.prefix.clone(),
        numero: doc.number,
        codigo: doc.code.clone().unwrap_or_default(),
        estado_servicio: doc.state,
        estado_autoridad: match view {
            AuthorityView::Accepted(_) => "aceptado",
            AuthorityView::Rejected(_) => "rechazado",
            AuthorityView::Unknown(_) => "desconocido",
            AuthorityView::Unsettled(_) => "en_proceso",
        }
        .into(),
        respuesta_autoridad: serde_json::json!({
            "status_code": t.status_code,
            "status_description": t.status_description,
            "errors": t.errors,
        }),
        corregido: corrected,
    }
}

/// Runs a pass every `interval_s` on the current runtime, each behind a
/// panic boundary: a pass that fails or panics is logged and the next one
/// runs on time. With several nodes, a tick runs the pass on the node
/// holding the task's lease only.
pub fn start(reconciler: Arc<Reconciler>) {
    let every = Duration::from_secs(reconciler.settings.interval_s.max(1));
    actix_web::rt::spawn(async move {
        let mut ticks = tokio::time::interval(every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticks.tick().await; // the first tick is immediate: a pass waits one interval
        loop {
            ticks.tick().await;
            let store = &reconciler.operator.issuing().store;
            if !store
                .hold_service_task(ServiceTask::Reconciliation)
                .await
                .runs()
            {
                continue;
            }
            match guarded(|| reconciler.run()).await {
                Ok(Ok(pass)) => tracing::info!(
                    corrected = pass.corregidos,
                    mismatches = pass.discrepancias,
                    "reconciliation pass"
                ),
                Ok(Err(e)) => tracing::error!(error = %e, "reconciliation pass failed"),
                Err(panic) => tracing::error!(panic = %panic, "reconciliation pass panicked"),
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_stored_is_nothing_found() {
        // A data dir of the previous format has no report: the default.
        let partial: Report = serde_json::from_str(r#"{"hallazgos": []}"#).unwrap();
        assert_eq!(partial, Report::default());
    }
}
