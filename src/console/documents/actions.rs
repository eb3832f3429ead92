//! A document's actions from the console, each a POST with the sign-in's
//! CSRF token, through the issuing code the API's handlers call: resend
//! (`issuing::rebuild::resend`, the API's rule of what may be resent),
//! email (`issuing::mail::queue_document_mail`, to the customer's address
//! unless others are given), check with the authority
//! (`http::documents::live_status`). A success answers 303 back to the
//! page with `?ok=<code>`; a refusal shows the page with the API's message
//! and status.

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse, ResponseError};
use emisor_store::{state, DocumentRecord};
use serde::Deserialize;

use super::page::{may_check, may_email, may_resend, refused};
use super::{document_path, visible};
use crate::console::error::{ConsoleError, ConsoleResult};
use crate::console::guard::{Posted, Signed};
use crate::http::error::ApiError;
use crate::http::state::AppState;

#[derive(Deserialize)]
pub struct Nothing {}

#[derive(Deserialize)]
pub struct Mail {
    #[serde(default)]
    para: String,
}

fn done(id: u64, code: &str) -> HttpResponse {
    HttpResponse::SeeOther()
        .insert_header(("Location", format!("{}?ok={code}", document_path(id))))
        .finish()
}

/// A refusal of the issuing code as the page shows it: a client error with
/// its message; anything else is the console's error page.
async fn refusal(
    state: &AppState,
    signed: &Signed,
    doc: &DocumentRecord,
    e: ApiError,
) -> ConsoleResult<HttpResponse> {
    let status = e.status_code();
    if status.is_client_error() && !matches!(e, ApiError::NotFound(_)) {
        refused(state, signed, doc, status, e.to_string()).await
    } else {
        Err(e.into())
    }
}

/// The page again with `message` (an action this state does not allow).
async fn not_now(
    state: &AppState,
    signed: &Signed,
    doc: &DocumentRecord,
    message: &str,
) -> ConsoleResult<HttpResponse> {
    refused(
        state,
        signed,
        doc,
        StatusCode::CONFLICT,
        message.to_string(),
    )
    .await
}

pub async fn resend(
    state: web::Data<AppState>,
    id: web::Path<u64>,
    posted: Posted<Nothing>,
) -> ConsoleResult<HttpResponse> {
    let signed = posted.signed;
    let doc = visible(&state, &signed, id.into_inner()).await?;
    if !may_resend(&doc) {
        return not_now(
            &state,
            &signed,
            &doc,
            &format!(
                "Solo se reenvían facturas, notas y documentos soporte en Borrador o Rechazado; este está en {}.",
                state::name(doc.state)
            ),
        )
        .await;
    }
    // In its own task, as the API runs it: a browser that goes away cannot
    // stop it half way.
    let issuing = state.issuing.clone();
    let again = doc.clone();
    let sent =
        actix_web::rt::spawn(async move { crate::issuing::rebuild::resend(&issuing, again).await })
            .await
            .map_err(|e| {
                ConsoleError::Api(ApiError::Internal(format!("resend task failed: {e}")))
            })?;
    match sent {
        Ok(_) => Ok(done(doc.id, "reenviado")),
        Err(e) => refusal(&state, &signed, &doc, e.into()).await,
    }
}

pub async fn email(
    state: web::Data<AppState>,
    id: web::Path<u64>,
    posted: Posted<Mail>,
) -> ConsoleResult<HttpResponse> {
    let Posted { signed, form } = posted;
    let doc = visible(&state, &signed, id.into_inner()).await?;
    if !may_email(&doc) {
        return not_now(
            &state,
            &signed,
            &doc,
            "Solo se envían por correo documentos aceptados.",
        )
        .await;
    }
    let mut to: Vec<String> = form
        .para
        .split([',', ';', ' '])
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .collect();
    if to.is_empty() {
        let customer = match doc.customer_id {
            Some(c) => state.store.customer(doc.company_id, c).await?,
            None => None,
        };
        match customer.map(|c| c.email).filter(|e| !e.trim().is_empty()) {
            Some(email) => to.push(email),
            None => {
                let e = ApiError::validation(
                    "para",
                    "el cliente del documento no tiene correo: escriba a quién enviarlo",
                );
                return refusal(&state, &signed, &doc, e).await;
            }
        }
    }
    match crate::issuing::mail::queue_document_mail(&state.issuing, &doc, to, Vec::new()).await {
        Ok(_) => Ok(done(doc.id, "correo")),
        Err(e) => refusal(&state, &signed, &doc, e.into()).await,
    }
}

pub async fn check(
    state: web::Data<AppState>,
    id: web::Path<u64>,
    posted: Posted<Nothing>,
) -> ConsoleResult<HttpResponse> {
    let signed = posted.signed;
    let doc = visible(&state, &signed, id.into_inner()).await?;
    if !may_check(&doc) {
        return not_now(
            &state,
            &signed,
            &doc,
            "Solo se consulta a la autoridad por documentos enviados cuya respuesta falta.",
        )
        .await;
    }
    let id = doc.id;
    match crate::http::documents::live_status(&state, doc.clone()).await {
        Ok(_) => Ok(done(id, "consultado")),
        Err(e) => refusal(&state, &signed, &doc, e).await,
    }
}
