//! Received-invoice events (spec 2.13, 4.6; decisions.md §5 "Events"):
//! `cargar-documento`, the receipt events 030-034 and the lists of
//! received invoices. Received invoices have ids of their own; their
//! routes take the CUFE.

pub mod list;
pub mod model;
pub mod register;
pub mod upload;

use actix_web::web;

use crate::http::error::{ApiError, ErrorCode};
use crate::issuing::invoice_events::EventError;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(upload::upload)
        .service(register::acknowledgement)
        .service(register::goods_receipt)
        .service(register::express_acceptance)
        .service(register::tacit_acceptance)
        .service(register::claim)
        .service(list::list)
        .service(list::detail)
        .service(list::event_xml);
}

/// `Retry-After` of a full upload queue: an upload takes well under a second.
const BUSY_RETRY_AFTER_S: u64 = 2;

impl From<EventError> for ApiError {
    fn from(e: EventError) -> Self {
        match e {
            EventError::Invalid { field, message } => ApiError::validation(field, message),
            EventError::NotFound(what) => ApiError::NotFound(what),
            EventError::Forbidden(m) => ApiError::Forbidden(m),
            EventError::InvalidState(m) => ApiError::conflict(ErrorCode::InvalidState, m),
            EventError::Duplicate { id } => ApiError::Conflict {
                code: ErrorCode::DuplicateReference,
                message: format!("this invoice was already received (id {id})"),
                data: Some(serde_json::json!({ "id": id })),
            },
            EventError::Conflict(m) => ApiError::conflict(ErrorCode::Conflict, m),
            EventError::TaxUnavailable(m) => ApiError::TaxUnavailable(m),
            EventError::Busy => ApiError::Busy {
                message: EventError::Busy.to_string(),
                retry_after_s: BUSY_RETRY_AFTER_S,
            },
            EventError::Store(e) => e.into(),
            EventError::Internal(m) => ApiError::Internal(m),
        }
    }
}
