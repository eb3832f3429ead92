//! What several nodes on one database share while they serve, as async
//! code sees it: on PostgreSQL the duplicate-payload window and the
//! per-key request counts live in the database, so every node sees them;
//! on sled a data dir has one process, and these stay in that process's
//! memory (the callers keep them there: [`AsyncStore::is_shared`] is false).

use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::async_store::{AsyncStore, Engine};
use crate::error::{StoreError, StoreResult};
use crate::model::CompanyId;

pub use crate::engine::postgres::node_events::Heard;
pub use crate::engine::postgres::node_lease::NodeLease;
pub use crate::engine::postgres::nodes::{AuthoritySlot, PayloadClaim};
use crate::model::{DocumentRecord, Job};

/// A claim's token: distinct across the processes on one database (a
/// randomly seeded hash of a counter).
fn new_token() -> i64 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    static SEED: std::sync::OnceLock<std::hash::RandomState> = std::sync::OnceLock::new();
    let mut hasher = SEED.get_or_init(std::hash::RandomState::new).build_hasher();
    hasher.write_u64(NEXT.fetch_add(1, Ordering::Relaxed));
    // Positive, so that a claim written by an upgrade (token 0) is no one's.
    (hasher.finish() >> 1) as i64 | 1
}

fn not_shared() -> StoreError {
    StoreError::NotOnThisEngine("this engine's store belongs to one process".into())
}

impl AsyncStore {
    /// Whether several nodes may serve from this store at once (PostgreSQL),
    /// so that what they must agree on is kept in it.
    pub fn is_shared(&self) -> bool {
        matches!(self.engine, Engine::Postgres(_))
    }

    /// Claims a payload in the shared duplicate window for `hold` (a node
    /// that dies while it processes leaves the claim to expire); once it
    /// made a document, it is refused for `window` (completed by the
    /// document's phase two when phase one numbered it for this payload,
    /// else by [`complete_payload`](Self::complete_payload)).
    pub async fn claim_payload(
        &self,
        company: CompanyId,
        hash: [u8; 32],
        hold: Duration,
        window: Duration,
    ) -> StoreResult<PayloadClaim> {
        let Engine::Postgres(pg) = &self.engine else {
            return Err(not_shared());
        };
        let (pg, token) = (pg.clone(), new_token());
        self.pool
            .run(move || pg.claim_payload(company, &hash, token, hold, window))
            .await
    }

    /// The claimed payload made `document_id`: refused on every node for
    /// `window` from now.
    pub async fn complete_payload(
        &self,
        company: CompanyId,
        hash: [u8; 32],
        token: i64,
        document_id: u64,
        window: Duration,
    ) -> StoreResult<()> {
        let Engine::Postgres(pg) = &self.engine else {
            return Err(not_shared());
        };
        if pg.claims.end(token) {
            // Written with the document, in its phase two's commit.
            return Ok(());
        }
        let pg = pg.clone();
        self.pool
            .run(move || pg.complete_payload(company, &hash, token, document_id, window))
            .await
    }

    /// The claimed payload made nothing: free again on every node.
    pub async fn release_payload(
        &self,
        company: CompanyId,
        hash: [u8; 32],
        token: i64,
    ) -> StoreResult<()> {
        let Engine::Postgres(pg) = &self.engine else {
            return Err(not_shared());
        };
        let pg = pg.clone();
        self.pool
            .run(move || pg.release_payload(company, &hash, token))
            .await
    }

    /// Counts `n` requests of API key `key` in the minute starting at
    /// `minute` (Unix seconds) on every node; the minute's count so far,
    /// with them.
    pub async fn count_requests(&self, key: u64, minute: i64, n: u32) -> StoreResult<u32> {
        let Engine::Postgres(pg) = &self.engine else {
            return Err(not_shared());
        };
        let pg = pg.clone();
        self.pool
            .run(move || pg.count_requests(key, minute, n))
            .await
    }

    /// Takes back requests [`count_requests`](Self::count_requests)
    /// counted that were not made: `(key, minute, n)` each.
    pub async fn uncount_requests(&self, counts: Vec<(u64, i64, u32)>) -> StoreResult<()> {
        let Engine::Postgres(pg) = &self.engine else {
            return Err(not_shared());
        };
        let pg = pg.clone();
        self.pool.run(move || pg.uncount_requests(&counts)).await
    }

    /// One of the first `slots` in-flight slots for a call to the
    /// authority that every node shares, if one is free: held until
    /// [`release_authority_slot`](Self::release_authority_slot) (or drop).
    pub async fn try_authority_slot(&self, slots: u32) -> StoreResult<Option<AuthoritySlot>> {
        let Engine::Postgres(pg) = &self.engine else {
            return Err(not_shared());
        };
        let pg = pg.clone();
        self.pool.run(move || pg.try_authority_slot(slots)).await
    }

    /// Frees a slot of [`try_authority_slot`](Self::try_authority_slot).
    pub async fn release_authority_slot(&self, slot: AuthoritySlot) {
        let _ = self
            .pool
            .run(move || {
                slot.release();
                Ok(())
            })
            .await;
    }

    /// Records the start of a call to the authority if fewer than
    /// `per_window` calls started within `window` on every node; otherwise
    /// how long to wait before asking again.
    pub async fn take_authority_start(
        &self,
        per_window: u32,
        window: Duration,
    ) -> StoreResult<Result<(), Duration>> {
        let Engine::Postgres(pg) = &self.engine else {
            return Err(not_shared());
        };
        let pg = pg.clone();
        self.pool
            .run(move || pg.take_authority_start(per_window, window))
            .await
    }

