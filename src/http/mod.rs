//! The HTTP floor: what every route family stands on and none owns. The
//! application state a handler reaches, who is calling (the API key, its
//! rate limit), the answer envelope and the one error type, the body and
//! query extractors that refuse in that envelope, and the key check.
//!
//! Below the families (`crate::api::*`, `crate::admin`, `crate::ops`) and
//! above issuing, provisioning and the store: it names no family, so a
//! family can change without touching another (`tests/layers.rs`).

pub mod auth;
pub mod caller;
pub mod documents;
pub mod envelope;
pub mod error;
pub mod invoice_events;
pub mod json;
pub mod key_check;
pub mod numbers;
pub mod query;
pub mod rate_limit;
pub mod shared_counts;
pub mod state;
pub mod token_failures;

/// Where the customer-facing API is served (spec §4).
pub const BASE: &str = "/v1/api";
