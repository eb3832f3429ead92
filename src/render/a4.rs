//! The A4 layout: invoices, exports, contingency invoices, credit and debit
//! notes, support documents and their adjustments. Header (issuer, title,
//! number, dates, numbering resolution), the other party, the reference of
//! a note, the lines (onto more pages when they do not fit, the table head
//! repeated), the tax and withholding breakdown and the totals, then the
//! code in full, the QR code and the software provider.

use super::canvas::{Align, Canvas, Style, MM};
use super::format::{money, money_in, payment_form, payment_means, quantity, tax_regime};
use super::view::{LineView, TaxView};
use super::{Printed, RenderError};

const WIDTH: f32 = 210.0 * MM;
const HEIGHT: f32 = 297.0 * MM;
const MARGIN: f32 = 12.0 * MM;
const RIGHT: f32 = WIDTH - MARGIN;
/// Room kept at the foot of every page for its number.
const FOOT: f32 = 14.0 * MM;
/// Side of the QR code, quiet zone included.
const QR_SIZE: f32 = 34.0 * MM;

/// Rows of one table line at most: what fits a page under the table head.
const MAX_ROWS: usize = 60;

const BODY: Style = Style::regular(8.0);
const SMALL: Style = Style::regular(7.0);
const LABEL: Style = Style::grey(7.0);
const HEAD: Style = Style::bold(8.0);

/// Columns of the line table: (title, right edge or left edge, alignment).
struct Columns {
    number: f32,
    code: f32,
    description: f32,
    description_width: f32,
    quantity: f32,
    price: f32,
    taxes: f32,
    total: f32,
}

const COLUMNS: Columns = Columns {
    number: MARGIN + 2.0,
    code: MARGIN + 18.0,
    description: MARGIN + 70.0,
    description_width: 190.0,
    quantity: MARGIN + 300.0,
    price: MARGIN + 372.0,
    taxes: MARGIN + 380.0,
    total: RIGHT - 2.0,
};

/// A4 layout of `doc`.
pub fn render(doc: &Printed<'_>) -> Result<Vec<u8>, RenderError> {
    let mut c = Canvas::new(WIDTH)?;
    let mut y = header(&mut c, doc);
    y = parties(&mut c, doc, y);
    y = reference(&mut c, doc, y);
    y = lines(&mut c, doc, y);
    y = totals(&mut c, doc, y);
    footer(&mut c, doc, y)?;
    number_pages(&mut c);
    c.finish(&doc.view.number, HEIGHT, None)
}

/// A new page when `needed` points do not fit below `y`.
fn room(c: &mut Canvas, y: f32, needed: f32) -> f32 {
    if y + needed > HEIGHT - FOOT {
        c.new_page();
        MARGIN + 4.0
    } else {
        y
    }
}

fn header(c: &mut Canvas, doc: &Printed<'_>) -> f32 {
    let company = doc.input.company;
    let left_width = 105.0 * MM;
    let mut y = MARGIN + 12.0;
    for line in c.wrap(&company.name, Style::bold(13.0), left_width) {
        c.text(MARGIN, y, Style::bold(13.0), Align::Left, &line);
        y += 15.0;
    }
    if let Some(t) = company.trade_name.as_deref().filter(|t| *t != company.name) {
        c.text(MARGIN, y, BODY, Align::Left, t);
        y += 11.0;
    }
    c.text(MARGIN, y, Style::bold(9.0), Align::Left, &doc.issuer_nit());
    y += 11.0;
    let regime = tax_regime(&company.tax_regime);
    let resp = format!(
        "{regime}{}Responsabilidades fiscales: {}",
        if regime.is_empty() { "" } else { " - " },
        company.tax_responsibilities
    );
    for line in [company.address.clone(), doc.issuer_place(), resp] {
        c.text(MARGIN, y, BODY, Align::Left, &line);
        y += 10.0;
    }
    let contact: Vec<&str> = [company.phone.as_deref(), company.email.as_deref()]
        .into_iter()
        .flatten()
        .collect();
    if !contact.is_empty() {
        c.text(MARGIN, y, BODY, Align::Left, &contact.join(" - "));
        y += 10.0;
    }

    // The title box, right.
    let box_x = MARGIN + left_width + 6.0 * MM;
    let box_w = RIGHT - box_x;
    let title_style = Style::bold(9.0);
    let title_lines = c.wrap(&doc.title.to_uppercase(), title_style, box_w - 12.0);
    let mut rows: Vec<(String, String)> = vec![("Fecha de emisión".into(), doc.issued_at())];
    if let Some(d) = &doc.view.due_date {
        rows.push(("Fecha de vencimiento".into(), d.clone()));
    }
    let box_h = 14.0 + title_lines.len() as f32 * 11.0 + 18.0 + rows.len() as f32 * 10.0;
    c.shade(box_x, MARGIN, box_w, box_h, 0.08);
    let mut by = MARGIN + 13.0;
    let centre = box_x + box_w / 2.0;
    for line in &title_lines {
        c.text(centre, by, title_style, Align::Center, line);
        by += 11.0;
    }
    by += 5.0;
    c.text(
        centre,
        by,
        Style::bold(12.0),
        Align::Center,
        &format!("No. {}", doc.view.number),
    );
    by += 13.0;
    for (label, value) in rows {
        c.text(
            centre,
            by,
            BODY,
            Align::Center,
            &format!("{label}: {value}"),
        );
        by += 10.0;
    }
    let mut y = y.max(MARGIN + box_h) + 6.0;
    if let Some(text) = doc.resolution_text() {
        for line in c.wrap(&text, SMALL, RIGHT - MARGIN) {
            c.text(MARGIN, y, SMALL, Align::Left, &line);
            y += 9.0;
        }
    }
    y + 2.0
}

