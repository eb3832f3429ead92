//! `Authorization: Bearer <admin token>` on every `/admin` route.

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::{web, HttpMessage};
use sha2::{Digest, Sha256};

use crate::api::error::ApiError;
use crate::state::AppState;

/// The token the caller presented, for answers that echo it (demo keys).
#[derive(Clone)]
pub struct AdminToken(pub String);

pub async fn require_admin(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody>>, actix_web::Error> {
    match check(&req) {
        Ok(token) => {
            req.extensions_mut().insert(token);
            Ok(next.call(req).await?.map_into_left_body())
        }
        Err(e) => Ok(req.error_response(e).map_into_right_body()),
    }
}

fn check(req: &ServiceRequest) -> Result<AdminToken, ApiError> {
    let state = req
        .app_data::<web::Data<AppState>>()
        .cloned()
        .ok_or_else(|| ApiError::Internal("application state missing".into()))?;
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
