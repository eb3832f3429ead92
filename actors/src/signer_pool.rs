//! The signer pool: a fixed set of OS threads (one per core by default) that
//! run CPU-heavy closures — building and signing documents — off the async
//! threads, behind a bounded queue.
//!
//! * Back-pressure: [`SignerPool::spawn`] refuses with [`PoolError::Busy`]
//!   when `queue_capacity` jobs already wait, instead of queueing without end.
//! * A panicking job is caught (`catch_unwind`) and reported to its caller as
//!   [`PoolError::Panicked`]; the worker thread carries on.
//! * A worker thread that dies anyway (a panic outside the job's boundary) is
//!   replaced at once by a guard that runs while it unwinds, and
//!   [`SignerPool::health`] tops the pool up again if that replacement could
//!   not be spawned.
//! * Dropping the last handle closes the pool: running jobs finish, waiting
//!   jobs are dropped and their callers get [`PoolError::Closed`].

use std::collections::VecDeque;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};

use tokio::sync::oneshot;

/// Why a job did not give its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PoolError {
    /// The bounded queue is full; try again later (HTTP 503 + `Retry-After`).
    #[error("the signer pool is busy (queue full)")]
    Busy,
    /// The job panicked; the panic was caught and the worker survived.
    #[error("the job panicked")]
    Panicked,
    /// The pool shut down before the job ran.
    #[error("the signer pool is closed")]
    Closed,
}

/// What `/readyz` and `/metrics` show about the pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct PoolHealth {
    /// Configured size.
    pub threads: usize,
    /// Worker threads alive now.
    pub alive: usize,
    /// Jobs waiting in the queue.
    pub queued: usize,
    pub queue_capacity: usize,
    /// Jobs running now.
    pub running: usize,
    pub completed: u64,
    /// Jobs that panicked (caught).
    pub panics: u64,
    /// Jobs refused with [`PoolError::Busy`].
    pub rejected: u64,
    /// Worker threads started to replace dead ones.
    pub restarts: u64,
}

impl PoolHealth {
    /// Every worker is alive.
    pub fn is_healthy(&self) -> bool {
        self.alive == self.threads
    }
}

/// A queued job: runs the caller's closure and sends its outcome back.
type Job = Box<dyn FnOnce() + Send>;

enum Task {
    Run(Job),
    /// Test hook: the worker panics outside the job boundary and dies.
    #[cfg(test)]
    Die,
}

struct Queue {
    tasks: VecDeque<Task>,
    closed: bool,
}

struct Shared {
    threads: usize,
    capacity: usize,
    queue: Mutex<Queue>,
    ready: Condvar,
    /// Serializes spawning so `alive` never exceeds `threads`.
    spawn_lock: Mutex<()>,
    alive: AtomicUsize,
    running: AtomicUsize,
    completed: AtomicU64,
    panics: AtomicU64,
    rejected: AtomicU64,
    restarts: AtomicU64,
    next_worker: AtomicUsize,
    closed: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Jobs never run under these locks, so poisoning can only come from a
    // bug in this file; the data stays consistent either way.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Shared {
    /// Starts workers until `threads` are alive. Returns the first spawn error.
    fn top_up(self: &Arc<Self>) -> std::io::Result<()> {
        let _guard = lock(&self.spawn_lock);
        while !self.closed.load(Ordering::Acquire)
            && self.alive.load(Ordering::Acquire) < self.threads
        {
            self.alive.fetch_add(1, Ordering::AcqRel);
            let n = self.next_worker.fetch_add(1, Ordering::Relaxed);
            let shared = Arc::clone(self);
            let spawned = std::thread::Builder::new()
                .name(format!("signer-{n}"))
                .spawn(move || worker_loop(shared));
            if let Err(e) = spawned {
                self.alive.fetch_sub(1, Ordering::AcqRel);
                return Err(e);
            }
        }
        Ok(())
    }

    fn next_task(&self) -> Option<Task> {
        let mut q = lock(&self.queue);
        loop {
            if q.closed {
                return None;
            }
            if let Some(t) = q.tasks.pop_front() {
                return Some(t);
            }
            q = self.ready.wait(q).unwrap_or_else(PoisonError::into_inner);
        }
    }

