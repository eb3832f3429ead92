//! The bodies and answers of `/documentos-soporte` (spec 2.10), as the
//! caller sends them. Lenient on unknown keys like the unified API; codes
//! accept a JSON integer too; amounts are exact decimals.
//!
//! Decisions where the spec is silent:
//! - `proveedor.pais` (ISO 3166-1 alpha-2, default `CO`): a vendor abroad is
//!   non-resident (`CustomizationID` 11), otherwise resident (10).
//! - `fecha_emision`, when given, must be today (Colombia time): a document
//!   is signed and numbered now.
//! - `referencia_externa`: the idempotency key, as in the unified API.

use chrono::NaiveDate;
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::api::invoice_request::request::{amount, code};
use crate::http::json::object;
use crate::http::numbers::exact;

/// `POST /documentos-soporte/emitir`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct SupportRequest {
    #[serde(deserialize_with = "object::required")]
    pub proveedor: Vendor,
    #[serde(default, deserialize_with = "object::option_vec")]
    pub lineas: Option<Vec<SupportLine>>,
    /// `1` cash (default), `2` credit.
    #[serde(default, deserialize_with = "code::option")]
    #[schema(value_type = Option<String>)]
    pub forma_pago: Option<String>,
    /// `10` cash (default), `42` deposit, `47` transfer, `48` credit card …
    #[serde(default, deserialize_with = "code::option")]
    #[schema(value_type = Option<String>)]
    pub metodo_pago: Option<String>,
    /// Credit (`forma_pago` 2): the due date (required for credit).
    #[serde(default)]
    pub fecha_vencimiento: Option<NaiveDate>,
    /// Today when absent (and only today).
    #[serde(default)]
    pub fecha_emision: Option<NaiveDate>,
    #[serde(default)]
    #[schema(max_length = 4000)]
    pub observaciones: Option<String>,
    /// Default `true`.
    #[serde(default)]
    pub transmitir: Option<bool>,
    /// Internal cost centre: stored and listed.
    #[serde(default)]
    #[schema(max_length = 100)]
    pub centro_costos: Option<String>,
    #[serde(default)]
    #[schema(max_length = 100)]
    pub referencia_externa: Option<String>,
}

/// The vendor not obliged to invoice.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
pub struct Vendor {
    #[serde(deserialize_with = "code::required")]
    #[schema(value_type = String, max_length = 20)]
    pub numero_identificacion: String,
    #[schema(max_length = 450)]
    pub nombre: String,
    /// `13` CC (default), `22` CE, `41` passport, `31` NIT, `42` foreign id…
    #[serde(default, deserialize_with = "code::option")]
    #[schema(value_type = Option<String>)]
    pub tipo_documento: Option<String>,
    #[serde(default)]
    #[schema(max_length = 254)]
    pub correo: Option<String>,
    #[serde(default)]
    #[schema(max_length = 50)]
    pub telefono: Option<String>,
    #[serde(default)]
    #[schema(max_length = 450)]
    pub direccion: Option<String>,
    /// DIVIPOLA municipality code (`11001`).
    #[serde(default, deserialize_with = "code::option")]
    #[schema(value_type = Option<String>)]
    pub municipio: Option<String>,
    /// `49` not responsible for VAT (default), `48` responsible.
    #[serde(default, deserialize_with = "code::option")]
    #[schema(value_type = Option<String>)]
    pub tipo_regimen: Option<String>,
    /// ISO 3166-1 alpha-2; `CO` when absent.
    #[serde(default)]
    pub pais: Option<String>,
}

#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
pub struct SupportLine {
    #[schema(max_length = 4000)]
    pub descripcion: String,
    #[serde(
        deserialize_with = "amount::required",
        serialize_with = "exact::required"
    )]
    #[schema(value_type = f64)]
    pub cantidad: Decimal,
    /// Before withholdings.
    #[serde(
        deserialize_with = "amount::required",
        serialize_with = "exact::required"
    )]
    #[schema(value_type = f64)]
    pub precio_unitario: Decimal,
    #[serde(default)]
    #[schema(max_length = 100)]
    pub codigo: Option<String>,
    /// `94` unit (default), `E48` service, `KGM` …
    #[serde(default, deserialize_with = "code::option")]
    #[schema(value_type = Option<String>)]
    pub unidad_medida: Option<String>,
    #[serde(default, deserialize_with = "object::option_vec")]
    pub retenciones: Option<Vec<Withholding>>,
}

/// A withholding of a line: `tipo` `07` ReteFuente (the authority's 06) or
/// `05` ReteICA (the authority's 07), decisions.md §5.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
pub struct Withholding {
    #[serde(deserialize_with = "code::required")]
    #[schema(value_type = String)]
    pub tipo: String,
    /// Rate in percent.
    #[serde(
        default,
        deserialize_with = "amount::option",
        serialize_with = "exact::option"
    )]
    #[schema(value_type = Option<f64>)]
    pub porcentaje: Option<Decimal>,
    /// The line subtotal when absent.
    #[serde(
        default,
        deserialize_with = "amount::option",
        serialize_with = "exact::option"
    )]
    #[schema(value_type = Option<f64>)]
    pub base: Option<Decimal>,
    /// Checked against ours when present.
    #[serde(
        default,
        deserialize_with = "amount::option",
        serialize_with = "exact::option"
    )]
    #[schema(value_type = Option<f64>)]
    pub valor: Option<Decimal>,
}

/// `POST /documentos-soporte/:id/nota-ajuste` (type 95, unified type 5).
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct AdjustmentRequest {
    /// When given, must be the path's id.
    #[serde(default)]
    pub documento_referencia: Option<u64>,
    /// `1` refund or cancellation, `2` void due to non-charge, `3` price
    /// adjustment (spec 2.8).
    #[serde(default, deserialize_with = "code::option")]
    #[schema(value_type = Option<String>)]
    pub concepto_nota: Option<String>,
    #[serde(default)]
    #[schema(max_length = 4000)]
    pub motivo: Option<String>,
    /// Corrected lines; absent: the whole document.
    #[serde(default, deserialize_with = "object::option_vec")]
    pub lineas: Option<Vec<SupportLine>>,
    #[serde(default)]
    pub transmitir: Option<bool>,
    #[serde(default)]
    #[schema(max_length = 100)]
    pub referencia_externa: Option<String>,
}

/// The answer of spec 2.10 (also of an adjustment note, with its reference).
#[derive(Debug, Serialize, ToSchema)]
pub struct SupportResponse {
    pub id: u64,
    pub id_tipo_documento: u8,
    pub prefijo: String,
    pub numero: u64,
    pub cuds: String,
    pub qr_url: String,
    pub subtotal: String,
    pub total_retenciones: String,
    /// `subtotal` − `total_retenciones`.
    pub total: String,
    pub id_estado_documento: u8,
    pub estado_tax: &'static str,
    pub pdf_url: String,
    pub xml_url: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub centro_costos: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub documento_referencia: Option<u64>,
    /// The authority's answer (spec 2.4) when transmitted.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub transmission: Option<serde_json::Value>,
}
