//! Lines of the request → engine lines: the array a kind takes, quantities,
//! prices, the declared subtotal, taxes and withholdings, discounts.

use std::fmt::Display;

use rust_decimal::Decimal;

use super::{codes, kind_name, DeclaredTax, Errors, FieldMap};
use crate::api::invoice_request::request::{DocumentLine, FacturacionRequest, TaxTotal};
use crate::engine::limits;
use crate::engine::model::{AllowanceCharge, CargoTransport, DocumentKind, Line, LineTax, TaxRate};
use crate::engine::totals::{self, TOLERANCE};
use crate::engine::ubl::sector::TRANSPORT_UNITS;
use crate::engine::validate::MAX_LINES;

/// Which array carries the lines of a kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum LineArray {
    Invoice,
    Credit,
    Debit,
}

impl LineArray {
    pub(super) fn of(kind: DocumentKind) -> LineArray {
        match kind {
            DocumentKind::CreditNote
            | DocumentKind::SupportAdjustment
            | DocumentKind::PosAdjustment => LineArray::Credit,
            DocumentKind::DebitNote => LineArray::Debit,
            _ => LineArray::Invoice,
        }
    }

    const ALL: [LineArray; 3] = [LineArray::Invoice, LineArray::Credit, LineArray::Debit];

    pub(super) fn name(self) -> &'static str {
        match self {
            LineArray::Invoice => "invoice_lines",
            LineArray::Credit => "credit_note_lines",
            LineArray::Debit => "debit_note_lines",
        }
    }

    pub(super) fn quantity_name(self) -> &'static str {
        match self {
            LineArray::Invoice => "invoiced_quantity",
            LineArray::Credit => "credited_quantity",
            LineArray::Debit => "debited_quantity",
        }
    }

    fn lines(self, req: &FacturacionRequest) -> Option<&Vec<DocumentLine>> {
        match self {
            LineArray::Invoice => req.invoice_lines.as_ref(),
            LineArray::Credit => req.credit_note_lines.as_ref(),
            LineArray::Debit => req.debit_note_lines.as_ref(),
        }
    }

    fn quantity(self, line: &DocumentLine) -> Option<Decimal> {
        match self {
            LineArray::Invoice => line.invoiced_quantity,
            LineArray::Credit => line.credited_quantity,
            LineArray::Debit => line.debited_quantity,
        }
    }
}

/// The lines of the request; `transport` says whether lines may carry
/// `transporte` (operation `12`).
pub(super) fn map_lines(
    req: &FacturacionRequest,
    kind: DocumentKind,
    array: LineArray,
    transport: bool,
    e: &mut Errors,
    fields: &mut FieldMap,
) -> Vec<Line> {
    let name = array.name();
    let Some(items) = array.lines(req).filter(|l| !l.is_empty()) else {
        let sent: Vec<&str> = LineArray::ALL
            .iter()
            .filter(|a| **a != array && a.lines(req).is_some_and(|l| !l.is_empty()))
            .map(|a| a.name())
            .collect();
        let hint = if sent.is_empty() {
            String::new()
        } else {
            format!(" (not {})", sent.join(", "))
        };
        e.push(
            name,
            format!(
                "at least one line is required: {} (id_tipo_documento {}) takes {name}{hint}",
                kind_name(kind),
                req.id_tipo_documento
            ),
        );
        return Vec::new();
    };
    if items.len() > MAX_LINES {
        e.push(
            name,
            format!("at most {MAX_LINES} lines ({} sent)", items.len()),
        );
        return Vec::new();
    }
    items
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let (line, taxes, withholdings) = map_line(i, l, array, transport, e);
            fields.taxes.push((taxes, withholdings));
            line
        })
        .collect()
}

/// One line; returns it with the request index of each tax and withholding.
/// `invoice_lines[i]` (or the kind's array), for the names of its fields.
#[derive(Clone, Copy)]
struct LineAt {
    array: LineArray,
    i: usize,
}

impl LineAt {
    /// `invoice_lines[i].field`, formatted only if an error names it.
    fn field(self, field: &str) -> LineField<'_> {
        LineField { at: self, field }
    }
}

impl Display for LineAt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}[{}]", self.array.name(), self.i)
    }
}

/// `invoice_lines[i].tax_totals[j]`.
#[derive(Clone, Copy)]
struct TaxAt {
    at: LineAt,
    j: usize,
}

impl Display for TaxAt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.tax_totals[{}]", self.at, self.j)
    }
}

struct LineField<'a> {
    at: LineAt,
    field: &'a str,
}

impl Display for LineField<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.at, self.field)
    }
}

