//! `POST /facturacion`: one endpoint for all ten document types (spec 4.1).

use actix_web::http::header::ContentType;
use actix_web::http::StatusCode;
use actix_web::{post, web, HttpResponse, ResponseError};

use super::responses::{summary, IssuedResponse, QueuedEnvelope, QueuedResponse};
use crate::api::invoice_request::buyer;
use crate::api::invoice_request::mapping::{document_kind, to_document};
use crate::api::invoice_request::request::FacturacionRequest;
use crate::http::auth::AuthContext;
use crate::http::envelope;
use crate::http::error::{ApiError, ApiResult, ErrorEnvelope};
use crate::http::json::{parse_canonical, RawBody};
use crate::http::state::AppState;
use crate::issuing::issue::{submit, Issued};
use crate::issuing::reference::refuse;

/// The answer for an issued document (also used by `reenviar`).
pub fn issued_response<T>(issued: Issued<T>) -> HttpResponse {
    match issued {
        Issued::Done {
            doc,
            xml,
            transmission,
            ..
        } => {
            let message = match &transmission {
                None => "Documento generado (no transmitido)",
                Some(t) if t.accepted() => "Documento emitido y aceptado",
                Some(t) if t.retryable => "Documento emitido; la transmisión se reintentará",
                Some(_) => "Documento emitido y rechazado por tax",
            };
            let answer = IssuedResponse {
                documento: summary(&doc, true),
                xml,
                cufe: doc.code.clone().unwrap_or_default(),
                cufe_scheme: doc.code_scheme.clone().unwrap_or_default(),
                qr_url: doc.qr_url.clone().unwrap_or_default(),
                transmission: transmission.and_then(|t| serde_json::to_value(*t).ok()),
                id_estado_documento: doc.state,
                estado: emisor_store::state::name(doc.state),
            };
            // What `envelope::ok(message, answer)` answers, written directly.
            match answer.envelope_json(message) {
                Ok(body) => HttpResponse::Ok()
                    .insert_header(ContentType::json())
                    .body(body),
                Err(e) => ApiError::Internal(format!("writing the answer: {e}")).error_response(),
            }
        }
        Issued::Queued { doc, job_id, .. } => {
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
                        crate::http::BASE,
                        doc.id,
                        doc.company_id
                    ),
                },
            })
        }
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
    body: RawBody,
) -> ApiResult<HttpResponse> {
    let (mut req, mut canonical): (FacturacionRequest, _) = parse_canonical(&body.0)?;
    drop(body);
    let issuing = state.issuing.clone();
    let kind = document_kind(&req)?;
    if req.customer.completar_adquiriente {
        // Asked only of a request valid in every other respect.
        buyer::refuse_on_pos(kind, &buyer::UNIFIED)?;
        if let Err(refused) = to_document(&req) {
            return Err(refuse(&issuing, ctx.owner(), refused).await.into());
        }
        buyer::complete(&state, &ctx, &mut req.customer, &buyer::UNIFIED).await?;
        let mut stored: serde_json::Value = serde_json::from_slice(&canonical)
            .map_err(|e| ApiError::Internal(format!("reading the stored request: {e}")))?;
        buyer::write_into(&mut stored, &buyer::UNIFIED, &req.customer);
        canonical = serde_json::to_vec(&stored)
            .map_err(|e| ApiError::Internal(format!("writing the stored request: {e}")))?;
    }
    // A note's original is looked up by issuing, and a refusal of the
    // request completed there with its problem, if any.
    let mapped = match to_document(&req) {
        Ok(mapped) => mapped.into_request(),
        Err(refused) => return Err(refuse(&issuing, ctx.owner(), refused).await.into()),
    };
    let issued = submit(&issuing, ctx.caller(), mapped, canonical).await?;
    Ok(issued_response(issued))
}
