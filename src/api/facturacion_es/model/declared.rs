//! What the caller declares to be checked against our figures: top-level
//! `impuestos` and `totales`.

use rust_decimal::Decimal;

use super::super::reader::{objects, Obj, Problems, TypeResult};
use super::taxes::{read_tax_item, Rate};
use super::{DeclaredTax, DeclaredTotals, Extras};

/// The top-level `impuestos` and `totales`, into `extras`.
pub(super) fn read_declared(
    top: &Obj<'_>,
    extras: &mut Extras,
    p: &mut Problems,
) -> TypeResult<()> {
    if let Some((name, items)) = top.array(&["impuestos"], p)? {
        for (j, m) in objects(name, items)?.into_iter().enumerate() {
            let path = format!("{name}[{j}]");
            let item = Obj {
                map: m,
                path: &path,
            };
            if let Some(t) = read_tax_item(&item, p)? {
                if t.rate.is_none() && t.base.is_none() && t.amount.is_none() {
                    p.push(&path, "indique porcentaje, base o valor");
                }
                extras.taxes.push(DeclaredTax {
                    path: path.clone(),
                    code: t.code,
                    percent: match t.rate {
                        Some(Rate::Percent(pc)) => Some(pc),
                        _ => None,
                    },
                    base: t.base,
                    amount: t.amount,
                    line: None,
                });
            }
        }
    }
    if let Some((name, m)) = top.object(&["totales"], p)? {
        let t = Obj { map: m, path: name };
        let get = |field: &'static str, p: &mut Problems| -> TypeResult<Option<Decimal>> {
            Ok(t.decimal(&[field], p)?.map(|(_, d)| d))
        };
        extras.totals = DeclaredTotals {
            subtotal: get("subtotal", p)?,
            total_impuestos: get("total_impuestos", p)?,
            total_retenciones: get("total_retenciones", p)?,
            total: get("total", p)?,
        };
    }
    Ok(())
}
