//! The circuit breaker in front of the tax authority (service-spec §3.2), as
//! a pure state machine: the caller passes the current `Instant`, so tests
//! and the transmitter drive time themselves.
//!
//! | State | Trigger | Next |
//! |---|---|---|
//! | CLOSED | `failure_threshold` (5) consecutive retryable failures | OPEN |
//! | OPEN | the pause (60 s) elapsed | HALF_OPEN (one probe at a time) |
//! | HALF_OPEN | `success_threshold` (2) successes | CLOSED (pause growth reset) |
//! | HALF_OPEN | a failure | OPEN, pause grows 60 s → 120 s → 300 s (stays 300 s) |
//!
//! Report [`CircuitBreaker::on_success`] for every answer of the authority,
//! business rejections included, and [`CircuitBreaker::on_failure`] only for
//! retryable failures (timeouts, connection errors, 5xx, busy faults).

use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum BreakerState {
    Closed,
    Open,
    HalfOpen,
}

impl BreakerState {
    pub fn as_str(self) -> &'static str {
        match self {
            BreakerState::Closed => "CLOSED",
            BreakerState::Open => "OPEN",
            BreakerState::HalfOpen => "HALF_OPEN",
        }
    }
}

/// Thresholds and pauses; every duration is multiplied by `time_scale`.
#[derive(Debug, Clone, PartialEq)]
pub struct BreakerConfig {
    /// Consecutive failures that open a closed breaker (5).
    pub failure_threshold: u32,
    /// Successes in HALF_OPEN that close it (2).
    pub success_threshold: u32,
    /// Pause after the first opening, then after each failed probe; the last
    /// one repeats (60 s, 120 s, 300 s).
    pub pauses: Vec<Duration>,
    /// A probe that reports nothing for this long frees its slot (60 s).
    pub probe_timeout: Duration,
    /// Multiplies every duration (1.0 in production, small in tests).
    pub time_scale: f64,
}

impl Default for BreakerConfig {
    fn default() -> Self {
        BreakerConfig {
            failure_threshold: 5,
            success_threshold: 2,
            pauses: vec![
                Duration::from_secs(60),
                Duration::from_secs(120),
                Duration::from_secs(300),
            ],
            probe_timeout: Duration::from_secs(60),
            time_scale: 1.0,
        }
    }
}

impl BreakerConfig {
    /// `d` scaled by `time_scale` (a non-finite or negative scale counts as 1).
    pub fn scaled(&self, d: Duration) -> Duration {
        let scale = if self.time_scale.is_finite() && self.time_scale >= 0.0 {
            self.time_scale
        } else {
            1.0
        };
        Duration::try_from_secs_f64(d.as_secs_f64() * scale).unwrap_or(Duration::MAX)
    }

    /// The scaled pause of growth step `step` (the last one repeats).
    pub fn pause(&self, step: usize) -> Duration {
        let base = self
            .pauses
            .get(step)
            .or(self.pauses.last())
            .copied()
            .unwrap_or(Duration::from_secs(60));
        self.scaled(base)
    }

    fn last_step(&self) -> usize {
        self.pauses.len().saturating_sub(1)
    }
}

/// Whether a call may go to the authority now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Permit {
    /// CLOSED: go.
    Allowed,
    /// HALF_OPEN: go, this call is the probe; report its outcome.
    Probe,
    /// OPEN, or a probe is already out: wait (`retry_in` is zero when only
    /// the probe's outcome is awaited).
    Rejected { retry_in: Duration },
}

impl Permit {
    pub fn is_allowed(self) -> bool {
        !matches!(self, Permit::Rejected { .. })
    }
}

/// A change of state, for logs, metrics and events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transition {
    pub from: BreakerState,
    pub to: BreakerState,
}

