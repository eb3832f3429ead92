//! Retry scheduler: holds the due times of durable jobs (the jobs themselves
//! live in the store) and runs each when it is due, through a [`JobRunner`]
//! the root crate implements. The runner says what happens next: done, or
//! run again at a given time. At most `concurrency` jobs run at once; the
//! transmitter paces what reaches the authority.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use actix::{
    Actor, ActorFutureExt, AsyncContext, Context, Handler, Message, MessageResult, WrapFuture,
};
use futures_util::future::BoxFuture;

use crate::{Ping, Pong};

/// What became of a job run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobOutcome {
    /// Finished (accepted, rejected, dead-lettered): forget it.
    Done,
    /// Run again at this Unix time in milliseconds.
    RetryAt(i64),
}

/// Runs one job by id. Implementations load the job from the store, do the
/// work, persist the result, and say what comes next.
pub trait JobRunner: Send + Sync + 'static {
    fn run(&self, job_id: u64) -> BoxFuture<'static, JobOutcome>;
}

/// Puts a job on the timetable (or moves it).
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "()")]
pub struct Schedule {
    pub job_id: u64,
    pub run_at_ms: i64,
}

/// Jobs waiting and running, for `/metrics`.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "SchedulerStats")]
pub struct Stats;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct SchedulerStats {
    pub waiting: usize,
    pub running: usize,
}

pub struct RetryScheduler {
    runner: Arc<dyn JobRunner>,
    /// (run at, job id), earliest first.
    timetable: BinaryHeap<Reverse<(i64, u64)>>,
    /// Latest due time per job: a rescheduled job's older entries are stale.
    due: std::collections::HashMap<u64, i64>,
    running: HashSet<u64>,
    concurrency: usize,
    tick: Duration,
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

impl RetryScheduler {
    /// `tick` bounds how late a job may start (it also wakes on Schedule).
    pub fn new(runner: Arc<dyn JobRunner>, concurrency: usize, tick: Duration) -> Self {
        RetryScheduler {
            runner,
            timetable: BinaryHeap::new(),
            due: Default::default(),
            running: HashSet::new(),
            concurrency: concurrency.max(1),
            tick,
        }
    }

    fn start_due(&mut self, ctx: &mut Context<Self>) {
        let now = now_ms();
        while self.running.len() < self.concurrency {
            let Some(Reverse((at, id))) = self.timetable.peek().copied() else {
                break;
            };
            if at > now {
                break;
            }
            self.timetable.pop();
            if self.due.get(&id) != Some(&at) || self.running.contains(&id) {
                continue; // stale entry, or already running
            }
            self.due.remove(&id);
            self.running.insert(id);
            let fut = self.runner.run(id);
            ctx.spawn(fut.into_actor(self).map(move |outcome, this, ctx| {
                this.running.remove(&id);
                if let JobOutcome::RetryAt(at) = outcome {
                    this.put(id, at);
                }
                this.start_due(ctx);
            }));
        }
    }

    fn put(&mut self, id: u64, at: i64) {
        self.due.insert(id, at);
        self.timetable.push(Reverse((at, id)));
    }
}

impl Actor for RetryScheduler {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.run_interval(self.tick, |this, ctx| this.start_due(ctx));
    }
}

impl Handler<Schedule> for RetryScheduler {
    type Result = ();

    fn handle(&mut self, msg: Schedule, ctx: &mut Self::Context) {
        self.put(msg.job_id, msg.run_at_ms);
        self.start_due(ctx);
    }
}

impl Handler<Stats> for RetryScheduler {
    type Result = MessageResult<Stats>;

    fn handle(&mut self, _: Stats, _: &mut Self::Context) -> Self::Result {
        MessageResult(SchedulerStats {
            waiting: self.due.len(),
            running: self.running.len(),
        })
    }
}

impl Handler<Ping> for RetryScheduler {
    type Result = MessageResult<Ping>;

    fn handle(&mut self, _: Ping, _: &mut Self::Context) -> Self::Result {
        MessageResult(Pong)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::sync::Mutex;

    /// Fails each job `fails` times (retry 20 ms later), then finishes it.
    struct Flaky {
        fails: u32,
        log: Mutex<Vec<(u64, i64)>>,
    }

    impl JobRunner for Flaky {
        fn run(&self, job_id: u64) -> BoxFuture<'static, JobOutcome> {
            let mut log = self.log.lock().unwrap();
            log.push((job_id, now_ms()));
            let runs = log.iter().filter(|(j, _)| *j == job_id).count() as u32;
            let outcome = if runs <= self.fails {
                JobOutcome::RetryAt(now_ms() + 20)
            } else {
                JobOutcome::Done
            };
            Box::pin(async move { outcome })
        }
    }

    #[actix::test]
    async fn jobs_run_when_due_and_retry_until_done() {
        let runner = Arc::new(Flaky {
            fails: 2,
            log: Mutex::new(Vec::new()),
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
        let runs = |id| log.iter().filter(|(j, _)| *j == id).count();
        assert_eq!(runs(1), 3, "two retries then done: {log:?}");
        assert_eq!(runs(2), 3);
        let first_of_1 = log.iter().find(|(j, _)| *j == 1).unwrap().1;
        assert!(first_of_1 >= t0 + 50, "not before its time");
        let stats = addr.send(Stats).await.unwrap();
        assert_eq!(stats, SchedulerStats::default());
    }

    #[actix::test]
    async fn rescheduling_moves_a_job() {
        let runner = Arc::new(Flaky {
            fails: 0,
            log: Mutex::new(Vec::new()),
        });
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
        assert_eq!(
            runner.log.lock().unwrap().len(),
            1,
            "ran once, at the new time"
        );
    }
}
