//! The WebSocket hub (spec 6.1, decisions.md §4): one actor owns the rooms
//! `empresa_{id}` and `user_{id}`. A room's scope is a company in one
//! environment: `user_17` of one company is not `user_17` of another (the
//! user numbering is each integrator's own), and a test key's room never
//! hears production. Each socket task joins with the sending half of a
//! bounded channel and forwards what arrives to its client; a socket
//! remembers the key it was opened with, so revoking the key closes it.
//!
//! A broadcast goes to one or several rooms; a socket that is in more than
//! one of them gets it once. It is serialized once, to
//! `{"event": …, "data": …}`, and `try_send`s the same `Arc<str>` to every
//! recipient. The hub never waits on a
//! socket: a member whose channel is full (a slow client) or closed (a dead
//! socket) is removed from every room and its sender dropped, so its socket
//! task sees the channel end and closes the connection (the client
//! reconnects and catches up through the status endpoints).

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use actix::{Actor, AsyncContext, Context, Handler, Message, MessageResult};
use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::mpsc::Sender;

use crate::{Ping, Pong};

/// How often sessions whose socket went away are swept even without traffic.
pub const SWEEP_EVERY: Duration = Duration::from_secs(30);

/// Whose rooms: a company in one environment (the authority's code, `1`
/// production, `2` testing).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct Scope {
    pub company: u64,
    pub environment: u8,
}

/// A room: every socket of a company's environment, or of one of its users.
/// Serialized to tell the other nodes on one database (`src/fanout.rs`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub enum Room {
    /// `empresa_{id}`
    Company(Scope),
    /// `user_{id}` of a company's environment.
    User(Scope, u64),
    /// `operador`: the installation's operator (decisions.md "Operator
    /// events"), opened with the admin token rather than a key.
    Operator,
}

impl fmt::Display for Room {
    /// The room's documented name; its scope is not part of it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Room::Company(s) => write!(f, "empresa_{}", s.company),
            Room::User(_, id) => write!(f, "user_{id}"),
            Room::Operator => f.write_str("operador"),
        }
    }
}

/// The `key_id` of a socket opened without an API key (the operator's,
/// with the admin token): no key's revocation closes it (key ids start at 1).
pub const NO_KEY: u64 = 0;

/// Identifies one joined socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub struct SessionId(pub u64);

/// A socket opened with key `key_id` joins `rooms`; what is broadcast
/// there arrives on `sender`.
#[derive(Debug, Clone, Message)]
#[rtype(result = "SessionId")]
pub struct Join {
    pub rooms: Vec<Room>,
    pub key_id: u64,
    pub sender: Sender<Arc<str>>,
}

/// Key `key_id` was revoked: its sockets are let go (their senders dropped,
/// so their tasks close them). Answers how many there were.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "usize")]
pub struct CloseKey {
    pub key_id: u64,
}

/// A socket leaves (its connection closed).
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "()")]
pub struct Leave {
    pub id: SessionId,
}

/// Send `{"event": event, "data": data}` once to every socket that is in
/// at least one of `rooms`.
#[derive(Debug, Clone, Message)]
#[rtype(result = "Delivery")]
pub struct Broadcast {
    pub rooms: Vec<Room>,
    pub event: Cow<'static, str>,
    pub data: serde_json::Value,
}

impl Broadcast {
    /// To the members of one room.
    pub fn new(room: Room, event: impl Into<Cow<'static, str>>, data: serde_json::Value) -> Self {
        Self::to_rooms(vec![room], event, data)
    }

    /// To the members of several rooms, each socket once.
    pub fn to_rooms(
        rooms: Vec<Room>,
        event: impl Into<Cow<'static, str>>,
        data: serde_json::Value,
    ) -> Self {
        Broadcast {
            rooms,
            event: event.into(),
            data,
        }
    }
}

/// What one broadcast did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Delivery {
    pub delivered: usize,
    /// Members removed because their channel was full.
    pub dropped_slow: usize,
    /// Members removed because their socket was gone.
    pub dropped_closed: usize,
}

/// Counts for `/metrics`.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "HubStats")]
pub struct Stats;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct HubStats {
    pub sessions: usize,
    pub rooms: usize,
    pub broadcasts: u64,
    pub messages_sent: u64,
    pub dropped_slow: u64,
    pub dropped_closed: u64,
}

struct Session {
    sender: Sender<Arc<str>>,
    rooms: Vec<Room>,
    key_id: u64,
}

/// The server is stopping: every socket is let go (its sender dropped, so
/// its task closes it) and later joins are let go at once. An open socket
/// would otherwise hold a graceful stop for the whole shutdown timeout.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "usize")]
pub struct CloseAll;

