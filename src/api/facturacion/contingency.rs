//! `POST /facturacion/contingencia/enviar`: queues pending contingency
//! documents (T03, T04 in Borrador) for background transmission and emits
//! `contingencia:batch`.

use actix_web::{post, web, HttpResponse};
use chrono::Utc;
use emisor_store::{state, HistoryEntry};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::api::auth::AuthContext;
use crate::api::envelope;
use crate::api::error::ApiResult;
use crate::api::json::Json;
use crate::issuing::events::{self, CONTINGENCY_BATCH};
use crate::issuing::transmit::new_job;
use crate::state::AppState;

/// Contingency document types (spec 2.2): 7 T03, 8 T04.
const CONTINGENCY_TYPES: [u8; 2] = [7, 8];

#[derive(Debug, Deserialize, ToSchema)]
pub struct ContingencyRequest {
    pub id_empresa: u64,
    /// Documents to send; empty, null or absent = every pending T03/T04.
    #[serde(default)]
    pub documento_ids: Option<Vec<u64>>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct QueuedDocument {
    pub id: u64,
    pub prefijo: String,
    pub numero: String,
    pub job_id: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ContingencyBatch {
    pub total_pendientes: usize,
    pub total_encolados: usize,
    pub total_errores: usize,
    pub documentos: Vec<QueuedDocument>,
    /// Why each refused id was refused.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errores: Vec<serde_json::Value>,
}

#[utoipa::path(post, path = "/v1/api/facturacion/contingencia/enviar", operation_id = "sendContingencyBatch", tag = "facturacion",
    security(("api_key" = [])), request_body = ContingencyRequest,
    responses((status = 200, description = "queued", body = inline(envelope::Envelope<ContingencyBatch>)),
              (status = 403, description = "another company", body = crate::api::error::ErrorEnvelope)))]
#[post("/facturacion/contingencia/enviar")]
pub async fn send_contingency(
    state: web::Data<AppState>,
    ctx: AuthContext,
    body: Json<ContingencyRequest>,
) -> ApiResult<HttpResponse> {
    let req = body.0;
    ctx.ensure_company(req.id_empresa)?;
    let store = state.store.clone();
    let pending: Vec<_> = store
        .documents_in_states(Some(ctx.company_id), &[state::DRAFT])?
        .into_iter()
        .filter(|d| CONTINGENCY_TYPES.contains(&d.document_type) && !d.pending_build)
        .collect();
    let mut errores = Vec::new();
    let ids = req.documento_ids.unwrap_or_default();
    let chosen: Vec<_> = if ids.is_empty() {
        pending.clone()
    } else {
        ids.iter()
            .filter_map(|id| match pending.iter().find(|d| d.id == *id) {
                Some(d) => Some(d.clone()),
                None => {
                    errores.push(serde_json::json!({
                        "id": id, "error": "not a pending contingency document of this company"
                    }));
                    None
                }
            })
            .collect()
    };
    let mut documentos = Vec::new();
    for mut doc in chosen {
        if store.document_files(doc.id)?.is_none() {
            errores.push(serde_json::json!({ "id": doc.id, "error": "document has no files" }));
            continue;
        }
        doc.state = state::QUEUED;
        doc.updated_at = Utc::now();
        // The job first: a crash before the state change leaves a job for
        // a draft, which the job runner drops.
        let job = store.put_job(new_job(&doc))?;
        store.update_document(
            &doc,
            HistoryEntry {
                at: Utc::now(),
                actor: "api".into(),
                event: "contingency_queued".into(),
                from_state: Some(state::DRAFT),
                to_state: Some(state::QUEUED),
                data: serde_json::Value::Null,
            },
        )?;
        state.issuing.schedule(&job);
        documentos.push(QueuedDocument {
            id: doc.id,
            prefijo: doc.prefix.clone(),
            numero: doc.number.to_string(),
            job_id: job.id.to_string(),
        });
    }
    let batch = ContingencyBatch {
        total_pendientes: pending.len(),
        total_encolados: documentos.len(),
        total_errores: errores.len(),
        documentos,
        errores,
    };
    events::to_company(
        &state.issuing,
        ctx.company_id,
        CONTINGENCY_BATCH,
        serde_json::to_value(&batch).unwrap_or_default(),
    );
    Ok(envelope::ok(
        format!(
            "{} documentos de contingencia encolados",
            batch.total_encolados
        ),
        batch,
    ))
}
