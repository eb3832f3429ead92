//! The document builder actor: takes [`Build`] requests and hands each one to
//! the [`SignerPool`], so building and signing (about one RSA operation and a
//! few hashes per document) never runs on an HTTP worker or inside the
//! actor's mailbox. The handler only queues the job and returns a future, so
//! one actor keeps every pool thread busy.
//!
//! This crate does not know the engine (the dependency points the other
//! way): the root crate implements [`Pipeline`] over `engine::pipeline::issue`.

use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};

use actix::{Actor, Context, Handler, Message, MessageResult};

use crate::signer_pool::{JobHandle, PoolError, PoolHealth, SignerPool};
use crate::{Ping, Pong};

/// The CPU-bound work the builder runs on the pool.
pub trait Pipeline: Send + Sync + 'static {
    type Input: Send + 'static;
    type Output: Send + 'static;
    /// Pipeline errors, plus the pool's (busy, panicked, closed).
    type Error: Send + 'static + From<PoolError>;

    fn build(&self, input: Self::Input) -> Result<Self::Output, Self::Error>;
}

/// Build one document.
pub struct Build<P: Pipeline> {
    pub input: P::Input,
    _pipeline: PhantomData<fn() -> P>,
}

impl<P: Pipeline> Build<P> {
    pub fn new(input: P::Input) -> Self {
        Build {
            input,
            _pipeline: PhantomData,
        }
    }
}

// Manual impls: `P` itself need not be `Clone`/`Debug`.
impl<P: Pipeline> Clone for Build<P>
where
    P::Input: Clone,
{
    fn clone(&self) -> Self {
        Build::new(self.input.clone())
    }
}

impl<P: Pipeline> std::fmt::Debug for Build<P>
where
    P::Input: std::fmt::Debug,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Build").field("input", &self.input).finish()
    }
}

impl<P: Pipeline> Message for Build<P> {
    type Result = Queued<P>;
}

/// A build handed to the pool: await it for the result. The sender awaits
/// the pool itself, so the actor is not woken a second time to relay it.
pub struct Queued<P: Pipeline> {
    job: Result<BuildJob<P>, PoolError>,
}

type BuildJob<P> = JobHandle<Result<<P as Pipeline>::Output, <P as Pipeline>::Error>>;

impl<P: Pipeline> Future for Queued<P> {
    type Output = Result<P::Output, P::Error>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Self::Output> {
        match &mut self.job {
            Ok(job) => Pin::new(job).poll(cx).map(|r| match r {
                Ok(result) => result,
                Err(e) => Err(P::Error::from(e)),
            }),
            Err(e) => Poll::Ready(Err(P::Error::from(*e))),
        }
    }
}

/// The pool's counters, for `/readyz` and `/metrics`.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "PoolHealth")]
pub struct PoolStatus;

/// Where builds go: the pipeline and the pool it runs on. The actor holds
/// one, and so may the issuing path: a build queued from here needs no
/// round trip through the actor's mailbox, whose handler would only
/// forward it (two thread wake-ups per document). The pool is the same
/// across actor restarts, so a queue stays valid.
pub struct BuildQueue<P: Pipeline> {
    pipeline: Arc<P>,
    pool: SignerPool,
}

impl<P: Pipeline> Clone for BuildQueue<P> {
    fn clone(&self) -> Self {
        BuildQueue {
            pipeline: Arc::clone(&self.pipeline),
            pool: self.pool.clone(),
        }
    }
}

impl<P: Pipeline> BuildQueue<P> {
    pub fn new(pipeline: Arc<P>, pool: SignerPool) -> Self {
        BuildQueue { pipeline, pool }
    }

