//! Numbers and names as a Colombian printed document shows them:
//! `1.234.567,89`, quantities without trailing zeros, the words of the
//! authority's code lists.

use std::str::FromStr;

use rust_decimal::Decimal;

/// `1234567.8` → `1.234.567,80`; what does not parse is shown as it is.
pub fn money(amount: &str) -> String {
    match Decimal::from_str(amount.trim()) {
        Ok(d) => grouped(d.round_dp(2), 2),
        Err(_) => amount.to_string(),
    }
}

/// `$ 1.190,00` in pesos, `USD 1.190,00` in another currency.
pub fn money_in(amount: &str, currency: &str) -> String {
    if currency.is_empty() || currency == "COP" {
        format!("$ {}", money(amount))
    } else {
        format!("{currency} {}", money(amount))
    }
}

/// `3.000000` → `3`, `25.50` → `25,5`.
pub fn quantity(q: &str) -> String {
    match Decimal::from_str(q.trim()) {
        Ok(d) => {
            let d = d.normalize();
            grouped(d, d.scale())
        }
        Err(_) => q.to_string(),
    }
}

/// `d` with `scale` decimals, thousands grouped by `.`, decimals after `,`.
fn grouped(d: Decimal, scale: u32) -> String {
    let mut d = d;
    d.rescale(scale);
    let text = d.abs().to_string();
    let (int, frac) = match text.split_once('.') {
        Some((i, f)) => (i.to_string(), Some(f.to_string())),
        None => (text, None),
    };
    let mut out = String::with_capacity(int.len() + int.len() / 3 + 4);
    if d.is_sign_negative() && !d.is_zero() {
        out.push('-');
    }
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i).is_multiple_of(3) {
            out.push('.');
        }
        out.push(c);
    }
    if let Some(f) = frac.filter(|f| !f.is_empty()) {
        out.push(',');
        out.push_str(&f);
    }
    out
}

/// The printed title of each of the authority's document types.
pub fn title(type_code: &str) -> &'static str {
    match type_code {
        "01" => "Factura electrónica de venta",
        "02" => "Factura electrónica de exportación",
        "03" => "Factura electrónica de venta - contingencia facturador (tipo 03)",
        "04" => "Factura electrónica de venta - contingencia (tipo 04)",
        "05" => {
            "Documento soporte en adquisiciones efectuadas a sujetos no obligados a expedir factura"
        }
        "20" => {
            "Documento equivalente electrónico - tiquete de máquina registradora con sistema P.O.S."
        }
        "91" => "Nota crédito electrónica",
        "92" => "Nota débito electrónica",
        "94" => "Nota de ajuste del documento equivalente electrónico P.O.S.",
        "95" => "Nota de ajuste del documento soporte",
        _ => "Documento electrónico",
    }
}

/// `CUFE-SHA384` → `CUFE`.
pub fn code_label(scheme: &str) -> &str {
    scheme
        .split('-')
        .next()
        .filter(|s| !s.is_empty())
        .unwrap_or("CUFE")
}

/// Payment form (`1` cash, `2` credit).
pub fn payment_form(code: &str) -> &str {
    match code {
        "1" => "Contado",
        "2" => "Crédito",
        other => other,
    }
}

/// The most common payment means of the authority's list 3.4.4.
pub fn payment_means(code: &str) -> String {
    let name = match code {
        "1" => "Instrumento no definido",
        "10" => "Efectivo",
        "20" => "Cheque",
        "42" => "Consignación bancaria",
        "47" => "Transferencia débito bancaria",
        "48" => "Tarjeta crédito",
        "49" => "Tarjeta débito",
        "ZZZ" => "Acuerdo mutuo",
        _ => return code.to_string(),
    };
    format!("{name} ({code})")
}

/// The regime line under the issuer's name.
pub fn tax_regime(code: &str) -> &'static str {
    match code {
        "48" => "Responsable de IVA",
        "49" => "No responsable de IVA",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn money_groups_thousands_with_dots() {
        assert_eq!(money("1190.00"), "1.190,00");
        assert_eq!(money("1234567.8"), "1.234.567,80");
        assert_eq!(money("0"), "0,00");
        assert_eq!(money("-5000"), "-5.000,00");
        assert_eq!(money("999.995"), "1.000,00");
        assert_eq!(money("abc"), "abc");
        assert_eq!(money_in("10", "COP"), "$ 10,00");
        assert_eq!(money_in("10", "USD"), "USD 10,00");
    }

    #[test]
    fn quantities_drop_trailing_zeros() {
        assert_eq!(quantity("3.000000"), "3");
        assert_eq!(quantity("25.50"), "25,5");
        assert_eq!(quantity("1200"), "1.200");
    }

    #[test]
    fn labels() {
        assert_eq!(code_label("CUDS-SHA384"), "CUDS");
        assert_eq!(code_label(""), "CUFE");
        assert_eq!(payment_form("2"), "Crédito");
        assert_eq!(payment_means("10"), "Efectivo (10)");
        assert!(title("05").starts_with("Documento soporte"));
    }
}