/// The other party (left) and payment facts (right).
fn parties(c: &mut Canvas, doc: &Printed<'_>, y: f32) -> f32 {
    let v = doc.view;
    let p = v.counterparty();
    c.rule(MARGIN, RIGHT, y, 0.6);
    let mut ly = y + 11.0;
    c.text(
        MARGIN,
        ly,
        LABEL,
        Align::Left,
        &doc.counterparty_label().to_uppercase(),
    );
    ly += 11.0;
    let half = (RIGHT - MARGIN) / 2.0 - 10.0;
    for line in c.wrap(&p.name, Style::bold(9.0), half) {
        c.text(MARGIN, ly, Style::bold(9.0), Align::Left, &line);
        ly += 11.0;
    }
    let mut facts = vec![p.identification()];
    if let Some(t) = &p.trade_name {
        facts.push(t.clone());
    }
    facts.extend(p.address.clone());
    let place = p.place();
    if !place.is_empty() {
        facts.push(place);
    }
    facts.extend(p.email.clone());
    facts.extend(p.phone.as_ref().map(|t| format!("Tel. {t}")));
    for f in facts {
        for line in c.wrap(&f, BODY, half) {
            c.text(MARGIN, ly, BODY, Align::Left, &line);
            ly += 10.0;
        }
    }

    let rx = MARGIN + half + 20.0;
    let mut ry = y + 11.0;
    let mut right: Vec<(String, String)> = Vec::new();
    if let Some((form, means, due)) = &v.payment {
        right.push(("Forma de pago".into(), payment_form(form).to_string()));
        right.push(("Medio de pago".into(), payment_means(means)));
        if let Some(d) = due {
            right.push(("Vence".into(), d.clone()));
        }
    }
    right.push(("Moneda".into(), v.currency.clone()));
    if let Some((from, to, rate)) = &v.exchange {
        right.push((
            "Tasa de cambio".into(),
            format!("1 {from} = {} {to}", money(rate)),
        ));
    }
    if let Some(t) = &v.delivery_terms {
        right.push(("Incoterm".into(), t.clone()));
    }
    if let Some((register, cashier)) = &v.register {
        right.push(("Caja / cajero".into(), format!("{register} / {cashier}")));
    }
    if let Some(op) = &v.operation {
        right.push(("Tipo de operación".into(), op.clone()));
    }
    for (label, value) in right {
        c.text(rx, ry, LABEL, Align::Left, &label);
        c.text(rx + 80.0, ry, BODY, Align::Left, &value);
        ry += 10.0;
    }
    ly.max(ry) + 4.0
}

/// The document a note adjusts and why.
fn reference(c: &mut Canvas, doc: &Printed<'_>, y: f32) -> f32 {
    let Some(r) = &doc.view.reference else {
        return y;
    };
    c.rule(MARGIN, RIGHT, y, 0.6);
    let mut y = y + 11.0;
    c.text(MARGIN, y, LABEL, Align::Left, "DOCUMENTO REFERENCIADO");
    y += 11.0;
    let mut first = format!("No. {}", r.number);
    if let Some(d) = &r.issue_date {
        first.push_str(&format!(" del {d}"));
    }
    c.text(MARGIN, y, Style::bold(8.0), Align::Left, &first);
    y += 10.0;
    if let Some(code) = &r.code {
        let label = r
            .code_scheme
            .as_deref()
            .map(super::format::code_label)
            .unwrap_or("CUFE");
        c.text(MARGIN, y, SMALL, Align::Left, &format!("{label}: {code}"));
        y += 9.0;
    }
    if let Some(code) = &r.concept_code {
        let text = match &r.concept {
            Some(d) => format!("Concepto: {code} - {d}"),
            None => format!("Concepto: {code}"),
        };
        for line in c.wrap(&text, BODY, RIGHT - MARGIN) {
            c.text(MARGIN, y, BODY, Align::Left, &line);
            y += 10.0;
        }
    }
    y + 2.0
}

