//! The PDF graphical representation of a document: pure, a stored document
//! in, bytes out (no HTTP, no store), so a benchmark and a unit test drive
//! it directly. What it prints comes from the signed UBL XML (what the
//! authority validated) plus the record (code, QR URL, state) and the
//! issuing company, in views of its own ([`RecordView`], [`CompanyView`])
//! that the caller builds from what it stored (`issuing::files`).
//!
//! * [`view`]: the XML read into what is printed.
//! * [`a4`]: invoices, notes, exports, contingency, support documents.
//! * [`payroll`]: payroll documents (102, 103), A4.
//! * [`thermal`]: POS receipts and their adjustments on an 80 or 58 mm strip.
//! * [`canvas`]: text, rules and QR codes over printpdf.
//! * [`qr`]: the QR symbol, its mask chosen quickly.
//! * [`font`]: the embedded font, subset per document.
//! * [`format`]: amounts, quantities and titles as printed.

pub mod a4;
pub mod canvas;
pub mod font;
pub mod format;
pub mod payroll;
pub mod qr;
pub mod thermal;
pub mod view;

pub use view::{DocumentView, ResolutionView};

/// What a layout prints from.
#[derive(Debug, Clone, Copy)]
pub struct RenderInput<'a> {
    pub record: &'a RecordView,
    pub company: &'a CompanyView,
    /// The record's numbering resolution; the XML's own (`sts:InvoiceControl`)
    /// is printed when it has one.
    pub resolution: Option<&'a ResolutionView>,
    pub signed_xml: &'a str,
}

/// What the stored record adds to the XML: the code and QR URL it was
/// answered with, and where it stands with the authority.
#[derive(Debug, Clone, Default)]
pub struct RecordView {
    pub code: Option<String>,
    pub code_scheme: Option<String>,
    pub qr_url: Option<String>,
    /// The authority accepted the document.
    pub accepted: bool,
    /// The state's name as the answers write it (`Rechazado`).
    pub state_name: &'static str,
}

/// The issuing company as its letterhead prints it.
#[derive(Debug, Clone, Default)]
pub struct CompanyView {
    pub name: String,
    pub trade_name: Option<String>,
    pub nit: String,
    pub dv: u8,
    pub address: String,
    pub municipality_name: String,
    pub department_name: String,
    pub email: Option<String>,
    pub phone: Option<String>,
    /// Tax regime code (`48`, `49`).
    pub tax_regime: String,
    /// Fiscal responsibilities (`O-13`).
    pub tax_responsibilities: String,
}

/// The page the document is printed on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    A4,
    /// A thermal strip `width_mm` wide (80 or 58), as long as its content.
    Thermal {
        width_mm: u32,
    },
}

impl Layout {
    /// The usual layout of a document type: a strip for POS receipts and
    /// their adjustments (9, 10), A4 for the rest.
    pub fn default_for(document_type: u8) -> Layout {
        match document_type {
            9 | 10 => Layout::Thermal { width_mm: 80 },
            _ => Layout::A4,
        }
    }
}

/// Thermal widths a printer takes.
pub const THERMAL_WIDTHS: [u32; 2] = [80, 58];

#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error("the document's XML cannot be read: {0}")]
    Xml(String),
    #[error("font: {0}")]
    Font(String),
    #[error("QR code: {0}")]
    Qr(String),
    #[error("thermal width must be 80 or 58 mm, not {0}")]
    Width(u32),
}

/// The document's PDF in `layout`.
pub fn document_pdf(input: &RenderInput<'_>, layout: Layout) -> Result<Vec<u8>, RenderError> {
    // Payroll is not UBL: its own reading and layout (always A4).
    if payroll::is_payroll(input.signed_xml) {
        return payroll::render(input);
    }
    let view = DocumentView::read(input.signed_xml)?;
    let doc = Printed::new(input, &view);
    match layout {
        Layout::A4 => a4::render(&doc),
        Layout::Thermal { width_mm } if THERMAL_WIDTHS.contains(&width_mm) => {
            thermal::render(&doc, width_mm)
        }
        Layout::Thermal { width_mm } => Err(RenderError::Width(width_mm)),
    }
}

