//! The authority's enablement test set (habilitación): a company sends a set
//! of documents with `SendTestSetAsync` and its test-set id, then follows each
//! batch with `GetStatusZip` until every document has a verdict. The run's
//! progress is stored, so the admin API and CLI can report it while it goes.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use emisor_store::{state, Environment, HistoryEntry, SoftwareKind};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::api::invoice_request::mapping::to_document;
use crate::api::invoice_request::{examples, request::FacturacionRequest};
use crate::authority::port::{AuthorityRequest, AuthorityResponse};
use crate::authority::StatusZip;
use crate::http::error::{ApiError, ErrorCode};
use crate::issuing::duplicates::Payload;
use crate::issuing::issue::{issue, Caller, Issued};
use crate::issuing::reference::refuse;
use crate::issuing::Issuing;

/// How many documents of each kind the set sends.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, ToSchema)]
pub struct TestSetPlan {
    #[serde(default = "default_invoices")]
    pub facturas: u32,
    #[serde(default = "default_notes")]
    pub notas_credito: u32,
    #[serde(default = "default_notes")]
    pub notas_debito: u32,
}

fn default_invoices() -> u32 {
    8
}
fn default_notes() -> u32 {
    1
}

impl TestSetPlan {
    /// The number of documents: 1 to 100, notes only with an invoice to
    /// refer to. Summed in u64: three u32 counts from the caller would
    /// overflow (or wrap to a small total that passes the limit).
    fn checked_total(&self) -> Result<usize, ApiError> {
        let notes = u64::from(self.notas_credito) + u64::from(self.notas_debito);
        let total = u64::from(self.facturas) + notes;
        if total == 0 || total > 100 {
            return Err(ApiError::validation(
                "facturas",
                "a test set has 1 to 100 documents",
            ));
        }
        if self.facturas == 0 && notes > 0 {
            return Err(ApiError::validation(
                "facturas",
                "notes need at least one invoice to refer to",
            ));
        }
        // At most 100: fits.
        Ok(total as usize)
    }
}

