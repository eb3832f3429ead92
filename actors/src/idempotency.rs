//! The idempotency lock (service-spec §7–8, decisions.md §3): a request that
//! names a reference (`referencia_externa`, `referencia`) holds that
//! reference while it is processed, and identical payloads are refused for
//! a window (5 minutes) after a document was made from one.
//!
//! How a handler uses it:
//!
//! 1. [`Claim`] with the company, the reference (if any) and the SHA-256 of
//!    the request body. `Err(Duplicate::InProgress)` → 409
//!    `DUPLICATE_IN_PROGRESS`; `Err(Duplicate::Payload { .. })` → 409
//!    `DUPLICATE_PAYLOAD`.
//! 2. While holding the [`ClaimGuard`], look the reference up in the store:
//!    a stored document with it → 409 `DUPLICATE_REFERENCE` with its id
//!    (drop the guard). Checking under the claim closes the race between
//!    two requests that both find no document and both create one. This
//!    actor does not read the store (sled calls stay off its thread).
//! 3. Build and store the document, then [`ClaimGuard::complete`] (or send
//!    [`Complete`]) with its id: the payload is remembered for the window
//!    and the reference released. On failure, drop the guard or
//!    [`Release`] it.
//!
//! The guard releases its claim when dropped unless completed, so a handler
//! that returns early, panics or is cancelled (client gone) never leaves a
//! reference locked.
//!
//! The claims live in a [`ClaimTable`] shared by the actor and the HTTP
//! workers: a worker claims, completes and releases on its own thread (a
//! mutex held for a few map operations), because a round trip to the
//! actor's thread cost more CPU than the claim (two thread wake-ups a
//! message: docs/performance.md). The actor owns the table: it
//! prunes the window when traffic stops, answers the same operations as
//! messages, and a restart keeps the table.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use actix::prelude::*;
use serde::Serialize;

use crate::{Ping, Pong};

mod seen_window;

use seen_window::{fingerprint, SeenWindow};

/// How long payloads are remembered.
#[derive(Debug, Clone, PartialEq)]
pub struct IdempotencyConfig {
    /// The duplicate-payload window before scaling (300 s).
    pub duplicate_window: Duration,
    /// Multiplies the window (1.0 in production, small in tests).
    pub time_scale: f64,
}

impl Default for IdempotencyConfig {
    fn default() -> Self {
        IdempotencyConfig {
            duplicate_window: Duration::from_secs(300),
            time_scale: 1.0,
        }
    }
}

impl IdempotencyConfig {
    /// The scaled window (a non-finite or negative scale counts as 1).
    pub fn window(&self) -> Duration {
        let scale = if self.time_scale.is_finite() && self.time_scale >= 0.0 {
            self.time_scale
        } else {
            1.0
        };
        Duration::try_from_secs_f64(self.duplicate_window.as_secs_f64() * scale)
            .unwrap_or(Duration::MAX)
    }
}

/// Why a claim was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Duplicate {
    /// Another request with the same reference is being processed.
    #[error("another request with this reference is being processed")]
    InProgress,
    /// The same payload was processed within the window (`document_id` is
    /// the document made from it), or is being processed right now (`None`).
    #[error("an identical payload was sent within the duplicate window")]
    Payload { document_id: Option<u64> },
}

impl Duplicate {
    /// The API's error code (decisions.md §3).
    pub fn code(&self) -> &'static str {
        match self {
            Duplicate::InProgress => "DUPLICATE_IN_PROGRESS",
            Duplicate::Payload { .. } => "DUPLICATE_PAYLOAD",
        }
    }
}

/// Claim a reference and a payload for one request.
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<ClaimGuard, Duplicate>")]
pub struct Claim {
    pub company: u64,
    /// `None` when the request names no reference (only the payload is
    /// checked).
    pub reference: Option<String>,
    /// SHA-256 of the request body as received.
    pub payload_hash: [u8; 32],
    pub now: Instant,
}

/// Held while a claimed request is processed; releases the claim when
/// dropped unless completed.
pub struct ClaimGuard {
    table: Arc<ClaimTable>,
    id: u64,
    armed: bool,
}

