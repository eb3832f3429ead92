//! `completar_adquiriente`: a document's buyer completed from the
//! authority's register (`GetAcquirer`, Res. 000202/2025) once the request
//! is otherwise valid and before anything is issued. The name and email the
//! caller left out are filled in the request, and in the JSON stored with
//! the document, so that a rebuild never asks again. A failed look-up
//! fails the request (404 `NOT_FOUND`, 503 `TAX_UNAVAILABLE`) with nothing
//! consumed. The data serves this invoice only: it is not kept apart from it.

use serde_json::Value;

use super::customer::CustomerRequest;
use crate::engine::model::DocumentKind;
use crate::http::auth::AuthContext;
use crate::http::error::{ApiError, ApiResult};
use crate::http::state::AppState;
use crate::issuing::buyers::BuyerId;

/// Where the caller's buyer sits and how its fields are spelled, for the
/// refusals and for the stored JSON.
pub struct Fields<'a> {
    /// `customer` or `cliente` (`proveedor`).
    pub object: &'a str,
    pub name: &'a str,
    pub email: &'a str,
    pub flag: &'a str,
}

/// The unified API's spelling.
pub const UNIFIED: Fields<'static> = Fields {
    object: "customer",
    name: "name",
    email: "email",
    flag: "completar_adquiriente",
};

/// Refuses `completar_adquiriente` on a POS receipt: a sale at the till
/// does not wait for the authority.
pub fn refuse_on_pos(kind: DocumentKind, at: &Fields<'_>) -> ApiResult<()> {
    if kind == DocumentKind::Pos {
        return Err(ApiError::validation(
            format!("{}.{}", at.object, at.flag),
            "is not accepted on POS receipts: give the buyer's name and email",
        ));
    }
    Ok(())
}

/// Fills `customer`'s missing name and email from the authority, in the
/// caller's company and environment. The caller has validated the request.
pub async fn complete(
    state: &AppState,
    ctx: &AuthContext,
    customer: &mut CustomerRequest,
    at: &Fields<'_>,
) -> ApiResult<()> {
    let code = customer
        .type_document_identification
        .as_ref()
        .map(|c| c.code.as_str())
        .unwrap_or_default();
    let id = BuyerId::parse(code, &customer.identification_number).map_err(|e| {
        ApiError::validation(
            format!("{}.identification_number", at.object),
            e.to_string(),
        )
    })?;
    let (company, environment) = ctx.owner();
    let buyer = state
        .buyers
        .look_up(&state.issuing, company, environment, &id)
        .await?;
    if customer.name.trim().is_empty() {
        customer.name = buyer.name;
    }
    if customer.email.trim().is_empty() {
        customer.email = buyer.email.ok_or_else(|| {
            ApiError::validation(
                format!("{}.{}", at.object, at.email),
                "the authority has no email registered for this buyer: give one",
            )
        })?;
    }
    Ok(())
}

/// `body` with the buyer's name and email written into its buyer object
/// (under the names the caller used, `name`/`email` otherwise).
pub fn write_into(body: &mut Value, at: &Fields<'_>, customer: &CustomerRequest) {
    let Some(object) = body.get_mut(at.object).and_then(Value::as_object_mut) else {
        return;
    };
    object.insert(at.name.to_string(), Value::String(customer.name.clone()));
    object.insert(at.email.to_string(), Value::String(customer.email.clone()));
}
