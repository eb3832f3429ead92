//! `POST /pos/emitir` (spec 2.11): a sale at the till, always synchronous.
//! With a test key and the authority down the receipt is stored and queued
//! (state 3 or 5) and the answer says so at once; with a live key issuing
//! refuses with 503 before a number is taken (spec 8).

use std::time::Instant;

use actix_web::{post, web, HttpResponse};

use super::mapping::receipt;
use super::model::{PosRequest, PosResponse};
use crate::http::auth::AuthContext;
use crate::http::documents::estado_tax;
use crate::http::envelope;
use crate::http::error::{ApiResult, ErrorEnvelope};
use crate::http::json::{parse_canonical, RawBody};
use crate::http::numbers::money;
use crate::http::state::AppState;
use crate::issuing::issue::{submit, Issued};

/// The answer of spec 2.11 for a receipt or adjustment note, its amounts
/// from the totals issuing computed.
pub fn answer(issued: Issued, started: Instant, reference: Option<u64>) -> HttpResponse {
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
    let base = format!("{}/pos/{}", crate::http::BASE, doc.id);
    let message = match doc.state {
        2 => "Documento POS emitido y aceptado",
        1 => "Documento POS generado (no transmitido)",
        4 => "Documento POS rechazado por tax",
        _ => "Documento POS emitido; la transmisión se reintentará",
    };
    envelope::ok(
        message,
        PosResponse {
            id: doc.id,
            id_tipo_documento: doc.document_type,
            prefijo: doc.prefix.clone(),
            numero: doc.number,
            cude: doc.code.clone().unwrap_or_default(),
            qr_url: doc.qr_url.clone().unwrap_or_default(),
            subtotal: money(totals.line_extension),
            total_impuestos: money(totals.tax_total),
            propina: money(totals.charge_total),
            // Subtotal + taxes + tip (no document discounts here).
            total: money(totals.payable),
            tiempo_emision_ms: started.elapsed().as_millis() as u64,
            id_estado_documento: doc.state,
            estado_tax: estado_tax(doc.state),
            tirilla_url: format!("{base}/tirilla?width=80"),
            xml_url: format!("{}/facturacion/{}/xml", crate::http::BASE, doc.id),
            pdf_url: format!("{}/facturacion/{}/pdf", crate::http::BASE, doc.id),
            documento_referencia: reference,
            transmission,
        },
    )
}

#[utoipa::path(post, path = "/v1/api/pos/emitir", operation_id = "issuePosReceipt", tag = "pos",
    security(("api_key" = [])),
    request_body = PosRequest,
    responses(
        (status = 200, description = "issued synchronously (accepted, rejected, or stored and queued when the authority is down with a test key)", body = inline(envelope::Envelope<PosResponse>)),
        (status = 409, description = "DUPLICATE_REFERENCE / DUPLICATE_IN_PROGRESS / DUPLICATE_PAYLOAD", body = ErrorEnvelope),
        (status = 422, description = "validation (payments not matching the total, no lines…)", body = ErrorEnvelope),
        (status = 503, description = "live key while the authority is unavailable; nothing numbered", body = ErrorEnvelope)))]
#[post("/pos/emitir")]
pub async fn emitir(
    state: web::Data<AppState>,
    ctx: AuthContext,
    body: RawBody,
) -> ApiResult<HttpResponse> {
    let started = Instant::now();
    let (req, canonical): (PosRequest, _) = parse_canonical(&body.0)?;
    let request = receipt(&req)?;
    let issued = submit(&state.issuing, ctx.caller(), request, canonical).await?;
    Ok(answer(issued, started, None))
}