impl fmt::Debug for ClaimGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClaimGuard")
            .field("id", &self.id)
            .field("armed", &self.armed)
            .finish()
    }
}

impl ClaimGuard {
    /// The document was made: remember the payload, release the reference.
    pub fn complete(mut self, document_id: u64, now: Instant) {
        let id = self.disarm();
        self.table.complete(id, document_id, now);
    }

    /// Processing failed: release everything now (dropping does the same).
    pub fn release(self) {
        drop(self);
    }

    fn disarm(&mut self) -> u64 {
        self.armed = false;
        self.id
    }
}

impl Drop for ClaimGuard {
    fn drop(&mut self) {
        if self.armed {
            self.table.state().end(self.id);
        }
    }
}

/// Remember the claim's payload as having made `document_id`, and release
/// its reference.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct Complete {
    pub guard: ClaimGuard,
    pub document_id: u64,
    pub now: Instant,
}

/// Release a claim without remembering anything.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct Release {
    pub guard: ClaimGuard,
}

/// Counters for `/metrics`.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "IdempotencyStats")]
pub struct GetIdempotencyStats;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct IdempotencyStats {
    /// Claims being processed.
    pub in_progress: usize,
    /// Payloads remembered within the window.
    pub payloads: usize,
}

type PayloadKey = (u64, [u8; 32]);

/// A payload that made a document, for [`ClaimTable::remember`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RememberedPayload {
    pub company: u64,
    pub payload_hash: [u8; 32],
    pub document_id: u64,
    /// When the document was made.
    pub at: Instant,
}

#[derive(Debug)]
struct Held {
    company: u64,
    reference: Option<String>,
    payload_hash: [u8; 32],
}

/// The claims in progress and the recent payloads of every company.
#[derive(Debug)]
struct Claims {
    window: Duration,
    next_id: u64,
    claims: HashMap<u64, Held>,
    references: HashSet<(u64, String)>,
    /// Payloads being processed (requests without a reference collide here).
    payloads_in_progress: HashMap<PayloadKey, usize>,
    /// Payloads that made a document, with which and when: by a
    /// fingerprint, in generations (see `seen_window`), so a full window
    /// stays small (docs/performance.md).
    seen: SeenWindow,
}

impl Claims {
    fn new(window: Duration) -> Self {
        Claims {
            window,
            next_id: 0,
            claims: HashMap::new(),
            references: HashSet::new(),
            payloads_in_progress: HashMap::new(),
            seen: SeenWindow::new(window, Instant::now()),
        }
    }

    /// Remembers a payload; the newest document of a payload wins.
    fn note(&mut self, (company, hash): &PayloadKey, document_id: u64, at: Instant) {
        self.seen.note(fingerprint(*company, hash), document_id, at);
    }

    fn within_window(&self, at: Instant, now: Instant) -> bool {
        now.saturating_duration_since(at) < self.window
    }

    /// Takes the claim; its id, or why not.
    fn claim(&mut self, msg: Claim) -> Result<u64, Duplicate> {
        // Forgets whole generations past the window: cheap enough for
        // every claim (a lookup checks the age anyway).
        self.seen.prune(msg.now);
        let payload = (msg.company, msg.payload_hash);
        if let Some(reference) = &msg.reference {
            if self.references.contains(&(msg.company, reference.clone())) {
                return Err(Duplicate::InProgress);
            }
        }
        if let Some(document_id) = self
            .seen
            .get(fingerprint(msg.company, &msg.payload_hash), msg.now)
        {
            return Err(Duplicate::Payload {
                document_id: Some(document_id),
            });
        }
        if self.payloads_in_progress.contains_key(&payload) {
            return Err(Duplicate::Payload { document_id: None });
        }
        if let Some(reference) = &msg.reference {
            self.references.insert((msg.company, reference.clone()));
        }
        *self.payloads_in_progress.entry(payload).or_insert(0) += 1;
        self.next_id = self.next_id.wrapping_add(1);
        let id = self.next_id;
        self.claims.insert(
            id,
            Held {
                company: msg.company,
                reference: msg.reference,
                payload_hash: msg.payload_hash,
            },
        );
        Ok(id)
    }

