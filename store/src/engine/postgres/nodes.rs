//! What several nodes on one database share while they serve
//! (docs/operations.md, "Several nodes"): the duplicate-payload window and
//! the per-key request counts. Times are the database's (`now()`), so the
//! nodes' clocks need not agree.

use std::time::Duration;

use crate::engine::postgres::records::big;
use crate::engine::postgres::{db_error, PgStore};
use crate::error::StoreResult;
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
    ) -> StoreResult<PayloadClaim> {
        let mut conn = self.conn()?;
        let company = big(company)?;
        let hash = hash.as_slice();
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
                 RETURNING token",
                &[&company, &hash, &token, &hold.as_secs_f64()],
            )
            .map_err(db_error)?;
        if claimed.is_some() {
            return Ok(PayloadClaim::Claimed { token });
        }
        let holder = conn
            .query_opt(
                "SELECT document_id FROM payload_claims
                 WHERE company_id = $1 AND payload_hash = $2",
                &[&company, &hash],
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
        self.conn()?
            .execute(
                "UPDATE payload_claims
                 SET document_id = $4, expires_at = now() + make_interval(secs => $5::float8)
                 WHERE company_id = $1 AND payload_hash = $2 AND token = $3",
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

    /// Counts one request of `key` in the minute starting at `minute`
    /// (Unix seconds); the minute's count with it.
    pub(crate) fn count_request(&self, key: u64, minute: i64) -> StoreResult<u32> {
        let mut conn = self.conn()?;
        let key = big(key)?;
        if (key + minute) % PRUNE_ONE_IN == 0 {
            conn.execute("DELETE FROM rate_windows WHERE minute < $1", &[&minute])
                .map_err(db_error)?;
        }
        let row = conn
            .query_one(
                "INSERT INTO rate_windows (key_id, minute, n) VALUES ($1, $2, 1)
                 ON CONFLICT (key_id, minute) DO UPDATE SET n = rate_windows.n + 1
                 RETURNING n",
                &[&key, &minute],
            )
            .map_err(db_error)?;
        Ok(u32::try_from(row.get::<_, i32>(0)).unwrap_or(0))
    }
}
