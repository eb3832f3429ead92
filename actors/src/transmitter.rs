//! The transmitter: the one door to the tax authority (service-spec §8,
//! §3.2). It paces calls (at most `max_per_second` starts in any rolling
//! window and `max_in_flight` at once), serves waiting calls round-robin
//! across companies so one company's burst cannot starve another, and puts
//! a [`CircuitBreaker`] in front of the authority.
//!
//! The actor is generic over a [`Port`], the thing that actually talks to
//! the authority; the root crate implements it over its SOAP client. Ports
//! are usually not `Send` (awc), so [`Transmitter::start_in`] builds the
//! port inside the actor's arbiter from a `Send` factory.
//!
//! Breaker accounting: an answer of the port (`Ok`, business rejections
//! included) is a success; a retryable error (and a call that outlives
//! `call_timeout`) is a failure; a non-retryable error (a local signing
//! problem, a request the authority refuses as malformed) counts as
//! neither, and frees the half-open probe slot if it was the probe.
//!
//! While the breaker is OPEN every submission, queued ones included, fails
//! fast with [`TransmitFailure::BreakerOpen`]. In HALF_OPEN submissions
//! queue and go one at a time (each one a probe) until the breaker closes
//! or opens again. A submission whose caller went away (dropped future)
//! before its turn is skipped, not sent.
//!
//! An urgent submission (a sale at a till whose customer waits) has a lane
//! of its own, served before the companies' queues: it never waits behind a
//! backlog of background sends, only for the pacing and in-flight limits.
//!
//! A background submission (a look-up nobody waits for, such as the sweep
//! of events on a company's invoices) has the lowest lane: it starts only
//! when no other submission waits, and never takes the last start of the
//! rate window nor the last in-flight slot, so a transmission or a sale
//! that arrives next finds room at once.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt;
use std::time::{Duration, Instant};

use actix::dev::{MessageResponse, OneshotSender};
use actix::prelude::*;
use chrono::{DateTime, Utc};
use futures_util::future::LocalBoxFuture;
use serde::Serialize;
use tokio::sync::oneshot;

use crate::breaker::{
    BreakerConfig, BreakerSnapshot, BreakerState, CircuitBreaker, Permit, Transition,
};
use crate::{Ping, Pong};

/// What the transmitter drives: one call to the authority.
pub trait Port: Unpin + 'static {
    type Request: Send + Unpin + 'static;
    type Response: Send + 'static;
    type Error: Send + fmt::Debug + fmt::Display + 'static;

    /// Starts one call. The future runs on the transmitter's arbiter.
    fn call(
        &self,
        request: Self::Request,
    ) -> LocalBoxFuture<'static, Result<Self::Response, Self::Error>>;

    /// Whether a later attempt may succeed (counts against the breaker).
    fn is_retryable(error: &Self::Error) -> bool;

    /// The error reported for a call still unanswered after `after`
    /// (should be retryable).
    fn timed_out(after: Duration) -> Self::Error;
}

/// Pacing, timeout and breaker settings.
#[derive(Debug, Clone, PartialEq)]
pub struct TransmitterConfig {
    /// Most call starts within any `rate_window` (10).
    pub max_per_second: u32,
    /// The rolling window of `max_per_second` (1 s). Raise it slightly to
    /// keep a margin against transit jitter at the far end.
    pub rate_window: Duration,
    /// Most calls in flight (3).
    pub max_in_flight: u32,
    /// A call unanswered for this long fails as [`Port::timed_out`] (30 s).
    pub call_timeout: Duration,
    /// The breaker, already carrying its `time_scale`.
    pub breaker: BreakerConfig,
}

impl Default for TransmitterConfig {
    fn default() -> Self {
        TransmitterConfig {
            max_per_second: 10,
            rate_window: Duration::from_secs(1),
            max_in_flight: 3,
            call_timeout: Duration::from_secs(30),
            breaker: BreakerConfig::default(),
        }
    }
}

/// Why a submission produced no answer.
#[derive(Debug, thiserror::Error)]
pub enum TransmitFailure<E: fmt::Debug + fmt::Display> {
    /// The breaker is open: nothing was sent.
    #[error("the tax authority is unavailable (circuit breaker open); retry in {retry_in:?}")]
    BreakerOpen { retry_in: Duration },
    /// The call was made and failed.
    #[error("{error}")]
    Failed { error: E, retryable: bool },
    /// The transmitter stopped before the call was answered.
    #[error("the transmitter stopped before answering")]
    Stopped,
}

