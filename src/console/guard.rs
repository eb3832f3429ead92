//! What every console request goes through: [`Signed`], the live session
//! from the cookie (no session: to the sign-in page), and [`Posted`], a
//! form whose CSRF token is the one issued with the cookie and whose `Origin`, when the
//! browser sends one, is this server.

use std::future::Future;
use std::pin::Pin;

use actix_web::dev::Payload;
use actix_web::{web, FromRequest, HttpMessage, HttpRequest};
use emisor_store::{CompanyId, Environment};
use serde::de::DeserializeOwned;

use super::error::ConsoleError;
use super::session::{Session, Who, COOKIE};
use super::Console;
use crate::http::caller::AuthContext;
use crate::http::state::AppState;

/// A signed-in request: who, in which environment, and its CSRF token.
#[derive(Debug, Clone)]
pub struct Signed {
    session: Session,
    /// The cookie's value (to end or change the session).
    id: String,
    /// The key a company signed in with, checked live on this request.
    key: Option<AuthContext>,
    company_name: Option<String>,
}

impl Signed {
    pub fn is_admin(&self) -> bool {
        self.session.who == Who::Admin
    }

    pub fn environment(&self) -> Environment {
        self.session.environment
    }

    pub fn csrf(&self) -> &str {
        &self.session.csrf
    }

    pub(super) fn id(&self) -> &str {
        &self.id
    }

    /// The company a company session is bound to (`None` for the admin).
    pub fn own_company(&self) -> Option<CompanyId> {
        self.key.as_ref().map(|k| k.company_id)
    }

    /// The key context of a company signed in (what the API would see).
    pub fn key(&self) -> Option<&AuthContext> {
        self.key.as_ref()
    }

    /// The company a page shows: the signed-in company's own (asking for
    /// another is a 404, as the API answers a document of another company);
    /// the admin's choice, or `None` when it made none.
    pub fn company(&self, asked: Option<CompanyId>) -> Result<Option<CompanyId>, ConsoleError> {
        match (self.own_company(), asked) {
            (Some(own), Some(asked)) if own != asked => {
                Err(ConsoleError::NotFound(format!("empresa {asked}")))
            }
            (Some(own), _) => Ok(Some(own)),
            (None, asked) => Ok(asked),
        }
    }

    /// Refuses a company session.
    pub fn require_admin(&self) -> Result<(), ConsoleError> {
        if self.is_admin() {
            Ok(())
        } else {
            Err(ConsoleError::AdminOnly)
        }
    }

    /// What the header shows of the session.
    pub fn scope_label(&self) -> String {
        match (&self.session.who, &self.company_name) {
            (Who::Admin, _) => "Administración".to_string(),
            (Who::Company { company, .. }, Some(name)) => format!("{name} (#{company})"),
            (Who::Company { company, .. }, None) => format!("Empresa #{company}"),
        }
    }

    /// A record of `company` in `environment` may be shown to whoever signed in:
    /// otherwise it does not exist for it (404, never 403: a company learns
    /// nothing of another's ids).
    pub fn may_see(&self, company: CompanyId, environment: Environment) -> bool {
        environment == self.environment() && self.own_company().is_none_or(|own| own == company)
    }
}

fn app_state(req: &HttpRequest) -> Result<web::Data<AppState>, ConsoleError> {
    req.app_data::<web::Data<AppState>>()
        .cloned()
        .ok_or_else(|| ConsoleError::Api(crate::http::error::ApiError::Internal("state".into())))
}

fn console(req: &HttpRequest) -> Result<web::Data<Console>, ConsoleError> {
    req.app_data::<web::Data<Console>>()
        .cloned()
        .ok_or_else(|| ConsoleError::Api(crate::http::error::ApiError::Internal("console".into())))
}

async fn signed(req: HttpRequest) -> Result<Signed, ConsoleError> {
    if let Some(found) = req.extensions().get::<Signed>() {
        return Ok(found.clone());
    }
    let console = console(&req)?;
    let state = app_state(&req)?;
    let id = req
        .cookie(COOKIE)
        .map(|c| c.value().to_string())
        .ok_or(ConsoleError::SignIn)?;
    let session = console
        .sessions
        .get(&id)
        .await?
        .ok_or(ConsoleError::SignIn)?;
    let (key, company_name) = match &session.who {
        Who::Admin => (None, None),
        Who::Company { key_hash, .. } => {
            // A revoked key (or a removed company) ends the session.
            match crate::http::auth::resolve_hash(&state, key_hash).await {
                Ok(ctx) => {
                    let name = ctx.company_name.clone();
                    (Some(ctx), Some(name))
                }
                Err(crate::http::error::ApiError::InvalidApiKey) => {
                    if let Err(e) = console.sessions.end(&id).await {
                        tracing::warn!(target: "emisor::console", error = %e, "ending a console session");
                    }
                    return Err(ConsoleError::SignIn);
                }
                Err(e) => return Err(e.into()),
            }
        }
    };
    let found = Signed {
        session,
        id,
        key,
        company_name,
    };
    req.extensions_mut().insert(found.clone());
    Ok(found)
}

