//! The Spanish-named API's stored requests, translated again for issuing (a
//! half-built document after a crash, a resend). The stored request is the
//! route, the original's id (a note named by its CUFE is stored with the id
//! issuing found for it, `issuing::issue::submit_recording`) and the body as
//! the caller sent it.
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
pub fn stored_request(route: Route, original: Option<u64>, body: Value) -> IssueResult<Vec<u8>> {
    serde_json::to_vec(&json!({
        "ruta": route.tag(),
        "documento_referencia": original,
        "cuerpo": body,
    }))
    .map_err(|e| IssueError::Internal(format!("writing the stored request: {e}")))
}

struct Stored {
    route: Route,
    original: Option<u64>,
    body: Value,
}

fn load(request: &[u8]) -> IssueResult<Stored> {
    let mut v: Value = serde_json::from_slice(request)
        .map_err(|e| IssueError::Internal(format!("stored request: {e}")))?;
    let route = v
        .get("ruta")
        .and_then(Value::as_str)
        .and_then(Route::from_tag)
        .ok_or_else(|| IssueError::Internal("stored request: unknown route".into()))?;
    let original = v.get("documento_referencia").and_then(Value::as_u64);
    Ok(Stored {
        route,
        original,
        body: v.get_mut("cuerpo").map(Value::take).unwrap_or_default(),
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
        // The original as found when the document was issued: by its id.
        parsed.request.id_documento_referencia = s.original;
        if s.original.is_some() {
            parsed.original_code = None;
        }
        to_request(parsed).map_err(|refused| IssueError::invalid_list(refused.assuming_found()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The stored request (and so the duplicate window's hash) records the
    /// original's id, however the caller named it.
    #[test]
    fn a_stored_request_is_the_route_the_originals_id_and_the_body() {
        let body = json!({"cufe_factura_referencia": "ab", "concepto_nota": "1"});
        let bytes = stored_request(Route::NotaCredito, Some(7), body).unwrap();
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            r#"{"cuerpo":{"concepto_nota":"1","cufe_factura_referencia":"ab"},"documento_referencia":7,"ruta":"nota-credito"}"#
        );
    }
}
