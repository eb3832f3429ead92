//! A company's API keys: create (the key is on the answer page once, never
//! again, never in a log) and revoke (after a confirmation). Both call the
//! admin API's functions; a revocation also ends every console session
//! signed in with the key.

use actix_web::{web, HttpResponse};
use maud::html;
use serde::Deserialize;

use super::page::{refused, Form};
use super::{company_path, done, given, number};
use crate::admin::keys::{issue_key, revoke_key, KeyRequest};
use crate::console::error::{ConsoleError, ConsoleResult};
use crate::console::guard::{Posted, Signed};
use crate::console::{headers, layout, Console};
use crate::http::state::AppState;

#[derive(Deserialize)]
pub struct NewKey {
    ambiente: String,
    #[serde(default)]
    label: String,
    #[serde(default)]
    user_id: String,
}

pub async fn create(
    state: web::Data<AppState>,
    id: web::Path<u64>,
    posted: Posted<NewKey>,
) -> ConsoleResult<HttpResponse> {
    let Posted { signed, form } = posted;
    signed.require_admin()?;
    let id = id.into_inner();
    let issued = match number("user_id", &form.user_id) {
        Ok(user_id) => {
            let request = KeyRequest {
                ambiente: form.ambiente,
                label: given(&form.label),
                user_id,
            };
            issue_key(&state, id, request).await
        }
        Err(e) => Err(e),
    };
    match issued {
        Ok(view) => Ok(shown_once(&signed, id, &view.ambiente, view.key.as_deref())),
        Err(e) => refused(&state, &signed, id, Form::Keys, e).await,
    }
}

/// The answer page: the only time the key is shown.
fn shown_once(signed: &Signed, id: u64, environment: &str, key: Option<&str>) -> HttpResponse {
    let back = company_path(id);
    let content = html! {
        section.card {
            p.notice role="status" { "Llave creada (" (environment) ")." }
            p { strong { "Cópiela ahora: no se volverá a mostrar." } " emisor guarda solo su huella." }
            p.secret { code id="nueva-llave" { (key.unwrap_or_default()) } }
            p { a href={ (back) "#llaves" } { "Volver a la empresa" } }
        }
    };
    let body = layout::page(signed, super::PATH, "Llave API creada", false, content);
    headers::page(HttpResponse::Ok()).body(body.into_string())
}

#[derive(Deserialize)]
pub struct Nothing {}

pub async fn revoke(
    state: web::Data<AppState>,
    console: web::Data<Console>,
    path: web::Path<(u64, u64)>,
    posted: Posted<Nothing>,
) -> ConsoleResult<HttpResponse> {
    let signed = posted.signed;
    signed.require_admin()?;
    let (id, key_id) = path.into_inner();
    // Only a key of the company whose page sent the form.
    let owned = state
        .store
        .api_keys(id)
        .await?
        .iter()
        .any(|k| k.id == key_id);
    if !owned {
        return Err(ConsoleError::NotFound(format!("llave {key_id}")));
    }
    match revoke_key(&state, key_id).await {
        Ok(_) => {
            // Its sessions end here; on every node they would at their
            // next request anyway (the key is checked on each).
            if let Err(e) = console.sessions.end_key(key_id).await {
                tracing::warn!(target: "emisor::console", error = %e, key_id, "ending a revoked key's console sessions");
            }
            Ok(done(&company_path(id), "llave-revocada"))
        }
        Err(e) => refused(&state, &signed, id, Form::Keys, e).await,
    }
}
