//! `GET /admin/reconciliacion`: the reconciliation with the authority's
//! report (its findings and last pass); `POST /admin/reconciliacion`: a
//! pass now ([`crate::operator::reconciliation`]).

use actix_web::{get, post, web, HttpResponse};

use crate::http::envelope;
use crate::http::error::ApiResult;
use crate::http::state::AppState;
use crate::operator::reconciliation::{Pass, Report};

#[utoipa::path(get, path = "/admin/reconciliacion", operation_id = "getReconciliationReport", tag = "admin", security(("admin_token" = [])),
    description = "What the reconciliation with the authority found: the newest findings (oldest first; `aceptado_sin_respuesta`: a document queued here the authority had accepted, now recorded as accepted; `desconocido`, `rechazado`: a document accepted here the authority does not know, or rejected), each with its time, company, environment, document, the state the service held and the authority's answer, and the last pass's summary. Each finding is also sent once as `operador:reconciliacion`.",
    responses((status = 200, description = "the report", body = inline(envelope::Envelope<Report>))))]
#[get("/reconciliacion")]
pub async fn report(state: web::Data<AppState>) -> ApiResult<HttpResponse> {
    let report = state.reconciliation.report().await?;
    Ok(envelope::ok("Conciliación con la autoridad", report))
}

#[utoipa::path(post, path = "/admin/reconciliacion", operation_id = "runReconciliation", tag = "admin", security(("admin_token" = [])),
    description = "Runs a reconciliation pass now (after the one running, if any) and answers its summary; its findings are in `GET /admin/reconciliacion`.",
    responses((status = 200, description = "the pass's summary", body = inline(envelope::Envelope<Pass>))))]
#[post("/reconciliacion")]
pub async fn run(state: web::Data<AppState>) -> ApiResult<HttpResponse> {
    let pass = state.reconciliation.run().await?;
    Ok(envelope::ok("Conciliación realizada", pass))
}
