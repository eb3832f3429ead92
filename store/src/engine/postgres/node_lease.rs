//! Which nodes serving from one database are alive, and what the live ones
//! take over from the dead (docs/operations.md, "Several nodes"). Each
//! process opens the store as a node of its own (a fresh id), and keeps a
//! lease in `node_leases` renewed every quarter of its length on a thread
//! of its own, so that a busy node's requests never delay it. A node whose
//! lease has expired is dead: its queued jobs, its job claims and its
//! half-built documents pass to the node that adopts them, each row locked
//! `FOR UPDATE SKIP LOCKED` so that two live nodes never adopt the same
//! one. Times are the database's (`now()`), so the nodes' clocks need not
//! agree.
//!
//! A row written by a node of the previous schema names no node: it is
//! adopted once it is overdue by a lease (such a node runs its own work
//! when due).

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

use chrono::Utc;

use crate::engine::postgres::records::records;
use crate::engine::postgres::{db_error, PgStore, Sql};
use crate::error::{StoreError, StoreResult};
use crate::model::{state, DocumentRecord, Job};

/// A fresh node id, in the form of a random (version 4) UUID.
pub(crate) fn new_node_id() -> StoreResult<String> {
    let mut b = [0u8; 16];
    openssl::rand::rand_bytes(&mut b)
        .map_err(|e| StoreError::Database(format!("drawing a node id: {e}")))?;
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    Ok(format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    ))
}

/// The condition of a row's node being dead: no live lease names it.
const DEAD: &str =
    "NOT EXISTS (SELECT 1 FROM node_leases n WHERE n.node = {col} AND n.expires_at > now())";

fn dead(col: &str) -> String {
    DEAD.replace("{col}", col)
}

const RENEW: &str = "INSERT INTO node_leases (node, expires_at)
     VALUES ($1, now() + make_interval(secs => $2::float8))
     ON CONFLICT (node) DO UPDATE SET expires_at = excluded.expires_at,
         live_since = CASE WHEN node_leases.expires_at <= now() THEN now()
                           ELSE node_leases.live_since END";

/// The adopter's own lease has run without a break for `$settle` seconds
/// (its statement's parameter).
fn settled(settle: &str) -> String {
    format!(
        "EXISTS (SELECT 1 FROM node_leases me WHERE me.node = $1 AND me.expires_at > now()
             AND me.live_since <= now() - make_interval(secs => {settle}::float8))"
    )
}

/// The nodes other than `$1` that hold jobs and that no live lease names.
/// The nodes holding jobs are walked through `jobs_of_node`, one probe
/// each (a loose index scan): no queued row is read to judge its
/// node, which costs a poll that finds nothing tens of milliseconds at
/// 100 000 jobs.
pub(crate) fn dead_job_owners_sql() -> String {
    format!(
        "WITH RECURSIVE owner(node) AS (
             SELECT min(node) FROM jobs
           UNION ALL
             SELECT (SELECT min(o.node) FROM jobs o WHERE o.node > owner.node)
             FROM owner WHERE owner.node IS NOT NULL
         )
         SELECT owner.node FROM owner
         WHERE owner.node IS NOT NULL AND owner.node <> $1 AND {}",
        dead("owner.node")
    )
}

/// The adoption of a batch of jobs: `$1` the adopter, `$2` the instant
/// (Unix ms) before which a previous schema's job is overdue, `$3` the
/// batch, `$4` the settling time (s), `$5` the dead nodes holding jobs
/// ([`dead_job_owners_sql`]; named as values, so that the database plans
/// for how many jobs each holds).
///
/// The candidates (the dead nodes' oldest jobs through `jobs_of_node`,
/// asked in its order: ordered by id alone, the database may walk the
/// primary key past every live node's job instead; a previous schema's
/// overdue ones through `jobs_without_node`) are locked
/// `SKIP LOCKED`, their node judged again on the row as locked (it may
/// have been taken, or its node live again, since), and moved; each step
/// reads rows by id, never the whole queue.
pub(crate) fn adopt_jobs_sql() -> String {
    format!(
        "UPDATE jobs SET node = $1 WHERE id = ANY(ARRAY(
             SELECT j.id FROM jobs j
             WHERE j.id = ANY(ARRAY(
                     (SELECT o.id FROM jobs o WHERE o.node = ANY($5::text[])
                      ORDER BY o.node, o.id LIMIT $3)
                   UNION ALL
                     (SELECT u.id FROM jobs u WHERE u.node IS NULL AND u.run_at_ms < $2
                      ORDER BY u.id LIMIT $3)))
               AND j.node IS DISTINCT FROM $1 AND {}
               AND CASE WHEN j.node IS NULL THEN j.run_at_ms < $2 ELSE {} END
             ORDER BY j.id LIMIT $3
             FOR UPDATE SKIP LOCKED))
         RETURNING record",
        settled("$4"),
        dead("j.node")
    )
}

