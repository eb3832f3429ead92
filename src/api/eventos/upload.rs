//! `POST /eventos/cargar-documento`: a vendor's signed invoice (or its
//! AttachedDocument), as JSON `{"xml_base64": …}` or, with
//! `Content-Type: application/xml`, the XML itself (decisions.md "Content
//! type").

use actix_web::http::header;
use actix_web::{post, web, HttpRequest, HttpResponse};
use base64::Engine as _;

use super::model::{invoice_view, UploadBody};
use crate::http::auth::AuthContext;
use crate::http::envelope;
use crate::http::error::{ApiError, ApiResult};
use crate::http::json::{parse, RawBody};
use crate::http::state::AppState;
use crate::issuing::invoice_events::upload::upload as receive;

fn is_xml(req: &HttpRequest) -> bool {
    req.headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|ct| {
            ct.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .is_some_and(|ct| ct == "application/xml" || ct == "text/xml")
}

fn utf8(bytes: Vec<u8>) -> Result<String, ApiError> {
    String::from_utf8(bytes).map_err(|_| ApiError::validation("xml_base64", "the XML is not UTF-8"))
}

#[utoipa::path(post, path = "/v1/api/eventos/cargar-documento", operation_id = "uploadReceivedInvoice", tag = "eventos-recibidos",
    security(("api_key" = [])), request_body = UploadBody,
    responses((status = 201, description = "received invoice stored"),
              (status = 409, description = "DUPLICATE_REFERENCE: received before (its id in data)", body = crate::http::error::ErrorEnvelope),
              (status = 422, description = "malformed, too deep or too large (more than 100 levels, 100,000 elements or 100 namespace declarations), not for this company, bad signature, or not the document the authority accepted for its CUFE", body = crate::http::error::ErrorEnvelope),
              (status = 503, description = "TAX_UNAVAILABLE: the authority could not be asked; BUSY: too many uploads being checked (Retry-After)", body = crate::http::error::ErrorEnvelope)))]
#[post("/eventos/cargar-documento")]
pub async fn upload(
    state: web::Data<AppState>,
    ctx: AuthContext,
    req: HttpRequest,
    body: RawBody,
) -> ApiResult<HttpResponse> {
    let xml = if is_xml(&req) {
        utf8(body.0)?
    } else {
        let b: UploadBody = parse(&body.0)?;
        if let Some(id) = b.id_empresa {
            ctx.ensure_company(id)?;
        }
        let compact: String = b
            .xml_base64
            .chars()
            .filter(|c| !c.is_ascii_whitespace())
            .collect();
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(compact)
            .map_err(|_| ApiError::validation("xml_base64", "is not valid base64"))?;
        utf8(bytes)?
    };
    let stored = receive(&state.issuing, &ctx.caller(), &ctx.nit, xml).await?;
    Ok(envelope::created(
        "Factura recibida y validada con tax",
        invoice_view(&stored, true),
    ))
}