    fn close(&self) {
        self.closed.store(true, Ordering::Release);
        let dropped = {
            let mut q = lock(&self.queue);
            q.closed = true;
            std::mem::take(&mut q.tasks)
        };
        // Dropping the jobs drops their result senders: callers see Closed.
        drop(dropped);
        self.ready.notify_all();
    }
}

/// Runs while a worker thread ends, normally or by unwinding: keeps the
/// count right and, unless the pool is closing, starts a replacement.
struct WorkerGuard(Arc<Shared>);

impl Drop for WorkerGuard {
    fn drop(&mut self) {
        let shared = &self.0;
        shared.alive.fetch_sub(1, Ordering::AcqRel);
        if std::thread::panicking() {
            shared.running.fetch_sub(1, Ordering::AcqRel);
        }
        if !shared.closed.load(Ordering::Acquire) {
            tracing::error!("signer pool worker died; starting a replacement");
            shared.restarts.fetch_add(1, Ordering::Relaxed);
            if let Err(e) = shared.top_up() {
                tracing::error!(error = %e, "cannot start a signer pool worker");
            }
        }
    }
}

fn worker_loop(shared: Arc<Shared>) {
    let guard = WorkerGuard(shared);
    while let Some(task) = guard.0.next_task() {
        guard.0.running.fetch_add(1, Ordering::AcqRel);
        match task {
            Task::Run(job) => {
                // The job catches and counts its own panic; this boundary is
                // a second net (e.g. a panic while dropping a panic payload).
                if catch_unwind(AssertUnwindSafe(job)).is_err() {
                    guard.0.panics.fetch_add(1, Ordering::Relaxed);
                }
            }
            #[cfg(test)]
            Task::Die => {
                #[allow(clippy::panic)]
                {
                    panic!("signer worker killed by a test (expected)");
                }
            }
        }
        guard.0.running.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Closes the pool when the last [`SignerPool`] handle goes.
struct Owner(Arc<Shared>);

impl Drop for Owner {
    fn drop(&mut self) {
        self.0.close();
    }
}

/// Handle to the pool; cheap to clone, shared by every actor that needs it.
#[derive(Clone)]
pub struct SignerPool {
    shared: Arc<Shared>,
    _owner: Arc<Owner>,
}

impl std::fmt::Debug for SignerPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignerPool")
            .field("health", &self.health())
            .finish()
    }
}

/// The number of cores, at least 1 — the default pool size.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
}

impl SignerPool {
    /// Starts `threads` workers (at least 1) with room for `queue_capacity`
    /// waiting jobs (at least 1). Fails only if no thread can be spawned.
    pub fn new(threads: usize, queue_capacity: usize) -> std::io::Result<SignerPool> {
        let shared = Arc::new(Shared {
            threads: threads.max(1),
            capacity: queue_capacity.max(1),
            queue: Mutex::new(Queue {
                tasks: VecDeque::new(),
                closed: false,
            }),
            ready: Condvar::new(),
            spawn_lock: Mutex::new(()),
            alive: AtomicUsize::new(0),
            running: AtomicUsize::new(0),
            completed: AtomicU64::new(0),
            panics: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            restarts: AtomicU64::new(0),
            next_worker: AtomicUsize::new(0),
            closed: AtomicBool::new(false),
        });
        let pool = SignerPool {
            _owner: Arc::new(Owner(Arc::clone(&shared))),
            shared,
        };
        pool.shared.top_up()?;
        Ok(pool)
    }

    /// A pool with one thread per core.
    pub fn with_default_size(queue_capacity: usize) -> std::io::Result<SignerPool> {
        SignerPool::new(default_threads(), queue_capacity)
    }