fn table_head(c: &mut Canvas, y: f32) -> f32 {
    c.shade(MARGIN, y, RIGHT - MARGIN, 14.0, 0.12);
    let b = y + 10.0;
    let k = &COLUMNS;
    c.text(k.number, b, HEAD, Align::Left, "#");
    c.text(k.code, b, HEAD, Align::Left, "Código");
    c.text(k.description, b, HEAD, Align::Left, "Descripción");
    c.text(k.quantity, b, HEAD, Align::Right, "Cantidad");
    c.text(k.price, b, HEAD, Align::Right, "Valor unitario");
    c.text(k.taxes, b, HEAD, Align::Left, "Impuestos");
    c.text(k.total, b, HEAD, Align::Right, "Valor");
    y + 14.0
}

fn line_rows(c: &Canvas, l: &LineView) -> (Vec<String>, Vec<String>) {
    let k = &COLUMNS;
    let mut description = c.wrap(&l.description, BODY, k.description_width);
    // A description longer than a page is cut (the XML keeps it whole).
    if description.len() > MAX_ROWS {
        description.truncate(MAX_ROWS);
        if let Some(last) = description.last_mut() {
            last.push_str(" …");
        }
    }
    if !l.discounts.is_empty() {
        let d: Vec<String> = l.discounts.iter().map(|d| money(d)).collect();
        description.push(format!("Descuentos/cargos: {}", d.join(", ")));
    }
    let taxes = l
        .taxes
        .iter()
        .flat_map(|t| c.wrap(t, SMALL, k.total - k.taxes - 58.0))
        .collect();
    (description, taxes)
}

fn lines(c: &mut Canvas, doc: &Printed<'_>, y: f32) -> f32 {
    let k = &COLUMNS;
    let top = room(c, y + 4.0, 40.0);
    let mut y = table_head(c, top);
    for l in &doc.view.lines {
        let (description, taxes) = line_rows(c, l);
        let rows = description.len().max(taxes.len()).max(1);
        let h = rows as f32 * 10.0 + 4.0;
        if y + h > HEIGHT - FOOT {
            c.new_page();
            y = table_head(c, MARGIN + 4.0);
        }
        let b = y + 10.0;
        c.text(k.number, b, BODY, Align::Left, &l.number);
        let code = c.chop(&l.code, SMALL, k.description - k.code - 4.0);
        if let Some(first) = code.first() {
            c.text(k.code, b, SMALL, Align::Left, first);
        }
        for (i, line) in description.iter().enumerate() {
            c.text(k.description, b + i as f32 * 10.0, BODY, Align::Left, line);
        }
        let unit = if l.unit.is_empty() || l.unit == "94" {
            String::new()
        } else {
            format!(" {}", l.unit)
        };
        c.text(
            k.quantity,
            b,
            BODY,
            Align::Right,
            &format!("{}{unit}", quantity(&l.quantity)),
        );
        c.text(k.price, b, BODY, Align::Right, &money(&l.unit_price));
        for (i, t) in taxes.iter().enumerate() {
            c.text(k.taxes, b + i as f32 * 10.0, SMALL, Align::Left, t);
        }
        c.text(k.total, b, BODY, Align::Right, &money(&l.line_total));
        y += h;
        c.rule(MARGIN, RIGHT, y, 0.3);
    }
    y + 8.0
}

/// Rows of a tax breakdown: name and rate, base, amount.
fn breakdown_rows(taxes: &[TaxView]) -> Vec<(String, String, String)> {
    taxes
        .iter()
        .map(|t| (t.label(), money(&t.taxable), money(&t.amount)))
        .collect()
}

