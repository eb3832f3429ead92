//! The leases of the once-per-service tasks (docs/operations.md, "Several
//! nodes"): a task runs on the one node that holds its session advisory
//! lock. Each task's lock is held on a connection of its own, kept out of
//! the pool: the lock lives exactly as long as that session, so a node
//! that dies (its connections closed by its kernel, or cut off and found
//! dead by the keepalives set below) frees its tasks for the others, and a
//! node whose connection fails knows at once that it no longer holds them.
//!
//! Also the start-up lock: the one-time set-up of an empty database (the
//! demo company, the admin token) under a transaction-scoped advisory lock,
//! so that nodes starting at once on an empty database set it up once.

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use crate::engine::postgres::{db_error, off_runtime, PgStore};
use crate::error::{StoreError, StoreResult};

/// A task that runs on one node of the service at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ServiceTask {
    /// Re-queuing the documents waiting for the authority or dead.
    Recovery,
    /// Comparing stored documents with what the authority holds.
    Reconciliation,
    /// The operator's warnings before anything runs out.
    Warnings,
    /// Reading the events the authority holds on issued invoices.
    EventsSweep,
}

impl ServiceTask {
    pub const ALL: [ServiceTask; 4] = [
        ServiceTask::Recovery,
        ServiceTask::Reconciliation,
        ServiceTask::Warnings,
        ServiceTask::EventsSweep,
    ];

    /// The lock's second key: fixed, so that every version of every node
    /// names a task's lock alike.
    fn key(self) -> i32 {
        match self {
            ServiceTask::Recovery => 1,
            ServiceTask::Reconciliation => 2,
            ServiceTask::Warnings => 3,
            ServiceTask::EventsSweep => 4,
        }
    }

    fn index(self) -> usize {
        match self {
            ServiceTask::Recovery => 0,
            ServiceTask::Reconciliation => 1,
            ServiceTask::Warnings => 2,
            ServiceTask::EventsSweep => 3,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ServiceTask::Recovery => "recovery",
            ServiceTask::Reconciliation => "reconciliation",
            ServiceTask::Warnings => "warnings",
            ServiceTask::EventsSweep => "events sweep",
        }
    }
}

impl std::fmt::Display for ServiceTask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether this node holds a task's lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holding {
    /// Another node holds it (or the database could not be asked): the
    /// task does not run here.
    Not,
    /// Held since the last time it was asked, on the same session.
    Kept,
    /// Taken now: another node may have run the task meanwhile, so what
    /// the task remembers in memory is read again from the store.
    Taken,
}

impl Holding {
    /// Whether the task runs here now.
    pub fn runs(self) -> bool {
        self != Holding::Not
    }
}

/// The advisory-lock class of the tasks' leases (the second key is
/// [`ServiceTask::key`]).
const SERVICE_LEASES: i32 = 0x656d_6902;

/// The advisory lock taken around a node's start-up set-up.
const START_LOCK: i64 = 0x656d_6973_6f72_0002;

/// How soon a session whose node went silent is found dead, on both ends:
/// the client's socket gives up after `LEASE_SILENCE` of unanswered
/// traffic, the server's after idle + interval × count of keepalives.
const LEASE_SILENCE: Duration = Duration::from_secs(15);
const KEEPALIVE_IDLE_S: u32 = 5;
const KEEPALIVE_INTERVAL_S: u32 = 2;
const KEEPALIVE_COUNT: u32 = 3;

/// Each task's session (`None` until first asked, and after it failed).
#[derive(Default)]
pub(crate) struct LeaseSessions {
    sessions: [Mutex<Option<postgres::Client>>; ServiceTask::ALL.len()],
}

impl PgStore {
    /// Takes `task`'s lease if no node holds it, or says whether this node
    /// still does. A session that fails has lost its lock with it: one new
    /// session is tried at once, and an error means "not held".
    pub(crate) fn hold_service_task(&self, task: ServiceTask) -> StoreResult<Holding> {
        let Some(slot) = self.leases.sessions.get(task.index()) else {
            return Ok(Holding::Not);
        };
        let mut session = slot.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(client) = session.as_mut() {
            match ask(client, task) {
                Ok(holding) => return Ok(holding),
                Err(e) => {
                    tracing::warn!(task = %task, error = %e, "the lease's session failed");
                    *session = None;
                }
            }
        }
        let mut client = self.lease_session()?;
        let holding = ask(&mut client, task).map_err(db_error)?;
        *session = Some(client);
        Ok(match holding {
            Holding::Kept => Holding::Taken,
            other => other,
        })
    }

