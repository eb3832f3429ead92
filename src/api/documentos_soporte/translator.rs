//! This API's stored requests, translated again for issuing (a half-built
//! document after a crash, a resend).
//!
//! The reader of the earlier format of stored requests (the caller's JSON
//! alone, `issuing::stored`): such a document is built again from what
//! this makes of it. A request of today's format carries its domain
//! request, which is what is built; this then only names the fields of a
//! refusal as the caller named them.

use chrono::NaiveDate;

use super::mapping::{adjustment, support_document, StoredAdjustment};
use super::model::SupportRequest;
use crate::http::error::ApiError;
use crate::http::json::parse;
use crate::issuing::error::{IssueError, IssueResult};
use crate::issuing::request::{DocumentRequest, Translator};

pub struct SupportTranslator;

fn stored(e: ApiError) -> IssueError {
    match e {
        ApiError::Validation { message, details } => IssueError::Invalid { message, details },
        other => IssueError::Internal(format!("stored request: {other}")),
    }
}

/// A stored adjustment names its original; a support document does not.
fn is_adjustment(request: &[u8]) -> IssueResult<bool> {
    let v: serde_json::Value = parse(request).map_err(stored)?;
    Ok(v.get("documento_referencia").is_some())
}

impl Translator for SupportTranslator {
    fn translate(&self, request: &[u8]) -> IssueResult<DocumentRequest> {
        let mapped = if is_adjustment(request)? {
            let a: StoredAdjustment = parse(request).map_err(stored)?;
            adjustment(&a)
        } else {
            let mut r: SupportRequest = parse(request).map_err(stored)?;
            // Rebuilt later: the stored date was checked when it was sent.
            r.fecha_emision = None;
            support_document(&r, NaiveDate::MIN)
        };
        mapped
            .map_err(stored)?
            .map_err(|refused| IssueError::invalid_list(refused.assuming_found()))
    }
}
