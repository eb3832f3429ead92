//! The PostgreSQL engine: the store traits on a database that operators
//! already run, replicate and back up with their own tools
//! ([docs/storage.md](../../../../docs/storage.md#the-postgresql-engine)).
//!
//! The synchronous `postgres` client (rust-postgres) behind an `r2d2`
//! pool: the traits are synchronous and run on the store's own threads, so
//! an async client would only add a runtime to block on. The schema is
//! versioned SQL under `store/migrations/postgres/`, applied by `refinery`
//! at open under an advisory lock (several nodes may start at once).
//!
//! Every method that changes data runs in one transaction and returns once
//! it is committed (`synchronous_commit` is PostgreSQL's default, `on`), so
//! durable means what the database's own crash recovery keeps. Numbering
//! holds its counter row locked from the statement that moves it on to the
//! commit of the document that takes the number: no gap, no number twice,
//! on any number of nodes.

mod connect;
mod console_sessions;
mod documents;
mod issuer;
pub(crate) mod keys;
mod list;
pub(crate) mod node_events;
pub(crate) mod node_lease;
pub(crate) mod nodes;
pub(crate) mod off_runtime;
mod point;
pub(crate) mod received;
mod records;
mod search;
pub(crate) mod service_lease;
pub(crate) mod statements;

use std::sync::{Arc, RwLock};
use std::time::Duration;

use postgres::error::SqlState;
use r2d2_postgres::r2d2;

use connect::Connect;
pub(crate) use statements::Sql;

use crate::engine::sled::sealing::{check_keys, secret_fields};
use crate::error::{StoreError, StoreResult};
use crate::secrets::sealing::{self, Keyring, SealedInventory};
use crate::secrets::secret::SecretText;

mod embedded {
    refinery::embed_migrations!("migrations/postgres");
}

/// The migrations this build has, oldest first.
#[cfg(test)]
pub(crate) fn migrations() -> Vec<refinery::Migration> {
    embedded::migrations::runner().get_migrations().clone()
}

/// Taken while migrating, so that nodes starting together migrate once.
const MIGRATION_LOCK: i64 = 0x656d_6973_6f72_0001;

/// Runs this build's migrations, unless a newer build already ran some of
/// its own: then this node is an older one during an upgrade, and serves on
/// the schema as it stands once every migration it knows is there (each
/// migration only adds, so an older node's statements still hold).
fn migrate_locked(client: &mut postgres::Client) -> StoreResult<()> {
    let runner = embedded::migrations::runner();
    let known: Vec<i64> = runner
        .get_migrations()
        .iter()
        .map(|m| i64::from(m.version()))
        .collect();
    let newest = known.iter().copied().max().unwrap_or(0);
    let has_history: bool = client
        .query_one(
            "SELECT to_regclass('refinery_schema_history') IS NOT NULL",
            &[],
        )
        .map_err(db_error)?
        .get(0);
    if has_history {
        let applied: Vec<i64> = client
            .query("SELECT version::bigint FROM refinery_schema_history", &[])
            .map_err(db_error)?
            .iter()
            .map(|row| row.get(0))
            .collect();
        if applied.iter().any(|v| *v > newest) {
            let missing: Vec<i64> = known.into_iter().filter(|v| !applied.contains(v)).collect();
            if !missing.is_empty() {
                return Err(StoreError::Database(format!(
                    "the schema was migrated by a newer emisor without this build's migrations {missing:?}"
                )));
            }
            tracing::info!(
                newest_known = newest,
                "the schema is newer than this build: serving on it, no migration run"
            );
            return Ok(());
        }
    }
    runner
        .run(client)
        .map_err(|e| {
            // refinery's message alone does not say what PostgreSQL refused.
            let mut why = e.to_string();
            let mut source = std::error::Error::source(&e);
            while let Some(s) = source {
                why.push_str(&format!(": {s}"));
                source = s.source();
            }
            StoreError::Database(format!("migrating the schema: {why}"))
        })
        .map(|_| ())
}

/// How the engine reaches its database.
#[derive(Clone)]
pub struct PgOptions {
    /// The connection URL (`[store] url`): it carries a password, so it is
    /// a secret and never shown.
    pub url: SecretText,
    /// Connections kept open.
    pub connections: u32,
    /// How long a caller waits for a connection before the store is
    /// reported unavailable.
    pub connect_timeout: Duration,
}