    /// Runs `f` with the pipeline on the pool (queued now, so a full pool
    /// answers Busy at once): blocking work a build depends on, such as
    /// taking the document's number in the store, goes in the same job as
    /// the build, one trip off the caller's thread instead of two.
    pub fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce(&P) -> T + Send + 'static,
    ) -> impl Future<Output = Result<T, PoolError>> {
        let pipeline = Arc::clone(&self.pipeline);
        let span = tracing::debug_span!("document_builder.run");
        let job = self.pool.spawn(move || span.in_scope(|| f(&pipeline)));
        async move { job?.await }
    }

    /// [`run`](Self::run) for a job that answers its caller itself (a
    /// channel it carries, sent on by another thread): queued now, no
    /// result to wake anyone with; `deliver` gets the result or the panic.
    pub fn run_then<T: Send + 'static>(
        &self,
        f: impl FnOnce(&P) -> T + Send + 'static,
        deliver: impl FnOnce(Result<T, PoolError>) + Send + 'static,
    ) -> Result<(), PoolError> {
        let pipeline = Arc::clone(&self.pipeline);
        let span = tracing::debug_span!("document_builder.run");
        self.pool
            .spawn_then(move || span.in_scope(|| f(&pipeline)), deliver)
    }

    /// Queues one build on the pool now (a full pool answers Busy at once);
    /// await the result.
    pub fn build(&self, input: P::Input) -> Queued<P> {
        let pipeline = Arc::clone(&self.pipeline);
        let span = tracing::debug_span!("document_builder.build");
        let job = self
            .pool
            .spawn(move || span.in_scope(|| pipeline.build(input)));
        Queued { job }
    }
}

pub struct DocumentBuilder<P: Pipeline> {
    queue: BuildQueue<P>,
}

impl<P: Pipeline> DocumentBuilder<P> {
    pub fn new(queue: BuildQueue<P>) -> Self {
        DocumentBuilder { queue }
    }
}

impl<P: Pipeline> Actor for DocumentBuilder<P> {
    type Context = Context<Self>;
}

impl<P: Pipeline> Handler<Build<P>> for DocumentBuilder<P> {
    type Result = MessageResult<Build<P>>;

    fn handle(&mut self, msg: Build<P>, _: &mut Context<Self>) -> Self::Result {
        MessageResult(self.queue.build(msg.input))
    }
}

impl<P: Pipeline> Handler<PoolStatus> for DocumentBuilder<P> {
    type Result = MessageResult<PoolStatus>;
    fn handle(&mut self, _: PoolStatus, _: &mut Context<Self>) -> Self::Result {
        MessageResult(self.queue.pool.health())
    }
}

