//! `GET /documentos-soporte`: the company's support documents and their
//! adjustment notes, newest first, through the document index (filters of
//! decisions.md §4: `fecha_desde`, `fecha_hasta`, `estado`, `proveedor`).

use actix_web::{get, web, HttpResponse};
use emisor_store::Family;
use serde::Deserialize;
use utoipa::IntoParams;

use crate::http::auth::AuthContext;
use crate::http::documents::ListItem;
use crate::http::envelope;
use crate::http::error::{ApiResult, ErrorEnvelope};
use crate::http::query::{ListPage, ListParams, Query};
use crate::http::state::AppState;

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SupportFilters {
    /// The vendor's identification number.
    pub proveedor: Option<String>,
}

#[utoipa::path(get, path = "/v1/api/documentos-soporte", operation_id = "listSupportDocuments", tag = "documentos-soporte",
    security(("api_key" = [])),
    params(ListParams, SupportFilters),
    responses((status = 200, description = "a page of support documents", body = inline(envelope::Envelope<ListPage<ListItem>>)),
              (status = 422, description = "a bad filter or paging value", body = ErrorEnvelope)))]
#[get("/documentos-soporte")]
pub async fn list(
    state: web::Data<AppState>,
    ctx: AuthContext,
    params: Query<ListParams>,
    filters: Query<SupportFilters>,
) -> ApiResult<HttpResponse> {
    let keys = filters
        .proveedor
        .as_deref()
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| vec![("proveedor".to_string(), p.to_string())])
        .unwrap_or_default();
    let q = params.query(&ctx, Family::Support, keys)?;
    let page = state.store.list_documents(q).await?;
    Ok(envelope::ok(
        "Documentos soporte",
        ListPage::of(page, ListItem::from),
    ))
}