impl<E: fmt::Debug + fmt::Display> TransmitFailure<E> {
    /// Whether trying again later makes sense (state 5 rather than 4).
    pub fn is_retryable(&self) -> bool {
        match self {
            TransmitFailure::BreakerOpen { .. } | TransmitFailure::Stopped => true,
            TransmitFailure::Failed { retryable, .. } => *retryable,
        }
    }
}

/// What a submission yields.
pub type Outcome<P> = Result<<P as Port>::Response, TransmitFailure<<P as Port>::Error>>;

/// Which queue a submission waits in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lane {
    /// Ahead of everything (a sale whose customer waits).
    Urgent,
    /// The companies' queues, round robin (transmissions, look-ups).
    Normal,
    /// Only when nothing else waits, leaving room for the others.
    Background,
}

/// Send `request` on behalf of `company` (the fairness key).
pub struct Submit<P: Port> {
    pub company: u64,
    pub request: P::Request,
    pub lane: Lane,
}

impl<P: Port> Submit<P> {
    pub fn new(company: u64, request: P::Request) -> Self {
        Submit {
            company,
            request,
            lane: Lane::Normal,
        }
    }

    /// A submission a waiting customer depends on (a POS sale).
    pub fn urgent(company: u64, request: P::Request) -> Self {
        Submit {
            company,
            request,
            lane: Lane::Urgent,
        }
    }

    /// A submission nobody waits for, below every other.
    pub fn background(company: u64, request: P::Request) -> Self {
        Submit {
            company,
            request,
            lane: Lane::Background,
        }
    }
}

impl<P: Port> Clone for Submit<P>
where
    P::Request: Clone,
{
    fn clone(&self) -> Self {
        Submit {
            company: self.company,
            request: self.request.clone(),
            lane: self.lane,
        }
    }
}

impl<P: Port> fmt::Debug for Submit<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Submit")
            .field("company", &self.company)
            .finish_non_exhaustive()
    }
}

impl<P: Port> Message for Submit<P> {
    type Result = Outcome<P>;
}

/// The breaker as `/readyz` and `/metrics` show it.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "BreakerReport")]
pub struct GetBreakerState;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BreakerReport {
    #[serde(flatten)]
    pub snapshot: BreakerSnapshot,
    /// When the breaker turns HALF_OPEN and lets a probe through (OPEN only).
    pub next_probe_at: Option<DateTime<Utc>>,
}

/// Queue and traffic counters.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "TransmitterStats")]
pub struct GetStats;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TransmitterStats {
    /// Waiting submissions by company.
    pub queued: BTreeMap<u64, usize>,
    pub queued_total: usize,
    pub in_flight: usize,
    /// Calls started.
    pub started: u64,
    /// Calls answered by the port (business rejections included).
    pub sent: u64,
    /// Calls that ended in an error (timeouts included).
    pub failed: u64,
    /// Submissions failed fast because the breaker was open.
    pub rejected_open: u64,
    /// Submissions dropped because their caller went away before their turn.
    pub abandoned: u64,
    /// How long the authority took to answer the most recent calls
    /// (answers and errors alike, timeouts included), in milliseconds,
    /// oldest first: at most [`RECENT_LATENCIES`].
    pub recent_latency_ms: Vec<u64>,
}

/// How many calls' durations [`TransmitterStats::recent_latency_ms`] keeps.
pub const RECENT_LATENCIES: usize = 20;

struct Pending<P: Port> {
    request: P::Request,
    reply: oneshot::Sender<Outcome<P>>,
}

impl<P: Port> Pending<P> {
    fn abandoned(&self) -> bool {
        self.reply.is_closed()
    }

    fn answer(self, outcome: Outcome<P>) {
        // The caller may have gone away; the outcome is then dropped.
        let _ = self.reply.send(outcome);
    }
}