fn map_line(
    i: usize,
    l: &DocumentLine,
    array: LineArray,
    transport: bool,
    e: &mut Errors,
) -> (Line, Vec<usize>, Vec<usize>) {
    let at = LineAt { array, i };
    let before = e.0.len();

    if l.description.trim().is_empty() {
        e.push(at.field("description"), "is required");
    }
    e.limited(at.field("description"), &l.description, limits::TEXT);

    let quantity = match array.quantity(l) {
        Some(q) => {
            e.amount(at.field(array.quantity_name()), q, false);
            q
        }
        None => {
            let other = LineArray::ALL
                .iter()
                .find(|a| **a != array && a.quantity(l).is_some());
            let message = match other {
                Some(a) => format!(
                    "is required: {} use {}, not {}",
                    array.name(),
                    array.quantity_name(),
                    a.quantity_name()
                ),
                None => "is required".into(),
            };
            e.push(at.field(array.quantity_name()), message);
            Decimal::ZERO
        }
    };
    e.amount(at.field("price_amount"), l.price_amount, true);
    if let Some(x) = l.line_extension_amount {
        e.amount(at.field("line_extension_amount"), x, true);
    }

    let unit_code = match &l.unit_measure {
        Some(u) => {
            let code = u.code.trim().to_string();
            if code.is_empty() || code.len() > 3 || !code.bytes().all(|b| b.is_ascii_alphanumeric())
            {
                e.push(
                    at.field("unit_measure.code"),
                    "must be a unit code of 1 to 3 letters or digits (94, KGM, E48 ...)",
                );
            }
            code
        }
        None => "94".into(),
    };
    let item_code = l
        .code
        .as_deref()
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(str::to_string);
    if let Some(c) = &item_code {
        e.limited(at.field("code"), c, limits::CODE);
    }

    let mut allowances_charges = Vec::new();
    for (j, a) in l.allowance_charges.iter().flatten().enumerate() {
        let g = |field: &str| format!("{at}.allowance_charges[{j}].{field}");
        e.amount(g("amount"), a.amount, true);
        e.opt_limited(g("reason"), a.reason.as_deref(), limits::TEXT);
        e.opt_limited(g("reason_code"), a.reason_code.as_deref(), limits::CODE);
        let reason = a
            .reason
            .as_deref()
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .unwrap_or(if a.charge_indicator {
                "Cargo"
            } else {
                "Descuento"
            });
        allowances_charges.push(AllowanceCharge {
            is_charge: a.charge_indicator,
            reason_code: a.reason_code.clone(),
            reason: reason.to_string(),
            amount: a.amount,
        });
    }

    let mut taxes = Vec::new();
    let mut withholdings = Vec::new();
    let mut tax_sources = Vec::new();
    let mut withholding_sources = Vec::new();
    for (j, t) in l.tax_totals.iter().flatten().enumerate() {
        let field = TaxAt { at, j };
        let Some(tax) = map_tax(&field, t, true, e) else {
            continue;
        };
        if taxes
            .iter()
            .chain(&withholdings)
            .any(|s: &LineTax| s.code == tax.code)
        {
            e.push(
                format!("{field}.tax_code"),
                format!("tax {} appears twice on the line", tax.code),
            );
        }
        if codes::is_withholding(&tax.code) {
            withholdings.push(tax);
            withholding_sources.push(j);
        } else {
            taxes.push(tax);
            tax_sources.push(j);
        }
    }

    let mut line = Line {
        description: l.description.trim().to_string(),
        quantity,
        unit_code,
        unit_price: l.price_amount,
        line_extension: l.line_extension_amount,
        taxes,
        withholdings,
        allowances_charges,
        item_code,
        transport: None,
    };
    if let Some(t) = &l.transporte {
        if transport {
            line.transport = Some(map_transport(
                &at.field("transporte").to_string(),
                t,
                &line,
                i,
                e,
            ));
        } else {
            e.push(
                at.field("transporte"),
                "is only for a cargo-transport invoice (id_tipo_operacion 12)",
            );
        }
    }
    // The subtotal, when the line is otherwise sound.
    if e.0.len() == before {
        if let Some(declared) = l.line_extension_amount {
            match totals::line_totals(&line, i) {
                Ok(lt) => {
                    let diff = declared.checked_sub(lt.line_extension);
                    if diff.is_none_or(|d| d.abs() > TOLERANCE) {
                        e.push(
                            at.field("line_extension_amount"),
                            format!(
                                "is {declared} but quantity × price_amount rounded half-up to 2 decimals{} is {}",
                                if line.allowances_charges.is_empty() { "" } else { ", − discounts + charges," },
                                lt.line_extension
                            ),
                        );
                    }
                }
                Err(_) => e.push(
                    at.field("price_amount"),
                    "quantity × price_amount is too large",
                ),
            }
        }
    }
    (line, tax_sources, withholding_sources)
}

