//! `Authorization: Bearer <admin token>` on every `/admin` route. A wrong
//! token is logged (the address, never the token) and counted against its
//! address (`crate::http::token_failures`): one that sent too many waits.

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use std::net::IpAddr;
use std::time::Instant;

use actix_web::{web, HttpMessage};
use sha2::{Digest, Sha256};

use crate::http::token_failures::{counted_address, BUDGET, WINDOW};

use crate::http::error::ApiError;
use crate::http::state::AppState;

/// The token the caller presented, for answers that echo it (demo keys).
#[derive(Clone)]
pub struct AdminToken(pub String);

pub async fn require_admin(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody>>, actix_web::Error> {
    let Some(state) = req.app_data::<web::Data<AppState>>().cloned() else {
        let e = ApiError::Internal("application state missing".into());
        return Ok(req.error_response(e).map_into_right_body());
    };
    let peer = req.peer_addr().map(|a| a.ip());
    let now = Instant::now();
    if let Some(wait) = peer.and_then(|ip| state.admin_failures.wait(ip, now)) {
        let e = ApiError::RateLimited {
            retry_after_s: wait as i64,
        };
        return Ok(req.error_response(e).map_into_right_body());
    }
    match check(&state, &req) {
        Ok(token) => {
            req.extensions_mut().insert(token);
            Ok(next.call(req).await?.map_into_left_body())
        }
        Err(e) => {
            if matches!(e, ApiError::InvalidAdminToken) {
                wrong_token(&state, peer, req.path(), now);
            }
            Ok(req.error_response(e).map_into_right_body())
        }
    }
}

/// Logs a wrong token and counts it against its address.
fn wrong_token(state: &AppState, peer: Option<IpAddr>, path: &str, now: Instant) {
    let Some(ip) = peer else {
        tracing::warn!(target: "emisor::admin", path, "wrong admin token (no peer address)");
        return;
    };
    let failures = state.admin_failures.failed(ip, now);
    let peer = counted_address(ip);
    if failures < BUDGET {
        tracing::warn!(target: "emisor::admin", %peer, path, failures, "wrong admin token");
    } else if failures == BUDGET {
        tracing::warn!(
            target: "emisor::admin",
            %peer,
            path,
            failures,
            window_s = WINDOW.as_secs(),
            "wrong admin token: admin requests from this address refused until its window ends"
        );
    }
}

fn check(state: &AppState, req: &ServiceRequest) -> Result<AdminToken, ApiError> {
    let token = req
        .headers()
        .get(actix_web::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or(ApiError::MissingAdminToken)?
        .to_string();
    let presented: [u8; 32] = Sha256::digest(token.as_bytes()).into();
    // Compare digests in constant time: no early exit leaks a prefix.
    if !openssl::memcmp::eq(&presented, &state.admin_token_sha256) {
        return Err(ApiError::InvalidAdminToken);
    }
    Ok(AdminToken(token))
}