/// The breakdown tables (left) and the totals (right).
fn totals(c: &mut Canvas, doc: &Printed<'_>, y: f32) -> f32 {
    let v = doc.view;
    let t = &v.totals;
    let taxes = breakdown_rows(&v.taxes);
    let withholdings = breakdown_rows(&v.withholdings);
    let tax_sum = sum(&v.taxes);
    let withholding_sum = sum(&v.withholdings);

    let mut rows: Vec<(String, String)> = vec![("Subtotal".into(), money(&t.line_extension))];
    for a in &v.allowances {
        let label = match (a.is_charge, a.reason.is_empty()) {
            (true, true) => "Cargo".to_string(),
            (false, true) => "Descuento".to_string(),
            (_, false) => a.reason.clone(),
        };
        let amount = if a.is_charge {
            money(&a.amount)
        } else {
            format!("-{}", money(&a.amount))
        };
        rows.push((label, amount));
    }
    rows.push(("Base gravable".into(), money(&t.tax_exclusive)));
    rows.push(("Total impuestos".into(), money(&tax_sum)));
    if !v.withholdings.is_empty() {
        rows.push(("Total retenciones".into(), money(&withholding_sum)));
    }
    if !t.prepaid.is_empty() {
        rows.push((
            "Copago / anticipo".into(),
            format!("-{}", money(&t.prepaid)),
        ));
    }
    let table_rows = taxes.len() + withholdings.len() + 3;
    let needed = (rows.len().max(table_rows) as f32) * 10.0 + 40.0;
    let y0 = room(c, y, needed);

    // Left: taxes and withholdings, each with its base.
    let lx = MARGIN;
    let cols = [lx + 90.0, lx + 175.0, lx + 250.0];
    let mut ly = y0;
    for (title, group) in [("Impuestos", &taxes), ("Retenciones", &withholdings)] {
        if group.is_empty() {
            continue;
        }
        c.shade(lx, ly, cols[2] - lx + 4.0, 12.0, 0.08);
        c.text(lx + 2.0, ly + 9.0, HEAD, Align::Left, title);
        c.text(cols[1], ly + 9.0, HEAD, Align::Right, "Base");
        c.text(cols[2], ly + 9.0, HEAD, Align::Right, "Valor");
        ly += 12.0;
        for (name, base, amount) in group {
            ly += 10.0;
            c.text(lx + 2.0, ly - 2.0, BODY, Align::Left, name);
            c.text(cols[1], ly - 2.0, BODY, Align::Right, base);
            c.text(cols[2], ly - 2.0, BODY, Align::Right, amount);
        }
        ly += 6.0;
    }

    // Right: the totals.
    let label_x = RIGHT - 175.0;
    let mut ry = y0 + 9.0;
    for (label, value) in rows {
        c.text(label_x, ry, BODY, Align::Left, &label);
        c.text(RIGHT - 2.0, ry, BODY, Align::Right, &value);
        ry += 10.0;
    }
    ry += 2.0;
    c.shade(label_x - 4.0, ry - 10.0, RIGHT - label_x + 4.0, 16.0, 0.12);
    c.text(label_x, ry + 2.0, Style::bold(10.0), Align::Left, "TOTAL");
    c.text(
        RIGHT - 2.0,
        ry + 2.0,
        Style::bold(10.0),
        Align::Right,
        &money_in(&t.payable, &v.currency),
    );
    ry += 16.0;
    let mut y = ly.max(ry) + 4.0;
    if !v.notes.is_empty() {
        y = room(c, y, 24.0);
        c.text(MARGIN, y + 8.0, LABEL, Align::Left, "OBSERVACIONES");
        y += 18.0;
        for note in &v.notes {
            for line in c.wrap(note, BODY, RIGHT - MARGIN) {
                y = room(c, y, 10.0);
                c.text(MARGIN, y, BODY, Align::Left, &line);
                y += 10.0;
            }
        }
    }
    y
}

/// Sum of the amounts of `taxes`, as a decimal string.
fn sum(taxes: &[TaxView]) -> String {
    use std::str::FromStr;
    taxes
        .iter()
        .filter_map(|t| rust_decimal::Decimal::from_str(&t.amount).ok())
        .sum::<rust_decimal::Decimal>()
        .to_string()
}

/// The code in full, the QR code, the software and the state.
fn footer(c: &mut Canvas, doc: &Printed<'_>, y: f32) -> Result<(), RenderError> {
    let y = room(c, y + 4.0, QR_SIZE + 8.0);
    c.rule(MARGIN, RIGHT, y, 0.6);
    let top = y + 4.0;
    c.qr(MARGIN - 2.0 * MM, top, QR_SIZE, &doc.qr_url)?;
    let x = MARGIN + QR_SIZE;
    let width = RIGHT - x;
    let mut ty = top + 14.0;
    c.text(x, ty, HEAD, Align::Left, &format!("{}:", doc.code_label));
    ty += 10.0;
    let code_style = Style::regular(7.0);
    for piece in c.chop(doc.code, code_style, width) {
        c.text(x, ty, code_style, Align::Left, &piece);
        ty += 9.0;
    }
    ty += 3.0;
    let mut texts = vec![
        format!("Representación gráfica de: {}", doc.title.to_lowercase()),
        doc.software_text(),
    ];
    texts.extend(doc.state_notice());
    for text in texts {
        for line in c.wrap(&text, SMALL, width) {
            c.text(x, ty, SMALL, Align::Left, &line);
            ty += 9.0;
        }
    }
    Ok(())
}

fn number_pages(c: &mut Canvas) {
    let n = c.page_count();
    // Each page was laid out in turn; write the numbers page by page.
    c.on_each_page(|c, i| {
        c.text(
            RIGHT,
            HEIGHT - MARGIN + 4.0,
            LABEL,
            Align::Right,
            &format!("Página {} de {n}", i + 1),
        );
    });
}
