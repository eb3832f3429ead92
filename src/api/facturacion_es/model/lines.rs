//! `lineas` (alias `productos`, `items`): each line read into the unified
//! request's, its taxes and its patient.

use rust_decimal::Decimal;
use serde_json::{Map, Value};

use super::super::names::Names;
use super::super::reader::{objects, Obj, Problems, TypeResult};
use super::health::read_patient;
use super::sectors::Sectors;
use super::taxes::read_line_taxes;
use super::Extras;
use crate::api::invoice_request::request::{DocumentLine, UnitMeasure};
use crate::engine::model::DocumentKind;

/// Where a line is read from and written to.
struct LineContext {
    array: &'static str,
    quantity_name: &'static str,
    spanish: &'static str,
    index: usize,
    /// A health invoice: `codigo` and `paciente` required.
    health: bool,
    /// `paciente` accepted.
    health_allowed: bool,
}

fn unified_array(kind: DocumentKind) -> (&'static str, &'static str) {
    match kind {
        DocumentKind::CreditNote
        | DocumentKind::SupportAdjustment
        | DocumentKind::PosAdjustment => ("credit_note_lines", "credited_quantity"),
        DocumentKind::DebitNote => ("debit_note_lines", "debited_quantity"),
        _ => ("invoice_lines", "invoiced_quantity"),
    }
}

/// The lines, and the unified array they go to.
pub(super) fn read_lines(
    top: &Obj<'_>,
    kind: DocumentKind,
    sectors: &Sectors,
    names: &mut Names,
    extras: &mut Extras,
    p: &mut Problems,
) -> TypeResult<(&'static str, Vec<DocumentLine>)> {
    let (array, quantity_name) = unified_array(kind);
    let lines = match top.array(&["lineas", "productos", "items"], p)? {
        Some((name, items)) => {
            names.set(array, name);
            let maps = objects(name, items)?;
            if maps.is_empty() {
                p.push(name, "debe tener al menos una línea");
            }
            let mut out = Vec::with_capacity(maps.len());
            for (i, m) in maps.into_iter().enumerate() {
                let ctx = LineContext {
                    array,
                    quantity_name,
                    spanish: name,
                    index: i,
                    health: sectors.health && kind == DocumentKind::Invoice,
                    health_allowed: sectors.health,
                };
                let mut line = read_line(m, &ctx, names, extras, p)?;
                if let Some(t) = &sectors.transport {
                    line.transporte = Some(t.clone());
                    let u = format!("{array}[{i}].transporte");
                    names.set(format!("{u}.radicado_rndc"), "transporte.manifiesto_numero");
                    names.set(format!("{u}.numero_remesa"), "transporte.remesa_numero");
                    names.set(u, "transporte");
                }
                out.push(line);
            }
            out
        }
        None => {
            p.push(
                "lineas",
                "es obligatorio: al menos una línea (alias productos, items)",
            );
            Vec::new()
        }
    };
    Ok((array, lines))
}

fn read_line(
    m: &Map<String, Value>,
    ctx: &LineContext,
    names: &mut Names,
    extras: &mut Extras,
    p: &mut Problems,
) -> TypeResult<DocumentLine> {
    let path = format!("{}[{}]", ctx.spanish, ctx.index);
    let l = Obj {
        map: m,
        path: &path,
    };
    let u = format!("{}[{}]", ctx.array, ctx.index);

    let description = match l.text(&["descripcion", "producto", "nombre_producto"], p)? {
        Some((name, d)) => {
            names.set(format!("{u}.description"), l.at(name));
            if d.trim().is_empty() {
                p.push(l.at(name), "es obligatorio");
            }
            d.to_string()
        }
        None => {
            p.push(
                l.at("descripcion"),
                "es obligatorio (alias producto, nombre_producto)",
            );
            String::new()
        }
    };
    let quantity = l
        .decimal(&["cantidad"], p)?
        .map(|(_, q)| q)
        .unwrap_or(Decimal::ONE);
    names.set(format!("{u}.{}", ctx.quantity_name), l.at("cantidad"));
    let price = match l.decimal(&["precio", "precio_unitario", "valor_unitario"], p)? {
        Some((name, v)) => {
            names.set(format!("{u}.price_amount"), l.at(name));
            v
        }
        None => {
            if !p.has(&l.at("precio")) {
                p.push(
                    l.at("precio"),
                    "es obligatorio (alias precio_unitario, valor_unitario)",
                );
            }
            Decimal::ZERO
        }
    };
    names.set(format!("{u}.line_extension_amount"), path.clone());
    let code = l.code(&["codigo", "codigo_producto", "referencia"], p)?;
    match &code {
        Some((name, _)) => names.set(format!("{u}.code"), l.at(name)),
        None if ctx.health => p.push(
            l.at("codigo"),
            "es obligatorio en una factura del sector salud: el código del procedimiento",
        ),
        None => {}
    }
    let unit = l.code(&["unidad_medida"], p)?;
    names.set(format!("{u}.unit_measure"), l.at("unidad_medida"));

    let taxes = read_line_taxes(&l, ctx.index, &u, names, extras, p)?;
    read_patient(&l, ctx.health, ctx.health_allowed, extras, p)?;

    Ok(DocumentLine {
        description,
        invoiced_quantity: (ctx.array == "invoice_lines").then_some(quantity),
        credited_quantity: (ctx.array == "credit_note_lines").then_some(quantity),
        debited_quantity: (ctx.array == "debit_note_lines").then_some(quantity),
        line_extension_amount: None,
        price_amount: price,
        unit_measure: unit.map(|(_, code)| UnitMeasure { code }),
        code: code.map(|(_, c)| c),
        tax_totals: (!taxes.is_empty()).then_some(taxes),
        allowance_charges: None,
        transporte: None,
    })
}
