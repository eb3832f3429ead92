//! A document's files from the console: the signed XML, the PDF and the
//! ZIP sent to the authority, served by the code the API serves them with
//! (`http::documents::xml`, `issuing::files`).

use actix_web::{web, HttpResponse};

use super::visible;
use crate::console::error::ConsoleResult;
use crate::console::guard::Signed;
use crate::http::error::ApiError;
use crate::http::state::AppState;
use crate::issuing::files::{into_zip, rendered_pdf};

pub async fn xml(
    state: web::Data<AppState>,
    signed: Signed,
    id: web::Path<u64>,
) -> ConsoleResult<HttpResponse> {
    let doc = visible(&state, &signed, id.into_inner()).await?;
    Ok(crate::http::documents::xml(&state, &doc).await?)
}

pub async fn pdf(
    state: web::Data<AppState>,
    signed: Signed,
    id: web::Path<u64>,
) -> ConsoleResult<HttpResponse> {
    let doc = visible(&state, &signed, id.into_inner()).await?;
    let pdf = rendered_pdf(
        &state.issuing,
        (doc.company_id, doc.environment),
        doc.id,
        None,
    )
    .await
    .map_err(ApiError::from)?;
    Ok(crate::http::documents::pdf(&pdf.name, pdf.bytes))
}

pub async fn zip(
    state: web::Data<AppState>,
    signed: Signed,
    id: web::Path<u64>,
) -> ConsoleResult<HttpResponse> {
    let doc = visible(&state, &signed, id.into_inner()).await?;
    let files = state
        .store
        .document_files(doc.id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("files of document {}", doc.id)))?;
    let name = files.zip_name.clone();
    let zip = into_zip(files).map_err(ApiError::from)?;
    Ok(HttpResponse::Ok()
        .content_type("application/zip")
        .insert_header((
            "Content-Disposition",
            format!("attachment; filename=\"{name}\""),
        ))
        .body(zip))
}
