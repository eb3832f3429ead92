//! A family's body translated onto the unified request, as the support
//! document and POS APIs do: they write their body as a unified request,
//! map it by the unified rules, and rename the unified field paths in any
//! refusal back to their own (`producto` for `invoice_lines`).

use std::sync::Arc;

use super::mapping::{to_document, MappedDocument};
use super::request::FacturacionRequest;
use crate::http::error::{ApiError, FieldError};
use crate::http::json::parse_value;
use crate::issuing::reference::{Pending, Reference, Refused};
use crate::issuing::request::{CallerFields, DocumentRequest};

/// How a family names the unified request's fields: `(unified, own)`
/// substrings, replaced in order (longest first where one contains another).
pub type Renames = &'static [(&'static str, &'static str)];

pub fn rename(renames: Renames, path: &str) -> String {
    let mut out = path.to_string();
    for (from, to) in renames {
        if out.contains(from) {
            out = out.replace(from, to);
        }
    }
    out
}

/// A refusal of the unified mapping, naming the family's fields.
pub fn renamed_error(renames: Renames, e: ApiError) -> ApiError {
    match e {
        ApiError::Validation { details, .. } => ApiError::validation_list(
            details
                .into_iter()
                .map(|d| FieldError::new(rename(renames, &d.field), d.message))
                .collect(),
        ),
        other => other,
    }
}

/// The unified caller fields, renamed to the family's (the declared
/// amounts' too: [`renamed_request`]).
#[derive(Debug)]
pub struct RenamedFields {
    pub inner: Arc<dyn CallerFields>,
    pub renames: Renames,
}

impl CallerFields for RenamedFields {
    fn field(&self, engine_field: &str) -> String {
        rename(self.renames, &self.inner.field(engine_field))
    }
}

/// A unified domain request whose refusals name the family's fields.
pub fn renamed_request(mut request: DocumentRequest, renames: Renames) -> DocumentRequest {
    for d in &mut request.declared {
        d.field = rename(renames, &d.field);
    }
    request.fields = Arc::new(RenamedFields {
        inner: request.fields.clone(),
        renames,
    });
    request
}

/// The family's body written as a unified request, mapped by the unified
/// API's rules; refusals name the family's fields. Its own problems
/// (`errors`, found while writing the body) come first in a refusal, and
/// refuse the request even when the unified rules accept it. A body the
/// unified request cannot read is the outer error.
pub fn map_unified(
    renames: Renames,
    unified: &serde_json::Value,
    mut errors: Vec<FieldError>,
) -> Result<Result<MappedDocument, Refused>, ApiError> {
    let req: FacturacionRequest = match parse_value(unified) {
        Ok(req) => req,
        Err(ApiError::Validation { details, .. }) => {
            let counted_from = errors.len();
            errors.extend(details.into_iter().map(|d| renamed(renames, d)));
            return Ok(Err(Refused {
                details: errors,
                pending: None,
                counted_from,
            }));
        }
        Err(other) => return Err(other),
    };
    Ok(match to_document(&req) {
        Ok(m) if errors.is_empty() => Ok(m),
        // Accepted by the unified rules: only the original is still to be
        // checked with the family's problems.
        Ok(m) => Err(Refused {
            pending: m.reference.map(|reference| Pending {
                note: m.kind,
                reference: Reference {
                    field: rename(renames, &reference.field),
                    ..reference
                },
                at: errors.len(),
            }),
            counted_from: errors.len(),
            details: errors,
        }),
        Err(r) => Err(r.renamed(|f| rename(renames, f)).after(errors)),
    })
}

fn renamed(renames: Renames, d: FieldError) -> FieldError {
    FieldError::new(rename(renames, &d.field), d.message)
}

/// A placeholder for a counterparty without email (the unified customer
/// requires one); the mapped document and the stored customer drop it.
pub const NO_EMAIL: &str = "sin-correo@correo.invalid";

/// Removes [`NO_EMAIL`] from the mapped document.
pub fn drop_placeholder_email(mapped: &mut MappedDocument) {
    if mapped.document.counterparty.email.as_deref() == Some(NO_EMAIL) {
        mapped.document.counterparty.email = None;
    }
    if mapped.customer.email == NO_EMAIL {
        mapped.customer.email = String::new();
    }
}

/// A trimmed optional text of at most `max` characters, or a 422.
pub fn opt_text(
    field: &str,
    value: Option<&str>,
    max: usize,
    errors: &mut Vec<FieldError>,
) -> Option<String> {
    let v = value.map(str::trim).filter(|v| !v.is_empty())?;
    if v.chars().count() > max || v.chars().any(char::is_control) {
        errors.push(FieldError::new(
            field,
            format!("at most {max} characters, without control characters"),
        ));
    }
    Some(v.to_string())
}
