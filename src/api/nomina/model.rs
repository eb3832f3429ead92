//! The JSON bodies of `/nomina` (spec 2.12), as the caller sends them.
//!
//! Shape decisions where the spec is silent:
//! - Unknown fields are ignored; `id_empresa` and `ambiente` in a body are
//!   ignored too (spec 4.5 rule 1: the key decides).
//! - `devengados` and `deducciones` are arrays of lines. The alternative
//!   example of spec 2.12 (objects keyed by concept) is refused as a wrong
//!   JSON type, 400 `MALFORMED_JSON`, with a message showing the expected
//!   shape: one shape is documented, one is accepted.
//! - Money and rates are JSON numbers read exactly into decimals; a string
//!   where a number goes is a wrong type (400). Codes (`tipo_documento`,
//!   `tipo_contrato`, `periodo_nomina`…) are strings, a JSON integer is
//!   accepted too.
//! - Besides the spec's fields a line may carry `cantidad` (hours of
//!   overtime, days of vacation, leave or bonus; days of `BASICO` are
//!   `dias_trabajados`) and `porcentaje` (an overtime's surcharge, default
//!   the legal one); the employee `sueldo` (default: the `BASICO` amount),
//!   `salario_integral`, `correo`; `pago` is `{forma, metodo, banco,
//!   tipo_cuenta, numero_cuenta}` (default forma `1`, metodo `10`);
//!   `empleador` overrides `{razon_social, pais, departamento, municipio,
//!   direccion}` (its `nit`, when given, must be the company's);
//!   `lugar_generacion` is `{pais, departamento, municipio, idioma}`.
//! - `novedades` and `sanciones` (inner fields not shown in the spec) have
//!   no place in the authority's payroll apart from the lines: a non-empty
//!   one is a 422 saying where its data goes (`enviar::refuse_unwritten_lists`).

use chrono::NaiveDate;
use rust_decimal::Decimal;
use serde::de::Unexpected;
use serde::{Deserialize, Deserializer};
use utoipa::ToSchema;

use crate::http::json::object;

/// Exact decimals from JSON numbers (serde_json keeps the literal text).
pub(crate) mod num {
    use super::*;

    fn convert<E: serde::de::Error>(n: serde_json::Number) -> Result<Decimal, E> {
        let text = n.to_string();
        let parsed = if text.contains(['e', 'E']) {
            Decimal::from_scientific(&text).ok()
        } else {
            Decimal::from_str_exact(&text).ok()
        };
        parsed.ok_or_else(|| {
            E::custom(format!(
                "number {text} is out of range or has more than 28 decimals"
            ))
        })
    }

    pub fn option<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Decimal>, D::Error> {
        Option::<serde_json::Number>::deserialize(d)?
            .map(convert)
            .transpose()
    }
}

/// Code strings that also accept a JSON integer.
pub(crate) mod code {
    use super::*;
    use serde_json::Value;

    fn convert<E: serde::de::Error>(v: Value) -> Result<String, E> {
        let unexpected = match &v {
            Value::String(s) => return Ok(s.clone()),
            Value::Number(n) => match n.as_u64() {
                Some(u) => return Ok(u.to_string()),
                None => Unexpected::Other("a number that is not a non-negative integer"),
            },
            Value::Null => Unexpected::Unit,
            Value::Bool(b) => Unexpected::Bool(*b),
            Value::Array(_) => Unexpected::Seq,
            Value::Object(_) => Unexpected::Map,
        };
        Err(E::invalid_type(unexpected, &"a code string"))
    }

    pub fn option<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
        Option::<Value>::deserialize(d)?.map(convert).transpose()
    }
}

