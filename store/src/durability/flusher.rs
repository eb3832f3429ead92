//! Phase two of a document for async callers, without a blocked thread
//! each: the caller sends its sled writes to one flusher thread and awaits
//! the answer. The flusher drains every request waiting, syncs the file log,
//! runs the writes, then flushes everything once (group commit): the files
//! are durable before any record that points at them exists, and the caller
//! makes one round trip.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError};
use std::thread::{JoinHandle, Thread};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use crate::error::{StoreError, StoreResult};
use crate::model::Job;

/// What a sync covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// Only the file log (files staged before their sled record).
    Files,
    /// Everything: the file log, then sled.
    All,
}

/// Tells a waiting caller how its writes ended, once the flush is done.
type Reply = Box<dyn FnOnce(Result<(), String>) + Send>;

/// Carried writes, type-erased: given whether the file log synced, it runs
/// the writes (or not) and returns the reply to send after the flush.
type Writes = Box<dyn FnOnce(Result<(), String>) -> Reply + Send>;

/// A request: its staging (appends to the file log, before the batch's
/// file sync), which gives the writes to run after it.
type Request = Box<dyn FnOnce() -> Writes + Send>;

/// Resolves once the writes ran and are on disk, with what they returned.
pub type Committed<T = Option<Job>> = Pin<Box<dyn Future<Output = StoreResult<T>> + Send>>;

pub(crate) struct Flusher {
    requests: Mutex<Option<mpsc::Sender<Request>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
    incoming: Arc<Incoming>,
    gate: Arc<Gate>,
}

/// Holds the flusher between batches while a pause is held (a backup's
/// consistent point): the batch in progress ends first, and the requests
/// sent meanwhile wait, to be served as one batch once the pause goes.
#[derive(Default)]
struct Gate {
    state: Mutex<GateState>,
    changed: Condvar,
}

#[derive(Default)]
struct GateState {
    pauses: usize,
    serving: bool,
}

impl Gate {
    fn lock(&self) -> std::sync::MutexGuard<'_, GateState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn wait<'a>(
        &self,
        state: std::sync::MutexGuard<'a, GateState>,
        until: impl Fn(&GateState) -> bool,
    ) -> std::sync::MutexGuard<'a, GateState> {
        self.changed
            .wait_while(state, |s| !until(s))
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Around one batch on the flusher thread.
    fn serving(&self, batch: impl FnOnce()) {
        let mut state = self.wait(self.lock(), |s| s.pauses == 0);
        state.serving = true;
        drop(state);
        batch();
        self.lock().serving = false;
        self.changed.notify_all();
    }
}

/// The flusher held between batches until dropped ([`Flusher::pause`]).
pub struct FlusherPause(Arc<Gate>);

impl FlusherPause {
    /// A pause of no flusher (an engine that commits every write itself).
    pub(crate) fn holding_nothing() -> Self {
        FlusherPause(Arc::default())
    }
}

impl Drop for FlusherPause {
    fn drop(&mut self) {
        let mut state = self.0.lock();
        state.pauses = state.pauses.saturating_sub(1);
        drop(state);
        self.0.changed.notify_all();
    }
}

/// Commits on their way to the flusher: documents queued for their build
/// or being built, whose phase two follows. A gathering flusher stops
/// waiting once none is left: under a closed-loop load (clients that send
/// their next document when answered) nothing else can come until it
/// flushes, and waiting out the window leaves the cores partly idle, each
/// idle spell paid in wake-ups (docs/performance.md).
#[derive(Default)]
struct Incoming {
    count: AtomicUsize,
    /// The flusher's thread, to wake when the last one arrived.
    flusher: OnceLock<Thread>,
}

impl Incoming {
    fn pending(&self) -> bool {
        self.count.load(Ordering::Acquire) > 0
    }
}

/// One commit on its way ([`Flusher::incoming`]): counted until dropped,
/// which its holder does once the commit was sent (or will never be).
pub struct IncomingCommit(Arc<Incoming>);

