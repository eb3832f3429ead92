//! `POST /eventos/acuse-recibo` (030), `/recibo-bien` (032),
//! `/aceptacion-expresa` (033), `/aceptacion-tacita` (034, the holder's,
//! 3 business days after 032), `/reclamo` (031 with `motivo`).

use actix_web::{post, web, HttpResponse};

use super::model::{ClaimBody, EventBody};
use crate::engine::events::EventKind;
use crate::http::auth::AuthContext;
use crate::http::envelope;
use crate::http::error::{ApiError, ApiResult};
use crate::http::invoice_events::{check_texts, event_answer, event_message, NOTE_MAX};
use crate::http::json::Json;
use crate::http::state::AppState;
use crate::issuing::invoice_events::register::{register, EventRequest};

/// Registers `req` for the caller and answers spec 2.13.
pub async fn answer(
    state: &AppState,
    ctx: &AuthContext,
    req: EventRequest,
) -> ApiResult<HttpResponse> {
    let done = register(&state.issuing, &ctx.caller(), &ctx.nit, req).await?;
    Ok(envelope::ok(
        event_message(&done.event),
        event_answer(&done.invoice.cufe, &done.event),
    ))
}

async fn simple(
    state: web::Data<AppState>,
    ctx: AuthContext,
    body: EventBody,
    kind: EventKind,
) -> Result<HttpResponse, ApiError> {
    if let Some(id) = body.id_empresa {
        ctx.ensure_company(id)?;
    }
    check_texts(&[("notes", body.notes.as_deref(), NOTE_MAX)])?;
    let received_by = match body.recibido_por {
        Some(_) if !matches!(kind, EventKind::Acknowledgement | EventKind::GoodsReceipt) => {
            return Err(ApiError::validation(
                "recibido_por",
                "names who received in events 030 and 032 only",
            ))
        }
        Some(r) => Some(r.to_receiver()?),
        None => None,
    };
    let req = EventRequest {
        kind,
        cufe: body.cufe,
        notes: body.notes,
        claim_concept: None,
        endorsee: None,
        conditions: None,
        registry: Default::default(),
        received_by,
    };
    answer(&state, &ctx, req).await
}

#[utoipa::path(post, path = "/v1/api/eventos/acuse-recibo", operation_id = "eventAcknowledgement", tag = "eventos-recibidos",
    security(("api_key" = [])), request_body = EventBody,
    responses((status = 200, description = "event 030 registered (estado_tax tells the authority's verdict)"),
              (status = 404, description = "unknown CUFE", body = crate::http::error::ErrorEnvelope),
              (status = 409, description = "INVALID_STATE: out of order or already registered", body = crate::http::error::ErrorEnvelope)))]
#[post("/eventos/acuse-recibo")]
pub async fn acknowledgement(
    state: web::Data<AppState>,
    ctx: AuthContext,
    body: Json<EventBody>,
) -> ApiResult<HttpResponse> {
    simple(state, ctx, body.0, EventKind::Acknowledgement).await
}

#[utoipa::path(post, path = "/v1/api/eventos/recibo-bien", operation_id = "eventGoodsReceipt", tag = "eventos-recibidos",
    security(("api_key" = [])), request_body = EventBody,
    responses((status = 200, description = "event 032 registered"),
              (status = 409, description = "INVALID_STATE", body = crate::http::error::ErrorEnvelope)))]
#[post("/eventos/recibo-bien")]
pub async fn goods_receipt(
    state: web::Data<AppState>,
    ctx: AuthContext,
    body: Json<EventBody>,
) -> ApiResult<HttpResponse> {
    simple(state, ctx, body.0, EventKind::GoodsReceipt).await
}

#[utoipa::path(post, path = "/v1/api/eventos/aceptacion-expresa", operation_id = "eventExpressAcceptance", tag = "eventos-recibidos",
    security(("api_key" = [])), request_body = EventBody,
    responses((status = 200, description = "event 033 registered"),
              (status = 409, description = "INVALID_STATE", body = crate::http::error::ErrorEnvelope)))]
#[post("/eventos/aceptacion-expresa")]
pub async fn express_acceptance(
    state: web::Data<AppState>,
    ctx: AuthContext,
    body: Json<EventBody>,
) -> ApiResult<HttpResponse> {
    simple(state, ctx, body.0, EventKind::ExpressAcceptance).await
}

#[utoipa::path(post, path = "/v1/api/eventos/aceptacion-tacita", operation_id = "eventTacitAcceptance", tag = "eventos-recibidos",
    security(("api_key" = [])), request_body = EventBody,
    responses((status = 200, description = "event 034 registered by the legitimate holder"),
              (status = 409, description = "INVALID_STATE: before 3 business days since 032, or out of order", body = crate::http::error::ErrorEnvelope)))]
#[post("/eventos/aceptacion-tacita")]
pub async fn tacit_acceptance(
    state: web::Data<AppState>,
    ctx: AuthContext,
    body: Json<EventBody>,
) -> ApiResult<HttpResponse> {
    simple(state, ctx, body.0, EventKind::TacitAcceptance).await
}

#[utoipa::path(post, path = "/v1/api/eventos/reclamo", operation_id = "eventClaim", tag = "eventos-recibidos",
    security(("api_key" = [])), request_body = ClaimBody,
    responses((status = 200, description = "event 031 registered"),
              (status = 409, description = "INVALID_STATE", body = crate::http::error::ErrorEnvelope),
              (status = 422, description = "motivo missing or not a claim concept", body = crate::http::error::ErrorEnvelope)))]
#[post("/eventos/reclamo")]
pub async fn claim(
    state: web::Data<AppState>,
    ctx: AuthContext,
    body: Json<ClaimBody>,
) -> ApiResult<HttpResponse> {
    let body = body.0;
    if let Some(id) = body.id_empresa {
        ctx.ensure_company(id)?;
    }
    check_texts(&[("notes", body.notes.as_deref(), NOTE_MAX)])?;
    let motivo = body
        .motivo
        .ok_or_else(|| ApiError::validation("motivo", "is required"))?;
    let req = EventRequest {
        kind: EventKind::Claim,
        cufe: body.cufe,
        notes: body.notes,
        claim_concept: Some(motivo),
        endorsee: None,
        conditions: None,
        registry: Default::default(),
        received_by: None,
    };
    answer(&state, &ctx, req).await
}
