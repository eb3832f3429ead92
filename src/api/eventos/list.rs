//! `GET /eventos/documentos` (the caller's received invoices, newest
//! first, paged as decisions.md §4), `GET /eventos/documentos/{cufe}` (one
//! with its events) and the signed XML of one of its events.

use actix_web::{get, web, HttpResponse};

use super::model::invoice_view;
use crate::http::auth::AuthContext;
use crate::http::envelope;
use crate::http::error::{ApiError, ApiResult};
use crate::http::query::{paging, PageQuery, Query};
use crate::http::state::AppState;
use crate::issuing::invoice_events::title::{find, lookup, normalize_cufe};

#[utoipa::path(get, path = "/v1/api/eventos/documentos", operation_id = "listReceivedInvoices", tag = "eventos-recibidos",
    security(("api_key" = [])), params(PageQuery),
    responses((status = 200, description = "data: {items, page, limit, total}"),
              (status = 422, description = "bad page or limit", body = crate::http::error::ErrorEnvelope)))]
#[get("/eventos/documentos")]
pub async fn list(
    state: web::Data<AppState>,
    ctx: AuthContext,
    query: Query<PageQuery>,
) -> ApiResult<HttpResponse> {
    let (page, limit) = paging(query.page, query.limit)?;
    let p = state
        .store
        .received_page(ctx.company_id, ctx.environment, page, limit)
        .await?;
    let items: Vec<_> = p.items.iter().map(|t| invoice_view(t, true)).collect();
    Ok(envelope::ok(
        "Facturas recibidas",
        serde_json::json!({ "items": items, "page": p.page, "limit": p.limit, "total": p.total }),
    ))
}

#[utoipa::path(get, path = "/v1/api/eventos/documentos/{cufe}", operation_id = "getReceivedInvoice", tag = "eventos-recibidos",
    security(("api_key" = [])), params(("cufe" = String, Path, description = "CUFE of the invoice")),
    responses((status = 200, description = "the invoice with its events"),
              (status = 404, description = "unknown CUFE", body = crate::http::error::ErrorEnvelope)))]
#[get("/eventos/documentos/{cufe}")]
pub async fn detail(
    state: web::Data<AppState>,
    ctx: AuthContext,
    cufe: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let cufe = normalize_cufe(&cufe)?;
    let t = find(&state.issuing, &ctx.caller(), &ctx.nit, &cufe)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("invoice with CUFE {cufe}")))?;
    Ok(envelope::ok(
        "Factura y sus eventos",
        invoice_view(&t, true),
    ))
}

#[utoipa::path(get, path = "/v1/api/eventos/documentos/{cufe}/eventos/{id}/xml", operation_id = "getEventXml", tag = "eventos-recibidos",
    security(("api_key" = [])),
    params(("cufe" = String, Path, description = "CUFE of the invoice"), ("id" = u64, Path, description = "id_evento")),
    responses((status = 200, description = "the signed ApplicationResponse (text/xml)"),
              (status = 404, description = "unknown invoice or event", body = crate::http::error::ErrorEnvelope)))]
#[get("/eventos/documentos/{cufe}/eventos/{id}/xml")]
pub async fn event_xml(
    state: web::Data<AppState>,
    ctx: AuthContext,
    path: web::Path<(String, u64)>,
) -> ApiResult<HttpResponse> {
    let (cufe, id) = path.into_inner();
    let cufe = normalize_cufe(&cufe)?;
    let t = lookup(&state.issuing, &ctx.caller(), &ctx.nit, &cufe)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("invoice with CUFE {cufe}")))?;
    if !t.events.iter().any(|e| e.id == id) {
        return Err(ApiError::NotFound(format!("event {id}")));
    }
    let files = state
        .store
        .event_files(id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("event {id}")))?;
    Ok(HttpResponse::Ok()
        .content_type("text/xml; charset=utf-8")
        .body(files.xml))
}
