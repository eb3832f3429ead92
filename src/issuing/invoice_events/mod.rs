//! Events on invoices (spec 2.13, 4.6, 4.7; decisions.md §5 "Events"):
//! received invoices, the buyer's receipt events, the tacit acceptance and
//! the circulation registry. An event is written with its job before it is
//! answered and sent once through the transmitter, like a document.
//!
//! * [`title`]: the invoice as its events see it (found by CUFE, uploaded,
//!   or adopted from a document another company issued here), who it
//!   involves and who may act.
//! * [`upload`]: the `cargar-documento` upload.
//! * [`copy_check`]: whether a received invoice is the authority's document.
//! * [`register`]: one event: checks, build, sign, store, send.
//! * [`send`]: one transmission of a stored event (the job).
//! * [`sweep`]: the events others registered on the company's own
//!   invoices, learned from the authority.
//! * [`standing`]: where an invoice stands in the legal order of its
//!   receipt events and the deadline that applies (the console shows it).

pub mod copy_check;
pub mod register;
pub mod send;
pub mod standing;
pub mod sweep;
pub mod title;
pub mod upload;

use emisor_store::StoreError;

use crate::engine::events::EventKind;

/// Job kind of an event's transmission.
pub const EVENT_JOB: &str = "invoice_event";

/// Why an event or an upload was refused.
#[derive(Debug, thiserror::Error)]
pub enum EventError {
    /// What was sent is not acceptable (422), naming the field.
    #[error("{field}: {message}")]
    Invalid { field: String, message: String },
    #[error("{0} not found")]
    NotFound(String),
    /// The caller may not do this on this invoice (403).
    #[error("{0}")]
    Forbidden(String),
    /// Out of order, already registered, not yet possible (409).
    #[error("{0}")]
    InvalidState(String),
    /// The same invoice was uploaded before (409, its id).
    #[error("this invoice was already received (id {id})")]
    Duplicate { id: u64 },
    /// Another write of the same invoice won; the caller may retry (409).
    #[error("{0}")]
    Conflict(String),
    /// The authority could not be asked (503).
    #[error("{0}")]
    TaxUnavailable(String),
    /// Too many uploads are being checked (503 BUSY).
    #[error("too many uploads are being checked; try again shortly")]
    Busy,
    #[error(transparent)]
    Store(StoreError),
    #[error("{0}")]
    Internal(String),
}

impl EventError {
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        EventError::Invalid {
            field: field.into(),
            message: message.into(),
        }
    }
}

impl From<StoreError> for EventError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::DuplicateReference { id } => EventError::Duplicate { id },
            StoreError::Conflict(m) => EventError::Conflict(m),
            StoreError::NotFound(what) => EventError::NotFound(what.to_string()),
            other => EventError::Store(other),
        }
    }
}

/// `estado_tax` of an event.
pub fn state_name(state: emisor_store::EventState) -> &'static str {
    match state {
        emisor_store::EventState::Pending => "En Cola",
        emisor_store::EventState::Accepted => "Aceptado",
        emisor_store::EventState::Rejected => "Rechazado",
    }
}

/// The event kind of a stored event.
pub fn kind_of(e: &emisor_store::InvoiceEvent) -> Option<EventKind> {
    crate::engine::events::ALL
        .into_iter()
        .find(|k| k.api_code() == e.code)
}
