//! A support document (or its adjustment note) written as the unified
//! request of type 4 (or 5) and mapped by the unified rules: one path, one
//! set of checks. The refusals name this API's fields.

use std::collections::BTreeMap;

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::model::{SupportLine, SupportRequest, Vendor};
use crate::api::invoice_request::translate::{
    self, drop_placeholder_email, map_unified, Renames, NO_EMAIL,
};
use crate::engine::limits;
use crate::http::error::{ApiError, FieldError};
use crate::http::numbers::num;
use crate::issuing::reference::Refused;
use crate::issuing::request::{Api, DocumentRequest, ListTotal};

/// Unified paths → this API's.
pub const RENAMES: Renames = &[
    (
        "customer.type_document_identification.code",
        "proveedor.tipo_documento",
    ),
    (
        "customer.identification_number",
        "proveedor.numero_identificacion",
    ),
    ("customer.name", "proveedor.nombre"),
    ("customer.email", "proveedor.correo"),
    ("customer.address", "proveedor.direccion"),
    ("customer.phone", "proveedor.telefono"),
    ("customer.municipality.code", "proveedor.municipio"),
    ("customer.country_code", "proveedor.pais"),
    ("customer", "proveedor"),
    ("invoice_lines", "lineas"),
    ("credit_note_lines", "lineas"),
    (".invoiced_quantity", ".cantidad"),
    (".credited_quantity", ".cantidad"),
    (".price_amount", ".precio_unitario"),
    (".description", ".descripcion"),
    (".unit_measure.code", ".unidad_medida"),
    (".tax_totals", ".retenciones"),
    (".percent", ".porcentaje"),
    (".taxable_amount", ".base"),
    (".tax_amount", ".valor"),
    (".tax_code", ".tipo"),
    (".line_extension_amount", ".subtotal"),
    ("].code", "].codigo"),
    ("payment_form.id", "forma_pago"),
    ("payment_form.method", "metodo_pago"),
    ("payment_form.due_date", "fecha_vencimiento"),
    ("notes", "observaciones"),
    ("id_concepto_nota", "concepto_nota"),
    ("id_documento_referencia", "documento_referencia"),
];

/// An adjustment note as stored: self-contained (the vendor and lines it
/// adjusts are copied from the original), so it can be built again alone.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct StoredAdjustment {
    pub documento_referencia: u64,
    pub concepto_nota: String,
    pub motivo: String,
    pub proveedor: Vendor,
    pub lineas: Vec<SupportLine>,
    #[serde(default)]
    pub transmitir: Option<bool>,
    #[serde(default)]
    pub referencia_externa: Option<String>,
}

fn vendor_json(v: &Vendor, e: &mut Vec<FieldError>) -> Value {
    let country = v
        .pais
        .as_deref()
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .unwrap_or("CO");
    let mut c = Map::new();
    c.insert(
        "identification_number".into(),
        json!(v.numero_identificacion),
    );
    c.insert("name".into(), json!(v.nombre));
    c.insert(
        "email".into(),
        json!(v
            .correo
            .as_deref()
            .map(str::trim)
            .filter(|m| !m.is_empty())
            .unwrap_or(NO_EMAIL)),
    );
    // A citizen or passport holder needs no RUT: a natural person with the
    // unified defaults (R-99-PN, scheme ZZ). Abroad: the unified default
    // (foreign NIT) unless a type is given.
    let id_type = v
        .tipo_documento
        .clone()
        .or_else(|| (country == "CO").then(|| "13".to_string()));
    if let Some(t) = id_type {
        c.insert("type_document_identification".into(), json!({ "code": t }));
    }
    if let Some(a) = &v.direccion {
        c.insert("address".into(), json!(a));
    }
    if let Some(m) = &v.municipio {
        c.insert("municipality".into(), json!({ "code": m }));
    }
    if let Some(p) = &v.telefono {
        c.insert("phone".into(), json!(p));
    }
    c.insert("country_code".into(), json!(country));
    if let Some(r) = v.tipo_regimen.as_deref() {
        if !matches!(r.trim(), "48" | "49") {
            e.push(FieldError::new(
                "proveedor.tipo_regimen",
                "must be 49 (not responsible for VAT) or 48",
            ));
        }
    }
    Value::Object(c)
}

fn lines_json(lines: Option<&[SupportLine]>, e: &mut Vec<FieldError>) -> Vec<Value> {
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
            o.insert("quantity".into(), num(l.cantidad));
            o.insert("price_amount".into(), num(l.precio_unitario));
            if let Some(c) = &l.codigo {
                o.insert("code".into(), json!(c));
            }
            o.insert(
                "unit_measure".into(),
                json!({ "code": l.unidad_medida.as_deref().unwrap_or("94") }),
            );
            let taxes: Vec<Value> = l
                .retenciones
                .iter()
                .flatten()
                .enumerate()
                .map(|(j, r)| {
                    // The caller's numbering (spec), written as the authority's.
                    let code = match r.tipo.trim() {
                        "07" | "7" => "06",
                        "05" | "5" => "07",
                        _ => {
                            e.push(FieldError::new(
                                format!("lineas[{i}].retenciones[{j}].tipo"),
                                "must be 07 (ReteFuente) or 05 (ReteICA)",
                            ));
                            "06"
                        }
                    };
                    let mut t = Map::new();
                    t.insert("tax_code".into(), json!(code));
                    if let Some(p) = r.porcentaje {
                        t.insert("percent".into(), num(p));
                    }
                    if let Some(b) = r.base {
                        t.insert("taxable_amount".into(), num(b));
                    }
                    if let Some(v) = r.valor {
                        t.insert("tax_amount".into(), num(v));
                    }
                    Value::Object(t)
                })
                .collect();
            if !taxes.is_empty() {
                o.insert("tax_totals".into(), Value::Array(taxes));
            }
            Value::Object(o)
        })
        .collect()
}