/// What `/readyz` and metrics show.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BreakerSnapshot {
    pub state: BreakerState,
    pub consecutive_failures: u32,
    pub half_open_successes: u32,
    /// The pause of the current (or next) opening, in milliseconds.
    pub pause_ms: u64,
    /// Time left before HALF_OPEN, in milliseconds, when OPEN.
    pub retry_in_ms: Option<u64>,
}

#[derive(Debug, Clone)]
pub struct CircuitBreaker {
    config: BreakerConfig,
    state: BreakerState,
    consecutive_failures: u32,
    half_open_successes: u32,
    /// Index into `pauses` of the current/next opening.
    pause_step: usize,
    open_until: Option<Instant>,
    probe_since: Option<Instant>,
}

impl CircuitBreaker {
    pub fn new(config: BreakerConfig) -> Self {
        CircuitBreaker {
            config,
            state: BreakerState::Closed,
            consecutive_failures: 0,
            half_open_successes: 0,
            pause_step: 0,
            open_until: None,
            probe_since: None,
        }
    }

    pub fn config(&self) -> &BreakerConfig {
        &self.config
    }

    /// Moves OPEN to HALF_OPEN once the pause has elapsed.
    fn tick(&mut self, now: Instant) -> Option<Transition> {
        if self.state == BreakerState::Open && self.open_until.is_some_and(|until| now >= until) {
            self.state = BreakerState::HalfOpen;
            self.half_open_successes = 0;
            self.probe_since = None;
            self.open_until = None;
            return Some(Transition {
                from: BreakerState::Open,
                to: BreakerState::HalfOpen,
            });
        }
        None
    }

    /// The state at `now` (OPEN turns HALF_OPEN when its pause is over).
    pub fn state(&mut self, now: Instant) -> BreakerState {
        self.tick(now);
        self.state
    }

    /// Asks to send one call. In HALF_OPEN only one probe is out at a time.
    pub fn try_acquire(&mut self, now: Instant) -> Permit {
        self.tick(now);
        match self.state {
            BreakerState::Closed => Permit::Allowed,
            BreakerState::Open => Permit::Rejected {
                // No end: the pause overflowed the clock (absurd time_scale).
                retry_in: self
                    .open_until
                    .map_or(Duration::MAX, |u| u.saturating_duration_since(now)),
            },
            BreakerState::HalfOpen => {
                let probe_out = self.probe_since.is_some_and(|since| {
                    now.saturating_duration_since(since)
                        < self.config.scaled(self.config.probe_timeout)
                });
                if probe_out {
                    Permit::Rejected {
                        retry_in: Duration::ZERO,
                    }
                } else {
                    self.probe_since = Some(now);
                    Permit::Probe
                }
            }
        }
    }

    /// The authority answered (whatever the verdict).
    pub fn on_success(&mut self, now: Instant) -> Option<Transition> {
        let ticked = self.tick(now);
        match self.state {
            BreakerState::Closed => {
                self.consecutive_failures = 0;
                None
            }
            BreakerState::HalfOpen => {
                self.probe_since = None;
                self.half_open_successes += 1;
                if self.half_open_successes >= self.config.success_threshold.max(1) {
                    self.close();
                    Some(Transition {
                        from: BreakerState::HalfOpen,
                        to: BreakerState::Closed,
                    })
                } else {
                    ticked
                }
            }
            // A late answer to a call sent before the breaker opened.
            BreakerState::Open => None,
        }
    }

    /// A retryable failure (timeout, refused connection, 5xx, busy fault).
    pub fn on_failure(&mut self, now: Instant) -> Option<Transition> {
        self.tick(now);
        match self.state {
            BreakerState::Closed => {
                self.consecutive_failures += 1;
                if self.consecutive_failures >= self.config.failure_threshold.max(1) {
                    self.pause_step = 0;
                    self.open(now);
                    Some(Transition {
                        from: BreakerState::Closed,
                        to: BreakerState::Open,
                    })
                } else {
                    None
                }
            }
            BreakerState::HalfOpen => {
                self.pause_step = (self.pause_step + 1).min(self.config.last_step());
                self.open(now);
                Some(Transition {
                    from: BreakerState::HalfOpen,
                    to: BreakerState::Open,
                })
            }
            // A late failure of a call sent before the breaker opened.
            BreakerState::Open => None,
        }
    }

