//! Email of documents (spec 4.8, decisions.md §4): send one, resend one,
//! list a document's emails. Sending only queues: the answer is the log
//! entry (202), the mailer works in the background.

pub mod logs;
pub mod model;
pub mod resend;
pub mod send;

use actix_web::web;

use emisor_store::DocumentRecord;

use crate::http::auth::AuthContext;
use crate::http::error::{ApiError, ErrorCode};
use crate::http::state::AppState;
use crate::issuing::mail::MailError;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(send::send)
        .service(resend::resend)
        .service(logs::logs);
}

impl From<MailError> for ApiError {
    fn from(e: MailError) -> Self {
        match e {
            MailError::Invalid { field, message } => ApiError::validation(field, message),
            MailError::NotAccepted(..) | MailError::AlreadyQueued(_) => {
                ApiError::conflict(ErrorCode::InvalidState, e.to_string())
            }
            MailError::Store(e) => e.into(),
        }
    }
}

/// A document of the key's company and environment, or 404 (another
/// company's or environment's too).
pub async fn company_document(
    state: &AppState,
    ctx: &AuthContext,
    id: u64,
) -> Result<DocumentRecord, ApiError> {
    state
        .store
        .document(id)
        .await?
        .filter(|d| ctx.owns(d))
        .ok_or_else(|| ApiError::NotFound(format!("document {id}")))
}