#[derive(Default)]
pub struct WsHub {
    sessions: HashMap<SessionId, Session>,
    rooms: HashMap<Room, HashSet<SessionId>>,
    next_id: u64,
    stats: HubStats,
    closing: bool,
}

#[derive(serde::Serialize)]
struct Envelope<'a> {
    event: &'a str,
    data: &'a serde_json::Value,
}

impl WsHub {
    pub fn new() -> Self {
        Self::default()
    }

    /// The pure operations, also used directly by tests.
    pub fn join(&mut self, join: Join) -> SessionId {
        self.next_id += 1;
        let id = SessionId(self.next_id);
        if self.closing {
            return id; // `join.sender` dropped here: the socket closes
        }
        let mut rooms = join.rooms;
        rooms.sort_unstable();
        rooms.dedup();
        for room in &rooms {
            self.rooms.entry(*room).or_default().insert(id);
        }
        self.sessions.insert(
            id,
            Session {
                sender: join.sender,
                rooms,
                key_id: join.key_id,
            },
        );
        id
    }

    /// Lets every socket of `key_id` go (see [`CloseKey`]).
    pub fn close_key(&mut self, key_id: u64) -> usize {
        let ids: Vec<SessionId> = self
            .sessions
            .iter()
            .filter(|(_, s)| s.key_id == key_id)
            .map(|(id, _)| *id)
            .collect();
        for id in &ids {
            self.leave(*id);
        }
        ids.len()
    }

    /// Lets every socket go (see [`CloseAll`]); returns how many there were.
    pub fn close_all(&mut self) -> usize {
        self.closing = true;
        self.rooms.clear();
        let n = self.sessions.len();
        self.sessions.clear();
        n
    }

    pub fn leave(&mut self, id: SessionId) {
        let Some(session) = self.sessions.remove(&id) else {
            return;
        };
        for room in session.rooms {
            if let Some(members) = self.rooms.get_mut(&room) {
                members.remove(&id);
                if members.is_empty() {
                    self.rooms.remove(&room);
                }
            }
        }
    }

    /// The sessions in any of `rooms`, each once (a socket may be in its
    /// company's room and its user's).
    fn recipients(&self, rooms: &[Room]) -> Vec<SessionId> {
        let mut ids: Vec<SessionId> = rooms
            .iter()
            .filter_map(|room| self.rooms.get(room))
            .flatten()
            .copied()
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    pub fn broadcast(&mut self, b: &Broadcast) -> Delivery {
        let mut d = Delivery::default();
        self.stats.broadcasts += 1;
        let recipients = self.recipients(&b.rooms);
        if recipients.is_empty() {
            return d;
        }
        let text: Arc<str> = match serde_json::to_string(&Envelope {
            event: &b.event,
            data: &b.data,
        }) {
            Ok(s) => s.into(),
            Err(e) => {
                // A `Value` always serializes; keep the hub alive regardless.
                tracing::error!(error = %e, "cannot serialize a WebSocket event");
                return d;
            }
        };
        let mut gone = Vec::new();
        for id in recipients {
            let Some(session) = self.sessions.get(&id) else {
                continue;
            };
            match session.sender.try_send(Arc::clone(&text)) {
                Ok(()) => d.delivered += 1,
                Err(TrySendError::Full(_)) => {
                    d.dropped_slow += 1;
                    gone.push(id);
                }
                Err(TrySendError::Closed(_)) => {
                    d.dropped_closed += 1;
                    gone.push(id);
                }
            }
        }
        for id in gone {
            self.leave(id);
        }
        if d.dropped_slow > 0 {
            tracing::warn!(rooms = ?b.rooms, count = d.dropped_slow, "dropped slow WebSocket clients");
        }
        self.stats.messages_sent += d.delivered as u64;
        self.stats.dropped_slow += d.dropped_slow as u64;
        self.stats.dropped_closed += d.dropped_closed as u64;
        d
    }

    /// Removes sessions whose socket task has gone.
    pub fn sweep(&mut self) -> usize {
        let closed: Vec<SessionId> = self
            .sessions
            .iter()
            .filter(|(_, s)| s.sender.is_closed())
            .map(|(id, _)| *id)
            .collect();
        for id in &closed {
            self.leave(*id);
        }
        self.stats.dropped_closed += closed.len() as u64;
        closed.len()
    }

    pub fn stats(&self) -> HubStats {
        HubStats {
            sessions: self.sessions.len(),
            rooms: self.rooms.len(),
            ..self.stats
        }
    }

    /// Members of `room` now.
    pub fn members(&self, room: Room) -> usize {
        self.rooms.get(&room).map_or(0, HashSet::len)
    }
}

impl Actor for WsHub {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.run_interval(SWEEP_EVERY, |hub, _| {
            hub.sweep();
        });
    }
}

