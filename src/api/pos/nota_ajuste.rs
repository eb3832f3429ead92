//! `POST /pos/:id/nota-ajuste`: the adjustment note of a POS receipt of the
//! key's company (unified type 10), with the receipt's buyer, register and
//! cashier; without `lineas` it adjusts the whole receipt (its lines; the
//! tip is not part of the sale adjusted).

use std::time::Instant;

use actix_web::{post, web, HttpResponse};
use emisor_store::Family;

use super::emitir::answer;
use super::mapping::{adjustment, StoredPosAdjustment};
use super::model::{PosAdjustmentRequest, PosRequest};
use crate::engine::model::DocumentKind;
use crate::http::auth::AuthContext;
use crate::http::documents::family_document;
use crate::http::envelope;
use crate::http::error::{ApiError, ApiResult, ErrorEnvelope};
use crate::http::json::{parse, parse_value, Json};
use crate::http::state::AppState;
use crate::issuing::issue::submit;
use crate::issuing::kind::invoicing_kind;
use crate::issuing::reference::{as_sent, refuse};
use crate::issuing::request::Api;

#[utoipa::path(post, path = "/v1/api/pos/{id}/nota-ajuste", operation_id = "adjustPosReceipt", tag = "pos",
    security(("api_key" = [])),
    params(("id" = u64, Path, description = "the POS receipt adjusted")),
    request_body = PosAdjustmentRequest,
    responses(
        (status = 200, description = "the adjustment note, issued", body = inline(envelope::Envelope<super::model::PosResponse>)),
        (status = 404, description = "no such POS receipt of this company", body = ErrorEnvelope),
        (status = 422, description = "validation", body = ErrorEnvelope),
        (status = 503, description = "live key while the authority is unavailable", body = ErrorEnvelope)))]
#[post("/pos/{id}/nota-ajuste")]
pub async fn nota_ajuste(
    state: web::Data<AppState>,
    ctx: AuthContext,
    id: web::Path<u64>,
    body: Json<serde_json::Value>,
) -> ApiResult<HttpResponse> {
    let started = Instant::now();
    let id = id.into_inner();
    let req: PosAdjustmentRequest = parse_value(&body.0)?;
    let original = family_document(&state, &ctx, Family::Pos, id).await?;
    if invoicing_kind(&original) != Some(DocumentKind::Pos) {
        return Err(ApiError::validation(
            "id",
            "an adjustment note adjusts a POS receipt (type 9)",
        ));
    }
    let sent: Option<PosRequest> = as_sent(&state.issuing, &original, Api::Pos)
        .await?
        .and_then(|raw| parse(&raw).ok());
    let Some(sent) = sent else {
        return Err(ApiError::validation(
            "id",
            "the receipt was not issued through /pos: adjust it with POST /facturacion (type 10)",
        ));
    };
    let key = |k: &str| {
        original
            .list_keys
            .get(k)
            .cloned()
            .unwrap_or_else(|| "1".into())
    };
    let stored = StoredPosAdjustment {
        documento_referencia: id,
        concepto: req
            .concepto
            .clone()
            .ok_or_else(|| ApiError::validation("concepto", "is required (1 to 5, spec 2.8)"))?,
        motivo: req
            .motivo
            .clone()
            .ok_or_else(|| ApiError::validation("motivo", "is required"))?,
        cliente: sent.cliente,
        lineas: match req.lineas {
            Some(l) => l,
            None => sent.lineas.unwrap_or_default(),
        },
        precios_incluyen_impuesto: sent.precios_incluyen_impuesto,
        id_caja: key("id_caja"),
        id_cajero: key("id_cajero"),
        transmitir: req.transmitir,
        referencia_externa: req.referencia_externa,
    };
    let canonical = serde_json::to_vec(&stored).map_err(|e| ApiError::Internal(e.to_string()))?;
    let request = match adjustment(&stored)? {
        Ok(request) => request,
        Err(refused) => return Err(refuse(&state.issuing, ctx.owner(), refused).await.into()),
    };
    let issued = submit(&state.issuing, ctx.caller(), request, canonical).await?;
    Ok(answer(issued, started, Some(id)))
}
