//! `POST /facturacion/reenviar/{id}`: a draft (1) or rejected (4) document is
//! regenerated, signed and transmitted; any other state is 409 INVALID_STATE.
//! It applies to FE, NC, ND and DS (spec 4.1); invoices include the export
//! and contingency kinds. POS documents and support-document adjustment
//! notes are refused with 422.

use actix_web::{post, web, HttpResponse};
use emisor_store::state;

use super::create::issued_response;
use super::responses::IssuedResponse;
use super::status::owned_document;
use crate::engine::model::DocumentKind;
use crate::http::auth::AuthContext;
use crate::http::envelope;
use crate::http::error::{ApiError, ApiResult, ErrorCode};
use crate::http::state::AppState;
use crate::issuing::rebuild::resend as resend_document;

#[utoipa::path(post, path = "/v1/api/facturacion/reenviar/{id}", operation_id = "resendDocument", tag = "facturacion",
    security(("api_key" = [])), params(("id" = u64, Path, description = "document id")),
    responses((status = 200, description = "regenerated and transmitted (same body as a synchronous POST /facturacion)", body = inline(envelope::Envelope<IssuedResponse>)),
              (status = 404, description = "no such document", body = crate::http::error::ErrorEnvelope),
              (status = 409, description = "INVALID_STATE: only states 1 and 4 can be resent", body = crate::http::error::ErrorEnvelope),
              (status = 422, description = "not an FE, NC, ND or DS (POS and support-document adjustment notes are not resent)", body = crate::http::error::ErrorEnvelope)))]
#[post("/facturacion/reenviar/{id}")]
pub async fn resend(
    state: web::Data<AppState>,
    ctx: AuthContext,
    id: web::Path<u64>,
) -> ApiResult<HttpResponse> {
    let doc = owned_document(&state, &ctx, id.into_inner()).await?;
    let kind = DocumentKind::from_code(doc.document_type);
    if !kind.is_some_and(resendable) {
        let name = kind.map_or("unknown", DocumentKind::short_name);
        return Err(ApiError::validation(
            "id_tipo_documento",
            format!(
                "reenviar applies to FE, NC, ND and DS; document {} is type {} ({name})",
                doc.id, doc.document_type
            ),
        ));
    }
    if doc.state != state::DRAFT && doc.state != state::REJECTED {
        return Err(ApiError::Conflict {
            code: ErrorCode::InvalidState,
            message: format!(
                "document {} is {} ({}); only Borrador (1) and Rechazado (4) can be resent",
                doc.id,
                state::name(doc.state),
                doc.state
            ),
            data: Some(serde_json::json!({ "id": doc.id, "id_estado_documento": doc.state })),
        });
    }
    // In its own task, so a client that disconnects cannot stop it half way.
    let issuing = state.issuing.clone();
    let issued = actix_web::rt::spawn(async move { resend_document(&issuing, doc).await })
        .await
        .map_err(|e| ApiError::Internal(format!("resend task failed: {e}")))??;
    Ok(issued_response(issued))
}

/// FE (with its export and contingency kinds), NC, ND and DS.
pub fn resendable(kind: DocumentKind) -> bool {
    !matches!(
        kind,
        DocumentKind::Pos | DocumentKind::PosAdjustment | DocumentKind::SupportAdjustment
    )
}