    /// Ends claim `id`; returns what it held (`None` if already ended).
    fn end(&mut self, id: u64) -> Option<PayloadKey> {
        let held = self.claims.remove(&id)?;
        if let Some(reference) = held.reference {
            self.references.remove(&(held.company, reference));
        }
        let payload = (held.company, held.payload_hash);
        if let Some(n) = self.payloads_in_progress.get_mut(&payload) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.payloads_in_progress.remove(&payload);
            }
        }
        Some(payload)
    }

    fn stats(&mut self, now: Instant) -> IdempotencyStats {
        self.seen.prune(now);
        IdempotencyStats {
            in_progress: self.claims.len(),
            payloads: self.seen.len(now),
        }
    }
}

/// The claims, shared by the actor and the callers that claim on their
/// own thread (see the module's comment).
#[derive(Debug)]
pub struct ClaimTable {
    claims: Mutex<Claims>,
    /// False until the payloads made before this process started are
    /// remembered ([`ClaimTable::loading`]); claims wait for it.
    ready: tokio::sync::watch::Sender<bool>,
}

impl ClaimTable {
    /// An empty table, ready at once.
    pub fn new(config: &IdempotencyConfig) -> Arc<Self> {
        Arc::new(ClaimTable {
            claims: Mutex::new(Claims::new(config.window())),
            ready: tokio::sync::watch::Sender::new(true),
        })
    }

    /// A table whose claims wait until [`remember`](Self::remember) has
    /// run once (the window is read back from the store at start-up).
    pub fn loading(config: &IdempotencyConfig) -> Arc<Self> {
        let table = Self::new(config);
        table.ready.send_replace(false);
        table
    }

    /// How long a payload that made a document is refused.
    pub fn window(&self) -> Duration {
        self.state().window
    }

    /// Whether the window read back at start-up is in.
    pub fn is_ready(&self) -> bool {
        *self.ready.borrow()
    }

    /// The claims; a panic elsewhere while they were held left them
    /// consistent (every operation is a few map updates), so a poisoned
    /// lock is used as it is.
    fn state(&self) -> MutexGuard<'_, Claims> {
        self.claims.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes a claim on the caller's thread, once the table is ready.
    pub async fn claim(self: &Arc<Self>, msg: Claim) -> Result<ClaimGuard, Duplicate> {
        if !self.is_ready() {
            let mut ready = self.ready.subscribe();
            // The sender lives in `self`: it cannot close while we wait.
            let _ = ready.wait_for(|r| *r).await;
        }
        self.try_claim(msg)
    }

    /// Takes a claim now, ready or not (the actor holds its messages until
    /// the table is ready).
    fn try_claim(self: &Arc<Self>, msg: Claim) -> Result<ClaimGuard, Duplicate> {
        let id = self.state().claim(msg)?;
        Ok(ClaimGuard {
            table: self.clone(),
            id,
            armed: true,
        })
    }

    fn complete(&self, id: u64, document_id: u64, now: Instant) {
        let mut claims = self.state();
        if let Some(payload) = claims.end(id) {
            claims.note(&payload, document_id, now);
        }
    }

    /// Learns the payloads of documents made before this process started
    /// (entries older than the window are ignored), and makes the table
    /// ready.
    pub fn remember(&self, recent: Vec<RememberedPayload>, now: Instant) {
        let mut claims = self.state();
        for r in recent {
            if claims.within_window(r.at, now) {
                claims.note(&(r.company, r.payload_hash), r.document_id, r.at);
            }
        }
        drop(claims);
        self.ready.send_replace(true);
    }

    pub fn stats(&self) -> IdempotencyStats {
        self.state().stats(Instant::now())
    }

    fn prune(&self, now: Instant) {
        self.state().seen.prune(now);
    }
}

/// Owns the [`ClaimTable`].
#[derive(Debug)]
pub struct IdempotencyLock {
    table: Arc<ClaimTable>,
}

impl IdempotencyLock {
    pub fn new(config: &IdempotencyConfig) -> Self {
        Self::over(ClaimTable::new(config))
    }

