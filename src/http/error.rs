//! The one error type of the HTTP API. Every failure — handler, extractor,
//! middleware, unknown route — renders the envelope of decisions.md §3 with a
//! stable `error.code`.

use actix_web::http::{header, StatusCode};
use actix_web::{HttpResponse, ResponseError};
use serde::Serialize;
use utoipa::ToSchema;

use crate::issuing::error::IssueError;
use crate::provisioning::ProvisioningError;
use emisor_store::StoreError;

pub use crate::issuing::error::FieldError;

/// The stable `error.code` of every refusal (decisions.md §3, plus the
/// admin API's own).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    MalformedJson,
    MissingApiKey,
    InvalidApiKey,
    MissingAdminToken,
    InvalidAdminToken,
    Forbidden,
    NotFound,
    DuplicateReference,
    DuplicateInProgress,
    DuplicatePayload,
    InvalidState,
    /// An admin record that exists already (a NIT registered twice).
    Conflict,
    PayloadTooLarge,
    /// A request body that did not arrive in full in time (408).
    RequestTimeout,
    ValidationError,
    RateLimited,
    TaxUnavailable,
    /// A bounded work queue is full (XML uploads).
    Busy,
    /// The node cannot reach its store (PostgreSQL): new work waits.
    StoreUnavailable,
    InternalError,
}

impl ErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::MalformedJson => "MALFORMED_JSON",
            ErrorCode::MissingApiKey => "MISSING_API_KEY",
            ErrorCode::InvalidApiKey => "INVALID_API_KEY",
            ErrorCode::MissingAdminToken => "MISSING_ADMIN_TOKEN",
            ErrorCode::InvalidAdminToken => "INVALID_ADMIN_TOKEN",
            ErrorCode::Forbidden => "FORBIDDEN",
            ErrorCode::NotFound => "NOT_FOUND",
            ErrorCode::DuplicateReference => "DUPLICATE_REFERENCE",
            ErrorCode::DuplicateInProgress => "DUPLICATE_IN_PROGRESS",
            ErrorCode::DuplicatePayload => "DUPLICATE_PAYLOAD",
            ErrorCode::InvalidState => "INVALID_STATE",
            ErrorCode::Conflict => "CONFLICT",
            ErrorCode::PayloadTooLarge => "PAYLOAD_TOO_LARGE",
            ErrorCode::RequestTimeout => "REQUEST_TIMEOUT",
            ErrorCode::ValidationError => "VALIDATION_ERROR",
            ErrorCode::RateLimited => "RATE_LIMITED",
            ErrorCode::TaxUnavailable => "TAX_UNAVAILABLE",
            ErrorCode::Busy => "BUSY",
            ErrorCode::StoreUnavailable => "STORE_UNAVAILABLE",
            ErrorCode::InternalError => "INTERNAL_ERROR",
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    MalformedJson(String),
    #[error("missing X-Api-Key header (a `?api_key=` query parameter is accepted on the WebSocket handshake only)")]
    MissingApiKey,
    #[error("invalid API key")]
    InvalidApiKey,
    #[error("missing admin token")]
    MissingAdminToken,
    #[error("invalid admin token")]
    InvalidAdminToken,
    #[error("{0}")]
    Forbidden(String),
    #[error("{0} not found")]
    NotFound(String),
    #[error("{message}")]
    Conflict {
        code: ErrorCode,
        message: String,
        data: Option<serde_json::Value>,
    },
    #[error("request body is larger than {limit} bytes")]
    PayloadTooLarge { limit: usize },
    #[error("the request body did not arrive within {limit_s} s")]
    RequestTimeout { limit_s: u64 },
    #[error("{message}")]
    Validation {
        message: String,
        details: Vec<FieldError>,
    },
    #[error("rate limit exceeded, retry in {retry_after_s} s")]
    RateLimited { retry_after_s: i64 },
    #[error("{0}")]
    TaxUnavailable(String),
    /// A bounded work queue is full; try again after `retry_after_s`.
    #[error("{message}")]
    Busy { message: String, retry_after_s: u64 },
    /// The store cannot be reached; the cause is logged.
    #[error("the store is unavailable; retry in a few seconds")]
    StoreUnavailable(String),
    /// A fault of ours; the cause is logged, the client gets a request id.
    #[error("internal error")]
    Internal(String),
}

