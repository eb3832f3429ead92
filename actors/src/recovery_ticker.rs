//! Recovery ticker (spec 3.1, §8): every interval it asks a [`Recovery`]
//! implementation to re-queue what is waiting for the authority (states 5
//! and 6) when the authority is available. The work itself is the root
//! crate's; this actor only owns the clock, so a slow pass never overlaps the
//! next.

use std::sync::Arc;
use std::time::Duration;

use actix::{
    Actor, ActorFutureExt, AsyncContext, Context, Handler, Message, MessageResult, WrapFuture,
};
use futures_util::future::BoxFuture;

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

    fn pass(&mut self, ctx: &mut Context<Self>) {
        if self.running {
            return;
        }
        self.running = true;
        let fut = self.recovery.recover();
        ctx.spawn(fut.into_actor(self).map(|requeued, this, _| {
            this.running = false;
            this.passes += 1;
            if requeued > 0 {
                tracing::info!(requeued, "recovery re-queued documents");
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
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Count(AtomicUsize);
    impl Recovery for Count {
        fn recover(&self) -> BoxFuture<'static, usize> {
            self.0.fetch_add(1, Ordering::SeqCst);
            Box::pin(async { 0 })
        }
    }

    #[actix::test]
    async fn ticks_on_its_interval() {
        let c = Arc::new(Count(AtomicUsize::new(0)));
        let _addr = RecoveryTicker::new(c.clone(), Duration::from_millis(20)).start();
        tokio::time::sleep(Duration::from_millis(110)).await;
        let n = c.0.load(Ordering::SeqCst);
        assert!((3..=6).contains(&n), "{n} passes in 110 ms at 20 ms");
    }
}
