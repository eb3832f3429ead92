//! Signing in and out. The credential is the admin token or a company API
//! key, typed into a form (never in a URL). A wrong one is logged (the
//! address, never what was typed) and counted against the address with the
//! admin API's wrong tokens (`crate::http::token_failures`): an address
//! that used its budget waits, whatever it types.
//!
//! The sign-in form has no session yet, so its CSRF token is a
//! double-submit one: a random value in a `SameSite=Strict` cookie and in
//! the form, which another site can neither read nor send.

use std::time::Instant;

use actix_web::cookie::{Cookie, SameSite};
use actix_web::{web, HttpRequest, HttpResponse};
use emisor_store::Environment;
use maud::html;
use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::error::{ConsoleError, ConsoleResult};
use super::guard::{same_origin, Posted};
use super::session::{random_token, Who, COOKIE};
use super::{headers, layout, Console, HOME_PATH, SIGN_IN_PATH};
use crate::http::state::AppState;
use crate::http::token_failures::{counted_address, BUDGET};
use crate::provisioning::api_keys::{hash_key, parse_shape};

/// The sign-in form's double-submit cookie.
const FORM_COOKIE: &str = "emisor_entrada";

fn cookie<'a>(console: &Console, name: &'a str, value: String, path: &'a str) -> Cookie<'a> {
    let mut c = Cookie::new(name, value);
    c.set_path(path);
    c.set_http_only(true);
    c.set_same_site(SameSite::Strict);
    c.set_secure(console.secure_cookie);
    c
}

fn form_page(token: &str, error: Option<&str>) -> String {
    layout::bare(
        "Entrar",
        html! {
            section.card.narrow {
                h1 { "emisor · consola" }
                p { "Entre con el token de administración (todas las empresas) o con una llave API de una empresa (esa empresa, en el ambiente de la llave)." }
                @if let Some(e) = error { p.error role="alert" { (e) } }
                form method="post" action=(SIGN_IN_PATH) {
                    input type="hidden" name="csrf" value=(token);
                    label for="credencial" { "Token o llave API" }
                    input id="credencial" name="credencial" type="password" autocomplete="off" required autofocus;
                    button type="submit" { "Entrar" }
                }
            }
        },
    )
    .into_string()
}

/// `GET /console/entrar`
pub async fn show(console: web::Data<Console>) -> HttpResponse {
    let token = random_token();
    headers::page(HttpResponse::Ok())
        .cookie(cookie(&console, FORM_COOKIE, token.clone(), SIGN_IN_PATH))
        .body(form_page(&token, None))
}

#[derive(Deserialize)]
pub struct Credential {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    credencial: String,
}

/// `POST /console/entrar`
pub async fn enter(
    req: HttpRequest,
    state: web::Data<AppState>,
    console: web::Data<Console>,
    form: web::Form<Credential>,
) -> ConsoleResult<HttpResponse> {
    let expected = req.cookie(FORM_COOKIE).map(|c| c.value().to_string());
    let token_ok = expected.as_deref().is_some_and(|e| {
        !e.is_empty()
            && e.len() == form.csrf.len()
            && openssl::memcmp::eq(e.as_bytes(), form.csrf.as_bytes())
    });
    if !token_ok || !same_origin(&req) {
        return Err(ConsoleError::Forbidden(
            "El formulario de entrada no trae su código de seguridad (CSRF): recargue la página."
                .into(),
        ));
    }
    let peer = req.peer_addr().map(|a| a.ip());
    let now = Instant::now();
    if let Some(wait) = peer.and_then(|ip| state.admin_failures.wait(ip, now)) {
        let again = random_token();
        return Ok(headers::page(HttpResponse::TooManyRequests())
            .insert_header(("Retry-After", wait.to_string()))
            .cookie(cookie(&console, FORM_COOKIE, again.clone(), SIGN_IN_PATH))
            .body(form_page(
                &again,
                Some(&format!(
                    "Demasiados intentos fallidos desde esta dirección: espere {wait} s."
                )),
            )));
    }
    let credential = form.credencial.trim();
    let who = match who(&state, credential).await? {
        Some(who) => who,
        None => {
            wrong_credential(&state, peer, now);
            let again = random_token();
            return Ok(headers::page(HttpResponse::Unauthorized())
                .cookie(cookie(&console, FORM_COOKIE, again.clone(), SIGN_IN_PATH))
                .body(form_page(&again, Some("Token o llave API no válidos."))));
        }
    };
    let (who, environment) = who;
    tracing::info!(target: "emisor::console", admin = matches!(who, Who::Admin), "console sign-in");
    let id = console.sessions.start(who, environment).await?;
    let mut session = cookie(&console, COOKIE, id, "/console");
    session.set_max_age(actix_web::cookie::time::Duration::seconds(
        i64::try_from(console.sessions.ttl().as_secs()).unwrap_or(i64::MAX),
    ));
    let mut spent = cookie(&console, FORM_COOKIE, String::new(), SIGN_IN_PATH);
    spent.make_removal();
    Ok(HttpResponse::SeeOther()
        .insert_header(("Location", HOME_PATH))
        .cookie(session)
        .cookie(spent)
        .finish())
}

