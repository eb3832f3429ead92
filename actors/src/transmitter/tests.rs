//! The transmitter driven with a fake port that records when each call
//! starts and ends.

use super::*;
use futures_util::future::join_all;
use std::cell::RefCell;
use std::rc::Rc;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Behave {
    /// Answers: accepted.
    Accept,
    /// Answers: a business rejection (still an answer).
    Reject,
    /// Fails, retryable (authority down).
    Down,
    /// Fails, not retryable (local problem).
    Fatal,
    /// Never answers.
    Hang,
}

#[derive(Debug)]
struct Req {
    id: usize,
    behave: Behave,
    latency: Duration,
}

fn req(id: usize, behave: Behave, latency_ms: u64) -> Req {
    Req {
        id,
        behave,
        latency: Duration::from_millis(latency_ms),
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Resp {
    Accepted(usize),
    Rejected(usize),
}

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
enum FakeError {
    #[error("down")]
    Down,
    #[error("fatal")]
    Fatal,
    #[error("timed out")]
    TimedOut,
}

#[derive(Debug, Default)]
struct Log {
    starts: Vec<(usize, Instant)>,
    ends: Vec<(usize, Instant)>,
    in_flight: usize,
    max_in_flight: usize,
}

/// Counts a call out of flight when its future ends or is dropped.
struct Flight(Rc<RefCell<Log>>, usize);

impl Drop for Flight {
    fn drop(&mut self) {
        let mut log = self.0.borrow_mut();
        log.in_flight -= 1;
        log.ends.push((self.1, Instant::now()));
    }
}

#[derive(Clone, Default)]
struct Fake {
    log: Rc<RefCell<Log>>,
}

impl Port for Fake {
    type Request = Req;
    type Response = Resp;
    type Error = FakeError;

    fn call(&self, r: Req) -> LocalBoxFuture<'static, Result<Resp, FakeError>> {
        {
            let mut log = self.log.borrow_mut();
            log.starts.push((r.id, Instant::now()));
            log.in_flight += 1;
            log.max_in_flight = log.max_in_flight.max(log.in_flight);
        }
        let flight = Flight(self.log.clone(), r.id);
        Box::pin(async move {
            let _flight = flight;
            if r.behave == Behave::Hang {
                std::future::pending::<()>().await;
            }
            actix::clock::sleep(r.latency).await;
            match r.behave {
                Behave::Accept => Ok(Resp::Accepted(r.id)),
                Behave::Reject => Ok(Resp::Rejected(r.id)),
                Behave::Down | Behave::Hang => Err(FakeError::Down),
                Behave::Fatal => Err(FakeError::Fatal),
            }
        })
    }

    fn is_retryable(e: &FakeError) -> bool {
        matches!(e, FakeError::Down | FakeError::TimedOut)
    }

    fn timed_out(_: Duration) -> FakeError {
        FakeError::TimedOut
    }
}

/// Generous pacing, 3 in flight, breaker pauses of 60/120/300 ms.
fn cfg() -> TransmitterConfig {
    TransmitterConfig {
        max_per_second: 1000,
        rate_window: Duration::from_secs(1),
        max_in_flight: 3,
        call_timeout: Duration::from_secs(5),
        breaker: BreakerConfig {
            time_scale: 0.001,
            ..BreakerConfig::default()
        },
    }
}

fn start(config: TransmitterConfig) -> (Addr<Transmitter<Fake>>, Fake) {
    let fake = Fake::default();
    (Transmitter::new(fake.clone(), config).start(), fake)
}

async fn submit(addr: &Addr<Transmitter<Fake>>, company: u64, r: Req) -> Outcome<Fake> {
    addr.send(Submit::new(company, r)).await.expect("mailbox")
}

async fn breaker(addr: &Addr<Transmitter<Fake>>) -> BreakerReport {
    addr.send(GetBreakerState).await.expect("mailbox")
}

/// Opens the breaker with `failure_threshold` (5) sequential failures.
async fn open(addr: &Addr<Transmitter<Fake>>) {
    for i in 0..5 {
        let r = submit(addr, 1, req(1000 + i, Behave::Down, 0)).await;
        assert!(matches!(
            r,
            Err(TransmitFailure::Failed {
                error: FakeError::Down,
                retryable: true
            })
        ));
    }
    assert_eq!(breaker(addr).await.snapshot.state, BreakerState::Open);
}

#[actix::test]
async fn pacing_never_exceeds_the_rate_nor_the_concurrency() {
    let (addr, fake) = start(TransmitterConfig {
        max_per_second: 10,
        max_in_flight: 3,
        ..cfg()
    });
    let t0 = Instant::now();
    // 3 in flight for 250 ms each would be 12/s: both limits bind.
    let calls = (0..25).map(|i| submit(&addr, i as u64 % 3, req(i, Behave::Accept, 250)));
    let results = join_all(calls).await;
    let elapsed = t0.elapsed();
    assert!(results.iter().all(Result::is_ok));

    let (max_in_flight, mut starts) = {
        let log = fake.log.borrow();
        let starts: Vec<Instant> = log.starts.iter().map(|(_, t)| *t).collect();
        (log.max_in_flight, starts)
    };
    assert_eq!(max_in_flight, 3);
    starts.sort();
    assert_eq!(starts.len(), 25);
    // The transmitter paces by its own clock; the fake stamps each start a
    // moment later, with scheduling jitter, hence a few ms of tolerance.
    for (i, later) in starts.iter().enumerate().skip(10) {
        let gap = later.duration_since(starts[i - 10]);
        assert!(
            gap >= Duration::from_millis(995),
            "11 starts within {gap:?}"
        );
    }
    // And it does not dawdle: 25 starts at 10/s is a little over 2 s.
    assert!(elapsed < Duration::from_millis(3500), "{elapsed:?}");

    let stats = addr.send(GetStats).await.expect("mailbox");
    assert_eq!((stats.started, stats.sent, stats.failed), (25, 25, 0));
    assert_eq!((stats.in_flight, stats.queued_total), (0, 0));
}

#[actix::test]
async fn companies_are_served_round_robin() {
    let (addr, fake) = start(TransmitterConfig {
        max_in_flight: 1,
        ..cfg()
    });
    // Company 1 submits 30, then company 2 submits 3.
    let a = (0..30).map(|i| submit(&addr, 1, req(i, Behave::Accept, 5)));
    let b = (100..103).map(|i| submit(&addr, 2, req(i, Behave::Accept, 5)));
    let results = join_all(a.chain(b)).await;
    assert!(results.iter().all(Result::is_ok));

    let log = fake.log.borrow();
    let order: Vec<usize> = log.ends.iter().map(|(id, _)| *id).collect();
    let last_b = order.iter().rposition(|id| *id >= 100).expect("b ran");
    let a_before = order[..last_b].iter().filter(|id| **id < 100).count();
    assert!(
        a_before <= 10,
        "company 2 waited for {a_before} of company 1's: {order:?}"
    );
    // Each company's own order is kept.
    let a_order: Vec<usize> = order.iter().copied().filter(|id| *id < 100).collect();
    assert_eq!(a_order, (0..30).collect::<Vec<_>>());
}

#[actix::test]
async fn an_urgent_submission_goes_ahead_of_the_backlog() {
    let (addr, fake) = start(TransmitterConfig {
        max_in_flight: 1,
        ..cfg()
    });
    // A backlog of 20 background sends, then one sale at a till.
    let backlog = (0..20).map(|i| submit(&addr, 1, req(i, Behave::Accept, 5)));
    let sale = async {
        addr.send(Submit::urgent(2, req(500, Behave::Accept, 5)))
            .await
            .expect("mailbox")
    };
    let (results, sale) = futures_util::join!(join_all(backlog), sale);
    assert!(results.iter().all(Result::is_ok));
    assert_eq!(sale.expect("sold"), Resp::Accepted(500));

    let log = fake.log.borrow();
    let order: Vec<usize> = log.starts.iter().map(|(id, _)| *id).collect();
    let at = order.iter().position(|id| *id == 500).expect("sale sent");
    // The one in flight when it arrived may finish first; no other.
    assert!(
        at <= 1,
        "the sale waited for {at} background sends: {order:?}"
    );
}

#[actix::test]
async fn a_background_submission_waits_for_every_other_and_leaves_a_slot_free() {
    let (addr, fake) = start(TransmitterConfig {
        max_in_flight: 2,
        ..cfg()
    });
    // Submitted first, while the normal lane is busy.
    let background = async {
        addr.send(Submit::background(9, req(900, Behave::Accept, 5)))
            .await
            .expect("mailbox")
    };
    let normal = (0..6).map(|i| submit(&addr, 1 + i as u64 % 2, req(i, Behave::Accept, 10)));
    let (results, background) = futures_util::join!(join_all(normal), background);
    assert!(results.iter().all(Result::is_ok));
    assert_eq!(background.expect("answered"), Resp::Accepted(900));

    let log = fake.log.borrow();
    let started = log
        .starts
        .iter()
        .find(|(id, _)| *id == 900)
        .expect("sent")
        .1;
    // It started last, once nothing else was in flight: a call arriving
    // then found the other slot free.
    for (id, end) in log.ends.iter().filter(|(id, _)| *id != 900) {
        assert!(*end <= started, "call {id} was still in flight");
    }
}

#[actix::test]
async fn five_retryable_failures_open_it_and_later_submissions_fail_fast() {
    let (addr, fake) = start(TransmitterConfig {
        breaker: BreakerConfig::default(),
        ..cfg()
    });
    open(&addr).await;

    let t = Instant::now();
    let r = submit(&addr, 1, req(6, Behave::Accept, 0)).await;
    let Err(TransmitFailure::BreakerOpen { retry_in }) = r else {
        panic!("expected BreakerOpen, got {r:?}");
    };
    assert!(retry_in > Duration::from_secs(59) && retry_in <= Duration::from_secs(60));
    assert!(t.elapsed() < Duration::from_millis(50));
    assert_eq!(fake.log.borrow().starts.len(), 5, "nothing sent while open");

    let report = breaker(&addr).await;
    assert_eq!(report.snapshot.consecutive_failures, 5);
    assert_eq!(report.snapshot.pause_ms, 60_000);
    let next = report.next_probe_at.expect("next probe");
    let in_s = (next - Utc::now()).num_seconds();
    assert!((58..=60).contains(&in_s), "{in_s}");
    let json = serde_json::to_value(&report).expect("json");
    assert_eq!(json["state"], "OPEN");
    assert!(json["next_probe_at"].is_string());
    assert_eq!(addr.send(GetStats).await.expect("mailbox").rejected_open, 1);
}

#[actix::test]
async fn queued_submissions_fail_fast_when_it_opens() {
    let (addr, fake) = start(TransmitterConfig {
        max_in_flight: 1,
        breaker: BreakerConfig::default(),
        ..cfg()
    });
    let calls = (0..8).map(|i| submit(&addr, i as u64 % 2, req(i, Behave::Down, 10)));
    let results = join_all(calls).await;
    let failed = results
        .iter()
        .filter(|r| matches!(r, Err(TransmitFailure::Failed { .. })))
        .count();
    let open = results
        .iter()
        .filter(|r| matches!(r, Err(TransmitFailure::BreakerOpen { .. })))
        .count();
    assert_eq!((failed, open), (5, 3));
    assert_eq!(fake.log.borrow().starts.len(), 5);
    assert!(results
        .iter()
        .all(|r| r.as_ref().err().is_some_and(TransmitFailure::is_retryable)));
}

#[actix::test]
async fn half_open_probes_one_at_a_time_and_two_successes_close_it() {
    let (addr, fake) = start(cfg());
    open(&addr).await;
    actix::clock::sleep(Duration::from_millis(70)).await;
    assert_eq!(breaker(&addr).await.snapshot.state, BreakerState::HalfOpen);

    fake.log.borrow_mut().max_in_flight = 0;
    let calls = (0..3).map(|i| submit(&addr, i, req(i as usize, Behave::Accept, 30)));
    let results = join_all(calls).await;
    assert!(results.iter().all(Result::is_ok), "{results:?}");

    {
        let log = fake.log.borrow();
        // The probes went alone: the second started after the first ended.
        assert_eq!(log.max_in_flight, 1);
        let start_of = |id| log.starts.iter().find(|(i, _)| *i == id).map(|(_, t)| *t);
        let end_of = |id| log.ends.iter().find(|(i, _)| *i == id).map(|(_, t)| *t);
        assert!(start_of(1).expect("1") >= end_of(0).expect("0"));
    }
    let report = breaker(&addr).await;
    assert_eq!(report.snapshot.state, BreakerState::Closed);
    assert_eq!(report.snapshot.consecutive_failures, 0);
    assert_eq!(report.next_probe_at, None);
}

#[actix::test]
async fn failed_probes_grow_the_pause_60_120_300() {
    let (addr, _fake) = start(cfg());
    open(&addr).await;
    let mut pauses = vec![breaker(&addr).await.snapshot.pause_ms];
    for wait in [60, 120, 300, 300] {
        actix::clock::sleep(Duration::from_millis(wait + 10)).await;
        let r = submit(&addr, 1, req(1, Behave::Down, 0)).await;
        assert!(matches!(r, Err(TransmitFailure::Failed { .. })), "{r:?}");
        let report = breaker(&addr).await;
        assert_eq!(report.snapshot.state, BreakerState::Open);
        pauses.push(report.snapshot.pause_ms);
        // Right after reopening, submissions fail fast again.
        let r = submit(&addr, 1, req(2, Behave::Accept, 0)).await;
        assert!(
            matches!(r, Err(TransmitFailure::BreakerOpen { .. })),
            "{r:?}"
        );
    }
    assert_eq!(pauses, vec![60, 120, 300, 300, 300]);
}

#[actix::test]
async fn business_rejections_and_local_errors_do_not_count() {
    let (addr, _fake) = start(cfg());
    for i in 0..4 {
        assert!(submit(&addr, 1, req(i, Behave::Down, 0)).await.is_err());
    }
    let r = submit(&addr, 1, req(9, Behave::Reject, 0)).await;
    assert_eq!(r.ok(), Some(Resp::Rejected(9)));
    assert_eq!(breaker(&addr).await.snapshot.consecutive_failures, 0);
    for i in 0..4 {
        assert!(submit(&addr, 1, req(i, Behave::Down, 0)).await.is_err());
    }
    for i in 0..10 {
        let r = submit(&addr, 1, req(i, Behave::Fatal, 0)).await;
        assert!(matches!(
            r,
            Err(TransmitFailure::Failed {
                error: FakeError::Fatal,
                retryable: false
            })
        ));
    }
    let report = breaker(&addr).await;
    assert_eq!(report.snapshot.state, BreakerState::Closed);
    assert_eq!(report.snapshot.consecutive_failures, 4);
}

#[actix::test]
async fn a_call_that_never_answers_times_out_as_a_retryable_failure() {
    let (addr, fake) = start(TransmitterConfig {
        call_timeout: Duration::from_millis(50),
        ..cfg()
    });
    let t = Instant::now();
    let calls = (0..5).map(|i| submit(&addr, 1, req(i, Behave::Hang, 0)));
    let results = join_all(calls).await;
    assert!(t.elapsed() < Duration::from_secs(1));
    assert!(results.iter().all(|r| matches!(
        r,
        Err(TransmitFailure::Failed {
            error: FakeError::TimedOut,
            retryable: true
        })
    )));
    assert_eq!(
        fake.log.borrow().in_flight,
        0,
        "the hung futures were dropped"
    );
    assert_eq!(breaker(&addr).await.snapshot.state, BreakerState::Open);
    let stats = addr.send(GetStats).await.expect("mailbox");
    assert_eq!((stats.in_flight, stats.failed), (0, 5));
}

#[actix::test]
async fn stats_show_queues_per_company_and_abandoned_calls_are_skipped() {
    let (addr, fake) = start(TransmitterConfig {
        max_in_flight: 1,
        ..cfg()
    });
    assert_eq!(addr.send(Ping).await.expect("mailbox"), Pong);
    let first = actix::spawn(submit_owned(addr.clone(), 1, req(0, Behave::Accept, 100)));
    let a = actix::spawn(submit_owned(addr.clone(), 1, req(1, Behave::Accept, 0)));
    let b = actix::spawn(submit_owned(addr.clone(), 2, req(2, Behave::Accept, 0)));
    let gone = actix::spawn(submit_owned(addr.clone(), 2, req(3, Behave::Accept, 0)));
    actix::clock::sleep(Duration::from_millis(30)).await;

    let stats = addr.send(GetStats).await.expect("mailbox");
    assert_eq!(stats.in_flight, 1);
    assert_eq!(stats.queued, BTreeMap::from([(1, 1), (2, 2)]));
    assert_eq!(stats.queued_total, 3);

    gone.abort();
    assert!(first.await.expect("join").is_ok());
    assert!(a.await.expect("join").is_ok());
    assert!(b.await.expect("join").is_ok());
    let stats = addr.send(GetStats).await.expect("mailbox");
    assert_eq!((stats.sent, stats.abandoned, stats.queued_total), (3, 1, 0));
    let sent: Vec<usize> = fake.log.borrow().starts.iter().map(|(i, _)| *i).collect();
    assert_eq!(sent, vec![0, 1, 2]);
}

async fn submit_owned(addr: Addr<Transmitter<Fake>>, company: u64, r: Req) -> Outcome<Fake> {
    submit(&addr, company, r).await
}

#[actix::test]
async fn a_transmitter_in_another_arbiter_builds_its_port_there() {
    let arbiter = Arbiter::new();
    let addr = Transmitter::start_in(&arbiter.handle(), cfg(), Fake::default);
    let r = addr
        .send(Submit::new(7, req(1, Behave::Accept, 0)))
        .await
        .expect("mailbox");
    assert_eq!(r.ok(), Some(Resp::Accepted(1)));
    assert_eq!(addr.send(Ping).await.expect("mailbox"), Pong);
    arbiter.stop();
}
