//! A POS receipt (or its adjustment note) written as the unified request of
//! type 9 (or 10) and mapped by the unified rules; then what the unified
//! request has no words for: the final consumer, split payments (which
//! issuing compares with the total), the voluntary tip (a document charge).
//! Refusals name this API's fields.

use std::collections::BTreeMap;

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::model::{PosCustomer, PosLine, PosPayment, PosRequest};
use crate::api::invoice_request::mapping::MappedDocument;
use crate::api::invoice_request::translate::{
    self, drop_placeholder_email, map_unified, Renames, NO_EMAIL,
};
use crate::engine::limits;
use crate::engine::model::{AllowanceCharge, Party, Payment};
use crate::http::error::{ApiError, FieldError};
use crate::http::numbers::{money, num};
use crate::issuing::declared::Paid;
use crate::issuing::reference::Refused;
use crate::issuing::request::{Api, DocumentRequest, ListTotal};

/// The final consumer's identification (spec 2.11).
pub const FINAL_CONSUMER: &str = "222222222222";

/// Unified paths → this API's.
pub const RENAMES: Renames = &[
    (
        "customer.type_document_identification.code",
        "cliente.tipo_documento",
    ),
    ("customer.identification_number", "cliente.numero_documento"),
    ("customer.name", "cliente.nombre_completo"),
    ("customer.email", "cliente.correo"),
    ("customer", "cliente"),
    ("invoice_lines", "lineas"),
    ("credit_note_lines", "lineas"),
    (".invoiced_quantity", ".cantidad"),
    (".credited_quantity", ".cantidad"),
    (".price_amount", ".precio_unitario"),
    (".description", ".descripcion"),
    (".tax_totals[0].percent", ".porcentaje_iva"),
    (".tax_totals[0].tax_code", ".tipo_impuesto"),
    (".tax_totals[0]", ".porcentaje_iva"),
    (".allowance_charges[0].amount", ".descuento_valor"),
    (".allowance_charges[0]", ".descuento_valor"),
    (".line_extension_amount", ".subtotal"),
    ("].code", "].codigo"),
    ("payment_form.id", "forma_pago"),
    ("payment_form.method", "metodo_pago"),
    ("notes", "observaciones"),
    ("id_concepto_nota", "concepto"),
    ("id_documento_referencia", "id"),
];

/// An adjustment note as stored: self-contained (the buyer, register and
/// lines are copied from the receipt it adjusts).
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct StoredPosAdjustment {
    pub documento_referencia: u64,
    pub concepto: String,
    pub motivo: String,
    #[serde(default)]
    pub cliente: Option<PosCustomer>,
    pub lineas: Vec<PosLine>,
    #[serde(default)]
    pub precios_incluyen_impuesto: Option<bool>,
    pub id_caja: String,
    pub id_cajero: String,
    #[serde(default)]
    pub transmitir: Option<bool>,
    #[serde(default)]
    pub referencia_externa: Option<String>,
}

/// `cliente.completar_adquiriente` is never accepted on a POS receipt
/// (decisions.md "Buyer look-up").
fn refuse_completion(c: Option<&PosCustomer>, e: &mut Vec<FieldError>) {
    if c.is_some_and(|c| c.completar_adquiriente.is_some()) {
        e.push(FieldError::new(
            "cliente.completar_adquiriente",
            "is not accepted on POS receipts: give the buyer's name and email",
        ));
    }
}

fn customer_json(c: Option<&PosCustomer>) -> Value {
    match c {
        Some(c) => json!({
            "identification_number": c.numero_documento,
            "name": c.nombre_completo,
            "email": c.correo.as_deref().map(str::trim).filter(|m| !m.is_empty()).unwrap_or(NO_EMAIL),
            "type_document_identification": { "code": c.tipo_documento.as_deref().unwrap_or("13") },
        }),
        None => json!({
            "identification_number": FINAL_CONSUMER,
            "name": "Consumidor final",
            "email": NO_EMAIL,
            "type_document_identification": { "code": "13" },
        }),
    }
}

