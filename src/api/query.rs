//! Query strings: our own extractor so a bad parameter is a 422 naming it,
//! in the envelope.

use std::future::{ready, Ready};

use actix_web::{FromRequest, HttpRequest};
use serde::de::DeserializeOwned;

use super::error::ApiError;

pub struct Query<T>(pub T);

impl<T> std::ops::Deref for Query<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: DeserializeOwned> FromRequest for Query<T> {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut actix_web::dev::Payload) -> Self::Future {
        ready(parse(req.query_string()).map(Query))
    }
}

pub fn parse<T: DeserializeOwned>(query: &str) -> Result<T, ApiError> {
    let de = serde_urlencoded::Deserializer::new(form_urlencoded_parse(query));
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        if let Some(field) = inner
            .strip_prefix("missing field `")
            .and_then(|r| r.strip_suffix('`'))
        {
            ApiError::validation(field, "is required")
        } else {
            let field = if path.is_empty() || path == "." {
                "query".into()
            } else {
                path
            };
            ApiError::validation(field, format!("invalid value: {inner}"))
        }
    })
}

fn form_urlencoded_parse(q: &str) -> form_urlencoded::Parse<'_> {
    form_urlencoded::parse(q.as_bytes())
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
