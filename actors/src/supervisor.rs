//! Restart-on-death handle. actix's `Supervisor` restarts an actor only when
//! it stops itself; a panic inside a handler kills the actor's task and
//! closes its mailbox for good. `Restartable` notices the closed mailbox,
//! starts a fresh actor from its factory, and counts the restart so
//! `/readyz` and `/metrics` can show it.
//!
//! Delivery is at most once. actix answers `MailboxError::Closed` both when
//! the message never got into the mailbox and when its handler died before
//! replying, possibly after part of its work (a document sent). The two
//! cannot be told apart afterwards, so a dead actor is replaced *before* a
//! message is sent, and a message whose reply was lost is never sent again:
//! the caller gets the error.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use actix::dev::ToEnvelope;
use actix::{Actor, Addr, Handler, MailboxError, Message};

use crate::{Ping, Pong};

type Factory<A> = dyn Fn() -> Addr<A> + Send + Sync;

/// How long a lost reply waits for the actor's mailbox to close. A handler
/// that panics drops its reply while its thread is still unwinding; the
/// mailbox goes a moment later.
const DEATH_GRACE: Duration = Duration::from_millis(200);

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

    /// The address as it is now, dead or alive.
    fn current(&self) -> Addr<A> {
        match self.addr.read() {
            Ok(a) => a.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// The address of a live actor: a dead one is replaced first, so callers
    /// that send through the address directly never write into a closed
    /// mailbox either.
    pub fn addr(&self) -> Addr<A> {
        let addr = self.current();
        if addr.connected() {
            return addr;
        }
        self.restart(&addr);
        self.current()
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

    /// Fire and forget, to a live actor.
    pub fn do_send<M>(&self, msg: M)
    where
        M: Message + Send + 'static,
        M::Result: Send,
        A: Handler<M>,
        A::Context: ToEnvelope<A, M>,
    {
        self.addr().do_send(msg);
    }

    /// Sends to a live actor (replacing a dead one first) and waits for the
    /// reply. If the reply is lost, the handler may have run part-way: the
    /// message is not sent again, the actor is replaced if it died, and the
    /// caller gets the error.
    pub async fn send<M>(&self, msg: M) -> Result<M::Result, MailboxError>
    where
        M: Message + Send + 'static,
        M::Result: Send,
        A: Handler<M>,
        A::Context: ToEnvelope<A, M>,
    {
        let addr = self.addr();
        let result = addr.send(msg).await;
        if matches!(result, Err(MailboxError::Closed)) && closes(&addr).await {
            // Now, not on the next message, which could still get into the
            // dying mailbox and be lost.
            self.restart(&addr);
        }
        result
    }
}

/// Waits (briefly) for a mailbox to close; false if it stays open, as when a
/// live actor dropped one reply.
async fn closes<A: Actor>(addr: &Addr<A>) -> bool {
    let deadline = Instant::now() + DEATH_GRACE;
    while addr.connected() {
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    true
}

impl<A> Restartable<A>
where
    A: Actor + Handler<Ping>,
    A::Context: ToEnvelope<A, Ping>,
{
    /// Pings with a deadline. A dead actor is reported as such and replaced,
    /// so the next probe sees the new one.
    pub async fn health(&self, deadline: Duration) -> ActorHealth {
        let addr = self.current();
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
mod tests;