impl Handler<Join> for WsHub {
    type Result = MessageResult<Join>;
    fn handle(&mut self, msg: Join, _: &mut Context<Self>) -> Self::Result {
        let _span = tracing::debug_span!("ws_hub.join", rooms = msg.rooms.len()).entered();
        MessageResult(self.join(msg))
    }
}

impl Handler<Leave> for WsHub {
    type Result = ();
    fn handle(&mut self, msg: Leave, _: &mut Context<Self>) {
        let _span = tracing::debug_span!("ws_hub.leave", id = msg.id.0).entered();
        self.leave(msg.id);
    }
}

impl Handler<Broadcast> for WsHub {
    type Result = MessageResult<Broadcast>;
    fn handle(&mut self, msg: Broadcast, _: &mut Context<Self>) -> Self::Result {
        let _span =
            tracing::debug_span!("ws_hub.broadcast", rooms = ?msg.rooms, event = %msg.event)
                .entered();
        MessageResult(self.broadcast(&msg))
    }
}

impl Handler<CloseAll> for WsHub {
    type Result = usize;
    fn handle(&mut self, _: CloseAll, _: &mut Context<Self>) -> usize {
        self.close_all()
    }
}

impl Handler<CloseKey> for WsHub {
    type Result = usize;
    fn handle(&mut self, msg: CloseKey, _: &mut Context<Self>) -> usize {
        let _span = tracing::debug_span!("ws_hub.close_key", key = msg.key_id).entered();
        self.close_key(msg.key_id)
    }
}

impl Handler<Stats> for WsHub {
    type Result = MessageResult<Stats>;
    fn handle(&mut self, _: Stats, _: &mut Context<Self>) -> Self::Result {
        MessageResult(self.stats())
    }
}

