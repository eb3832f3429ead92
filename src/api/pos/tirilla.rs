//! `GET /pos/:id/tirilla?width=80|58`: the thermal receipt (80 mm when
//! `width` is absent; any other width is a 422, decisions.md §5).

use actix_web::{get, web, HttpResponse};
use emisor_store::Family;
use serde::Deserialize;
use utoipa::IntoParams;

use crate::http::auth::AuthContext;
use crate::http::documents::{self, family_document};
use crate::http::error::{ApiError, ApiResult, ErrorEnvelope};
use crate::http::query::Query;
use crate::http::state::AppState;
use crate::issuing::files::rendered_pdf;
use crate::issuing::files::{Layout, THERMAL_WIDTHS};

#[derive(Debug, Deserialize, IntoParams)]
pub struct TirillaQuery {
    /// Paper width in mm: 80 (default) or 58.
    pub width: Option<u32>,
}

#[utoipa::path(get, path = "/v1/api/pos/{id}/tirilla", operation_id = "getPosTirilla", tag = "pos",
    security(("api_key" = [])),
    params(("id" = u64, Path, description = "receipt or adjustment note id"), TirillaQuery),
    responses((status = 200, description = "the thermal-receipt PDF", content_type = "application/pdf"),
              (status = 404, description = "no such POS document", body = ErrorEnvelope),
              (status = 422, description = "width other than 80 or 58", body = ErrorEnvelope)))]
#[get("/pos/{id}/tirilla")]
pub async fn tirilla(
    state: web::Data<AppState>,
    ctx: AuthContext,
    id: web::Path<u64>,
    query: Query<TirillaQuery>,
) -> ApiResult<HttpResponse> {
    let width = query.width.unwrap_or(80);
    if !THERMAL_WIDTHS.contains(&width) {
        return Err(ApiError::validation("width", "must be 80 or 58"));
    }
    let doc = family_document(&state, &ctx, Family::Pos, id.into_inner()).await?;
    let pdf = rendered_pdf(
        &state.issuing,
        ctx.owner(),
        doc.id,
        Some(Layout::Thermal { width_mm: width }),
    )
    .await?;
    Ok(documents::pdf(&pdf.name, pdf.bytes))
}
