//! The JSON of the email endpoints (decisions.md §4).

use chrono::{DateTime, Utc};
use emisor_store::{EmailAttempt, EmailLog};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// `POST /email/documento/{id}` body; every field optional (an empty body
/// mails the document's customer).
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SendRequest {
    /// Recipients; default: the document's customer's email.
    #[serde(default)]
    pub to: Option<Vec<String>>,
    #[serde(default)]
    pub cc: Option<Vec<String>>,
    /// Optional; when given it must be the key's company.
    #[serde(default)]
    pub id_empresa: Option<u64>,
}

/// `POST /email/reenviar/{id_correo}` body: optional (empty or `{}`); a
/// body that is given is JSON like every other, so a broken one is refused
/// before anything is queued.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ResendRequest {
    /// Optional; when given it must be the key's company.
    #[serde(default)]
    pub id_empresa: Option<u64>,
}

/// One attempt.
#[derive(Debug, Serialize, ToSchema)]
pub struct Attempt {
    pub at: DateTime<Utc>,
    pub ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A log entry: `{id_correo, id_documento, to, status, attempts,
/// last_error, created_at, sent_at}` and what else it knows.
#[derive(Debug, Serialize, ToSchema)]
pub struct EmailLogResponse {
    pub id_correo: u64,
    pub id_documento: u64,
    pub to: Vec<String>,
    pub cc: Vec<String>,
    /// `queued`, `sent` or `failed`.
    pub status: String,
    pub attempts: u32,
    pub last_error: Option<String>,
    pub created_at: DateTime<Utc>,
    pub sent_at: Option<DateTime<Utc>>,
    /// Set at the first attempt; the same for every attempt.
    pub message_id: Option<String>,
    pub subject: Option<String>,
    /// Sent because the document was accepted.
    pub automatico: bool,
    /// The email this one resends.
    pub reenvio_de: Option<u64>,
    /// What the mail carries instead of the usual, and why.
    pub nota: Option<String>,
    pub intentos: Vec<Attempt>,
}

fn present(s: String) -> Option<String> {
    (!s.is_empty()).then_some(s)
}

impl From<EmailLog> for EmailLogResponse {
    fn from(l: EmailLog) -> Self {
        EmailLogResponse {
            id_correo: l.id,
            id_documento: l.document_id,
            to: l.to,
            cc: l.cc,
            status: l.status,
            attempts: l.attempts,
            last_error: l.last_error,
            created_at: l.created_at,
            sent_at: l.sent_at,
            message_id: present(l.message_id),
            subject: present(l.subject),
            automatico: l.automatic,
            reenvio_de: l.resend_of,
            nota: l.note,
            intentos: l
                .history
                .into_iter()
                .map(|EmailAttempt { at, ok, error }| Attempt { at, ok, error })
                .collect(),
        }
    }
}

/// A page of a document's emails.
#[derive(Debug, Serialize, ToSchema)]
pub struct EmailLogPage {
    pub items: Vec<EmailLogResponse>,
    pub page: u32,
    pub limit: u32,
    pub total: u64,
}