    /// A probe ended without a verdict on the authority (say, a local error):
    /// frees the probe slot without counting anything.
    pub fn release_probe(&mut self) {
        self.probe_since = None;
    }

    pub fn snapshot(&mut self, now: Instant) -> BreakerSnapshot {
        self.tick(now);
        BreakerSnapshot {
            state: self.state,
            consecutive_failures: self.consecutive_failures,
            half_open_successes: self.half_open_successes,
            pause_ms: u64::try_from(self.config.pause(self.pause_step).as_millis())
                .unwrap_or(u64::MAX),
            retry_in_ms: self
                .open_until
                .filter(|_| self.state == BreakerState::Open)
                .map(|u| {
                    u64::try_from(u.saturating_duration_since(now).as_millis()).unwrap_or(u64::MAX)
                }),
        }
    }

    /// Opens for the pause of the current step (`open_until` stays `None`
    /// only if that pause overflows the clock).
    fn open(&mut self, now: Instant) {
        self.state = BreakerState::Open;
        self.half_open_successes = 0;
        self.probe_since = None;
        self.open_until = now.checked_add(self.config.pause(self.pause_step));
    }

    fn close(&mut self) {
        self.state = BreakerState::Closed;
        self.consecutive_failures = 0;
        self.half_open_successes = 0;
        self.pause_step = 0;
        self.open_until = None;
        self.probe_since = None;
    }
}

