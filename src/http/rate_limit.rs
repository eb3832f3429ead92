//! Per-key rate limit (spec §8) in front of every keyed endpoint: checks
//! the rate limiter's shared windows on the worker's own thread (or, on a
//! store several nodes share, counts in the store in batches:
//! [`super::shared_counts`]), refuses with 429 +
//! `Retry-After`, and puts `X-RateLimit-*` on every response, errors
//! included.

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::middleware::Next;
use actix_web::{web, HttpMessage, ResponseError};
use emisor_actors::rate_limiter::{Check, RateDecision};

use super::auth::AuthContext;
use super::error::ApiError;
use super::state::AppState;

async fn decide(req: &ServiceRequest) -> Result<RateDecision, ApiError> {
    let state = req
        .app_data::<web::Data<AppState>>()
        .cloned()
        .ok_or_else(|| ApiError::Internal("application state missing".into()))?;
    let ctx = req
        .extensions()
        .get::<AuthContext>()
        .cloned()
        .ok_or(ApiError::InvalidApiKey)?;
    let check = Check {
        key_id: ctx.key_id,
        limit: ctx.rate_limit,
        now_unix: chrono::Utc::now().timestamp(),
    };
    if !state.store.is_shared() {
        return Ok(state.rate_windows.check(check));
    }
    // Several nodes may serve this store: the key's minute is counted in
    // it (in batches away from the limit), so the limit holds across them.
    // A store that cannot count falls back to this node's own window
    // (logged) rather than refusing.
    match super::shared_counts::check(&state.store, &state.shared_counts, check).await {
        Ok(decision) => Ok(decision),
        Err(e) => {
            tracing::warn!(error = %e, "counting a request in the store; counted on this node");
            Ok(state.rate_windows.check(check))
        }
    }
}

fn put_headers<B>(res: &mut ServiceResponse<B>, d: &RateDecision) {
    let h = res.headers_mut();
    let mut set = |name: &'static str, v: i64| {
        if let Ok(value) = HeaderValue::from_str(&v.to_string()) {
            h.insert(HeaderName::from_static(name), value);
        }
    };
    set("x-ratelimit-limit", i64::from(d.limit));
    set("x-ratelimit-remaining", i64::from(d.remaining));
    set("x-ratelimit-reset", d.reset_unix);
}

pub async fn limit(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody>>, actix_web::Error> {
    let decision = match decide(&req).await {
        Ok(d) => d,
        Err(e) => return Ok(req.error_response(e).map_into_right_body()),
    };
    if !decision.allowed {
        let err = ApiError::RateLimited {
            retry_after_s: decision.retry_after_s,
        };
        let (http_req, _) = req.into_parts();
        let mut res = ServiceResponse::new(http_req, err.error_response()).map_into_right_body();
        put_headers(&mut res, &decision);
        return Ok(res);
    }
    let mut res = next.call(req).await?.map_into_left_body();
    put_headers(&mut res, &decision);
    Ok(res)
}
