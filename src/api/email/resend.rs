//! `POST /email/reenviar/{id_correo}`: a failed email is queued again (same
//! Message-ID, fresh retries); a sent one is sent again as a new email.
//! One still queued is a 409. The body is optional; one that is given must
//! be a JSON object (`{}`, or `{id_empresa}`), as on every endpoint.

use actix_web::http::StatusCode;
use actix_web::{post, web, HttpResponse};

use super::model::{EmailLogResponse, ResendRequest};
use crate::http::auth::AuthContext;
use crate::http::envelope;
use crate::http::error::{ApiError, ApiResult};
use crate::http::json::{parse, RawBody};
use crate::http::state::AppState;
use crate::issuing::mail;

#[utoipa::path(post, path = "/v1/api/email/reenviar/{id_correo}", operation_id = "resendEmail", tag = "email",
    security(("api_key" = [])),
    params(("id_correo" = u64, Path, description = "email log id")),
    request_body(content = ResendRequest, description = "optional"),
    responses((status = 202, description = "queued again: the log entry", body = inline(envelope::Envelope<EmailLogResponse>)),
              (status = 400, description = "MALFORMED_JSON: a body that is not a JSON object", body = crate::http::error::ErrorEnvelope),
              (status = 404, description = "no such email", body = crate::http::error::ErrorEnvelope),
              (status = 409, description = "INVALID_STATE: the email is still queued", body = crate::http::error::ErrorEnvelope)))]
#[post("/email/reenviar/{id_correo}")]
pub async fn resend(
    state: web::Data<AppState>,
    ctx: AuthContext,
    id: web::Path<u64>,
    body: RawBody,
) -> ApiResult<HttpResponse> {
    let req: ResendRequest = if body.0.iter().all(u8::is_ascii_whitespace) {
        ResendRequest::default()
    } else {
        parse(&body.0)?
    };
    if let Some(company) = req.id_empresa {
        ctx.ensure_company(company)?;
    }
    let id = id.into_inner();
    let not_found = || ApiError::NotFound(format!("email {id}"));
    let log = state
        .store
        .email_log(id)
        .await?
        .filter(|l| l.company_id == ctx.company_id)
        .ok_or_else(not_found)?;
    // An email of another environment's document is as unknown as its document.
    match super::company_document(&state, &ctx, log.document_id).await {
        Err(ApiError::NotFound(_)) => return Err(not_found()),
        other => other?,
    };
    let log = mail::resend(&state.issuing, log).await?;
    Ok(envelope::with_status(
        StatusCode::ACCEPTED,
        "Correo en cola",
        EmailLogResponse::from(log),
    ))
}
