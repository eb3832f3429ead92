//! The store as of one point while it serves (an export of a running
//! node): a [`PgStore`] on a pool of its own whose connections are each
//! inside one `REPEATABLE READ READ ONLY` transaction on the same
//! snapshot. The first one takes the snapshot and exports it
//! (`pg_export_snapshot`); any other imports it (`SET TRANSACTION
//! SNAPSHOT`), which PostgreSQL refuses once the first is gone, so a lost
//! connection fails the reader instead of reading another point.

use std::sync::{Arc, Mutex, PoisonError, RwLock};

use r2d2_postgres::r2d2;

use crate::engine::postgres::statements::PgConn;
use crate::engine::postgres::{db_error, off_runtime, PgStore, Pooled, Sql};
use crate::error::{StoreError, StoreResult};

/// Connections of a point's pool: one reads; a second serves a reader
/// that asks for another while holding the first.
const CONNECTIONS: u32 = 2;

/// Begins each new connection's transaction on the point's snapshot.
#[derive(Debug, Default)]
struct AtPoint {
    /// The exported snapshot's name, once the first connection took it.
    snapshot: Mutex<Option<String>>,
}

impl r2d2::CustomizeConnection<PgConn, postgres::Error> for AtPoint {
    fn on_acquire(&self, client: &mut PgConn) -> Result<(), postgres::Error> {
        let mut snapshot = self.snapshot.lock().unwrap_or_else(PoisonError::into_inner);
        client.batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")?;
        match snapshot.as_deref() {
            Some(name) => {
                // A name PostgreSQL gave, quoted as a literal.
                let name = name.replace('\'', "''");
                client.batch_execute(&format!("SET TRANSACTION SNAPSHOT '{name}'"))?;
            }
            None => {
                let name: String = client.query_one("SELECT pg_export_snapshot()", &[])?.get(0);
                *snapshot = Some(name);
            }
        }
        Ok(())
    }
}

impl PgStore {
    /// The store as it is now, for reading while writes go on: every
    /// transaction committed before this call and none after. It writes
    /// nothing (a write fails as on a read-only database); its
    /// transactions end when its last clone is dropped.
    pub(crate) fn at_point(&self) -> StoreResult<PgStore> {
        let pool = off_runtime(|| {
            r2d2::Pool::builder()
                .max_size(CONNECTIONS)
                .min_idle(Some(1))
                // Its connections live as long as the point: a new one
                // could only import the snapshot while the first lives.
                .max_lifetime(None)
                .idle_timeout(None)
                .connection_timeout(self.connect_timeout)
                .connection_customizer(Box::new(AtPoint::default()))
                .build(self.connect.manager())
                .map_err(|e| {
                    StoreError::Unavailable(format!("taking a point of the PostgreSQL store: {e}"))
                })
        })?;
        let point = PgStore {
            pool: Arc::new(Pooled(Some(pool))),
            connect: Arc::clone(&self.connect),
            connect_timeout: self.connect_timeout,
            keys: Arc::new(RwLock::new(self.keyring())),
            import: Arc::default(),
            // A point runs no task: it holds no lease.
            leases: Arc::default(),
            node: Arc::clone(&self.node),
            // Nor does it issue.
            claims: Arc::default(),
            hold_seen: Arc::default(),
        };
        // The snapshot is taken: check it is the transaction's.
        let isolation: String = off_runtime(|| {
            point
                .conn()?
                .query_one("SHOW transaction_isolation", &[])
                .map_err(db_error)
        })?
        .get(0);
        if isolation != "repeatable read" {
            return Err(StoreError::Database(format!(
                "a point of the store reads at `{isolation}`, not repeatable read"
            )));
        }
        Ok(point)
    }
}
