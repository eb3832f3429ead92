//! The Spanish-named API's stored requests, translated again for issuing (a
//! half-built document after a crash, a resend). The stored request is the
//! route, the original's id (a note named by its CUFE is resolved before it
//! is stored) and the body as the caller sent it.
//!
//! The reader of the earlier format of stored requests (the caller's JSON
//! alone, `issuing::stored`): such a document is built again from what
//! this makes of it. A request of today's format carries its domain
//! request, which is what is built; this then only names the fields of a
//! refusal as the caller named them.

use serde_json::{json, Value};

use super::mapping::to_request;
use super::model::{read, Route};
use crate::http::error::ApiError;
use crate::issuing::error::{IssueError, IssueResult};
use crate::issuing::request::{DocumentRequest, Translator};

pub struct SpanishTranslator;

/// The stored form of a request (canonical JSON: object keys sorted).
pub fn stored_request(
    route: Route,
    original: Option<u64>,
    body: Value,
) -> Result<Vec<u8>, ApiError> {
    serde_json::to_vec(&json!({
        "ruta": route.tag(),
        "documento_referencia": original,
        "cuerpo": body,
    }))
    .map_err(|e| ApiError::MalformedJson(e.to_string()))
}

struct Stored {
    route: Route,
    original: Option<u64>,
    body: Value,
}

fn load(request: &[u8]) -> IssueResult<Stored> {
    let mut v: Value = serde_json::from_slice(request)
        .map_err(|e| IssueError::Internal(format!("stored request: {e}")))?;
    let route = v["ruta"]
        .as_str()
        .and_then(Route::from_tag)
        .ok_or_else(|| IssueError::Internal("stored request: unknown route".into()))?;
    let original = v["documento_referencia"].as_u64();
    Ok(Stored {
        route,
        original,
        body: v["cuerpo"].take(),
    })
}

/// A stored request that no longer maps is ours to explain, except a
/// business refusal (a note whose original vanished), kept as such.
fn stored(e: ApiError) -> IssueError {
    match e {
        ApiError::Validation { message, details } => IssueError::Invalid { message, details },
        other => IssueError::Internal(format!("stored request: {other}")),
    }
}

impl Translator for SpanishTranslator {
    fn translate(&self, request: &[u8]) -> IssueResult<DocumentRequest> {
        let s = load(request)?;
        let mut parsed = read(&s.body, s.route, None).map_err(stored)?;
        parsed.request.id_documento_referencia = s.original;
        to_request(parsed).map_err(|refused| IssueError::invalid_list(refused.assuming_found()))
    }
}