    /// Frees every lease this store holds (its sessions closed).
    pub(crate) fn drop_service_leases(&self) {
        for slot in &self.leases.sessions {
            drop(slot.lock().unwrap_or_else(PoisonError::into_inner).take());
        }
    }

    /// A session of its own for one lease, with keepalives on both ends.
    fn lease_session(&self) -> StoreResult<postgres::Client> {
        let mut config = self.connect.config.clone();
        config
            .connect_timeout(self.connect_timeout)
            .application_name("emisor service lease")
            .keepalives(true)
            .keepalives_idle(Duration::from_secs(KEEPALIVE_IDLE_S.into()))
            .keepalives_interval(Duration::from_secs(KEEPALIVE_INTERVAL_S.into()))
            .keepalives_retries(KEEPALIVE_COUNT)
            .tcp_user_timeout(LEASE_SILENCE);
        let mut client = config
            .connect(self.connect.tls.clone())
            .map_err(|e| StoreError::Unavailable(format!("a lease's session: {e}")))?;
        // The server's side: a node cut off without closing its socket
        // leaves its leases within seconds, not the system's two hours.
        client
            .batch_execute(&format!(
                "SET tcp_keepalives_idle = {KEEPALIVE_IDLE_S};
                 SET tcp_keepalives_interval = {KEEPALIVE_INTERVAL_S};
                 SET tcp_keepalives_count = {KEEPALIVE_COUNT};"
            ))
            .map_err(db_error)?;
        Ok(client)
    }

    /// Taken before a start-up's set-up of an empty database, so that no
    /// other node runs its own meanwhile: a transaction-scoped advisory
    /// lock on a session of its own, which ends with the transaction (or
    /// the node).
    pub(crate) fn start_lock(&self) -> StoreResult<StartLock> {
        let mut config = self.connect.config.clone();
        config
            .connect_timeout(self.connect_timeout)
            .application_name("emisor start-up");
        let mut client = config
            .connect(self.connect.tls.clone())
            .map_err(|e| StoreError::Unavailable(format!("the start-up lock's session: {e}")))?;
        client.batch_execute("BEGIN").map_err(db_error)?;
        client
            .execute("SELECT pg_advisory_xact_lock($1)", &[&START_LOCK])
            .map_err(db_error)?;
        Ok(StartLock(Some(client)))
    }
}

/// The start-up lock of [`PgStore::start_lock`]; dropped unreleased, its
/// session closes, which frees it too.
pub(crate) struct StartLock(Option<postgres::Client>);

impl StartLock {
    /// Ends the transaction, and the lock with it.
    pub(crate) fn release(mut self) -> StoreResult<()> {
        match self.0.take() {
            Some(mut client) => client.batch_execute("COMMIT").map_err(db_error),
            None => Ok(()),
        }
    }
}

impl Drop for StartLock {
    fn drop(&mut self) {
        // The client blocks as it closes: never on a runtime's thread.
        if let Some(client) = self.0.take() {
            off_runtime(move || drop(client));
        }
    }
}

/// Whether `client`'s session holds `task`'s lock, taking it if free.
fn ask(client: &mut postgres::Client, task: ServiceTask) -> Result<Holding, postgres::Error> {
    let row = client.query_one(
        "SELECT CASE
             WHEN EXISTS (SELECT 1 FROM pg_locks
                          WHERE locktype = 'advisory' AND pid = pg_backend_pid()
                            AND classid = $1::int4::oid AND objid = $2::int4::oid
                            AND objsubid = 2 AND granted) THEN 1
             WHEN pg_try_advisory_lock($1, $2) THEN 2
             ELSE 0 END",
        &[&SERVICE_LEASES, &task.key()],
    )?;
    Ok(match row.get::<_, i32>(0) {
        1 => Holding::Kept,
        2 => Holding::Taken,
        _ => Holding::Not,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_task_has_a_lock_and_a_session_of_its_own() {
        let keys: std::collections::BTreeSet<i32> =
            ServiceTask::ALL.iter().map(|t| t.key()).collect();
        assert_eq!(keys.len(), ServiceTask::ALL.len());
        for (i, task) in ServiceTask::ALL.iter().enumerate() {
            assert_eq!(task.index(), i, "{task}");
        }
    }
}
