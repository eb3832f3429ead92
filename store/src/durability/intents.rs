//! New documents between phase one and phase two, kept out of sled.
//!
//! Phase one does not write a new document to sled: a half-built record
//! (with its request) written there, then rewritten whole by phase two,
//! would cost two writes of the documents tree's leaf a document, a
//! pending-build entry written and removed, and the record read back
//! (measured in docs/performance.md).
//!
//! Instead, phase one appends the document's request to the file log with
//! its record behind the payload ([`encode_second`]), where phase two would
//! have moved the request anyway, and keeps the document here until phase
//! two writes its record (or [`SledStore::keep_pending`] writes it
//! half-built, when the build or the commit failed).
//!
//! What a crash can leave: a document's phase two is written after a sync
//! of the file log that covers its intent and every intent appended
//! before it (phase one appends under the numbering lock), and the
//! counters and usage phase one defers reach sled only after a sync of
//! the file log covers the intent (`set_changes`). So a number that sled
//! remembers as taken always has its intent in the file log, and an open
//! that finds an intent without a record writes it as a half-built
//! document, which start-up rebuilds, as before. The scan at open starts
//! at the payload mark, which never passes an intent still held here
//! ([`Intents::mark`]).
//!
//! [`SledStore::keep_pending`]: crate::engine::sled::SledStore::keep_pending

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::durability::file_log::FilePos;
use crate::durability::payload_log;
use crate::model::CompanyId;
use crate::model::FileRef;

/// Marks a request record's second part as an intent: the payload, this,
/// then the record.
const INTENT_MAGIC: &[u8; 4] = b"INT1";

/// A request record's second part for an intent.
pub(crate) fn encode_second(payload: &[u8], record: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + INTENT_MAGIC.len() + record.len());
    out.extend_from_slice(payload);
    out.extend_from_slice(INTENT_MAGIC);
    out.extend_from_slice(record);
    out
}

/// The payload of a request record's second part, and the record behind
/// it when the record is an intent.
pub(crate) fn decode_second(second: &[u8]) -> (&[u8], Option<&[u8]>) {
    let Some((payload, rest)) = second.split_at_checked(payload_log::RECORD_LEN) else {
        return (second, None);
    };
    match rest.strip_prefix(&INTENT_MAGIC[..]) {
        Some(record) => (payload, Some(record)),
        None => (second, None),
    }
}

/// A document phase one numbered, whose record is not in sled yet.
pub(crate) struct Intent {
    pub company: CompanyId,
    pub reference: Option<String>,
    /// The record as phase one made it ([`crate::encoding::codec::encode`]d).
    pub record: Vec<u8>,
    /// The request as a half-built record keeps it (payload first).
    pub request: Vec<u8>,
    /// Where the file log has the request (and the intent).
    pub at: FileRef,
}

#[derive(Default)]
pub(crate) struct Intents {
    held: Mutex<BTreeMap<u64, Intent>>,
}

fn position(at: &FileRef) -> FilePos {
    FilePos {
        segment: at.segment,
        offset: at.offset,
    }
}

impl Intents {
    fn lock(&self) -> MutexGuard<'_, BTreeMap<u64, Intent>> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Appends an intent with `append` and holds it, in one step as far as
    /// [`mark`](Self::mark) can tell.
    pub(crate) fn append<E>(
        &self,
        id: u64,
        append: impl FnOnce() -> Result<Intent, E>,
    ) -> Result<FileRef, E> {
        let mut held = self.lock();
        let intent = append()?;
        let at = intent.at;
        held.insert(id, intent);
        Ok(at)
    }

    /// Where a scan for intents must start: the oldest one held, or `end`
    /// (the file log's end, read under the same lock) if none is.
    pub(crate) fn mark(&self, end: impl FnOnce() -> FilePos) -> FilePos {
        let held = self.lock();
        held.values()
            .map(|i| position(&i.at))
            .min()
            .unwrap_or_else(end)
    }

    /// The request's place in the file log, if `id` is held.
    pub(crate) fn request_at(&self, id: u64) -> Option<FileRef> {
        self.lock().get(&id).map(|i| i.at)
    }

    /// Lets `id` go: its record is written.
    pub(crate) fn take(&self, id: u64) -> Option<Intent> {
        self.lock().remove(&id)
    }

    /// The held document with this external reference, if any.
    pub(crate) fn holder(&self, company: CompanyId, reference: &str) -> Option<u64> {
        self.lock()
            .iter()
            .find(|(_, i)| i.company == company && i.reference.as_deref() == Some(reference))
            .map(|(id, _)| *id)
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_intent_second_part_gives_back_its_payload_and_record() {
        let payload = [7u8; payload_log::RECORD_LEN];
        let second = encode_second(&payload, b"record");
        assert_eq!(decode_second(&second), (&payload[..], Some(&b"record"[..])));
        // A plain request record: the payload alone.
        assert_eq!(decode_second(&payload), (&payload[..], None));
    }
}