/// `empleado` (spec 2.12).
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct Empleado {
    /// `13` CC (default), `22` CE, `41` passport.
    #[serde(default, deserialize_with = "code::option")]
    pub tipo_documento: Option<String>,
    /// Digits only (the schema types it as an integer).
    #[serde(deserialize_with = "code::option", default)]
    pub numero_documento: Option<String>,
    #[serde(default)]
    #[schema(max_length = 200)]
    pub primer_nombre: Option<String>,
    #[serde(default)]
    #[schema(max_length = 200)]
    pub otros_nombres: Option<String>,
    #[serde(default)]
    #[schema(max_length = 200)]
    pub primer_apellido: Option<String>,
    #[serde(default)]
    #[schema(max_length = 200)]
    pub segundo_apellido: Option<String>,
    /// `01` dependent (default), `02` independent, `09` apprentice.
    #[serde(default, deserialize_with = "code::option")]
    pub tipo_trabajador: Option<String>,
    /// `00` (default), `01` rural, `02` urban.
    #[serde(default, deserialize_with = "code::option")]
    pub sub_tipo_trabajador: Option<String>,
    #[serde(default)]
    pub alto_riesgo_pension: Option<bool>,
    #[serde(default)]
    pub salario_integral: Option<bool>,
    #[serde(default, deserialize_with = "code::option")]
    #[schema(max_length = 200)]
    pub codigo_trabajador: Option<String>,
    /// `1` fixed, `2` indefinite (default), `3` work, `4` apprenticeship, `5` services.
    #[serde(default, deserialize_with = "code::option")]
    pub tipo_contrato: Option<String>,
    /// Monthly salary; default the `BASICO` amount.
    #[serde(default, deserialize_with = "num::option")]
    #[schema(value_type = Option<f64>)]
    pub sueldo: Option<Decimal>,
    #[serde(default)]
    #[schema(max_length = 200)]
    pub correo: Option<String>,
    #[serde(default)]
    pub lugar_trabajo_pais: Option<String>,
    #[serde(default, deserialize_with = "code::option")]
    pub lugar_trabajo_departamento: Option<String>,
    #[serde(default, deserialize_with = "code::option")]
    pub lugar_trabajo_municipio: Option<String>,
    #[serde(default)]
    #[schema(max_length = 200)]
    pub lugar_trabajo_direccion: Option<String>,
}

/// `periodo` (spec 2.12).
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct Periodo {
    #[serde(default)]
    pub fecha_ingreso: Option<NaiveDate>,
    #[serde(default)]
    pub fecha_retiro: Option<NaiveDate>,
    #[serde(default)]
    pub fecha_liquidacion_inicio: Option<NaiveDate>,
    #[serde(default)]
    pub fecha_liquidacion_fin: Option<NaiveDate>,
    /// At least 1.
    #[serde(default)]
    pub tiempo_laborado_dias: Option<i64>,
}

/// One `devengados[]` line.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct Devengado {
    /// `BASICO`, `TRANSPORTE`, `HED`, `HEN`, `HRD`, `HRN`, `SND`,
    /// `VACACIONES`, `PRIMAS`, `CESANTIAS`, `INCAPACIDAD`, `LICENCIA`,
    /// `BONIFICACION`, `AUXILIO`, `OTRO`.
    #[serde(default)]
    pub seccion: Option<String>,
    #[serde(default)]
    #[schema(max_length = 500)]
    pub descripcion: Option<String>,
    /// `BASICO` only; default `periodo.tiempo_laborado_dias`.
    #[serde(default)]
    pub dias_trabajados: Option<i64>,
    /// `BASICO` only: the value when `valor_total` is omitted.
    #[serde(default, deserialize_with = "num::option")]
    #[schema(value_type = Option<f64>)]
    pub sueldo_trabajado: Option<Decimal>,
    /// `TRANSPORTE` only: the value when `valor_total` is omitted.
    #[serde(default, deserialize_with = "num::option")]
    #[schema(value_type = Option<f64>)]
    pub auxilio_transporte: Option<Decimal>,
    #[serde(default, deserialize_with = "num::option")]
    #[schema(value_type = Option<f64>)]
    pub valor_total: Option<Decimal>,
    /// Hours (overtime) or days (vacation, leave, bonus); default 1.
    #[serde(default, deserialize_with = "num::option")]
    #[schema(value_type = Option<f64>)]
    pub cantidad: Option<Decimal>,
    /// Overtime surcharge; default the legal one.
    #[serde(default, deserialize_with = "num::option")]
    #[schema(value_type = Option<f64>)]
    pub porcentaje: Option<Decimal>,
}