/// A line's consignment: the freight defaults to the line's subtotal, the
/// quantity to the line's, the unit to the line's when it is `KGM` or `GLL`
/// (else `KGM`).
fn map_transport(
    field: &str,
    t: &crate::api::invoice_request::request::TransportRequest,
    line: &Line,
    i: usize,
    e: &mut Errors,
) -> CargoTransport {
    let text = |name: &str, v: &Option<String>, e: &mut Errors| {
        let v = v.as_deref().map(str::trim).unwrap_or_default().to_string();
        let path = format!("{field}.{name}");
        if v.is_empty() {
            e.push(&path, "is required for a cargo-transport line");
        } else if v.chars().count() > 50 {
            e.push(&path, "at most 50 characters");
        } else {
            e.text(&path, &v);
        }
        v
    };
    let rndc_filing = text("radicado_rndc", &t.radicado_rndc, e);
    let consignment = text("numero_remesa", &t.numero_remesa, e);
    let freight = match t.valor_flete {
        Some(v) => {
            e.amount(format_args!("{field}.valor_flete"), v, true);
            v
        }
        None => totals::line_totals(line, i)
            .map(|lt| lt.line_extension)
            .unwrap_or_default(),
    };
    let quantity = match t.cantidad {
        Some(q) => {
            e.amount(format_args!("{field}.cantidad"), q, false);
            q
        }
        None => line.quantity,
    };
    let unit_code = match t.unidad.as_deref().map(str::trim) {
        Some(u) => {
            let u = u.to_ascii_uppercase();
            if !TRANSPORT_UNITS.contains(&u.as_str()) {
                e.push(
                    format!("{field}.unidad"),
                    "must be KGM (kilograms) or GLL (gallons)",
                );
            }
            u
        }
        None if TRANSPORT_UNITS.contains(&line.unit_code.as_str()) => line.unit_code.clone(),
        None => "KGM".into(),
    };
    CargoTransport {
        rndc_filing,
        consignment,
        freight,
        quantity,
        unit_code,
    }
}

/// A `tax_totals` item; `None` when it is unusable (errors pushed).
fn map_tax(field: &dyn Display, t: &TaxTotal, on_line: bool, e: &mut Errors) -> Option<LineTax> {
    let before = e.0.len();
    let code = codes::normalize_tax_code(&t.tax_code);
    if !codes::TAX_CODES.contains(&code.as_str()) {
        e.push(
            format!("{field}.tax_code"),
            format!(
                "unknown tax code `{}` (01 IVA, 03 ICA, 04 INC, 22 bags, 24-26 fuels; withholdings 05, 06, 07 ...)",
                t.tax_code
            ),
        );
    }
    e.opt_limited(
        format_args!("{field}.tax_name"),
        t.tax_name.as_deref(),
        limits::NAME,
    );
    let rate = match (t.percent, t.per_unit_amount) {
        (Some(_), Some(_)) => {
            e.push(
                format!("{field}.percent"),
                "send either percent or per_unit_amount, not both",
            );
            None
        }
        (Some(p), None) => {
            if p.is_sign_negative() && !p.is_zero() || p > Decimal::ONE_HUNDRED {
                e.push(format!("{field}.percent"), "must be between 0 and 100");
            }
            Some(TaxRate::Percent(p))
        }
        (None, Some(a)) => {
            e.amount(format_args!("{field}.per_unit_amount"), a, true);
            Some(TaxRate::PerUnit(a))
        }
        (None, None) => {
            if on_line {
                e.push(
                    format!("{field}.percent"),
                    "is required (or per_unit_amount for a fixed amount per unit)",
                );
            }
            None
        }
    };
    if let Some(x) = t.taxable_amount {
        e.amount(format_args!("{field}.taxable_amount"), x, true);
    }
    if let Some(x) = t.tax_amount {
        e.amount(format_args!("{field}.tax_amount"), x, true);
    }
    if e.0.len() != before {
        return None;
    }
    Some(LineTax {
        code,
        rate: rate.unwrap_or(TaxRate::Percent(Decimal::ZERO)),
        taxable: t.taxable_amount,
        amount: t.tax_amount,
    })
}

pub(super) fn map_declared_tax(index: usize, t: &TaxTotal, e: &mut Errors) -> Option<DeclaredTax> {
    let field = format!("tax_totals[{index}]");
    let tax = map_tax(&field, t, false, e)?;
    let rate = (t.percent.is_some() || t.per_unit_amount.is_some()).then_some(tax.rate);
    Some(DeclaredTax {
        index,
        code: tax.code,
        rate,
        taxable: tax.taxable,
        amount: tax.amount,
    })
}