    /// Queues `f` now (so `Busy` is immediate) and returns a handle that
    /// resolves to its result. The handle owns nothing borrowed: it can be
    /// returned from an actor handler as a future.
    pub fn spawn<T, F>(&self, f: F) -> Result<JobHandle<T>, PoolError>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let (tx, rx) = oneshot::channel::<Result<T, PoolError>>();
        self.spawn_then(f, move |outcome| {
            // The caller may have gone away; nothing to do then.
            let _ = tx.send(outcome);
        })?;
        Ok(JobHandle { rx })
    }

    /// Queues `f` now (so `Busy` is immediate); `deliver` gets its result
    /// on the worker. For a job that hands its result on itself (to
    /// another thread that answers the caller): no handle to wake.
    pub fn spawn_then<T, F>(
        &self,
        f: F,
        deliver: impl FnOnce(Result<T, PoolError>) + Send + 'static,
    ) -> Result<(), PoolError>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let shared = Arc::clone(&self.shared);
        let job: Job = Box::new(move || {
            let outcome = catch_unwind(AssertUnwindSafe(f));
            // Counted before the caller hears back, so health() agrees
            // with what the caller has seen.
            let counter = match outcome {
                Ok(_) => &shared.completed,
                Err(_) => &shared.panics,
            };
            counter.fetch_add(1, Ordering::Relaxed);
            deliver(outcome.map_err(|_| PoolError::Panicked));
        });
        {
            let mut q = lock(&self.shared.queue);
            if q.closed {
                return Err(PoolError::Closed);
            }
            if q.tasks.len() >= self.shared.capacity {
                self.shared.rejected.fetch_add(1, Ordering::Relaxed);
                return Err(PoolError::Busy);
            }
            q.tasks.push_back(Task::Run(job));
        }
        self.shared.ready.notify_one();
        Ok(())
    }

    /// Runs `f` on a worker and waits (asynchronously) for its result.
    pub async fn run<T, F>(&self, f: F) -> Result<T, PoolError>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        self.spawn(f)?.await
    }

    /// Counters for `/readyz` and `/metrics`. Also replaces workers that
    /// died and could not be replaced at the time.
    pub fn health(&self) -> PoolHealth {
        let s = &self.shared;
        if s.alive.load(Ordering::Acquire) < s.threads {
            if let Err(e) = s.top_up() {
                tracing::error!(error = %e, "cannot start a signer pool worker");
            }
        }
        PoolHealth {
            threads: s.threads,
            alive: s.alive.load(Ordering::Acquire),
            queued: lock(&s.queue).tasks.len(),
            queue_capacity: s.capacity,
            running: s.running.load(Ordering::Acquire),
            completed: s.completed.load(Ordering::Relaxed),
            panics: s.panics.load(Ordering::Relaxed),
            rejected: s.rejected.load(Ordering::Relaxed),
            restarts: s.restarts.load(Ordering::Relaxed),
        }
    }

    pub fn threads(&self) -> usize {
        self.shared.threads
    }

    /// Test hook: makes one worker die outside the job boundary.
    #[cfg(test)]
    fn kill_one_worker(&self) {
        lock(&self.shared.queue).tasks.push_back(Task::Die);
        self.shared.ready.notify_one();
    }
}

/// The result of a job queued with [`SignerPool::spawn`].
#[derive(Debug)]
pub struct JobHandle<T> {
    rx: oneshot::Receiver<Result<T, PoolError>>,
}

