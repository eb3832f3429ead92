//! What the simulator knows and remembers: the registry of issuers (filled
//! with `PUT /__sim/issuers`), the control mode, the call
//! statistics, the documents it has received and accepted, and pending
//! asynchronous batches.

use crate::authority::soap::response::DianResponse;
use crate::authority::transmission::NumberRange;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError, RwLock};
use std::time::{Duration, Instant};

/// A registered software (invoicing, payroll, equivalent documents…).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SoftwareRecord {
    pub id: String,
    pub pin: String,
}

/// One issuer as the authority knows it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IssuerRecord {
    /// NIT without check digit.
    pub nit: String,
    #[serde(default)]
    pub software: Vec<SoftwareRecord>,
    /// Numbering resolutions with their technical keys.
    #[serde(default)]
    pub ranges: Vec<NumberRange>,
    #[serde(default)]
    pub test_set_ids: Vec<String>,
    /// Its registered name and email, which `GetAcquirer` answers for its
    /// NIT (identification type 31).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
}

/// A buyer as the authority's `GetAcquirer` knows it (set through
/// `PUT /__sim/acquirers`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AcquirerRecord {
    /// The authority's identification type code (13 cédula, 31 NIT…).
    pub identification_type: String,
    pub identification_number: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
}

impl IssuerRecord {
    pub fn pin_of(&self, software_id: &str) -> Option<&str> {
        self.software
            .iter()
            .find(|s| s.id == software_id)
            .map(|s| s.pin.as_str())
    }

    /// The range whose prefix starts `number` and whose rest is a number;
    /// the longest prefix wins. Returns the range and the numeric part.
    pub fn range_for(&self, number: &str) -> Option<(&NumberRange, u64)> {
        self.ranges
            .iter()
            .filter_map(|r| {
                let rest = number.strip_prefix(r.prefix.as_str())?;
                if rest.is_empty() || !rest.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                Some((r, rest.parse::<u64>().ok()?))
            })
            .max_by_key(|(r, _)| r.prefix.len())
    }
}

/// Issuers by NIT and buyers by identification. Cheap to share
/// (`Arc<SimRegistry>`).
#[derive(Debug, Default)]
pub struct SimRegistry {
    issuers: RwLock<HashMap<String, IssuerRecord>>,
    /// Buyers by (identification type, number).
    acquirers: RwLock<HashMap<(String, String), AcquirerRecord>>,
}

impl SimRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds or replaces an issuer.
    pub fn register(&self, issuer: IssuerRecord) {
        let mut map = self.issuers.write().unwrap_or_else(PoisonError::into_inner);
        map.insert(issuer.nit.trim().to_string(), issuer);
    }

    pub fn issuer(&self, nit: &str) -> Option<IssuerRecord> {
        let map = self.issuers.read().unwrap_or_else(PoisonError::into_inner);
        map.get(nit.trim()).cloned()
    }

    pub fn issuers(&self) -> Vec<IssuerRecord> {
        let map = self.issuers.read().unwrap_or_else(PoisonError::into_inner);
        let mut v: Vec<IssuerRecord> = map.values().cloned().collect();
        v.sort_by(|a, b| a.nit.cmp(&b.nit));
        v
    }

    /// Adds or replaces a buyer.
    pub fn register_acquirer(&self, buyer: AcquirerRecord) {
        let key = (
            buyer.identification_type.trim().to_string(),
            buyer.identification_number.trim().to_string(),
        );
        let mut map = self
            .acquirers
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        map.insert(key, buyer);
    }

    pub fn acquirers(&self) -> Vec<AcquirerRecord> {
        let map = self
            .acquirers
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        let mut v: Vec<AcquirerRecord> = map.values().cloned().collect();
        v.sort_by(|a, b| {
            (&a.identification_type, &a.identification_number)
                .cmp(&(&b.identification_type, &b.identification_number))
        });
        v
    }

    /// The buyer `GetAcquirer` answers for: one set through the control
    /// API, else, for a NIT (type 31), a registered issuer (its name, or
    /// its NIT when it registered none).
    pub fn acquirer(&self, identification_type: &str, number: &str) -> Option<AcquirerRecord> {
        let key = (
            identification_type.trim().to_string(),
            number.trim().to_string(),
        );
        let set = self
            .acquirers
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&key)
            .cloned();
        if set.is_some() || key.0 != "31" {
            return set;
        }
        self.issuer(&key.1).map(|i| AcquirerRecord {
            name: i.name.clone().unwrap_or_else(|| i.nit.clone()),
            email: i.email.clone(),
            identification_type: key.0,
            identification_number: i.nit,
        })
    }

    pub fn has_test_set(&self, test_set_id: &str) -> bool {
        let map = self.issuers.read().unwrap_or_else(PoisonError::into_inner);
        map.values()
            .any(|i| i.test_set_ids.iter().any(|t| t == test_set_id))
    }
}