#[derive(Serialize, ToSchema)]
pub struct ErrorBody {
    pub code: ErrorCode,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<FieldError>,
}

/// The error envelope: `success: false`, a message, `error.code`, and `data`
/// when there is something to point at (the existing document of a
/// duplicate reference).
#[derive(Serialize, ToSchema)]
pub struct ErrorEnvelope {
    pub success: bool,
    pub message: String,
    pub error: ErrorBody,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub data: Option<serde_json::Value>,
}

impl ApiError {
    pub fn validation(field: impl Into<String>, message: impl Into<String>) -> Self {
        let detail = FieldError::new(field, message);
        ApiError::Validation {
            message: format!("{}: {}", detail.field, detail.message),
            details: vec![detail],
        }
    }

    pub fn validation_list(details: Vec<FieldError>) -> Self {
        let message = match details.as_slice() {
            [one] => format!("{}: {}", one.field, one.message),
            many => format!("{} fields are invalid", many.len()),
        };
        ApiError::Validation { message, details }
    }

    pub fn code(&self) -> ErrorCode {
        match self {
            ApiError::MalformedJson(_) => ErrorCode::MalformedJson,
            ApiError::MissingApiKey => ErrorCode::MissingApiKey,
            ApiError::InvalidApiKey => ErrorCode::InvalidApiKey,
            ApiError::MissingAdminToken => ErrorCode::MissingAdminToken,
            ApiError::InvalidAdminToken => ErrorCode::InvalidAdminToken,
            ApiError::Forbidden(_) => ErrorCode::Forbidden,
            ApiError::NotFound(_) => ErrorCode::NotFound,
            ApiError::Conflict { code, .. } => *code,
            ApiError::PayloadTooLarge { .. } => ErrorCode::PayloadTooLarge,
            ApiError::RequestTimeout { .. } => ErrorCode::RequestTimeout,
            ApiError::Validation { .. } => ErrorCode::ValidationError,
            ApiError::RateLimited { .. } => ErrorCode::RateLimited,
            ApiError::TaxUnavailable(_) => ErrorCode::TaxUnavailable,
            ApiError::Busy { .. } => ErrorCode::Busy,
            ApiError::StoreUnavailable(_) => ErrorCode::StoreUnavailable,
            ApiError::Internal(_) => ErrorCode::InternalError,
        }
    }

    /// A 409 with its code and nothing to point at.
    pub fn conflict(code: ErrorCode, message: impl Into<String>) -> Self {
        ApiError::Conflict {
            code,
            message: message.into(),
            data: None,
        }
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        match self {
            ApiError::MalformedJson(_) => StatusCode::BAD_REQUEST,
            ApiError::MissingApiKey
            | ApiError::InvalidApiKey
            | ApiError::MissingAdminToken
            | ApiError::InvalidAdminToken => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::Conflict { .. } => StatusCode::CONFLICT,
            ApiError::PayloadTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::RequestTimeout { .. } => StatusCode::REQUEST_TIMEOUT,
            ApiError::Validation { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            ApiError::TaxUnavailable(_) | ApiError::Busy { .. } | ApiError::StoreUnavailable(_) => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn error_response(&self) -> HttpResponse {
        if let ApiError::Internal(cause) = self {
            tracing::error!(cause = %cause, "internal error");
        }
        let (details, data) = match self {
            ApiError::Validation { details, .. } => (details.clone(), None),
            ApiError::Conflict { data, .. } => (Vec::new(), data.clone()),
            _ => (Vec::new(), None),
        };
        let mut res = HttpResponse::build(self.status_code());
        if let ApiError::RateLimited { retry_after_s } = self {
            res.insert_header((header::RETRY_AFTER, retry_after_s.to_string()));
        }
        if let ApiError::RequestTimeout { .. } = self {
            // The rest of the body may still be on its way: the connection
            // cannot carry another request.
            res.force_close();
        }
        if let ApiError::Busy { retry_after_s, .. } = self {
            res.insert_header((header::RETRY_AFTER, retry_after_s.to_string()));
        }
        if let ApiError::StoreUnavailable(cause) = self {
            tracing::error!(cause = %cause, "the store is unavailable");
            res.insert_header((header::RETRY_AFTER, STORE_RETRY_AFTER_S.to_string()));
        }
        if matches!(self, ApiError::MissingApiKey | ApiError::InvalidApiKey) {
            res.insert_header((header::WWW_AUTHENTICATE, "ApiKey header=\"X-Api-Key\""));
        }
        res.json(ErrorEnvelope {
            success: false,
            message: self.to_string(),
            error: ErrorBody {
                code: self.code(),
                details,
            },
            data,
        })
    }
}

/// What a client is told to wait when the store cannot be reached: the
/// engine's pool waits 5 s for a connection before it says so.
const STORE_RETRY_AFTER_S: u64 = 5;

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Unavailable(cause) | StoreError::UnsettledCommit { cause, .. } => {
                ApiError::StoreUnavailable(cause)
            }
            StoreError::Unstorable(m) => ApiError::validation("body", m),
            StoreError::NotFound(what) => ApiError::NotFound(what.to_string()),
            StoreError::Conflict(m) => ApiError::conflict(ErrorCode::Conflict, m),
            other => ApiError::Internal(other.to_string()),
        }
    }
}