    /// This process's node id on a shared store (`None` on sled).
    pub fn node(&self) -> Option<String> {
        match &self.engine {
            Engine::Postgres(pg) => Some(pg.node().to_string()),
            Engine::Sled(_) => None,
        }
    }

    /// Registers this node and keeps its lease of `lease` renewed while
    /// the handle lives ([`NodeLease`]); `None` on sled, whose data dir
    /// has one process.
    pub fn keep_node_alive(&self, lease: Duration) -> StoreResult<Option<NodeLease>> {
        let Engine::Postgres(pg) = &self.engine else {
            return Ok(None);
        };
        crate::engine::postgres::off_runtime(|| pg.keep_node_alive(lease)).map(Some)
    }

    /// The jobs on this node's timetable: on a shared store those it wrote
    /// or adopted last, elsewhere every stored job.
    pub async fn own_jobs(&self) -> StoreResult<Vec<Job>> {
        let Engine::Postgres(pg) = &self.engine else {
            return self.jobs().await;
        };
        let pg = pg.clone();
        self.pool.run(move || pg.own_jobs()).await
    }

    /// The jobs of dead nodes, moved to this node's timetable (a previous
    /// schema's node's once overdue by `grace`), a batch at a time; none
    /// unless this node's own lease has run without a break for `settle`.
    pub async fn adopt_jobs(&self, grace: Duration, settle: Duration) -> StoreResult<Vec<Job>> {
        let Engine::Postgres(pg) = &self.engine else {
            return Err(not_shared());
        };
        let pg = pg.clone();
        self.pool.run(move || pg.adopt_jobs(grace, settle)).await
    }

    /// The half-built documents of dead nodes, each as a draft, to be built
    /// by this node (a previous schema's node's once untouched for
    /// `grace`), a batch at a time; none unless this node's own lease has
    /// run without a break for `settle`.
    pub async fn adopt_pending_builds(
        &self,
        grace: Duration,
        settle: Duration,
    ) -> StoreResult<Vec<DocumentRecord>> {
        let Engine::Postgres(pg) = &self.engine else {
            return Err(not_shared());
        };
        let pg = pg.clone();
        self.pool
            .run(move || pg.adopt_pending_builds(grace, settle))
            .await
    }

    /// Publishes `note` to every node's listener (this node's too), once
    /// committed.
    pub async fn publish(&self, note: String) -> StoreResult<()> {
        let Engine::Postgres(pg) = &self.engine else {
            return Err(not_shared());
        };
        let pg = pg.clone();
        self.pool.run(move || pg.publish(&note)).await
    }

    /// Listens for every node's notes on a connection of its own, which
    /// connects again by itself when lost; it stops once the receiver is
    /// dropped.
    pub fn listen(&self) -> StoreResult<tokio::sync::mpsc::Receiver<Heard>> {
        let Engine::Postgres(pg) = &self.engine else {
            return Err(not_shared());
        };
        // Room for a burst while the receiver works; the listener waits
        // beyond it (the database keeps what it has not read).
        let (tx, rx) = tokio::sync::mpsc::channel(1024);
        pg.listen(tx)
            .map_err(|e| StoreError::Unavailable(format!("starting the listener: {e}")))?;
        Ok(rx)
    }

    /// The ids of the API keys revoked at or after `since`.
    pub async fn keys_revoked_since(
        &self,
        since: chrono::DateTime<chrono::Utc>,
    ) -> StoreResult<Vec<u64>> {
        let Engine::Postgres(pg) = &self.engine else {
            return Err(not_shared());
        };
        let pg = pg.clone();
        self.pool.run(move || pg.keys_revoked_since(since)).await
    }

    /// Stores a console session every node accepts, for `ttl` (by the
    /// SHA-256 of its cookie's value; `key_id`: the company key it stands on).
    pub async fn put_console_session(
        &self,
        id_hash: [u8; 32],
        key_id: Option<u64>,
        record: serde_json::Value,
        ttl: Duration,
    ) -> StoreResult<()> {
        let Engine::Postgres(pg) = &self.engine else {
            return Err(not_shared());
        };
        let pg = pg.clone();
        self.pool
            .run(move || pg.put_console_session(&id_hash, key_id, &record, ttl))
            .await
    }

    /// A live console sign-in's record and how long it has left.
    pub async fn console_session(
        &self,
        id_hash: [u8; 32],
    ) -> StoreResult<Option<(serde_json::Value, Duration)>> {
        let Engine::Postgres(pg) = &self.engine else {
            return Err(not_shared());
        };
        let pg = pg.clone();
        self.pool.run(move || pg.console_session(&id_hash)).await
    }

    /// Replaces a console sign-in's record, its expiry kept.
    pub async fn set_console_session(
        &self,
        id_hash: [u8; 32],
        record: serde_json::Value,
    ) -> StoreResult<()> {
        let Engine::Postgres(pg) = &self.engine else {
            return Err(not_shared());
        };
        let pg = pg.clone();
        self.pool
            .run(move || pg.set_console_session(&id_hash, &record))
            .await
    }

    /// Ends a console session on every node.
    pub async fn end_console_session(&self, id_hash: [u8; 32]) -> StoreResult<()> {
        let Engine::Postgres(pg) = &self.engine else {
            return Err(not_shared());
        };
        let pg = pg.clone();
        self.pool
            .run(move || pg.end_console_session(&id_hash))
            .await
    }

    /// Ends every console session standing on key `key_id`.
    pub async fn end_console_sessions_of_key(&self, key_id: u64) -> StoreResult<()> {
        let Engine::Postgres(pg) = &self.engine else {
            return Err(not_shared());
        };
        let pg = pg.clone();
        self.pool
            .run(move || pg.end_console_sessions_of_key(key_id))
            .await
    }
}