/// Lines under the quantity name of their array.
fn named_quantity(mut lines: Vec<Value>, name: &str) -> Vec<Value> {
    for l in &mut lines {
        if let Some(o) = l.as_object_mut() {
            if let Some(q) = o.remove("quantity") {
                o.insert(name.into(), q);
            }
        }
    }
    lines
}

/// What a body makes: the domain request, or a refusal (a note's original
/// still to be checked by issuing); the outer error is a body the unified
/// request cannot read.
pub type Mapped = Result<Result<DocumentRequest, Refused>, ApiError>;

fn finish(unified: Value, errors: Vec<FieldError>, list_keys: BTreeMap<String, String>) -> Mapped {
    let mut mapped = match map_unified(RENAMES, &unified, errors)? {
        Ok(m) => m,
        Err(refused) => return Ok(Err(refused)),
    };
    drop_placeholder_email(&mut mapped);
    let mut request = translate::renamed_request(mapped.into_request(), RENAMES);
    request.api = Api::Support;
    request.list_keys = list_keys;
    // The amounts the lists show, written by issuing from its totals.
    request.list_totals = vec![
        ("subtotal".into(), ListTotal::LineExtension),
        ("total_retenciones".into(), ListTotal::WithholdingTotal),
        ("total_neto".into(), ListTotal::LinesLessWithholdings),
    ];
    Ok(Ok(request))
}

fn payment(forma: Option<&str>, metodo: Option<&str>, due: Option<NaiveDate>) -> Value {
    let mut p = Map::new();
    p.insert("id".into(), json!(forma.unwrap_or("1")));
    p.insert("method".into(), json!(metodo.unwrap_or("10")));
    if let Some(d) = due {
        p.insert("due_date".into(), json!(d));
    }
    Value::Object(p)
}

/// A support document (type 4).
pub fn support_document(req: &SupportRequest, today: NaiveDate) -> Mapped {
    let mut e = Vec::new();
    if let Some(d) = req.fecha_emision {
        if d != today {
            e.push(FieldError::new(
                "fecha_emision",
                format!("must be today ({today}): a document is numbered and signed when issued"),
            ));
        }
    }
    let observaciones = translate::opt_text(
        "observaciones",
        req.observaciones.as_deref(),
        limits::TEXT,
        &mut e,
    );
    let centro = translate::opt_text(
        "centro_costos",
        req.centro_costos.as_deref(),
        limits::CODE,
        &mut e,
    );
    let customer = vendor_json(&req.proveedor, &mut e);
    let lines = named_quantity(
        lines_json(req.lineas.as_deref(), &mut e),
        "invoiced_quantity",
    );
    let non_resident = req
        .proveedor
        .pais
        .as_deref()
        .map(str::trim)
        .is_some_and(|p| !p.is_empty() && p != "CO");
    let mut u = Map::new();
    u.insert("id_tipo_documento".into(), json!(4));
    u.insert("transmit".into(), json!(req.transmitir.unwrap_or(true)));
    u.insert("customer".into(), customer);
    u.insert("invoice_lines".into(), Value::Array(lines));
    u.insert(
        "payment_form".into(),
        payment(
            req.forma_pago.as_deref(),
            req.metodo_pago.as_deref(),
            req.fecha_vencimiento,
        ),
    );
    u.insert(
        "id_tipo_operacion".into(),
        json!(if non_resident { "11" } else { "10" }),
    );
    if let Some(o) = observaciones {
        u.insert("notes".into(), json!(o));
    }
    if let Some(r) = &req.referencia_externa {
        u.insert("referencia_externa".into(), json!(r));
    }
    let mut keys = BTreeMap::new();
    keys.insert(
        "proveedor".into(),
        req.proveedor.numero_identificacion.trim().to_string(),
    );
    if let Some(c) = centro {
        keys.insert("centro_costos".into(), c);
    }
    finish(Value::Object(u), e, keys)
}

/// An adjustment note (type 5) of the document `documento_referencia`
/// names.
pub fn adjustment(req: &StoredAdjustment) -> Mapped {
    let mut e = Vec::new();
    let motivo = translate::opt_text("motivo", Some(&req.motivo), limits::TEXT, &mut e);
    if motivo.is_none() {
        e.push(FieldError::new("motivo", "is required"));
    }
    let customer = vendor_json(&req.proveedor, &mut e);
    let lines = named_quantity(lines_json(Some(&req.lineas), &mut e), "credited_quantity");
    let mut u = Map::new();
    u.insert("id_tipo_documento".into(), json!(5));
    u.insert("transmit".into(), json!(req.transmitir.unwrap_or(true)));
    u.insert("customer".into(), customer);
    u.insert("credit_note_lines".into(), Value::Array(lines));
    u.insert(
        "id_documento_referencia".into(),
        json!(req.documento_referencia),
    );
    u.insert("id_concepto_nota".into(), json!(req.concepto_nota));
    if let Some(m) = motivo {
        u.insert("notes".into(), json!(m));
    }
    if let Some(r) = &req.referencia_externa {
        u.insert("referencia_externa".into(), json!(r));
    }
    let mut keys = BTreeMap::new();
    keys.insert(
        "proveedor".into(),
        req.proveedor.numero_identificacion.trim().to_string(),
    );
    keys.insert(
        "documento_referencia".into(),
        req.documento_referencia.to_string(),
    );
    finish(Value::Object(u), e, keys)
}
