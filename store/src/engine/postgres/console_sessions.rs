//! Console sessions every node shares (docs/operations.md, "Several
//! nodes"): kept by the SHA-256 of the cookie's value, with who the session
//! is as the service's JSON, until an instant of the database's clock (the
//! nodes' clocks need not agree).

use std::time::Duration;

use super::records::big;
use super::{db_error, PgStore, Sql};
use crate::error::StoreResult;

/// Expired sessions are pruned about once every this many sign-ins.
const PRUNE_ONE_IN: u8 = 16;

impl PgStore {
    /// Stores a new session for `ttl`.
    pub(crate) fn put_console_session(
        &self,
        id_hash: &[u8; 32],
        key_id: Option<u64>,
        record: &serde_json::Value,
        ttl: Duration,
    ) -> StoreResult<()> {
        let mut conn = self.conn()?;
        if id_hash[0].is_multiple_of(PRUNE_ONE_IN) {
            conn.execute("DELETE FROM console_sessions WHERE expires_at < now()", &[])
                .map_err(db_error)?;
        }
        let key_id = key_id.map(big).transpose()?;
        conn.execute(
            "INSERT INTO console_sessions (id_hash, key_id, record, expires_at)
             VALUES ($1, $2, $3, now() + make_interval(secs => $4::float8))",
            &[&id_hash.as_slice(), &key_id, record, &ttl.as_secs_f64()],
        )
        .map_err(db_error)?;
        Ok(())
    }

    /// A live sign-in's record and how long it has left.
    pub(crate) fn console_session(
        &self,
        id_hash: &[u8; 32],
    ) -> StoreResult<Option<(serde_json::Value, Duration)>> {
        let row = self
            .conn()?
            .query_opt(
                "SELECT record, extract(epoch FROM expires_at - now())::float8
                 FROM console_sessions WHERE id_hash = $1 AND expires_at > now()",
                &[&id_hash.as_slice()],
            )
            .map_err(db_error)?;
        Ok(row.map(|r| {
            let left: f64 = r.get(1);
            (
                r.get(0),
                Duration::try_from_secs_f64(left).unwrap_or_default(),
            )
        }))
    }

    /// Replaces a live sign-in's record (its expiry kept).
    pub(crate) fn set_console_session(
        &self,
        id_hash: &[u8; 32],
        record: &serde_json::Value,
    ) -> StoreResult<()> {
        self.conn()?
            .execute(
                "UPDATE console_sessions SET record = $2 WHERE id_hash = $1",
                &[&id_hash.as_slice(), record],
            )
            .map_err(db_error)?;
        Ok(())
    }

    /// Ends one session.
    pub(crate) fn end_console_session(&self, id_hash: &[u8; 32]) -> StoreResult<()> {
        self.conn()?
            .execute(
                "DELETE FROM console_sessions WHERE id_hash = $1",
                &[&id_hash.as_slice()],
            )
            .map_err(db_error)?;
        Ok(())
    }

    /// Ends every session standing on key `key_id`.
    pub(crate) fn end_console_sessions_of_key(&self, key_id: u64) -> StoreResult<()> {
        self.conn()?
            .execute(
                "DELETE FROM console_sessions WHERE key_id = $1",
                &[&big(key_id)?],
            )
            .map_err(db_error)?;
        Ok(())
    }
}
