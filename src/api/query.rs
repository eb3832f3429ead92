//! Query strings: a bad parameter is a 422 naming it, in the envelope.

use actix_web::error::QueryPayloadError;
use actix_web::{web, HttpRequest};

use super::error::ApiError;

pub fn config() -> web::QueryConfig {
    web::QueryConfig::default().error_handler(|err, _req: &HttpRequest| {
        let text = match &err {
            QueryPayloadError::Deserialize(e) => e.to_string(),
            other => other.to_string(),
        };
        let field = text.split('`').nth(1).unwrap_or("query").to_string();
        ApiError::validation(field, format!("invalid query parameter: {text}")).into()
    })
}

/// Paging of every list (decisions.md §4): page ≥ 1, 1 ≤ limit ≤ 100.
pub fn paging(page: Option<u32>, limit: Option<u32>) -> Result<(u32, u32), ApiError> {
    let page = page.unwrap_or(1);
    let limit = limit.unwrap_or(20);
    if page == 0 {
        return Err(ApiError::validation("page", "must be at least 1"));
    }
    if !(1..=100).contains(&limit) {
        return Err(ApiError::validation("limit", "must be between 1 and 100"));
    }
    Ok((page, limit))
}
