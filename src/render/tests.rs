//! Every family rendered from a really signed document, checked as a reader
//! would: `pdftotext` finds the code, the total and the accents, `zbarimg`
//! reads exactly the verification URL from the page rendered by `pdftoppm`.
use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use chrono::Utc;
use emisor_store::{Company, DocumentRecord};

use super::*;
use crate::engine::model::{colombia_offset, DocumentKind, Line, LineTax};
use crate::engine::pipeline::{issue, IssuedDocument};
use crate::engine::signing_key::SigningKey;
use crate::engine::ubl::tests::sample;
use crate::fixtures;
use crate::issuing::files::{company_view, record_view};
use crate::testing::tool;

fn key() -> &'static SigningKey {
    static KEY: OnceLock<SigningKey> = OnceLock::new();
    KEY.get_or_init(fixtures::company_key)
}

pub(crate) fn company() -> Company {
    // Through serde, so fields added later with defaults need no change here.
    serde_json::from_value(serde_json::json!({
        "id": 1, "nit": fixtures::NIT, "dv": 2, "name": "Emisor Demo S.A.S.",
        "trade_name": "Emisor Demo", "address": "Calle 1 # 2-3",
        "municipality_code": "11001", "municipality_name": "Bogotá, D.C.",
        "department_code": "11", "department_name": "Bogotá",
        "email": "facturacion@emisor.test", "phone": "6015550000",
        "organization_type": 1, "tax_regime": "48", "tax_responsibilities": "O-13",
        "demo": true, "created_at": Utc::now(),
    }))
    .unwrap()
}

fn issued(kind: DocumentKind, lines: Option<usize>) -> IssuedDocument {
    let mut doc = sample(kind);
    if let Some(n) = lines {
        doc.lines = (1..=n)
            .map(|i| {
                let mut l = Line::simple(
                    &format!("Artículo número {i} con una descripción larga que ocupa más de una línea en la tabla"),
                    rust_decimal::Decimal::from(i as u32),
                    rust_decimal::Decimal::from(1000 * i as u32),
                );
                if !kind.issuer_is_buyer() {
                    l.taxes = vec![LineTax::percent("01", rust_decimal::Decimal::from(19))];
                }
                l
            })
            .collect();
    }
    let at = Utc::now().with_timezone(&colombia_offset());
    // The samples are dated March 2025; a credit term runs from today.
    for p in &mut doc.payments {
        if p.due_date.is_some() {
            p.due_date = Some(at.date_naive() + chrono::Days::new(30));
        }
    }
    let ctx = fixtures::context(kind, at);
    issue(&doc, &ctx, key()).unwrap()
}

pub(crate) fn record(kind: DocumentKind, d: &IssuedDocument) -> DocumentRecord {
    serde_json::from_value(serde_json::json!({
        "id": 7, "company_id": 1, "environment": "test", "document_type": kind.code(),
        "resolution_id": 1, "prefix": "SETP", "number": 990000001,
        "state": emisor_store::state::ACCEPTED, "code": d.code,
        "code_scheme": d.scheme.scheme_name(), "qr_url": d.qr_url,
        "issue_date": "2025-03-14", "total": d.totals.payable.to_string(),
        "created_at": Utc::now(), "updated_at": Utc::now(),
    }))
    .unwrap()
}

