//! Opening the store: [`open`] starts the configured [`Engine`] and hands
//! back a [`StoreHandle`], through which the service reaches it only as the
//! store traits (and the async handle built on them). A second engine is one
//! more [`Engine`] variant and one more arm in each method here.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::async_store::AsyncStore;
use crate::engine::sled::{OpenOptions, SledStore};
use crate::error::StoreResult;
use crate::secrets::sealing::{Keyring, SealedInventory};
use crate::traits::{Backup, Import, MasterKeys, ReceivedStore, Store};

/// The engines the store can run on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Engine {
    /// The embedded engine (`engine/sled/`).
    #[default]
    Sled,
}

/// How the store is opened, whatever the engine.
#[derive(Debug, Clone, Copy)]
pub struct StoreOptions {
    pub engine: Engine,
    /// The engine's page cache.
    pub cache_bytes: u64,
    /// How often, at most, the engine's snapshot is written while the store
    /// is written to.
    pub checkpoint_every: Duration,
}

impl Default for StoreOptions {
    fn default() -> Self {
        let sled = OpenOptions::default();
        StoreOptions {
            engine: Engine::Sled,
            cache_bytes: sled.cache_bytes,
            checkpoint_every: sled.checkpoint_every,
        }
    }
}

/// An open store. Cheap to clone.
#[derive(Clone)]
pub struct StoreHandle {
    engine: Opened,
}

#[derive(Clone)]
enum Opened {
    Sled(SledStore),
}

/// Opens (or creates) the store under `dir` on `options.engine`, with the
/// keys `choose` picks once the store's sealed values are known, before
/// anything is written (a refusal leaves the data dir as it was).
pub fn open(
    dir: &Path,
    options: StoreOptions,
    choose: impl FnOnce(&SealedInventory) -> StoreResult<Keyring>,
) -> StoreResult<StoreHandle> {
    let engine = match options.engine {
        Engine::Sled => {
            let sled = OpenOptions {
                cache_bytes: options.cache_bytes,
                checkpoint_every: options.checkpoint_every,
            };
            Opened::Sled(SledStore::open_with_options(dir, sled, choose)?)
        }
    };
    Ok(StoreHandle { engine })
}

impl StoreHandle {
    /// The store, for synchronous callers (start-up, the CLI, provisioning).
    pub fn store(&self) -> &dyn Store {
        match &self.engine {
            Opened::Sled(s) => s,
        }
    }

    /// The store, shared with a thread or an actor.
    pub fn shared(&self) -> Arc<dyn Store + Send + Sync> {
        match &self.engine {
            Opened::Sled(s) => Arc::new(s.clone()),
        }
    }

    /// The master key the store's secrets are sealed under.
    pub fn keys(&self) -> &dyn MasterKeys {
        match &self.engine {
            Opened::Sled(s) => s,
        }
    }

    /// A consistent point to copy the store from (backups).
    pub fn backup(&self) -> &dyn Backup {
        match &self.engine {
            Opened::Sled(s) => s,
        }
    }

    /// Received invoices and their events' files.
    pub fn received(&self) -> &dyn ReceivedStore {
        match &self.engine {
            Opened::Sled(s) => s,
        }
    }

    /// Writing an export's records into this (empty) store.
    pub fn import(&self) -> &dyn Import {
        match &self.engine {
            Opened::Sled(s) => s,
        }
    }

    /// Everything an export reads.
    pub fn export_source(&self) -> crate::export::Source<'_> {
        crate::export::Source {
            store: self.store(),
            received: self.received(),
            backup: self.backup(),
            keys: self.keys(),
        }
    }

    /// The handle async code holds, with its threads started.
    pub fn start_async(&self) -> StoreResult<AsyncStore> {
        match &self.engine {
            Opened::Sled(s) => AsyncStore::new(s.clone()),
        }
    }

    /// Flushes everything and marks the store closed cleanly (the next open
    /// then skips the repair an unclean stop needs).
    pub fn close(&self) -> StoreResult<()> {
        match &self.engine {
            Opened::Sled(s) => s.close(),
        }
    }
}
