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

use crate::encoding::compress::{compress_frame, decompress_frame};
use crate::encoding::trees;
use crate::error::{StoreError, StoreResult};

/// Format of plain JSON values.
pub const FORMAT_V1: u8 = 1;
/// JSON compressed against [`RECORDS_DICTIONARY_V1`]. That dictionary is
/// never changed: another one would come with another format byte.
pub const FORMAT_ZSTD_V1: u8 = 2;
/// A half-built document's record value: its length (`u32`), the value as
/// either format above, then the request it is built from (phase one
/// writes both in one entry; phase two moves the request to the file log).
pub const FORMAT_WITH_REQUEST: u8 = 3;

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

/// `value` (an [`encode`]d record) with the request behind it.
pub(crate) fn with_request(value: &[u8], request: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(5 + value.len() + request.len());
    out.push(FORMAT_WITH_REQUEST);
    out.extend_from_slice(&(value.len() as u32).to_be_bytes());
    out.extend_from_slice(value);
    out.extend_from_slice(request);
    out
}

/// The record's own value and the request behind it, if any.
pub(crate) fn split_request(bytes: &[u8]) -> (&[u8], Option<&[u8]>) {
    if let Some((&FORMAT_WITH_REQUEST, rest)) = bytes.split_first() {
        if let Some((len, rest)) = rest.split_first_chunk::<4>() {
            let len = u32::from_be_bytes(*len) as usize;
            if len <= rest.len() {
                let (value, request) = rest.split_at(len);
                return (value, Some(request));
            }
        }
    }
    (bytes, None)
}

/// The JSON of a stored value, decompressed if it is a frame: a caller that
/// reads one value as two types decompresses it once.
pub(crate) fn json_of<'a>(tree: &'static str, bytes: &'a [u8]) -> StoreResult<Cow<'a, [u8]>> {
    let (bytes, _) = split_request(bytes);
    match bytes.split_first() {
        Some((&FORMAT_V1, body)) => Ok(Cow::Borrowed(body)),
        Some((&FORMAT_ZSTD_V1, frame)) => decompress_frame(frame, Some(&DECOMPRESS))
            .map(Cow::Owned)
            .map_err(|e| zstd_corrupt(tree, e)),
        Some((&found, _)) => Err(StoreError::UnknownFormat {
            tree,
            found,
            supported: FORMAT_WITH_REQUEST,
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
    fn a_value_with_a_request_decodes_as_its_record_and_splits_back() {
        let record = encode(trees::DOCUMENTS, &sample()).unwrap();
        let bytes = with_request(&record, b"the request");
        assert_eq!(bytes[0], FORMAT_WITH_REQUEST);
        assert_eq!(
            decode::<Sample>(trees::DOCUMENTS, &bytes).unwrap(),
            sample()
        );
        assert_eq!(
            split_request(&bytes),
            (&record[..], Some(&b"the request"[..]))
        );
        assert_eq!(split_request(&record), (&record[..], None));
        // A length past the end is no request (and then no known format).
        let err = decode::<Sample>(trees::DOCUMENTS, &[FORMAT_WITH_REQUEST, 0, 0, 9, 9, 2]);
        assert!(err.is_err());
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