impl<P: Pipeline> Handler<Ping> for DocumentBuilder<P> {
    type Result = MessageResult<Ping>;
    fn handle(&mut self, _: Ping, _: &mut Context<Self>) -> Self::Result {
        MessageResult(Pong)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::sync::Mutex;
    use std::time::Duration;

    use crate::supervisor::Restartable;

    #[derive(Debug, PartialEq, Eq, thiserror::Error)]
    enum ToyError {
        #[error("odd input {0}")]
        Odd(u64),
        #[error(transparent)]
        Pool(#[from] PoolError),
    }

    /// Halves even numbers, refuses odd ones, panics on 13, and blocks on
    /// 1000 until the test releases it.
    struct Toy {
        gate: Mutex<Option<mpsc::Receiver<()>>>,
    }

    impl Pipeline for Toy {
        type Input = u64;
        type Output = (u64, String);
        type Error = ToyError;
        fn build(&self, n: u64) -> Result<(u64, String), ToyError> {
            let thread = std::thread::current().name().unwrap_or("").to_string();
            match n {
                13 => {
                    #[allow(clippy::panic)]
                    {
                        panic!("toy pipeline panic (expected by the test)")
                    }
                }
                1000 => {
                    let rx = self.gate.lock().unwrap().take().unwrap();
                    rx.recv_timeout(Duration::from_secs(5)).unwrap();
                    Ok((500, thread))
                }
                n if n % 2 == 1 => Err(ToyError::Odd(n)),
                n => Ok((n / 2, thread)),
            }
        }
    }

    fn start(
        threads: usize,
        queue: usize,
    ) -> (actix::Addr<DocumentBuilder<Toy>>, mpsc::Sender<()>) {
        let (tx, rx) = mpsc::channel();
        let toy = Arc::new(Toy {
            gate: Mutex::new(Some(rx)),
        });
        let pool = SignerPool::new(threads, queue).unwrap();
        (DocumentBuilder::new(BuildQueue::new(toy, pool)).start(), tx)
    }

    #[actix::test]
    async fn a_queue_builds_on_the_actor_s_pool_without_its_mailbox() {
        let (_tx, rx) = mpsc::channel();
        let toy = Arc::new(Toy {
            gate: Mutex::new(Some(rx)),
        });
        let queue = BuildQueue::new(toy, SignerPool::new(2, 16).unwrap());
        let addr = DocumentBuilder::new(queue.clone()).start();
        let (half, thread) = queue.build(42).await.unwrap();
        assert_eq!(half, 21);
        assert!(thread.starts_with("signer-"), "ran on {thread:?}");
        assert_eq!(queue.clone().build(7).await, Err(ToyError::Odd(7)));
        // The actor reports the pool the queue used.
        let h = addr.send(PoolStatus).await.unwrap();
        assert_eq!((h.alive, h.completed), (2, 2));
    }

    #[actix::test]
    async fn work_run_with_the_pipeline_shares_the_build_s_thread() {
        let (_tx, rx) = mpsc::channel();
        let toy = Arc::new(Toy {
            gate: Mutex::new(Some(rx)),
        });
        let queue = BuildQueue::new(toy, SignerPool::new(1, 16).unwrap());
        let (before, built) = queue
            .run(|toy| {
                let before = std::thread::current().name().map(str::to_string);
                (before, toy.build(10))
            })
            .await
            .unwrap();
        let (half, thread) = built.unwrap();
        assert_eq!(half, 5);
        assert_eq!(before.as_deref(), Some(thread.as_str()));
        assert!(thread.starts_with("signer-"), "ran on {thread:?}");
    }

    #[actix::test]
    async fn builds_run_on_the_pool_and_errors_come_back() {
        let (addr, _gate) = start(2, 16);
        let (half, thread) = addr.send(Build::new(42)).await.unwrap().await.unwrap();
        assert_eq!(half, 21);
        assert!(thread.starts_with("signer-"), "ran on {thread:?}");
        assert_eq!(
            addr.send(Build::new(7)).await.unwrap().await,
            Err(ToyError::Odd(7))
        );
        assert_eq!(
            addr.send(Build::new(13)).await.unwrap().await,
            Err(ToyError::Pool(PoolError::Panicked))
        );
        // The actor and the pool survive the panic.
        assert_eq!(addr.send(Ping).await.unwrap(), Pong);
        assert_eq!(addr.send(Build::new(8)).await.unwrap().await.unwrap().0, 4);
        let h = addr.send(PoolStatus).await.unwrap();
        assert_eq!((h.alive, h.panics, h.completed), (2, 1, 3));
    }

    #[actix::test]
    async fn a_blocked_build_does_not_block_the_mailbox() {
        let (addr, gate) = start(2, 16);
        let slow = addr.send(Build::new(1000)).await.unwrap();
        let slow = actix::spawn(slow);
        // While 1000 waits on a worker, other builds and pings are served.
        for n in [2u64, 4, 6] {
            assert_eq!(
                addr.send(Build::new(n)).await.unwrap().await.unwrap().0,
                n / 2
            );
        }
        assert_eq!(addr.send(Ping).await.unwrap(), Pong);
        gate.send(()).unwrap();
        assert_eq!(slow.await.unwrap().unwrap().0, 500);
    }

    #[actix::test]
    async fn a_full_pool_answers_busy() {
        let (addr, gate) = start(1, 1);
        let slow = actix::spawn(addr.send(Build::new(1000)).await.unwrap());
        // Wait until the slow build occupies the only worker.
        for _ in 0..500 {
            if addr.send(PoolStatus).await.unwrap().running == 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let queued = actix::spawn(addr.send(Build::new(10)).await.unwrap());
        for _ in 0..500 {
            if addr.send(PoolStatus).await.unwrap().queued == 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(
            addr.send(Build::new(12)).await.unwrap().await,
            Err(ToyError::Pool(PoolError::Busy))
        );
        gate.send(()).unwrap();
        assert_eq!(slow.await.unwrap().unwrap().0, 500);
        assert_eq!(queued.await.unwrap().unwrap().0, 5);
    }

    #[actix::test]
    async fn works_behind_restartable() {
        let pool = SignerPool::new(1, 8).unwrap();
        let toy = Arc::new(Toy {
            gate: Mutex::new(None),
        });
        let r = Restartable::start("document_builder", move || {
            DocumentBuilder::new(BuildQueue::new(Arc::clone(&toy), pool.clone())).start()
        });
        assert_eq!(
            r.send(Build::<Toy>::new(4)).await.unwrap().await.unwrap().0,
            2
        );
        assert!(r.health(Duration::from_millis(200)).await.alive);
    }
}
