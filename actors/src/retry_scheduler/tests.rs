use super::*;
use std::sync::Mutex;

use actix::Arbiter;

/// Fails each job `fails` times (retry 20 ms later), then finishes it. Jobs
/// in `panicking` panic on their first runs instead: the first time while
/// building the run, the second time inside it. `stored` is what a
/// replacement scheduler reloads.
#[derive(Default)]
struct Scripted {
    fails: u32,
    panicking: Vec<u64>,
    stored: Vec<Schedule>,
    log: Mutex<Vec<(u64, i64)>>,
    after_panic: Mutex<Vec<(u64, u32)>>,
}

impl Scripted {
    fn runs(&self, id: u64) -> usize {
        self.log
            .lock()
            .unwrap()
            .iter()
            .filter(|(j, _)| *j == id)
            .count()
    }

    /// Waits until job `id` ran `n` times (a panic is slow when backtraces
    /// are captured, so no fixed sleep).
    async fn ran(&self, id: u64, n: usize) {
        for _ in 0..1000 {
            if self.runs(id) >= n {
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

impl JobRunner for Scripted {
    #[allow(clippy::panic)]
    fn run(&self, job_id: u64) -> BoxFuture<'static, JobOutcome> {
        let mut log = self.log.lock().unwrap();
        log.push((job_id, now_ms()));
        let runs = log.iter().filter(|(j, _)| *j == job_id).count() as u32;
        drop(log);
        if self.panicking.contains(&job_id) {
            match runs {
                1 => panic!("job {job_id} panics before running (expected by the test)"),
                2 => {
                    return Box::pin(
                        async move { panic!("job {job_id} panics mid-run (expected)") },
                    )
                }
                _ => {}
            }
        }
        let outcome = if runs <= self.fails {
            JobOutcome::RetryAt(now_ms() + 20)
        } else {
            JobOutcome::Done
        };
        Box::pin(async move { outcome })
    }

    fn after_panic(&self, job_id: u64, panics: u32) -> JobOutcome {
        self.after_panic.lock().unwrap().push((job_id, panics));
        JobOutcome::RetryAt(now_ms() + 20)
    }

    fn stored(&self) -> BoxFuture<'static, Vec<Schedule>> {
        let stored = self.stored.clone();
        Box::pin(async move { stored })
    }
}

/// Kills the scheduler itself (outside any job's boundary).
#[derive(Message)]
#[rtype(result = "()")]
struct Crash;

impl Handler<Crash> for RetryScheduler {
    type Result = ();
    #[allow(clippy::panic)]
    fn handle(&mut self, _: Crash, _: &mut Self::Context) {
        panic!("scheduler killed by a test (expected)");
    }
}

#[actix::test]
async fn jobs_run_when_due_and_retry_until_done() {
    let runner = Arc::new(Scripted {
        fails: 2,
        ..Default::default()
    });
    let addr = RetryScheduler::new(runner.clone(), 2, Duration::from_millis(5)).start();
    let t0 = now_ms();
    addr.send(Schedule {
        job_id: 1,
        run_at_ms: t0 + 50,
    })
    .await
    .unwrap();
    addr.send(Schedule {
        job_id: 2,
        run_at_ms: t0,
    })
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_millis(250)).await;
    let log = runner.log.lock().unwrap().clone();
    assert_eq!(runner.runs(1), 3, "two retries then done: {log:?}");
    assert_eq!(runner.runs(2), 3);
    let first_of_1 = log.iter().find(|(j, _)| *j == 1).unwrap().1;
    assert!(first_of_1 >= t0 + 50, "not before its time");
    let stats = addr.send(Stats).await.unwrap();
    assert_eq!(stats, SchedulerStats::default());
}

#[actix::test]
async fn rescheduling_moves_a_job() {
    let runner = Arc::new(Scripted::default());
    let addr = RetryScheduler::new(runner.clone(), 1, Duration::from_millis(5)).start();
    let t0 = now_ms();
    addr.send(Schedule {
        job_id: 7,
        run_at_ms: t0 + 10_000,
    })
    .await
    .unwrap();
    addr.send(Schedule {
        job_id: 7,
        run_at_ms: t0,
    })
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_millis(60)).await;
    assert_eq!(runner.runs(7), 1, "ran once, at the new time");
}

#[actix::test]
async fn a_panicking_job_is_retried_and_the_others_still_run() {
    let runner = Arc::new(Scripted {
        panicking: vec![1],
        ..Default::default()
    });
    // One at a time: the job after the panicking one runs only if the
    // scheduler survived and freed the slot.
    let addr = RetryScheduler::new(runner.clone(), 1, Duration::from_millis(5)).start();
    let t0 = now_ms();
    for (job_id, run_at_ms) in [(1, t0), (2, t0 + 1)] {
        addr.send(Schedule { job_id, run_at_ms }).await.unwrap();
    }
    runner.ran(2, 1).await;
    runner.ran(1, 3).await;
    assert_eq!(runner.runs(2), 1, "the next job ran");
    assert_eq!(runner.runs(1), 3, "two panics, each retried, then done");
    assert_eq!(
        *runner.after_panic.lock().unwrap(),
        vec![(1, 1), (1, 2)],
        "consecutive panics counted, so retries can back off"
    );
    assert_eq!(addr.send(Ping).await.ok(), Some(Pong), "still alive");
    assert_eq!(addr.send(Stats).await.unwrap(), SchedulerStats::default());
}

#[actix::test]
async fn a_replacement_scheduler_reloads_the_stored_jobs() {
    let t0 = now_ms();
    let runner = Arc::new(Scripted {
        stored: vec![Schedule {
            job_id: 5,
            run_at_ms: t0,
        }],
        ..Default::default()
    });
    let arbiter = Arbiter::new();
    let scheduler = RetryScheduler::supervised(
        arbiter.handle(),
        runner.clone(),
        4,
        Duration::from_millis(5),
    );
    tokio::time::sleep(Duration::from_millis(40)).await;
    assert_eq!(runner.runs(5), 0, "the first scheduler starts empty");

    let dead = scheduler.addr();
    assert!(dead.send(Crash).await.is_err());
    while dead.connected() {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    // The next use replaces it.
    scheduler.do_send(Schedule {
        job_id: 6,
        run_at_ms: now_ms(),
    });
    runner.ran(5, 1).await;
    runner.ran(6, 1).await;
    assert_eq!(scheduler.restarts(), 1);
    assert_eq!(runner.runs(5), 1, "the stored job was reloaded and ran");
    assert_eq!(runner.runs(6), 1, "the new one too");
    let h = scheduler.health(Duration::from_millis(500)).await;
    assert!(h.alive);
    assert_eq!(h.restarts, 1);
    arbiter.stop();
}
