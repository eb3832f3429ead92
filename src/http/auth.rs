//! API-key authentication (spec §5): the company and the environment come
//! from the `X-Api-Key` header. A request naming another company's
//! `id_empresa` in its query is refused with 403 (422 when it is not a
//! number), and one whose query `ambiente` contradicts the key's
//! environment with 422 (as a body's `ambiente` is), before any handler
//! runs, but only after the rate limiter has counted it: [`authenticate`]
//! resolves the key, [`own_company`] checks the query inside the rate
//! limiter, so the refusal carries `X-RateLimit-*`.

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::{web, HttpMessage};
use emisor_store::{CompanyId, Environment};

use super::error::ApiError;
use super::state::AppState;
use crate::provisioning::api_keys::{hash_key, parse_shape};

pub use super::caller::AuthContext;

pub const API_KEY_HEADER: &str = "X-Api-Key";

/// How long a cached key is trusted when several nodes share the store: a
/// revocation or change another node made is heard at once
/// (`crate::fanout`), and should its note be lost, seen within this.
pub const SHARED_KEY_TTL: std::time::Duration = std::time::Duration::from_secs(30);

/// Resolves a key to its context: cache first, then the store.
pub async fn resolve(state: &AppState, secret: &str) -> Result<AuthContext, ApiError> {
    if parse_shape(secret).is_none() {
        return Err(ApiError::InvalidApiKey);
    }
    resolve_hash(state, &hash_key(secret)).await
}

/// Resolves a key by its SHA-256 hex (the console's sessions keep only
/// that): cache first, then the store; a revoked key is refused.
pub async fn resolve_hash(state: &AppState, hash: &str) -> Result<AuthContext, ApiError> {
    if let Some(cached) = state.key_cache.get(hash) {
        let (ctx, at) = cached.value();
        if !state.store.is_shared() || at.elapsed() < SHARED_KEY_TTL {
            return Ok(ctx.clone());
        }
    }
    // Only on the first request of each key (and after a revoke).
    let record = state
        .store
        .api_key_by_hash(hash.to_string())
        .await?
        .filter(|k| k.revoked_at.is_none())
        .ok_or(ApiError::InvalidApiKey)?;
    let company = state
        .store
        .company(record.company_id)
        .await?
        .ok_or(ApiError::InvalidApiKey)?;
    let ctx = AuthContext {
        key_id: record.id,
        company_id: company.id,
        company_name: company.name,
        nit: company.nit,
        environment: record.environment,
        user_id: record.user_id,
        rate_limit: company
            .rate_limit_per_minute
            .unwrap_or(state.settings.rate_limit.requests_per_minute),
    };
    state
        .key_cache
        .insert(hash.to_string(), (ctx.clone(), std::time::Instant::now()));
    Ok(ctx)
}

/// What the query string says of company and environment.
#[derive(Debug, Default)]
struct QueryScope {
    company: Option<CompanyId>,
    environment: Option<Environment>,
}

/// `id_empresa` and `ambiente` from the query string, if present and valid.
fn query_scope(req: &ServiceRequest) -> Result<QueryScope, ApiError> {
    let mut found = QueryScope::default();
    // Decoded like every other query parameter (`%31` is `1`); given twice
    // with different values, which one is meant is unknowable.
    for (name, value) in form_urlencoded::parse(req.query_string().as_bytes()) {
        match name.as_ref() {
            "id_empresa" => {
                let id: CompanyId = value
                    .parse()
                    .map_err(|_| ApiError::validation("id_empresa", "must be an integer"))?;
                if found.company.is_some_and(|f| f != id) {
                    return Err(ApiError::validation(
                        "id_empresa",
                        "given twice with different values",
                    ));
                }
                found.company = Some(id);
            }
            "ambiente" => {
                let env = match value.as_ref() {
                    "1" => Environment::Live,
                    "2" => Environment::Test,
                    _ => {
                        return Err(ApiError::validation(
                            "ambiente",
                            "must be `1` (production) or `2` (testing)",
                        ))
                    }
                };
                if found.environment.is_some_and(|f| f != env) {
                    return Err(ApiError::validation(
                        "ambiente",
                        "given twice with different values",
                    ));
                }
                found.environment = Some(env);
            }
            _ => {}
        }
    }
    Ok(found)
}

/// Resolves the key and stores its [`AuthContext`] in the request.
pub async fn authenticate(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody>>, actix_web::Error> {
    match key_context(&req).await {
        Ok(ctx) => {
            req.extensions_mut().insert(ctx);
            Ok(next.call(req).await?.map_into_left_body())
        }
        // Answered here rather than raised, so outer middleware sees a
        // response (request id, access log, metrics).
        Err(e) => Ok(req.error_response(e).map_into_right_body()),
    }
}

async fn key_context(req: &ServiceRequest) -> Result<AuthContext, ApiError> {
    let state = req
        .app_data::<web::Data<AppState>>()
        .cloned()
        .ok_or_else(|| ApiError::Internal("application state missing".into()))?;
    let secret = presented_key(req.headers(), req.path(), req.query_string())
        .ok_or(ApiError::MissingApiKey)?;
    resolve(&state, &secret).await
}

/// The key a request presents: its `X-Api-Key` header, or on the WebSocket
/// handshake only its `?api_key=` (browsers cannot set headers there;
/// anywhere else a key in the URL would end up in logs and histories).
pub fn presented_key(
    headers: &actix_web::http::header::HeaderMap,
    path: &str,
    query: &str,
) -> Option<String> {
    headers
        .get(API_KEY_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_string)
        .or_else(|| {
            (path == WS_PATH)
                .then(|| {
                    query
                        .split('&')
                        .find_map(|p| p.strip_prefix("api_key=").map(str::to_string))
                })
                .flatten()
        })
}

/// The only route that takes its key as `?api_key=` (decisions.md §4).
const WS_PATH: &str = "/v1/api/ws";

/// Refuses a query `id_empresa` that is not a number (422) or not the key's
/// company (403), and a query `ambiente` that is not `1` or `2` or is not
/// the key's environment (422). Runs inside the rate limiter (after
/// [`authenticate`]), so the refusal is counted and carries the rate headers.
pub async fn own_company(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody>>, actix_web::Error> {
    match check_company(&req) {
        Ok(()) => Ok(next.call(req).await?.map_into_left_body()),
        Err(e) => Ok(req.error_response(e).map_into_right_body()),
    }
}

fn check_company(req: &ServiceRequest) -> Result<(), ApiError> {
    let scope = query_scope(req)?;
    if scope.company.is_none() && scope.environment.is_none() {
        return Ok(());
    }
    let extensions = req.extensions();
    let ctx = extensions
        .get::<AuthContext>()
        .ok_or(ApiError::InvalidApiKey)?;
    if let Some(env) = scope.environment.filter(|e| *e != ctx.environment) {
        return Err(ApiError::validation(
            "ambiente",
            format!(
                "is {} but the API key is of {}: the key decides the environment",
                env.authority_code(),
                match ctx.environment {
                    Environment::Live => "production (1)",
                    Environment::Test => "testing (2)",
                }
            ),
        ));
    }
    match scope.company {
        Some(id) => ctx.ensure_company(id),
        None => Ok(()),
    }
}
