//! A buyer looked up at the authority (`GetAcquirer`, Res. 000202/2025): the
//! name and email the buyer registered for electronic invoicing, by its
//! identification. The data serves invoicing only, as the resolution
//! requires: it fills a document's buyer and is never listed or exported.
//!
//! Answers are cached per authority service (so per environment: the
//! testing service, production, or a demo company's simulator), found ones
//! for [`FOUND_TTL`], unknown buyers for the shorter [`NOT_FOUND_TTL`], at
//! most [`CAPACITY`] entries; failures are never cached.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use emisor_store::{CompanyId, Environment};

use super::Issuing;
use crate::authority::port::{AuthorityRequest, AuthorityResponse};
use crate::authority::Acquirer;

/// How long a found buyer is served from the cache.
pub const FOUND_TTL: Duration = Duration::from_secs(60 * 60);
/// How long an unknown buyer is (a buyer may register any time).
pub const NOT_FOUND_TTL: Duration = Duration::from_secs(5 * 60);
/// Entries kept across all services (~200 bytes each: ~2 MB at most).
pub const CAPACITY: usize = 10_000;

/// The authority's identification type codes `GetAcquirer` is asked with:
/// 11 registro civil, 12 tarjeta de identidad, 13 cédula de ciudadanía,
/// 21 tarjeta de extranjería, 22 cédula de extranjería, 31 NIT, 41
/// pasaporte, 42 documento de identificación extranjero, 47 PEP, 48 PPT, 50
/// NIT de otro país, 91 NUIP.
pub const IDENTIFICATION_TYPES: [&str; 12] = [
    "11", "12", "13", "21", "22", "31", "41", "42", "47", "48", "50", "91",
];

/// Types whose numbers are digits only (a NIT without its check digit).
const NUMERIC_TYPES: [&str; 6] = ["11", "12", "13", "22", "31", "91"];

/// A buyer's identification, checked.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BuyerId {
    pub identification_type: String,
    pub number: String,
}

/// Why an identification is refused (before any call).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuyerIdError {
    #[error("must be one of {}", IDENTIFICATION_TYPES.join(", "))]
    Type,
    #[error("must be 1 to 20 letters or digits (digits only for this type, a NIT without its check digit)")]
    Number,
}

impl BuyerId {
    pub fn parse(identification_type: &str, number: &str) -> Result<BuyerId, BuyerIdError> {
        let identification_type = identification_type.trim();
        let number = number.trim();
        if !IDENTIFICATION_TYPES.contains(&identification_type) {
            return Err(BuyerIdError::Type);
        }
        let numeric = NUMERIC_TYPES.contains(&identification_type);
        let allowed = |c: char| {
            if numeric {
                c.is_ascii_digit()
            } else {
                c.is_ascii_alphanumeric()
            }
        };
        if number.is_empty() || number.len() > 20 || !number.chars().all(allowed) {
            return Err(BuyerIdError::Number);
        }
        Ok(BuyerId {
            identification_type: identification_type.to_string(),
            number: number.to_string(),
        })
    }
}

/// A buyer as the authority knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Buyer {
    pub name: String,
    pub email: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum LookupError {
    /// The authority does not know the buyer.
    #[error("the authority has no buyer registered with identification {0}")]
    NotFound(String),
    /// The authority could not be asked, or did not answer usably.
    #[error("the authority could not be asked: {0}")]
    Unavailable(String),
    /// The company cannot sign a call (no certificate…).
    #[error("{0}")]
    Credentials(String),
}

type Key = (String, BuyerId);

#[derive(Debug, Default)]
struct Inner {
    entries: HashMap<Key, (Instant, Option<Buyer>)>,
    /// Keys in insertion order, the oldest evicted first.
    order: VecDeque<Key>,
}

/// The cache of `GetAcquirer` answers. Hand-written: a map with expiries
/// and first-in first-out eviction is all it needs, and no cache crate is
/// in the tree.
#[derive(Debug)]
pub struct BuyerDirectory {
    capacity: usize,
    inner: Mutex<Inner>,
}

impl Default for BuyerDirectory {
    fn default() -> Self {
        BuyerDirectory::new(CAPACITY)
    }
}

impl BuyerDirectory {
    pub fn new(capacity: usize) -> Self {
        BuyerDirectory {
            capacity: capacity.max(1),
            inner: Mutex::new(Inner::default()),
        }
    }

    /// `Some(answer)` while a cached answer for `key` is fresh.
    fn cached(&self, key: &Key, now: Instant) -> Option<Option<Buyer>> {
        let inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner
            .entries
            .get(key)
            .filter(|(expires, _)| *expires > now)
            .map(|(_, answer)| answer.clone())
    }

    fn remember(&self, key: Key, answer: Option<Buyer>, now: Instant) {
        let ttl = if answer.is_some() {
            FOUND_TTL
        } else {
            NOT_FOUND_TTL
        };
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let inner = &mut *inner;
        if let Some(entry) = inner.entries.get_mut(&key) {
            *entry = (now + ttl, answer);
            return;
        }
        while inner.entries.len() >= self.capacity {
            let Some(oldest) = inner.order.pop_front() else {
                break;
            };
            inner.entries.remove(&oldest);
        }
        inner.order.push_back(key.clone());
        inner.entries.insert(key, (now + ttl, answer));
    }

