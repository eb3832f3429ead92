//! `POST /nomina/ajuste`: a payroll adjustment (103), `Reemplazar` or
//! `Eliminar`, of a payroll found by its CUNE among the key's company's
//! (spec 2.12, 4.5). Issuing finds the original
//! (`issuing::payroll::submit_adjustment`); what the caller leaves out is
//! taken from it (`numero_referencia`, `fecha_referencia`, `periodo`,
//! `periodo_nomina`) and stored filled in, so the adjustment rebuilds from
//! its own request.

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
use crate::issuing::payroll::{submit_adjustment, Predecessor};

/// Fills the original's values into an adjustment body where absent.
fn with_defaults(mut body: Value, original: &Predecessor) -> ApiResult<Value> {
    let sent: Value =
        serde_json::from_slice(&original.sent).map_err(|e| ApiError::Internal(e.to_string()))?;
    if sent.get("tipo_nota").and_then(Value::as_i64) == Some(2) {
        return Err(ApiError::conflict(
            ErrorCode::InvalidState,
            format!(
                "payroll {} deletes another one; it cannot be adjusted",
                original.number
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
    default("numero_referencia", Some(json!(original.number)));
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
    // Issuing finds the original; the body is completed from it, mapped,
    // and stored completed, so the adjustment rebuilds from its own request.
    let issued = submit_adjustment(&state.issuing, ctx.caller(), &cune, |original| {
        let filled = with_defaults(value, original)?;
        let req: AjusteRequest = parse_value(&filled)?;
        let request = to_adjustment(&req)?;
        let canonical =
            serde_json::to_vec(&filled).map_err(|e| ApiError::MalformedJson(e.to_string()))?;
        Ok::<_, ApiError>((request, canonical))
    })
    .await?;
    issued_payroll(issued)
}