pub struct Transmitter<P: Port> {
    port: P,
    config: TransmitterConfig,
    breaker: CircuitBreaker,
    /// Waiting submissions per company, FIFO.
    queues: HashMap<u64, VecDeque<Pending<P>>>,
    /// Urgent submissions, FIFO, served before `queues`.
    urgent: VecDeque<Pending<P>>,
    /// Background submissions, FIFO, served after `queues` with room left.
    background: VecDeque<Pending<P>>,
    /// Companies with waiting submissions, in serving order.
    turns: VecDeque<u64>,
    /// Start instants within the rate window, oldest first.
    starts: VecDeque<Instant>,
    in_flight: usize,
    stats: TransmitterStats,
    /// Pending wake-up of the dispatcher (rate window).
    wake: Option<SpawnHandle>,
}

impl<P: Port> Transmitter<P> {
    pub fn new(port: P, config: TransmitterConfig) -> Self {
        Transmitter {
            port,
            breaker: CircuitBreaker::new(config.breaker.clone()),
            config,
            queues: HashMap::new(),
            urgent: VecDeque::new(),
            background: VecDeque::new(),
            turns: VecDeque::new(),
            starts: VecDeque::new(),
            in_flight: 0,
            stats: TransmitterStats::default(),
            wake: None,
        }
    }

    /// Starts a transmitter on `arbiter`, building its port there.
    pub fn start_in(
        arbiter: &ArbiterHandle,
        config: TransmitterConfig,
        factory: impl FnOnce() -> P + Send + 'static,
    ) -> Addr<Self> {
        Self::start_in_arbiter(arbiter, move |_| Transmitter::new(factory(), config))
    }

    fn max_in_flight(&self) -> usize {
        usize::try_from(self.config.max_in_flight.max(1)).unwrap_or(usize::MAX)
    }

    fn max_per_window(&self) -> usize {
        usize::try_from(self.config.max_per_second.max(1)).unwrap_or(usize::MAX)
    }

    /// Time left of an OPEN breaker, `None` when not open.
    fn open_for(&mut self, now: Instant) -> Option<Duration> {
        if self.breaker.state(now) != BreakerState::Open {
            return None;
        }
        match self.breaker.try_acquire(now) {
            Permit::Rejected { retry_in } => Some(retry_in),
            // Not reached: an OPEN breaker rejects without side effects.
            Permit::Allowed | Permit::Probe => None,
        }
    }

    fn enqueue(&mut self, company: u64, pending: Pending<P>) {
        let queue = self.queues.entry(company).or_default();
        if queue.is_empty() {
            self.turns.push_back(company);
        }
        queue.push_back(pending);
    }

    /// The next submission, round-robin across companies; callers that went
    /// away are skipped.
    fn pop_next(&mut self) -> Option<Pending<P>> {
        while let Some(pending) = self.urgent.pop_front() {
            if pending.abandoned() {
                self.stats.abandoned += 1;
                continue;
            }
            return Some(pending);
        }
        while let Some(company) = self.turns.pop_front() {
            let Some(queue) = self.queues.get_mut(&company) else {
                continue;
            };
            let mut found = None;
            while let Some(pending) = queue.pop_front() {
                if pending.abandoned() {
                    self.stats.abandoned += 1;
                    continue;
                }
                found = Some(pending);
                break;
            }
            if queue.is_empty() {
                self.queues.remove(&company);
            } else {
                self.turns.push_back(company);
            }
            if found.is_some() {
                return found;
            }
        }
        None
    }

    /// The next background submission, when starting it leaves one start
    /// of the window and one in-flight slot free (when there is more than one).
    fn pop_background(&mut self) -> Option<Pending<P>> {
        let reserve = |max: usize| if max > 1 { 1 } else { 0 };
        let window = self.max_per_window();
        let flight = self.max_in_flight();
        if self.starts.len() + 1 + reserve(window) > window
            || self.in_flight + 1 + reserve(flight) > flight
        {
            return None;
        }
        while let Some(pending) = self.background.pop_front() {
            if pending.abandoned() {
                self.stats.abandoned += 1;
                continue;
            }
            return Some(pending);
        }
        None
    }

    fn waiting(&self) -> bool {
        !(self.turns.is_empty() && self.urgent.is_empty() && self.background.is_empty())
    }

    /// Answers every waiting submission with `BreakerOpen`.
    fn fail_queued(&mut self, retry_in: Duration) {
        self.turns.clear();
        for pending in self.urgent.drain(..).chain(self.background.drain(..)) {
            self.stats.rejected_open += 1;
            pending.answer(Err(TransmitFailure::BreakerOpen { retry_in }));
        }
        for (_, queue) in self.queues.drain() {
            for pending in queue {
                self.stats.rejected_open += 1;
                pending.answer(Err(TransmitFailure::BreakerOpen { retry_in }));
            }
        }
    }

