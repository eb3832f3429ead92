//! sled's snapshot, written again every few seconds while the store is
//! written to, so that opening after a crash replays only the log written
//! since (`Tree::checkpoint` in `vendor/sled`).
//!
//! Why: sled 0.34 wrote its snapshot only when it opened, and recovery reads
//! every byte of log after it, so the time to be ready after a `kill -9`
//! grew with everything written since the server started (2.1 s at a
//! million documents, ~500k of them since the start; ~0.2 s right after an
//! open). The checkpoint runs on a thread of its own, reads only the stable
//! part of the log, and gives up (the snapshot before stays) if the segment
//! cleaner reused a segment while it read.

use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use sled::Db;

use crate::group_commit::GroupCommit;

/// How often, at most, unless configured (`[store] checkpoint_ms`): the
/// log written in this long is what a crash leaves to replay (~15k
/// documents at full speed).
pub(crate) const EVERY: Duration = Duration::from_secs(10);

pub(crate) struct Checkpointer {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

impl Checkpointer {
    /// Starts the thread: every `every`, if anything was committed since the
    /// last time, a snapshot of `db`.
    pub(crate) fn start(
        db: Db,
        commits: Arc<GroupCommit>,
        every: Duration,
    ) -> std::io::Result<Self> {
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let thread = std::thread::Builder::new()
            .name("store-checkpoint".into())
            .spawn({
                let stop = stop.clone();
                move || run(&db, &commits, &stop, every)
            })?;
        Ok(Checkpointer {
            stop,
            thread: Some(thread),
        })
    }
}

fn run(db: &Db, commits: &GroupCommit, stop: &(Mutex<bool>, Condvar), every: Duration) {
    let (stopped, wake) = stop;
    let mut last = commits.flushed();
    let mut stopped = stopped.lock().unwrap_or_else(PoisonError::into_inner);
    loop {
        stopped = wake
            .wait_timeout(stopped, every)
            .unwrap_or_else(PoisonError::into_inner)
            .0;
        if *stopped {
            return;
        }
        let now = commits.flushed();
        if now == last {
            continue;
        }
        // A panic inside sled must not take the store down with it: the
        // snapshot before stays, and the next round tries again.
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| db.checkpoint())) {
            Ok(Ok(done)) => {
                tracing::debug!(?done, "sled checkpoint");
                last = now;
            }
            Ok(Err(e)) => tracing::warn!(error = %e, "sled checkpoint failed"),
            Err(_) => tracing::error!("sled checkpoint panicked"),
        }
    }
}

impl Drop for Checkpointer {
    /// Stops the thread and waits for it: it holds the database, whose
    /// data dir lock must be free once the store is dropped.
    fn drop(&mut self) {
        let (stopped, wake) = &*self.stop;
        *stopped.lock().unwrap_or_else(PoisonError::into_inner) = true;
        wake.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
