//! Versioned value encoding. Every stored value is one format byte followed
//! by the serde JSON of the record: JSON keeps old records readable when
//! fields are added (`#[serde(default)]`), and the byte lets a newer format
//! coexist. The per-document trees (records, history, file references)
//! write their JSON as a zstd frame against a dictionary built into the
//! binary ([`FORMAT_ZSTD_V1`]): their field names and usual values are in
//! the dictionary, so a 740-byte record is stored in about a third of that,
//! and sled (whose memory and start-up grow with its size) stays small.

use std::borrow::Cow;
use std::sync::LazyLock;

use serde::{de::DeserializeOwned, Serialize};
use zstd_safe::{CDict, DDict};

use crate::compress::{compress_frame, decompress_frame};
use crate::error::{StoreError, StoreResult};
use crate::trees;

/// Format of plain JSON values.
pub const FORMAT_V1: u8 = 1;
/// JSON compressed against [`RECORDS_DICTIONARY_V1`]. That dictionary is
/// never changed: another one would come with another format byte.
pub const FORMAT_ZSTD_V1: u8 = 2;

/// Sample values of the compressed trees (real records, history lines and
/// file references of the demo company), as a raw-content dictionary.
const RECORDS_DICTIONARY_V1: &[u8] = include_bytes!("dictionaries/records-v1.json");

static COMPRESS: LazyLock<CDict<'static>> =
    LazyLock::new(|| CDict::create(RECORDS_DICTIONARY_V1, 1));
static DECOMPRESS: LazyLock<DDict<'static>> =
    LazyLock::new(|| DDict::create(RECORDS_DICTIONARY_V1));

fn compressed(tree: &str) -> bool {
    matches!(
        tree,
        trees::DOCUMENTS | trees::DOCUMENT_HISTORY | trees::DOCUMENT_FILES
    )
}

fn corrupt(tree: &'static str, reason: impl ToString) -> StoreError {
    StoreError::Corrupt {
        tree,
        reason: reason.to_string(),
    }
}

fn zstd_corrupt(tree: &'static str, code: usize) -> StoreError {
    corrupt(tree, zstd_safe::get_error_name(code))
}

pub fn encode<T: Serialize>(tree: &'static str, value: &T) -> StoreResult<Vec<u8>> {
    if compressed(tree) {
        let json = serde_json::to_vec(value).map_err(|e| corrupt(tree, e))?;
        let frame = compress_frame(&json, Some(&COMPRESS)).map_err(|e| zstd_corrupt(tree, e))?;
        let mut out = Vec::with_capacity(1 + frame.len());
        out.push(FORMAT_ZSTD_V1);
        out.extend_from_slice(&frame);
        return Ok(out);
    }
    let mut out = Vec::with_capacity(256);
    out.push(FORMAT_V1);
    serde_json::to_writer(&mut out, value).map_err(|e| corrupt(tree, e))?;
    Ok(out)
}

pub fn decode<T: DeserializeOwned>(tree: &'static str, bytes: &[u8]) -> StoreResult<T> {
    parse(tree, &json_of(tree, bytes)?)
}

/// The JSON of a stored value, decompressed if it is a frame: a caller that
/// reads one value as two types decompresses it once.
pub(crate) fn json_of<'a>(tree: &'static str, bytes: &'a [u8]) -> StoreResult<Cow<'a, [u8]>> {
    match bytes.split_first() {
        Some((&FORMAT_V1, body)) => Ok(Cow::Borrowed(body)),
        Some((&FORMAT_ZSTD_V1, frame)) => decompress_frame(frame, Some(&DECOMPRESS))
            .map(Cow::Owned)
            .map_err(|e| zstd_corrupt(tree, e)),
        Some((&found, _)) => Err(StoreError::UnknownFormat {
            tree,
            found,
            supported: FORMAT_ZSTD_V1,
        }),
        None => Err(corrupt(tree, "empty value")),
    }
}

/// A value from the JSON [`json_of`] gave.
pub(crate) fn parse<T: DeserializeOwned>(tree: &'static str, json: &[u8]) -> StoreResult<T> {
    serde_json::from_slice(json).map_err(|e| corrupt(tree, e))
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

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Sample {
        id: u64,
        company_id: u64,
        environment: String,
        prefix: String,
        code: Option<String>,
    }

    fn sample() -> Sample {
        Sample {
            id: 41,
            company_id: 1,
            environment: "test".into(),
            prefix: "SETP".into(),
            code: Some("ab".repeat(48)),
        }
    }

    #[test]
    fn per_document_trees_are_compressed_and_read_back() {
        let bytes = encode(trees::DOCUMENTS, &sample()).unwrap();
        assert_eq!(bytes[0], FORMAT_ZSTD_V1);
        let json = serde_json::to_vec(&sample()).unwrap();
        assert!(
            bytes.len() < json.len(),
            "{} vs {}",
            bytes.len(),
            json.len()
        );
        assert_eq!(
            decode::<Sample>(trees::DOCUMENTS, &bytes).unwrap(),
            sample()
        );
    }

    #[test]
    fn other_trees_stay_json_and_plain_json_values_still_decode() {
        let bytes = encode(trees::COMPANIES, &sample()).unwrap();
        assert_eq!(bytes[0], FORMAT_V1);
        assert_eq!(
            serde_json::from_slice::<Sample>(&bytes[1..]).unwrap(),
            sample()
        );
        // A record written before compression reads as it was.
        assert_eq!(
            decode::<Sample>(trees::DOCUMENTS, &bytes).unwrap(),
            sample()
        );
        let err = decode::<Sample>(trees::DOCUMENTS, &[FORMAT_ZSTD_V1, 1, 2, 3]);
        assert!(matches!(err, Err(StoreError::Corrupt { .. })), "{err:?}");
        let err = decode::<Sample>(trees::DOCUMENTS, &[9, 1]);
        assert!(
            matches!(err, Err(StoreError::UnknownFormat { found: 9, .. })),
            "{err:?}"
        );
    }
}