impl FromRequest for Signed {
    type Error = ConsoleError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, Self::Error>>>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        Box::pin(signed(req.clone()))
    }
}

/// Is the request's `Origin` (when the browser sent one) this server? The
/// host is compared with the request's `Host`: behind a TLS proxy the
/// scheme differs but the host is kept.
pub fn same_origin(req: &HttpRequest) -> bool {
    let Some(origin) = req.headers().get("Origin") else {
        return true;
    };
    let Ok(origin) = origin.to_str() else {
        return false;
    };
    let Some(host) = req.headers().get("Host").and_then(|h| h.to_str().ok()) else {
        return false;
    };
    origin
        .split_once("://")
        .is_some_and(|(_, authority)| authority.eq_ignore_ascii_case(host))
}

/// Does the stream's request come from the console's own pages? With an
/// `Origin`, it must be this server. Browsers send none on a same-origin
/// `EventSource` (a GET), but then they send `Sec-Fetch-Site:
/// same-origin`; a cross-site one always carries its `Origin`. A request
/// with neither is no browser's page: refused.
pub fn from_own_page(req: &HttpRequest) -> bool {
    if req.headers().contains_key("Origin") {
        return same_origin(req);
    }
    req.headers()
        .get("Sec-Fetch-Site")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("same-origin"))
}

/// Largest console form accepted (the scope's `PayloadConfig`; the
/// certificate upload, multipart, has its own).
pub const FORM_LIMIT: usize = 64 * 1024;

/// A urlencoded form posted by a signed-in session with its CSRF token.
pub struct Posted<T> {
    pub signed: Signed,
    pub form: T,
}

/// Checks a change's CSRF token and origin against the session.
pub fn check_change(
    req: &HttpRequest,
    signed: &Signed,
    token: Option<&str>,
) -> Result<(), ConsoleError> {
    if !same_origin(req) {
        return Err(ConsoleError::Forbidden(
            "Formulario enviado desde otro origen: rechazado.".into(),
        ));
    }
    let ok = token.is_some_and(|t| {
        t.len() == signed.csrf().len()
            && openssl::memcmp::eq(t.as_bytes(), signed.csrf().as_bytes())
    });
    if ok {
        Ok(())
    } else {
        Err(ConsoleError::Forbidden(
            "Falta el código de seguridad del formulario (CSRF) o no es el de esta sesión: recargue la página e intente de nuevo.".into(),
        ))
    }
}

async fn posted<T: DeserializeOwned>(
    req: HttpRequest,
    body: web::Bytes,
) -> Result<Posted<T>, ConsoleError> {
    let signed = signed(req.clone()).await?;
    let pairs: Vec<(String, String)> = serde_urlencoded::from_bytes(&body)
        .map_err(|e| ConsoleError::BadRequest(format!("Formulario ilegible: {e}")))?;
    let token = pairs
        .iter()
        .find(|(k, _)| k == "csrf")
        .map(|(_, v)| v.as_str());
    check_change(&req, &signed, token)?;
    let form = serde_urlencoded::from_bytes(&body)
        .map_err(|e| ConsoleError::BadRequest(format!("Formulario inválido: {e}")))?;
    Ok(Posted { signed, form })
}

impl<T: DeserializeOwned + 'static> FromRequest for Posted<T> {
    type Error = ConsoleError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, Self::Error>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let req = req.clone();
        let body = web::Bytes::from_request(&req, payload);
        Box::pin(async move {
            let body = body
                .await
                .map_err(|e| ConsoleError::BadRequest(format!("Formulario ilegible: {e}")))?;
            if body.len() > FORM_LIMIT {
                return Err(ConsoleError::BadRequest(
                    "Formulario demasiado grande.".into(),
                ));
            }
            posted(req, body).await
        })
    }
}
