//! `GET /v1/api/ws`: the WebSocket of real-time events (spec 6.1,
//! decisions.md §4). The key (header or `?api_key=`) picks the rooms:
//! `empresa_{id}`, and `user_{id}` when the key belongs to a user. A
//! document's events go to its company's room and to the room of the user
//! whose key issued it; a socket in both gets each event once.

use std::sync::Arc;

use actix_web::{get, web, HttpRequest, HttpResponse};
use actix_ws::Message;
use emisor_actors::ws_hub::{Join, Leave, Room};
use futures_util::StreamExt;

use super::auth::AuthContext;
use super::error::ApiError;
use crate::state::AppState;

/// Messages a slow socket may fall behind before the hub drops it.
const SOCKET_BUFFER: usize = 256;

/// A refused handshake (a plain GET, a wrong version ...), which actix
/// answers with a bare status, as a 422 in the envelope.
fn not_a_handshake(e: actix_web::Error) -> ApiError {
    ApiError::validation(
        "Upgrade",
        format!(
            "{e}: connect with a WebSocket handshake (Upgrade: websocket, Sec-WebSocket-Version: 13)"
        ),
    )
}

#[utoipa::path(get, path = "/v1/api/ws", operation_id = "openEventSocket", tag = "eventos",
    security(("api_key" = [])),
    description = "Joins the room `empresa_{id}` of the key's company and, when the key was created with a `user_id`, the room `user_{id}`. A document's events go to its company's room and to the room of the user whose key issued it; a socket in both rooms gets each event once.",
    responses((status = 101, description = "WebSocket: messages {\"event\": \"facturacion:update\" | \"facturacion:error\" | \"contingencia:batch\", \"data\": {…}}"),
              (status = 422, description = "not a WebSocket handshake", body = super::error::ErrorEnvelope)))]
#[get("/ws")]
pub async fn ws(
    req: HttpRequest,
    body: web::Payload,
    state: web::Data<AppState>,
    ctx: AuthContext,
) -> Result<HttpResponse, actix_web::Error> {
    let (response, mut session, mut incoming) =
        actix_ws::handle(&req, body).map_err(not_a_handshake)?;
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Arc<str>>(SOCKET_BUFFER);
    let mut rooms = vec![Room::Company(ctx.company_id)];
    rooms.extend(ctx.user_id.map(Room::User));
    let hub = state.issuing.hub.addr();
    let id = hub
        .send(Join { rooms, sender: tx })
        .await
        .map_err(|e| ApiError::Internal(format!("WebSocket hub unavailable: {e}")))?;
    actix_web::rt::spawn(async move {
        loop {
            tokio::select! {
                out = rx.recv() => match out {
                    Some(text) => {
                        if session.text(text.to_string()).await.is_err() {
                            break;
                        }
                    }
                    None => break, // the hub dropped us (slow or shutting down)
                },
                msg = incoming.next() => match msg {
                    Some(Ok(Message::Ping(bytes))) => {
                        if session.pong(&bytes).await.is_err() {
                            break;
                        }
                    }
                    Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break,
                    Some(Ok(_)) => {}
                },
            }
        }
        hub.do_send(Leave { id });
        let _ = session.close(None).await;
    });
    Ok(response)
}
