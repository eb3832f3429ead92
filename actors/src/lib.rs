//! emisor actor system: rate limiter, idempotency lock, signer pool,
//! transmitter, schedulers.

pub mod breaker;
