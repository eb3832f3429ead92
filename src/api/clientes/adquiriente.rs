//! `GET /clientes/adquiriente?tipo_documento=&numero=`: a buyer's name and
//! email as registered with the authority (`GetAcquirer`, Res.
//! 000202/2025), in the key's environment. The data serves invoicing only.

use actix_web::{get, web, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::http::auth::AuthContext;
use crate::http::envelope;
use crate::http::error::{ApiError, ApiResult};
use crate::http::query::Query;
use crate::http::state::AppState;
use crate::issuing::buyers::{BuyerId, BuyerIdError};

#[derive(Debug, Deserialize, IntoParams)]
pub struct BuyerQuery {
    /// The authority's identification type: 11, 12, 13, 21, 22, 31, 41,
    /// 42, 47, 48, 50 or 91 (31 = NIT).
    pub tipo_documento: String,
    /// The identification number (a NIT without its check digit).
    pub numero: String,
}

/// The buyer as the authority knows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct BuyerResponse {
    pub nombre: String,
    /// Its registered email for electronic invoices, when it gave one.
    pub correo: Option<String>,
}

#[utoipa::path(get, path = "/v1/api/clientes/adquiriente", operation_id = "lookUpBuyer", tag = "clientes",
    security(("api_key" = [])),
    params(BuyerQuery),
    responses((status = 200, description = "the buyer's registered name and email", body = inline(envelope::Envelope<BuyerResponse>)),
              (status = 404, description = "the authority has no buyer with this identification", body = crate::http::error::ErrorEnvelope),
              (status = 422, description = "bad identification type or number", body = crate::http::error::ErrorEnvelope),
              (status = 503, description = "the authority cannot be reached (TAX_UNAVAILABLE)", body = crate::http::error::ErrorEnvelope)))]
#[get("/clientes/adquiriente")]
pub async fn look_up_buyer(
    state: web::Data<AppState>,
    ctx: AuthContext,
    query: Query<BuyerQuery>,
) -> ApiResult<HttpResponse> {
    let id = BuyerId::parse(&query.tipo_documento, &query.numero).map_err(|e| match e {
        BuyerIdError::Type => ApiError::validation("tipo_documento", e.to_string()),
        BuyerIdError::Number => ApiError::validation("numero", e.to_string()),
    })?;
    let (company, environment) = ctx.owner();
    let buyer = state
        .buyers
        .look_up(&state.issuing, company, environment, &id)
        .await?;
    Ok(envelope::ok(
        "Adquiriente",
        BuyerResponse {
            nombre: buyer.name,
            correo: buyer.email,
        },
    ))
}
