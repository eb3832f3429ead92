//! Cost of one PDF graphical representation once the font is loaded: an A4
//! invoice of 10 lines and a POS receipt on both thermal widths, each from
//! a really signed document built with the engine. Target: at most 2 ms of
//! CPU per PDF (one thread; criterion's wall time on a quiet machine).
//!
//! `cargo bench --bench pdf -- --warm-up-time 1 --measurement-time 3`

// A benchmark is test code: failing loudly on a broken fixture is what we want.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;

use chrono::Utc;
use criterion::{criterion_group, Criterion};
use rust_decimal_macros::dec;

use emisor::engine::model::*;
use emisor::engine::pipeline::{issue, IssuedDocument};
use emisor::fixtures;
use emisor::issuing::files::{company_view, record_view};
use emisor::render::{self, Layout, RenderInput};
use emisor_store::{Company, DocumentRecord};

fn company() -> Company {
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

fn record(kind: DocumentKind, d: &IssuedDocument) -> DocumentRecord {
    serde_json::from_value(serde_json::json!({
        "id": 1, "company_id": 1, "environment": "test", "document_type": kind.code(),
        "resolution_id": 1, "prefix": "SETP", "number": 990000001, "state": 2,
        "code": d.code, "code_scheme": d.scheme.scheme_name(), "qr_url": d.qr_url,
        "issue_date": "2025-03-14", "total": d.totals.payable.to_string(),
        "created_at": Utc::now(), "updated_at": Utc::now(),
    }))
    .unwrap()
}

/// Ten lines with VAT 19 %, 5 %, INC and a discount, like a shop's invoice.
fn lines() -> Vec<Line> {
    let names = [
        "Servicio de soporte mensual",
        "Licencia de software",
        "Almuerzo ejecutivo",
        "Libro técnico",
        "Cable de red (metros)",
        "Teclado inalámbrico",
        "Mouse óptico",
        "Monitor 24 pulgadas",
        "Instalación en Bogotá",
        "Capacitación de usuarios",
    ];
    names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let mut l = Line::simple(name, dec!(1) + rust_decimal::Decimal::from(i), dec!(18500));
            l.taxes = match i % 3 {
                0 => vec![LineTax::percent("01", dec!(19))],
                1 => vec![LineTax::percent("01", dec!(5))],
                _ => vec![
                    LineTax::percent("01", dec!(19)),
                    LineTax::percent("04", dec!(8)),
                ],
            };
            if i == 4 {
                l.allowances_charges.push(AllowanceCharge {
                    is_charge: false,
                    reason_code: Some("01".into()),
                    reason: "Descuento por volumen".into(),
                    amount: dec!(5000),
                });
            }
            l
        })
        .collect()
}

fn signed(kind: DocumentKind, counterparty: Party, n: usize) -> IssuedDocument {
    let mut l = lines();
    l.truncate(n);
    let mut doc = Document::new(kind, counterparty, l);
    doc.notes = vec!["Gracias por su compra".into()];
    let at = Utc::now().with_timezone(&colombia_offset());
    issue(&doc, &fixtures::context(kind, at), &fixtures::company_key()).unwrap()
}

fn pdfs(c: &mut Criterion) {
    let company = company();
    let invoice = signed(
        DocumentKind::Invoice,
        fixtures::customer("Cliente Ejemplo S.A.S."),
        10,
    );
    let receipt = signed(DocumentKind::Pos, Party::final_consumer(), 4);
    let invoice_record = record_view(&record(DocumentKind::Invoice, &invoice));
    let receipt_record = record_view(&record(DocumentKind::Pos, &receipt));
    let company = company_view(&company);
    let a4 = RenderInput {
        record: &invoice_record,
        company: &company,
        resolution: None,
        signed_xml: &invoice.xml,
    };
    let strip = RenderInput {
        record: &receipt_record,
        company: &company,
        resolution: None,
        signed_xml: &receipt.xml,
    };
    // Loads the font; what follows is the per-document cost.
    let first = render::document_pdf(&a4, Layout::A4).unwrap();
    let thermal = render::document_pdf(&strip, Layout::Thermal { width_mm: 80 }).unwrap();
    eprintln!(
        "sizes: A4 invoice (10 lines) {} B, 80 mm receipt {} B",
        first.len(),
        thermal.len()
    );

    let mut g = c.benchmark_group("pdf");
    g.bench_function("a4_invoice_10_lines", |b| {
        b.iter(|| render::document_pdf(black_box(&a4), Layout::A4).unwrap())
    });
    for width_mm in render::THERMAL_WIDTHS {
        g.bench_function(format!("pos_receipt_{width_mm}mm"), |b| {
            b.iter(|| {
                render::document_pdf(black_box(&strip), Layout::Thermal { width_mm }).unwrap()
            })
        });
    }
    g.bench_function("font_subset_only", |b| {
        let metrics = render::font::metrics().unwrap();
        let chars = "Factura electrónica de venta Bogotá 0123456789 ABCDEFGHIJKLMNOPQRSTUVWXYZ abcdefghijklmnopqrstuvwxyz áéíóúñ.,:-$%()"
            .chars()
            .collect();
        b.iter(|| metrics.subset(black_box(&chars)).unwrap())
    });
    g.finish();
}

/// The server's allocator (see `src/main.rs`), so the bench measures what
/// the server runs.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

criterion_group!(benches, pdfs);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
}
