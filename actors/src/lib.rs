//! emisor's actors: each one owns one concern's state and orders its work;
//! the domain code they call lives elsewhere. Every actor answers [`Ping`] so
//! `/readyz` can tell a live actor from one whose thread died.

pub mod breaker;
pub mod document_builder;
pub mod idempotency;
pub mod mailer;
pub mod panic_boundary;
pub mod rate_limiter;
pub mod recovery_ticker;
pub mod retry_scheduler;
pub mod signer_pool;
pub mod supervisor;
pub mod transmitter;
pub mod webhook_sender;
pub mod ws_hub;

use actix::Message;

/// Liveness probe every actor handles.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "Pong")]
pub struct Ping;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pong;