impl Default for TestSetPlan {
    fn default() -> Self {
        TestSetPlan {
            facturas: default_invoices(),
            notas_credito: default_notes(),
            notas_debito: default_notes(),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct TestSetDocument {
    pub id: u64,
    pub numero: String,
    pub zip_key: Option<String>,
    /// `enviado`, `aceptado`, `rechazado`, `error`.
    pub estado: String,
    #[serde(default)]
    pub errores: Vec<String>,
}

/// A run and its progress.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct TestSetRun {
    pub id_empresa: u64,
    pub test_set_id: String,
    /// `en_progreso`, `aceptado`, `rechazado`.
    pub estado: String,
    pub total: usize,
    pub enviados: usize,
    pub aceptados: usize,
    pub rechazados: usize,
    pub pendientes: usize,
    pub documentos: Vec<TestSetDocument>,
    pub iniciado: DateTime<Utc>,
    pub terminado: Option<DateTime<Utc>>,
}

fn setting_key(company: u64) -> String {
    format!("test_set:{company}")
}

pub async fn load(issuing: &Issuing, company: u64) -> Result<Option<TestSetRun>, ApiError> {
    Ok(issuing
        .store
        .setting(setting_key(company))
        .await?
        .and_then(|s| serde_json::from_str(&s).ok()))
}

async fn save(issuing: &Issuing, run: &mut TestSetRun) {
    run.enviados = run
        .documentos
        .iter()
        .filter(|d| d.zip_key.is_some())
        .count();
    run.aceptados = run
        .documentos
        .iter()
        .filter(|d| d.estado == "aceptado")
        .count();
    run.rechazados = run
        .documentos
        .iter()
        .filter(|d| d.estado == "rechazado" || d.estado == "error")
        .count();
    run.pendientes = run.total - run.aceptados - run.rechazados;
    if let Ok(json) = serde_json::to_string(run) {
        if let Err(e) = issuing
            .store
            .put_setting(setting_key(run.id_empresa), json)
            .await
        {
            tracing::error!(error = %e, "saving test set progress");
        }
    }
}

/// Starts a run in the background and returns its first state.
pub async fn start(
    issuing: &Arc<Issuing>,
    company: u64,
    plan: TestSetPlan,
) -> Result<TestSetRun, ApiError> {
    if let Some(run) = load(issuing, company).await? {
        if run.estado == "en_progreso" {
            return Err(ApiError::conflict(
                ErrorCode::InvalidState,
                "a test set run is already in progress for this company",
            ));
        }
    }
    let software = issuing
        .store
        .software(company, SoftwareKind::Invoicing)
        .await?
        .ok_or_else(|| {
            ApiError::validation(
                "software",
                "the company has no registered invoicing software",
            )
        })?;
    let test_set_id = software
        .test_set_id
        .filter(|t| !t.is_empty())
        .ok_or_else(|| {
            ApiError::validation("test_set_id", "the company's software has no test-set id")
        })?;
    let total = plan.checked_total()?;
    let mut run = TestSetRun {
        id_empresa: company,
        test_set_id,
        estado: "en_progreso".into(),
        total,
        enviados: 0,
        aceptados: 0,
        rechazados: 0,
        pendientes: total,
        documentos: Vec::new(),
        iniciado: Utc::now(),
        terminado: None,
    };
    save(issuing, &mut run).await;
    let issuing = issuing.clone();
    let first = run.clone();
    actix_web::rt::spawn(async move { execute(issuing, run, plan).await });
    Ok(first)
}

/// Issues one document of the set as a draft (numbered, signed, stored).
async fn draft(
    issuing: &Arc<Issuing>,
    company: u64,
    mut body: serde_json::Value,
    tag: &str,
) -> Result<Issued, ApiError> {
    let Some(fields) = body.as_object_mut() else {
        return Err(ApiError::Internal(format!(
            "test set document {tag}: not an object"
        )));
    };
    fields.insert("transmit".into(), serde_json::json!(false));
    fields.insert(
        "referencia_externa".into(),
        serde_json::json!(format!(
            "set-pruebas-{}-{tag}",
            Utc::now().timestamp_millis()
        )),
    );
    let req: FacturacionRequest = crate::http::json::parse(body.to_string().as_bytes())?;
    let mapped = match to_document(&req) {
        Ok(mapped) => mapped.into_request(),
        Err(refused) => {
            return Err(refuse(issuing, (company, Environment::Test), refused)
                .await
                .into())
        }
    };
    // The test set runs for the company, not for a user's key.
    let caller = Caller {
        company,
        environment: Environment::Test,
        user: None,
    };
    let payload = Payload::new(body.to_string().into_bytes());
    Ok(issue(issuing, caller, mapped, payload).await?)
}

async fn execute(issuing: Arc<Issuing>, mut run: TestSetRun, plan: TestSetPlan) {
    let company = run.id_empresa;
    let mut plan_bodies: Vec<(String, serde_json::Value)> = Vec::new();
    for i in 0..plan.facturas {
        plan_bodies.push((format!("fe{i}"), examples::invoice()));
    }
    let mut first_invoice: Option<u64> = None;
    for (i, (tag, body)) in plan_bodies.into_iter().enumerate() {
        send_one(&issuing, &mut run, company, body, &tag).await;
        if i == 0 {
            first_invoice = run.documentos.first().map(|d| d.id);
        }
    }
    if let Some(invoice) = first_invoice {
        for i in 0..plan.notas_credito {
            let body = examples::with_reference(examples::credit_note(), invoice);
            send_one(&issuing, &mut run, company, body, &format!("nc{i}")).await;
        }
        for i in 0..plan.notas_debito {
            let body = examples::with_reference(examples::debit_note(), invoice);
            send_one(&issuing, &mut run, company, body, &format!("nd{i}")).await;
        }
    }
    follow(&issuing, &mut run).await;
    run.estado = if run.rechazados == 0 && run.aceptados == run.total {
        "aceptado".into()
    } else {
        "rechazado".into()
    };
    run.terminado = Some(Utc::now());
    save(&issuing, &mut run).await;
}

async fn send_one(
    issuing: &Arc<Issuing>,
    run: &mut TestSetRun,
    company: u64,
    body: serde_json::Value,
    tag: &str,
) {
    let doc = match draft(issuing, company, body, tag).await {
        Ok(Issued::Done { doc, .. }) | Ok(Issued::Queued { doc, .. }) => doc,
        Err(e) => {
            run.documentos.push(TestSetDocument {
                id: 0,
                numero: String::new(),
                zip_key: None,
                estado: "error".into(),
                errores: vec![e.to_string()],
            });
            save(issuing, run).await;
            return;
        }
    };
    let mut entry = TestSetDocument {
        id: doc.id,
        numero: doc.full_number(),
        zip_key: None,
        estado: "enviado".into(),
        errores: Vec::new(),
    };
    let sent = async {
        let files = issuing
            .store
            .document_files(doc.id)
            .await?
            .ok_or_else(|| ApiError::Internal("files missing".into()))?;
        let target = issuing
            .target(company, Environment::Test)
            .await
            .map_err(|e| ApiError::Internal(e.to_string()))?;
        let zip_name = files.zip_name.clone();
        let zip = crate::issuing::files::into_zip(files)
            .map_err(|e| ApiError::Internal(e.to_string()))?;
        let request = AuthorityRequest::SendTestSetAsync {
            zip_name,
            zip,
            test_set_id: run.test_set_id.clone(),
        };
        issuing
            .call_authority(company, target, request)
            .await
            .map_err(|e| ApiError::Internal(e.to_string()))
    }
    .await;
    match sent {
        Ok(AuthorityResponse::Upload(u)) if u.zip_key.is_some() => entry.zip_key = u.zip_key,
        Ok(other) => {
            entry.estado = "error".into();
            entry.errores = other
                .into_transmission()
                .map(|t| t.errors)
                .unwrap_or_default();
        }
        Err(e) => {
            entry.estado = "error".into();
            entry.errores = vec![e.to_string()];
        }
    }
    run.documentos.push(entry);
    save(issuing, run).await;
}

/// Polls each batch until it has a verdict (bounded: 60 polls a batch).
async fn follow(issuing: &Arc<Issuing>, run: &mut TestSetRun) {
    let pause = issuing
        .settings
        .resilience
        .scaled(2.0)
        .max(Duration::from_millis(50));
    for _ in 0..60 {
        let mut waiting = false;
        let company = run.id_empresa;
        for d in run.documentos.iter_mut() {
            let (Some(zip_key), true) = (d.zip_key.clone(), d.estado == "enviado") else {
                continue;
            };
            let Ok(target) = issuing.target(company, Environment::Test).await else {
                continue;
            };
            match issuing
                .call_authority(company, target, AuthorityRequest::GetStatusZip { zip_key })
                .await
            {
                Ok(AuthorityResponse::StatusZip(StatusZip::Done(verdicts))) => {
                    let ok = !verdicts.is_empty() && verdicts.iter().all(|t| t.accepted());
                    d.estado = if ok { "aceptado" } else { "rechazado" }.into();
                    d.errores = verdicts.iter().flat_map(|t| t.errors.clone()).collect();
                    record_verdict(issuing, d.id, ok, &verdicts).await;
                }
                _ => waiting = true,
            }
        }
        save(issuing, run).await;
        if !waiting {
            return;
        }
        actix_web::rt::time::sleep(pause).await;
    }
}

/// The document's own state follows the authority's verdict.
async fn record_verdict(
    issuing: &Issuing,
    id: u64,
    ok: bool,
    verdicts: &[crate::authority::Transmission],
) {
    let Ok(Some(mut doc)) = issuing.store.document(id).await else {
        return;
    };
    let from = doc.state;
    doc.state = if ok { state::ACCEPTED } else { state::REJECTED };
    doc.transmission = verdicts.first().and_then(|t| serde_json::to_value(t).ok());
    doc.updated_at = Utc::now();
    let entry = HistoryEntry {
        at: Utc::now(),
        actor: "test_set".into(),
        event: if ok { "accepted" } else { "rejected" }.into(),
        from_state: Some(from),
        to_state: Some(doc.state),
        data: doc.transmission.clone().unwrap_or_default(),
    };
    let _ = issuing.store.update_document(doc, entry).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(facturas: u32, notas_credito: u32, notas_debito: u32) -> TestSetPlan {
        TestSetPlan {
            facturas,
            notas_credito,
            notas_debito,
        }
    }

    #[test]
    fn plan_total_is_checked_without_overflow() {
        assert_eq!(TestSetPlan::default().checked_total().ok(), Some(10));
        assert_eq!(plan(1, 0, 0).checked_total().ok(), Some(1));
        assert_eq!(plan(98, 1, 1).checked_total().ok(), Some(100));
        for bad in [
            plan(0, 0, 0),
            plan(0, 1, 0),
            plan(101, 0, 0),
            // In u32 these wrap to 0 and 1, or overflow.
            plan(u32::MAX, 1, 0),
            plan(u32::MAX, 2, 0),
            plan(1, u32::MAX, u32::MAX),
            plan(0, u32::MAX, 1),
        ] {
            assert!(bad.checked_total().is_err(), "{bad:?}");
        }
    }
}
