//! `POST /email/reenviar/{id_correo}`: a failed email is queued again (same
//! Message-ID, fresh retries); a sent one is sent again as a new email.
//! One still queued is a 409.

use actix_web::http::StatusCode;
use actix_web::{post, web, HttpResponse};

use super::model::EmailLogResponse;
use crate::api::auth::AuthContext;
use crate::api::envelope;
use crate::api::error::{ApiError, ApiResult};
use crate::issuing::mail;
use crate::state::AppState;

#[utoipa::path(post, path = "/v1/api/email/reenviar/{id_correo}", operation_id = "resendEmail", tag = "email",
    security(("api_key" = [])),
    params(("id_correo" = u64, Path, description = "email log id")),
    responses((status = 202, description = "queued again: the log entry", body = inline(envelope::Envelope<EmailLogResponse>)),
              (status = 404, description = "no such email", body = crate::api::error::ErrorEnvelope),
              (status = 409, description = "INVALID_STATE: the email is still queued", body = crate::api::error::ErrorEnvelope)))]
#[post("/email/reenviar/{id_correo}")]
pub async fn resend(
    state: web::Data<AppState>,
    ctx: AuthContext,
    id: web::Path<u64>,
) -> ApiResult<HttpResponse> {
    let id = id.into_inner();
    let log = state
        .store
        .email_log(id)
        .await?
        .filter(|l| l.company_id == ctx.company_id)
        .ok_or_else(|| ApiError::NotFound(format!("email {id}")))?;
    let log = mail::resend(&state.issuing, log).await?;
    Ok(envelope::with_status(
        StatusCode::ACCEPTED,
        "Correo en cola",
        EmailLogResponse::from(log),
    ))
}
