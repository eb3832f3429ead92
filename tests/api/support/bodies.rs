//! Request bodies the tests send.

use serde_json::{json, Value};

/// A distinct `referencia_externa`, so equal bodies are distinct requests.
pub fn unique(mut body: Value) -> Value {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    body["referencia_externa"] = json!(format!("test-{}-{n}", std::process::id()));
    body
}