/// `POST /__sim/mode` modes (decisions.md §2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    #[default]
    Up,
    /// HTTP 503 on the SOAP endpoint.
    Down,
    /// Answers after `latency_ms`.
    Slow,
    /// Every document rejected with a business rule (after `latency_ms`).
    Reject,
    /// A `fail_ratio` share answered HTTP 503 at random.
    Flaky,
    /// Every call processed (a document accepted, recorded, counted), then
    /// its answer lost on the way back: HTTP 502 from a gateway.
    Lose,
}

#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct ModeSettings {
    pub mode: Mode,
    #[serde(default)]
    pub latency_ms: u64,
    #[serde(default)]
    pub fail_ratio: f64,
}

/// A document the simulator accepted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AcceptedDoc {
    pub number: String,
    pub issuer_nit: String,
    pub operation: String,
    pub file_name: String,
    /// Document kind as `StatusMessage` names it ("La Factura electrónica").
    #[serde(skip)]
    pub label: String,
    #[serde(skip)]
    pub application_response_b64: String,
}

#[derive(Debug, Default)]
struct DocRecord {
    received: u64,
    accepted: Option<AcceptedDoc>,
    last_rejection: Option<Vec<String>>,
}

#[derive(Debug)]
struct Batch {
    ready_at: Instant,
    results: Vec<DianResponse>,
}

/// A `GetStatusZip` lookup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchStatus {
    Unknown,
    Pending,
    Ready(Vec<DianResponse>),
}

/// What `GetStatus` finds for a code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CodeStatus {
    Unknown,
    Accepted(AcceptedDoc),
    Rejected(Vec<String>),
}

#[derive(Debug, Default)]
struct Inner {
    mode: ModeSettings,
    calls: BTreeMap<String, u64>,
    refused: u64,
    max_in_flight: usize,
    window: VecDeque<Instant>,
    max_per_second: usize,
    documents: HashMap<String, DocRecord>,
    accepted_count: u64,
    rejected_count: u64,
    batches: HashMap<String, Batch>,
}

/// Mutable state of one simulator instance.
#[derive(Debug, Default)]
pub struct SimState {
    inner: Mutex<Inner>,
    in_flight: AtomicUsize,
    /// Invoice events accepted, by invoice (order and tacit-acceptance rules).
    pub events: super::events::EventLedger,
    /// The accepted documents as received (GetXmlByDocumentKey).
    pub copies: super::copies::DocumentCopies,
}

/// Decrements the in-flight count when a SOAP call ends.
#[derive(Debug)]
pub struct InFlight<'a> {
    counter: &'a AtomicUsize,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.counter.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Accepted document as `/__sim/stats` lists it.
#[derive(Debug, Clone, Serialize)]
pub struct AcceptedStat {
    #[serde(flatten)]
    pub doc: AcceptedDoc,
    /// Receptions of this code (the accepted one, duplicates, rejections).
    pub received: u64,
}

/// `GET /__sim/stats`.
#[derive(Debug, Clone, Serialize)]
pub struct Stats {
    pub mode: ModeSettings,
    /// SOAP calls received per operation (including refused ones).
    pub calls: BTreeMap<String, u64>,
    pub total_calls: u64,
    /// Calls answered HTTP 503 (modes down and flaky).
    pub refused: u64,
    pub in_flight: usize,
    /// Most SOAP calls in flight at once.
    pub max_in_flight: usize,
    /// Most SOAP calls received within any 1-second window.
    pub max_per_second: usize,
    pub accepted_count: u64,
    pub rejected_count: u64,
    /// Accepted documents by code.
    pub accepted: BTreeMap<String, AcceptedStat>,
    /// Receptions of every code seen (accepted or not).
    pub received: BTreeMap<String, u64>,
}

