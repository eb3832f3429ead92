//! `GET /registry/facturas-elegibles`: the caller's invoices as holder that
//! have 030, 032 and 033 or 034 accepted and are not registered yet, newest
//! first, paged (decisions.md §4).

use actix_web::{get, web, HttpResponse};
use serde_json::json;

use crate::http::auth::AuthContext;
use crate::http::envelope;
use crate::http::error::ApiResult;
use crate::http::query::{paging, PageQuery, Query};
use crate::http::state::AppState;

#[utoipa::path(get, path = "/v1/api/registry/facturas-elegibles", operation_id = "listEligibleInvoices", tag = "registry",
    security(("api_key" = [])), params(PageQuery),
    responses((status = 200, description = "data: {items, page, limit, total}"),
              (status = 422, description = "bad page or limit", body = crate::http::error::ErrorEnvelope)))]
#[get("/registry/facturas-elegibles")]
pub async fn eligible(
    state: web::Data<AppState>,
    ctx: AuthContext,
    query: Query<PageQuery>,
) -> ApiResult<HttpResponse> {
    let (page, limit) = paging(query.page, query.limit)?;
    let p = state
        .store
        .eligible_page(ctx.company_id, ctx.environment, page, limit)
        .await?;
    let items: Vec<_> = p
        .items
        .iter()
        .map(|t| {
            json!({
                "cufe": t.cufe,
                "numero": t.number,
                "fecha_emision": t.issue_date,
                "fecha_vencimiento": t.due_date,
                "moneda": t.currency,
                "total": t.total.parse::<rust_decimal::Decimal>().ok(),
                "proveedor": {"nit": t.vendor.id_number, "nombre": t.vendor.name},
                "comprador": {"nit": t.buyer.id_number, "nombre": t.buyer.name},
                "eventos": t.events.iter()
                    .filter(|e| e.state == emisor_store::EventState::Accepted)
                    .map(|e| e.code.clone()).collect::<Vec<_>>(),
            })
        })
        .collect();
    Ok(envelope::ok(
        "Facturas elegibles para inscripción como título valor",
        json!({ "items": items, "page": p.page, "limit": p.limit, "total": p.total }),
    ))
}