impl IncomingCommit {
    /// A commit no flusher waits for (an engine that commits every write
    /// itself).
    pub(crate) fn unawaited() -> Self {
        let incoming = Incoming::default();
        incoming.count.store(1, Ordering::Release);
        IncomingCommit(Arc::new(incoming))
    }
}

impl Drop for IncomingCommit {
    fn drop(&mut self) {
        if self.0.count.fetch_sub(1, Ordering::AcqRel) == 1 {
            if let Some(flusher) = self.0.flusher.get() {
                flusher.unpark();
            }
        }
    }
}

/// One batch: every request's files staged, one file sync, then the
/// carried writes, then one flush.
fn serve(batch: Vec<Request>, sync: &impl Fn(Scope) -> StoreResult<()>) {
    let staged: Vec<Writes> = batch.into_iter().map(|request| request()).collect();
    let files = sync(Scope::Files).map_err(|e| e.to_string());
    let replies: Vec<Reply> = staged
        .into_iter()
        .map(|writes| writes(files.clone()))
        .collect();
    let flushed = files.and_then(|()| sync(Scope::All).map_err(|e| e.to_string()));
    for reply in replies {
        reply(flushed.clone());
    }
}

/// The longest a flusher waits for the commits on their way before it
/// syncs. A longer window makes batches grow and context switches fall,
/// until the signers starve (1, 3, 4.5 and 6 ms measured:
/// docs/performance.md). The gathering ends once nothing is on its way, so
/// the window bounds only a batch whose builds outlast it (a queue longer
/// than the signers clear in the window).
const GATHER: Duration = Duration::from_micros(4_500);

/// `first`, every request waiting behind it, and those that arrive within
/// `window` while commits are still on their way ([`Incoming`]): a batch
/// costs the same syncs and wake-ups for one document as for many, so the
/// flusher waits for the documents being built, and no longer (a lone
/// caller never waits). The arrivals themselves wake no one: woken for
/// each, the flusher switched in 1.5 times a document.
fn gather(
    first: Request,
    rx: &mpsc::Receiver<Request>,
    window: Duration,
    incoming: &Incoming,
) -> Vec<Request> {
    let mut batch = vec![first];
    batch.extend(rx.try_iter());
    let deadline = Instant::now() + window;
    // Woken by the last commit on its way (or spuriously: it looks again).
    while incoming.pending() {
        let now = Instant::now();
        if now >= deadline {
            break;
        }
        std::thread::park_timeout(deadline - now);
    }
    batch.extend(rx.try_iter());
    batch
}

/// A `deliver` for the `_then` commits, and the future of what it is given
/// (a flusher that died drops it: the future says so).
pub(crate) fn delivered<T: Send + 'static>(
) -> (impl FnOnce(StoreResult<T>) + Send + 'static, Committed<T>) {
    let (tx, rx) = oneshot::channel::<StoreResult<T>>();
    let deliver = move |result| {
        let _ = tx.send(result);
    };
    let committed: Committed<T> = Box::pin(async move {
        rx.await
            .unwrap_or_else(|_| Err(StoreError::Durability("the flusher stopped".into())))
    });
    (deliver, committed)
}

impl Flusher {
    /// Starts the thread; `sync(scope)` makes every write completed before
    /// the call durable.
    pub(crate) fn start(
        sync: impl Fn(Scope) -> StoreResult<()> + Send + 'static,
    ) -> std::io::Result<Self> {
        let (tx, rx) = mpsc::channel::<Request>();
        let incoming = Arc::new(Incoming::default());
        let waits_for = incoming.clone();
        let gate = Arc::new(Gate::default());
        let held_by = gate.clone();
        let thread = std::thread::Builder::new()
            .name("store-flush".into())
            .spawn(move || {
                let _ = waits_for.flusher.set(std::thread::current());
                while let Ok(first) = rx.recv() {
                    held_by.serving(|| serve(gather(first, &rx, GATHER, &waits_for), &sync));
                }
            })?;
        Ok(Flusher {
            requests: Mutex::new(Some(tx)),
            thread: Mutex::new(Some(thread)),
            incoming,
            gate,
        })
    }