/// At most this many rows are adopted by one statement.
const ADOPT_BATCH: i64 = 500;

impl PgStore {
    /// This process's node id.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// A worker's name as its claims store it: with its node.
    pub(crate) fn worker(&self, worker: &str) -> String {
        format!("{worker}@{}", self.node)
    }

    /// Writes this node's lease until `lease` from now.
    pub(crate) fn renew_node_lease(&self, lease: Duration) -> StoreResult<()> {
        self.conn()?
            .execute(RENEW, &[&self.node(), &lease.as_secs_f64()])
            .map_err(db_error)?;
        Ok(())
    }

    /// [`renew_node_lease`](Self::renew_node_lease) on the lease's own
    /// connection, out of the pool (made again after a failure): a node
    /// whose pool is busy with requests still renews on time.
    fn renew_on(&self, client: &mut Option<postgres::Client>, lease: Duration) -> StoreResult<()> {
        let conn = match client {
            Some(c) if !c.is_closed() => c,
            _ => {
                let mut config = self.connect.config.clone();
                config
                    .connect_timeout(self.connect_timeout)
                    .application_name("emisor node lease");
                client.insert(config.connect(self.connect.tls.clone()).map_err(db_error)?)
            }
        };
        let renewed = conn.execute(RENEW, &[&self.node(), &lease.as_secs_f64()]);
        if renewed.is_err() {
            *client = None;
        }
        renewed.map(|_| ()).map_err(db_error)
    }

    /// Ends this node's lease (a clean stop): the other nodes adopt its
    /// work at once. Leases long expired are pruned with it.
    pub(crate) fn end_node_lease(&self) -> StoreResult<()> {
        self.conn()?
            .execute(
                "DELETE FROM node_leases WHERE node = $1 OR expires_at < now() - interval '1 day'",
                &[&self.node()],
            )
            .map_err(db_error)?;
        Ok(())
    }

    /// The jobs on this node's timetable (it wrote or adopted them last).
    pub(crate) fn own_jobs(&self) -> StoreResult<Vec<Job>> {
        let rows = self
            .conn()?
            .query(
                "SELECT record FROM jobs WHERE node = $1 ORDER BY id",
                &[&self.node()],
            )
            .map_err(db_error)?;
        records("jobs", &rows)
    }

    /// Jobs of dead nodes (and those of a previous schema's node overdue
    /// by `grace`), moved to this node's timetable, at most a batch at a
    /// time (the caller asks again until none is left): each locked, so
    /// that another node adopting at the same time skips it. None unless
    /// this node's own lease has run without a break for `settle`.
    pub(crate) fn adopt_jobs(&self, grace: Duration, settle: Duration) -> StoreResult<Vec<Job>> {
        let overdue_ms = Utc::now().timestamp_millis() - grace.as_millis() as i64;
        let mut conn = self.conn()?;
        let dead: Vec<String> = conn
            .query(&dead_job_owners_sql(), &[&self.node()])
            .map_err(db_error)?
            .iter()
            .map(|row| row.get(0))
            .collect();
        let rows = conn
            .query(
                &adopt_jobs_sql(),
                &[
                    &self.node(),
                    &overdue_ms,
                    &ADOPT_BATCH,
                    &settle.as_secs_f64(),
                    &dead,
                ],
            )
            .map_err(db_error)?;
        let mut adopted: Vec<Job> = records("jobs", &rows)?;
        adopted.sort_by_key(|j| j.id);
        Ok(adopted)
    }

