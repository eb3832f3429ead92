//! A small, fixed set of threads for the async store's blocking work.
//! tokio's own blocking pool grows to hundreds of threads under load (one
//! per waiting call), and each thread keeps its allocator's heap: the
//! server's memory grew by half. Store calls are short and mostly in
//! memory, so a few threads serve them all.

use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::oneshot;

use crate::error::{StoreError, StoreResult};

type Task = Box<dyn FnOnce() + Send>;

pub(crate) struct StorePool {
    tasks: Mutex<mpsc::Sender<Task>>,
}

impl StorePool {
    /// Starts `size` threads; they end when the pool is dropped.
    pub(crate) fn start(size: usize) -> std::io::Result<Self> {
        let (tx, rx) = mpsc::channel::<Task>();
        let rx = Arc::new(Mutex::new(rx));
        for i in 0..size.max(1) {
            let rx = rx.clone();
            std::thread::Builder::new()
                .name(format!("store-{i}"))
                .spawn(move || loop {
                    let next = rx.lock().unwrap_or_else(PoisonError::into_inner).recv();
                    match next {
                        Ok(task) => task(),
                        Err(_) => return,
                    }
                })?;
        }
        Ok(StorePool {
            tasks: Mutex::new(tx),
        })
    }

    /// Hands `f` to one of the pool's threads without waiting for it;
    /// false when the pool is closing (`f` is dropped, not run).
    pub(crate) fn spawn(&self, f: impl FnOnce() + Send + 'static) -> bool {
        let task: Task = Box::new(move || {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        });
        self.tasks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .send(task)
            .is_ok()
    }

    /// Runs `f` on one of the pool's threads; a panic in `f` is an error
    /// for its caller, never a lost thread.
    pub(crate) async fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> StoreResult<T> + Send + 'static,
    ) -> StoreResult<T> {
        let (tx, rx) = oneshot::channel();
        let task: Task = Box::new(move || {
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
                .unwrap_or_else(|_| Err(StoreError::Durability("a store call panicked".into())));
            let _ = tx.send(result);
        });
        let sent = self
            .tasks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .send(task)
            .is_ok();
        if !sent {
            return Err(StoreError::Durability("the store is closing".into()));
        }
        rx.await
            .unwrap_or_else(|_| Err(StoreError::Durability("a store task was lost".into())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn runs_work_and_survives_a_panic() {
        let pool = StorePool::start(2).unwrap();
        assert_eq!(pool.run(|| Ok(21 * 2)).await.unwrap(), 42);
        let panicked: StoreResult<()> = pool.run(|| panic!("boom")).await;
        assert!(matches!(panicked, Err(StoreError::Durability(_))));
        // Both threads still serve.
        let (a, b) = tokio::join!(pool.run(|| Ok(1)), pool.run(|| Ok(2)));
        assert_eq!((a.unwrap(), b.unwrap()), (1, 2));
    }
}