    /// Waits for the batch in progress to end, then holds the flusher
    /// until the returned guard is dropped: no group commit writes
    /// meanwhile, and the commits sent wait (their callers too).
    pub(crate) fn pause(&self) -> FlusherPause {
        let mut state = self.gate.lock();
        state.pauses += 1;
        drop(state);
        let _idle = self.gate.wait(self.gate.lock(), |s| !s.serving);
        FlusherPause(self.gate.clone())
    }

    /// Counts a commit that will come (a document about to be built): a
    /// gathering flusher waits for it, within its window, until the
    /// returned guard is dropped.
    pub(crate) fn incoming(&self) -> IncomingCommit {
        self.incoming.count.fetch_add(1, Ordering::AcqRel);
        IncomingCommit(self.incoming.clone())
    }

    /// Runs `writes` on the flusher thread between a file-log sync and a
    /// full flush shared with every other caller waiting (group commit).
    /// Nothing blocks the caller's thread.
    pub(crate) fn commit<T: Send + 'static>(
        &self,
        writes: impl FnOnce() -> StoreResult<T> + Send + 'static,
    ) -> Committed<T> {
        self.stage_and_commit(|| Ok(()), move |()| writes())
    }

    /// [`commit`](Self::commit) after `stage` (appends to the file log) has
    /// run on the flusher too, before the batch's file sync: a document's
    /// whole phase two in one round trip.
    pub(crate) fn stage_and_commit<S: Send + 'static, T: Send + 'static>(
        &self,
        stage: impl FnOnce() -> StoreResult<S> + Send + 'static,
        writes: impl FnOnce(S) -> StoreResult<T> + Send + 'static,
    ) -> Committed<T> {
        let (deliver, committed) = delivered();
        self.stage_and_commit_then(stage, writes, deliver);
        committed
    }

    /// [`stage_and_commit`](Self::stage_and_commit) whose outcome goes to
    /// `deliver`, called on the flusher once the batch is flushed (or with
    /// the error that stopped it; at once when the store is closing). A
    /// flusher thread that died drops it uncalled.
    pub(crate) fn stage_and_commit_then<S: Send + 'static, T: Send + 'static>(
        &self,
        stage: impl FnOnce() -> StoreResult<S> + Send + 'static,
        writes: impl FnOnce(S) -> StoreResult<T> + Send + 'static,
        deliver: impl FnOnce(StoreResult<T>) + Send + 'static,
    ) {
        let requests = self.requests.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(requests) = requests.as_ref() else {
            deliver(Err(StoreError::Durability("the store is closing".into())));
            return;
        };
        let request: Request = Box::new(move || {
            let staged = stage();
            Box::new(move |files| {
                let result = match (files, staged) {
                    (Ok(()), Ok(staged)) => writes(staged),
                    (Err(e), _) => Err(StoreError::Durability(e)),
                    (_, Err(e)) => Err(e),
                };
                Box::new(move |flushed| {
                    deliver(match (flushed, result) {
                        (Err(e), Ok(_)) => Err(StoreError::Durability(e)),
                        (_, result) => result,
                    });
                })
            })
        });
        // Fails only when the thread died: the request and `deliver` go.
        let _ = requests.send(request);
    }
}

impl Flusher {
    /// Refuses new requests, serves those already sent and waits for the
    /// thread: after it, nothing more is written through the flusher.
    pub(crate) fn stop(&self) {
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
            // The last handle may be dropped by carried writes on the
            // flusher itself: it then ends on its own, unjoined.
            if t.thread().id() != std::thread::current().id() {
                let _ = t.join();
            }
        }
    }
}

impl Drop for Flusher {
    /// Stops the thread and waits for it, so the data dir's lock (held by
    /// the thread's handle on the database) is released when the store is.
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    type Log = Arc<Mutex<Vec<String>>>;

    fn noop() -> Request {
        Box::new(|| Box::new(|_| Box::new(|_| {})))
    }

