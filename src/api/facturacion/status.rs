//! `GET /facturacion/{id}/status`: the document record (spec 2.3), with a
//! live query of the authority when asked and the document is queued.

use actix_web::{get, web, HttpResponse};
use serde::Deserialize;
use utoipa::IntoParams;

use super::responses::{status_record, DocumentStatus};
use crate::http::auth::AuthContext;
use crate::http::envelope;
use crate::http::error::{ApiError, ApiResult};
use crate::http::query::Query;
use crate::http::state::AppState;

#[derive(Debug, Deserialize, IntoParams)]
pub struct StatusQuery {
    /// The key's company (required).
    pub id_empresa: Option<u64>,
    /// `true`: ask the authority now when the document is En Cola (3).
    pub check_tax: Option<bool>,
    /// `1` production, `2` testing: the key's environment (the key decides
    /// it; another value is a 422).
    pub ambiente: Option<String>,
}

/// A document of the key's company and environment, or 404.
pub async fn owned_document(
    state: &AppState,
    ctx: &AuthContext,
    id: u64,
) -> Result<emisor_store::DocumentRecord, ApiError> {
    state
        .store
        .document(id)
        .await?
        .filter(|d| ctx.owns(d))
        .ok_or_else(|| ApiError::NotFound(format!("document {id}")))
}

#[utoipa::path(get, path = "/v1/api/facturacion/{id}/status", operation_id = "getDocumentStatus", tag = "facturacion",
    security(("api_key" = [])),
    params(("id" = u64, Path, description = "document id"), StatusQuery),
    responses((status = 200, description = "the document record", body = inline(envelope::Envelope<DocumentStatus>)),
              (status = 404, description = "no such document", body = crate::http::error::ErrorEnvelope),
              (status = 422, description = "id_empresa missing; ambiente not the key's environment", body = crate::http::error::ErrorEnvelope)))]
#[get("/facturacion/{id}/status")]
pub async fn status(
    state: web::Data<AppState>,
    ctx: AuthContext,
    id: web::Path<u64>,
    query: Query<StatusQuery>,
) -> ApiResult<HttpResponse> {
    let company = query
        .id_empresa
        .ok_or_else(|| ApiError::validation("id_empresa", "is required"))?;
    // `ambiente` was checked against the key with the query (auth::own_company).
    ctx.ensure_company(company)?;
    let mut doc = owned_document(&state, &ctx, id.into_inner()).await?;
    if query.check_tax == Some(true) && doc.state == emisor_store::state::QUEUED {
        doc = state
            .issuing
            .check_status(doc)
            .await
            .map_err(|e| ApiError::Internal(e.to_string()))?;
    }
    Ok(envelope::ok("Estado del documento", status_record(&doc)))
}
