//! Why issuing refused a document or failed. Each API maps these to its
//! answers once (`http/error.rs`); nothing here knows of HTTP.

use emisor_store::StoreError;
use serde::Serialize;
use utoipa::ToSchema;

/// One problem with what the caller sent, named as the caller named it:
/// `{"field": "customer.email", "message": "is required"}`.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
pub struct FieldError {
    pub field: String,
    pub message: String,
}

impl FieldError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        FieldError {
            field: field.into(),
            message: message.into(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum IssueError {
    /// The request breaks a business rule; nothing was written.
    #[error("{message}")]
    Invalid {
        message: String,
        details: Vec<FieldError>,
    },
    #[error("{0} not found")]
    NotFound(String),
    /// The external reference names an existing document.
    #[error("a document with this reference already exists (id {id})")]
    DuplicateReference { id: u64 },
    /// The same reference is being issued by another request right now.
    #[error("another request with this reference is being processed")]
    DuplicateInProgress,
    /// The same payload made a document within the duplicate window.
    #[error("an identical request was sent within the duplicate window")]
    DuplicatePayload { id: Option<u64> },
    /// The document (or run) is not in a state that allows this.
    #[error("{0}")]
    InvalidState(String),
    /// Production documents are not issued while the authority is away.
    #[error("{0}")]
    TaxUnavailable(String),
    #[error(transparent)]
    Store(StoreError),
    /// A fault of ours (an actor gone, a stored record missing).
    #[error("{0}")]
    Internal(String),
}

impl IssueError {
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        IssueError::invalid_list(vec![FieldError::new(field, message)])
    }

    pub fn invalid_list(details: Vec<FieldError>) -> Self {
        let message = match details.as_slice() {
            [one] => format!("{}: {}", one.field, one.message),
            many => format!("{} fields are invalid", many.len()),
        };
        IssueError::Invalid { message, details }
    }
}

impl From<StoreError> for IssueError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound(what) => IssueError::NotFound(what.to_string()),
            StoreError::DuplicateReference { id } => IssueError::DuplicateReference { id },
            StoreError::LimitReached { limit } => IssueError::invalid(
                "suscripcion",
                format!("the monthly limit of {limit} documents is reached"),
            ),
            StoreError::RangeExhausted { .. } => {
                IssueError::invalid("resolucion", "the numbering range is exhausted")
            }
            held @ StoreError::NumberingHeld { .. } => IssueError::InvalidState(held.to_string()),
            other => IssueError::Store(other),
        }
    }
}

pub type IssueResult<T> = Result<T, IssueError>;
