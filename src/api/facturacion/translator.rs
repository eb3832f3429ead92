//! The unified API's stored requests, translated again for issuing (a
//! half-built document after a crash, a resend, the test set).
//!
//! The reader of the earlier format of stored requests (the caller's JSON
//! alone, `issuing::stored`): such a document is built again from what
//! this makes of it. A request of today's format carries its domain
//! request, which is what is built; this then only names the fields of a
//! refusal as the caller named them.

use crate::api::invoice_request::mapping::to_document;
use crate::api::invoice_request::request::FacturacionRequest;
use crate::http::error::ApiError;
use crate::http::json::parse;
use crate::issuing::error::{IssueError, IssueResult};
use crate::issuing::request::{DocumentRequest, Translator};

pub struct UnifiedTranslator;

/// A stored request that no longer maps is ours to explain, except a
/// business refusal (a note whose original vanished), kept as such.
fn stored(e: ApiError) -> IssueError {
    match e {
        ApiError::Validation { message, details } => IssueError::Invalid { message, details },
        other => IssueError::Internal(format!("stored request: {other}")),
    }
}

impl Translator for UnifiedTranslator {
    fn translate(&self, request: &[u8]) -> IssueResult<DocumentRequest> {
        let req: FacturacionRequest = parse(request).map_err(stored)?;
        let mapped = to_document(&req)
            .map_err(|refused| IssueError::invalid_list(refused.assuming_found()))?;
        Ok(mapped.into_request())
    }
}
