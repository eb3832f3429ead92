//! `GET /email/logs/{id_documento}`: a document's emails, newest first,
//! paged as every list (decisions.md §4).

use actix_web::{get, web, HttpResponse};
use serde::Deserialize;
use utoipa::IntoParams;

use super::model::{EmailLogPage, EmailLogResponse};
use crate::http::auth::AuthContext;
use crate::http::envelope;
use crate::http::error::ApiResult;
use crate::http::query::{paging, Query};
use crate::http::state::AppState;

#[derive(Debug, Deserialize, IntoParams)]
pub struct LogsQuery {
    /// Page number, from 1.
    pub page: Option<u32>,
    /// Page size, 1 to 100 (default 20).
    pub limit: Option<u32>,
    /// Optional; when given it must be the key's company.
    pub id_empresa: Option<u64>,
}

#[utoipa::path(get, path = "/v1/api/email/logs/{id_documento}", operation_id = "listDocumentEmails", tag = "email",
    security(("api_key" = [])),
    params(("id_documento" = u64, Path, description = "document id"), LogsQuery),
    responses((status = 200, description = "the document's emails, newest first", body = inline(envelope::Envelope<EmailLogPage>)),
              (status = 404, description = "no such document", body = crate::http::error::ErrorEnvelope)))]
#[get("/email/logs/{id_documento}")]
pub async fn logs(
    state: web::Data<AppState>,
    ctx: AuthContext,
    id: web::Path<u64>,
    query: Query<LogsQuery>,
) -> ApiResult<HttpResponse> {
    let (page, limit) = paging(query.page, query.limit)?;
    let doc = super::company_document(&state, &ctx, id.into_inner()).await?;
    let mut all = state.store.email_logs(doc.id).await?;
    all.reverse();
    let total = all.len() as u64;
    let items = all
        .into_iter()
        .skip(((page - 1) as usize).saturating_mul(limit as usize))
        .take(limit as usize)
        .map(EmailLogResponse::from)
        .collect();
    Ok(envelope::ok(
        "Correos del documento",
        EmailLogPage {
            items,
            page,
            limit,
            total,
        },
    ))
}
