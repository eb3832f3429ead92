//! `POST /admin/companies/{id}/set-pruebas` starts the authority's enablement
//! test set; `GET` the same path reports its progress.

use actix_web::{get, post, web, HttpResponse};

use super::test_set_run::{self, TestSetPlan, TestSetRun};
use crate::http::envelope;
use crate::http::error::{ApiError, ApiResult};
use crate::http::json::{parse, RawBody};
use crate::http::state::AppState;

#[utoipa::path(post, path = "/admin/companies/{id}/set-pruebas", operation_id = "startTestSet", tag = "admin", security(("admin_token" = [])),
    params(("id" = u64, Path, description = "id_empresa")), request_body = TestSetPlan,
    responses((status = 202, description = "started; poll GET for progress", body = inline(envelope::Envelope<TestSetRun>)),
              (status = 409, description = "a run is in progress", body = crate::http::error::ErrorEnvelope),
              (status = 422, description = "no software or test-set id", body = crate::http::error::ErrorEnvelope)))]
#[post("/companies/{id}/set-pruebas")]
pub async fn start(
    state: web::Data<AppState>,
    id: web::Path<u64>,
    body: RawBody,
) -> ApiResult<HttpResponse> {
    let id = id.into_inner();
    company_exists(&state, id).await?;
    // No body = the default plan; a body must be a valid plan.
    let plan = if body.0.iter().all(u8::is_ascii_whitespace) {
        TestSetPlan::default()
    } else {
        parse::<TestSetPlan>(&body.0)?
    };
    let run = test_set_run::start(&state.issuing, id, plan).await?;
    Ok(envelope::with_status(
        actix_web::http::StatusCode::ACCEPTED,
        "Set de pruebas iniciado",
        run,
    ))
}

/// Starts a company's test set run with `plan` (the admin API's and the
/// console's).
pub async fn start_run(state: &AppState, id: u64, plan: TestSetPlan) -> ApiResult<TestSetRun> {
    company_exists(state, id).await?;
    test_set_run::start(&state.issuing, id, plan).await
}

async fn company_exists(state: &AppState, id: u64) -> ApiResult<()> {
    state
        .store
        .company(id)
        .await?
        .ok_or_else(|| ApiError::NotFound("company".into()))?;
    Ok(())
}

#[utoipa::path(get, path = "/admin/companies/{id}/set-pruebas", operation_id = "getTestSetProgress", tag = "admin", security(("admin_token" = [])),
    params(("id" = u64, Path, description = "id_empresa")),
    responses((status = 200, description = "progress of the last run", body = inline(envelope::Envelope<TestSetRun>)),
              (status = 404, description = "no run yet", body = crate::http::error::ErrorEnvelope)))]
#[get("/companies/{id}/set-pruebas")]
pub async fn progress(state: web::Data<AppState>, id: web::Path<u64>) -> ApiResult<HttpResponse> {
    let run = test_set_run::load(&state.issuing, id.into_inner())
        .await?
        .ok_or_else(|| ApiError::NotFound("test set run".into()))?;
    Ok(envelope::ok("Set de pruebas", run))
}
