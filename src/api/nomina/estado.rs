//! `GET /nomina/estado/{trackId}`: the payroll of the key's company with
//! that tracking key (its CUNE), after asking the authority for its status
//! (spec 3.3, 4.5): a verdict the service had not heard of yet (a lost
//! answer, a send still being retried) is recorded now.

use actix_web::{get, web, HttpResponse};
use emisor_store::state as doc_state;

use super::responses::{record, PayrollRecord};
use crate::http::auth::AuthContext;
use crate::http::envelope;
use crate::http::error::{ApiError, ApiResult, ErrorEnvelope};
use crate::http::state::AppState;
use crate::issuing::payroll::{by_code, refresh_status};

#[utoipa::path(get, path = "/v1/api/nomina/estado/{trackId}", operation_id = "getPayrollStatus", tag = "nomina",
    security(("api_key" = [])), params(("trackId" = String, Path, description = "the payroll's trackId (its CUNE)")),
    responses((status = 200, description = "the payroll record with its refreshed estado", body = inline(envelope::Envelope<PayrollRecord>)),
              (status = 404, description = "no payroll of this company has that trackId", body = ErrorEnvelope)))]
#[get("/nomina/estado/{trackId}")]
pub async fn estado(
    state: web::Data<AppState>,
    ctx: AuthContext,
    track_id: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let track_id = track_id.into_inner();
    let mut doc = by_code(
        &state.issuing,
        ctx.company_id,
        ctx.environment,
        track_id.trim(),
    )
    .await?
    .ok_or_else(|| ApiError::NotFound(format!("payroll with trackId {track_id}")))?;
    // A draft was never sent; an accepted or rejected one is final.
    if matches!(
        doc.state,
        doc_state::QUEUED | doc_state::WAITING_AUTHORITY | doc_state::DEAD_LETTER
    ) {
        doc = refresh_status(&state.issuing, doc)
            .await
            .map_err(|e| ApiError::Internal(e.to_string()))?;
    }
    Ok(envelope::ok("Estado de la nómina", record(&doc)))
}