impl<T> Future for JobHandle<T> {
    type Output = Result<T, PoolError>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.rx)
            .poll(cx)
            .map(|r| r.unwrap_or(Err(PoolError::Closed)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::{Duration, Instant};

    async fn eventually(pool: &SignerPool, what: &str, cond: impl Fn(&PoolHealth) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let h = pool.health();
            if cond(&h) {
                return;
            }
            assert!(Instant::now() < deadline, "{what}: {h:?}");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    #[tokio::test]
    async fn results_come_back() {
        let pool = SignerPool::new(2, 16).unwrap();
        let got = pool.run(|| 6 * 7).await;
        assert_eq!(got, Ok(42));
        let name = pool
            .run(|| std::thread::current().name().map(str::to_string))
            .await
            .unwrap()
            .unwrap();
        assert!(name.starts_with("signer-"), "{name}");
        let h = pool.health();
        assert_eq!((h.threads, h.alive, h.completed), (2, 2, 2));
        assert!(h.is_healthy());
    }

    #[tokio::test]
    async fn a_panicking_job_is_reported_and_the_pool_keeps_its_size() {
        let pool = SignerPool::new(2, 16).unwrap();
        for _ in 0..4 {
            let r = pool
                .run(|| -> u32 {
                    #[allow(clippy::panic)]
                    {
                        panic!("job panic (expected by the test)")
                    }
                })
                .await;
            assert_eq!(r, Err(PoolError::Panicked));
        }
        // Both workers still serve: two jobs that wait for each other can
        // only finish if they run at the same time.
        let (a_tx, a_rx) = mpsc::channel::<()>();
        let (b_tx, b_rx) = mpsc::channel::<()>();
        let a = pool.spawn(move || {
            a_tx.send(()).unwrap();
            b_rx.recv_timeout(Duration::from_secs(5)).is_ok()
        });
        let b = pool.spawn(move || {
            b_tx.send(()).unwrap();
            a_rx.recv_timeout(Duration::from_secs(5)).is_ok()
        });
        assert_eq!(a.unwrap().await, Ok(true));
        assert_eq!(b.unwrap().await, Ok(true));
        let h = pool.health();
        assert_eq!((h.alive, h.panics, h.restarts), (2, 4, 0));
    }

    #[tokio::test]
    async fn a_dead_worker_is_replaced() {
        let pool = SignerPool::new(2, 16).unwrap();
        pool.kill_one_worker();
        eventually(&pool, "replacement started", |h| {
            h.restarts == 1 && h.alive == 2 && h.running == 0
        })
        .await;
        let results = futures_util::future::join_all((0..8u32).map(|i| pool.run(move || i * 2)))
            .await
            .into_iter()
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        assert_eq!(results, (0..8).map(|i| i * 2).collect::<Vec<_>>());
    }

    #[tokio::test]
    async fn busy_when_the_queue_is_full() {
        let pool = SignerPool::new(1, 2).unwrap();
        let (release_tx, release_rx) = mpsc::channel::<()>();
        let blocker = pool
            .spawn(move || release_rx.recv_timeout(Duration::from_secs(5)).is_ok())
            .unwrap();
        eventually(&pool, "blocker running", |h| h.running == 1).await;
        let q1 = pool.spawn(|| 1).unwrap();
        let q2 = pool.spawn(|| 2).unwrap();
        assert_eq!(pool.spawn(|| 3).err(), Some(PoolError::Busy));
        assert_eq!(pool.run(|| 3).await, Err(PoolError::Busy));
        let h = pool.health();
        assert_eq!((h.queued, h.rejected), (2, 2));
        release_tx.send(()).unwrap();
        assert_eq!(blocker.await, Ok(true));
        assert_eq!((q1.await, q2.await), (Ok(1), Ok(2)));
        assert_eq!(pool.run(|| 4).await, Ok(4), "room again once drained");
    }

    #[tokio::test]
    async fn waiting_jobs_see_closed_when_the_pool_goes() {
        let pool = SignerPool::new(1, 4).unwrap();
        let (release_tx, release_rx) = mpsc::channel::<()>();
        let running = pool
            .spawn(move || release_rx.recv_timeout(Duration::from_secs(5)).is_ok())
            .unwrap();
        eventually(&pool, "running", |h| h.running == 1).await;
        let waiting = pool.spawn(|| 1).unwrap();
        drop(pool);
        assert_eq!(waiting.await, Err(PoolError::Closed));
        release_tx.send(()).unwrap();
        assert_eq!(running.await, Ok(true), "the running job finishes");
    }

    #[tokio::test]
    async fn many_jobs_on_every_core_all_answer() {
        let hashes =
            |n: u64| (0..20_000u64).fold(n, |h, i| h.rotate_left(5) ^ i.wrapping_mul(h | 1));
        for threads in [1, default_threads().max(2)] {
            let pool = SignerPool::new(threads, 256).unwrap();
            let jobs = (0..200u64).map(|n| pool.run(move || hashes(n)));
            let got = futures_util::future::join_all(jobs).await;
            let want: Vec<_> = (0..200u64).map(|n| Ok(hashes(n))).collect();
            assert_eq!(got, want, "{threads} threads");
            assert_eq!(pool.health().completed, 200);
        }
    }
}