/// The facts both layouts print, gathered once.
pub struct Printed<'a> {
    pub input: &'a RenderInput<'a>,
    pub view: &'a DocumentView,
    /// The record's code, else the XML's.
    pub code: &'a str,
    pub code_label: &'a str,
    /// The verification URL the QR code carries.
    pub qr_url: String,
    pub title: &'static str,
    pub resolution: Option<ResolutionView>,
}

impl<'a> Printed<'a> {
    pub fn new(input: &'a RenderInput<'a>, view: &'a DocumentView) -> Printed<'a> {
        let code = input
            .record
            .code
            .as_deref()
            .filter(|c| !c.is_empty())
            .unwrap_or(&view.code);
        let scheme = input
            .record
            .code_scheme
            .as_deref()
            .unwrap_or(&view.code_scheme);
        let qr_url = input
            .record
            .qr_url
            .clone()
            .filter(|u| !u.is_empty())
            .unwrap_or_else(|| qr_from_xml(input.signed_xml));
        let resolution = view
            .resolution
            .clone()
            .or_else(|| input.resolution.cloned());
        Printed {
            input,
            view,
            code,
            code_label: format::code_label(scheme),
            qr_url,
            title: format::title(&view.type_code),
            resolution,
        }
    }

    /// `NIT 900000001-2` of the issuing company.
    pub fn issuer_nit(&self) -> String {
        format!("NIT {}-{}", self.input.company.nit, self.input.company.dv)
    }

    /// `Bogotá, D.C. - Bogotá` of the issuing company.
    pub fn issuer_place(&self) -> String {
        let c = self.input.company;
        if c.department_name.is_empty() || c.department_name == c.municipality_name {
            c.municipality_name.clone()
        } else {
            format!("{} - {}", c.municipality_name, c.department_name)
        }
    }

    /// Lines of the resolution paragraph.
    pub fn resolution_text(&self) -> Option<String> {
        self.resolution.as_ref().map(|r| {
            format!(
                "Autorización de numeración No. {} vigente del {} al {}, prefijo {} del {} al {}",
                r.number, r.valid_from, r.valid_to, r.prefix, r.from, r.to
            )
        })
    }

    /// `Proveedor tecnológico …` lines.
    pub fn software_text(&self) -> String {
        let v = self.view;
        let nit = match &v.provider_dv {
            Some(dv) => format!("{}-{dv}", v.provider_nit),
            None => v.provider_nit.clone(),
        };
        let mut s = format!(
            "Proveedor de software: NIT {nit}, software {}",
            v.software_id
        );
        if let Some((name, maker)) = &v.software_maker {
            s.push_str(&format!(" ({name}, fabricante {maker})"));
        }
        s
    }

    /// A notice when the authority has not accepted the document.
    pub fn state_notice(&self) -> Option<String> {
        let record = self.input.record;
        (!record.accepted).then(|| {
            format!(
                "Estado del documento: {} (no validado aún por la autoridad tributaria)",
                record.state_name
            )
        })
    }

    /// `Fecha de emisión 2024-02-15 07:43:48`.
    pub fn issued_at(&self) -> String {
        let time = self.view.issue_time.split(['-', '+']).next().unwrap_or("");
        format!("{} {}", self.view.issue_date, time)
            .trim()
            .to_string()
    }

    /// The label of the other party.
    pub fn counterparty_label(&self) -> &'static str {
        if self.view.issuer_is_buyer() {
            "Proveedor (vendedor)"
        } else {
            "Adquirente"
        }
    }
}

/// `sts:QRCode` of a document whose record has no URL.
fn qr_from_xml(xml: &str) -> String {
    let start = xml.find("<sts:QRCode>").map(|i| i + "<sts:QRCode>".len());
    let end = xml.find("</sts:QRCode>");
    match (start, end) {
        (Some(s), Some(e)) if s <= e => xml[s..e].trim().replace("&amp;", "&"),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests;
