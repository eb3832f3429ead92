//! Restart-on-death handle. actix's `Supervisor` restarts an actor only when
//! it stops itself; a panic inside a handler kills the actor's task and
//! closes its mailbox for good. `Restartable` notices the closed mailbox,
//! starts a fresh actor from its factory, and counts the restart so
//! `/readyz` and `/metrics` can show it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use actix::dev::ToEnvelope;
use actix::{Actor, Addr, Handler, MailboxError, Message};

use crate::{Ping, Pong};

type Factory<A> = dyn Fn() -> Addr<A> + Send + Sync;

pub struct Restartable<A: Actor> {
    name: &'static str,
    addr: RwLock<Addr<A>>,
    factory: Box<Factory<A>>,
    restarts: AtomicU64,
}

/// What `/readyz` reports for one actor.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ActorHealth {
    pub name: &'static str,
    pub alive: bool,
    pub restarts: u64,
}

impl<A: Actor> Restartable<A> {
    /// `factory` starts the actor (in whatever arbiter it belongs to).
    pub fn start(
        name: &'static str,
        factory: impl Fn() -> Addr<A> + Send + Sync + 'static,
    ) -> Arc<Self> {
        Arc::new(Restartable {
            name,
            addr: RwLock::new(factory()),
            factory: Box::new(factory),
            restarts: AtomicU64::new(0),
        })
    }

    pub fn name(&self) -> &'static str {
        self.name
    }

    pub fn restarts(&self) -> u64 {
        self.restarts.load(Ordering::Relaxed)
    }

    pub fn addr(&self) -> Addr<A> {
        match self.addr.read() {
            Ok(a) => a.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Replaces a dead actor (only once if several callers notice together).
    fn restart(&self, dead: &Addr<A>) {
        let mut guard = match self.addr.write() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        if guard.connected() || !guard.eq(dead) {
            return;
        }
        tracing::error!(actor = self.name, "actor died; starting a new one");
        *guard = (self.factory)();
        self.restarts.fetch_add(1, Ordering::Relaxed);
    }

    /// Sends a message; if the actor is dead, restarts it and sends again once.
    pub async fn send<M>(&self, msg: M) -> Result<M::Result, MailboxError>
    where
        M: Message + Send + Clone + 'static,
        M::Result: Send,
        A: Handler<M>,
        A::Context: ToEnvelope<A, M>,
    {
        let addr = self.addr();
        match addr.send(msg.clone()).await {
            Err(MailboxError::Closed) => {
                self.restart(&addr);
                self.addr().send(msg).await
            }
            other => other,
        }
    }
}

impl<A> Restartable<A>
where
    A: Actor + Handler<Ping>,
    A::Context: ToEnvelope<A, Ping>,
{
    /// Pings with a deadline. A dead actor is reported as such and replaced,
    /// so the next probe sees the new one.
    pub async fn health(&self, deadline: Duration) -> ActorHealth {
        let addr = self.addr();
        let alive = matches!(
            tokio::time::timeout(deadline, addr.send(Ping)).await,
            Ok(Ok(Pong))
        );
        if !alive && !addr.connected() {
            self.restart(&addr);
        }
        ActorHealth {
            name: self.name,
            alive,
            restarts: self.restarts(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix::{Context, MessageResult};

    struct Fragile;
    impl Actor for Fragile {
        type Context = Context<Self>;
    }

    #[derive(Clone, Message)]
    #[rtype(result = "u32")]
    struct Work(bool);

    impl Handler<Work> for Fragile {
        type Result = u32;
        #[allow(clippy::panic)]
        fn handle(&mut self, w: Work, _: &mut Context<Self>) -> u32 {
            if w.0 {
                panic!("boom (expected by the test)");
            }
            7
        }
    }

    impl Handler<Ping> for Fragile {
        type Result = MessageResult<Ping>;
        fn handle(&mut self, _: Ping, _: &mut Context<Self>) -> Self::Result {
            MessageResult(Pong)
        }
    }

    #[actix::test]
    async fn a_panicked_actor_shows_dead_then_comes_back() {
        let r = Restartable::start("fragile", || Fragile.start());
        assert_eq!(r.send(Work(false)).await.ok(), Some(7));
        assert!(
            r.addr().send(Work(true)).await.is_err(),
            "the panic kills it"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
        let h = r.health(Duration::from_millis(200)).await;
        assert!(!h.alive, "readyz sees the dead actor");
        assert_eq!(h.restarts, 1);
        assert!(r.health(Duration::from_millis(200)).await.alive);
        assert_eq!(r.send(Work(false)).await.ok(), Some(7));
    }
}
