//! `POST /facturacion/reenviar/{id}`: a draft (1) or rejected (4) document is
//! regenerated, signed and transmitted; any other state is 409 INVALID_STATE.

use actix_web::{post, web, HttpResponse};
use emisor_store::state;

use super::create::issued_response;
use super::responses::IssuedResponse;
use super::status::owned_document;
use crate::api::auth::AuthContext;
use crate::api::envelope;
use crate::api::error::{ApiError, ApiResult};
use crate::issuing::issue::resend as resend_document;
use crate::state::AppState;

#[utoipa::path(post, path = "/v1/api/facturacion/reenviar/{id}", tag = "facturacion",
    security(("api_key" = [])), params(("id" = u64, Path, description = "document id")),
    responses((status = 200, description = "regenerated and transmitted (same body as a synchronous POST /facturacion)", body = inline(envelope::Envelope<IssuedResponse>)),
              (status = 404, description = "no such document", body = crate::api::error::ErrorEnvelope),
              (status = 409, description = "INVALID_STATE: only states 1 and 4 can be resent", body = crate::api::error::ErrorEnvelope)))]
#[post("/facturacion/reenviar/{id}")]
pub async fn resend(
    state: web::Data<AppState>,
    ctx: AuthContext,
    id: web::Path<u64>,
) -> ApiResult<HttpResponse> {
    let doc = owned_document(&state, &ctx, id.into_inner())?;
    if doc.state != state::DRAFT && doc.state != state::REJECTED {
        return Err(ApiError::Conflict {
            code: "INVALID_STATE",
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
