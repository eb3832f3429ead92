//! Versioned value encoding. Every stored value is one format byte followed by
//! the serde JSON of the record: JSON keeps old records readable when fields
//! are added (`#[serde(default)]`), and the byte lets a future format coexist.

use serde::{de::DeserializeOwned, Serialize};

use crate::error::{StoreError, StoreResult};

/// Format of values written by this build.
pub const FORMAT_V1: u8 = 1;

pub fn encode<T: Serialize>(tree: &'static str, value: &T) -> StoreResult<Vec<u8>> {
    let mut out = Vec::with_capacity(256);
    out.push(FORMAT_V1);
    serde_json::to_writer(&mut out, value).map_err(|e| StoreError::Corrupt {
        tree,
        reason: e.to_string(),
    })?;
    Ok(out)
}

pub fn decode<T: DeserializeOwned>(tree: &'static str, bytes: &[u8]) -> StoreResult<T> {
    match bytes.split_first() {
        Some((&FORMAT_V1, body)) => serde_json::from_slice(body).map_err(|e| StoreError::Corrupt {
            tree,
            reason: e.to_string(),
        }),
        Some((&found, _)) => Err(StoreError::UnknownFormat {
            tree,
            found,
            supported: FORMAT_V1,
        }),
        None => Err(StoreError::Corrupt {
            tree,
            reason: "empty value".into(),
        }),
    }
}

/// Big-endian keys sort numerically in sled.
pub fn id_key(id: u64) -> [u8; 8] {
    id.to_be_bytes()
}

/// `company ‖ id`: per-company ranges scan in id order.
pub fn scoped_key(company: u64, id: u64) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&company.to_be_bytes());
    k[8..].copy_from_slice(&id.to_be_bytes());
    k
}

/// `company ‖ text`: per-company unique text indexes.
pub fn scoped_text_key(company: u64, text: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(8 + text.len());
    k.extend_from_slice(&company.to_be_bytes());
    k.extend_from_slice(text.as_bytes());
    k
}

pub fn read_u64(bytes: &[u8]) -> Option<u64> {
    let arr: [u8; 8] = bytes.get(..8)?.try_into().ok()?;
    Some(u64::from_be_bytes(arr))
}
