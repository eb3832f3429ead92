//! The threads that do the XML work of uploads (bounded pre-scan, parse,
//! signature check, comparison with the authority's copy): off the HTTP
//! workers and the signer pool, at a lower CPU priority, behind a bounded
//! queue. A full queue refuses at once ([`PoolError::Busy`], answered 503
//! `BUSY`) instead of letting uploads pile up.
//!
//! Hand-written rather than tokio's blocking pool: that pool grows to
//! hundreds of threads and has no bounded queue to refuse from.

use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, PoisonError};

/// Nice value of the pool's threads: the HTTP workers and signing win the
/// CPU when both want it.
const NICE: i32 = 10;

type Job = Box<dyn FnOnce() + Send + 'static>;

/// Why a job did not run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PoolError {
    #[error("too many uploads are being checked; try again shortly")]
    Busy,
    #[error("the upload check stopped unexpectedly")]
    Failed,
}

/// A fixed set of threads and a bounded queue.
#[derive(Debug, Clone)]
pub struct XmlPool {
    jobs: SyncSender<Job>,
}

impl XmlPool {
    /// Starts `workers` threads (at least one) behind a queue of `queue`
    /// jobs waiting.
    pub fn start(workers: usize, queue: usize) -> std::io::Result<XmlPool> {
        let (jobs, receiver) = sync_channel::<Job>(queue);
        let receiver = Arc::new(Mutex::new(receiver));
        for i in 0..workers.max(1) {
            let receiver = receiver.clone();
            std::thread::Builder::new()
                .name(format!("xml-upload-{i}"))
                .spawn(move || work(&receiver))?;
        }
        Ok(XmlPool { jobs })
    }

    /// Runs `f` on the pool and waits for it without holding the caller's
    /// thread; [`PoolError::Busy`] at once when the queue is full.
    pub async fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, PoolError> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move || {
            // A panic ends the job (its caller hears Failed), not the thread.
            if let Ok(v) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
                let _ = tx.send(v);
            }
        });
        self.jobs.try_send(job).map_err(|e| match e {
            TrySendError::Full(_) => PoolError::Busy,
            TrySendError::Disconnected(_) => PoolError::Failed,
        })?;
        rx.await.map_err(|_| PoolError::Failed)
    }
}

fn work(receiver: &Mutex<Receiver<Job>>) {
    lower_priority();
    loop {
        let job = {
            let r = receiver.lock().unwrap_or_else(PoisonError::into_inner);
            r.recv()
        };
        match job {
            Ok(job) => job(),
            Err(_) => return,
        }
    }
}

/// On Linux a thread is a task of its own: `setpriority` on its id
/// renices this thread only.
fn lower_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: plain syscalls on the calling thread's own id; no memory is shared.
    unsafe {
        let tid = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, NICE);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use std::sync::mpsc::channel;
    use std::time::Duration;

    #[tokio::test]
    async fn jobs_run_off_the_caller_and_a_full_queue_is_refused() {
        let pool = XmlPool::start(1, 1).unwrap();
        assert_eq!(pool.run(|| 2 + 2).await, Ok(4));
        let name = pool
            .run(|| std::thread::current().name().map(str::to_string))
            .await
            .unwrap();
        assert_eq!(name.as_deref(), Some("xml-upload-0"));

        // One job holds the thread, one waits in the queue: a third is refused.
        let (release, hold) = channel::<()>();
        let (started_tx, started) = channel::<()>();
        let first = pool.run(move || {
            started_tx.send(()).unwrap();
            hold.recv_timeout(Duration::from_secs(10)).unwrap();
            1
        });
        tokio::pin!(first);
        assert!(futures_util::poll!(&mut first).is_pending());
        started.recv_timeout(Duration::from_secs(10)).unwrap();
        // The second waits in the queue (its first poll queues it)...
        let second = pool.run(|| 2);
        tokio::pin!(second);
        assert!(futures_util::poll!(&mut second).is_pending());
        // ...so a third finds the queue full.
        assert_eq!(pool.run(|| 3).await, Err(PoolError::Busy));
        release.send(()).unwrap();
        assert_eq!(first.await, Ok(1));
        assert_eq!(second.await, Ok(2));

        // A panicking job fails alone; the thread goes on.
        assert_eq!(
            pool.run(|| -> u8 { panic!("boom") }).await,
            Err(PoolError::Failed)
        );
        assert_eq!(pool.run(|| 5).await, Ok(5));
    }
}
