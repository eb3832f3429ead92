//! `POST /nomina/ajuste`: a payroll adjustment (103), `Reemplazar` or
//! `Eliminar`, of a payroll found by its CUNE among the key's company's
//! (spec 2.12, 4.5). What the caller leaves out is taken from the original
//! (`numero_referencia`, `fecha_referencia`, `periodo`, `periodo_nomina`)
//! and stored filled in, so the adjustment rebuilds from its own request.

use actix_web::{post, web, HttpResponse};
use serde_json::{json, Value};

use super::enviar::{check_employer_nit, issued_payroll, refuse_keyed_lines};
use super::mapping::{adjustment_kind, to_adjustment};
use super::model::AjusteRequest;
use super::responses::IssuedPayroll;
use crate::http::auth::AuthContext;
use crate::http::envelope;
use crate::http::error::{ApiError, ApiResult, ErrorCode, ErrorEnvelope};
use crate::http::json::{parse_value, Json};
use crate::http::state::AppState;
use crate::issuing::payroll::{by_code, submit};
use crate::issuing::stored;

/// Fills the original's values into an adjustment body where absent.
async fn with_defaults(
    state: &AppState,
    ctx: &AuthContext,
    mut body: Value,
    cune: &str,
) -> ApiResult<Value> {
    let original = by_code(&state.issuing, ctx.company_id, ctx.environment, cune)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("payroll with CUNE {cune}")))?;
    let raw = state
        .store
        .document_request(original.id)
        .await?
        .ok_or_else(|| ApiError::Internal(format!("request of payroll {}", original.id)))?;
    let sent: Value = serde_json::from_slice(stored::caller(&raw))
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    if sent.get("tipo_nota").and_then(Value::as_i64) == Some(2) {
        return Err(ApiError::conflict(
            ErrorCode::InvalidState,
            format!(
                "payroll {} deletes another one; it cannot be adjusted",
                original.full_number()
            ),
        ));
    }
    let generated = sent
        .get("fecha_gen")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| original.issue_date.to_string());
    let Some(fields) = body.as_object_mut() else {
        return Err(ApiError::MalformedJson("body: expected an object".into()));
    };
    let mut default = |key: &str, value: Option<Value>| {
        if fields.get(key).is_none_or(Value::is_null) {
            if let Some(v) = value {
                fields.insert(key.to_string(), v);
            }
        }
    };
    default("numero_referencia", Some(json!(original.full_number())));
    default("fecha_referencia", Some(json!(generated)));
    default("periodo", sent.get("periodo").cloned());
    default("periodo_nomina", sent.get("periodo_nomina").cloned());
    fields.insert("id_original".into(), json!(original.id));
    Ok(body)
}

#[utoipa::path(post, path = "/v1/api/nomina/ajuste", operation_id = "adjustPayroll", tag = "nomina",
    security(("api_key" = [])),
    request_body = AjusteRequest,
    responses(
        (status = 200, description = "adjustment issued (and transmitted unless transmit is false)", body = inline(envelope::Envelope<IssuedPayroll>)),
        (status = 404, description = "no payroll of this company has that CUNE", body = ErrorEnvelope),
        (status = 409, description = "the original deletes another payroll; or DUPLICATE_PAYLOAD", body = ErrorEnvelope)))]
#[post("/nomina/ajuste")]
pub async fn ajuste(
    state: web::Data<AppState>,
    ctx: AuthContext,
    body: Json<Value>,
) -> ApiResult<HttpResponse> {
    let value = body.0;
    refuse_keyed_lines(&value)?;
    let req: AjusteRequest = parse_value(&value)?;
    check_employer_nit(&ctx, &value)?;
    adjustment_kind(req.tipo_nota)?;
    let cune = req
        .cune_referencia
        .as_deref()
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .ok_or_else(|| ApiError::validation("cune_referencia", "is required"))?
        .to_string();
    let filled = with_defaults(&state, &ctx, value, &cune).await?;
    let req: AjusteRequest = parse_value(&filled)?;
    let request = to_adjustment(&req)?;
    let canonical =
        serde_json::to_vec(&filled).map_err(|e| ApiError::MalformedJson(e.to_string()))?;
    let issued = submit(&state.issuing, ctx.caller(), request, canonical).await?;
    issued_payroll(issued)
}
