//! The payroll API's stored requests, translated again for issuing (a
//! half-built payroll after a crash, a resend). An adjustment is stored
//! with the original's defaults filled in, so it needs nothing else.

use serde_json::Value;

use super::mapping::{to_adjustment, to_individual};
use super::model::{AjusteRequest, NominaRequest};
use crate::api::error::ApiError;
use crate::api::json::parse;
use crate::issuing::error::{IssueError, IssueResult};
use crate::issuing::payroll::PayrollRequest;
use crate::issuing::request::{DocumentRequest, ReferencedDocument, Translator};

pub struct PayrollTranslator;

fn stored(e: ApiError) -> IssueError {
    match e {
        ApiError::Validation { message, details } => IssueError::Invalid { message, details },
        other => IssueError::Internal(format!("stored payroll request: {other}")),
    }
}

/// A stored payroll request (`enviar` or `ajuste`) as a payroll to issue.
pub fn translate(request: &[u8]) -> Result<PayrollRequest, ApiError> {
    let value: Value = parse(request)?;
    if value.get("cune_referencia").is_some() {
        to_adjustment(&parse::<AjusteRequest>(request)?)
    } else {
        to_individual(&parse::<NominaRequest>(request)?)
    }
}

impl Translator for PayrollTranslator {
    fn referenced_id(&self, _request: &[u8]) -> IssueResult<Option<u64>> {
        Ok(None)
    }

    fn translate(
        &self,
        _request: &[u8],
        _reference: Option<&ReferencedDocument>,
    ) -> IssueResult<DocumentRequest> {
        Err(IssueError::Internal(
            "a payroll is not an invoicing document".into(),
        ))
    }

    fn translate_payroll(&self, request: &[u8]) -> IssueResult<PayrollRequest> {
        translate(request).map_err(stored)
    }
}