fn lines_json(
    lines: Option<&[PosLine]>,
    with_tax: bool,
    quantity: &str,
    e: &mut Vec<FieldError>,
) -> Vec<Value> {
    let Some(lines) = lines.filter(|l| !l.is_empty()) else {
        e.push(FieldError::new("lineas", "is required: at least one line"));
        return Vec::new();
    };
    lines
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let mut o = Map::new();
            o.insert("description".into(), json!(l.descripcion));
            o.insert(quantity.into(), num(l.cantidad));
            let tax_code = l.tipo_impuesto.as_deref().map(str::trim).unwrap_or("01");
            if !matches!(tax_code, "01" | "04") {
                e.push(FieldError::new(
                    format!("lineas[{i}].tipo_impuesto"),
                    "must be 01 (IVA) or 04 (INC)",
                ));
            }
            if l.tipo_impuesto.is_some() && l.porcentaje_iva.is_none() {
                e.push(FieldError::new(
                    format!("lineas[{i}].porcentaje_iva"),
                    "is required with tipo_impuesto",
                ));
            }
            let mut price = l.precio_unitario;
            if let Some(rate) = l.porcentaje_iva {
                if with_tax && rate > Decimal::ZERO && rate <= Decimal::ONE_HUNDRED {
                    // The net price that the tax brings back to the one sent.
                    let factor = Decimal::ONE + rate / Decimal::ONE_HUNDRED;
                    price = (price / factor).round_dp(6);
                }
                o.insert(
                    "tax_totals".into(),
                    json!([{ "tax_code": tax_code, "percent": num(rate) }]),
                );
            }
            o.insert("price_amount".into(), num(price));
            if let Some(c) = &l.codigo {
                o.insert("code".into(), json!(c));
            }
            if let Some(d) = l.descuento_valor.filter(|d| !d.is_zero()) {
                o.insert("allowance_charges".into(), json!([{ "amount": num(d) }]));
            }
            Value::Object(o)
        })
        .collect()
}

/// `1` to 50 characters of a register or cashier id.
fn till_id(field: &str, value: Option<&str>, e: &mut Vec<FieldError>) -> String {
    match value.map(str::trim) {
        None => "1".into(),
        Some(v) if v.is_empty() || v.chars().count() > 50 || v.chars().any(char::is_control) => {
            e.push(FieldError::new(field, "must be 1 to 50 characters"));
            v.to_string()
        }
        Some(v) => v.to_string(),
    }
}

/// The domain request, with the list keys issuing writes from its totals
/// (the amounts the lists and the cash count show, the taxes by scheme and
/// rate `01/19=base:amount;…`) beside `keys`.
fn into_request(
    mapped: MappedDocument,
    keys: BTreeMap<String, String>,
    mut totals: Vec<(String, ListTotal)>,
) -> DocumentRequest {
    totals.extend([
        ("subtotal".into(), ListTotal::LineExtension),
        ("impuestos".into(), ListTotal::TaxTotal),
        ("propina".into(), ListTotal::ChargeTotal),
        ("impuestos_detalle".into(), ListTotal::TaxDetail),
    ]);
    let mut request = translate::renamed_request(mapped.into_request(), RENAMES);
    request.api = Api::Pos;
    request.list_keys = keys;
    request.list_totals = totals;
    request
}

/// What a body makes: the translation, or a refusal (a note's original
/// still to be checked by issuing); the outer error is a body the unified
/// request cannot read.
pub type Mapped = Result<Result<DocumentRequest, Refused>, ApiError>;

fn payment_code(
    field: &str,
    value: Option<&str>,
    default: &str,
    e: &mut Vec<FieldError>,
) -> String {
    let v = value.map(str::trim).unwrap_or(default).to_string();
    if v.is_empty() || v.len() > 3 || !v.bytes().all(|b| b.is_ascii_alphanumeric()) {
        e.push(FieldError::new(
            field,
            "must be a payment code (10, 48, 49 …)",
        ));
    }
    v
}

