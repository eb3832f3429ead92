//! What several nodes on one database share while they serve
//! (docs/operations.md, "Several nodes"): the duplicate-payload window and
//! the per-key request counts. Times are the database's (`now()`), so the
//! nodes' clocks need not agree.

use std::time::Duration;

use crate::engine::postgres::records::big;
use crate::engine::postgres::{db_error, off_runtime, Conn, PgStore, Sql};
use crate::error::{StoreError, StoreResult};
use crate::model::CompanyId;

/// What the shared window says of a payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PayloadClaim {
    /// Claimed for this request, under this token.
    Claimed { token: i64 },
    /// Being processed by another request (on any node).
    InProgress,
    /// It made this document within the window.
    Made { document_id: u64 },
}

/// Claims and counts are pruned about once every this many claims.
const PRUNE_ONE_IN: i64 = 64;

/// A claim of the shared window this node holds, until its request ends.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HeldClaim {
    token: i64,
    company: CompanyId,
    hash: [u8; 32],
    /// How long the payload is refused once it made a document.
    window: Duration,
    /// The document phase one numbered for this payload.
    document: Option<u64>,
    /// Completed by that document's phase two, in its own commit.
    completed: bool,
}

/// What a document's phase two writes to complete its payload's claim in
/// its commit (`None`: nothing to complete there).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Completion {
    pub(crate) company: i64,
    pub(crate) hash: [u8; 32],
    pub(crate) token: i64,
    pub(crate) window_secs: f64,
}

/// The claims this node's requests hold (as many as requests in flight,
/// so a list), so that a document's phase two completes its payload's
/// claim in the same commit instead of a round trip and a flush of its
/// own afterwards.
#[derive(Debug, Default)]
pub(crate) struct HeldClaims(std::sync::Mutex<Vec<HeldClaim>>);