/// One `deducciones[]` line.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct Deduccion {
    /// `SALUD`, `FONDO_PENSION`, `FONDO_SP`, `SINDICATO`, `SANCION`,
    /// `LIBRANZA`, `ANTICIPO`, `RETENCION`, `AFC`, `COOPERATIVA`, `EMBARGO`.
    #[serde(default)]
    pub seccion: Option<String>,
    #[serde(default)]
    #[schema(max_length = 500)]
    pub descripcion: Option<String>,
    #[serde(default, deserialize_with = "num::option")]
    #[schema(value_type = Option<f64>)]
    pub porcentaje: Option<Decimal>,
    #[serde(default, deserialize_with = "num::option")]
    #[schema(value_type = Option<f64>)]
    pub base_calculo: Option<Decimal>,
    #[serde(default, deserialize_with = "num::option")]
    #[schema(value_type = Option<f64>)]
    pub valor_total: Option<Decimal>,
}

/// `totales`: computed when omitted, each given one checked.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct Totales {
    #[serde(default, deserialize_with = "num::option")]
    #[schema(value_type = Option<f64>)]
    pub devengados: Option<Decimal>,
    #[serde(default, deserialize_with = "num::option")]
    #[schema(value_type = Option<f64>)]
    pub deducciones: Option<Decimal>,
    #[serde(default, deserialize_with = "num::option")]
    #[schema(value_type = Option<f64>)]
    pub comprobante: Option<Decimal>,
}

/// `lugar_generacion` override.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct LugarGeneracion {
    #[serde(default)]
    pub pais: Option<String>,
    #[serde(default, deserialize_with = "code::option")]
    pub departamento: Option<String>,
    #[serde(default, deserialize_with = "code::option")]
    pub municipio: Option<String>,
    #[serde(default)]
    pub idioma: Option<String>,
}

/// `empleador` override (defaults from the company).
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct Empleador {
    #[serde(default)]
    #[schema(max_length = 200)]
    pub razon_social: Option<String>,
    /// When given, must be the company's NIT.
    #[serde(default, deserialize_with = "code::option")]
    pub nit: Option<String>,
    #[serde(default)]
    pub pais: Option<String>,
    #[serde(default, deserialize_with = "code::option")]
    pub departamento: Option<String>,
    #[serde(default, deserialize_with = "code::option")]
    pub municipio: Option<String>,
    #[serde(default)]
    #[schema(max_length = 200)]
    pub direccion: Option<String>,
}

/// `pago`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct Pago {
    /// `1` (default).
    #[serde(default, deserialize_with = "code::option")]
    pub forma: Option<String>,
    /// Payment means code, `10` cash (default), `42` deposit, `47` transfer…
    #[serde(default, deserialize_with = "code::option")]
    pub metodo: Option<String>,
    #[serde(default)]
    #[schema(max_length = 200)]
    pub banco: Option<String>,
    #[serde(default)]
    #[schema(max_length = 200)]
    pub tipo_cuenta: Option<String>,
    #[serde(default, deserialize_with = "code::option")]
    #[schema(max_length = 200)]
    pub numero_cuenta: Option<String>,
}

