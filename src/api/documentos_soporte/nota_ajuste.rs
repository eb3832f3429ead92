//! `POST /documentos-soporte/:id/nota-ajuste`: the adjustment note (type 95,
//! unified type 5) of a support document of the key's company. Without
//! `lineas` it adjusts the whole document (its lines as sent).

use actix_web::{post, web, HttpResponse};
use emisor_store::Family;

use super::emitir::answer;
use super::mapping::{adjustment, StoredAdjustment};
use super::model::{AdjustmentRequest, SupportRequest};
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

#[utoipa::path(post, path = "/v1/api/documentos-soporte/{id}/nota-ajuste", operation_id = "adjustSupportDocument", tag = "documentos-soporte",
    security(("api_key" = [])),
    params(("id" = u64, Path, description = "the support document adjusted")),
    request_body = AdjustmentRequest,
    responses(
        (status = 200, description = "the adjustment note, issued", body = inline(envelope::Envelope<super::model::SupportResponse>)),
        (status = 404, description = "no such support document of this company", body = ErrorEnvelope),
        (status = 422, description = "validation", body = ErrorEnvelope),
        (status = 503, description = "production send while the authority is unavailable", body = ErrorEnvelope)))]
#[post("/documentos-soporte/{id}/nota-ajuste")]
pub async fn nota_ajuste(
    state: web::Data<AppState>,
    ctx: AuthContext,
    id: web::Path<u64>,
    body: Json<serde_json::Value>,
) -> ApiResult<HttpResponse> {
    let id = id.into_inner();
    let req: AdjustmentRequest = parse_value(&body.0)?;
    if let Some(r) = req.documento_referencia {
        if r != id {
            return Err(ApiError::validation(
                "documento_referencia",
                format!("must be the adjusted document of the path ({id})"),
            ));
        }
    }
    let original = family_document(&state, &ctx, Family::Support, id).await?;
    if invoicing_kind(&original) != Some(DocumentKind::SupportDocument) {
        return Err(ApiError::validation(
            "id",
            "an adjustment note adjusts a support document (type 4)",
        ));
    }
    // The original as sent: its vendor, and its lines when none are given.
    let sent: Option<SupportRequest> = as_sent(&state.issuing, &original, Api::Support)
        .await?
        .and_then(|raw| parse(&raw).ok());
    let Some(sent) = sent else {
        return Err(ApiError::validation(
            "id",
            "the document was not issued through /documentos-soporte: adjust it with POST /facturacion (type 5)",
        ));
    };
    let stored = StoredAdjustment {
        documento_referencia: id,
        concepto_nota: req
            .concepto_nota
            .clone()
            .ok_or_else(|| ApiError::validation("concepto_nota", "is required (1, 2 or 3)"))?,
        motivo: req
            .motivo
            .clone()
            .ok_or_else(|| ApiError::validation("motivo", "is required"))?,
        proveedor: sent.proveedor,
        lineas: match req.lineas {
            Some(l) => l,
            None => sent.lineas.unwrap_or_default(),
        },
        transmitir: req.transmitir,
        referencia_externa: req.referencia_externa,
    };
    let canonical = serde_json::to_vec(&stored).map_err(|e| ApiError::Internal(e.to_string()))?;
    let request = match adjustment(&stored)? {
        Ok(request) => request,
        Err(refused) => return Err(refuse(&state.issuing, ctx.owner(), refused).await.into()),
    };
    let issued = submit(&state.issuing, ctx.caller(), request, canonical).await?;
    Ok(answer(issued, Some(id)))
}
