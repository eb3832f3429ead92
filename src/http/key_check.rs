//! `GET /api-keys/test`: does my key work, and for which company?

use actix_web::{get, HttpResponse};
use serde::Serialize;
use utoipa::ToSchema;

use super::auth::AuthContext;
use super::envelope;

#[derive(Serialize, ToSchema)]
pub struct KeyCheck {
    pub id_empresa: u64,
    pub empresa: String,
    pub nit: String,
    /// `pruebas` (sk_test_) or `produccion` (sk_live_).
    pub ambiente: &'static str,
    /// The authority's environment code: 2 testing, 1 production.
    pub codigo_ambiente: u8,
    pub limite_por_minuto: u32,
}

/// Checks that the API key works; answers its company and environment.
#[utoipa::path(get, path = "/v1/api/api-keys/test", operation_id = "testApiKey", tag = "api-keys",
    security(("api_key" = [])),
    responses((status = 200, description = "the key works", body = inline(envelope::Envelope<KeyCheck>))))]
#[get("/api-keys/test")]
pub async fn test_key(ctx: AuthContext) -> HttpResponse {
    envelope::ok(
        "API key valid",
        KeyCheck {
            id_empresa: ctx.company_id,
            empresa: ctx.company_name,
            nit: ctx.nit,
            ambiente: ctx.environment.name(),
            codigo_ambiente: ctx.environment.authority_code(),
            limite_por_minuto: ctx.rate_limit,
        },
    )
}
