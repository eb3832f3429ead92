//! `GET /console/stream`: the sign-in's live view as server-sent events.
//! Opened on the session cookie, never a key in the URL; refused (403)
//! unless it comes from the console's own pages (`Origin` this server, or
//! none with `Sec-Fetch-Site: same-origin`: `guard::from_own_page`), so
//! another site's page cannot open it with the user's cookie. A company session hears its company's
//! room in its environment; the admin session the operator's room and every
//! company's room of the environment it shows.
//!
//! Each hub message becomes one `data:` line; a comment every
//! [`KEEPALIVE`] finds a closed connection, which leaves the hub.

use std::sync::Arc;
use std::time::Duration;

use actix_web::{web, HttpRequest, HttpResponse};
use emisor_actors::ws_hub::{Join, Leave, Room, Scope, NO_KEY};
use futures_util::stream;

use super::error::{ConsoleError, ConsoleResult};
use super::guard::{from_own_page, Signed};
use crate::http::state::AppState;

/// How often a quiet stream sends a comment.
const KEEPALIVE: Duration = Duration::from_secs(15);
/// Events a slow browser may have unread before the hub lets it go.
const BUFFER: usize = 64;

/// Tells the hub a stream ended, however it ended.
struct Leaving {
    hub: actix::Addr<emisor_actors::ws_hub::WsHub>,
    id: emisor_actors::ws_hub::SessionId,
}

impl Drop for Leaving {
    fn drop(&mut self) {
        self.hub.do_send(Leave { id: self.id });
    }
}

pub async fn open(
    req: HttpRequest,
    state: web::Data<AppState>,
    signed: Signed,
) -> ConsoleResult<HttpResponse> {
    if !from_own_page(&req) {
        tracing::warn!(target: "emisor::console", "console stream refused: Origin missing or foreign");
        return Err(ConsoleError::Forbidden(
            "El canal en vivo solo se abre desde la consola misma (Origin).".into(),
        ));
    }
    let environment = signed.environment().authority_code();
    let (rooms, key_id) = match signed.key() {
        Some(key) => (
            vec![Room::Company(Scope {
                company: key.company_id,
                environment,
            })],
            key.key_id,
        ),
        None => {
            let mut rooms = vec![Room::Operator];
            for company in state.store.companies().await? {
                rooms.push(Room::Company(Scope {
                    company: company.id,
                    environment,
                }));
            }
            (rooms, NO_KEY)
        }
    };
    let (tx, rx) = tokio::sync::mpsc::channel::<Arc<str>>(BUFFER);
    let hub = state.issuing.hub.addr();
    let id = hub
        .send(Join {
            rooms,
            key_id,
            sender: tx,
        })
        .await
        .map_err(|e| {
            ConsoleError::Api(crate::http::error::ApiError::Internal(format!("hub: {e}")))
        })?;
    let leaving = Leaving { hub, id };
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + KEEPALIVE, KEEPALIVE);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let first = web::Bytes::from_static(b": emisor\n\n");
    let events = stream::unfold(
        (rx, ticks, leaving, Some(first)),
        |(mut rx, mut ticks, leaving, first)| async move {
            if let Some(first) = first {
                return Some((Ok::<_, actix_web::Error>(first), (rx, ticks, leaving, None)));
            }
            let chunk = tokio::select! {
                message = rx.recv() => match message {
                    // One line: the hub's JSON has no raw newline.
                    Some(text) => web::Bytes::from(format!("data: {text}\n\n")),
                    None => return None,
                },
                _ = ticks.tick() => web::Bytes::from_static(b": \n\n"),
            };
            Some((Ok(chunk), (rx, ticks, leaving, None)))
        },
    );
    Ok(HttpResponse::Ok()
        .content_type("text/event-stream")
        .insert_header(("Cache-Control", "no-store"))
        .insert_header(("X-Accel-Buffering", "no"))
        .streaming(events))
}
