//! `GET /facturacion/{id}/xml` and `/zip`: the stored files of any document.

use actix_web::{get, web, HttpResponse};

use super::status::owned_document;
use crate::http::auth::AuthContext;
use crate::http::error::{ApiError, ApiResult};
use crate::http::state::AppState;

async fn files(
    state: &AppState,
    ctx: &AuthContext,
    id: u64,
) -> ApiResult<emisor_store::DocumentFiles> {
    owned_document(state, ctx, id).await?;
    state
        .store
        .document_files(id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("files of document {id}")))
}

/// A file as a download, named as the authority names it.
fn download(
    content_type: &str,
    disposition: &str,
    name: &str,
    body: impl actix_web::body::MessageBody + 'static,
) -> HttpResponse {
    HttpResponse::Ok()
        .content_type(content_type)
        .insert_header((
            "Content-Disposition",
            format!("{disposition}; filename=\"{name}\""),
        ))
        .body(body)
}

#[utoipa::path(get, path = "/v1/api/facturacion/{id}/xml", operation_id = "getDocumentXml", tag = "facturacion",
    security(("api_key" = [])), params(("id" = u64, Path, description = "document id")),
    responses((status = 200, description = "signed XML", content_type = "text/xml"),
              (status = 404, description = "no such document", body = crate::http::error::ErrorEnvelope)))]
#[get("/facturacion/{id}/xml")]
pub async fn xml(
    state: web::Data<AppState>,
    ctx: AuthContext,
    id: web::Path<u64>,
) -> ApiResult<HttpResponse> {
    let f = files(&state, &ctx, id.into_inner()).await?;
    Ok(download(
        "text/xml; charset=utf-8",
        "inline",
        &f.xml_name,
        f.xml,
    ))
}

#[utoipa::path(get, path = "/v1/api/facturacion/{id}/zip", operation_id = "getDocumentZip", tag = "facturacion",
    security(("api_key" = [])), params(("id" = u64, Path, description = "document id")),
    responses((status = 200, description = "the ZIP sent to the authority", content_type = "application/zip"),
              (status = 404, description = "no such document", body = crate::http::error::ErrorEnvelope)))]
#[get("/facturacion/{id}/zip")]
pub async fn zip(
    state: web::Data<AppState>,
    ctx: AuthContext,
    id: web::Path<u64>,
) -> ApiResult<HttpResponse> {
    let f = files(&state, &ctx, id.into_inner()).await?;
    let name = f.zip_name.clone();
    let zip = crate::issuing::files::into_zip(f)?;
    Ok(download("application/zip", "attachment", &name, zip))
}