impl HeldClaims {
    fn with<T>(&self, f: impl FnOnce(&mut Vec<HeldClaim>) -> T) -> T {
        f(&mut self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    fn hold(&self, token: i64, company: CompanyId, hash: [u8; 32], window: Duration) {
        self.with(|held| {
            held.push(HeldClaim {
                token,
                company,
                hash,
                window,
                document: None,
                completed: false,
            })
        });
    }

    /// Phase one numbered `document` for `company`'s payload `hash`.
    pub(crate) fn numbered(&self, company: CompanyId, hash: &[u8; 32], document: u64) {
        self.with(|held| {
            if let Some(c) = held
                .iter_mut()
                .find(|c| c.company == company && c.hash == *hash && c.document.is_none())
            {
                c.document = Some(document);
            }
        });
    }

    /// The completion `document`'s phase two is to write, if its payload
    /// holds a claim here not yet completed.
    pub(crate) fn completion(&self, document: u64) -> StoreResult<Option<Completion>> {
        let held = self.with(|held| {
            held.iter()
                .find(|c| c.document == Some(document) && !c.completed)
                .copied()
        });
        held.map(|c| {
            Ok(Completion {
                company: big(c.company)?,
                hash: c.hash,
                token: c.token,
                window_secs: c.window.as_secs_f64(),
            })
        })
        .transpose()
    }

    /// `completion` was committed with its document.
    pub(crate) fn completed(&self, completion: &Completion) {
        self.with(|held| {
            if let Some(c) = held.iter_mut().find(|c| c.token == completion.token) {
                c.completed = true;
            }
        });
    }

    /// The request holding `token` ended: whether its document's phase two
    /// completed the claim already.
    pub(crate) fn end(&self, token: i64) -> bool {
        self.with(|held| {
            let i = held.iter().position(|c| c.token == token)?;
            Some(held.swap_remove(i).completed)
        })
        .unwrap_or(false)
    }
}

/// Completes a claim (made by the document `document_id` written in the
/// same statement's `WITH`, or in the transaction `client` runs).
pub(crate) const COMPLETE_CLAIM: &str = "UPDATE payload_claims
     SET document_id = $4, expires_at = now() + make_interval(secs => $5::float8)
     WHERE company_id = $1 AND payload_hash = $2 AND token = $3";

impl PgStore {
    /// Claims `hash` for `company` for `hold` (the claim of a request
    /// being processed, which a node that dies leaves to expire), unless a
    /// live claim holds it.
    pub(crate) fn claim_payload(
        &self,
        company: CompanyId,
        hash: &[u8; 32],
        token: i64,
        hold: Duration,
        window: Duration,
    ) -> StoreResult<PayloadClaim> {
        let mut conn = self.conn()?;
        let (key, bytes) = (big(company)?, hash.as_slice());
        if token % PRUNE_ONE_IN == 0 {
            conn.execute(
                "DELETE FROM payload_claims WHERE expires_at < now() - interval '1 minute'",
                &[],
            )
            .map_err(db_error)?;
        }
        let claimed = conn
            .query_opt(
                "INSERT INTO payload_claims (company_id, payload_hash, token, document_id, expires_at)
                 VALUES ($1, $2, $3, NULL, now() + make_interval(secs => $4::float8))
                 ON CONFLICT (company_id, payload_hash) DO UPDATE
                     SET token = excluded.token, document_id = NULL,
                         expires_at = excluded.expires_at
                     WHERE payload_claims.expires_at <= now()
                 RETURNING token, set_config('synchronous_commit', 'off', true)",
                &[&key, &bytes, &token, &hold.as_secs_f64()],
            )
            .map_err(db_error)?;
        // Its commit does not wait for the disk (docs/storage.md,
        // "Durability"): the claim is in the WAL before this returns, so
        // the flushed commit of the document it makes flushes it too.
        if claimed.is_some() {
            self.claims.hold(token, company, *hash, window);
            return Ok(PayloadClaim::Claimed { token });
        }
        let holder = conn
            .query_opt(
                "SELECT document_id FROM payload_claims
                 WHERE company_id = $1 AND payload_hash = $2",
                &[&key, &bytes],
            )
            .map_err(db_error)?;
        let made = holder.and_then(|row| row.get::<_, Option<i64>>(0));
        Ok(match made.and_then(|id| u64::try_from(id).ok()) {
            Some(document_id) => PayloadClaim::Made { document_id },
            None => PayloadClaim::InProgress,
        })
    }

    /// The claimed payload made `document_id`: refused until `window` from
    /// now.
    pub(crate) fn complete_payload(
        &self,
        company: CompanyId,
        hash: &[u8; 32],
        token: i64,
        document_id: u64,
        window: Duration,
    ) -> StoreResult<()> {
        if self.claims.end(token) {
            // Written with the document, in its phase two's commit.
            return Ok(());
        }
        self.conn()?
            .execute(
                COMPLETE_CLAIM,
                &[
                    &big(company)?,
                    &hash.as_slice(),
                    &token,
                    &big(document_id)?,
                    &window.as_secs_f64(),
                ],
            )
            .map_err(db_error)?;
        Ok(())
    }

    /// The claimed payload made nothing: free again.
    pub(crate) fn release_payload(
        &self,
        company: CompanyId,
        hash: &[u8; 32],
        token: i64,
    ) -> StoreResult<()> {
        self.claims.end(token);
        self.conn()?
            .execute(
                "DELETE FROM payload_claims
                 WHERE company_id = $1 AND payload_hash = $2 AND token = $3
                   AND document_id IS NULL",
                &[&big(company)?, &hash.as_slice(), &token],
            )
            .map_err(db_error)?;
        Ok(())
    }

    /// Counts `n` requests of `key` in the minute starting at `minute`
    /// (Unix seconds); the minute's count with them.
    pub(crate) fn count_requests(&self, key: u64, minute: i64, n: u32) -> StoreResult<u32> {
        let mut conn = self.conn()?;
        let key = big(key)?;
        if (key + minute) % PRUNE_ONE_IN == 0 {
            conn.execute("DELETE FROM rate_windows WHERE minute < $1", &[&minute])
                .map_err(db_error)?;
        }
        let n =
            i32::try_from(n).map_err(|_| StoreError::Database(format!("{n} requests at once")))?;
        let row = conn
            .query_one(
                "INSERT INTO rate_windows (key_id, minute, n) VALUES ($1, $2, $3)
                 ON CONFLICT (key_id, minute) DO UPDATE SET n = rate_windows.n + excluded.n
                 RETURNING n",
                &[&key, &minute, &n],
            )
            .map_err(db_error)?;
        Ok(u32::try_from(row.get::<_, i32>(0)).unwrap_or(0))
    }

    /// Takes back requests counted and not made: `(key, minute, n)` each,
    /// in one statement.
    pub(crate) fn uncount_requests(&self, counts: &[(u64, i64, u32)]) -> StoreResult<()> {
        if counts.is_empty() {
            return Ok(());
        }
        let mut keys = Vec::with_capacity(counts.len());
        let mut minutes = Vec::with_capacity(counts.len());
        let mut ns = Vec::with_capacity(counts.len());
        for &(key, minute, n) in counts {
            keys.push(big(key)?);
            minutes.push(minute);
            ns.push(i32::try_from(n).unwrap_or(i32::MAX));
        }
        self.conn()?
            .execute(
                "UPDATE rate_windows r SET n = greatest(r.n - b.n, 0)
                 FROM unnest($1::bigint[], $2::bigint[], $3::int[]) AS b(key_id, minute, n)
                 WHERE r.key_id = b.key_id AND r.minute = b.minute",
                &[&keys, &minutes, &ns],
            )
            .map_err(db_error)?;
        Ok(())
    }
}

/// The advisory-lock class of the authority's in-flight slots (the second
/// key is the slot's number).
const AUTHORITY_SLOTS: i32 = 0x656d_6901;

/// One of the in-flight slots every node shares for calls to the
/// authority: a session advisory lock held on a connection of its own
/// while the call runs. A node that dies closes its connections, which
/// frees its slots.
pub struct AuthoritySlot {
    conn: Option<Conn>,
    slot: i32,
}

impl std::fmt::Debug for AuthoritySlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthoritySlot")
            .field("slot", &self.slot)
            .finish()
    }
}

