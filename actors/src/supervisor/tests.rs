use super::*;
use std::sync::atomic::AtomicUsize;

use actix::{Arbiter, Context, MessageResult};

/// Counts what its handlers ran; `Poison` panics half-way.
struct Fragile {
    work: Arc<AtomicUsize>,
    poison: Arc<AtomicUsize>,
}

impl Actor for Fragile {
    type Context = Context<Self>;
}

#[derive(Message)]
#[rtype(result = "u32")]
struct Work;

#[derive(Message)]
#[rtype(result = "()")]
struct Poison;

impl Handler<Work> for Fragile {
    type Result = u32;
    fn handle(&mut self, _: Work, _: &mut Context<Self>) -> u32 {
        self.work.fetch_add(1, Ordering::SeqCst);
        7
    }
}

impl Handler<Poison> for Fragile {
    type Result = ();
    #[allow(clippy::panic)]
    fn handle(&mut self, _: Poison, _: &mut Context<Self>) {
        // Part of the work is done before the panic, like a send that
        // reached the authority.
        self.poison.fetch_add(1, Ordering::SeqCst);
        panic!("poison message (expected by the test)");
    }
}

impl Handler<Ping> for Fragile {
    type Result = MessageResult<Ping>;
    fn handle(&mut self, _: Ping, _: &mut Context<Self>) -> Self::Result {
        MessageResult(Pong)
    }
}

struct Setup {
    actor: Arc<Restartable<Fragile>>,
    work: Arc<AtomicUsize>,
    poison: Arc<AtomicUsize>,
    arbiter: Arbiter,
}

/// The actor on its own arbiter (thread), as in the service: its panic
/// unwinds there while the caller runs here.
fn fragile() -> Setup {
    let work = Arc::new(AtomicUsize::new(0));
    let poison = Arc::new(AtomicUsize::new(0));
    let arbiter = Arbiter::new();
    let h = arbiter.handle();
    let (w, p) = (work.clone(), poison.clone());
    let actor = Restartable::start("fragile", move || {
        let (work, poison) = (w.clone(), p.clone());
        Fragile::start_in_arbiter(&h, move |_| Fragile { work, poison })
    });
    Setup {
        actor,
        work,
        poison,
        arbiter,
    }
}

async fn wait_dead<A: Actor>(addr: &Addr<A>) {
    for _ in 0..2500 {
        if !addr.connected() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    panic!("the actor did not die");
}

#[actix::test]
async fn a_message_whose_handler_died_is_not_sent_again() {
    let s = fragile();
    assert_eq!(s.actor.send(Work).await.ok(), Some(7));

    let lost = s.actor.send(Poison).await;
    assert!(
        matches!(lost, Err(MailboxError::Closed)),
        "the caller hears the reply was lost: {lost:?}"
    );
    assert_eq!(s.poison.load(Ordering::SeqCst), 1, "handled exactly once");
    assert_eq!(s.actor.restarts(), 1, "replaced before the error returns");

    assert_eq!(
        s.actor.send(Work).await.ok(),
        Some(7),
        "the new actor takes the next message"
    );
    assert_eq!(s.work.load(Ordering::SeqCst), 2);
    assert_eq!(s.poison.load(Ordering::SeqCst), 1, "never redelivered");
    let h = s.actor.health(Duration::from_millis(500)).await;
    assert!(h.alive);
    assert_eq!(h.restarts, 1);
    s.arbiter.stop();
}

#[actix::test]
async fn a_message_for_an_already_dead_actor_goes_to_its_replacement() {
    let s = fragile();
    // Killed behind the handle's back: nobody has noticed yet.
    let dead = s.actor.current();
    let _ = dead.send(Poison).await;
    wait_dead(&dead).await;
    assert_eq!(s.actor.restarts(), 0);

    assert_eq!(s.actor.send(Work).await.ok(), Some(7), "delivered");
    assert_eq!(s.work.load(Ordering::SeqCst), 1, "once");
    assert_eq!(s.actor.restarts(), 1);

    // Same for fire-and-forget.
    let dead = s.actor.current();
    let _ = dead.send(Poison).await;
    wait_dead(&dead).await;
    s.actor.do_send(Work);
    assert_eq!(s.actor.send(Work).await.ok(), Some(7));
    assert_eq!(
        s.work.load(Ordering::SeqCst),
        3,
        "both reached the new actor"
    );
    assert_eq!(s.actor.restarts(), 2);
    assert_eq!(s.poison.load(Ordering::SeqCst), 2);
    s.arbiter.stop();
}

#[actix::test]
async fn a_panicked_actor_shows_dead_then_comes_back() {
    let s = fragile();
    assert_eq!(s.actor.send(Work).await.ok(), Some(7));
    let dead = s.actor.current();
    assert!(dead.send(Poison).await.is_err(), "the panic kills it");
    wait_dead(&dead).await;
    let h = s.actor.health(Duration::from_millis(200)).await;
    assert!(!h.alive, "readyz sees the dead actor");
    assert_eq!(h.restarts, 1);
    let h = s.actor.health(Duration::from_millis(200)).await;
    assert!(h.alive);
    assert_eq!(h.restarts, 1);
    assert_eq!(s.actor.send(Work).await.ok(), Some(7));
    s.arbiter.stop();
}
