//! Records in and out of rows: the model's JSON in `jsonb` columns (read
//! and written inside the sealing scope when they hold secrets), ids as
//! `bigint`, large texts as zstd frames.

use postgres::types::Json;
use postgres::Row;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::encoding::compress::{compress_frame, decompress_frame};
use crate::engine::postgres::db_error;
use crate::error::{StoreError, StoreResult};

/// A record as a `jsonb` parameter.
pub(crate) fn json<T: Serialize>(
    table: &'static str,
    value: &T,
) -> StoreResult<Json<serde_json::Value>> {
    serde_json::to_value(value)
        .map(Json)
        .map_err(|e| StoreError::Corrupt {
            tree: table,
            reason: e.to_string(),
        })
}

/// The record in `row`'s column `column`.
pub(crate) fn record<T: DeserializeOwned>(
    table: &'static str,
    row: &Row,
    column: &str,
) -> StoreResult<T> {
    let Json(value): Json<serde_json::Value> = row.try_get(column).map_err(db_error)?;
    serde_json::from_value(value).map_err(|e| StoreError::Corrupt {
        tree: table,
        reason: e.to_string(),
    })
}

/// The record in `row`'s column `column`, which may be NULL.
pub(crate) fn record_opt<T: DeserializeOwned>(
    table: &'static str,
    row: &Row,
    column: &str,
) -> StoreResult<Option<T>> {
    let value: Option<Json<serde_json::Value>> = row.try_get(column).map_err(db_error)?;
    value
        .map(|Json(value)| {
            serde_json::from_value(value).map_err(|e| StoreError::Corrupt {
                tree: table,
                reason: e.to_string(),
            })
        })
        .transpose()
}

/// Every row's record, in order.
pub(crate) fn records<T: DeserializeOwned>(
    table: &'static str,
    rows: &[Row],
) -> StoreResult<Vec<T>> {
    rows.iter().map(|r| record(table, r, "record")).collect()
}

/// An id or count as PostgreSQL's `bigint`: ids never reach 2^63, and one
/// that did is refused rather than wrapped.
pub(crate) fn big(v: u64) -> StoreResult<i64> {
    i64::try_from(v).map_err(|_| StoreError::Conflict(format!("{v} is beyond the store's range")))
}

/// A `bigint` read back as an id or count.
pub(crate) fn unsigned(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

/// `text` as one zstd frame (compressed as the sled engine's file log does
/// when it has no dictionary yet).
pub(crate) fn pack(text: &[u8]) -> StoreResult<Vec<u8>> {
    compress_frame(text, None).map_err(|code| {
        StoreError::Durability(format!("compressing: {}", zstd_safe::get_error_name(code)))
    })
}

/// A frame of [`pack`], decompressed.
pub(crate) fn unpack(table: &'static str, frame: &[u8]) -> StoreResult<Vec<u8>> {
    decompress_frame(frame, None).map_err(|code| StoreError::Corrupt {
        tree: table,
        reason: format!("decompressing: {}", zstd_safe::get_error_name(code)),
    })
}

/// Unpacked UTF-8 text.
pub(crate) fn unpack_text(table: &'static str, frame: &[u8]) -> StoreResult<String> {
    String::from_utf8(unpack(table, frame)?).map_err(|e| StoreError::Corrupt {
        tree: table,
        reason: e.to_string(),
    })
}
