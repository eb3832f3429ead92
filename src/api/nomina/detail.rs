//! `GET /nomina/{id}` (everything sent, plus totals, codes and state),
//! `GET /nomina/{id}/xml` and `/zip` (spec 4.5).

use actix_web::{get, web, HttpResponse};
use emisor_store::DocumentRecord;
use serde_json::Value;

use super::responses::{record, PayrollRecord, Totales};
use super::translator::translate;
use crate::engine::payroll::totals::totals;
use crate::http::auth::AuthContext;
use crate::http::envelope;
use crate::http::error::{ApiError, ApiResult, ErrorEnvelope};
use crate::http::state::AppState;
use crate::issuing::kind::StoredKind;
use crate::issuing::stored;

/// A payroll of the key's company (and environment), or 404.
pub async fn owned_payroll(
    state: &AppState,
    ctx: &AuthContext,
    id: u64,
) -> ApiResult<DocumentRecord> {
    state
        .store
        .document(id)
        .await?
        .filter(|d| ctx.owns(d) && StoredKind::of(d).is_some_and(StoredKind::is_payroll))
        .ok_or_else(|| ApiError::NotFound(format!("payroll {id}")))
}

#[utoipa::path(get, path = "/v1/api/nomina/{id}", operation_id = "getPayroll", tag = "nomina",
    security(("api_key" = [])), params(("id" = u64, Path, description = "payroll id")),
    responses((status = 200, description = "the request as sent, with totales, codes, state and history", body = inline(envelope::Envelope<PayrollRecord>)),
              (status = 404, description = "no such payroll", body = ErrorEnvelope)))]
#[get("/nomina/{id}")]
pub async fn detail(
    state: web::Data<AppState>,
    ctx: AuthContext,
    id: web::Path<u64>,
) -> ApiResult<HttpResponse> {
    let doc = owned_payroll(&state, &ctx, id.into_inner()).await?;
    let raw = state
        .store
        .document_request(doc.id)
        .await?
        .ok_or_else(|| ApiError::Internal(format!("request of payroll {}", doc.id)))?;
    let mut out: Value = serde_json::from_slice(stored::caller(&raw))
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    let computed = translate(stored::caller(&raw))
        .map(|r| Totales::from(totals(&r.document)))
        .map_err(|e| ApiError::Internal(format!("stored payroll request: {e}")))?;
    let history = state.store.history(doc.id).await?;
    let summary =
        serde_json::to_value(record(&doc)).map_err(|e| ApiError::Internal(e.to_string()))?;
    if let (Some(o), Value::Object(s)) = (out.as_object_mut(), summary) {
        // The key decides company and environment (spec 4.5 rule 1).
        o.remove("id_empresa");
        o.extend(s);
        o.insert(
            "totales".into(),
            serde_json::to_value(computed).unwrap_or_default(),
        );
        o.insert(
            "historial".into(),
            serde_json::to_value(&history).unwrap_or_default(),
        );
    }
    Ok(envelope::ok("Nómina", out))
}

fn download(
    content_type: &str,
    disposition: &str,
    name: &str,
    body: impl actix_web::body::MessageBody + 'static,
) -> HttpResponse {
    HttpResponse::Ok()
        .content_type(content_type)
        .insert_header((
            "Content-Disposition",
            format!("{disposition}; filename=\"{name}\""),
        ))
        .body(body)
}

async fn files(
    state: &AppState,
    ctx: &AuthContext,
    id: u64,
) -> ApiResult<emisor_store::DocumentFiles> {
    owned_payroll(state, ctx, id).await?;
    state
        .store
        .document_files(id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("files of payroll {id}")))
}

#[utoipa::path(get, path = "/v1/api/nomina/{id}/xml", operation_id = "getPayrollXml", tag = "nomina",
    security(("api_key" = [])), params(("id" = u64, Path, description = "payroll id")),
    responses((status = 200, description = "signed XML", content_type = "text/xml"),
              (status = 404, description = "no such payroll", body = ErrorEnvelope)))]
#[get("/nomina/{id}/xml")]
pub async fn xml(
    state: web::Data<AppState>,
    ctx: AuthContext,
    id: web::Path<u64>,
) -> ApiResult<HttpResponse> {
    let f = files(&state, &ctx, id.into_inner()).await?;
    Ok(download(
        "text/xml; charset=utf-8",
        "inline",
        &f.xml_name,
        f.xml,
    ))
}

#[utoipa::path(get, path = "/v1/api/nomina/{id}/zip", operation_id = "getPayrollZip", tag = "nomina",
    security(("api_key" = [])), params(("id" = u64, Path, description = "payroll id")),
    responses((status = 200, description = "the ZIP sent to the authority", content_type = "application/zip"),
              (status = 404, description = "no such payroll", body = ErrorEnvelope)))]
#[get("/nomina/{id}/zip")]
pub async fn zip(
    state: web::Data<AppState>,
    ctx: AuthContext,
    id: web::Path<u64>,
) -> ApiResult<HttpResponse> {
    let f = files(&state, &ctx, id.into_inner()).await?;
    let name = f.zip_name.clone();
    let zip = crate::issuing::files::into_zip(f)?;
    Ok(download("application/zip", "attachment", &name, zip))
}

#[utoipa::path(get, path = "/v1/api/nomina/{id}/pdf", operation_id = "getPayrollPdf", tag = "nomina",
    security(("api_key" = [])), params(("id" = u64, Path, description = "payroll id")),
    responses((status = 200, description = "the payroll's graphical representation (A4): employer, employee, period, earnings, deductions, totals, CUNE and QR code", content_type = "application/pdf"),
              (status = 404, description = "no such payroll", body = ErrorEnvelope)))]
#[get("/nomina/{id}/pdf")]
pub async fn pdf(
    state: web::Data<AppState>,
    ctx: AuthContext,
    id: web::Path<u64>,
) -> ApiResult<HttpResponse> {
    let id = id.into_inner();
    owned_payroll(&state, &ctx, id).await?;
    let pdf = crate::issuing::files::rendered_pdf(
        &state.issuing,
        ctx.owner(),
        id,
        Some(crate::issuing::files::Layout::A4),
    )
    .await?;
    Ok(download("application/pdf", "inline", &pdf.name, pdf.bytes))
}
