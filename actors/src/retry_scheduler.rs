//! Retry scheduler: holds the due times of durable jobs (the jobs themselves
//! live in the store) and runs each when it is due, through a [`JobRunner`]
//! the root crate implements. The runner says what happens next: done, or
//! run again at a given time. At most `concurrency` jobs run at once; the
//! transmitter paces what reaches the authority.
//!
//! Each run sits behind its own panic boundary: a job that panics is
//! rescheduled as its runner's [`JobRunner::after_panic`] says, and the
//! others carry on. Under [`RetryScheduler::supervised`] a scheduler that
//! dies anyway is replaced and reloads its timetable from the stored jobs.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use actix::{
    Actor, ActorFutureExt, ArbiterHandle, AsyncContext, Context, Handler, Message, MessageResult,
    WrapFuture,
};
use futures_util::future::BoxFuture;

use crate::panic_boundary::guarded;
use crate::supervisor::Restartable;
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

    /// What comes next for a job whose run panicked `panics` times in a row.
    /// The panic was caught; the job is still stored as the run left it.
    fn after_panic(&self, job_id: u64, panics: u32) -> JobOutcome;

    /// Every stored job with its due time, for a replacement scheduler.
    fn stored(&self) -> BoxFuture<'static, Vec<Schedule>>;
}

/// Puts a job on the timetable (or moves it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Message)]
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
    due: HashMap<u64, i64>,
    running: HashSet<u64>,
    /// Consecutive panicked runs per job.
    panics: HashMap<u64, u32>,
    concurrency: usize,
    tick: Duration,
    /// Load the stored jobs before taking messages (a replacement).
    reload: bool,
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
            due: HashMap::new(),
            running: HashSet::new(),
            panics: HashMap::new(),
            concurrency: concurrency.max(1),
            tick,
            reload: false,
        }
    }

    /// The scheduler on `arbiter`, replaced if it dies. The first one starts
    /// empty (at start-up the caller schedules the stored jobs once it is
    /// ready for them); a replacement reloads every stored job, or those
    /// waiting when the old one died would only run after a restart.
    pub fn supervised(
        arbiter: ArbiterHandle,
        runner: Arc<dyn JobRunner>,
        concurrency: usize,
        tick: Duration,
    ) -> Arc<Restartable<RetryScheduler>> {
        let started = AtomicBool::new(false);
        Restartable::start("retry_scheduler", move || {
            let mut scheduler = RetryScheduler::new(runner.clone(), concurrency, tick);
            scheduler.reload = started.swap(true, Ordering::Relaxed);
            RetryScheduler::start_in_arbiter(&arbiter, move |_| scheduler)
        })
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
            let runner = self.runner.clone();
            let run = guarded(move || runner.run(id));
            ctx.spawn(run.into_actor(self).map(move |result, this, ctx| {
                this.running.remove(&id);
                let outcome = match result {
                    Ok(outcome) => {
                        this.panics.remove(&id);
                        outcome
                    }
                    Err(panic) => this.after_panic(id, &panic),
                };
                if let JobOutcome::RetryAt(at) = outcome {
                    this.put(id, at);
                }
                this.start_due(ctx);
            }));
        }
    }

    /// A run panicked: the job is not lost, its runner says when to retry.
    fn after_panic(&mut self, id: u64, panic: &str) -> JobOutcome {
        let panics = self.panics.entry(id).or_insert(0);
        *panics += 1;
        let panics = *panics;
        let outcome = self.runner.after_panic(id, panics);
        tracing::error!(job_id = id, panics, panic, next = ?outcome, "a job panicked");
        if outcome == JobOutcome::Done {
            self.panics.remove(&id);
        }
        outcome
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
        if self.reload {
            // `wait`: Schedule messages queue up behind the reload, so a
            // newer due time is not overwritten by the stored one.
            let runner = self.runner.clone();
            let stored = guarded(move || runner.stored());
            ctx.wait(stored.into_actor(self).map(|stored, this, ctx| {
                match stored {
                    Ok(jobs) => {
                        tracing::info!(jobs = jobs.len(), "scheduler reloaded the stored jobs");
                        for s in jobs {
                            this.put(s.job_id, s.run_at_ms);
                        }
                    }
                    Err(panic) => tracing::error!(panic, "reloading the stored jobs panicked"),
                }
                this.start_due(ctx);
            }));
        }
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
mod tests;
