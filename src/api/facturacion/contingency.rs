//! `POST /facturacion/contingencia/enviar`: queues pending contingency
//! documents (T03, T04 in Borrador) for background transmission and emits
//! `contingencia:batch`.

use actix_web::{post, web, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::http::auth::AuthContext;
use crate::http::envelope;
use crate::http::error::ApiResult;
use crate::http::json::Json;
use crate::http::state::AppState;
use crate::issuing::contingency;
use crate::issuing::events::{self, CONTINGENCY_BATCH};

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
              (status = 403, description = "another company", body = crate::http::error::ErrorEnvelope)))]
#[post("/facturacion/contingencia/enviar")]
pub async fn send_contingency(
    state: web::Data<AppState>,
    ctx: AuthContext,
    body: Json<ContingencyRequest>,
) -> ApiResult<HttpResponse> {
    let req = body.0;
    ctx.ensure_company(req.id_empresa)?;
    let ids = req.documento_ids.unwrap_or_default();
    let outcome = contingency::queue(&state.issuing, ctx.owner(), &ids).await?;
    let errores: Vec<_> = outcome
        .refused
        .iter()
        .map(|(id, why)| serde_json::json!({ "id": id, "error": why.message() }))
        .collect();
    let documentos: Vec<_> = outcome
        .queued
        .iter()
        .map(|(doc, job_id)| QueuedDocument {
            id: doc.id,
            prefijo: doc.prefix.clone(),
            numero: doc.number.to_string(),
            job_id: job_id.to_string(),
        })
        .collect();
    let batch = ContingencyBatch {
        total_pendientes: outcome.pending,
        total_encolados: documentos.len(),
        total_errores: errores.len(),
        documentos,
        errores,
    };
    events::to_company(
        &state.issuing,
        ctx.owner(),
        CONTINGENCY_BATCH,
        serde_json::to_value(&batch).unwrap_or_default(),
    )
    .await;
    Ok(envelope::ok(
        format!(
            "{} documentos de contingencia encolados",
            batch.total_encolados
        ),
        batch,
    ))
}
