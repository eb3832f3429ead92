//! `POST /console/empresas/{id}/certificado`: a PKCS#12 file and its
//! password, as a multipart form (a file cannot go urlencoded) carrying
//! the sign-in's CSRF token as a field, checked like every change
//! ([`guard::check_change`]). The certificate goes through the admin API's
//! import: the same checks (readable, in force) and messages.

use actix_multipart::Multipart;
use actix_web::{web, HttpRequest, HttpResponse};
use futures_util::StreamExt;

use super::page::{refused, Form};
use crate::console::error::{ConsoleError, ConsoleResult};
use crate::console::guard::{check_change, Signed};
use crate::http::state::AppState;

/// Largest upload: a PKCS#12 holds a key and a short chain (a few KiB).
pub const UPLOAD_LIMIT: usize = 256 * 1024;
/// Parts a form may have (ours has three).
const MAX_PARTS: usize = 8;

#[derive(Default)]
struct Upload {
    csrf: Option<String>,
    password: Option<String>,
    file: Option<Vec<u8>>,
}

fn unreadable(e: impl std::fmt::Display) -> ConsoleError {
    ConsoleError::BadRequest(format!("Formulario ilegible: {e}"))
}

/// Reads the form whole, within [`UPLOAD_LIMIT`] and [`MAX_PARTS`].
async fn read(mut parts: Multipart) -> ConsoleResult<Upload> {
    let mut upload = Upload::default();
    let (mut total, mut count) = (0usize, 0usize);
    while let Some(part) = parts.next().await {
        let mut part = part.map_err(unreadable)?;
        count += 1;
        if count > MAX_PARTS {
            return Err(ConsoleError::BadRequest(
                "Formulario con demasiadas partes.".into(),
            ));
        }
        let name = part.name().unwrap_or_default().to_string();
        let mut data = Vec::new();
        while let Some(chunk) = part.next().await {
            let chunk = chunk.map_err(unreadable)?;
            total += chunk.len();
            if total > UPLOAD_LIMIT {
                return Err(ConsoleError::BadRequest(format!(
                    "Archivo demasiado grande: hasta {} KiB.",
                    UPLOAD_LIMIT / 1024
                )));
            }
            data.extend_from_slice(&chunk);
        }
        let text = || String::from_utf8(data.clone()).map_err(unreadable);
        match name.as_str() {
            "csrf" => upload.csrf = Some(text()?),
            "clave" => upload.password = Some(text()?),
            "archivo" => upload.file = Some(data),
            _ => {}
        }
    }
    Ok(upload)
}

pub async fn upload(
    req: HttpRequest,
    state: web::Data<AppState>,
    signed: Signed,
    id: web::Path<u64>,
    parts: Multipart,
) -> ConsoleResult<HttpResponse> {
    signed.require_admin()?;
    let id = id.into_inner();
    let form = read(parts).await?;
    check_change(&req, &signed, form.csrf.as_deref())?;
    let (Some(file), Some(password)) = (form.file.filter(|f| !f.is_empty()), form.password) else {
        let e = crate::http::error::ApiError::validation(
            "certificate",
            "choose a .p12 file and give its password",
        );
        return refused(&state, &signed, id, Form::Certificate, e).await;
    };
    match crate::admin::credentials::import_certificate_der(&state, id, file, password).await {
        Ok(_) => Ok(super::done(&super::company_path(id), "certificado")),
        Err(e) => refused(&state, &signed, id, Form::Certificate, e).await,
    }
}