impl Default for CircuitBreaker {
    fn default() -> Self {
        CircuitBreaker::new(BreakerConfig::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    fn open_it(b: &mut CircuitBreaker, t: Instant) -> Option<Transition> {
        let mut last = None;
        for _ in 0..5 {
            last = b.on_failure(t);
        }
        last
    }

    /// Fails the probe of a HALF_OPEN breaker at `t`.
    fn fail_probe(b: &mut CircuitBreaker, t: Instant) {
        assert_eq!(b.try_acquire(t), Permit::Probe);
        assert_eq!(
            b.on_failure(t),
            Some(Transition {
                from: BreakerState::HalfOpen,
                to: BreakerState::Open
            })
        );
    }

    #[test]
    fn starts_closed_and_allows() {
        let mut b = CircuitBreaker::default();
        let t = Instant::now();
        assert_eq!(b.state(t), BreakerState::Closed);
        assert_eq!(b.try_acquire(t), Permit::Allowed);
    }

    #[test]
    fn five_consecutive_failures_open_it() {
        let mut b = CircuitBreaker::default();
        let t = Instant::now();
        for _ in 0..4 {
            assert_eq!(b.on_failure(t), None);
            assert_eq!(b.state(t), BreakerState::Closed);
        }
        assert_eq!(
            b.on_failure(t),
            Some(Transition {
                from: BreakerState::Closed,
                to: BreakerState::Open
            })
        );
        assert_eq!(b.state(t), BreakerState::Open);
        assert_eq!(b.try_acquire(t), Permit::Rejected { retry_in: 60 * S });
    }

    #[test]
    fn a_success_resets_the_failure_count() {
        let mut b = CircuitBreaker::default();
        let t = Instant::now();
        for _ in 0..4 {
            b.on_failure(t);
        }
        assert_eq!(b.on_success(t), None);
        for _ in 0..4 {
            assert_eq!(b.on_failure(t), None);
        }
        assert_eq!(b.state(t), BreakerState::Closed);
        assert!(b.on_failure(t).is_some());
    }

    #[test]
    fn open_pauses_60_seconds_then_half_open_probes_one_at_a_time() {
        let mut b = CircuitBreaker::default();
        let t = Instant::now();
        open_it(&mut b, t);
        assert_eq!(b.try_acquire(t + 59 * S), Permit::Rejected { retry_in: S });
        assert_eq!(b.state(t + 60 * S), BreakerState::HalfOpen);
        assert_eq!(b.try_acquire(t + 60 * S), Permit::Probe);
        assert_eq!(
            b.try_acquire(t + 61 * S),
            Permit::Rejected {
                retry_in: Duration::ZERO
            }
        );
    }

    #[test]
    fn two_successes_close_it() {
        let mut b = CircuitBreaker::default();
        let t = Instant::now();
        open_it(&mut b, t);
        let t = t + 60 * S;
        assert_eq!(b.try_acquire(t), Permit::Probe);
        assert_eq!(b.on_success(t), None);
        assert_eq!(b.state(t), BreakerState::HalfOpen);
        assert_eq!(b.try_acquire(t), Permit::Probe);
        assert_eq!(
            b.on_success(t),
            Some(Transition {
                from: BreakerState::HalfOpen,
                to: BreakerState::Closed
            })
        );
        assert_eq!(b.try_acquire(t), Permit::Allowed);
        assert_eq!(b.snapshot(t).consecutive_failures, 0);
    }

    #[test]
    fn failed_probes_grow_the_pause_60_120_300_and_stay() {
        let mut b = CircuitBreaker::default();
        let mut t = Instant::now();
        open_it(&mut b, t);
        let mut seen = vec![b.snapshot(t).pause_ms];
        t += 60 * S;
        for expected in [120, 300, 300, 300] {
            fail_probe(&mut b, t);
            assert_eq!(
                b.try_acquire(t),
                Permit::Rejected {
                    retry_in: expected * S
                }
            );
            assert_eq!(b.state(t + (expected - 1) * S), BreakerState::Open);
            seen.push(b.snapshot(t).pause_ms);
            t += expected * S;
            assert_eq!(b.state(t), BreakerState::HalfOpen);
        }
        assert_eq!(seen, vec![60_000, 120_000, 300_000, 300_000, 300_000]);
    }

    #[test]
    fn closing_resets_the_growth() {
        let mut b = CircuitBreaker::default();
        let mut t = Instant::now();
        open_it(&mut b, t);
        t += 60 * S;
        fail_probe(&mut b, t); // now 120 s
        t += 120 * S;
        for _ in 0..2 {
            assert_eq!(b.try_acquire(t), Permit::Probe);
            b.on_success(t);
        }
        assert_eq!(b.state(t), BreakerState::Closed);
        open_it(&mut b, t);
        assert_eq!(b.try_acquire(t), Permit::Rejected { retry_in: 60 * S });
    }

    #[test]
    fn a_failure_after_one_probe_success_reopens() {
        let mut b = CircuitBreaker::default();
        let mut t = Instant::now();
        open_it(&mut b, t);
        t += 60 * S;
        assert_eq!(b.try_acquire(t), Permit::Probe);
        b.on_success(t);
        fail_probe(&mut b, t);
        assert_eq!(b.try_acquire(t), Permit::Rejected { retry_in: 120 * S });
    }

    #[test]
    fn late_results_while_open_are_ignored() {
        let mut b = CircuitBreaker::default();
        let t = Instant::now();
        open_it(&mut b, t);
        assert_eq!(b.on_failure(t + S), None);
        assert_eq!(b.on_success(t + S), None);
        assert_eq!(b.try_acquire(t + S), Permit::Rejected { retry_in: 59 * S });
    }

    #[test]
    fn a_silent_probe_frees_its_slot_after_the_probe_timeout() {
        let mut b = CircuitBreaker::default();
        let mut t = Instant::now();
        open_it(&mut b, t);
        t += 60 * S;
        assert_eq!(b.try_acquire(t), Permit::Probe);
        assert!(!b.try_acquire(t + 59 * S).is_allowed());
        assert_eq!(b.try_acquire(t + 60 * S), Permit::Probe);
        b.release_probe();
        assert_eq!(b.try_acquire(t + 60 * S), Permit::Probe);
    }

    #[test]
    fn time_scale_multiplies_every_pause() {
        let mut b = CircuitBreaker::new(BreakerConfig {
            time_scale: 0.01,
            ..BreakerConfig::default()
        });
        let mut t = Instant::now();
        open_it(&mut b, t);
        assert_eq!(
            b.try_acquire(t),
            Permit::Rejected {
                retry_in: Duration::from_millis(600)
            }
        );
        t += Duration::from_millis(600);
        fail_probe(&mut b, t);
        assert_eq!(
            b.try_acquire(t),
            Permit::Rejected {
                retry_in: Duration::from_millis(1200)
            }
        );
        t += Duration::from_millis(1200);
        fail_probe(&mut b, t);
        assert_eq!(
            b.try_acquire(t),
            Permit::Rejected {
                retry_in: Duration::from_secs(3)
            }
        );
    }

    #[test]
    fn thresholds_are_configurable() {
        let mut b = CircuitBreaker::new(BreakerConfig {
            failure_threshold: 2,
            success_threshold: 1,
            pauses: vec![10 * S],
            ..BreakerConfig::default()
        });
        let t = Instant::now();
        assert_eq!(b.on_failure(t), None);
        assert!(b.on_failure(t).is_some());
        assert_eq!(b.try_acquire(t + 10 * S), Permit::Probe);
        fail_probe_at(&mut b, t + 10 * S);
        assert_eq!(
            b.try_acquire(t + 10 * S),
            Permit::Rejected { retry_in: 10 * S }
        );
        assert_eq!(b.try_acquire(t + 20 * S), Permit::Probe);
        assert!(b.on_success(t + 20 * S).is_some());
        assert_eq!(b.state(t + 20 * S), BreakerState::Closed);
    }

    fn fail_probe_at(b: &mut CircuitBreaker, t: Instant) {
        assert!(b.on_failure(t).is_some());
    }

    #[test]
    fn odd_configurations_do_not_panic() {
        for cfg in [
            BreakerConfig {
                time_scale: f64::NAN,
                ..BreakerConfig::default()
            },
            BreakerConfig {
                time_scale: -1.0,
                ..BreakerConfig::default()
            },
            BreakerConfig {
                time_scale: f64::INFINITY,
                ..BreakerConfig::default()
            },
            BreakerConfig {
                time_scale: 1e300,
                ..BreakerConfig::default()
            },
            BreakerConfig {
                pauses: Vec::new(),
                failure_threshold: 0,
                success_threshold: 0,
                ..BreakerConfig::default()
            },
        ] {
            let mut b = CircuitBreaker::new(cfg);
            let t = Instant::now();
            for _ in 0..6 {
                b.on_failure(t);
            }
            let _ = b.try_acquire(t);
            let _ = b.snapshot(t);
            let _ = b.on_success(t + 1000 * S);
        }
        let odd = BreakerConfig {
            time_scale: f64::NAN,
            ..BreakerConfig::default()
        };
        assert_eq!(odd.pause(0), 60 * S);
        assert_eq!(
            BreakerConfig {
                pauses: Vec::new(),
                ..BreakerConfig::default()
            }
            .pause(3),
            60 * S
        );
    }

    #[test]
    fn state_names_match_the_spec() {
        assert_eq!(
            serde_json::to_string(&BreakerState::HalfOpen).unwrap(),
            "\"HALF_OPEN\""
        );
        assert_eq!(BreakerState::Closed.as_str(), "CLOSED");
        let mut b = CircuitBreaker::default();
        let t = Instant::now();
        open_it(&mut b, t);
        let snap = serde_json::to_value(b.snapshot(t + 10 * S)).unwrap();
        assert_eq!(snap["state"], "OPEN");
        assert_eq!(snap["retry_in_ms"], 50_000);
    }
}
