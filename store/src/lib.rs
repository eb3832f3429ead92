//! emisor's persistence. Handlers and actors see only the store traits
//! ([`Store`] and its parts, `traits/`), opened with [`open`] for the
//! configured [`Engine`] (`handle.rs`); sled is the embedded engine
//! (`engine/sled/`), and a second engine is one more implementation of the
//! same traits.
//!
//! Durability policy: every method that changes data is on disk (fsync)
//! before it returns, so whatever the API has answered with 2xx survives a
//! `kill -9`. Two exceptions, both before an answer is given:
//! `create_document` is not flushed (phase two's flush covers it), and
//! `commit_staged` resolves only once its writes are durable.
//! Admin records (a key and its hash index, a resolution and its counter)
//! are written in one sled transaction. Documents, customers and jobs are
//! written without transactions, record first, and what derives from the
//! records is recomputed after an unclean stop (`engine/sled/repair.rs`).
//!
//! Secrets (PKCS#12 and password, technical keys, PINs, webhook secrets) are
//! sealed under the master key on their way to sled and held unsealed in
//! memory only (`secrets/`).
//!
//! The folders, each importing only those below it (`tests/layers.rs`):
//! `handle.rs` (opening an engine) → `async_store/` (the handle async code holds) → `engine/` (one folder per
//! engine) and `export/` (the export file, over the traits) → `traits/` → `indexes/` → `durability/` (the file log, the
//! payload log, intents, the flusher and group commit) → `encoding/` (value
//! formats, compression, tree names) → `model/` → `secrets/`, with
//! `error.rs` at the bottom.

mod async_store;
mod durability;
mod encoding;
mod engine;
pub mod error;
pub mod export;
mod handle;
mod indexes;
pub mod model;
mod secrets;
mod traits;

#[cfg(test)]
mod tests;

pub use async_store::{
    AsyncStore, AuthoritySlot, Heard, Holding, NodeLease, NumberTaken, NumberWatch, PayloadClaim,
    ServiceTask,
};
pub use durability::flusher::{Committed, FlusherPause, IncomingCommit};
pub use encoding::{codec, trees};
pub use engine::postgres::keys::BACKUPS as POSTGRES_BACKUPS;
pub use engine::sled::repair::RepairReport;
pub use engine::sled::rewrite::DEFAULT_CACHE_BYTES;
pub use engine::sled::OpenOptions;
pub use engine::sled::SledStore;
pub use error::{StoreError, StoreResult};
pub use handle::{open, Engine, StoreHandle, StoreOptions};
pub use model::received::*;
pub use model::*;
pub use model::{received, test_set};
pub use secrets::sealing::{Keyring, MasterKey, SealedInventory};
pub use secrets::secret::{SecretBytes, SecretText};
pub use secrets::{sealing, secret};
pub use traits::*;
