//! Issuing documents: the orchestration between the store, the engine (on
//! the signer pool), the transmitter, the retry scheduler and the WebSocket
//! hub. Every API calls this with a domain request ([`request`]); it knows
//! nothing of HTTP, and its errors are its own ([`error`]).
//!
//! * [`request`]: the domain requests every API translates into (a
//!   document's, a payroll's) and the translators of stored requests.
//! * [`error`]: why issuing refused or failed.
//! * [`declared`]: what a caller declared, compared with what was computed.
//! * [`reference`]: a note's original, looked up and checked.
//! * [`context`]: the company's setup for a document type, as the engine needs it.
//! * [`issue`]: validate → take the number → build → store (→ transmit).
//! * [`kind`]: what a stored document is (an invoicing kind or a payroll),
//!   and what issuing decides by it.
//! * [`transmit`]: transmissions, every step recorded: the calls, one
//!   transmission, the job runner, recovery.
//! * [`same_day`]: annex 1.9's rule: a document is dated the day it is sent.
//! * [`duplicates`]: the duplicate-payload window, restored at start-up.
//! * [`failpoint`]: the test failpoints (a kill at a named point, the
//!   earlier format of stored requests).
//! * [`events`]: `facturacion:*` events to WebSocket rooms and webhooks.
//! * [`invoice_events`]: received invoices, their events and the registry.
//! * [`webhooks`]: signed, retried, logged webhook deliveries.
//! * [`rebuild`]: a stored document built again with its number (after a
//!   crash, a resend, a re-dating): one entry point.
//! * [`stored`]: a document's stored request: the caller's JSON and the
//!   versioned domain request every later build reads.
//! * [`resume`]: what a restart picks up (half-built documents, queued jobs).
//! * [`adopt`]: on a shared database, a dead node's work taken up by a live one.
//! * [`contingency`]: queueing the pending contingency documents.
//! * [`payroll`]: payroll documents on the same path (own software, `NOM` numbering, SendNominaSync).
//! * [`files`]: a stored document's PDF, rendered off the async threads.
//! * [`worker`]: the engine as the signer pool runs it, and the key cache.
//! * [`mail`]: email of accepted documents, durable jobs through the mailer.
//! * [`xml_pool`]: the bounded threads of uploads' XML work.
//! * [`buyers`]: a buyer's name and email looked up at the authority, cached.

pub mod adopt;
pub mod buyers;
pub mod context;
pub mod contingency;
pub mod declared;
pub mod duplicates;
pub mod error;
pub mod events;
pub mod failpoint;
pub mod files;
pub mod invoice_events;
pub mod issue;
pub mod kind;
pub mod mail;
pub mod payroll;
pub mod rebuild;
pub mod reference;
pub mod request;
pub mod resume;
pub mod same_day;
pub mod stored;
pub mod transmit;
pub mod webhooks;
pub mod worker;
pub mod xml_pool;

use std::sync::Arc;

use emisor_actors::document_builder::{BuildQueue, DocumentBuilder};
use emisor_actors::idempotency::{ClaimTable, IdempotencyLock};
use emisor_actors::retry_scheduler::RetryScheduler;
use emisor_actors::supervisor::Restartable;
use emisor_actors::ws_hub::WsHub;
use emisor_store::AsyncStore;

use crate::authority::port::AuthorityTransmitter;
use crate::config::Settings;
use request::Translators;
use worker::{EnginePipeline, SigningKeyCache};

/// Job kind of a document transmission.
pub const TRANSMIT_JOB: &str = "transmit";

/// The actors and shared state issuing needs.
pub struct Issuing {
    pub settings: Arc<Settings>,
    pub store: AsyncStore,
    /// Each API's translation of its stored requests (rebuilds, resends).
    pub translators: Translators,
    pub keys: SigningKeyCache,
    /// The builder actor: the pool's status and liveness.
    pub builder: Arc<Restartable<DocumentBuilder<EnginePipeline>>>,
    /// Builds queued straight on the builder's pool (no mailbox hop).
    pub builds: BuildQueue<EnginePipeline>,
    pub transmitter: Arc<Restartable<AuthorityTransmitter>>,
    /// The idempotency lock (liveness) and the claims it owns, which
    /// issuing takes on its own thread.
    pub idempotency: Arc<Restartable<IdempotencyLock>>,
    pub claims: Arc<ClaimTable>,
    pub hub: Arc<Restartable<WsHub>>,
    pub webhooks: Arc<Restartable<emisor_actors::webhook_sender::WebhookSender>>,
    /// Set once the scheduler is started (it needs `Issuing` as its runner).
    pub scheduler: std::sync::OnceLock<Arc<Restartable<RetryScheduler>>>,
    /// Base URL of the in-process simulator (demo companies send there).
    pub sim_url: Option<String>,
    /// The mailer and its scheduler.
    pub mail: mail::MailService,
    /// Uploads' XML work (`cargar-documento`).
    pub uploads: xml_pool::XmlPool,
}
