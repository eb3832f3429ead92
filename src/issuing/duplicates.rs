//! The duplicate-payload window (spec 7-8) across restarts: the idempotency
//! lock keeps the payloads of the last few minutes in memory, so at start-up
//! it is told which recent documents were made from which payloads. The
//! store keeps every document's request exactly as it was hashed.

use std::time::{Duration, Instant};

use chrono::Utc;
use emisor_actors::idempotency::RememberedPayload;
use emisor_store::AsyncStore;
use sha2::{Digest, Sha256};

/// The hash the idempotency lock compares: SHA-256 of the canonical JSON.
pub fn payload_hash(canonical: &[u8]) -> [u8; 32] {
    Sha256::digest(canonical).into()
}

/// A caller's request as canonical JSON, with its hash: hashed once, for
/// the idempotency claim and for the store, which keeps both.
#[derive(Debug, Clone)]
pub struct Payload {
    pub canonical: Vec<u8>,
    pub hash: [u8; 32],
}

impl Payload {
    pub fn new(canonical: Vec<u8>) -> Self {
        let hash = payload_hash(&canonical);
        Payload { canonical, hash }
    }
}

/// The payloads of the documents made within `window` before now. A store
/// that cannot be read yields none (logged): refusing to start over it
/// would be worse than a duplicate check that begins empty.
pub async fn remembered_payloads(store: &AsyncStore, window: Duration) -> Vec<RememberedPayload> {
    let now = Instant::now();
    let utc_now = Utc::now();
    let Ok(span) = chrono::Duration::from_std(window) else {
        return Vec::new();
    };
    let recent = match store.recent_requests(utc_now - span).await {
        Ok(r) => {
            tracing::info!(
                payloads = r.len(),
                ms = now.elapsed().as_millis() as u64,
                "duplicate window read back"
            );
            r
        }
        Err(e) => {
            tracing::error!(error = %e, "reading recent documents for the duplicate window");
            return Vec::new();
        }
    };
    recent
        .into_iter()
        .filter_map(|r| {
            let age = (utc_now - r.created_at).to_std().unwrap_or_default();
            Some(RememberedPayload {
                company: r.company_id,
                payload_hash: r.payload_hash,
                document_id: r.document_id,
                at: now.checked_sub(age)?,
            })
        })
        .collect()
}
