//! Notes every node on one database hears (docs/operations.md, "Several
//! nodes"): a node publishes a note with `pg_notify` on one channel, and
//! each node keeps one connection of its own `LISTEN`ing on it. A note is
//! text the caller chose (the service's fan-out writes JSON); the store
//! only carries it.
//!
//! PostgreSQL refuses a notification payload of 8000 bytes or more. A
//! note that fits goes as the payload itself: no table, no read back, and
//! delivered in the order the notes were committed. A larger one (a
//! document event with a long list of the authority's errors) is written
//! to `node_events` and its id goes instead, in the same statement, so the
//! notification is sent when the row is committed and the listener reads
//! it back; such rows are pruned after [`KEEP_LARGE`].
//!
//! The listener runs on a thread of its own (the `postgres` client blocks)
//! and connects again by itself when the connection is lost (the database
//! restarted, a network cut): what was published meanwhile is not heard,
//! so it says [`Heard::Listening`] each time it listens again, and its
//! receiver catches up on what it may have missed.

use std::sync::Arc;
use std::time::Duration;

use postgres::fallible_iterator::FallibleIterator;
use tokio::sync::mpsc::Sender;

use super::connect::Connect;
use super::{db_error, PgStore, Sql};
use crate::error::StoreResult;

/// The channel every node listens on.
pub const CHANNEL: &str = "emisor_events";

/// The longest note sent as the payload itself (PostgreSQL's limit is
/// 8000 bytes, the channel's name aside).
pub const MAX_INLINE: usize = 7_900;

/// A payload that names a row of `node_events` (a note itself never
/// starts with it: the service's notes are JSON objects).
const BY_ID: &str = "#";

/// How long a large note's row is kept for the listeners to read.
pub const KEEP_LARGE: Duration = Duration::from_secs(300);

/// How long the listener waits for a notification before it looks whether
/// its receiver is gone.
const TICK: Duration = Duration::from_millis(500);

/// How often a quiet listener asks the database whether its connection
/// still works (a host that vanished sends no end of connection).
const CHECK_EVERY: Duration = Duration::from_secs(15);

/// The first wait before connecting again, doubled up to [`RETRY_MAX`].
const RETRY_FIRST: Duration = Duration::from_millis(200);
const RETRY_MAX: Duration = Duration::from_secs(2);

/// What the listener hands its receiver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Heard {
    /// Listening (again): notes published while it was not were missed.
    Listening,
    /// A note another node (or this one) published.
    Note(String),
}

impl PgStore {
    /// Publishes `note` to every node listening (this one included), once
    /// the statement commits.
    pub(crate) fn publish(&self, note: &str) -> StoreResult<()> {
        let mut conn = self.conn()?;
        if note.len() <= MAX_INLINE {
            conn.execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &note])
                .map_err(db_error)?;
            return Ok(());
        }
        conn.execute(
            "DELETE FROM node_events WHERE created_at < now() - make_interval(secs => $1::float8)",
            &[&KEEP_LARGE.as_secs_f64()],
        )
        .map_err(db_error)?;
        conn.execute(
            "WITH e AS (INSERT INTO node_events (body) VALUES ($1) RETURNING id)
             SELECT pg_notify($2, $3 || e.id::text) FROM e",
            &[&note, &CHANNEL, &BY_ID],
        )
        .map_err(db_error)?;
        Ok(())
    }

    /// The ids of the API keys revoked at or after `since` (what a node
    /// that was not listening may have missed).
    pub(crate) fn keys_revoked_since(
        &self,
        since: chrono::DateTime<chrono::Utc>,
    ) -> StoreResult<Vec<u64>> {
        let rows = self
            .conn()?
            .query(
                "SELECT id FROM api_keys
                 WHERE record->>'revoked_at' IS NOT NULL
                   AND (record->>'revoked_at')::timestamptz >= $1",
                &[&since],
            )
            .map_err(db_error)?;
        Ok(rows
            .iter()
            .filter_map(|r| u64::try_from(r.get::<_, i64>(0)).ok())
            .collect())
    }

    /// Starts the listener's thread: what it hears goes to `to`, and it
    /// stops once `to`'s receiver is gone.
    pub(crate) fn listen(&self, to: Sender<Heard>) -> std::io::Result<()> {
        let connect = self.connect.clone();
        std::thread::Builder::new()
            .name("pg-listen".into())
            .spawn(move || listen(&connect, &to))
            .map(|_| ())
    }
}

/// Listens until the receiver is gone, connecting again after each loss.
fn listen(connect: &Arc<Connect>, to: &Sender<Heard>) {
    let mut wait = RETRY_FIRST;
    while !to.is_closed() {
        match listen_once(connect, to, &mut wait) {
            Ok(()) => return,
            Err(why) => tracing::warn!(%why, "listening for other nodes' events; connecting again"),
        }
        std::thread::sleep(wait);
        wait = (wait * 2).min(RETRY_MAX);
    }
}

/// One connection's life: `Ok` once the receiver is gone, the error that
/// ended the connection otherwise. `wait` starts again from the first once
/// it listens.
fn listen_once(
    connect: &Connect,
    to: &Sender<Heard>,
    wait: &mut Duration,
) -> Result<(), postgres::Error> {
    let mut config = connect.config.clone();
    config.connect_timeout(Duration::from_secs(5));
    config.application_name("emisor node events");
    let mut client = config.connect(connect.tls.clone())?;
    client.batch_execute(&format!("LISTEN {CHANNEL}"))?;
    *wait = RETRY_FIRST;
    tracing::info!("listening for other nodes' events");
    if to.blocking_send(Heard::Listening).is_err() {
        return Ok(());
    }
    let mut quiet = Duration::ZERO;
    loop {
        let next = client.notifications().timeout_iter(TICK).next()?;
        match next {
            Some(notification) => {
                quiet = Duration::ZERO;
                let payload = notification.payload().to_string();
                let note = match payload.strip_prefix(BY_ID) {
                    Some(id) => match read_large(&mut client, id)? {
                        Some(note) => note,
                        None => continue,
                    },
                    None => payload,
                };
                if to.blocking_send(Heard::Note(note)).is_err() {
                    return Ok(());
                }
            }
            None => {
                if to.is_closed() {
                    return Ok(());
                }
                quiet += TICK;
                if client.is_closed() || quiet >= CHECK_EVERY {
                    client.is_valid(Duration::from_secs(5))?;
                    quiet = Duration::ZERO;
                }
            }
        }
    }
}

/// A large note by its id; `None` when it is gone (pruned: too late).
fn read_large(client: &mut postgres::Client, id: &str) -> Result<Option<String>, postgres::Error> {
    let Ok(id) = id.parse::<i64>() else {
        tracing::warn!(id, "a node event names no row");
        return Ok(None);
    };
    let row = client.query_opt("SELECT body FROM node_events WHERE id = $1", &[&id])?;
    if row.is_none() {
        tracing::warn!(id, "a large node event was pruned before it was read");
    }
    Ok(row.map(|r| r.get(0)))
}
