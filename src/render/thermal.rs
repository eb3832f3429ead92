//! The thermal strip of POS receipts and their adjustment notes: 80 or
//! 58 mm wide, one column, as long as its content (the page is sized once
//! everything is placed). The code is printed in full over as many lines
//! as the width needs.

use super::canvas::{Align, Canvas, Style, MM};
use super::format::{money, money_in, payment_form, payment_means, quantity, tax_regime};
use super::{Printed, RenderError};

/// The tallest page PDF readers accept is 200 inches; a longer strip goes
/// on in a second page.
const MAX_PAGE: f32 = 14_000.0;

struct Strip {
    c: Canvas,
    y: f32,
    left: f32,
    right: f32,
    body: Style,
    small: Style,
    bold: Style,
    /// Where text starts on a page after the first.
    line: f32,
}

impl Strip {
    fn width(&self) -> f32 {
        self.right - self.left
    }

    fn advance(&mut self, h: f32) {
        self.y += h;
        if self.y > MAX_PAGE {
            self.c.new_page();
            self.y = self.line + 4.0 * MM;
        }
    }

    fn centred(&mut self, text: &str, style: Style) {
        let centre = (self.left + self.right) / 2.0;
        for line in self.c.wrap(text, style, self.width()) {
            self.c.text(centre, self.y, style, Align::Center, &line);
            self.advance(style.size * 1.25);
        }
    }

    fn left(&mut self, text: &str, style: Style) {
        for line in self.c.wrap(text, style, self.width()) {
            self.c.text(self.left, self.y, style, Align::Left, &line);
            self.advance(style.size * 1.25);
        }
    }

    /// `label ....... value` on one line (the label wrapped if it must).
    fn pair(&mut self, label: &str, value: &str, style: Style) {
        let vw = self.c.width_of(value, style);
        let lines = self
            .c
            .wrap(label, style, (self.width() - vw - 6.0).max(20.0));
        let last = lines.len().saturating_sub(1);
        for (i, line) in lines.iter().enumerate() {
            self.c.text(self.left, self.y, style, Align::Left, line);
            if i == last {
                self.c.text(self.right, self.y, style, Align::Right, value);
            }
            self.advance(style.size * 1.25);
        }
    }

    fn rule(&mut self) {
        self.advance(-self.body.size * 0.5);
        self.c.rule(self.left, self.right, self.y, 0.5);
        self.advance(self.body.size * 1.5);
    }
}

/// The strip of `doc`, `width_mm` wide.
pub fn render(doc: &Printed<'_>, width_mm: u32) -> Result<Vec<u8>, RenderError> {
    let width = width_mm as f32 * MM;
    let margin = if width_mm >= 80 { 4.0 * MM } else { 3.0 * MM };
    let size = if width_mm >= 80 { 7.5 } else { 6.5 };
    let mut s = Strip {
        c: Canvas::new(width)?,
        y: margin + size,
        left: margin,
        right: width - margin,
        body: Style::regular(size),
        small: Style::regular(size - 1.0),
        bold: Style::bold(size + 0.5),
        line: size * 1.25,
    };
    let v = doc.view;
    let company = doc.input.company;
    let (body, small, bold) = (s.body, s.small, s.bold);

    s.centred(&company.name, Style::bold(size + 2.0));
    if let Some(t) = company.trade_name.as_deref().filter(|t| *t != company.name) {
        s.centred(t, body);
    }
    s.centred(&doc.issuer_nit(), bold);
    let regime = tax_regime(&company.tax_regime);
    if !regime.is_empty() {
        s.centred(regime, small);
    }
    s.centred(&company.address, body);
    s.centred(&doc.issuer_place(), body);
    if let Some(p) = &company.phone {
        s.centred(&format!("Tel. {p}"), body);
    }
    s.rule();
    s.centred(&doc.title.to_uppercase(), bold);
    s.centred(&format!("No. {}", v.number), Style::bold(size + 2.0));
    s.centred(&format!("Fecha: {}", doc.issued_at()), body);
    if let Some((register, cashier)) = &v.register {
        s.centred(&format!("Caja {register} - Cajero {cashier}"), body);
    }
    if let Some(text) = doc.resolution_text() {
        s.centred(&text, small);
    }
    s.rule();

    let p = v.counterparty();
    s.left(&format!("{}: {}", doc.counterparty_label(), p.name), body);
    s.left(&p.identification(), body);
    if let Some(r) = &v.reference {
        s.rule();
        let mut text = format!("Documento referenciado: {}", r.number);
        if let Some(d) = &r.issue_date {
            text.push_str(&format!(" del {d}"));
        }
        s.left(&text, body);
        if let Some(code) = &r.code {
            for piece in s.c.chop(code, small, s.width()) {
                s.left(&piece, small);
            }
        }
        if let Some(code) = &r.concept_code {
            let concept = r.concept.as_deref().unwrap_or("");
            s.left(&format!("Concepto: {code} {concept}"), body);
        }
    }
    s.rule();

    for l in &v.lines {
        s.left(&l.description, body);
        let detail = format!("{} x {}", quantity(&l.quantity), money(&l.unit_price));
        s.pair(&detail, &money(&l.line_total), body);
        let mut extra: Vec<String> = l.taxes.clone();
        extra.extend(
            l.discounts
                .iter()
                .map(|d| format!("Desc./cargo {}", money(d))),
        );
        if !extra.is_empty() {
            s.left(&extra.join(" - "), small);
        }
    }
    s.rule();

    let t = &v.totals;
    s.pair("Subtotal", &money(&t.line_extension), body);
    for a in &v.allowances {
        let label = if a.reason.is_empty() {
            if a.is_charge {
                "Cargo"
            } else {
                "Descuento"
            }
        } else {
            a.reason.as_str()
        };
        let amount = if a.is_charge {
            money(&a.amount)
        } else {
            format!("-{}", money(&a.amount))
        };
        s.pair(label, &amount, body);
    }
    for tax in &v.taxes {
        s.pair(
            &format!("{} (base {})", tax.label(), money(&tax.taxable)),
            &money(&tax.amount),
            body,
        );
    }
    for w in &v.withholdings {
        s.pair(
            &format!("{} (retención)", w.label()),
            &money(&w.amount),
            body,
        );
    }
    s.advance(2.0);
    s.pair(
        "TOTAL",
        &money_in(&t.payable, &v.currency),
        Style::bold(size + 2.0),
    );
    if let Some((form, means, _)) = &v.payment {
        s.left(
            &format!("Pago: {} - {}", payment_form(form), payment_means(means)),
            body,
        );
    }
    for note in &v.notes {
        s.left(note, small);
    }
    s.rule();

    s.left(&format!("{}:", doc.code_label), bold);
    let code_style = Style::regular(size - 0.5);
    for piece in s.c.chop(doc.code, code_style, s.width()) {
        s.left(&piece, code_style);
    }
    s.advance(2.0);
    let qr = (s.width()).min(44.0 * MM);
    let top = s.y - size;
    s.c.qr((width - qr) / 2.0, top, qr, &doc.qr_url)?;
    s.y = top + qr + size + 2.0;
    s.centred(&doc.software_text(), small);
    if let Some(n) = doc.state_notice() {
        s.centred(&n, small);
    }
    let height = s.y + margin;
    let pages = s.c.page_count();
    let last = if pages > 1 { height } else { height.max(width) };
    s.c.finish(&v.number, MAX_PAGE + 10.0 * MM, Some(last))
}