impl From<ProvisioningError> for ApiError {
    fn from(e: ProvisioningError) -> Self {
        match e {
            ProvisioningError::Invalid { field, message } => ApiError::validation(field, message),
            ProvisioningError::NotFound(what) => ApiError::NotFound(what.to_string()),
            ProvisioningError::Conflict(m) => ApiError::conflict(ErrorCode::Conflict, m),
            ProvisioningError::Crypto(c) => ApiError::validation("certificate", c.to_string()),
            other => ApiError::Internal(other.to_string()),
        }
    }
}

/// Issuing's refusals, as the API answers them.
impl From<IssueError> for ApiError {
    fn from(e: IssueError) -> Self {
        match e {
            IssueError::Invalid { message, details } => ApiError::Validation { message, details },
            IssueError::NotFound(what) => ApiError::NotFound(what),
            IssueError::DuplicateReference { id } => ApiError::Conflict {
                code: ErrorCode::DuplicateReference,
                message: format!(
                    "a document with this referencia_externa already exists (id {id})"
                ),
                data: Some(serde_json::json!({ "id": id })),
            },
            IssueError::DuplicateInProgress => ApiError::conflict(
                ErrorCode::DuplicateInProgress,
                "another request with this referencia_externa is being processed",
            ),
            IssueError::DuplicatePayload { id } => ApiError::Conflict {
                code: ErrorCode::DuplicatePayload,
                message: "an identical request was sent within the duplicate window".into(),
                data: id.map(|id| serde_json::json!({ "id": id })),
            },
            IssueError::InvalidState(m) => ApiError::conflict(ErrorCode::InvalidState, m),
            IssueError::TaxUnavailable(m) => ApiError::TaxUnavailable(m),
            IssueError::Store(e) => e.into(),
            IssueError::Internal(m) => ApiError::Internal(m),
        }
    }
}

/// A buyer's look-up at the authority, as the API answers it.
impl From<crate::issuing::buyers::LookupError> for ApiError {
    fn from(e: crate::issuing::buyers::LookupError) -> Self {
        use crate::issuing::buyers::LookupError as L;
        match e {
            L::NotFound(_) => ApiError::NotFound(e.to_string()),
            L::Unavailable(_) => ApiError::TaxUnavailable(e.to_string()),
            L::Credentials(m) => ApiError::validation("certificado", m),
        }
    }
}

impl From<actix_web::error::BlockingError> for ApiError {
    fn from(e: actix_web::error::BlockingError) -> Self {
        ApiError::Internal(format!("blocking task failed: {e}"))
    }
}

pub type ApiResult<T> = Result<T, ApiError>;