    /// Entries held (fresh or not).
    pub fn len(&self) -> usize {
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entries
            .len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The buyer `id` as the authority of `company`'s `environment` knows
    /// it: from the cache, else asked with the company's credentials
    /// through the transmitter (its pacing and breaker).
    pub async fn look_up(
        &self,
        issuing: &Issuing,
        company: CompanyId,
        environment: Environment,
        id: &BuyerId,
    ) -> Result<Buyer, LookupError> {
        let target = issuing
            .target(company, environment)
            .await
            .map_err(|e| LookupError::Credentials(e.to_string()))?;
        let key = (target.url.clone(), id.clone());
        let answer = match self.cached(&key, Instant::now()) {
            Some(answer) => answer,
            None => {
                let request = AuthorityRequest::GetAcquirer {
                    identification_type: id.identification_type.clone(),
                    identification_number: id.number.clone(),
                };
                let answer = match issuing.call_authority(company, target, request).await {
                    Ok(AuthorityResponse::Acquirer(a)) => known(&a)?,
                    Ok(_) => {
                        return Err(LookupError::Unavailable(
                            "unexpected answer to GetAcquirer".into(),
                        ))
                    }
                    Err(f) => return Err(LookupError::Unavailable(f.to_string())),
                };
                self.remember(key, answer.clone(), Instant::now());
                answer
            }
        };
        answer.ok_or_else(|| {
            LookupError::NotFound(format!("{} {}", id.identification_type, id.number))
        })
    }
}

/// What an answer says: the buyer, or none known; an authority error is
/// no answer.
fn known(a: &Acquirer) -> Result<Option<Buyer>, LookupError> {
    if let Some((name, email)) = a.found() {
        return Ok(Some(Buyer {
            name: name.to_string(),
            email: email.map(str::to_string),
        }));
    }
    if a.status_code.is_empty() || a.status_code.starts_with('5') {
        return Err(LookupError::Unavailable(format!(
            "GetAcquirer answered {} {}",
            a.status_code, a.message
        )));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: &str) -> BuyerId {
        BuyerId::parse("13", n).expect("id")
    }

    #[test]
    fn identifications_are_checked_by_type() {
        assert!(BuyerId::parse("31", "900373076").is_ok());
        assert_eq!(BuyerId::parse("99", "1"), Err(BuyerIdError::Type));
        assert_eq!(
            BuyerId::parse("31", "900373076-1"),
            Err(BuyerIdError::Number)
        );
        assert_eq!(BuyerId::parse("13", ""), Err(BuyerIdError::Number));
        assert_eq!(
            BuyerId::parse("13", &"1".repeat(21)),
            Err(BuyerIdError::Number)
        );
        assert_eq!(
            BuyerId::parse("41", "AB123456").map(|b| b.number),
            Ok("AB123456".into())
        );
    }

    #[test]
    fn answers_expire_and_the_oldest_go_past_the_capacity() {
        let dir = BuyerDirectory::new(2);
        let t0 = Instant::now();
        let buyer = Buyer {
            name: "Ana".into(),
            email: None,
        };
        let key = |n: &str| ("http://a".to_string(), id(n));
        dir.remember(key("1"), Some(buyer.clone()), t0);
        dir.remember(key("2"), None, t0);
        assert_eq!(dir.cached(&key("1"), t0), Some(Some(buyer.clone())));
        assert_eq!(dir.cached(&key("2"), t0), Some(None));
        // An unknown buyer is asked again sooner than a found one.
        let later = t0 + NOT_FOUND_TTL + Duration::from_secs(1);
        assert_eq!(dir.cached(&key("2"), later), None);
        assert!(dir.cached(&key("1"), later).is_some());
        assert_eq!(dir.cached(&key("1"), t0 + FOUND_TTL), None);
        // Another service is another entry; the first one in goes.
        dir.remember(("http://b".into(), id("1")), None, t0);
        assert_eq!(dir.len(), 2);
        assert_eq!(dir.cached(&key("1"), t0), None);
        // Refreshing an entry keeps one entry.
        dir.remember(key("2"), Some(buyer), t0);
        dir.remember(key("2"), None, t0);
        assert_eq!(dir.len(), 2);
    }

    #[test]
    fn only_a_name_is_a_buyer_and_errors_are_not_answers() {
        let a = |code: &str, name: Option<&str>| Acquirer {
            status_code: code.into(),
            receiver_name: name.map(str::to_string),
            ..Acquirer::default()
        };
        assert!(matches!(known(&a("00", Some("Ana"))), Ok(Some(_))));
        assert!(matches!(known(&a("404", None)), Ok(None)));
        assert!(matches!(known(&a("404", Some("Ana"))), Ok(None)));
        assert!(matches!(
            known(&a("500", None)),
            Err(LookupError::Unavailable(_))
        ));
        assert!(matches!(
            known(&a("", None)),
            Err(LookupError::Unavailable(_))
        ));
    }
}
