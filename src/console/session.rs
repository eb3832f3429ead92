//! Console sessions: who signed in, in which environment, until when, and
//! the sign-in's CSRF token. The cookie's value is only ever kept and
//! compared by its SHA-256 (a memory dump or the database holds no usable
//! session id). On sled they are kept in memory: a restart signs everyone
//! out. On PostgreSQL they are kept in the store, so that a session opened
//! on one node is one on every node behind a load balancer (and outlives a
//! node's restart); an expired one is never read.
//!
//! A company session remembers its key by hash and checks it on every
//! request (`crate::http::auth::resolve_hash`): revoking the key ends it.

use std::time::{Duration, Instant};

use dashmap::DashMap;
use emisor_store::{AsyncStore, CompanyId, Environment, StoreError, StoreResult};
use rand::RngCore;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The session cookie; `Path=/console`, `HttpOnly`, `SameSite=Strict`.
pub const COOKIE: &str = "emisor_sesion";

/// Sessions held at once; past it, expired ones go first, then the oldest.
const MAX_SESSIONS: usize = 10_000;

/// Who a session is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "who", rename_all = "snake_case")]
pub enum Who {
    /// The admin token: every company, in the environment chosen.
    Admin,
    /// A company API key: that company in that key's environment only.
    Company {
        company: CompanyId,
        key_id: u64,
        /// SHA-256 hex of the key (never the key).
        key_hash: String,
    },
}

#[derive(Debug, Clone)]
pub struct Session {
    pub who: Who,
    /// The environment shown: the key's, or the admin's choice.
    pub environment: Environment,
    /// Every form and every change carries it.
    pub csrf: String,
    pub expires: Instant,
    pub started: Instant,
}

pub struct Sessions {
    by_id: DashMap<[u8; 32], Session>,
    ttl: Duration,
    /// The store every node reads sessions from (PostgreSQL); `None`: this
    /// process's memory.
    shared: Option<AsyncStore>,
}

impl std::fmt::Debug for Sessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sessions")
            .field("in_memory", &self.by_id.len())
            .field("ttl", &self.ttl)
            .field("shared", &self.shared.is_some())
            .finish()
    }
}

/// What the store keeps of a session (its expiry is the store's own).
#[derive(Serialize, Deserialize)]
struct Stored {
    #[serde(flatten)]
    who: Who,
    environment: Environment,
    csrf: String,
}

/// A fresh random token, URL-safe (256 bits).
pub fn random_token() -> String {
    use base64::Engine as _;
    let mut bytes = [0u8; 32];
    rand::thread_rng().fill_bytes(&mut bytes);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn digest(id: &str) -> [u8; 32] {
    Sha256::digest(id.as_bytes()).into()
}

impl Sessions {
    /// Sessions in `store` when several nodes may share it, in memory
    /// otherwise.
    pub fn new(ttl: Duration, store: &AsyncStore) -> Self {
        Sessions {
            shared: store.is_shared().then(|| store.clone()),
            ..Self::in_memory(ttl)
        }
    }

    fn in_memory(ttl: Duration) -> Self {
        Sessions {
            by_id: DashMap::new(),
            ttl,
            shared: None,
        }
    }

    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// Starts a session; answers its id (the cookie's value).
    pub async fn start(&self, who: Who, environment: Environment) -> StoreResult<String> {
        let Some(store) = &self.shared else {
            return Ok(self.start_here(who, environment));
        };
        let id = random_token();
        let key_id = match &who {
            Who::Company { key_id, .. } => Some(*key_id),
            Who::Admin => None,
        };
        let record = record(Stored {
            who,
            environment,
            csrf: random_token(),
        })?;
        store
            .put_console_session(digest(&id), key_id, record, self.ttl)
            .await?;
        Ok(id)
    }

    /// The live session with this id.
    pub async fn get(&self, id: &str) -> StoreResult<Option<Session>> {
        let Some(store) = &self.shared else {
            return Ok(self.get_here(id));
        };
        let Some((record, left)) = store.console_session(digest(id)).await? else {
            return Ok(None);
        };
        let stored: Stored = match serde_json::from_value(record) {
            Ok(stored) => stored,
            Err(e) => {
                tracing::warn!(target: "emisor::console", error = %e, "a stored console session is not one");
                return Ok(None);
            }
        };
        let now = Instant::now();
        Ok(Some(Session {
            who: stored.who,
            environment: stored.environment,
            csrf: stored.csrf,
            expires: now + left,
            started: now,
        }))
    }

    pub async fn end(&self, id: &str) -> StoreResult<()> {
        match &self.shared {
            Some(store) => store.end_console_session(digest(id)).await,
            None => {
                self.by_id.remove(&digest(id));
                Ok(())
            }
        }
    }

    /// An admin session changes the environment it shows.
    pub async fn set_environment(&self, id: &str, environment: Environment) -> StoreResult<()> {
        let Some(store) = &self.shared else {
            self.set_environment_here(id, environment);
            return Ok(());
        };
        let Some(session) = self.get(id).await? else {
            return Ok(());
        };
        if session.who != Who::Admin {
            return Ok(());
        }
        let record = record(Stored {
            who: session.who,
            environment,
            csrf: session.csrf,
        })?;
        store.set_console_session(digest(id), record).await
    }

    /// Ends every session of a company key (after its revocation).
    pub async fn end_key(&self, key_id: u64) -> StoreResult<()> {
        match &self.shared {
            Some(store) => store.end_console_sessions_of_key(key_id).await,
            None => {
                self.by_id
                    .retain(|_, s| !matches!(s.who, Who::Company { key_id: k, .. } if k == key_id));
                Ok(())
            }
        }
    }

    fn start_here(&self, who: Who, environment: Environment) -> String {
        let now = Instant::now();
        if self.by_id.len() >= MAX_SESSIONS {
            self.by_id.retain(|_, s| s.expires > now);
        }
        if self.by_id.len() >= MAX_SESSIONS {
            let oldest = self
                .by_id
                .iter()
                .min_by_key(|e| e.value().started)
                .map(|e| *e.key());
            if let Some(key) = oldest {
                self.by_id.remove(&key);
            }
        }
        let id = random_token();
        self.by_id.insert(
            digest(&id),
            Session {
                who,
                environment,
                csrf: random_token(),
                expires: now + self.ttl,
                started: now,
            },
        );
        id
    }

    /// The live session with this id; an expired one is removed.
    fn get_here(&self, id: &str) -> Option<Session> {
        let key = digest(id);
        let session = self.by_id.get(&key).map(|s| s.clone())?;
        if session.expires <= Instant::now() {
            self.by_id.remove(&key);
            return None;
        }
        Some(session)
    }

    fn set_environment_here(&self, id: &str, environment: Environment) {
        if let Some(mut s) = self.by_id.get_mut(&digest(id)) {
            if s.who == Who::Admin {
                s.environment = environment;
            }
        }
    }

    /// Sessions held in memory.
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }
}