    #[test]
    fn a_flusher_waits_for_the_commits_on_their_way_and_no_longer() {
        let (tx, rx) = mpsc::channel::<Request>();
        let incoming = Arc::new(Incoming::default());
        let _ = incoming.flusher.set(std::thread::current());
        tx.send(noop()).unwrap();
        // None on its way: what is waiting, at once, whatever the window.
        let started = Instant::now();
        assert_eq!(
            gather(noop(), &rx, Duration::from_secs(30), &incoming).len(),
            2
        );
        assert!(started.elapsed() < Duration::from_secs(30));
        // One on its way: it joins, and its guard's drop ends the wait.
        incoming.count.fetch_add(1, Ordering::AcqRel);
        let coming = IncomingCommit(incoming.clone());
        let late = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            tx.send(noop()).unwrap();
            drop(coming);
        });
        let batch = gather(noop(), &rx, Duration::from_secs(30), &incoming);
        late.join().unwrap();
        assert_eq!(batch.len(), 2);
        assert!(!incoming.pending());
    }

    #[test]
    fn a_commit_that_does_not_come_is_waited_for_only_until_the_window_ends() {
        let (_tx, rx) = mpsc::channel::<Request>();
        let incoming = Arc::new(Incoming::default());
        incoming.count.fetch_add(1, Ordering::AcqRel);
        let _never = IncomingCommit(incoming.clone());
        let batch = gather(noop(), &rx, Duration::from_millis(20), &incoming);
        assert_eq!(batch.len(), 1);
    }

    /// A flusher that records its syncs in `log` (and fails the file sync
    /// when asked), and writes that record themselves there too.
    fn recording(
        fail_files: bool,
    ) -> (
        Flusher,
        Log,
        impl FnOnce() -> StoreResult<Option<Job>> + Send + 'static,
    ) {
        let log: Log = Arc::default();
        let l = log.clone();
        let f = Flusher::start(move |scope| {
            l.lock().unwrap().push(format!("sync {scope:?}"));
            if fail_files && scope == Scope::Files {
                return Err(StoreError::Durability("disk full".into()));
            }
            Ok(())
        })
        .unwrap();
        let l = log.clone();
        let writes = move || {
            l.lock().unwrap().push("writes".into());
            Ok(None)
        };
        (f, log, writes)
    }

    #[tokio::test]
    async fn carried_writes_run_between_the_file_sync_and_the_flush() {
        let (f, log, writes) = recording(false);
        assert!(f.commit(writes).await.unwrap().is_none());
        assert_eq!(
            *log.lock().unwrap(),
            vec!["sync Files", "writes", "sync All"]
        );
    }

    #[tokio::test]
    async fn staging_runs_before_the_file_sync_and_hands_its_result_to_the_writes() {
        let (f, log, _) = recording(false);
        let (l1, l2) = (log.clone(), log.clone());
        let got = f
            .stage_and_commit(
                move || {
                    l1.lock().unwrap().push("stage".into());
                    Ok(7)
                },
                move |staged| {
                    l2.lock().unwrap().push(format!("writes {staged}"));
                    Ok(staged * 6)
                },
            )
            .await
            .unwrap();
        assert_eq!(got, 42);
        assert_eq!(
            *log.lock().unwrap(),
            vec!["stage", "sync Files", "writes 7", "sync All"]
        );
    }

    #[tokio::test]
    async fn a_paused_flusher_serves_nothing_until_the_pause_goes() {
        let (f, log, writes) = recording(false);
        let pause = f.pause();
        let committed = f.commit(writes);
        // The flusher thread has the request (or will have it) but waits.
        std::thread::sleep(Duration::from_millis(50));
        assert!(log.lock().unwrap().is_empty());
        drop(pause);
        assert!(committed.await.unwrap().is_none());
        assert_eq!(
            *log.lock().unwrap(),
            vec!["sync Files", "writes", "sync All"]
        );
        // A pause taken after a batch finds the flusher idle at once.
        drop(f.pause());
    }

    #[tokio::test]
    async fn writes_do_not_run_when_the_files_could_not_be_synced() {
        let (f, log, writes) = recording(true);
        let got = f.commit(writes).await;
        assert!(matches!(got, Err(StoreError::Durability(_))));
        assert_eq!(*log.lock().unwrap(), vec!["sync Files"]);
    }
}