impl std::fmt::Debug for PgOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgOptions")
            .field("url", &"[redacted]")
            .field("connections", &self.connections)
            .finish()
    }
}

impl PgOptions {
    /// The async handle's store threads, phase one on the signer pool and
    /// the synchronous callers, each holding one while it runs (the
    /// default of `[store] pool_size`).
    pub const DEFAULT_CONNECTIONS: u32 = 24;

    pub fn new(url: SecretText) -> Self {
        PgOptions {
            url,
            connections: Self::DEFAULT_CONNECTIONS,
            connect_timeout: Duration::from_secs(5),
        }
    }
}

type Manager = statements::Manager;
type Pool = r2d2::Pool<Manager>;
pub(crate) type Conn = r2d2::PooledConnection<Manager>;

/// The pool, closed off any runtime's thread (its connections block on
/// their own runtime as they close).
struct Pooled(Option<Pool>);

impl Drop for Pooled {
    fn drop(&mut self) {
        if let Some(pool) = self.0.take() {
            off_runtime(move || drop(pool));
        }
    }
}

/// Runs `f` where the `postgres` client may block: here, or on a scoped
/// thread when this one is inside a tokio runtime.
pub(crate) fn off_runtime<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    if tokio::runtime::Handle::try_current().is_err() {
        return f();
    }
    std::thread::scope(|scope| match scope.spawn(f).join() {
        Ok(v) => v,
        Err(panic) => std::panic::resume_unwind(panic),
    })
}

/// The store on PostgreSQL. Cheap to clone.
#[derive(Clone)]
pub struct PgStore {
    pool: Arc<Pooled>,
    /// How a new connection is made (a point's own pool makes them too).
    connect: Arc<Connect>,
    connect_timeout: Duration,
    pub(crate) keys: Arc<RwLock<Arc<Keyring>>>,
    /// An import in progress: its one transaction.
    pub(crate) import: Arc<std::sync::Mutex<keys::ImportTx>>,
    /// The once-per-service tasks' leases this node holds.
    leases: Arc<service_lease::LeaseSessions>,
    /// This process's node: a fresh id at each open
    /// ([`node_lease`](crate::engine::postgres::node_lease)).
    pub(crate) node: Arc<str>,
    /// The shared window's claims this node's requests hold.
    pub(crate) claims: Arc<nodes::HeldClaims>,
    /// The numbering hold as phase one last read it (an imported store's;
    /// none is the usual), which phase one's statement compares.
    pub(crate) hold_seen: Arc<std::sync::Mutex<Option<serde_json::Value>>>,
}

/// The tables whose records hold secrets, with the sled tree whose secret
/// fields they share.
pub(crate) const SEALED_TABLES: [(&str, &str); 4] = [
    ("companies", crate::encoding::trees::COMPANIES),
    ("software", crate::encoding::trees::SOFTWARE),
    ("resolutions", crate::encoding::trees::RESOLUTIONS),
    ("certificates", crate::encoding::trees::CERTIFICATES),
];

impl PgStore {
    /// Connects, migrates the schema, and checks that the keys `choose`
    /// picks open every sealed value the database holds (a node with
    /// another master key refuses to start rather than make a new one).
    pub fn open(
        options: &PgOptions,
        choose: impl FnOnce(&SealedInventory) -> StoreResult<Keyring>,
    ) -> StoreResult<PgStore> {
        // The parser's messages never repeat the URL, but say nothing of it
        // anyway: it holds a password.
        let connect = Connect::new(options.url.expose())?;
        let pool = off_runtime(|| {
            // One connection at open, the others as callers need them:
            // r2d2 otherwise opens every one (`min_idle` defaults to
            // `max_size`) within the timeout before the node may start,
            // which a busy database (or host) does not always allow.
            r2d2::Pool::builder()
                .max_size(options.connections.max(1))
                .min_idle(Some(1))
                // No empty query before each hand-out (a round trip per
                // call): a connection the database dropped fails its next
                // statement, which is answered unavailable, and the pool
                // discards it (`has_broken`) as it comes back.
                .test_on_check_out(false)
                .connection_timeout(options.connect_timeout)
                .build(connect.manager())
                .map_err(|e| {
                    let why = connect
                        .why_not(options.connect_timeout)
                        .unwrap_or_else(|| e.to_string());
                    StoreError::Unavailable(format!("connecting to PostgreSQL: {why}"))
                })
        })?;
        let provisional = Arc::new(Keyring::without_secrets()?);
        let store = PgStore {
            pool: Arc::new(Pooled(Some(pool))),
            connect: Arc::new(connect),
            connect_timeout: options.connect_timeout,
            keys: Arc::new(RwLock::new(provisional)),
            import: Arc::default(),
            leases: Arc::default(),
            node: node_lease::new_node_id()?.into(),
            claims: Arc::default(),
            hold_seen: Arc::default(),
        };
        let inventory = off_runtime(|| {
            store.migrate()?;
            store.survey()
        })?;
        let keys = choose(&inventory)?;
        check_keys(&inventory, &keys)?;
        *store
            .keys
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(keys);
        Ok(store)
    }

