//! Taxes and withholdings: a line's shortcuts (`iva`, `reteica` ...) and
//! `impuestos[]` items, by name or the authority's code.

use rust_decimal::Decimal;

use super::super::names::Names;
use super::super::reader::{objects, Obj, Problems, TypeResult};
use super::{DeclaredTax, Extras};
use crate::api::invoice_request::request::TaxTotal;

/// The tax shortcuts of a line: name, the authority's code, withholding.
const SHORTCUTS: [(&str, &str, bool); 7] = [
    ("iva", "01", false),
    ("inc", "04", false),
    ("ica", "03", false),
    ("bolsas", "22", false),
    ("reteiva", "05", true),
    ("retefuente", "06", true),
    ("reteica", "07", true),
];

#[derive(Debug, Clone, Copy)]
pub(super) enum Rate {
    Percent(Decimal),
    PerUnit(Decimal),
}

pub(super) struct TaxItem {
    pub(super) code: String,
    pub(super) rate: Option<Rate>,
    pub(super) base: Option<Decimal>,
    pub(super) amount: Option<Decimal>,
}

/// The authority's tax code of an `impuestos[].tipo`.
fn tax_code(tipo: &str) -> Option<String> {
    let t = tipo.trim().to_ascii_lowercase();
    Some(
        match t.as_str() {
            "iva" => "01",
            "ic" => "02",
            "ica" => "03",
            "inc" => "04",
            "bolsas" | "inc_bolsas" => "22",
            "combustibles" => "24",
            "sobretasa_combustibles" => "25",
            "advalorem" | "ad_valorem" => "26",
            "reteiva" => "05",
            "retefuente" | "reterenta" => "06",
            "reteica" => "07",
            // The spec's withholding numbers (decisions.md §5).
            "05" | "5" => "07",
            "06" | "6" => "05",
            "07" | "7" => "06",
            _ => {
                let code = if t.len() == 1 {
                    format!("0{t}")
                } else {
                    t.to_ascii_uppercase()
                };
                const CODES: &[&str] = &[
                    "01", "02", "03", "04", "20", "21", "22", "23", "24", "25", "26", "30", "32",
                    "33", "34", "35", "36", "ZZ",
                ];
                return CODES.contains(&code.as_str()).then_some(code);
            }
        }
        .to_string(),
    )
}

pub(super) fn read_tax_item(item: &Obj<'_>, p: &mut Problems) -> TypeResult<Option<TaxItem>> {
    let code = match item.code(&["tipo"], p)? {
        Some((name, t)) => match tax_code(&t) {
            Some(c) => Some(c),
            None => {
                p.push(
                    item.at(name),
                    "tipo de impuesto desconocido: iva, inc, ica, bolsas, combustibles, sobretasa_combustibles, advalorem, reteiva, retefuente, reteica, o un código (01, 04, 24 ...)",
                );
                None
            }
        },
        None => {
            p.push(item.at("tipo"), "es obligatorio");
            None
        }
    };
    let percent = item.decimal(&["porcentaje"], p)?;
    let per_unit = item.decimal(&["valor_unitario"], p)?;
    let rate = match (percent, per_unit) {
        (Some(_), Some(_)) => {
            p.push(
                item.at("porcentaje"),
                "envíe porcentaje o valor_unitario, no ambos",
            );
            None
        }
        (Some((_, pc)), None) => Some(Rate::Percent(pc)),
        (None, Some((_, a))) => Some(Rate::PerUnit(a)),
        (None, None) => None,
    };
    let base = item.decimal(&["base"], p)?.map(|(_, d)| d);
    let amount = item.decimal(&["valor"], p)?.map(|(_, d)| d);
    Ok(code.map(|code| TaxItem {
        code,
        rate,
        base,
        amount,
    }))
}

/// Line `l`'s (the `index`th) taxes: the shortcuts, then `impuestos[]`, in the order the
/// shared mapping keeps them (taxes and withholdings apart); `u` is the
/// line's unified path.
pub(super) fn read_line_taxes(
    l: &Obj<'_>,
    index: usize,
    u: &str,
    names: &mut Names,
    extras: &mut Extras,
    p: &mut Problems,
) -> TypeResult<Vec<TaxTotal>> {
    let mut taxes = Vec::new();
    let (mut n_taxes, mut n_withholdings) = (0usize, 0usize);
    let mut place = |withholding: bool| {
        let counter = if withholding {
            &mut n_withholdings
        } else {
            &mut n_taxes
        };
        let at = *counter;
        *counter += 1;
        (index, withholding, at)
    };
    for (name, code, withholding) in SHORTCUTS {
        if let Some((_, percent)) = l.decimal(&[name], p)? {
            let k = taxes.len();
            let field = l.at(name);
            for sub in ["", ".tax_code", ".percent"] {
                names.set(format!("{u}.tax_totals[{k}]{sub}"), field.clone());
            }
            place(withholding);
            taxes.push(TaxTotal {
                tax_code: code.into(),
                tax_name: None,
                percent: Some(percent),
                per_unit_amount: None,
                taxable_amount: None,
                tax_amount: None,
            });
        }
    }
    if let Some((name, items)) = l.array(&["impuestos"], p)? {
        for (j, im) in objects(&l.at(name), items)?.into_iter().enumerate() {
            let ipath = format!("{}[{j}]", l.at(name));
            let item = Obj {
                map: im,
                path: &ipath,
            };
            let Some(t) = read_tax_item(&item, p)? else {
                continue;
            };
            let k = taxes.len();
            names.set(format!("{u}.tax_totals[{k}]"), ipath.clone());
            names.set(
                format!("{u}.tax_totals[{k}].tax_code"),
                format!("{ipath}.tipo"),
            );
            names.set(
                format!("{u}.tax_totals[{k}].percent"),
                format!("{ipath}.porcentaje"),
            );
            names.set(
                format!("{u}.tax_totals[{k}].per_unit_amount"),
                format!("{ipath}.valor_unitario"),
            );
            let (percent, per_unit) = match t.rate {
                Some(Rate::Percent(pc)) => (Some(pc), None),
                Some(Rate::PerUnit(a)) => (None, Some(a)),
                None => {
                    p.push(&ipath, "indique porcentaje o valor_unitario");
                    (None, None)
                }
            };
            let withholding = matches!(t.code.as_str(), "05" | "06" | "07");
            let slot = place(withholding);
            if t.base.is_some() || t.amount.is_some() {
                extras.taxes.push(DeclaredTax {
                    path: ipath.clone(),
                    code: t.code.clone(),
                    percent,
                    base: t.base,
                    amount: t.amount,
                    line: Some(slot),
                });
            }
            taxes.push(TaxTotal {
                tax_code: t.code,
                tax_name: None,
                percent,
                per_unit_amount: per_unit,
                taxable_amount: None,
                tax_amount: None,
            });
        }
    }
    Ok(taxes)
}
