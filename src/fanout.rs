//! Fans what one node tells its sockets out to every node on one database
//! (docs/operations.md, "Several nodes"): each broadcast to the hub's
//! rooms, each revoked key and each change that makes cached keys stale is also
//! published through the store (PostgreSQL `NOTIFY`), and each node's
//! listener hands what another node published to its own hub and key
//! cache. A WebSocket, the console's stream and the operator's channel
//! all join the hub's rooms, so all three hear every node's events.
//!
//! A note names the node that sent it by the store's node id (the one its
//! lease and its job claims carry): a node hears its own notes too and
//! passes over them (its hub had them first). On sled a data dir has one
//! process, and nothing is published.
//!
//! A note the listener missed (the database restarted, the connection was
//! cut) is made up for when it listens again: the node forgets its cached
//! keys and closes the sockets of the keys revoked since its previous
//! connection; events are not replayed (a client catches up through the status
//! endpoints, as after any reconnect).

use std::sync::Arc;

use chrono::{DateTime, Utc};
use emisor_actors::supervisor::Restartable;
use emisor_actors::ws_hub::{Broadcast, CloseKey, Room, WsHub};
use emisor_store::{AsyncStore, Heard};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// How a note names the node that sent it: the first 64 bits of the
/// SHA-256 of the store's node id ([`AsyncStore::node`], the node lease's).
/// A number, as every node's notes have named their node, so that nodes of
/// builds on either side of an upgrade read each other's notes.
fn note_node(node: &str) -> u64 {
    let digest: [u8; 32] = Sha256::digest(node.as_bytes()).into();
    let (first, _) = digest.split_first_chunk::<8>().unwrap_or((&[0; 8], &[]));
    u64::from_be_bytes(*first)
}

/// What goes between nodes, as JSON.
#[derive(Debug, Serialize, Deserialize)]
struct Note {
    node: u64,
    #[serde(flatten)]
    what: What,
}

#[derive(Debug, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum What {
    /// `{"event", "data"}` to the members of `rooms`.
    Broadcast {
        rooms: Vec<Room>,
        event: String,
        data: serde_json::Value,
    },
    /// A key was revoked: refused from now on, its sockets closed.
    KeyRevoked { key_id: u64 },
    /// What cached keys carry changed (a company's rate limit).
    KeysChanged,
}

/// The note telling the other nodes `what` (made only when there are other
/// nodes: on PostgreSQL, whose store names this node; `None` on sled).
fn note(store: &AsyncStore, what: impl FnOnce() -> What) -> Option<String> {
    let node = store.node()?;
    note_text(&node, what())
}

/// Publishes `note` for the other nodes. A note that cannot be published
/// is logged: the hub's local delivery never waits on it, and the key
/// cache's expiry bounds a lost key change.
async fn publish(store: &AsyncStore, note: Option<String>) {
    let Some(text) = note else { return };
    if let Err(e) = store.publish(text).await {
        tracing::warn!(error = %e, "could not tell the other nodes");
    }
}

/// `what` as the note of the node `node`.
fn note_text(node: &str, what: What) -> Option<String> {
    let note = Note {
        node: note_node(node),
        what,
    };
    serde_json::to_string(&note)
        .map_err(|e| tracing::error!(error = %e, "cannot serialize a note for the other nodes"))
        .ok()
}

/// Sends `b` to this node's hub and to every other node's.
pub async fn broadcast(store: &AsyncStore, hub: &Restartable<WsHub>, b: Broadcast) {
    let note = note(store, || What::Broadcast {
        rooms: b.rooms.clone(),
        event: b.event.to_string(),
        data: b.data.clone(),
    });
    hub.addr().do_send(b);
    publish(store, note).await;
}

/// Tells the other nodes that `key_id` was revoked (this node forgot it
/// and closed its sockets already).
pub async fn key_revoked(store: &AsyncStore, key_id: u64) {
    publish(store, note(store, || What::KeyRevoked { key_id })).await;
}

/// Tells the serving nodes that `key_id` was revoked by a process that
/// serves nothing (`emisor admin key revoke` on PostgreSQL while nodes run).
pub fn key_revoked_outside(store: &emisor_store::StoreHandle, key_id: u64) -> anyhow::Result<()> {
    let Some(node) = store.node() else {
        return Ok(());
    };
    if let Some(text) = note_text(&node, What::KeyRevoked { key_id }) {
        store.publish(&text)?;
    }
    Ok(())
}

