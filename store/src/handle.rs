//! Opening the store: [`open`] starts the configured [`Engine`] and hands
//! back a [`StoreHandle`], through which the service reaches it only as the
//! store traits (and the async handle built on them). Each engine is one
//! [`Engine`] variant and one arm in each method here.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::async_store::{AsyncStore, POSTGRES_STORE_THREADS};
use crate::engine::postgres::off_runtime::OffRuntime;
use crate::engine::postgres::{off_runtime, PgOptions, PgStore};
use crate::engine::sled::{OpenOptions, SledStore};
use crate::error::{StoreError, StoreResult};
use crate::secrets::sealing::{Keyring, SealedInventory};
use crate::secrets::secret::SecretText;
use crate::traits::{Backup, Import, MasterKeys, ReceivedStore, Store};

/// The engines the store can run on (`[store] engine`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    /// The embedded engine (`engine/sled/`).
    #[default]
    Sled,
    /// PostgreSQL at [`StoreOptions::url`] (`engine/postgres/`).
    Postgres,
}

/// How the store is opened, whatever the engine.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    pub engine: Engine,
    /// The engine's page cache (sled).
    pub cache_bytes: u64,
    /// How often, at most, the engine's snapshot is written while the store
    /// is written to (sled).
    pub checkpoint_every: Duration,
    /// The database's connection URL (PostgreSQL): a secret, never shown.
    pub url: Option<SecretText>,
    /// Connections opened at most to the database (PostgreSQL).
    pub pool_size: u32,
    /// The async handle's store threads (PostgreSQL), each holding one
    /// connection while it runs.
    pub threads: usize,
}

impl Default for StoreOptions {
    fn default() -> Self {
        let sled = OpenOptions::default();
        StoreOptions {
            engine: Engine::Sled,
            cache_bytes: sled.cache_bytes,
            checkpoint_every: sled.checkpoint_every,
            url: None,
            pool_size: PgOptions::DEFAULT_CONNECTIONS,
            threads: POSTGRES_STORE_THREADS,
        }
    }
}

/// An open store. Cheap to clone.
#[derive(Clone)]
pub struct StoreHandle {
    engine: Opened,
    /// The async handle's store threads on PostgreSQL.
    threads: usize,
}

#[derive(Clone)]
enum Opened {
    Sled(SledStore),
    Postgres(OffRuntime),
}

/// Opens (or creates) the store under `dir` on `options.engine`, with the
/// keys `choose` picks once the store's sealed values are known, before
/// anything is written (a refusal leaves the data dir as it was). On
/// PostgreSQL `dir` holds nothing of the store: the schema is migrated at
/// `options.url`.
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
        Engine::Postgres => {
            let url = options.url.filter(|u| !u.is_empty()).ok_or_else(|| {
                StoreError::Unavailable(
                    "[store] engine = \"postgres\" needs [store] url, a PostgreSQL URL".into(),
                )
            })?;
            let mut pg = PgOptions::new(url);
            pg.connections = options.pool_size;
            Opened::Postgres(OffRuntime(PgStore::open(&pg, choose)?))
        }
    };
    Ok(StoreHandle {
        engine,
        threads: options.threads,
    })
}

impl StoreHandle {
    /// The engine it runs on.
    pub fn engine(&self) -> Engine {
        match &self.engine {
            Opened::Sled(_) => Engine::Sled,
            Opened::Postgres(_) => Engine::Postgres,
        }
    }

    /// The store, for synchronous callers (start-up, the CLI, provisioning).
    pub fn store(&self) -> &dyn Store {
        match &self.engine {
            Opened::Sled(s) => s,
            Opened::Postgres(p) => p,
        }
    }

    /// This process's node id on PostgreSQL (`None` on sled, whose data
    /// dir has one process).
    pub fn node(&self) -> Option<String> {
        match &self.engine {
            Opened::Sled(_) => None,
            Opened::Postgres(p) => Some(p.0.node().to_string()),
        }
    }

    /// Publishes `note` to every node listening on this database (the
    /// CLI's changes while nodes serve); on sled, whose data dir has one
    /// process, there is no one to tell.
    pub fn publish(&self, note: &str) -> StoreResult<()> {
        match &self.engine {
            Opened::Sled(_) => Err(StoreError::NotOnThisEngine(
                "this engine's store belongs to one process".into(),
            )),
            Opened::Postgres(p) => crate::engine::postgres::off_runtime(|| p.0.publish(note)),
        }
    }

    /// The store, shared with a thread or an actor.
    pub fn shared(&self) -> Arc<dyn Store + Send + Sync> {
        match &self.engine {
            Opened::Sled(s) => Arc::new(s.clone()),
            Opened::Postgres(p) => Arc::new(p.clone()),
        }
    }

    /// The master key the store's secrets are sealed under.
    pub fn keys(&self) -> &dyn MasterKeys {
        match &self.engine {
            Opened::Sled(s) => s,
            Opened::Postgres(p) => p,
        }
    }

    /// A consistent point to copy the store from (backups).
    pub fn backup(&self) -> &dyn Backup {
        match &self.engine {
            Opened::Sled(s) => s,
            Opened::Postgres(p) => p,
        }
    }

    /// Received invoices and their events' files.
    pub fn received(&self) -> &dyn ReceivedStore {
        match &self.engine {
            Opened::Sled(s) => s,
            Opened::Postgres(p) => p,
        }
    }

    /// Writing an export's records into this (empty) store.
    pub fn import(&self) -> &dyn Import {
        match &self.engine {
            Opened::Sled(s) => s,
            Opened::Postgres(p) => p,
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

    /// The store as of one point while it is written, for an export: on
    /// PostgreSQL a read-only view of one snapshot, its transactions ended
    /// when it is dropped; `None` on sled, whose point is a copy
    /// ([`Backup::checkpoint_to`]).
    pub fn at_point(&self) -> StoreResult<Option<StoreHandle>> {
        match &self.engine {
            Opened::Sled(_) => Ok(None),
            Opened::Postgres(p) => Ok(Some(StoreHandle {
                engine: Opened::Postgres(OffRuntime(p.0.at_point()?)),
                threads: self.threads,
            })),
        }
    }

    /// The handle async code holds, with its threads started.
    pub fn start_async(&self) -> StoreResult<AsyncStore> {
        match &self.engine {
            Opened::Sled(s) => AsyncStore::new(s.clone()),
            Opened::Postgres(p) => AsyncStore::on_postgres(p.0.clone(), self.threads),
        }
    }

    /// Runs `f` with the store while no other node on the same database
    /// runs its own (start-up's set-up of an empty database): on PostgreSQL
    /// under a transaction-scoped advisory lock; on sled a data dir has one
    /// process, and `f` just runs.
    pub fn at_start_alone<T>(&self, f: impl FnOnce(&dyn Store) -> T) -> StoreResult<T> {
        match &self.engine {
            Opened::Sled(s) => Ok(f(s)),
            Opened::Postgres(p) => {
                let lock = off_runtime(|| p.0.start_lock())?;
                let done = f(p);
                off_runtime(move || lock.release())?;
                Ok(done)
            }
        }
    }

    /// Flushes everything and marks the store closed cleanly (the next open
    /// then skips the repair an unclean stop needs).
    pub fn close(&self) -> StoreResult<()> {
        match &self.engine {
            Opened::Sled(s) => s.close(),
            // Every write is committed: nothing to mark. The leases go
            // now, so that another node takes the tasks at once.
            Opened::Postgres(p) => {
                off_runtime(|| p.0.drop_service_leases());
                Ok(())
            }
        }
    }
}