/// `POST /nomina/enviar` body (spec 2.12).
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct NominaRequest {
    /// `false` only builds the XML and CUNE (state `borrador`); default `true`.
    #[serde(default)]
    pub transmit: Option<bool>,
    #[serde(default, deserialize_with = "object::option")]
    pub empleado: Option<Empleado>,
    #[serde(default, deserialize_with = "object::option")]
    pub periodo: Option<Periodo>,
    #[serde(default, deserialize_with = "object::option_vec")]
    pub devengados: Option<Vec<Devengado>>,
    #[serde(default, deserialize_with = "object::option_vec")]
    pub deducciones: Option<Vec<Deduccion>>,
    #[serde(default, deserialize_with = "object::option")]
    pub totales: Option<Totales>,
    #[serde(default)]
    pub notas: Option<Vec<String>>,
    #[serde(default)]
    pub novedad: Option<bool>,
    #[serde(default)]
    pub cune_nov: Option<String>,
    /// Default `NOM` (the company's payroll resolution).
    #[serde(default)]
    pub prefijo: Option<String>,
    #[serde(default)]
    pub fecha_gen: Option<NaiveDate>,
    /// `HH:MM:SS-05:00`.
    #[serde(default)]
    pub hora_gen: Option<String>,
    /// `1` regular (default)… (the authority's payroll period codes 1-5).
    #[serde(default, deserialize_with = "code::option")]
    pub periodo_nomina: Option<String>,
    #[serde(default)]
    pub tipo_moneda: Option<String>,
    #[serde(default, deserialize_with = "num::option")]
    #[schema(value_type = Option<f64>)]
    pub trm: Option<Decimal>,
    #[serde(default, deserialize_with = "object::option")]
    pub lugar_generacion: Option<LugarGeneracion>,
    #[serde(default, deserialize_with = "object::option")]
    pub empleador: Option<Empleador>,
    #[serde(default, deserialize_with = "object::option")]
    pub pago: Option<Pago>,
    #[serde(default)]
    pub fechas_pagos: Option<Vec<NaiveDate>>,
    #[serde(default, deserialize_with = "num::option")]
    #[schema(value_type = Option<f64>)]
    pub redondeo: Option<Decimal>,
    #[serde(default)]
    #[schema(value_type = Option<Vec<Object>>)]
    pub novedades: Option<Vec<serde_json::Value>>,
    #[serde(default)]
    #[schema(value_type = Option<Vec<Object>>)]
    pub sanciones: Option<Vec<serde_json::Value>>,
}

/// `POST /nomina/ajuste` body (spec 2.12). Stored with the defaults taken
/// from the original filled in (`numero_referencia`, `fecha_referencia`,
/// `periodo`, `periodo_nomina`), so that it rebuilds alone.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct AjusteRequest {
    /// CUNE of the original payroll (of the key's company).
    #[serde(default)]
    pub cune_referencia: Option<String>,
    #[serde(default, deserialize_with = "object::option")]
    pub empleado: Option<Empleado>,
    /// `1` replace (default), `2` delete.
    #[serde(default)]
    pub tipo_nota: Option<i64>,
    #[serde(default)]
    pub numero_referencia: Option<String>,
    #[serde(default)]
    pub fecha_referencia: Option<NaiveDate>,
    #[serde(default)]
    pub transmit: Option<bool>,
    #[serde(default)]
    pub prefijo: Option<String>,
    #[serde(default)]
    pub fecha_gen: Option<NaiveDate>,
    #[serde(default)]
    pub hora_gen: Option<String>,
    #[serde(default, deserialize_with = "code::option")]
    pub periodo_nomina: Option<String>,
    #[serde(default, deserialize_with = "object::option")]
    pub lugar_generacion: Option<LugarGeneracion>,
    #[serde(default, deserialize_with = "object::option")]
    pub empleador: Option<Empleador>,
    #[serde(default, deserialize_with = "object::option")]
    pub periodo: Option<Periodo>,
    #[serde(default, deserialize_with = "object::option_vec")]
    pub devengados: Option<Vec<Devengado>>,
    #[serde(default, deserialize_with = "object::option_vec")]
    pub deducciones: Option<Vec<Deduccion>>,
    #[serde(default, deserialize_with = "object::option")]
    pub totales: Option<Totales>,
    #[serde(default)]
    pub notas: Option<Vec<String>>,
    #[serde(default, deserialize_with = "object::option")]
    pub pago: Option<Pago>,
    #[serde(default)]
    pub fechas_pagos: Option<Vec<NaiveDate>>,
    #[serde(default)]
    pub tipo_moneda: Option<String>,
    #[serde(default, deserialize_with = "num::option")]
    #[schema(value_type = Option<f64>)]
    pub trm: Option<Decimal>,
    /// Filled in by the service when stored: the original's document id.
    #[serde(default)]
    pub id_original: Option<u64>,
}
