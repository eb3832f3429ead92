//! `POST /clientes`: creates the customer, or updates the one with the same
//! identification number (201 when new, 200 when updated).

use actix_web::{post, web, HttpResponse};

use super::model::CustomerResponse;
use crate::api::invoice_request::customer::CustomerRequest;
use crate::http::auth::AuthContext;
use crate::http::envelope;
use crate::http::error::{ApiError, ApiResult};
use crate::http::json::Json;
use crate::http::state::AppState;

#[utoipa::path(post, path = "/v1/api/clientes", operation_id = "createCustomer", tag = "clientes",
    security(("api_key" = [])),
    request_body = CustomerRequest,
    responses((status = 201, description = "created", body = inline(envelope::Envelope<CustomerResponse>)),
              (status = 200, description = "updated (same identification number)", body = inline(envelope::Envelope<CustomerResponse>))))]
#[post("/clientes")]
pub async fn create_customer(
    state: web::Data<AppState>,
    ctx: AuthContext,
    body: Json<CustomerRequest>,
) -> ApiResult<HttpResponse> {
    let req = body.0;
    let mut errors = req.validate("");
    if req.completar_adquiriente {
        // A document's buyer only; `GET /clientes/adquiriente` looks one up.
        errors = vec![crate::http::error::FieldError::new(
            "completar_adquiriente",
            "applies to a document's customer only; GET /clientes/adquiriente looks a buyer up",
        )];
    }
    if !errors.is_empty() {
        return Err(ApiError::validation_list(errors));
    }

    let company = ctx.company_id;
    let input = req.to_input();
    let customer = state.store.upsert_customer(company, input).await?;
    let created = customer.created_at == customer.updated_at;
    let body = CustomerResponse::from(customer);
    Ok(if created {
        envelope::created("Cliente creado", body)
    } else {
        envelope::ok("Cliente actualizado", body)
    })
}
