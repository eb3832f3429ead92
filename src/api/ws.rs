//! `GET /v1/api/ws`: the WebSocket of real-time events (spec 6.1,
//! decisions.md §4). The key (header, or `?api_key=` on this handshake
//! only) picks the rooms: `empresa_{id}`, and `user_{id}` when the key
//! belongs to a user, both of the key's company and environment. A
//! document's events go to its company's room and to the room of the user
//! whose key issued it; a socket in both gets each event once.
//!
//! The server pings every socket each `[websocket] ping_interval_s` and
//! closes one that has not answered two pings (a listener that only listens
//! answers them, as every WebSocket client does); a send the peer does not
//! take within the same interval closes it too. Revoking the key closes its
//! sockets (the hub lets them go).

use std::sync::Arc;
use std::time::Duration;

use actix_web::{get, web, HttpRequest, HttpResponse};
use actix_ws::{CloseCode, CloseReason, Message};
use emisor_actors::ws_hub::{Join, Leave, Room};
use futures_util::StreamExt;

use crate::http::auth::AuthContext;
use crate::http::error::ApiError;
use crate::http::state::AppState;
use crate::issuing::events::scope;

/// Messages a slow socket may fall behind before the hub drops it.
pub const SOCKET_BUFFER: usize = 256;

/// Pings a socket may leave unanswered; at the next tick it is closed.
const MISSED_PINGS: u32 = 2;

/// `write` went out within `every`. Every write is bounded so: a peer that
/// stops reading fills its TCP window, and an unbounded write would hold
/// the socket's task (and the connection) forever.
async fn sent(
    every: Duration,
    write: impl std::future::Future<Output = Result<(), actix_ws::Closed>>,
) -> bool {
    matches!(tokio::time::timeout(every, write).await, Ok(Ok(())))
}

/// The key of the handshake is still a valid key (not revoked meanwhile).
async fn still_valid(state: &AppState, req: &HttpRequest) -> bool {
    let Some(secret) =
        crate::http::auth::presented_key(req.headers(), req.path(), req.query_string())
    else {
        return false;
    };
    crate::http::auth::resolve(state, &secret).await.is_ok()
}

/// A refused handshake (a plain GET, a wrong version ...), which actix
/// answers with a bare status, as a 422 in the envelope.
pub fn not_a_handshake(e: actix_web::Error) -> ApiError {
    ApiError::validation(
        "Upgrade",
        format!(
            "{e}: connect with a WebSocket handshake (Upgrade: websocket, Sec-WebSocket-Version: 13)"
        ),
    )
}

#[utoipa::path(get, path = "/v1/api/ws", operation_id = "openEventSocket", tag = "eventos",
    security(("api_key" = [])),
    description = "Joins the room `empresa_{id}` of the key's company and, when the key was created with a `user_id`, the room `user_{id}`. Both rooms are those of the key's company and environment: a `user_{id}` of one company never hears another company's user with the same number, and a test key never hears production. A document's events go to its company's room and to the room of the user whose key issued it; a socket in both rooms gets each event once. The key may be given as `?api_key=` on this handshake only (browsers cannot set headers on it). The server pings each socket every `[websocket] ping_interval_s` seconds (30 by default) and closes one that has not answered two pings; revoking the key closes its sockets.",
    responses((status = 101, description = "WebSocket: messages {\"event\": \"facturacion:update\" | \"facturacion:error\" | \"contingencia:batch\" | \"operador:alerta\", \"data\": {…}}"),
              (status = 422, description = "not a WebSocket handshake", body = crate::http::error::ErrorEnvelope)))]
#[get("/ws")]
pub async fn ws(
    req: HttpRequest,
    body: web::Payload,
    state: web::Data<AppState>,
    ctx: AuthContext,
) -> Result<HttpResponse, actix_web::Error> {
    let (response, session, incoming) = actix_ws::handle(&req, body).map_err(not_a_handshake)?;
    let (tx, rx) = tokio::sync::mpsc::channel::<Arc<str>>(SOCKET_BUFFER);
    let scope = scope(ctx.company_id, ctx.environment);
    let mut rooms = vec![Room::Company(scope)];
    rooms.extend(ctx.user_id.map(|user| Room::User(scope, user)));
    let hub = state.issuing.hub.addr();
    let id = hub
        .send(Join {
            rooms,
            key_id: ctx.key_id,
            sender: tx,
        })
        .await
        .map_err(|e| ApiError::Internal(format!("WebSocket hub unavailable: {e}")))?;
    // A revocation between the key check and the join closed the key's
    // sockets without this one: look again now that it is in the hub (the
    // revocation forgets cached keys before it closes sockets).
    if !still_valid(&state, &req).await {
        hub.do_send(Leave { id });
        return Err(ApiError::InvalidApiKey.into());
    }
    let every = Duration::from_secs(state.settings.websocket.ping_interval_s.max(1));
    pump(session, incoming, rx, every, move || {
        hub.do_send(Leave { id })
    });
    Ok(response)
}

/// Runs a joined socket until it ends: forwards what the hub sends, answers
/// the client's pings, pings it every `every` and closes it after
/// [`MISSED_PINGS`] unanswered; `leave` tells the hub it is gone. The
/// operator's socket (`crate::admin::operator`) runs on it too.
pub fn pump(
    mut session: actix_ws::Session,
    mut incoming: actix_ws::MessageStream,
    mut rx: tokio::sync::mpsc::Receiver<Arc<str>>,
    every: Duration,
    leave: impl FnOnce() + 'static,
) {
    actix_web::rt::spawn(async move {
        let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut unanswered = 0u32;
        let mut reason = None;
        loop {
            tokio::select! {
                out = rx.recv() => match out {
                    Some(text) => {
                        if !sent(every, session.text(text.to_string())).await {
                            break;
                        }
                    }
                    None => break, // the hub let us go (slow, key revoked, shutting down)
                },
                msg = incoming.next() => match msg {
                    Some(Ok(Message::Ping(bytes))) => {
                        if !sent(every, session.pong(&bytes)).await {
                            break;
                        }
                    }
                    Some(Ok(Message::Pong(_))) => unanswered = 0,
                    Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break,
                    Some(Ok(_)) => {}
                },
                _ = ticks.tick() => {
                    if unanswered >= MISSED_PINGS {
                        reason = Some(CloseReason {
                            code: CloseCode::Away,
                            description: Some(format!("no answer to {MISSED_PINGS} pings")),
                        });
                        break;
                    }
                    if !sent(every, session.ping(b"")).await {
                        break;
                    }
                    unanswered += 1;
                }
            }
        }
        leave();
        let _ = tokio::time::timeout(every, session.close(reason)).await;
    });
}
