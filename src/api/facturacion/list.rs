//! `GET /facturacion`: a page of the company's invoices and notes (the
//! invoices family: types 1, 2, 3, 6, 7, 8), newest first, from the
//! document index (decisions.md §4).

use actix_web::{get, web, HttpResponse};
use emisor_store::Family;
use serde::Deserialize;
use utoipa::IntoParams;

use super::responses::{status_record, DocumentStatus};
use crate::http::auth::AuthContext;
use crate::http::envelope;
use crate::http::error::ApiResult;
use crate::http::query::{ListPage, ListParams, Query};
use crate::http::state::AppState;

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CompanyParam {
    /// Optional; when given it must be the key's company.
    pub id_empresa: Option<u64>,
}

#[utoipa::path(get, path = "/v1/api/facturacion", operation_id = "listDocuments", tag = "facturacion",
    security(("api_key" = [])),
    params(ListParams, CompanyParam),
    responses((status = 200, description = "a page of the company's invoices and notes, newest first", body = inline(envelope::Envelope<ListPage<DocumentStatus>>)),
              (status = 422, description = "bad paging, date or state", body = crate::http::error::ErrorEnvelope)))]
#[get("/facturacion")]
pub async fn list(
    state: web::Data<AppState>,
    ctx: AuthContext,
    params: Query<ListParams>,
    company: Query<CompanyParam>,
) -> ApiResult<HttpResponse> {
    if let Some(id) = company.id_empresa {
        ctx.ensure_company(id)?;
    }
    let query = params.query(&ctx, Family::Invoices, Vec::new())?;
    let page = state.store.list_documents(query).await?;
    Ok(envelope::ok(
        "Documentos",
        ListPage::of(page, |d| status_record(&d)),
    ))
}
