//! What a document's record value holds beside the record: where its files
//! are in the file log and its history lines.
//!
//! Why in the record's value and not in trees of their own: sled 0.34 keeps
//! tens of bytes resident per entry for as long as the entry exists (its page
//! table has a page per ≤16 entries, whatever the cache size), so every
//! per-document entry costs tens of MB per million documents
//! (docs/performance.md). The record is rewritten at each
//! state change anyway, and a history line is always written with one.
//!
//! The API's [`DocumentRecord`] never carries these parts: a write of a
//! record merges them from the value it replaces ([`Parts::merged`]), so a
//! caller holding an older copy of a record cannot drop them. Data dirs
//! written before keep their `document_files` and `document_history`
//! entries; readers look there too.

use serde::{Deserialize, Serialize};

use crate::encoding::codec::{self, decode, encode};
use crate::encoding::trees;
use crate::error::StoreResult;
use crate::model::{DocumentRecord, HistoryEntry, StagedFiles};

/// The parts of a record's value that are not the record.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Parts {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stored_files: Option<StagedFiles>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history_lines: Vec<HistoryEntry>,
}

/// What a write adds to the parts of the value it replaces.
#[derive(Debug, Default)]
pub(crate) struct PartsChange {
    pub files: Option<StagedFiles>,
    pub history: Option<HistoryEntry>,
}

impl PartsChange {
    pub(crate) fn history(line: HistoryEntry) -> Self {
        PartsChange {
            files: None,
            history: Some(line),
        }
    }
}

#[derive(Serialize)]
struct Stored<'a> {
    #[serde(flatten)]
    record: &'a DocumentRecord,
    #[serde(flatten)]
    parts: &'a Parts,
}

impl Parts {
    /// The parts of a stored record value (none in values without them).
    pub(crate) fn of(value: &[u8]) -> StoreResult<Parts> {
        decode(trees::DOCUMENTS, value)
    }

    /// The parts of `old` (the JSON of a stored value, [`codec::json_of`])
    /// with `change` applied.
    pub(crate) fn merged(old: Option<&[u8]>, change: PartsChange) -> StoreResult<Parts> {
        let mut parts = match old {
            Some(json) => codec::parse(trees::DOCUMENTS, json)?,
            None => Parts::default(),
        };
        if let Some(files) = change.files {
            parts.stored_files = Some(files);
        }
        parts.history_lines.extend(change.history);
        Ok(parts)
    }
}

/// A record's value: the record's fields and its parts, side by side.
pub(crate) fn encode_record(record: &DocumentRecord, parts: &Parts) -> StoreResult<Vec<u8>> {
    encode(trees::DOCUMENTS, &Stored { record, parts })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::FileRef;
    use chrono::{NaiveDate, Utc};

    fn record() -> DocumentRecord {
        let date = NaiveDate::from_ymd_opt(2026, 11, 23).unwrap();
        crate::tests::index::record(7, 1, 1, 1, date)
    }

    fn line(note: &str) -> HistoryEntry {
        HistoryEntry {
            at: Utc::now(),
            actor: "api".into(),
            event: note.into(),
            from_state: None,
            to_state: Some(1),
            data: serde_json::Value::Null,
        }
    }

    #[test]
    fn a_record_value_reads_back_as_the_record_and_as_its_parts() {
        let files = StagedFiles {
            xml_name: "fv.xml".into(),
            zip_name: "z.zip".into(),
            at: FileRef {
                segment: 0,
                offset: 24,
                xml_len: 10,
                zip_len: 0,
            },
            compressed: true,
            dictionary: Some(3),
            zip_at: None,
            request_at: None,
        };
        let parts = Parts::merged(
            None,
            PartsChange {
                files: Some(files.clone()),
                history: Some(line("built")),
            },
        )
        .unwrap();
        let record = record();
        let value = encode_record(&record, &parts).unwrap();
        let back: DocumentRecord = decode(trees::DOCUMENTS, &value).unwrap();
        assert_eq!(back, record);
        assert_eq!(Parts::of(&value).unwrap(), parts);

        // A later write with only a history line keeps the files and the
        // earlier line, in order.
        let json = codec::json_of(trees::DOCUMENTS, &value).unwrap();
        let later = Parts::merged(Some(&json), PartsChange::history(line("sent"))).unwrap();
        assert_eq!(later.stored_files, Some(files));
        let events: Vec<_> = later
            .history_lines
            .iter()
            .map(|h| h.event.as_str())
            .collect();
        assert_eq!(events, ["built", "sent"]);
    }

    #[test]
    fn a_value_written_before_parts_existed_has_none() {
        let value = encode(trees::DOCUMENTS, &record()).unwrap();
        assert_eq!(Parts::of(&value).unwrap(), Parts::default());
    }
}