/// Who the credential is: a live company key, or the admin token.
async fn who(state: &AppState, credential: &str) -> ConsoleResult<Option<(Who, Environment)>> {
    if credential.is_empty() {
        return Ok(None);
    }
    if parse_shape(credential).is_some() {
        let hash = hash_key(credential);
        return match crate::http::auth::resolve_hash(state, &hash).await {
            Ok(ctx) => Ok(Some((
                Who::Company {
                    company: ctx.company_id,
                    key_id: ctx.key_id,
                    key_hash: hash,
                },
                ctx.environment,
            ))),
            Err(crate::http::error::ApiError::InvalidApiKey) => Ok(None),
            Err(e) => Err(e.into()),
        };
    }
    let presented: [u8; 32] = Sha256::digest(credential.as_bytes()).into();
    // Digests compared in constant time, as the admin API does.
    if openssl::memcmp::eq(&presented, &state.admin_token_sha256) {
        return Ok(Some((Who::Admin, Environment::Test)));
    }
    Ok(None)
}

fn wrong_credential(state: &AppState, peer: Option<std::net::IpAddr>, now: Instant) {
    let Some(ip) = peer else {
        tracing::warn!(target: "emisor::console", "wrong console credential (no peer address)");
        return;
    };
    let failures = state.admin_failures.failed(ip, now);
    let peer = counted_address(ip);
    if failures <= BUDGET {
        tracing::warn!(target: "emisor::console", %peer, failures, "wrong console credential");
    }
}

#[derive(Deserialize)]
pub struct Nothing {}

/// `POST /console/salir`
pub async fn leave(console: web::Data<Console>, posted: Posted<Nothing>) -> HttpResponse {
    if let Err(e) = console.sessions.end(posted.signed.id()).await {
        // Its cookie goes anyway; the session expires in the store.
        tracing::warn!(target: "emisor::console", error = %e, "ending a console session");
    }
    let mut gone = cookie(&console, COOKIE, String::new(), "/console");
    gone.make_removal();
    HttpResponse::SeeOther()
        .insert_header(("Location", SIGN_IN_PATH))
        .cookie(gone)
        .finish()
}

#[derive(Deserialize)]
pub struct Switch {
    ambiente: u8,
}

/// `POST /console/ambiente`: the environment of the admin's console session.
pub async fn switch(
    console: web::Data<Console>,
    posted: Posted<Switch>,
) -> ConsoleResult<HttpResponse> {
    posted.signed.require_admin()?;
    let environment = match posted.form.ambiente {
        1 => Environment::Live,
        2 => Environment::Test,
        _ => {
            return Err(ConsoleError::BadRequest(
                "Ambiente: 1 (producción) o 2 (pruebas).".into(),
            ))
        }
    };
    console
        .sessions
        .set_environment(posted.signed.id(), environment)
        .await?;
    Ok(HttpResponse::SeeOther()
        .insert_header(("Location", HOME_PATH))
        .finish())
}