    /// Applies the migrations this build has and the database lacks.
    fn migrate(&self) -> StoreResult<()> {
        let mut conn = self.conn()?;
        conn.execute("SELECT pg_advisory_lock($1)", &[&MIGRATION_LOCK])
            .map_err(db_error)?;
        let ran = migrate_locked(&mut conn.client);
        conn.execute("SELECT pg_advisory_unlock($1)", &[&MIGRATION_LOCK])
            .map_err(db_error)?;
        ran
    }

    /// The master keys the sealed values name, and how many are plain.
    fn survey(&self) -> StoreResult<SealedInventory> {
        let mut conn = self.conn()?;
        let mut inventory = SealedInventory::default();
        for (table, tree) in SEALED_TABLES {
            for row in conn
                .query(&format!("SELECT record FROM {table}"), &[])
                .map_err(db_error)?
            {
                let record: serde_json::Value = row.try_get(0).map_err(db_error)?;
                sealing::survey(tree, secret_fields(tree), &record, &mut inventory)?;
            }
        }
        Ok(inventory)
    }

    /// A connection from the pool; none within the timeout: unavailable.
    pub(crate) fn conn(&self) -> StoreResult<Conn> {
        let Some(pool) = &self.pool.0 else {
            return Err(StoreError::Unavailable("the store is closed".into()));
        };
        pool.get()
            .map_err(|e| StoreError::Unavailable(format!("no PostgreSQL connection: {e}")))
    }

    pub(crate) fn keyring(&self) -> Arc<Keyring> {
        self.keys
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Seals and unseals secret fields on this thread while alive.
    pub(crate) fn sealing_scope(&self) -> sealing::Scope {
        sealing::scope(self.keyring())
    }
}

/// A PostgreSQL error as the store's: a lost or refused connection is the
/// store being unavailable (the node answers 503 and retries); anything else
/// is the database refusing the statement.
pub(crate) fn db_error(e: postgres::Error) -> StoreError {
    let io = std::error::Error::source(&e).is_some_and(|s| s.is::<std::io::Error>());
    if e.is_closed() || io {
        return StoreError::Unavailable(format!("PostgreSQL: {e}"));
    }
    match e.code() {
        Some(code) if is_unavailable(code) => StoreError::Unavailable(format!("PostgreSQL: {e}")),
        Some(code)
            if *code == SqlState::CHARACTER_NOT_IN_REPERTOIRE
                || *code == SqlState::UNTRANSLATABLE_CHARACTER =>
        {
            StoreError::Unstorable(
                "a text holds a NUL character (\\u0000), which is not kept".into(),
            )
        }
        _ => StoreError::Database(match e.as_db_error() {
            Some(db) => format!("{}: {}", db.code().code(), db.message()),
            None => e.to_string(),
        }),
    }
}

/// Codes that mean the database is going away or not there yet.
fn is_unavailable(code: &SqlState) -> bool {
    [
        SqlState::ADMIN_SHUTDOWN,
        SqlState::CRASH_SHUTDOWN,
        SqlState::CANNOT_CONNECT_NOW,
        SqlState::CONNECTION_FAILURE,
        SqlState::CONNECTION_EXCEPTION,
        SqlState::READ_ONLY_SQL_TRANSACTION,
    ]
    .contains(code)
}

/// Whether `key` can be in a text column at all: PostgreSQL's text holds
/// no NUL, so a lookup by one finds nothing (and asks nothing).
pub(crate) fn storable(key: &str) -> bool {
    !key.contains('\0')
}

/// Whether `e` is a unique constraint refusing a second row.
pub(crate) fn is_unique_violation(e: &postgres::Error) -> bool {
    e.code() == Some(&SqlState::UNIQUE_VIOLATION)
}
