//! API keys of a company: create (the key is shown once), list, revoke
//! (which also closes the key's open WebSockets).

use actix_web::{get, post, web, HttpResponse};
use chrono::Utc;
use emisor_actors::ws_hub::CloseKey;
use emisor_store::{ApiKeyRecord, Environment};
use serde::Deserialize;
use utoipa::ToSchema;

use super::views::ApiKeyView;
use crate::http::envelope;
use crate::http::error::{ApiError, ApiResult};
use crate::http::json::Json;
use crate::http::state::AppState;
use crate::provisioning::api_keys::create_api_key;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct KeyRequest {
    /// `test` (sk_test_, sandbox) or `live` (sk_live_, production).
    pub ambiente: String,
    #[serde(default)]
    pub label: Option<String>,
    /// The user the key belongs to, in the integrator's own numbering: its
    /// WebSocket joins `user_{id}`, which hears the events of the documents
    /// the key issues. The room is the company's and the key's environment's
    /// own: another company's user with the same number is another room.
    /// Omitted: a company key.
    #[serde(default)]
    pub user_id: Option<u64>,
}

pub fn environment(s: &str) -> Result<Environment, ApiError> {
    match s {
        "test" | "pruebas" | "2" => Ok(Environment::Test),
        "live" | "produccion" | "1" => Ok(Environment::Live),
        _ => Err(ApiError::validation("ambiente", "must be `test` or `live`")),
    }
}

#[utoipa::path(post, path = "/admin/companies/{id}/api-keys", operation_id = "createApiKey", tag = "admin", security(("admin_token" = [])),
    params(("id" = u64, Path, description = "id_empresa")), request_body = KeyRequest,
    responses((status = 201, description = "created; `key` is shown only here; with `user_id` the key is that user's (WebSocket room `user_{id}`)", body = inline(envelope::Envelope<ApiKeyView>)),
              (status = 404, description = "no such company", body = crate::http::error::ErrorEnvelope)))]
#[post("/companies/{id}/api-keys")]
pub async fn create(
    state: web::Data<AppState>,
    id: web::Path<u64>,
    body: Json<KeyRequest>,
) -> ApiResult<HttpResponse> {
    let view = issue_key(&state, id.into_inner(), body.0).await?;
    Ok(envelope::created("API key creada", view))
}

/// Creates a company's API key (the admin API's and the console's): the
/// view carries the key itself, to be shown once and never stored.
pub async fn issue_key(state: &AppState, id: u64, request: KeyRequest) -> ApiResult<ApiKeyView> {
    let KeyRequest {
        ambiente,
        label,
        user_id,
    } = request;
    let env = environment(&ambiente)?;
    let issued = state
        .store
        .blocking(move |s| create_api_key(s, id, env, label, user_id))
        .await??;
    let mut view = ApiKeyView::from(issued.record);
    view.key = Some(issued.secret);
    Ok(view)
}

#[utoipa::path(get, path = "/admin/companies/{id}/api-keys", operation_id = "listApiKeys", tag = "admin", security(("admin_token" = [])),
    params(("id" = u64, Path, description = "id_empresa")),
    responses((status = 200, description = "keys, without secrets", body = inline(envelope::Envelope<Vec<ApiKeyView>>))))]
#[get("/companies/{id}/api-keys")]
pub async fn list(state: web::Data<AppState>, id: web::Path<u64>) -> ApiResult<HttpResponse> {
    let st = state.clone();
    let id = id.into_inner();
    let keys = st
        .store
        .blocking(move |s| -> ApiResult<_> {
            s.company(id)?
                .ok_or_else(|| ApiError::NotFound("company".into()))?;
            Ok(s.api_keys(id)?)
        })
        .await??;
    Ok(envelope::ok(
        "API keys",
        keys.into_iter().map(ApiKeyView::from).collect::<Vec<_>>(),
    ))
}

#[utoipa::path(post, path = "/admin/api-keys/{key_id}/revoke", operation_id = "revokeApiKey", tag = "admin", security(("admin_token" = [])),
    params(("key_id" = u64, Path, description = "id of the key")),
    responses((status = 200, description = "revoked (idempotent); the key's open WebSockets are closed", body = inline(envelope::Envelope<ApiKeyView>)),
              (status = 404, description = "no such key", body = crate::http::error::ErrorEnvelope)))]
#[post("/api-keys/{key_id}/revoke")]
pub async fn revoke(state: web::Data<AppState>, key_id: web::Path<u64>) -> ApiResult<HttpResponse> {
    let key = revoke_key(&state, key_id.into_inner()).await?;
    Ok(envelope::ok("API key revocada", ApiKeyView::from(key)))
}

/// Revokes a key (the admin API's and the console's): the key cache
/// forgets it and its open WebSockets close before this returns.
pub async fn revoke_key(state: &AppState, key_id: u64) -> ApiResult<ApiKeyRecord> {
    let key = state
        .store
        .blocking(move |s| s.revoke_api_key(key_id, Utc::now()))
        .await??
        .ok_or_else(|| ApiError::NotFound("API key".into()))?;
    state.forget_keys();
    // A socket opened before the revocation would go on hearing the
    // company's events: the hub lets the key's sockets go before we answer.
    if let Err(e) = state.issuing.hub.addr().send(CloseKey { key_id }).await {
        tracing::error!(error = %e, key_id, "closing a revoked key's WebSockets");
    }
    // And on every other node, once it hears of it.
    crate::fanout::key_revoked(&state.store, key_id).await;
    Ok(key)
}
