//! `POST /nomina/enviar`: one employee's payroll for one period (spec 2.12,
//! 4.5): XML, CUNE, signature, ZIP, transmission, stored.

use actix_web::{post, web, HttpResponse};
use serde_json::Value;

use super::mapping::to_individual;
use super::model::NominaRequest;
use super::responses::{estado, payroll_transmission, tipo, IssuedPayroll, Totales};
use crate::engine::payroll::totals::PayrollTotals;
use crate::http::auth::AuthContext;
use crate::http::envelope;
use crate::http::error::{ApiError, ApiResult, ErrorEnvelope};
use crate::http::json::{parse_value, Json};
use crate::http::state::AppState;
use crate::issuing::error::FieldError;
use crate::issuing::issue::Issued;
use crate::issuing::payroll::submit;

/// The alternative example of spec 2.12 sends `devengados` and
/// `deducciones` as objects keyed by concept: refused (400) with the shape
/// that is accepted.
pub fn refuse_keyed_lines(body: &Value) -> ApiResult<()> {
    for (field, example) in [
        (
            "devengados",
            r#"[{"seccion": "BASICO", "dias_trabajados": 30, "sueldo_trabajado": 1300000}]"#,
        ),
        (
            "deducciones",
            r#"[{"seccion": "SALUD", "porcentaje": 4, "valor_total": 52000}]"#,
        ),
    ] {
        if body.get(field).is_some_and(Value::is_object) {
            return Err(ApiError::MalformedJson(format!(
                "{field}: invalid type: object, expected an array of lines such as {example} (the shape keyed by concept is not accepted)"
            )));
        }
    }
    Ok(())
}

/// 422 for a non-empty `novedades` or `sanciones`: the authority's payroll
/// has no place for them apart from the lines (a sanction is the deduction
/// `Deducciones/Sanciones`; a novelty of the period is an earning or a
/// deduction of its own section), so they would be kept and never written.
/// Checked here, before the mapping, so that a payroll stored with them
/// still rebuilds.
pub fn refuse_unwritten_lists(req: &NominaRequest) -> ApiResult<()> {
    let mut problems = Vec::new();
    if req.novedades.as_ref().is_some_and(|l| !l.is_empty()) {
        problems.push(FieldError::new(
            "novedades",
            "is not written to the authority's payroll: send each novelty of the period as a line of its section in `devengados` (VACACIONES, INCAPACIDAD, LICENCIA, HED, HEN…) or `deducciones`, and a contractual change with `novedad` and `cune_nov`",
        ));
    }
    if req.sanciones.as_ref().is_some_and(|l| !l.is_empty()) {
        problems.push(FieldError::new(
            "sanciones",
            "is not written to the authority's payroll: a sanction is a deduction, send it in `deducciones` with `seccion` SANCION (the authority's Deducciones/Sanciones)",
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(ApiError::validation_list(problems))
    }
}

/// 422 when the body's `empleador.nit` is not the key's company.
pub fn check_employer_nit(ctx: &AuthContext, body: &Value) -> ApiResult<()> {
    let nit = match body.pointer("/empleador/nit") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => return Ok(()),
    };
    if nit.trim() != ctx.nit {
        return Err(ApiError::validation(
            "empleador.nit",
            format!(
                "is the company of the API key's NIT ({}) when given",
                ctx.nit
            ),
        ));
    }
    Ok(())
}

/// The answer for an issued payroll (`enviar` and `ajuste`).
pub fn issued_payroll(issued: Issued<PayrollTotals>) -> ApiResult<HttpResponse> {
    let Issued::Done {
        doc,
        xml,
        transmission,
        totals,
    } = issued
    else {
        return Err(ApiError::Internal("payroll queued unexpectedly".into()));
    };
    let message = match &transmission {
        None => "Nómina generada (no transmitida)",
        Some(t) if t.accepted() => "Nómina emitida y aceptada",
        Some(t) if t.retryable => "Nómina emitida; la transmisión se reintentará",
        Some(_) => "Nómina emitida y rechazada por tax",
    };
    let transmission = transmission
        .and_then(|t| serde_json::to_value(*t).ok())
        .map(|t| payroll_transmission(&t));
    Ok(envelope::ok(
        message,
        IssuedPayroll {
            id: doc.id,
            tipo: tipo(&doc),
            prefijo: doc.prefix.clone(),
            numero: doc.number.to_string(),
            consecutivo: doc.full_number(),
            cune: doc.code.clone().unwrap_or_default(),
            cune_scheme: "CUNE-SHA384",
            qr_url: doc.qr_url.clone().unwrap_or_default(),
            trackId: doc.track_id.clone().or_else(|| doc.code.clone()),
            transmission,
            totales: Totales::from(totals),
            estado: estado(doc.state),
            id_estado_documento: doc.state,
            ambiente: doc.environment.authority_code(),
            xml,
        },
    ))
}

#[utoipa::path(post, path = "/v1/api/nomina/enviar", operation_id = "issuePayroll", tag = "nomina",
    security(("api_key" = [])),
    request_body = NominaRequest,
    responses(
        (status = 200, description = "issued (and transmitted unless transmit is false); a rejection by the authority is a 200 with transmission.isValid false", body = inline(envelope::Envelope<IssuedPayroll>)),
        (status = 409, description = "DUPLICATE_PAYLOAD: the same payroll within the duplicate window", body = ErrorEnvelope),
        (status = 503, description = "production send while the authority is unavailable", body = ErrorEnvelope)))]
#[post("/nomina/enviar")]
pub async fn enviar(
    state: web::Data<AppState>,
    ctx: AuthContext,
    body: Json<Value>,
) -> ApiResult<HttpResponse> {
    let value = body.0;
    refuse_keyed_lines(&value)?;
    let req: NominaRequest = parse_value(&value)?;
    refuse_unwritten_lists(&req)?;
    check_employer_nit(&ctx, &value)?;
    let canonical =
        serde_json::to_vec(&value).map_err(|e| ApiError::MalformedJson(e.to_string()))?;
    let request = to_individual(&req)?;
    let issued = submit(&state.issuing, ctx.caller(), request, canonical).await?;
    issued_payroll(issued)
}
