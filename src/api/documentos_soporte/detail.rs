//! `GET /documentos-soporte/:id` (detail), `POST /:id/consultar-tax` (live
//! status), `GET /:id/pdf` and `/xml`: a support document or adjustment
//! note of the key's company; anything else is 404.

use actix_web::{get, post, web, HttpResponse};
use emisor_store::Family;

use crate::http::auth::AuthContext;
use crate::http::documents::{self, family_document, DocumentDetail, LiveStatus};
use crate::http::envelope;
use crate::http::error::{ApiResult, ErrorEnvelope};
use crate::http::state::AppState;
use crate::issuing::files::rendered_pdf;

#[utoipa::path(get, path = "/v1/api/documentos-soporte/{id}", operation_id = "getSupportDocument", tag = "documentos-soporte",
    security(("api_key" = [])), params(("id" = u64, Path, description = "document id")),
    responses((status = 200, description = "everything sent, computed totals, code, state and history", body = inline(envelope::Envelope<DocumentDetail>)),
              (status = 404, description = "no such support document", body = ErrorEnvelope)))]
#[get("/documentos-soporte/{id:\\d+}")]
pub async fn detail(
    state: web::Data<AppState>,
    ctx: AuthContext,
    id: web::Path<u64>,
) -> ApiResult<HttpResponse> {
    let doc = family_document(&state, &ctx, Family::Support, id.into_inner()).await?;
    Ok(envelope::ok(
        "Documento soporte",
        documents::detail(&state, doc).await?,
    ))
}

#[utoipa::path(post, path = "/v1/api/documentos-soporte/{id}/consultar-tax", operation_id = "checkSupportDocument", tag = "documentos-soporte",
    security(("api_key" = [])), params(("id" = u64, Path, description = "document id")),
    responses((status = 200, description = "the authority's live status of the CUDS; the stored state is updated", body = inline(envelope::Envelope<LiveStatus>)),
              (status = 404, description = "no such support document", body = ErrorEnvelope)))]
#[post("/documentos-soporte/{id}/consultar-tax")]
pub async fn consultar_tax(
    state: web::Data<AppState>,
    ctx: AuthContext,
    id: web::Path<u64>,
) -> ApiResult<HttpResponse> {
    let doc = family_document(&state, &ctx, Family::Support, id.into_inner()).await?;
    Ok(envelope::ok(
        "Estado en tax",
        documents::live_status(&state, doc).await?,
    ))
}

#[utoipa::path(get, path = "/v1/api/documentos-soporte/{id}/pdf", operation_id = "getSupportDocumentPdf", tag = "documentos-soporte",
    security(("api_key" = [])), params(("id" = u64, Path, description = "document id")),
    responses((status = 200, description = "the PDF graphical representation", content_type = "application/pdf"),
              (status = 404, description = "no such support document", body = ErrorEnvelope)))]
#[get("/documentos-soporte/{id}/pdf")]
pub async fn pdf(
    state: web::Data<AppState>,
    ctx: AuthContext,
    id: web::Path<u64>,
) -> ApiResult<HttpResponse> {
    let doc = family_document(&state, &ctx, Family::Support, id.into_inner()).await?;
    let pdf = rendered_pdf(&state.issuing, ctx.owner(), doc.id, None).await?;
    Ok(documents::pdf(&pdf.name, pdf.bytes))
}

#[utoipa::path(get, path = "/v1/api/documentos-soporte/{id}/xml", operation_id = "getSupportDocumentXml", tag = "documentos-soporte",
    security(("api_key" = [])), params(("id" = u64, Path, description = "document id")),
    responses((status = 200, description = "signed UBL 2.1 XML", content_type = "text/xml"),
              (status = 404, description = "no such support document", body = ErrorEnvelope)))]
#[get("/documentos-soporte/{id}/xml")]
pub async fn xml(
    state: web::Data<AppState>,
    ctx: AuthContext,
    id: web::Path<u64>,
) -> ApiResult<HttpResponse> {
    let doc = family_document(&state, &ctx, Family::Support, id.into_inner()).await?;
    documents::xml(&state, &doc).await
}
