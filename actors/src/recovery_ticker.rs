//! Recovery ticker (spec 3.1, §8): every interval it asks a [`Recovery`]
//! implementation to re-queue what is waiting for the authority (states 5
//! and 6) when the authority is available. The work itself is the root
//! crate's; this actor only owns the clock, so a slow pass never overlaps the
//! next. A pass that panics is logged and the next tick tries again.

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

pub trait Recovery: Send + Sync + 'static {
    /// One pass; returns how many documents were re-queued.
    fn recover(&self) -> BoxFuture<'static, usize>;
}

/// Run a pass now (tests, admin).
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "()")]
pub struct RunNow;

pub struct RecoveryTicker {
    recovery: Arc<dyn Recovery>,
    interval: Duration,
    running: bool,
    pub passes: u64,
}

impl RecoveryTicker {
    pub fn new(recovery: Arc<dyn Recovery>, interval: Duration) -> Self {
        RecoveryTicker {
            recovery,
            interval,
            running: false,
            passes: 0,
        }
    }

    /// The ticker on `arbiter`, replaced if it dies (it holds only its clock).
    pub fn supervised(
        arbiter: ArbiterHandle,
        recovery: Arc<dyn Recovery>,
        interval: Duration,
    ) -> Arc<Restartable<RecoveryTicker>> {
        Restartable::start("recovery_ticker", move || {
            let recovery = recovery.clone();
            RecoveryTicker::start_in_arbiter(&arbiter, move |_| {
                RecoveryTicker::new(recovery, interval)
            })
        })
    }

    fn pass(&mut self, ctx: &mut Context<Self>) {
        if self.running {
            return;
        }
        self.running = true;
        let recovery = self.recovery.clone();
        let pass = guarded(move || recovery.recover());
        ctx.spawn(pass.into_actor(self).map(|result, this, _| {
            this.running = false;
            this.passes += 1;
            match result {
                Ok(0) => {}
                Ok(requeued) => tracing::info!(requeued, "recovery re-queued documents"),
                Err(panic) => {
                    tracing::error!(panic, "a recovery pass panicked; the next tick tries again")
                }
            }
        }));
    }
}

impl Actor for RecoveryTicker {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.run_interval(self.interval, |this, ctx| this.pass(ctx));
    }
}

impl Handler<RunNow> for RecoveryTicker {
    type Result = ();
    fn handle(&mut self, _: RunNow, ctx: &mut Self::Context) {
        self.pass(ctx);
    }
}

impl Handler<Ping> for RecoveryTicker {
    type Result = MessageResult<Ping>;
    fn handle(&mut self, _: Ping, _: &mut Self::Context) -> Self::Result {
        MessageResult(Pong)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Counts passes; the first `panics` of them panic.
    struct Count {
        passes: AtomicUsize,
        panics: usize,
    }

    impl Recovery for Count {
        #[allow(clippy::panic)]
        fn recover(&self) -> BoxFuture<'static, usize> {
            let n = self.passes.fetch_add(1, Ordering::SeqCst);
            let panics = n < self.panics;
            Box::pin(async move {
                if panics {
                    panic!("recovery pass {n} panics (expected by the test)");
                }
                0
            })
        }
    }

    fn count(panics: usize) -> Arc<Count> {
        Arc::new(Count {
            passes: AtomicUsize::new(0),
            panics,
        })
    }

    #[actix::test]
    async fn ticks_on_its_interval() {
        let c = count(0);
        let _addr = RecoveryTicker::new(c.clone(), Duration::from_millis(20)).start();
        tokio::time::sleep(Duration::from_millis(110)).await;
        let n = c.passes.load(Ordering::SeqCst);
        assert!((3..=6).contains(&n), "{n} passes in 110 ms at 20 ms");
    }

    #[actix::test]
    async fn a_panicking_pass_does_not_stop_the_ticks() {
        let c = count(2);
        let ticker = RecoveryTicker::supervised(
            actix::Arbiter::current(),
            c.clone(),
            Duration::from_millis(20),
        );
        // Polled: a panic is slow when backtraces are captured.
        for _ in 0..1000 {
            if c.passes.load(Ordering::SeqCst) >= 4 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let n = c.passes.load(Ordering::SeqCst);
        assert!(n >= 4, "two panicking passes, then more: {n}");
        let h = ticker.health(Duration::from_millis(500)).await;
        assert!(h.alive);
        assert_eq!(h.restarts, 0, "the panics never reached the actor");
    }
}