impl SimState {
    pub fn new() -> Self {
        Self::default()
    }

    /// A state keeping up to `budget` bytes of accepted documents.
    pub fn with_copy_budget(budget: usize) -> Self {
        SimState {
            copies: super::copies::DocumentCopies::new(budget),
            ..Self::default()
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records the arrival of a SOAP call; the guard marks its end.
    pub fn arrive(&self, operation: &str, now: Instant) -> InFlight<'_> {
        let current = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        let mut inner = self.lock();
        *inner.calls.entry(operation.to_string()).or_insert(0) += 1;
        inner.max_in_flight = inner.max_in_flight.max(current);
        inner.window.push_back(now);
        while let Some(front) = inner.window.front() {
            if now.duration_since(*front) >= Duration::from_secs(1) {
                inner.window.pop_front();
            } else {
                break;
            }
        }
        inner.max_per_second = inner.max_per_second.max(inner.window.len());
        InFlight {
            counter: &self.in_flight,
        }
    }

    pub fn refused(&self) {
        self.lock().refused += 1;
    }

    pub fn mode(&self) -> ModeSettings {
        self.lock().mode
    }

    pub fn set_mode(&self, mode: ModeSettings) {
        self.lock().mode = mode;
    }

    /// Forgets statistics, documents and batches; back to mode `up`.
    pub fn reset(&self) {
        *self.lock() = Inner::default();
        self.events.reset();
        self.copies.clear();
    }

    pub fn count_reception(&self, code: &str) {
        self.lock()
            .documents
            .entry(code.to_string())
            .or_default()
            .received += 1;
    }

    /// Accepts `code` unless it already was (then returns false): the check
    /// and the acceptance are one step, so a code is never accepted twice.
    pub fn accept(&self, code: &str, doc: AcceptedDoc) -> bool {
        let mut inner = self.lock();
        let record = inner.documents.entry(code.to_string()).or_default();
        if record.accepted.is_some() {
            return false;
        }
        record.accepted = Some(doc);
        record.last_rejection = None;
        inner.accepted_count += 1;
        true
    }

    pub fn is_accepted(&self, code: &str) -> bool {
        self.lock()
            .documents
            .get(code)
            .is_some_and(|d| d.accepted.is_some())
    }

    pub fn record_rejection(&self, code: Option<&str>, errors: &[String]) {
        let mut inner = self.lock();
        inner.rejected_count += 1;
        if let Some(code) = code {
            let record = inner.documents.entry(code.to_string()).or_default();
            if record.accepted.is_none() {
                record.last_rejection = Some(errors.to_vec());
            }
        }
    }

    pub fn code_status(&self, code: &str) -> CodeStatus {
        let inner = self.lock();
        match inner.documents.get(code) {
            Some(DocRecord {
                accepted: Some(doc),
                ..
            }) => CodeStatus::Accepted(doc.clone()),
            Some(DocRecord {
                last_rejection: Some(errors),
                ..
            }) => CodeStatus::Rejected(errors.clone()),
            _ => CodeStatus::Unknown,
        }
    }

    pub fn put_batch(&self, zip_key: &str, ready_at: Instant, results: Vec<DianResponse>) {
        self.lock()
            .batches
            .insert(zip_key.to_string(), Batch { ready_at, results });
    }

    pub fn batch(&self, zip_key: &str, now: Instant) -> BatchStatus {
        match self.lock().batches.get(zip_key) {
            None => BatchStatus::Unknown,
            Some(b) if now < b.ready_at => BatchStatus::Pending,
            Some(b) => BatchStatus::Ready(b.results.clone()),
        }
    }

    /// The ApplicationResponse answered for an accepted code, decoded.
    pub fn application_response(&self, code: &str) -> Option<String> {
        use base64::Engine;
        let b64 = self
            .lock()
            .documents
            .get(code)?
            .accepted
            .as_ref()?
            .application_response_b64
            .clone();
        let bytes = base64::engine::general_purpose::STANDARD.decode(b64).ok()?;
        String::from_utf8(bytes).ok()
    }

    pub fn stats(&self) -> Stats {
        let inner = self.lock();
        let accepted = inner
            .documents
            .iter()
            .filter_map(|(code, d)| {
                d.accepted.as_ref().map(|doc| {
                    (
                        code.clone(),
                        AcceptedStat {
                            doc: doc.clone(),
                            received: d.received,
                        },
                    )
                })
            })
            .collect();
        let received = inner
            .documents
            .iter()
            .map(|(code, d)| (code.clone(), d.received))
            .collect();
        Stats {
            mode: inner.mode,
            total_calls: inner.calls.values().sum(),
            calls: inner.calls.clone(),
            refused: inner.refused,
            in_flight: self.in_flight.load(Ordering::SeqCst),
            max_in_flight: inner.max_in_flight,
            max_per_second: inner.max_per_second,
            accepted_count: inner.accepted_count,
            rejected_count: inner.rejected_count,
            accepted,
            received,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(prefix: &str, from: u64, to: u64) -> NumberRange {
        NumberRange {
            resolution_number: "1".into(),
            prefix: prefix.into(),
            from_number: from,
            to_number: to,
            technical_key: Some("k".into()),
            ..NumberRange::default()
        }
    }

    #[test]
    fn range_lookup_takes_the_longest_numeric_prefix() {
        let issuer = IssuerRecord {
            nit: "900".into(),
            ranges: vec![
                range("SE", 1, 10),
                range("SETP", 990000000, 995000000),
                range("", 1, 5),
            ],
            ..IssuerRecord::default()
        };
        let (r, n) = issuer.range_for("SETP990000001").expect("range");
        assert_eq!((r.prefix.as_str(), n), ("SETP", 990000001));
        let (r, n) = issuer.range_for("42").expect("range");
        assert_eq!((r.prefix.as_str(), n), ("", 42));
        assert!(issuer.range_for("XX1").is_none());
        assert!(issuer.range_for("SETP").is_none());
    }

    #[test]
    fn pacing_statistics() {
        let s = SimState::new();
        let t0 = Instant::now();
        {
            let _a = s.arrive("SendBillSync", t0);
            let _b = s.arrive("SendBillSync", t0 + Duration::from_millis(100));
            let _c = s.arrive("GetStatus", t0 + Duration::from_millis(900));
        }
        let _d = s.arrive("GetStatus", t0 + Duration::from_millis(1500));
        let st = s.stats();
        assert_eq!(st.max_in_flight, 3);
        assert_eq!(st.in_flight, 1);
        assert_eq!(st.max_per_second, 3);
        assert_eq!(st.calls.get("SendBillSync"), Some(&2));
        assert_eq!(st.total_calls, 4);
    }

    #[test]
    fn a_code_is_accepted_once() {
        let s = SimState::new();
        let doc = AcceptedDoc {
            number: "SETP1".into(),
            issuer_nit: "900".into(),
            operation: "SendBillSync".into(),
            file_name: "f".into(),
            label: String::new(),
            application_response_b64: String::new(),
        };
        s.count_reception("abc");
        assert!(s.accept("abc", doc.clone()));
        s.count_reception("abc");
        assert!(!s.accept("abc", doc));
        let st = s.stats();
        assert_eq!(st.accepted.get("abc").map(|a| a.received), Some(2));
        assert_eq!(st.accepted_count, 1);
    }

    #[test]
    fn registry_json_shape() {
        let json = r#"{"nit": "900000001", "software": [{"id": "s1", "pin": "12345"}],
            "ranges": [{"resolutionNumber": "18760000001", "prefix": "SETP", "fromNumber": 990000000,
                        "toNumber": 995000000, "technicalKey": "fc8e"}],
            "testSetIds": ["t1"]}"#;
        let issuer: IssuerRecord = serde_json::from_str(json).expect("json");
        let reg = SimRegistry::new();
        reg.register(issuer);
        assert!(reg.has_test_set("t1"));
        assert_eq!(
            reg.issuer("900000001")
                .and_then(|i| i.pin_of("s1").map(str::to_string)),
            Some("12345".into())
        );
    }
}