/// Tells the other nodes that their cached keys are stale.
pub async fn keys_changed(store: &AsyncStore) {
    publish(store, note(store, || What::KeysChanged)).await;
}

/// Starts listening for the other nodes' notes (PostgreSQL only): their
/// broadcasts go to `hub`, a revoked key's sockets are closed there, and
/// `forget_keys` empties this node's key cache.
pub fn start(
    store: &AsyncStore,
    hub: Arc<Restartable<WsHub>>,
    forget_keys: impl Fn() + Send + 'static,
) -> anyhow::Result<()> {
    let Some(node) = store.node() else {
        return Ok(());
    };
    let this_node = note_node(&node);
    let mut heard = store.listen()?;
    let store = store.clone();
    actix_web::rt::spawn(async move {
        // Since when this node has been listening: what was revoked after
        // it, it may have missed when the connection is lost.
        let mut listening_since: Option<DateTime<Utc>> = None;
        while let Some(h) = heard.recv().await {
            match h {
                Heard::Listening => {
                    let now = Utc::now();
                    if let Some(since) = listening_since.replace(now) {
                        catch_up(&store, &hub, &forget_keys, since).await;
                    }
                }
                Heard::Note(text) => match serde_json::from_str::<Note>(&text) {
                    Ok(note) if note.node == this_node => {}
                    Ok(note) => deliver(&hub, &forget_keys, note.what).await,
                    Err(e) => tracing::warn!(error = %e, "a note from another node is not one"),
                },
            }
        }
    });
    Ok(())
}

/// Another node's note, delivered here.
async fn deliver(hub: &Restartable<WsHub>, forget_keys: &impl Fn(), what: What) {
    match what {
        What::Broadcast { rooms, event, data } => {
            hub.addr().do_send(Broadcast::to_rooms(rooms, event, data));
        }
        What::KeyRevoked { key_id } => {
            // Forgotten before its sockets close, as on the node that
            // revoked it: a socket joining meanwhile looks again.
            forget_keys();
            close_key(hub, key_id).await;
        }
        What::KeysChanged => forget_keys(),
    }
}

/// Listening again after a loss: what was missed is made up for.
async fn catch_up(
    store: &AsyncStore,
    hub: &Restartable<WsHub>,
    forget_keys: &impl Fn(),
    since: DateTime<Utc>,
) {
    tracing::info!("listening to the other nodes again: cached keys forgotten");
    forget_keys();
    // A few seconds before, for the clocks of the node that revoked and
    // of this one.
    let since = since - chrono::Duration::seconds(5);
    match store.keys_revoked_since(since).await {
        Ok(keys) => {
            for key_id in keys {
                close_key(hub, key_id).await;
            }
        }
        Err(e) => tracing::warn!(error = %e, "could not read the keys revoked meanwhile"),
    }
}

async fn close_key(hub: &Restartable<WsHub>, key_id: u64) {
    if let Err(e) = hub.addr().send(CloseKey { key_id }).await {
        tracing::error!(error = %e, key_id, "closing a revoked key's WebSockets");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use emisor_actors::ws_hub::Scope;
    use serde_json::json;

    #[test]
    fn a_note_reads_back_as_written() {
        let scope = Scope {
            company: 3,
            environment: 2,
        };
        let what = What::Broadcast {
            rooms: vec![Room::Company(scope), Room::User(scope, 17), Room::Operator],
            event: "facturacion:update".into(),
            data: json!({"id": 5, "errors": ["a"]}),
        };
        for what in [what, What::KeyRevoked { key_id: 9 }, What::KeysChanged] {
            let text = serde_json::to_string(&Note { node: 7, what }).unwrap();
            let back: Note = serde_json::from_str(&text).unwrap();
            assert_eq!(back.node, 7);
            let again = serde_json::to_string(&back).unwrap();
            assert_eq!(text, again);
        }
    }

    #[test]
    fn a_note_names_its_node_by_the_stores_node_id() {
        let a = "0f8e4a52-6b1d-4c3e-9a7f-2d5b8c1e0a93";
        let b = "5c2d9e17-3a4f-4b8c-8e6d-1f0a7b3c9d25";
        let text = note_text(a, What::KeysChanged).unwrap();
        let note: Note = serde_json::from_str(&text).unwrap();
        assert_eq!(note.node, note_node(a), "the same id, the same number");
        assert_ne!(note.node, note_node(b));
        // A number, as nodes of every build read it.
        let raw: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert!(raw["node"].is_u64(), "{raw}");
    }
}