/// A session as the store keeps it.
fn record(stored: Stored) -> StoreResult<serde_json::Value> {
    serde_json::to_value(stored).map_err(|e| StoreError::Unstorable(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_session_is_found_by_its_id_until_it_ends_or_expires() {
        let sessions = Sessions::in_memory(Duration::from_secs(60));
        let id = sessions.start(Who::Admin, Environment::Test).await.unwrap();
        assert!(sessions.get(&id).await.unwrap().is_some());
        assert!(sessions.get("another").await.unwrap().is_none());
        sessions.end(&id).await.unwrap();
        assert!(sessions.get(&id).await.unwrap().is_none());

        let short = Sessions::in_memory(Duration::ZERO);
        let id = short.start(Who::Admin, Environment::Test).await.unwrap();
        assert!(short.get(&id).await.unwrap().is_none(), "expired at once");
        assert!(
            short.is_empty(),
            "an expired session is dropped when asked for"
        );
    }

    #[tokio::test]
    async fn only_an_admin_session_changes_environment() {
        let sessions = Sessions::in_memory(Duration::from_secs(60));
        let admin = sessions.start(Who::Admin, Environment::Test).await.unwrap();
        let company = sessions
            .start(
                Who::Company {
                    company: 1,
                    key_id: 7,
                    key_hash: "h".into(),
                },
                Environment::Test,
            )
            .await
            .unwrap();
        sessions
            .set_environment(&admin, Environment::Live)
            .await
            .unwrap();
        sessions
            .set_environment(&company, Environment::Live)
            .await
            .unwrap();
        assert_eq!(
            sessions.get(&admin).await.unwrap().map(|s| s.environment),
            Some(Environment::Live)
        );
        assert_eq!(
            sessions.get(&company).await.unwrap().map(|s| s.environment),
            Some(Environment::Test)
        );
        sessions.end_key(7).await.unwrap();
        assert!(sessions.get(&company).await.unwrap().is_none());
        assert!(sessions.get(&admin).await.unwrap().is_some());
    }

    #[test]
    fn a_stored_session_reads_back_as_written() {
        let company = Who::Company {
            company: 3,
            key_id: 9,
            key_hash: "ab".into(),
        };
        for who in [Who::Admin, company] {
            let written = record(Stored {
                who: who.clone(),
                environment: Environment::Live,
                csrf: "t".into(),
            })
            .unwrap();
            let back: Stored = serde_json::from_value(written).unwrap();
            assert_eq!(
                (back.who, back.environment, back.csrf.as_str()),
                (who, Environment::Live, "t")
            );
        }
    }
}