/// The text `pdftotext -layout` reads from `pdf`.
pub(crate) fn pdf_text(pdf: &[u8]) -> String {
    let mut child = Command::new("pdftotext")
        .args(["-layout", "-", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("pdftotext (poppler-utils)");
    child.stdin.take().unwrap().write_all(pdf).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "pdftotext: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// What `zbarimg` decodes from the first page of `pdf` rendered at 200 dpi.
pub(crate) fn qr_text(pdf: &[u8]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("doc.pdf");
    std::fs::write(&path, pdf).unwrap();
    let prefix = dir.path().join("page");
    let status = Command::new("pdftoppm")
        .args(["-r", "200", "-png"])
        .arg(&path)
        .arg(&prefix)
        .status()
        .expect("pdftoppm");
    assert!(status.success());
    let mut pages: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "png"))
        .collect();
    pages.sort();
    // QR symbols only: a run of text or rules can read as a 1-D barcode.
    let out = Command::new("zbarimg")
        .args(["--raw", "-q", "-Sdisable", "-Sqrcode.enable"])
        .args(&pages)
        .output()
        .expect("zbarimg (zbar-tools)");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn pages(pdf: &[u8]) -> usize {
    let text = String::from_utf8_lossy(pdf);
    text.matches("/Type /Page\n").count()
        + text.matches("/Type/Page/").count()
        + text.matches("/Type /Page ").count()
        + text.matches("/Type/Page>>").count()
}

/// `1190.00` as printed: `1.190,00`.
pub(crate) fn printed_amount(total: &str) -> String {
    format::money(total)
}

/// Checks one rendered document like a reader of the paper would.
fn check(kind: DocumentKind, layout: Layout) -> (String, Vec<u8>) {
    let out = check_inner(kind, layout);
    // `EMISOR_PDF_SAMPLES=dir` keeps the PDFs, to look at them.
    if let Some(dir) = std::env::var_os("EMISOR_PDF_SAMPLES") {
        let name = match layout {
            Layout::A4 => format!("{kind:?}.pdf"),
            Layout::Thermal { width_mm } => format!("{kind:?}-{width_mm}.pdf"),
        };
        std::fs::write(std::path::Path::new(&dir).join(name), &out.1).unwrap();
    }
    out
}

fn check_inner(kind: DocumentKind, layout: Layout) -> (String, Vec<u8>) {
    let d = issued(kind, None);
    let rec = record(kind, &d);
    let company = company();
    let input = RenderInput {
        record: &record_view(&rec),
        company: &company_view(&company),
        resolution: None,
        signed_xml: &d.xml,
    };
    let pdf = document_pdf(&input, layout).unwrap();
    assert!(pdf.starts_with(b"%PDF-"), "{kind:?}");
    // A subset, not the 740 KB font file.
    assert!(pdf.len() < 120_000, "{kind:?}: {} bytes", pdf.len());
    if !tool("pdftotext") {
        eprintln!("pdftotext missing: text not checked");
        return (String::new(), pdf);
    }
    let text = pdf_text(&pdf);
    let flat: String = text.split_whitespace().collect();
    assert!(flat.contains(&d.code), "{kind:?}: code not in\n{text}");
    let total = printed_amount(&rec.total);
    assert!(
        text.contains(&total),
        "{kind:?}: total {total} not in\n{text}"
    );
    assert!(text.contains("Bogotá"), "{kind:?}: no Bogotá in\n{text}");
    assert!(
        text.contains("NIT 900000001-2"),
        "{kind:?}: no issuer NIT in\n{text}"
    );
    if tool("zbarimg") {
        assert_eq!(qr_text(&pdf), d.qr_url, "{kind:?}");
    }
    (text, pdf)
}

#[test]
fn every_a4_family_prints_code_total_accents_and_a_readable_qr() {
    for kind in [
        DocumentKind::Invoice,
        DocumentKind::CreditNote,
        DocumentKind::DebitNote,
        DocumentKind::SupportDocument,
        DocumentKind::SupportAdjustment,
        DocumentKind::ExportInvoice,
        DocumentKind::ContingencyT03,
        DocumentKind::ContingencyT04,
    ] {
        let (text, _) = check(kind, Layout::A4);
        if text.is_empty() {
            continue;
        }
        let title = format::title(kind.type_code()).to_uppercase();
        let first_word = title.split_whitespace().next().unwrap();
        assert!(text.contains(first_word), "{kind:?}: title in\n{text}");
        assert!(
            text.contains("Autorización de numeración")
                || kind.root() != crate::engine::model::RootElement::Invoice,
            "{kind:?}: resolution in\n{text}"
        );
        assert!(
            text.contains("Proveedor de software: NIT 900000001-2"),
            "{kind:?}"
        );
        if kind.issuer_is_buyer() {
            assert!(text.contains("Pedro Pérez"), "{kind:?}: vendor in\n{text}");
            // Notes carry no withholdings (the schema has none on their lines).
            if kind == DocumentKind::SupportDocument {
                assert!(
                    text.contains("ReteRenta"),
                    "{kind:?}: withholding in\n{text}"
                );
            }
        } else {
            assert!(text.contains("Ñandú"), "{kind:?}: customer in\n{text}");
            assert!(text.contains("IVA 19%"), "{kind:?}: tax in\n{text}");
        }
        if kind.needs_reference() {
            assert!(
                text.contains("SETP990000000"),
                "{kind:?}: reference in\n{text}"
            );
        }
    }
}

#[test]
fn pos_receipts_print_on_both_thermal_widths() {
    for kind in [DocumentKind::Pos, DocumentKind::PosAdjustment] {
        for width_mm in THERMAL_WIDTHS {
            let (text, pdf) = check(kind, Layout::Thermal { width_mm });
            let p = String::from_utf8_lossy(&pdf);
            let mediabox = p
                .split("/MediaBox")
                .nth(1)
                .and_then(|s| s.split(']').next())
                .unwrap()
                .to_string();
            let numbers: Vec<f32> = mediabox
                .trim_start_matches([' ', '['])
                .split_whitespace()
                .map(|n| n.parse().unwrap())
                .collect();
            let expected = width_mm as f32 * canvas::MM;
            assert!((numbers[2] - expected).abs() < 1.0, "{mediabox}");
            // As long as the content: more than wide, far less than A4 + more.
            assert!(numbers[3] > numbers[2] && numbers[3] < 2000.0, "{mediabox}");
            if !text.is_empty() {
                assert!(text.contains("TOTAL"), "{text}");
            }
        }
    }
}

#[test]
fn long_invoices_go_on_to_more_pages() {
    let d = issued(DocumentKind::Invoice, Some(60));
    let rec = record(DocumentKind::Invoice, &d);
    let company = company();
    let input = RenderInput {
        record: &record_view(&rec),
        company: &company_view(&company),
        resolution: None,
        signed_xml: &d.xml,
    };
    let pdf = document_pdf(&input, Layout::A4).unwrap();
    assert!(pages(&pdf) >= 2, "{} pages", pages(&pdf));
    if tool("pdftotext") {
        let text = pdf_text(&pdf);
        assert!(text.contains("Artículo número 60"), "{text}");
        assert!(text.contains(&printed_amount(&rec.total)));
        assert!(text.contains("Página 1 de"), "{text}");
    }
}

#[test]
fn a_wrong_width_or_xml_is_an_error() {
    let d = issued(DocumentKind::Pos, None);
    let rec = record(DocumentKind::Pos, &d);
    let company = company();
    let mut input = RenderInput {
        record: &record_view(&rec),
        company: &company_view(&company),
        resolution: None,
        signed_xml: &d.xml,
    };
    assert!(matches!(
        document_pdf(&input, Layout::Thermal { width_mm: 72 }),
        Err(RenderError::Width(72))
    ));
    input.signed_xml = "<nope";
    assert!(matches!(
        document_pdf(&input, Layout::A4),
        Err(RenderError::Xml(_))
    ));
}

#[test]
fn a_document_not_accepted_says_so() {
    let d = issued(DocumentKind::Invoice, None);
    let mut rec = record(DocumentKind::Invoice, &d);
    rec.state = emisor_store::state::REJECTED;
    let company = company();
    let input = RenderInput {
        record: &record_view(&rec),
        company: &company_view(&company),
        resolution: None,
        signed_xml: &d.xml,
    };
    let pdf = document_pdf(&input, Layout::A4).unwrap();
    if tool("pdftotext") {
        assert!(pdf_text(&pdf).contains("Rechazado"));
    }
}
