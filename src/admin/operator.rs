//! `GET /v1/api/ws/operador`: the operator's WebSocket (decisions.md
//! "Operator events"). The admin token in `Authorization: Bearer` opens it,
//! checked like every admin route (a wrong one is counted against its
//! address by `require_admin`); the socket joins the room `operador` and
//! hears `operador:alerta`, `operador:backup` and `operador:reconciliacion`.
//! Pings and closing as on the companies' socket (`crate::api::ws`).

use std::sync::Arc;
use std::time::Duration;

use actix_web::{get, web, HttpRequest, HttpResponse};
use emisor_actors::ws_hub::{Join, Leave, Room, NO_KEY};

use super::companies::WebhookDelivery;
use crate::api::ws::{not_a_handshake, pump, SOCKET_BUFFER};
use crate::http::envelope;
use crate::http::error::{ApiError, ApiResult};
use crate::http::state::AppState;
use crate::issuing::webhooks::{DELIVERY_EVENT, OPERATOR};

/// The operator socket's path (outside `/admin`, beside the companies' `/v1/api/ws`).
pub const PATH: &str = "/v1/api/ws/operador";

#[utoipa::path(get, path = "/v1/api/ws/operador", operation_id = "openOperatorSocket", tag = "admin",
    security(("admin_token" = [])),
    description = "The operator's WebSocket: joins the room `operador`, which hears the installation's events: `operador:alerta` (a company's numbering, resolution validity, certificate or monthly plan crossed its warning threshold; the same event also goes to that company's room and webhook), `operador:backup` (a backup's outcome), `operador:reconciliacion` (a mismatch with the authority). Messages are `{\"event\": …, \"data\": {…}}`. Opened with `Authorization: Bearer <admin token>`, refused like any admin route without it; pings as on `/v1/api/ws`. The same events are POSTed to `[operator] webhook_url`, signed with `[operator] webhook_secret` in `X-Emisor-Signature`.",
    responses((status = 101, description = "WebSocket: messages {\"event\": \"operador:alerta\" | \"operador:backup\" | \"operador:reconciliacion\", \"data\": {…}}")))]
#[get(
    "/v1/api/ws/operador",
    wrap = "actix_web::middleware::from_fn(super::auth::require_admin)"
)]
pub async fn socket(
    req: HttpRequest,
    body: web::Payload,
    state: web::Data<AppState>,
) -> Result<HttpResponse, actix_web::Error> {
    let (response, session, incoming) = actix_ws::handle(&req, body).map_err(not_a_handshake)?;
    let (tx, rx) = tokio::sync::mpsc::channel::<Arc<str>>(SOCKET_BUFFER);
    let hub = state.issuing.hub.addr();
    let id = hub
        .send(Join {
            rooms: vec![Room::Operator],
            key_id: NO_KEY,
            sender: tx,
        })
        .await
        .map_err(|e| ApiError::Internal(format!("WebSocket hub unavailable: {e}")))?;
    let every = Duration::from_secs(state.settings.websocket.ping_interval_s.max(1));
    pump(session, incoming, rx, every, move || {
        hub.do_send(Leave { id })
    });
    Ok(response)
}

/// The operator webhook's delivery log: every attempt, newest last (last 100).
#[utoipa::path(get, path = "/admin/operador/webhooks", operation_id = "listOperatorWebhookDeliveries", tag = "admin", security(("admin_token" = [])),
    responses((status = 200, description = "delivery attempts to `[operator] webhook_url`", body = inline(envelope::Envelope<Vec<WebhookDelivery>>))))]
#[get("/operador/webhooks")]
pub async fn webhook_log(state: web::Data<AppState>) -> ApiResult<HttpResponse> {
    let events = state.store.events(OPERATOR, DELIVERY_EVENT, 100).await?;
    Ok(envelope::ok(
        "Entregas del webhook del operador",
        events
            .into_iter()
            .map(|e| WebhookDelivery {
                at: e.at.to_rfc3339(),
                delivery: e.data,
            })
            .collect::<Vec<_>>(),
    ))
}
