//! How a write becomes durable, whatever the engine: the document file log
//! and the duplicate window's payload log (append-only files beside the
//! engine), new documents held between phase one and phase two (intents),
//! the flusher thread and its group commit, and the pause a backup holds.

pub(crate) mod file_log;
pub(crate) mod flusher;
pub(crate) mod group_commit;
pub(crate) mod intents;
pub(crate) mod payload_log;
