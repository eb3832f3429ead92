//! The payroll API's stored requests, translated again for issuing (a
//! half-built payroll after a crash, a resend). An adjustment is stored
//! with the original's defaults filled in, so it needs nothing else.
//!
//! The reader of the earlier format of stored requests (the caller's JSON
//! alone, `issuing::stored`): such a payroll is built again from what this
//! makes of it; one of today's format is built from its domain request.

use serde_json::Value;

use super::mapping::{to_adjustment, to_individual};
use super::model::{AjusteRequest, NominaRequest};
use crate::http::error::ApiError;
use crate::http::json::parse;
use crate::issuing::error::{IssueError, IssueResult};
use crate::issuing::payroll::PayrollRequest;
use crate::issuing::request::PayrollTranslator;

pub struct NominaTranslator;

fn stored(e: ApiError) -> IssueError {
    match e {
        ApiError::Validation { message, details } => IssueError::Invalid { message, details },
        other => IssueError::Internal(format!("stored payroll request: {other}")),
    }
}

/// A stored payroll request (`enviar` or `ajuste`) as a payroll to issue.
pub fn translate(request: &[u8]) -> Result<PayrollRequest, ApiError> {
    let value: Value = parse(request)?;
    if value.get("cune_referencia").is_some() {
        to_adjustment(&parse::<AjusteRequest>(request)?)
    } else {
        to_individual(&parse::<NominaRequest>(request)?)
    }
}

impl PayrollTranslator for NominaTranslator {
    fn translate(&self, request: &[u8]) -> IssueResult<PayrollRequest> {
        translate(request).map_err(stored)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn monthly() -> Value {
        json!({
            "empleado": {"numero_documento": "1020", "primer_nombre": "Ana", "primer_apellido": "Gómez"},
            "periodo": {"fecha_liquidacion_inicio": "2025-03-01", "fecha_liquidacion_fin": "2025-03-31",
                        "tiempo_laborado_dias": 30},
            "devengados": [{"seccion": "BASICO", "sueldo_trabajado": 1423500}],
            "deducciones": [{"seccion": "SALUD", "valor_total": 56940}],
            "transmit": false
        })
    }

    #[test]
    fn a_stored_payroll_translates_to_what_was_issued() {
        let body = monthly();
        let bytes = serde_json::to_vec(&body).unwrap();
        let issued = to_individual(&parse::<NominaRequest>(&bytes).unwrap()).unwrap();
        let again = NominaTranslator.translate(&bytes).unwrap();
        assert_eq!(again.document, issued.document);
        assert!(!again.transmit);
    }

    #[test]
    fn a_stored_adjustment_rebuilds_alone() {
        let mut body = monthly();
        body["cune_referencia"] = json!("a".repeat(96));
        body["numero_referencia"] = json!("NOM7");
        body["fecha_referencia"] = json!("2025-03-31");
        body["tipo_nota"] = json!(2);
        let bytes = serde_json::to_vec(&body).unwrap();
        let again = NominaTranslator.translate(&bytes).unwrap();
        let p = again.document.predecessor.expect("predecessor");
        assert_eq!(p.number, "NOM7");
        assert_eq!(
            again.document.kind,
            crate::engine::payroll::model::PayrollKind::Delete
        );
    }
}