    /// An actor over a table that outlives it (a restarted actor keeps
    /// every claim and the window).
    pub fn over(table: Arc<ClaimTable>) -> Self {
        IdempotencyLock { table }
    }

    pub fn table(&self) -> &Arc<ClaimTable> {
        &self.table
    }

    /// Starts out remembering payloads that made documents before this
    /// actor existed (see [`ClaimTable::remember`]).
    pub fn remembering(self, recent: Vec<RememberedPayload>, now: Instant) -> Self {
        self.table.remember(recent, now);
        self
    }
}

impl Default for IdempotencyLock {
    fn default() -> Self {
        IdempotencyLock::new(&IdempotencyConfig::default())
    }
}

impl Actor for IdempotencyLock {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        // Claims prune as they come; this bounds memory when traffic stops.
        let window = self.table.state().window;
        let every = (window / 4).clamp(Duration::from_millis(10), Duration::from_secs(60));
        ctx.run_interval(every, |act, _| act.table.prune(Instant::now()));
    }
}

impl Handler<Claim> for IdempotencyLock {
    type Result = Result<ClaimGuard, Duplicate>;

    fn handle(&mut self, msg: Claim, _: &mut Context<Self>) -> Self::Result {
        self.table.try_claim(msg)
    }
}

impl Handler<Complete> for IdempotencyLock {
    type Result = ();

    fn handle(&mut self, mut msg: Complete, _: &mut Context<Self>) {
        let id = msg.guard.disarm();
        self.table.complete(id, msg.document_id, msg.now);
    }
}

impl Handler<Release> for IdempotencyLock {
    type Result = ();

    fn handle(&mut self, msg: Release, _: &mut Context<Self>) {
        msg.guard.release();
    }
}

impl Handler<GetIdempotencyStats> for IdempotencyLock {
    type Result = MessageResult<GetIdempotencyStats>;

    fn handle(&mut self, _: GetIdempotencyStats, _: &mut Context<Self>) -> Self::Result {
        MessageResult(self.table.stats())
    }
}

impl Handler<Ping> for IdempotencyLock {
    type Result = MessageResult<Ping>;

