//! The bodies and answers of `/pos` (spec 2.11). Lenient on unknown keys
//! like the unified API; codes accept a JSON integer; amounts are exact.
//!
//! Decisions where the spec is silent:
//! - `precios_incluyen_impuesto` (default `false`): `true` means every
//!   `precio_unitario` includes its line's tax; the net unit price is the
//!   price ÷ (1 + rate), kept to 6 decimals.
//! - `pagos[].forma` `1` cash (default) or `2` credit, `metodo` a payment
//!   means code (`10` cash default, `48` credit card, `49` debit card …);
//!   their `monto` must add up to the total (subtotal + taxes + tip).
//!   Without `pagos`: one payment of the total by `forma_pago` /
//!   `metodo_pago`.
//! - `tipo_impuesto` `01` VAT (default when `porcentaje_iva` is given) or
//!   `04` consumption tax (INC).
//! - `asincrono` / `async` `true` is a 422: a sale is always synchronous.

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::api::invoice_request::request::{amount, code};
use crate::http::json::object;
use crate::http::numbers::exact;

/// `POST /pos/emitir`.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
pub struct PosRequest {
    #[serde(default, deserialize_with = "object::option_vec")]
    pub lineas: Option<Vec<PosLine>>,
    /// The final consumer (`222222222222`) when absent.
    #[serde(
        default,
        deserialize_with = "object::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub cliente: Option<PosCustomer>,
    #[serde(
        default,
        deserialize_with = "object::option_vec",
        skip_serializing_if = "Option::is_none"
    )]
    pub pagos: Option<Vec<PosPayment>>,
    /// Register (`PlacaCaja`); `1` when absent.
    #[serde(
        default,
        deserialize_with = "code::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(value_type = Option<String>, max_length = 50)]
    pub id_caja: Option<String>,
    /// Cashier (`Cajero`); `1` when absent.
    #[serde(
        default,
        deserialize_with = "code::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(value_type = Option<String>, max_length = 50)]
    pub id_cajero: Option<String>,
    #[serde(
        default,
        deserialize_with = "amount::option",
        serialize_with = "exact::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(value_type = Option<f64>)]
    pub propina_voluntaria: Option<Decimal>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 4000)]
    pub observaciones: Option<String>,
    /// Default `true`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transmitir: Option<bool>,
    #[serde(
        default,
        deserialize_with = "code::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(value_type = Option<String>)]
    pub forma_pago: Option<String>,
    #[serde(
        default,
        deserialize_with = "code::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(value_type = Option<String>)]
    pub metodo_pago: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precios_incluyen_impuesto: Option<bool>,
    /// Refused when `true` (a sale is synchronous).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asincrono: Option<bool>,
    #[serde(default, rename = "async", skip_serializing_if = "Option::is_none")]
    pub r#async: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 100)]
    pub referencia_externa: Option<String>,
}

#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
pub struct PosLine {
    #[schema(max_length = 4000)]
    pub descripcion: String,
    #[serde(
        deserialize_with = "amount::required",
        serialize_with = "exact::required"
    )]
    #[schema(value_type = f64)]
    pub cantidad: Decimal,
    /// With or without tax (`precios_incluyen_impuesto`).
    #[serde(
        deserialize_with = "amount::required",
        serialize_with = "exact::required"
    )]
    #[schema(value_type = f64)]
    pub precio_unitario: Decimal,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 100)]
    pub codigo: Option<String>,
    #[serde(
        default,
        deserialize_with = "amount::option",
        serialize_with = "exact::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(value_type = Option<f64>)]
    pub porcentaje_iva: Option<Decimal>,
    /// `01` VAT (default), `04` consumption tax.
    #[serde(
        default,
        deserialize_with = "code::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(value_type = Option<String>)]
    pub tipo_impuesto: Option<String>,
    /// Discount of the line (an amount).
    #[serde(
        default,
        deserialize_with = "amount::option",
        serialize_with = "exact::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(value_type = Option<f64>)]
    pub descuento_valor: Option<Decimal>,
}

#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
pub struct PosCustomer {
    /// `13` CC (default), `31` NIT, `22` CE, `41` passport.
    #[serde(
        default,
        deserialize_with = "code::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(value_type = Option<String>)]
    pub tipo_documento: Option<String>,
    #[serde(deserialize_with = "code::required")]
    #[schema(value_type = String, max_length = 20)]
    pub numero_documento: String,
    #[schema(max_length = 450)]
    pub nombre_completo: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 254)]
    pub correo: Option<String>,
    /// Read only to be refused (a 422): a sale at the till does not wait
    /// for the authority's register of buyers.
    #[serde(default, skip_serializing)]
    #[schema(ignore)]
    pub completar_adquiriente: Option<serde_json::Value>,
}

#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
pub struct PosPayment {
    /// `1` cash (default), `2` credit.
    #[serde(
        default,
        deserialize_with = "code::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(value_type = Option<String>)]
    pub forma: Option<String>,
    /// `10` cash (default), `48` credit card, `49` debit card, `47` transfer …
    #[serde(
        default,
        deserialize_with = "code::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(value_type = Option<String>)]
    pub metodo: Option<String>,
    #[serde(
        deserialize_with = "amount::required",
        serialize_with = "exact::required"
    )]
    #[schema(value_type = f64)]
    pub monto: Decimal,
}

/// `POST /pos/:id/nota-ajuste`: a POS adjustment note (unified type 10).
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct PosAdjustmentRequest {
    #[serde(default)]
    #[schema(max_length = 4000)]
    pub motivo: Option<String>,
    /// Credit-note concepts of spec 2.8: `1` partial return, `2`
    /// cancellation, `3` rebate, `4` price adjustment, `5` others.
    #[serde(default, deserialize_with = "code::option")]
    #[schema(value_type = Option<String>)]
    pub concepto: Option<String>,
    #[serde(default)]
    pub transmitir: Option<bool>,
    /// Lines adjusted; absent: the whole receipt.
    #[serde(default, deserialize_with = "object::option_vec")]
    pub lineas: Option<Vec<PosLine>>,
    #[serde(default)]
    #[schema(max_length = 100)]
    pub referencia_externa: Option<String>,
}

/// The answer of spec 2.11 (also of an adjustment note).
#[derive(Debug, Serialize, ToSchema)]
pub struct PosResponse {
    pub id: u64,
    pub id_tipo_documento: u8,
    pub prefijo: String,
    pub numero: u64,
    pub cude: String,
    pub qr_url: String,
    pub subtotal: String,
    pub total_impuestos: String,
    pub propina: String,
    /// subtotal + taxes + tip.
    pub total: String,
    /// Measured inside the service, from the body read to the answer.
    pub tiempo_emision_ms: u64,
    pub id_estado_documento: u8,
    pub estado_tax: &'static str,
    pub tirilla_url: String,
    pub xml_url: String,
    /// The A4 representation (decisions.md "Files of any document").
    pub pdf_url: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub documento_referencia: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub transmission: Option<serde_json::Value>,
}