    fn wake_in(&mut self, delay: Duration, ctx: &mut Context<Self>) {
        if self.wake.is_none() {
            self.wake = Some(ctx.run_later(delay, |act, ctx| {
                act.wake = None;
                act.pump(ctx);
            }));
        }
    }

    /// Starts as many waiting calls as the limits and the breaker allow.
    fn pump(&mut self, ctx: &mut Context<Self>) {
        while self.waiting() && self.in_flight < self.max_in_flight() {
            let now = Instant::now();
            let window = self.config.rate_window;
            while let Some(first) = self.starts.front() {
                if now.saturating_duration_since(*first) >= window {
                    self.starts.pop_front();
                } else {
                    break;
                }
            }
            if self.starts.len() >= self.max_per_window() {
                let wait = self
                    .starts
                    .front()
                    .and_then(|first| first.checked_add(window))
                    .map_or(window, |free_at| free_at.saturating_duration_since(now));
                self.wake_in(wait, ctx);
                return;
            }
            let probe = match self.breaker.try_acquire(now) {
                Permit::Allowed => false,
                Permit::Probe => true,
                Permit::Rejected { retry_in } => {
                    if self.breaker.state(now) == BreakerState::Open {
                        self.fail_queued(retry_in);
                    }
                    // HALF_OPEN with its probe out: the probe's end pumps.
                    return;
                }
            };
            let Some(pending) = self.pop_next().or_else(|| self.pop_background()) else {
                if probe {
                    self.breaker.release_probe();
                }
                // Only background submissions wait, for room: a start
                // leaving the window or a call ending pumps again.
                if !self.background.is_empty() && self.in_flight == 0 {
                    let wait = self
                        .starts
                        .front()
                        .and_then(|first| first.checked_add(window))
                        .map_or(window, |free_at| free_at.saturating_duration_since(now));
                    self.wake_in(wait, ctx);
                }
                return;
            };
            self.start(pending, probe, now, ctx);
        }
    }

    fn start(&mut self, pending: Pending<P>, probe: bool, now: Instant, ctx: &mut Context<Self>) {
        let Pending { request, reply } = pending;
        self.in_flight += 1;
        self.stats.started += 1;
        self.starts.push_back(now);
        let started = now;
        let timeout = self.config.call_timeout;
        let call = self.port.call(request);
        let bounded = async move {
            match actix::clock::timeout(timeout, call).await {
                Ok(result) => result,
                Err(_) => Err(P::timed_out(timeout)),
            }
        };
        ctx.spawn(bounded.into_actor(self).map(move |result, act, ctx| {
            act.took(started.elapsed());
            act.finish(result, reply, probe, ctx)
        }));
    }

    /// Keeps a call's duration among the most recent ones.
    fn took(&mut self, elapsed: Duration) {
        let recent = &mut self.stats.recent_latency_ms;
        if recent.len() >= RECENT_LATENCIES {
            recent.remove(0);
        }
        recent.push(u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX));
    }

    fn finish(
        &mut self,
        result: Result<P::Response, P::Error>,
        reply: oneshot::Sender<Outcome<P>>,
        probe: bool,
        ctx: &mut Context<Self>,
    ) {
        self.in_flight = self.in_flight.saturating_sub(1);
        let now = Instant::now();
        let outcome = match result {
            Ok(response) => {
                self.stats.sent += 1;
                let transition = self.breaker.on_success(now);
                self.log_transition(transition, now);
                Ok(response)
            }
            Err(error) => {
                self.stats.failed += 1;
                let retryable = P::is_retryable(&error);
                if retryable {
                    let transition = self.breaker.on_failure(now);
                    self.log_transition(transition, now);
                    if let Some(retry_in) = self.open_for(now) {
                        self.fail_queued(retry_in);
                    }
                } else if probe {
                    self.breaker.release_probe();
                }
                tracing::debug!(%error, retryable, "authority call failed");
                Err(TransmitFailure::Failed { error, retryable })
            }
        };
        // The caller may have gone away; the outcome is then dropped.
        let _ = reply.send(outcome);
        self.pump(ctx);
    }

    fn log_transition(&mut self, transition: Option<Transition>, now: Instant) {
        let Some(t) = transition else { return };
        let snap = self.breaker.snapshot(now);
        match t.to {
            BreakerState::Open => tracing::warn!(
                from = t.from.as_str(),
                pause_ms = snap.pause_ms,
                "circuit breaker opened: sends to the authority paused"
            ),
            BreakerState::Closed | BreakerState::HalfOpen => tracing::info!(
                from = t.from.as_str(),
                to = t.to.as_str(),
                "circuit breaker changed state"
            ),
        }
    }

    fn report(&mut self, now: Instant) -> BreakerReport {
        let snapshot = self.breaker.snapshot(now);
        let next_probe_at = snapshot.retry_in_ms.and_then(|ms| {
            let delta = chrono::TimeDelta::try_milliseconds(i64::try_from(ms).ok()?)?;
            Utc::now().checked_add_signed(delta)
        });
        BreakerReport {
            snapshot,
            next_probe_at,
        }
    }
}