    fn handle(&mut self, _: Ping, _: &mut Context<Self>) -> Self::Result {
        MessageResult(Pong)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::future::join_all;

    fn hash(n: u8) -> [u8; 32] {
        [n; 32]
    }

    fn claim(company: u64, reference: Option<&str>, h: u8, now: Instant) -> Claim {
        Claim {
            company,
            reference: reference.map(str::to_string),
            payload_hash: hash(h),
            now,
        }
    }

    fn start() -> Addr<IdempotencyLock> {
        IdempotencyLock::default().start()
    }

    async fn stats(addr: &Addr<IdempotencyLock>) -> IdempotencyStats {
        addr.send(GetIdempotencyStats).await.expect("mailbox")
    }

    #[actix::test]
    async fn payloads_remembered_at_start_are_refused_until_the_window_ends() {
        let now = Instant::now();
        let window = IdempotencyConfig::default().window();
        let remembered = |h: u8, id: u64, age: Duration| RememberedPayload {
            company: 1,
            payload_hash: hash(h),
            document_id: id,
            at: now - age,
        };
        let addr = IdempotencyLock::default()
            .remembering(
                vec![
                    remembered(1, 10, Duration::from_secs(60)),
                    remembered(2, 11, window + Duration::from_secs(1)),
                ],
                now,
            )
            .start();
        assert_eq!(
            addr.send(claim(1, None, 1, now))
                .await
                .unwrap()
                .unwrap_err(),
            Duplicate::Payload {
                document_id: Some(10)
            }
        );
        // Another company's identical body is its own.
        assert!(addr.send(claim(2, None, 1, now)).await.unwrap().is_ok());
        // Older than the window: forgotten.
        assert!(addr.send(claim(1, None, 2, now)).await.unwrap().is_ok());
        // The remembered one expires with the window like any other.
        let later = now + window;
        assert!(addr.send(claim(1, None, 1, later)).await.unwrap().is_ok());
    }

    #[actix::test]
    async fn sixteen_concurrent_claims_of_one_reference_let_exactly_one_through() {
        let addr = start();
        let now = Instant::now();
        // Different bodies, same reference: the reference decides.
        let claims = (0..16u8).map(|i| addr.send(claim(1, Some("ref-1"), i, now)));
        let results: Vec<_> = join_all(claims)
            .await
            .into_iter()
            .map(|r| r.expect("mailbox"))
            .collect();
        let ok = results.iter().filter(|r| r.is_ok()).count();
        let in_progress = results
            .iter()
            .filter(|r| matches!(r, Err(Duplicate::InProgress)))
            .count();
        assert_eq!((ok, in_progress), (1, 15));
        assert_eq!(stats(&addr).await.in_progress, 1);
        assert_eq!(Duplicate::InProgress.code(), "DUPLICATE_IN_PROGRESS");
    }

    #[actix::test]
    async fn a_dropped_or_released_guard_frees_the_reference() {
        let addr = start();
        let now = Instant::now();
        let guard = addr.send(claim(1, Some("r"), 1, now)).await.unwrap();
        assert!(guard.is_ok());
        drop(guard);
        let guard = addr.send(claim(1, Some("r"), 1, now)).await.unwrap();
        let guard = guard.expect("free after drop");
        addr.send(Release { guard }).await.unwrap();
        let guard = addr.send(claim(1, Some("r"), 1, now)).await.unwrap();
        guard.expect("free after release").release();
        assert!(addr
            .send(claim(1, Some("r"), 1, now))
            .await
            .unwrap()
            .is_ok());
    }

    #[actix::test]
    async fn a_panicking_or_cancelled_handler_frees_the_reference() {
        let addr = start();
        let now = Instant::now();
        let guard = addr
            .send(claim(1, Some("r"), 1, now))
            .await
            .unwrap()
            .unwrap();
        let task = actix::spawn(async move {
            let _held = guard;
            panic!("handler bug");
        });
        assert!(task.await.is_err());
        let guard = addr
            .send(claim(1, Some("r"), 1, now))
            .await
            .unwrap()
            .expect("free after panic");

        // Cancelled: the handler future is dropped mid-way.
        let task = actix::spawn(async move {
            let _held = guard;
            std::future::pending::<()>().await;
        });
        actix::clock::sleep(Duration::from_millis(5)).await;
        assert!(addr
            .send(claim(1, Some("r"), 1, now))
            .await
            .unwrap()
            .is_err());
        task.abort();
        let _ = task.await;
        assert!(addr
            .send(claim(1, Some("r"), 1, now))
            .await
            .unwrap()
            .is_ok());
    }

    #[actix::test]
    async fn the_same_payload_within_the_window_is_a_duplicate_after_it_is_not() {
        let addr = start();
        let t = Instant::now();
        let guard = addr.send(claim(1, None, 7, t)).await.unwrap().unwrap();
        // The same body while the first is processed.
        assert_eq!(
            addr.send(claim(1, None, 7, t)).await.unwrap().err(),
            Some(Duplicate::Payload { document_id: None })
        );
        guard.complete(42, t);
        let t1 = t + Duration::from_secs(299);
        assert_eq!(
            addr.send(claim(1, None, 7, t1)).await.unwrap().err(),
            Some(Duplicate::Payload {
                document_id: Some(42)
            })
        );
        // Another body passes.
        assert!(addr.send(claim(1, None, 8, t1)).await.unwrap().is_ok());
        let t2 = t + Duration::from_secs(300);
        assert!(addr.send(claim(1, None, 7, t2)).await.unwrap().is_ok());
        assert_eq!(
            Duplicate::Payload { document_id: None }.code(),
            "DUPLICATE_PAYLOAD"
        );
    }

    #[actix::test]
    async fn complete_releases_the_reference_and_remembers_the_payload() {
        let addr = start();
        let t = Instant::now();
        let guard = addr.send(claim(1, Some("r"), 1, t)).await.unwrap().unwrap();
        addr.send(Complete {
            guard,
            document_id: 9,
            now: t,
        })
        .await
        .unwrap();
        // The reference is free here (the store answers DUPLICATE_REFERENCE).
        assert!(addr.send(claim(1, Some("r"), 2, t)).await.unwrap().is_ok());
        assert_eq!(
            addr.send(claim(1, Some("other"), 1, t))
                .await
                .unwrap()
                .err(),
            Some(Duplicate::Payload {
                document_id: Some(9)
            })
        );
    }

    #[actix::test]
    async fn companies_do_not_collide() {
        let addr = start();
        let t = Instant::now();
        let a = addr.send(claim(1, Some("r"), 1, t)).await.unwrap();
        let b = addr.send(claim(2, Some("r"), 1, t)).await.unwrap();
        assert!(a.is_ok() && b.is_ok());
        a.unwrap().complete(1, t);
        assert!(addr.send(claim(2, None, 1, t)).await.unwrap().is_err());
        b.unwrap().release();
        assert!(addr.send(claim(2, None, 1, t)).await.unwrap().is_ok());
        assert!(addr.send(claim(3, None, 1, t)).await.unwrap().is_ok());
    }

    #[actix::test]
    async fn old_payloads_are_pruned_with_a_scaled_window() {
        let addr = IdempotencyLock::new(&IdempotencyConfig {
            time_scale: 0.0001, // 30 ms
            ..IdempotencyConfig::default()
        })
        .start();
        for h in 0..10 {
            let guard = addr
                .send(claim(1, None, h, Instant::now()))
                .await
                .unwrap()
                .unwrap();
            guard.complete(u64::from(h), Instant::now());
        }
        assert_eq!(stats(&addr).await.payloads, 10);
        assert!(addr
            .send(claim(1, None, 3, Instant::now()))
            .await
            .unwrap()
            .is_err());
        actix::clock::sleep(Duration::from_millis(60)).await;
        assert_eq!(
            stats(&addr).await,
            IdempotencyStats {
                in_progress: 0,
                payloads: 0
            }
        );
        assert!(addr
            .send(claim(1, None, 3, Instant::now()))
            .await
            .unwrap()
            .is_ok());
        assert_eq!(addr.send(Ping).await.unwrap(), Pong);
    }

    #[actix::test]
    async fn claims_on_the_table_wait_for_the_window_read_at_start() {
        let table = ClaimTable::loading(&IdempotencyConfig::default());
        let now = Instant::now();
        let waiting = actix::spawn({
            let table = table.clone();
            async move { table.claim(claim(1, None, 1, now)).await.err() }
        });
        actix::clock::sleep(Duration::from_millis(5)).await;
        assert!(!waiting.is_finished(), "claimed before the window was read");
        table.remember(
            vec![RememberedPayload {
                company: 1,
                payload_hash: hash(1),
                document_id: 5,
                at: now,
            }],
            now,
        );
        assert_eq!(
            waiting.await.unwrap(),
            Some(Duplicate::Payload {
                document_id: Some(5)
            })
        );
    }

    #[actix::test]
    async fn the_table_and_the_actor_over_it_share_every_claim() {
        let table = ClaimTable::new(&IdempotencyConfig::default());
        let addr = IdempotencyLock::over(table.clone()).start();
        let t = Instant::now();
        let guard = table.claim(claim(1, Some("r"), 1, t)).await.unwrap();
        assert_eq!(
            addr.send(claim(1, Some("r"), 2, t)).await.unwrap().err(),
            Some(Duplicate::InProgress)
        );
        // Completed on the caller's thread: the actor knows the payload.
        guard.complete(3, t);
        assert_eq!(
            addr.send(claim(1, None, 1, t)).await.unwrap().err(),
            Some(Duplicate::Payload {
                document_id: Some(3)
            })
        );
        // A restarted actor over the same table: nothing forgotten.
        let again = IdempotencyLock::over(table.clone()).start();
        assert_eq!(
            again.send(GetIdempotencyStats).await.unwrap(),
            IdempotencyStats {
                in_progress: 0,
                payloads: 1
            }
        );
        let held = table.claim(claim(1, Some("r"), 4, t)).await.unwrap();
        assert_eq!(table.stats().in_progress, 1);
        drop(held);
        assert_eq!(table.stats().in_progress, 0);
    }
}
