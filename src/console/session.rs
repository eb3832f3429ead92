//! Console sessions: who signed in, in which environment, until when, and
//! the session's CSRF token. Kept in memory: a restart signs everyone out,
//! and the cookie's value is only ever compared by its SHA-256 (a memory
//! dump holds no usable session id).
//!
//! A company session remembers its key by hash and checks it on every
//! request (`crate::http::auth::resolve_hash`): revoking the key ends it.

use std::time::{Duration, Instant};

use dashmap::DashMap;
use emisor_store::{CompanyId, Environment};
use rand::RngCore;
use sha2::{Digest, Sha256};

/// The session cookie; `Path=/console`, `HttpOnly`, `SameSite=Strict`.
pub const COOKIE: &str = "emisor_sesion";

/// Sessions held at once; past it, expired ones go first, then the oldest.
const MAX_SESSIONS: usize = 10_000;

/// Who a session is.
#[derive(Debug, Clone, PartialEq, Eq)]
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

#[derive(Debug)]
pub struct Sessions {
    by_id: DashMap<[u8; 32], Session>,
    ttl: Duration,
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
    pub fn new(ttl: Duration) -> Self {
        Sessions {
            by_id: DashMap::new(),
            ttl,
        }
    }

    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// Starts a session; answers its id (the cookie's value).
    pub fn start(&self, who: Who, environment: Environment) -> String {
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
    pub fn get(&self, id: &str) -> Option<Session> {
        let key = digest(id);
        let session = self.by_id.get(&key).map(|s| s.clone())?;
        if session.expires <= Instant::now() {
            self.by_id.remove(&key);
            return None;
        }
        Some(session)
    }

    pub fn end(&self, id: &str) {
        self.by_id.remove(&digest(id));
    }

    /// An admin session changes the environment it shows.
    pub fn set_environment(&self, id: &str, environment: Environment) {
        if let Some(mut s) = self.by_id.get_mut(&digest(id)) {
            if s.who == Who::Admin {
                s.environment = environment;
            }
        }
    }

    /// Ends every session of a company key (after its revocation).
    pub fn end_key(&self, key_id: u64) {
        self.by_id
            .retain(|_, s| !matches!(s.who, Who::Company { key_id: k, .. } if k == key_id));
    }

    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_is_found_by_its_id_until_it_ends_or_expires() {
        let sessions = Sessions::new(Duration::from_secs(60));
        let id = sessions.start(Who::Admin, Environment::Test);
        assert!(sessions.get(&id).is_some());
        assert!(sessions.get("another").is_none());
        sessions.end(&id);
        assert!(sessions.get(&id).is_none());

        let short = Sessions::new(Duration::ZERO);
        let id = short.start(Who::Admin, Environment::Test);
        assert!(short.get(&id).is_none(), "expired at once");
        assert!(
            short.is_empty(),
            "an expired session is dropped when asked for"
        );
    }

    #[test]
    fn only_an_admin_session_changes_environment() {
        let sessions = Sessions::new(Duration::from_secs(60));
        let admin = sessions.start(Who::Admin, Environment::Test);
        let company = sessions.start(
            Who::Company {
                company: 1,
                key_id: 7,
                key_hash: "h".into(),
            },
            Environment::Test,
        );
        sessions.set_environment(&admin, Environment::Live);
        sessions.set_environment(&company, Environment::Live);
        assert_eq!(
            sessions.get(&admin).map(|s| s.environment),
            Some(Environment::Live)
        );
        assert_eq!(
            sessions.get(&company).map(|s| s.environment),
            Some(Environment::Test)
        );
        sessions.end_key(7);
        assert!(sessions.get(&company).is_none());
        assert!(sessions.get(&admin).is_some());
    }
}
