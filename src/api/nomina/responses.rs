//! Answers of `/nomina` (spec 2.12; decisions.md §4 "Payroll bodies").
//!
//! Payroll states (spec 2.12) over the document states (spec 3.1):
//! `borrador` = 1; `enviada` = 3 or 5 (queued, in flight, waiting for the
//! authority); `aceptada` = 2; `rechazada` = 4; `error` = 6 (retries
//! exhausted, recovered automatically).

use emisor_store::{state, DocumentRecord, PAYROLL_DOCUMENT_TYPE};
use rust_decimal::Decimal;
use serde::Serialize;
use utoipa::ToSchema;

use crate::engine::payroll::totals::PayrollTotals;
use crate::engine::payroll::xml::amount;

/// The payroll state name of a document state.
pub fn estado(doc_state: u8) -> &'static str {
    match doc_state {
        state::DRAFT => "borrador",
        state::ACCEPTED => "aceptada",
        state::QUEUED | state::WAITING_AUTHORITY => "enviada",
        state::REJECTED => "rechazada",
        state::DEAD_LETTER => "error",
        _ => "desconocido",
    }
}

/// The document states of a payroll state name (`estado` filter).
pub fn states_of(name: &str) -> Option<&'static [u8]> {
    Some(match name {
        "borrador" => &[state::DRAFT],
        "aceptada" => &[state::ACCEPTED],
        "enviada" => &[state::QUEUED, state::WAITING_AUTHORITY],
        "rechazada" => &[state::REJECTED],
        "error" => &[state::DEAD_LETTER],
        _ => return None,
    })
}

/// `INDIVIDUAL` or `AJUSTE`.
pub fn tipo(doc: &DocumentRecord) -> &'static str {
    if doc.document_type == PAYROLL_DOCUMENT_TYPE {
        "INDIVIDUAL"
    } else {
        "AJUSTE"
    }
}

/// A decimal as an exact JSON number with two decimals.
pub fn money(d: Decimal) -> serde_json::Number {
    serde_json::from_str(&amount(d)).unwrap_or_else(|_| serde_json::Number::from(0))
}

/// `totales`: devengados, deducciones, comprobante = devengados − deducciones.
#[derive(Debug, Serialize, ToSchema)]
pub struct Totales {
    #[schema(value_type = f64)]
    pub devengados: serde_json::Number,
    #[schema(value_type = f64)]
    pub deducciones: serde_json::Number,
    #[schema(value_type = f64)]
    pub comprobante: serde_json::Number,
}

impl From<PayrollTotals> for Totales {
    fn from(t: PayrollTotals) -> Self {
        Totales {
            devengados: money(t.earnings),
            deducciones: money(t.deductions),
            comprobante: money(t.net),
        }
    }
}

/// The authority's answer as payroll shows it (spec 2.4 without `zipKey`
/// and `retryable`).
pub fn payroll_transmission(t: &serde_json::Value) -> serde_json::Value {
    let mut t = t.clone();
    if let Some(o) = t.as_object_mut() {
        o.remove("zipKey");
        o.remove("retryable");
    }
    t
}

/// One payroll as the status, list and detail answers show it.
#[derive(Debug, Serialize, ToSchema)]
#[allow(non_snake_case)]
pub struct PayrollRecord {
    pub id: u64,
    /// `INDIVIDUAL` or `AJUSTE`.
    pub tipo: &'static str,
    pub prefijo: String,
    pub numero: String,
    /// Prefix + number (`NOM12`).
    pub consecutivo: String,
    pub cune: Option<String>,
    pub cune_scheme: &'static str,
    pub qr_url: Option<String>,
    /// The key of `GET /nomina/estado/{trackId}` (the CUNE).
    pub trackId: Option<String>,
    /// `borrador`, `enviada`, `aceptada`, `rechazada`, `error`.
    pub estado: &'static str,
    pub id_estado_documento: u8,
    /// `1` production, `2` testing.
    pub ambiente: u8,
    pub fecha_emision: String,
    /// `comprobante` (devengados − deducciones).
    #[schema(value_type = f64)]
    pub total: serde_json::Number,
    #[schema(value_type = Option<Object>)]
    pub transmission: Option<serde_json::Value>,
    pub intentos: u32,
    pub created_at: String,
    pub updated_at: String,
}

pub fn record(doc: &DocumentRecord) -> PayrollRecord {
    let ts =
        |t: chrono::DateTime<chrono::Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    PayrollRecord {
        id: doc.id,
        tipo: tipo(doc),
        prefijo: doc.prefix.clone(),
        numero: doc.number.to_string(),
        consecutivo: doc.full_number(),
        cune: doc.code.clone(),
        cune_scheme: "CUNE-SHA384",
        qr_url: doc.qr_url.clone(),
        trackId: doc.track_id.clone().or_else(|| doc.code.clone()),
        estado: estado(doc.state),
        id_estado_documento: doc.state,
        ambiente: doc.environment.authority_code(),
        fecha_emision: doc.issue_date.to_string(),
        total: json_total(&doc.total),
        transmission: doc.transmission.as_ref().map(payroll_transmission),
        intentos: doc.attempts,
        created_at: ts(doc.created_at),
        updated_at: ts(doc.updated_at),
    }
}

/// The record's total (a decimal string) as a JSON number.
pub fn json_total(total: &str) -> serde_json::Number {
    serde_json::from_str(total).unwrap_or_else(|_| serde_json::Number::from(0))
}

/// 200 answer of `POST /nomina/enviar` and `/nomina/ajuste` (spec 2.12).
#[derive(Debug, Serialize, ToSchema)]
#[allow(non_snake_case)]
pub struct IssuedPayroll {
    pub id: u64,
    pub tipo: &'static str,
    pub prefijo: String,
    pub numero: String,
    pub consecutivo: String,
    pub cune: String,
    /// `CUNE-SHA384`.
    pub cune_scheme: &'static str,
    pub qr_url: String,
    pub trackId: Option<String>,
    /// `null` when not transmitted (`transmit: false`).
    #[schema(value_type = Option<Object>)]
    pub transmission: Option<serde_json::Value>,
    pub totales: Totales,
    pub estado: &'static str,
    pub id_estado_documento: u8,
    pub ambiente: u8,
    pub xml: String,
}
