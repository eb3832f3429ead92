//! `POST /email/documento/{id}`: queues an email of an accepted document
//! (202 with the log entry). The first attempt runs in the background: an
//! SMTP server that is down never slows this answer.

use actix_web::http::StatusCode;
use actix_web::{post, web, HttpResponse};

use super::model::{EmailLogResponse, SendRequest};
use crate::http::auth::AuthContext;
use crate::http::envelope;
use crate::http::error::{ApiError, ApiResult};
use crate::http::json::{parse, RawBody};
use crate::http::state::AppState;
use crate::issuing::mail::queue_document_mail;

#[utoipa::path(post, path = "/v1/api/email/documento/{id}", operation_id = "sendDocumentEmail", tag = "email",
    security(("api_key" = [])),
    params(("id" = u64, Path, description = "document id")),
    request_body(content = SendRequest, description = "optional; empty = the document's customer"),
    responses((status = 202, description = "queued: the log entry", body = inline(envelope::Envelope<EmailLogResponse>)),
              (status = 404, description = "no such document", body = crate::http::error::ErrorEnvelope),
              (status = 409, description = "INVALID_STATE: the document is not accepted", body = crate::http::error::ErrorEnvelope),
              (status = 422, description = "a bad address, or no address to send to", body = crate::http::error::ErrorEnvelope)))]
#[post("/email/documento/{id}")]
pub async fn send(
    state: web::Data<AppState>,
    ctx: AuthContext,
    id: web::Path<u64>,
    body: RawBody,
) -> ApiResult<HttpResponse> {
    let req: SendRequest = if body.0.iter().all(u8::is_ascii_whitespace) {
        SendRequest::default()
    } else {
        parse(&body.0)?
    };
    if let Some(company) = req.id_empresa {
        ctx.ensure_company(company)?;
    }
    let doc = super::company_document(&state, &ctx, id.into_inner()).await?;
    let to = match req.to {
        Some(to) => to,
        None => {
            let customer = match doc.customer_id {
                Some(c) => state.store.customer(doc.company_id, c).await?,
                None => None,
            };
            match customer.map(|c| c.email).filter(|e| !e.trim().is_empty()) {
                Some(email) => vec![email],
                None => {
                    return Err(ApiError::validation(
                        "to",
                        "the document's customer has no email address: give `to`",
                    ))
                }
            }
        }
    };
    let log = queue_document_mail(&state.issuing, &doc, to, req.cc.unwrap_or_default()).await?;
    Ok(envelope::with_status(
        StatusCode::ACCEPTED,
        "Correo en cola",
        EmailLogResponse::from(log),
    ))
}
