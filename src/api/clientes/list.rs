//! `GET /clientes?limit=&page=&q=`: the company's customers, paged.

use actix_web::{get, web, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::model::CustomerResponse;
use crate::http::auth::AuthContext;
use crate::http::envelope;
use crate::http::error::ApiResult;
use crate::http::query::{paging, Query};
use crate::http::state::AppState;

#[derive(Debug, Deserialize, IntoParams)]
pub struct ListQuery {
    /// Page number, from 1.
    pub page: Option<u32>,
    /// Page size, 1 to 100 (default 20).
    pub limit: Option<u32>,
    /// Text to find in the name or identification number.
    pub q: Option<String>,
    /// Optional; when given it must be the key's company.
    pub id_empresa: Option<u64>,
}

#[derive(Serialize, ToSchema)]
pub struct CustomerPage {
    pub items: Vec<CustomerResponse>,
    pub page: u32,
    pub limit: u32,
    pub total: u64,
}

#[utoipa::path(get, path = "/v1/api/clientes", operation_id = "listCustomers", tag = "clientes",
    security(("api_key" = [])),
    params(ListQuery),
    responses((status = 200, description = "a page of customers", body = inline(envelope::Envelope<CustomerPage>)),
              (status = 422, description = "bad paging", body = crate::http::error::ErrorEnvelope)))]
#[get("/clientes")]
pub async fn list_customers(
    state: web::Data<AppState>,
    ctx: AuthContext,
    query: Query<ListQuery>,
) -> ApiResult<HttpResponse> {
    let (page, limit) = paging(query.page, query.limit)?;

    let q = query.q.clone();
    let found = state
        .store
        .customers(ctx.company_id, page, limit, q)
        .await?;
    Ok(envelope::ok(
        "Clientes",
        CustomerPage {
            items: found
                .items
                .into_iter()
                .map(CustomerResponse::from)
                .collect(),
            page: found.page,
            limit: found.limit,
            total: found.total,
        },
    ))
}
