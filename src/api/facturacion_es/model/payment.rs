//! How the document is paid: `forma_pago`, `metodo_pago`, the due date.

use chrono::Days;

use super::super::names::Names;
use super::super::reader::{Obj, Problems, TypeResult};
use crate::api::invoice_request::request::PaymentForm;

/// `forma_pago`, `metodo_pago`, `dias_credito`, `fecha_vencimiento`.
pub(super) fn read_payment(
    top: &Obj<'_>,
    names: &mut Names,
    p: &mut Problems,
) -> TypeResult<Option<PaymentForm>> {
    let form = top.code(&["forma_pago"], p)?;
    let method = top.code(&["metodo_pago"], p)?;
    let days = top.integer(&["dias_credito"], p)?;
    let due = top.date(&["fecha_vencimiento"], p)?;
    names.set("payment_form.id", "forma_pago");
    names.set("payment_form.method", "metodo_pago");
    names.set("payment_form.due_date", "fecha_vencimiento");
    names.set("payment_form", "forma_pago");
    if form.is_none() && method.is_none() && days.is_none() && due.is_none() {
        return Ok(None);
    }
    let form = match form.as_ref().map(|(_, f)| f.to_ascii_lowercase()) {
        None => "1".to_string(),
        Some(f) => match f.as_str() {
            "contado" | "1" | "10" => "1".into(),
            "credito" | "crédito" | "2" => "2".into(),
            _ => {
                p.push("forma_pago", "debe ser contado (1) o credito (2)");
                "1".into()
            }
        },
    };
    let method = match method {
        None => "10".to_string(),
        Some((_, m)) => match payment_method(&m) {
            Some(code) => code,
            None => {
                p.push(
                    "metodo_pago",
                    "método de pago desconocido: efectivo, cheque, consignacion, transferencia, tarjeta_credito, tarjeta_debito, o el código (10, 42, 47, 48 ...)",
                );
                "10".into()
            }
        },
    };
    let due_date = if form == "2" {
        match (due, days) {
            (Some((_, d)), _) => Some(d),
            (None, Some((_, n))) => {
                let today = crate::issuing::context::colombia_now().date_naive();
                let due = today.checked_add_days(Days::new(n)).filter(|_| n <= 3650);
                if due.is_none() {
                    p.push("dias_credito", "máximo 3650 días");
                }
                due
            }
            (None, None) => {
                p.push(
                    "fecha_vencimiento",
                    "es obligatorio con forma_pago credito (o dias_credito)",
                );
                None
            }
        }
    } else {
        for (given, name) in [
            (days.is_some(), "dias_credito"),
            (due.is_some(), "fecha_vencimiento"),
        ] {
            if given {
                p.push(name, "solo con forma_pago credito");
            }
        }
        None
    };
    Ok(Some(PaymentForm {
        id: Some(form),
        method: Some(method),
        due_date,
    }))
}

/// A payment means by name, or the authority's code as given.
fn payment_method(m: &str) -> Option<String> {
    let t = m.trim().to_ascii_lowercase().replace([' ', '-'], "_");
    let code = match t.as_str() {
        "efectivo" => "10",
        "cheque" => "20",
        "consignacion" | "consignación" | "deposito" => "42",
        "transferencia" | "transferencia_debito" => "47",
        "transferencia_credito" => "45",
        "tarjeta_credito" | "tarjeta_de_credito" => "48",
        "tarjeta_debito" | "tarjeta_de_debito" => "49",
        "instrumento_no_definido" => "1",
        "acuerdo_mutuo" | "otro" => "ZZZ",
        _ => {
            let ok = !t.is_empty() && t.len() <= 3 && t.bytes().all(|b| b.is_ascii_alphanumeric());
            return ok.then(|| t.to_ascii_uppercase());
        }
    };
    Some(code.to_string())
}