impl<P: Port> Actor for Transmitter<P> {
    type Context = Context<Self>;
}

impl<P: Port> Handler<Submit<P>> for Transmitter<P> {
    type Result = Admission<P>;

    fn handle(&mut self, msg: Submit<P>, ctx: &mut Context<Self>) -> Self::Result {
        if let Some(retry_in) = self.open_for(Instant::now()) {
            self.stats.rejected_open += 1;
            return Admission::Answered(Err(TransmitFailure::BreakerOpen { retry_in }));
        }
        let (reply, answer) = oneshot::channel();
        let pending = Pending {
            request: msg.request,
            reply,
        };
        match msg.lane {
            Lane::Urgent => self.urgent.push_back(pending),
            Lane::Normal => self.enqueue(msg.company, pending),
            Lane::Background => self.background.push_back(pending),
        }
        self.pump(ctx);
        Admission::Queued(answer)
    }
}

/// The answer of [`Submit`]. A queued submission's outcome is relayed to
/// the caller; if the caller drops its future first, the relay drops the
/// queue's receiver, so the transmitter sees the submission abandoned and
/// skips it.
pub enum Admission<P: Port> {
    Answered(Outcome<P>),
    Queued(oneshot::Receiver<Outcome<P>>),
}

impl<P: Port> MessageResponse<Transmitter<P>, Submit<P>> for Admission<P> {
    fn handle(self, _: &mut Context<Transmitter<P>>, caller: Option<OneshotSender<Outcome<P>>>) {
        let answer = match self {
            Admission::Answered(outcome) => {
                if let Some(caller) = caller {
                    let _ = caller.send(outcome);
                }
                return;
            }
            Admission::Queued(answer) => answer,
        };
        actix::spawn(async move {
            let Some(mut caller) = caller else {
                // Sent with `do_send`: nobody waits, but the call is made.
                let _ = answer.await;
                return;
            };
            tokio::select! {
                outcome = answer => {
                    let _ = caller.send(outcome.unwrap_or(Err(TransmitFailure::Stopped)));
                }
                () = caller.closed() => {}
            }
        });
    }
}

impl<P: Port> Handler<GetBreakerState> for Transmitter<P> {
    type Result = MessageResult<GetBreakerState>;

    fn handle(&mut self, _: GetBreakerState, _: &mut Context<Self>) -> Self::Result {
        MessageResult(self.report(Instant::now()))
    }
}

impl<P: Port> Handler<GetStats> for Transmitter<P> {
    type Result = MessageResult<GetStats>;

    fn handle(&mut self, _: GetStats, _: &mut Context<Self>) -> Self::Result {
        let mut stats = self.stats.clone();
        stats.queued = self
            .queues
            .iter()
            .map(|(company, queue)| (*company, queue.len()))
            .filter(|(_, n)| *n > 0)
            .collect();
        stats.queued_total =
            stats.queued.values().sum::<usize>() + self.urgent.len() + self.background.len();
        stats.in_flight = self.in_flight;
        MessageResult(stats)
    }
}

impl<P: Port> Handler<Ping> for Transmitter<P> {
    type Result = MessageResult<Ping>;

    fn handle(&mut self, _: Ping, _: &mut Context<Self>) -> Self::Result {
        MessageResult(Pong)
    }
}

#[cfg(test)]
mod tests;
