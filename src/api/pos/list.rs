//! `GET /pos`: the company's receipts and adjustment notes, newest first,
//! through the document index (filters of decisions.md §4: `fecha_desde`,
//! `fecha_hasta`, `estado`, `id_caja`, `id_cajero`); `GET /pos/:id`: one of
//! them in detail.

use actix_web::{get, web, HttpResponse};
use emisor_store::Family;
use serde::Deserialize;
use utoipa::IntoParams;

use crate::http::auth::AuthContext;
use crate::http::documents::{self, family_document, DocumentDetail, ListItem};
use crate::http::envelope;
use crate::http::error::{ApiResult, ErrorEnvelope};
use crate::http::query::{ListPage, ListParams, Query};
use crate::http::state::AppState;

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TillFilters {
    /// The register.
    pub id_caja: Option<String>,
    /// The cashier.
    pub id_cajero: Option<String>,
}

impl TillFilters {
    pub fn keys(&self) -> Vec<(String, String)> {
        [("id_caja", &self.id_caja), ("id_cajero", &self.id_cajero)]
            .into_iter()
            .filter_map(|(k, v)| {
                v.as_deref()
                    .map(str::trim)
                    .filter(|v| !v.is_empty())
                    .map(|v| (k.to_string(), v.to_string()))
            })
            .collect()
    }
}

#[utoipa::path(get, path = "/v1/api/pos", operation_id = "listPosReceipts", tag = "pos",
    security(("api_key" = [])),
    params(ListParams, TillFilters),
    responses((status = 200, description = "a page of POS receipts and notes", body = inline(envelope::Envelope<ListPage<ListItem>>)),
              (status = 422, description = "a bad filter or paging value", body = ErrorEnvelope)))]
#[get("/pos")]
pub async fn list(
    state: web::Data<AppState>,
    ctx: AuthContext,
    params: Query<ListParams>,
    filters: Query<TillFilters>,
) -> ApiResult<HttpResponse> {
    let q = params.query(&ctx, Family::Pos, filters.keys())?;
    let page = state.store.list_documents(q).await?;
    Ok(envelope::ok(
        "Documentos POS",
        ListPage::of(page, ListItem::from),
    ))
}

#[utoipa::path(get, path = "/v1/api/pos/{id}", operation_id = "getPosReceipt", tag = "pos",
    security(("api_key" = [])), params(("id" = u64, Path, description = "document id")),
    responses((status = 200, description = "everything sent, computed totals, code, state and history", body = inline(envelope::Envelope<DocumentDetail>)),
              (status = 404, description = "no such POS document", body = ErrorEnvelope)))]
#[get("/pos/{id:\\d+}")]
pub async fn detail(
    state: web::Data<AppState>,
    ctx: AuthContext,
    id: web::Path<u64>,
) -> ApiResult<HttpResponse> {
    let doc = family_document(&state, &ctx, Family::Pos, id.into_inner()).await?;
    Ok(envelope::ok(
        "Documento POS",
        documents::detail(&state, doc).await?,
    ))
}
