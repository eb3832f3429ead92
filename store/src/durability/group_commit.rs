//! Group commit: many writers, one fsync. A writer takes a ticket after its
//! write is in sled's memory and waits until a flush that *started after*
//! that ticket has finished. The first waiter with no flush running leads
//! one; the others wait for it. Concurrent documents then share fsyncs
//! instead of queueing for one each, and every caller still returns only
//! once its own write is on disk.

use std::sync::{Condvar, Mutex, PoisonError};

#[derive(Default)]
struct State {
    /// Tickets handed out (writes that asked to be made durable).
    issued: u64,
    /// Every ticket up to this one is on disk.
    flushed: u64,
    flushing: bool,
}

#[derive(Default)]
pub struct GroupCommit {
    state: Mutex<State>,
    done: Condvar,
}

impl GroupCommit {
    /// How many commits are on disk so far: it moves whenever anything
    /// was made durable through here.
    pub fn flushed(&self) -> u64 {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .flushed
    }

    /// Makes every write completed before this call durable, with `flush`
    /// (which must persist everything written before it starts).
    pub fn commit<E>(&self, flush: impl Fn() -> Result<(), E>) -> Result<(), E> {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        s.issued += 1;
        let ticket = s.issued;
        loop {
            if s.flushed >= ticket {
                return Ok(());
            }
            if !s.flushing {
                // Lead a flush covering every ticket issued so far.
                s.flushing = true;
                let target = s.issued;
                drop(s);
                let result = flush();
                s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
                s.flushing = false;
                if result.is_ok() {
                    s.flushed = s.flushed.max(target);
                }
                self.done.notify_all();
                result?;
                continue;
            }
            s = self.done.wait(s).unwrap_or_else(PoisonError::into_inner);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;

    #[test]
    fn concurrent_commits_share_flushes_and_all_return_durable() {
        let gc = Arc::new(GroupCommit::default());
        let flushes = Arc::new(AtomicU64::new(0));
        // A "disk" that records how many writes each flush covered.
        let written = Arc::new(AtomicU64::new(0));
        let on_disk = Arc::new(AtomicU64::new(0));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (gc, flushes, written, on_disk) = (
                    gc.clone(),
                    flushes.clone(),
                    written.clone(),
                    on_disk.clone(),
                );
                std::thread::spawn(move || {
                    for _ in 0..50 {
                        let mine = written.fetch_add(1, Ordering::SeqCst) + 1;
                        gc.commit(|| {
                            let snapshot = written.load(Ordering::SeqCst);
                            std::thread::sleep(std::time::Duration::from_micros(300));
                            flushes.fetch_add(1, Ordering::SeqCst);
                            on_disk.fetch_max(snapshot, Ordering::SeqCst);
                            Ok::<(), ()>(())
                        })
                        .unwrap();
                        assert!(
                            on_disk.load(Ordering::SeqCst) >= mine,
                            "returned before durable"
                        );
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let n = flushes.load(Ordering::SeqCst);
        assert!(n < 400, "400 commits shared flushes ({n} flushes)");
    }

    #[test]
    fn a_failed_flush_is_reported_and_retried_by_the_next_caller() {
        let gc = GroupCommit::default();
        assert!(gc.commit(|| Err::<(), &str>("disk full")).is_err());
        assert!(gc.commit(|| Ok::<(), &str>(())).is_ok());
    }
}