    /// Half-built documents of dead nodes (and those of a previous
    /// schema's node untouched for `grace`), at most a batch at a time,
    /// each as a draft (as
    /// [`pending_builds`](crate::DocumentStore::pending_builds) gives them),
    /// to be built by this node from now (none unless this node's own
    /// lease has run without a break for `settle`): locked, so that another node
    /// adopting at the same time skips it, and one whose phase two is
    /// committing is left to it.
    pub(crate) fn adopt_pending_builds(
        &self,
        grace: Duration,
        settle: Duration,
    ) -> StoreResult<Vec<DocumentRecord>> {
        let sql = format!(
            "UPDATE documents SET build_node = $1 WHERE id IN (
                 SELECT d.id FROM documents d
                 WHERE d.pending_build AND d.build_node IS DISTINCT FROM $1 AND {}
                   AND CASE WHEN d.build_node IS NULL
                       THEN d.updated_at < now() - make_interval(secs => $2::float8)
                       ELSE {} END
                 ORDER BY d.id LIMIT $3
                 FOR UPDATE SKIP LOCKED)
             RETURNING record",
            settled("$4"),
            dead("d.build_node")
        );
        let rows = self
            .conn()?
            .query(
                &sql,
                &[
                    &self.node(),
                    &grace.as_secs_f64(),
                    &ADOPT_BATCH,
                    &settle.as_secs_f64(),
                ],
            )
            .map_err(db_error)?;
        let mut docs: Vec<DocumentRecord> = records("documents", &rows)?;
        docs.sort_by_key(|d| d.id);
        for d in &mut docs {
            d.state = state::DRAFT;
        }
        Ok(docs)
    }

    /// Registers this node and keeps its lease of `lease` renewed until the
    /// returned handle is dropped (which ends it).
    pub fn keep_node_alive(&self, lease: Duration) -> StoreResult<NodeLease> {
        self.renew_node_lease(lease)?;
        let shared = Arc::new(Beat {
            stop: Mutex::new(false),
            wake: Condvar::new(),
            settled_at_ms: AtomicI64::new(i64::MIN),
        });
        let store = self.clone();
        let beat = shared.clone();
        let thread = std::thread::Builder::new()
            .name("node-lease".into())
            .spawn(move || beat.run(&store, lease))
            .map_err(|e| StoreError::Database(format!("starting the node's lease: {e}")))?;
        Ok(NodeLease {
            beat: shared,
            thread: Some(thread),
            lease,
        })
    }
}

struct Beat {
    stop: Mutex<bool>,
    wake: Condvar,
    /// Since when the lease has been renewed without a miss (Unix ms;
    /// `i64::MIN`: since the start, `i64::MAX`: the last renewal failed).
    settled_at_ms: AtomicI64,
}

impl Beat {
    fn run(&self, store: &PgStore, lease: Duration) {
        let every = lease / 4;
        let mut client = None;
        let mut stopped = self.stop.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            stopped = self
                .wake
                .wait_timeout(stopped, every)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
            if *stopped {
                break;
            }
            match store.renew_on(&mut client, lease) {
                Ok(()) => {
                    // The list pages' kept counts, folded while the node lives.
                    if let Err(e) = store.fold_document_counts() {
                        tracing::warn!(node = %store.node, error = %e, "folding the document counts");
                    }
                    if self.settled_at_ms.load(Ordering::Relaxed) == i64::MAX {
                        let now = Utc::now().timestamp_millis();
                        self.settled_at_ms.store(now, Ordering::Relaxed);
                        tracing::info!(node = %store.node, "the node's lease is renewed again");
                    }
                }
                Err(e) => {
                    if self.settled_at_ms.swap(i64::MAX, Ordering::Relaxed) != i64::MAX {
                        tracing::warn!(node = %store.node, error = %e, "renewing the node's lease");
                    }
                }
            }
        }
        drop((stopped, client));
        if let Err(e) = store.end_node_lease() {
            tracing::warn!(node = %store.node, error = %e, "ending the node's lease");
        }
    }
}

/// This node's lease, renewed on a thread of its own while held; dropped:
/// ended, so that the other nodes adopt this node's work at once.
pub struct NodeLease {
    beat: Arc<Beat>,
    thread: Option<std::thread::JoinHandle<()>>,
    lease: Duration,
}

impl std::fmt::Debug for NodeLease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeLease")
            .field("lease", &self.lease)
            .finish()
    }
}

impl NodeLease {
    /// Whether this node may judge others dead: its own lease has been
    /// renewed without a miss for a whole lease. After the database was
    /// away every node's lease may have run out together; each gets a
    /// lease's time to renew its own before its work is adopted.
    pub fn settled(&self) -> bool {
        let since = self.beat.settled_at_ms.load(Ordering::Relaxed);
        since == i64::MIN
            || (since != i64::MAX
                && Utc::now().timestamp_millis() - since >= self.lease.as_millis() as i64)
    }

    /// The lease's length.
    pub fn lease(&self) -> Duration {
        self.lease
    }
}

impl Drop for NodeLease {
    fn drop(&mut self) {
        *self
            .beat
            .stop
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = true;
        self.beat.wake.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
