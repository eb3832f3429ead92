//! `GET /facturacion`: a page of the company's invoices and notes (the
//! invoices family: types 1, 2, 3, 6, 7, 8), newest first, from the
//! document index (decisions.md §4), filtered by the standing the
//! authority's events give an invoice (`evento`) through the same index.

use actix_web::{get, web, HttpResponse};
use emisor_store::{Family, EVENT_STANDING_KEY};
use serde::Deserialize;
use utoipa::IntoParams;

use super::responses::{status_record, DocumentStatus};
use crate::http::auth::AuthContext;
use crate::http::envelope;
use crate::http::error::{ApiError, ApiResult};
use crate::http::query::{ListPage, ListParams, Query};
use crate::http::state::AppState;
use crate::issuing::invoice_events::sweep::STANDINGS;

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CompanyParam {
    /// Optional; when given it must be the key's company.
    pub id_empresa: Option<u64>,
    /// The invoices' standing from the events the authority lists on them:
    /// `reclamada` (claimed), `aceptada` (accepted, expressly or tacitly),
    /// `acuse_sin_aceptacion` (acknowledged, not accepted nor claimed).
    pub evento: Option<String>,
}

/// The `evento` filter as an index key.
fn event_filter(evento: Option<&str>) -> Result<Vec<(String, String)>, ApiError> {
    let Some(value) = evento.filter(|v| !v.is_empty()) else {
        return Ok(Vec::new());
    };
    if !STANDINGS.contains(&value) {
        return Err(ApiError::validation(
            "evento",
            format!("must be one of {}", STANDINGS.join(", ")),
        ));
    }
    Ok(vec![(EVENT_STANDING_KEY.to_string(), value.to_string())])
}

#[utoipa::path(get, path = "/v1/api/facturacion", operation_id = "listDocuments", tag = "facturacion",
    security(("api_key" = [])),
    params(ListParams, CompanyParam),
    responses((status = 200, description = "a page of the company's invoices and notes, newest first", body = inline(envelope::Envelope<ListPage<DocumentStatus>>)),
              (status = 422, description = "bad paging, date, state or evento", body = crate::http::error::ErrorEnvelope)))]
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
    let keys = event_filter(company.evento.as_deref())?;
    let query = params.query(&ctx, Family::Invoices, keys)?;
    let page = state.store.list_documents(query).await?;
    Ok(envelope::ok(
        "Documentos",
        ListPage::of(page, |d| status_record(&d)),
    ))
}
