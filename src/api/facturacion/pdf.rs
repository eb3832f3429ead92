//! `GET /facturacion/{id}/pdf`: the graphical representation of any
//! document of the unified id space (invoices, notes, support documents,
//! POS receipts), whatever API issued it. POS receipts and their notes are
//! a thermal strip (`?width=80`, the default, or `58`); the rest A4, or a
//! strip when `width` is given.

use actix_web::{get, web, HttpResponse};
use serde::Deserialize;
use utoipa::IntoParams;

use crate::http::auth::AuthContext;
use crate::http::error::{ApiError, ApiResult};
use crate::http::query::Query;
use crate::http::state::AppState;
use crate::issuing::files::rendered_pdf;
use crate::issuing::files::{Layout, THERMAL_WIDTHS};

#[derive(Debug, Deserialize, IntoParams)]
pub struct PdfQuery {
    /// Thermal strip width in mm: 80 or 58.
    pub width: Option<u32>,
}

#[utoipa::path(get, path = "/v1/api/facturacion/{id}/pdf", operation_id = "getDocumentPdf", tag = "facturacion",
    security(("api_key" = [])),
    params(("id" = u64, Path, description = "document id"), PdfQuery),
    responses((status = 200, description = "the PDF graphical representation", content_type = "application/pdf"),
              (status = 404, description = "no such document", body = crate::http::error::ErrorEnvelope),
              (status = 422, description = "width other than 80 or 58", body = crate::http::error::ErrorEnvelope)))]
#[get("/facturacion/{id}/pdf")]
pub async fn pdf(
    state: web::Data<AppState>,
    ctx: AuthContext,
    id: web::Path<u64>,
    query: Query<PdfQuery>,
) -> ApiResult<HttpResponse> {
    let layout = match query.width {
        Some(w) if THERMAL_WIDTHS.contains(&w) => Some(Layout::Thermal { width_mm: w }),
        Some(_) => return Err(ApiError::validation("width", "must be 80 or 58")),
        None => None,
    };
    let pdf = rendered_pdf(&state.issuing, ctx.owner(), id.into_inner(), layout).await?;
    Ok(HttpResponse::Ok()
        .content_type("application/pdf")
        .insert_header((
            "Content-Disposition",
            format!("inline; filename=\"{}\"", pdf.name),
        ))
        .body(pdf.bytes))
}