impl AuthoritySlot {
    /// Frees the slot (here, so that the connection goes back to the pool
    /// without it).
    pub(crate) fn release(mut self) {
        if let Some(conn) = self.conn.take() {
            unlock(conn, self.slot);
        }
    }
}

fn unlock(mut conn: Conn, slot: i32) {
    // A connection that failed here is closed, which frees the lock too
    // (the pool drops a closed connection).
    if let Err(e) = conn.execute(
        "SELECT pg_advisory_unlock($1, $2)",
        &[&AUTHORITY_SLOTS, &slot],
    ) {
        tracing::warn!(error = %e, slot, "freeing an authority slot");
    }
}

impl Drop for AuthoritySlot {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            let slot = self.slot;
            off_runtime(move || unlock(conn, slot));
        }
    }
}

impl PgStore {
    /// One of the first `slots` in-flight slots, if one is free.
    pub(crate) fn try_authority_slot(&self, slots: u32) -> StoreResult<Option<AuthoritySlot>> {
        let mut conn = self.conn()?;
        for slot in 0..i32::try_from(slots).unwrap_or(i32::MAX) {
            let taken: bool = conn
                .query_one(
                    "SELECT pg_try_advisory_lock($1, $2)",
                    &[&AUTHORITY_SLOTS, &slot],
                )
                .map_err(db_error)?
                .get(0);
            if taken {
                return Ok(Some(AuthoritySlot {
                    conn: Some(conn),
                    slot,
                }));
            }
        }
        Ok(None)
    }

    /// Records a call's start if fewer than `per_window` calls started
    /// within `window` (from every node); otherwise how long until the
    /// oldest of them leaves the window.
    pub(crate) fn take_authority_start(
        &self,
        per_window: u32,
        window: Duration,
    ) -> StoreResult<Result<(), Duration>> {
        let mut conn = self.conn()?;
        let n = i32::try_from(per_window.max(1)).unwrap_or(i32::MAX);
        let secs = window.as_secs_f64();
        for _ in 0..2 {
            let started = conn
                .query_opt(
                    "WITH oldest AS (
                         SELECT slot FROM authority_starts
                         WHERE slot < $1 AND at <= clock_timestamp() - make_interval(secs => $2::float8)
                         ORDER BY at LIMIT 1
                         FOR UPDATE SKIP LOCKED)
                     UPDATE authority_starts s SET at = clock_timestamp()
                     FROM oldest WHERE s.slot = oldest.slot
                     RETURNING s.slot",
                    &[&n, &secs],
                )
                .map_err(db_error)?;
            if started.is_some() {
                return Ok(Ok(()));
            }
            let row = conn
                .query_one(
                    "SELECT count(*),
                            extract(epoch FROM min(at) + make_interval(secs => $2::float8)
                                               - clock_timestamp())::float8
                     FROM authority_starts WHERE slot < $1",
                    &[&n, &secs],
                )
                .map_err(db_error)?;
            let (rows, wait): (i64, Option<f64>) = (row.get(0), row.get(1));
            if rows >= i64::from(n) {
                let wait = wait.filter(|w| w.is_finite() && *w > 0.0).unwrap_or(0.0);
                return Ok(Err(Duration::from_secs_f64(wait.min(secs))));
            }
            // The first calls at this window's size: its rows made once.
            conn.execute(
                "INSERT INTO authority_starts (slot, at)
                 SELECT g, '-infinity' FROM generate_series(0, $1 - 1) g
                 ON CONFLICT (slot) DO NOTHING",
                &[&n],
            )
            .map_err(db_error)?;
        }
        Ok(Err(Duration::ZERO))
    }
}
