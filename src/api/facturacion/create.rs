//! `POST /facturacion`: one endpoint for all ten document types (spec 4.1).

use std::time::Instant;

use actix_web::http::StatusCode;
use actix_web::{post, web, HttpResponse};
use emisor_actors::idempotency::{Claim, Duplicate};

use super::mapping::{document_kind, to_document};
use super::request::FacturacionRequest;
use super::responses::{summary, IssuedResponse, QueuedEnvelope, QueuedResponse};
use crate::api::auth::AuthContext;
use crate::api::envelope;
use crate::api::error::{ApiError, ApiResult, ErrorEnvelope};
use crate::api::json::{parse_value, Json};
use crate::issuing::duplicates::payload_hash;
use crate::issuing::issue::{issue, referenced_document, Issued};
use crate::state::AppState;

/// The answer for an issued document (also used by `reenviar`).
pub fn issued_response(issued: Issued) -> HttpResponse {
    match issued {
        Issued::Done {
            doc,
            xml,
            transmission,
        } => {
            let message = match &transmission {
                None => "Documento generado (no transmitido)",
                Some(t) if t.accepted() => "Documento emitido y aceptado",
                Some(t) if t.retryable => "Documento emitido; la transmisión se reintentará",
                Some(_) => "Documento emitido y rechazado por tax",
            };
            envelope::ok(
                message,
                IssuedResponse {
                    documento: summary(&doc, true),
                    xml,
                    cufe: doc.code.clone().unwrap_or_default(),
                    cufe_scheme: doc.code_scheme.clone().unwrap_or_default(),
                    qr_url: doc.qr_url.clone().unwrap_or_default(),
                    transmission: transmission.and_then(|t| serde_json::to_value(*t).ok()),
                    id_estado_documento: doc.state,
                    estado: emisor_store::state::name(doc.state),
                },
            )
        }
        Issued::Queued { doc, job_id } => {
            HttpResponse::build(StatusCode::ACCEPTED).json(QueuedEnvelope {
                success: true,
                status: 202,
                message: "Documento en cola para transmisión".into(),
                data: QueuedResponse {
                    documento: summary(&doc, false),
                    cufe: doc.code.clone().unwrap_or_default(),
                    cufe_scheme: doc.code_scheme.clone().unwrap_or_default(),
                    qr_url: doc.qr_url.clone().unwrap_or_default(),
                    job_id: job_id.to_string(),
                    poll_url: format!(
                        "{}/facturacion/{}/status?id_empresa={}",
                        crate::api::BASE,
                        doc.id,
                        doc.company_id
                    ),
                },
            })
        }
    }
}

/// A refused claim as the API's 409. A request naming a reference is keyed
/// by it: when its payload (which includes the reference) already made a
/// document, that document exists with this reference, and the client
/// retrying with its idempotency key is told so, with the id.
fn duplicate(d: Duplicate, has_reference: bool) -> ApiError {
    match d {
        Duplicate::Payload {
            document_id: Some(id),
        } if has_reference => ApiError::Conflict {
            code: "DUPLICATE_REFERENCE",
            message: format!("a document with this referencia_externa already exists (id {id})"),
            data: Some(serde_json::json!({ "id": id })),
        },
        Duplicate::InProgress => ApiError::Conflict {
            code: "DUPLICATE_IN_PROGRESS",
            message: "another request with this referencia_externa is being processed".into(),
            data: None,
        },
        Duplicate::Payload { document_id } => ApiError::Conflict {
            code: "DUPLICATE_PAYLOAD",
            message: "an identical request was sent within the duplicate window".into(),
            data: document_id.map(|id| serde_json::json!({ "id": id })),
        },
    }
}

#[utoipa::path(post, path = "/v1/api/facturacion", operation_id = "issueDocument", tag = "facturacion",
    security(("api_key" = [])),
    request_body = FacturacionRequest,
    responses(
        (status = 200, description = "issued (and transmitted when asked); a rejection by the authority is a 200 with transmission.isValid false", body = inline(envelope::Envelope<IssuedResponse>)),
        (status = 202, description = "queued (async: true)", body = QueuedEnvelope),
        (status = 409, description = "DUPLICATE_REFERENCE / DUPLICATE_IN_PROGRESS / DUPLICATE_PAYLOAD", body = ErrorEnvelope),
        (status = 503, description = "production send while the authority is unavailable", body = ErrorEnvelope)))]
#[post("/facturacion")]
pub async fn create(
    state: web::Data<AppState>,
    ctx: AuthContext,
    body: Json<serde_json::Value>,
) -> ApiResult<HttpResponse> {
    let value = body.0;
    // serde_json maps are ordered, so this is the canonical JSON.
    let canonical =
        serde_json::to_vec(&value).map_err(|e| ApiError::MalformedJson(e.to_string()))?;
    let req: FacturacionRequest = parse_value(&value)?;
    let issuing = state.issuing.clone();
    document_kind(&req)?;
    let reference = referenced_document(&issuing, ctx.company_id, req.id_documento_referencia)?;
    let mapped = to_document(&req, reference.as_ref())?;

    let payload_hash = payload_hash(&canonical);
    let guard = issuing
        .idempotency
        .send(Claim {
            company: ctx.company_id,
            reference: mapped.external_reference.clone(),
            payload_hash,
            now: Instant::now(),
        })
        .await
        .map_err(|e| ApiError::Internal(format!("idempotency lock unavailable: {e}")))?
        .map_err(|d| duplicate(d, mapped.external_reference.is_some()))?;
    // The guard releases the reference on every early return (drop).
    // Issued in its own task: a client that disconnects drops this handler,
    // never a document half way (number taken, not yet built or sent).
    let task = {
        let issuing = issuing.clone();
        actix_web::rt::spawn(async move { issue(&issuing, ctx.caller(), mapped, canonical).await })
    };
    let issued = task
        .await
        .map_err(|e| ApiError::Internal(format!("issuing task failed: {e}")))??;
    let id = match &issued {
        Issued::Done { doc, .. } | Issued::Queued { doc, .. } => doc.id,
    };
    guard.complete(id, Instant::now());
    Ok(issued_response(issued))
}