/// A POS receipt (type 9).
pub fn receipt(req: &PosRequest) -> Result<DocumentRequest, ApiError> {
    let mut e = Vec::new();
    if req.asincrono == Some(true) || req.r#async == Some(true) {
        e.push(FieldError::new(
            if req.asincrono == Some(true) {
                "asincrono"
            } else {
                "async"
            },
            "a POS sale is always synchronous",
        ));
    }
    let caja = till_id("id_caja", req.id_caja.as_deref(), &mut e);
    let cajero = till_id("id_cajero", req.id_cajero.as_deref(), &mut e);
    let observaciones = translate::opt_text(
        "observaciones",
        req.observaciones.as_deref(),
        limits::TEXT,
        &mut e,
    );
    let with_tax = req.precios_incluyen_impuesto.unwrap_or(false);
    let lines = lines_json(req.lineas.as_deref(), with_tax, "invoiced_quantity", &mut e);
    let forma = payment_code("forma_pago", req.forma_pago.as_deref(), "1", &mut e);
    let metodo = payment_code("metodo_pago", req.metodo_pago.as_deref(), "10", &mut e);
    if let Some(tip) = req.propina_voluntaria {
        if tip < Decimal::ZERO || tip.scale() > 2 {
            e.push(FieldError::new(
                "propina_voluntaria",
                "must be 0 or more, with at most 2 decimals",
            ));
        }
    }
    let payments: Vec<(String, String, Decimal)> = match &req.pagos {
        None => Vec::new(),
        Some(p) if p.is_empty() => {
            e.push(FieldError::new("pagos", "at least one payment when given"));
            Vec::new()
        }
        Some(p) => p
            .iter()
            .enumerate()
            .map(
                |(
                    i,
                    PosPayment {
                        forma,
                        metodo,
                        monto,
                    },
                )| {
                    let f =
                        payment_code(&format!("pagos[{i}].forma"), forma.as_deref(), "1", &mut e);
                    if !matches!(f.as_str(), "1" | "2") {
                        e.push(FieldError::new(
                            format!("pagos[{i}].forma"),
                            "must be 1 (cash) or 2 (credit)",
                        ));
                    }
                    let m = payment_code(
                        &format!("pagos[{i}].metodo"),
                        metodo.as_deref(),
                        "10",
                        &mut e,
                    );
                    if *monto <= Decimal::ZERO || monto.scale() > 2 {
                        e.push(FieldError::new(
                            format!("pagos[{i}].monto"),
                            "must be more than 0, with at most 2 decimals",
                        ));
                    }
                    (f, m, *monto)
                },
            )
            .collect(),
    };
    let mut u = Map::new();
    u.insert("id_tipo_documento".into(), json!(9));
    u.insert("transmit".into(), json!(req.transmitir.unwrap_or(true)));
    refuse_completion(req.cliente.as_ref(), &mut e);
    u.insert("customer".into(), customer_json(req.cliente.as_ref()));
    u.insert("invoice_lines".into(), Value::Array(lines));
    u.insert(
        "payment_form".into(),
        json!({ "id": forma, "method": metodo }),
    );
    u.insert("id_caja".into(), json!(caja));
    u.insert("id_cajero".into(), json!(cajero));
    if let Some(o) = observaciones {
        u.insert("notes".into(), json!(o));
    }
    if let Some(r) = &req.referencia_externa {
        u.insert("referencia_externa".into(), json!(r));
    }
    // A receipt names no original: its refusal is complete.
    let mut mapped = map_unified(RENAMES, &Value::Object(u), e)?
        .map_err(|refused| ApiError::validation_list(refused.assuming_found()))?;
    drop_placeholder_email(&mut mapped);
    if req.cliente.is_none() {
        mapped.document.counterparty = Party::final_consumer();
    }
    if let Some(tip) = req.propina_voluntaria.filter(|t| !t.is_zero()) {
        mapped.document.allowances_charges.push(AllowanceCharge {
            is_charge: true,
            reason_code: None,
            reason: "Propina voluntaria".into(),
            amount: tip,
        });
    }
    let mut keys = BTreeMap::new();
    keys.insert("id_caja".into(), caja);
    keys.insert("id_cajero".into(), cajero);
    let mut totals = Vec::new();
    // Issuing compares the payments with the total first of all.
    let mut paid = None;
    if !payments.is_empty() {
        paid = Some(Paid {
            field: "pagos".into(),
            amount: payments
                .iter()
                .fold(Decimal::ZERO, |acc, p| acc.saturating_add(p.2)),
        });
        mapped.document.payments = payments
            .iter()
            .map(|(f, m, _)| Payment {
                form: f.clone(),
                method: m.clone(),
                due_date: None,
            })
            .collect();
        keys.insert("pagos".into(), encode_payments(&payments));
    } else {
        let method = mapped
            .document
            .payments
            .first()
            .map(|p| p.method.clone())
            .unwrap_or_else(|| "10".into());
        totals.push(("pagos".into(), ListTotal::PaidWith(method)));
    }
    let mut request = into_request(mapped, keys, totals);
    request.paid = paid;
    Ok(request)
}

