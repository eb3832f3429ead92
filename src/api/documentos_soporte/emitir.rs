//! `POST /documentos-soporte/emitir` (spec 2.10): a support document through
//! the issuing path of every API.

use actix_web::{post, web, HttpResponse};

use super::mapping::support_document;
use super::model::{SupportRequest, SupportResponse};
use crate::http::auth::AuthContext;
use crate::http::documents::estado_tax;
use crate::http::envelope;
use crate::http::error::{ApiError, ApiResult, ErrorEnvelope};
use crate::http::json::{parse_canonical, RawBody};
use crate::http::numbers::money;
use crate::http::state::AppState;
use crate::issuing::context::colombia_now;
use crate::issuing::issue::{submit, Issued};

/// The answer of spec 2.10 for an issued document or adjustment note, its
/// amounts from the totals issuing computed.
pub fn answer(issued: Issued, reference: Option<u64>) -> HttpResponse {
    let (doc, transmission, totals) = match issued {
        Issued::Done {
            doc,
            transmission,
            totals,
            ..
        } => (
            doc,
            transmission.and_then(|t| serde_json::to_value(*t).ok()),
            totals,
        ),
        Issued::Queued { doc, totals, .. } => (doc, None, totals),
    };
    let base = format!("{}/documentos-soporte/{}", crate::http::BASE, doc.id);
    let message = match doc.state {
        2 => "Documento soporte emitido y aceptado",
        1 => "Documento soporte generado (no transmitido)",
        4 => "Documento soporte rechazado por tax",
        _ => "Documento soporte emitido; la transmisión se reintentará",
    };
    envelope::ok(
        message,
        SupportResponse {
            id: doc.id,
            id_tipo_documento: doc.document_type,
            prefijo: doc.prefix.clone(),
            numero: doc.number,
            cuds: doc.code.clone().unwrap_or_default(),
            qr_url: doc.qr_url.clone().unwrap_or_default(),
            subtotal: money(totals.line_extension),
            total_retenciones: money(totals.withholding_total),
            // Subtotal less withholdings (spec 2.10).
            total: money(totals.line_extension - totals.withholding_total),
            id_estado_documento: doc.state,
            estado_tax: estado_tax(doc.state),
            pdf_url: format!("{base}/pdf"),
            xml_url: format!("{base}/xml"),
            centro_costos: doc.list_keys.get("centro_costos").cloned(),
            documento_referencia: reference,
            transmission,
        },
    )
}

#[utoipa::path(post, path = "/v1/api/documentos-soporte/emitir", operation_id = "issueSupportDocument", tag = "documentos-soporte",
    security(("api_key" = [])),
    request_body = SupportRequest,
    responses(
        (status = 200, description = "issued (and transmitted unless transmitir is false)", body = inline(envelope::Envelope<SupportResponse>)),
        (status = 409, description = "DUPLICATE_REFERENCE / DUPLICATE_IN_PROGRESS / DUPLICATE_PAYLOAD", body = ErrorEnvelope),
        (status = 422, description = "validation", body = ErrorEnvelope),
        (status = 503, description = "production send while the authority is unavailable", body = ErrorEnvelope)))]
#[post("/documentos-soporte/emitir")]
pub async fn emitir(
    state: web::Data<AppState>,
    ctx: AuthContext,
    body: RawBody,
) -> ApiResult<HttpResponse> {
    let (req, canonical): (SupportRequest, _) = parse_canonical(&body.0)?;
    // A support document names no original: its refusal is complete.
    let request = support_document(&req, colombia_now().date_naive())?
        .map_err(|refused| ApiError::validation_list(refused.assuming_found()))?;
    let issued = submit(&state.issuing, ctx.caller(), request, canonical).await?;
    Ok(answer(issued, None))
}
