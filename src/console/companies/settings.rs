//! A company's software registration, webhook URL and limits: each form
//! posts to the admin API's own function (`register_software`,
//! `apply_update`).

use actix_web::{web, HttpResponse};
use maud::html;
use serde::Deserialize;

use super::page::{refused, Form};
use super::{company_path, done, given, number};
use crate::admin::companies::{apply_update, CompanyUpdate};
use crate::admin::credentials::{register_software, SoftwareRequest};
use crate::console::error::ConsoleResult;
use crate::console::guard::Posted;
use crate::console::{headers, layout};
use crate::http::state::AppState;

#[derive(Deserialize)]
pub struct Software {
    tipo: String,
    software_id: String,
    pin: String,
    #[serde(default)]
    test_set_id: String,
    #[serde(default)]
    proveedor_nit: String,
}

pub async fn software(
    state: web::Data<AppState>,
    id: web::Path<u64>,
    posted: Posted<Software>,
) -> ConsoleResult<HttpResponse> {
    let Posted { signed, form } = posted;
    signed.require_admin()?;
    let id = id.into_inner();
    let request = SoftwareRequest {
        tipo: form.tipo,
        software_id: form.software_id,
        pin: form.pin,
        test_set_id: given(&form.test_set_id),
        proveedor_nit: given(&form.proveedor_nit),
    };
    match register_software(&state, id, request).await {
        Ok(_) => Ok(done(&company_path(id), "software")),
        Err(e) => refused(&state, &signed, id, Form::Software, e).await,
    }
}

#[derive(Deserialize)]
pub struct Webhook {
    #[serde(default)]
    url: String,
}

/// Sets (or, empty, removes) the webhook URL. The first URL makes the
/// signing secret, which this answer shows once, as the admin API's does;
/// the admin API has no rotation of it, so neither has the console.
pub async fn webhook(
    state: web::Data<AppState>,
    id: web::Path<u64>,
    posted: Posted<Webhook>,
) -> ConsoleResult<HttpResponse> {
    let Posted { signed, form } = posted;
    signed.require_admin()?;
    let id = id.into_inner();
    let update = CompanyUpdate {
        rate_limit_per_minute: None,
        limite_documentos_mes: None,
        webhook_url: Some(form.url.trim().to_string()),
    };
    match apply_update(&state, id, update).await {
        Ok((company, Some(secret))) => {
            let back = company_path(id);
            let content = html! {
                section.card {
                    p.notice role="status" { "Webhook actualizado." }
                    p { "Secreto de firma de " code { "X-Emisor-Signature" } " (HMAC-SHA256). "
                        strong { "Cópielo ahora: no se volverá a mostrar." } }
                    p.secret { code id="nuevo-secreto" { (secret) } }
                    p { a href={ (back) "#webhook" } { "Volver a " (company.name) } }
                }
            };
            let body = layout::page(&signed, super::PATH, "Secreto del webhook", false, content);
            Ok(headers::page(HttpResponse::Ok()).body(body.into_string()))
        }
        Ok((_, None)) => Ok(done(&company_path(id), "webhook")),
        Err(e) => refused(&state, &signed, id, Form::Webhook, e).await,
    }
}

#[derive(Deserialize)]
pub struct Limits {
    #[serde(default)]
    rate_limit_per_minute: String,
    #[serde(default)]
    limite_documentos_mes: String,
}

pub async fn limits(
    state: web::Data<AppState>,
    id: web::Path<u64>,
    posted: Posted<Limits>,
) -> ConsoleResult<HttpResponse> {
    let Posted { signed, form } = posted;
    signed.require_admin()?;
    let id = id.into_inner();
    let update = number("rate_limit_per_minute", &form.rate_limit_per_minute).and_then(|rate| {
        Ok(CompanyUpdate {
            rate_limit_per_minute: rate,
            limite_documentos_mes: number("limite_documentos_mes", &form.limite_documentos_mes)?,
            webhook_url: None,
        })
    });
    let result = match update {
        Ok(u) => apply_update(&state, id, u).await,
        Err(e) => Err(e),
    };
    match result {
        Ok(_) => Ok(done(&company_path(id), "limites")),
        Err(e) => refused(&state, &signed, id, Form::Limits, e).await,
    }
}
