//! Companies and their credentials: what the admin CLI, the admin HTTP API
//! and the demo bootstrap all do, written once.

pub mod api_keys;
pub mod authority_registration;
pub mod certificates;
pub mod companies;
pub mod demo;
pub mod issuer_registrar;

use emisor_store::StoreError;

use crate::engine::signing_key::SigningKeyError;

#[derive(Debug, thiserror::Error)]
pub enum ProvisioningError {
    /// Bad input; the message names the field.
    #[error("{field}: {message}")]
    Invalid { field: String, message: String },
    #[error("{0} not found")]
    NotFound(&'static str),
    #[error("conflict: {0}")]
    Conflict(String),
    #[error(transparent)]
    Store(StoreError),
    #[error("certificate: {0}")]
    Crypto(#[from] SigningKeyError),
    #[error("could not write {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
}

impl From<StoreError> for ProvisioningError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Conflict(m) => ProvisioningError::Conflict(m),
            StoreError::NotFound(what) => ProvisioningError::NotFound(what),
            other => ProvisioningError::Store(other),
        }
    }
}

pub(crate) fn invalid(field: &str, message: impl Into<String>) -> ProvisioningError {
    ProvisioningError::Invalid {
        field: field.to_string(),
        message: message.into(),
    }
}