impl Handler<Ping> for WsHub {
    type Result = MessageResult<Ping>;
    fn handle(&mut self, _: Ping, _: &mut Context<Self>) -> Self::Result {
        MessageResult(Pong)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tokio::sync::mpsc::{self, Receiver};

    fn socket(capacity: usize) -> (Sender<Arc<str>>, Receiver<Arc<str>>) {
        mpsc::channel(capacity)
    }

    fn parsed(text: &str) -> serde_json::Value {
        serde_json::from_str(text).unwrap()
    }

    /// `empresa_{id}` of a company's testing environment.
    fn company(id: u64) -> Room {
        Room::Company(Scope {
            company: id,
            environment: 2,
        })
    }

    /// `user_{id}` of a company's testing environment.
    fn user(company: u64, id: u64) -> Room {
        Room::User(
            Scope {
                company,
                environment: 2,
            },
            id,
        )
    }

    fn join(rooms: Vec<Room>, sender: Sender<Arc<str>>) -> Join {
        Join {
            rooms,
            key_id: 0,
            sender,
        }
    }

    #[test]
    fn room_names() {
        assert_eq!(company(7).to_string(), "empresa_7");
        assert_eq!(user(1, 9).to_string(), "user_9");
        assert_eq!(user(2, 9).to_string(), "user_9", "the name keeps no scope");
        assert_eq!(Room::Operator.to_string(), "operador");
    }

    #[actix::test]
    async fn a_room_is_scoped_to_a_company_and_an_environment() {
        let hub = WsHub::new().start();
        let (a_tx, mut a) = socket(8);
        let (b_tx, mut b) = socket(8);
        let (live_tx, mut live) = socket(8);
        // user_17 of company 1 and of company 2; company 1 in production.
        hub.send(join(vec![company(1), user(1, 17)], a_tx))
            .await
            .unwrap();
        hub.send(join(vec![company(2), user(2, 17)], b_tx))
            .await
            .unwrap();
        let production = Scope {
            company: 1,
            environment: 1,
        };
        hub.send(join(
            vec![Room::Company(production), Room::User(production, 17)],
            live_tx,
        ))
        .await
        .unwrap();

        let d = hub
            .send(Broadcast::to_rooms(
                vec![company(2), user(2, 17)],
                "facturacion:update",
                json!(1),
            ))
            .await
            .unwrap();
        assert_eq!(d.delivered, 1, "only company 2's socket");
        assert_eq!(parsed(&b.recv().await.unwrap())["data"], 1);
        assert!(a.try_recv().is_err(), "company 1's user_17 hears nothing");
        assert!(live.try_recv().is_err());

        let d = hub
            .send(Broadcast::to_rooms(
                vec![company(1), user(1, 17)],
                "facturacion:update",
                json!(2),
            ))
            .await
            .unwrap();
        assert_eq!(d.delivered, 1, "only the testing socket of company 1");
        assert_eq!(parsed(&a.recv().await.unwrap())["data"], 2);
        assert!(live.try_recv().is_err(), "production hears no test event");
        assert!(b.try_recv().is_err());
    }

    #[actix::test]
    async fn closing_a_key_lets_its_sockets_go_and_no_other() {
        let hub = WsHub::new().start();
        let (a_tx, mut a) = socket(8);
        let (a2_tx, mut a2) = socket(8);
        let (b_tx, mut b) = socket(8);
        for (key_id, sender) in [(7, a_tx), (7, a2_tx), (8, b_tx)] {
            hub.send(Join {
                rooms: vec![company(1)],
                key_id,
                sender,
            })
            .await
            .unwrap();
        }
        assert_eq!(hub.send(CloseKey { key_id: 7 }).await.unwrap(), 2);
        assert_eq!(a.recv().await, None, "the socket's task sees the end");
        assert_eq!(a2.recv().await, None);
        let d = hub
            .send(Broadcast::new(company(1), "e", json!(1)))
            .await
            .unwrap();
        assert_eq!(d.delivered, 1);
        assert_eq!(parsed(&b.recv().await.unwrap())["data"], 1);
        assert_eq!(hub.send(CloseKey { key_id: 7 }).await.unwrap(), 0);
    }

    #[actix::test]
    async fn close_all_lets_every_socket_go_and_any_later_one_at_once() {
        let hub = WsHub::new().start();
        let (a_tx, mut a) = socket(8);
        hub.send(join(vec![company(1)], a_tx)).await.unwrap();
        assert_eq!(hub.send(CloseAll).await.unwrap(), 1);
        // The sender is gone: the socket's task reads the end and closes.
        assert_eq!(a.recv().await, None);
        let (b_tx, mut b) = socket(8);
        hub.send(join(vec![company(1)], b_tx)).await.unwrap();
        assert_eq!(b.recv().await, None);
        assert_eq!(hub.send(Stats).await.unwrap().sessions, 0);
    }

    #[actix::test]
    async fn members_of_the_room_get_it_and_other_rooms_do_not() {
        let hub = WsHub::new().start();
        let (a_tx, mut a) = socket(8);
        let (b_tx, mut b) = socket(8);
        let (c_tx, mut c) = socket(8);
        hub.send(join(vec![company(1), user(1, 10)], a_tx))
            .await
            .unwrap();
        hub.send(join(vec![company(1)], b_tx)).await.unwrap();
        hub.send(join(vec![company(2)], c_tx)).await.unwrap();

        let data = json!({"id": 5, "prefijo": "SETP", "numero": 990000001, "estado": "aceptado"});
        let d = hub
            .send(Broadcast::new(
                company(1),
                "facturacion:update",
                data.clone(),
            ))
            .await
            .unwrap();
        assert_eq!(d.delivered, 2);
        let a_msg = a.recv().await.unwrap();
        let b_msg = b.recv().await.unwrap();
        assert!(Arc::ptr_eq(&a_msg, &b_msg), "serialized once, shared");
        assert_eq!(
            parsed(&a_msg),
            json!({"event": "facturacion:update", "data": data})
        );
        assert!(c.try_recv().is_err(), "empresa_2 hears nothing");

        // user_10 reaches only a.
        let d = hub
            .send(Broadcast::new(
                user(1, 10),
                String::from("facturacion:error"),
                json!({}),
            ))
            .await
            .unwrap();
        assert_eq!(d.delivered, 1);
        assert_eq!(
            parsed(&a.recv().await.unwrap())["event"],
            "facturacion:error"
        );
        assert!(b.try_recv().is_err());

        // A room nobody joined.
        let d = hub
            .send(Broadcast::new(company(3), "x", json!(null)))
            .await
            .unwrap();
        assert_eq!(d, Delivery::default());
        assert_eq!(hub.send(Ping).await.unwrap(), Pong);
    }

    #[actix::test]
    async fn several_rooms_reach_each_socket_once() {
        let hub = WsHub::new().start();
        let (both_tx, mut both) = socket(8);
        let (company_tx, mut company_rx) = socket(8);
        let (user_tx, mut user_rx) = socket(8);
        let (other_tx, mut other) = socket(8);
        for (rooms, sender) in [
            (vec![company(1), user(1, 10)], both_tx),
            (vec![company(1)], company_tx),
            (vec![user(1, 10)], user_tx),
            (vec![company(2), user(2, 11)], other_tx),
        ] {
            hub.send(join(rooms, sender)).await.unwrap();
        }

        let rooms = vec![company(1), user(1, 10), company(1)];
        let d = hub
            .send(Broadcast::to_rooms(rooms, "facturacion:update", json!(7)))
            .await
            .unwrap();
        assert_eq!(d.delivered, 3, "three sockets, the one in both rooms once");
        for rx in [&mut both, &mut company_rx, &mut user_rx] {
            assert_eq!(parsed(&rx.recv().await.unwrap())["data"], 7);
            assert!(rx.try_recv().is_err(), "exactly once");
        }
        assert!(other.try_recv().is_err(), "other rooms hear nothing");
        let s = hub.send(Stats).await.unwrap();
        assert_eq!((s.broadcasts, s.messages_sent), (1, 3));

        // No room at all, or only empty rooms: nothing is sent.
        let d = hub
            .send(Broadcast::to_rooms(Vec::new(), "e", json!(null)))
            .await
            .unwrap();
        assert_eq!(d, Delivery::default());
        let d = hub
            .send(Broadcast::to_rooms(
                vec![company(3), user(1, 12)],
                "e",
                json!(null),
            ))
            .await
            .unwrap();
        assert_eq!(d, Delivery::default());
    }

    #[actix::test]
    async fn a_slow_receiver_is_dropped_and_the_others_still_get_it() {
        let hub = WsHub::new().start();
        let (slow_tx, mut slow) = socket(1);
        let (fast_tx, mut fast) = socket(8);
        for sender in [slow_tx, fast_tx] {
            hub.send(join(vec![company(1)], sender)).await.unwrap();
        }
        let first = hub
            .send(Broadcast::new(company(1), "e", json!(1)))
            .await
            .unwrap();
        assert_eq!(first.delivered, 2);
        // `slow` has not read the first one: its channel is full.
        let second = hub
            .send(Broadcast::new(company(1), "e", json!(2)))
            .await
            .unwrap();
        assert_eq!(
            second,
            Delivery {
                delivered: 1,
                dropped_slow: 1,
                dropped_closed: 0
            }
        );
        assert_eq!(parsed(&fast.recv().await.unwrap())["data"], 1);
        assert_eq!(parsed(&fast.recv().await.unwrap())["data"], 2);
        // The slow socket gets what it had, then sees its channel end.
        assert_eq!(parsed(&slow.recv().await.unwrap())["data"], 1);
        assert!(slow.recv().await.is_none());
        let s = hub.send(Stats).await.unwrap();
        assert_eq!((s.sessions, s.rooms, s.dropped_slow), (1, 1, 1));
        assert_eq!((s.broadcasts, s.messages_sent), (2, 3));
    }

    #[actix::test]
    async fn a_dropped_receiver_is_removed() {
        let hub = WsHub::new().start();
        let (dead_tx, dead) = socket(4);
        let (live_tx, mut live) = socket(4);
        hub.send(join(vec![company(1), user(1, 3)], dead_tx))
            .await
            .unwrap();
        hub.send(join(vec![company(1)], live_tx)).await.unwrap();
        drop(dead);
        let d = hub
            .send(Broadcast::new(company(1), "e", json!(1)))
            .await
            .unwrap();
        assert_eq!((d.delivered, d.dropped_closed), (1, 1));
        assert!(live.recv().await.is_some());
        let s = hub.send(Stats).await.unwrap();
        assert_eq!((s.sessions, s.rooms), (1, 1), "user_3 went with it");
    }

    #[actix::test]
    async fn leave_and_sweep() {
        let hub = WsHub::new().start();
        let (a_tx, _a) = socket(4);
        let (b_tx, _b) = socket(4);
        let a = hub
            .send(join(vec![company(1), company(1)], a_tx))
            .await
            .unwrap();
        hub.send(join(vec![user(1, 2)], b_tx)).await.unwrap();
        hub.send(Leave { id: a }).await.unwrap();
        hub.send(Leave { id: a }).await.unwrap();
        let s = hub.send(Stats).await.unwrap();
        assert_eq!((s.sessions, s.rooms), (1, 1));

        // A socket that went away without Leave is swept.
        let mut direct = WsHub::new();
        let (tx, rx) = socket(1);
        direct.join(join(vec![user(1, 2)], tx));
        drop(rx);
        assert_eq!(direct.sweep(), 1);
        assert_eq!(direct.members(user(1, 2)), 0);
        assert_eq!(direct.stats().sessions, 0);
    }
}
