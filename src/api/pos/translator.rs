//! This API's stored requests, translated again for issuing (a half-built
//! receipt after a crash, a resend).
//!
//! The reader of the earlier format of stored requests (the caller's JSON
//! alone, `issuing::stored`): such a document is built again from what
//! this makes of it. A request of today's format carries its domain
//! request, which is what is built; this then only names the fields of a
//! refusal as the caller named them.

use super::mapping::{adjustment, receipt, StoredPosAdjustment};
use super::model::PosRequest;
use crate::http::error::ApiError;
use crate::http::json::parse;
use crate::issuing::error::{IssueError, IssueResult};
use crate::issuing::request::{DocumentRequest, Translator};

pub struct PosTranslator;

fn stored(e: ApiError) -> IssueError {
    match e {
        ApiError::Validation { message, details } => IssueError::Invalid { message, details },
        other => IssueError::Internal(format!("stored request: {other}")),
    }
}

fn is_adjustment(request: &[u8]) -> IssueResult<bool> {
    let v: serde_json::Value = parse(request).map_err(stored)?;
    Ok(v.get("documento_referencia").is_some())
}

impl Translator for PosTranslator {
    fn translate(&self, request: &[u8]) -> IssueResult<DocumentRequest> {
        if is_adjustment(request)? {
            let a: StoredPosAdjustment = parse(request).map_err(stored)?;
            let translated = adjustment(&a)
                .map_err(stored)?
                .map_err(|refused| IssueError::invalid_list(refused.assuming_found()))?;
            Ok(translated)
        } else {
            let r: PosRequest = parse(request).map_err(stored)?;
            receipt(&r).map_err(stored)
        }
    }
}