/// `metodo=monto;…`, one entry per method (summed).
fn encode_payments(payments: &[(String, String, Decimal)]) -> String {
    let mut by: BTreeMap<&str, Decimal> = BTreeMap::new();
    for (_, m, a) in payments {
        let e = by.entry(m.as_str()).or_default();
        *e = e.saturating_add(*a);
    }
    by.iter()
        .map(|(m, a)| format!("{m}={}", money(*a)))
        .collect::<Vec<_>>()
        .join(";")
}

/// A POS adjustment note (type 10) of the receipt `documento_referencia`
/// names.
pub fn adjustment(req: &StoredPosAdjustment) -> Mapped {
    let mut e = Vec::new();
    let motivo = translate::opt_text("motivo", Some(&req.motivo), limits::TEXT, &mut e);
    if motivo.is_none() {
        e.push(FieldError::new("motivo", "is required"));
    }
    let with_tax = req.precios_incluyen_impuesto.unwrap_or(false);
    let lines = lines_json(Some(&req.lineas), with_tax, "credited_quantity", &mut e);
    let mut u = Map::new();
    u.insert("id_tipo_documento".into(), json!(10));
    u.insert("transmit".into(), json!(req.transmitir.unwrap_or(true)));
    refuse_completion(req.cliente.as_ref(), &mut e);
    u.insert("customer".into(), customer_json(req.cliente.as_ref()));
    u.insert("credit_note_lines".into(), Value::Array(lines));
    u.insert(
        "id_documento_referencia".into(),
        json!(req.documento_referencia),
    );
    u.insert("id_concepto_nota".into(), json!(req.concepto));
    if let Some(m) = motivo {
        u.insert("notes".into(), json!(m));
    }
    if let Some(r) = &req.referencia_externa {
        u.insert("referencia_externa".into(), json!(r));
    }
    let mut mapped = match map_unified(RENAMES, &Value::Object(u), e)? {
        Ok(m) => m,
        Err(refused) => return Ok(Err(refused)),
    };
    drop_placeholder_email(&mut mapped);
    if req.cliente.is_none() {
        mapped.document.counterparty = Party::final_consumer();
    }
    let mut keys = BTreeMap::new();
    keys.insert("id_caja".into(), req.id_caja.clone());
    keys.insert("id_cajero".into(), req.id_cajero.clone());
    keys.insert(
        "documento_referencia".into(),
        req.documento_referencia.to_string(),
    );
    Ok(Ok(into_request(mapped, keys, Vec::new())))
}
