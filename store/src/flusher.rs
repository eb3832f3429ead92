//! Durability for async callers without a blocked thread each: a request
//! for durability is a message to one flusher thread, which drains every
//! request waiting, makes them all durable with one group commit, and then
//! answers each. The caller awaits the answer.

use std::future::Future;
use std::pin::Pin;
use std::sync::mpsc;
use std::sync::{Mutex, PoisonError};
use std::thread::JoinHandle;

use tokio::sync::oneshot;

use crate::error::{StoreError, StoreResult};

/// What a caller needs durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// Only the file log (files staged before their sled record).
    Files,
    /// Everything: the file log, then sled.
    All,
}

type Waiter = (Scope, oneshot::Sender<Result<(), String>>);

/// Resolves once every write made before it was asked for is on disk.
pub type Durable = Pin<Box<dyn Future<Output = StoreResult<()>> + Send>>;

pub(crate) struct Flusher {
    requests: Mutex<Option<mpsc::Sender<Waiter>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Flusher {
    /// Starts the thread; `commit` makes every write completed before the
    /// call durable.
    pub(crate) fn start(
        commit: impl Fn(Scope) -> StoreResult<()> + Send + 'static,
    ) -> std::io::Result<Self> {
        let (tx, rx) = mpsc::channel::<Waiter>();
        let thread = std::thread::Builder::new()
            .name("store-flush".into())
            .spawn(move || {
                while let Ok(first) = rx.recv() {
                    let mut batch = vec![first];
                    batch.extend(rx.try_iter());
                    let scope = if batch.iter().any(|(s, _)| *s == Scope::All) {
                        Scope::All
                    } else {
                        Scope::Files
                    };
                    let result = commit(scope).map_err(|e| e.to_string());
                    for (_, waiter) in batch {
                        let _ = waiter.send(result.clone());
                    }
                }
            })?;
        Ok(Flusher {
            requests: Mutex::new(Some(tx)),
            thread: Mutex::new(Some(thread)),
        })
    }

    pub(crate) fn durable(&self, scope: Scope) -> Durable {
        let (tx, rx) = oneshot::channel();
        let tx = (scope, tx);
        let sent = self
            .requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .is_some_and(|r| r.send(tx).is_ok());
        Box::pin(async move {
            if !sent {
                return Err(StoreError::Durability("the store is closing".into()));
            }
            match rx.await {
                Ok(Ok(())) => Ok(()),
                Ok(Err(e)) => Err(StoreError::Durability(e)),
                Err(_) => Err(StoreError::Durability("the flusher stopped".into())),
            }
        })
    }
}

impl Drop for Flusher {
    /// Stops the thread and waits for it, so the data dir's lock (held by
    /// the thread's handle on the database) is released when the store is.
    fn drop(&mut self) {
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(t) = self
            .thread
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            let _ = t.join();
        }
    }
}
