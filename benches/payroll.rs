//! Cost of issuing one payroll document (what `POST /nomina/enviar` with
//! `transmit: false` spends on the signer pool), whole and stage by stage,
//! next to one RSA-2048 signature measured in the same run.
//!
//! `cargo bench --bench payroll -- --warm-up-time 1 --measurement-time 3`
//!
//! The target, as for invoices: a whole document within 1.3× of one
//! RSA-2048 signature. Figures: docs/performance.md.

// A benchmark is test code: failing loudly on a broken fixture is what we want.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;

use chrono::{NaiveDate, Utc};
use criterion::{criterion_group, Criterion};
use rust_decimal_macros::dec;

use emisor::engine::codes;
use emisor::engine::model::{colombia_offset, DocumentKind, IssuerContext};
use emisor::engine::payroll::model::*;
use emisor::engine::payroll::{self, totals, xml};
use emisor::engine::xades;
use emisor::fixtures;

fn date(s: &str) -> NaiveDate {
    NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
}

/// The company's payroll context (`NOM` numbering), issued now.
fn context() -> IssuerContext {
    let at = Utc::now().with_timezone(&colombia_offset());
    let mut ctx = fixtures::context(DocumentKind::Invoice, at);
    ctx.resolution.prefix = "NOM".into();
    ctx.resolution.from = 1;
    ctx.number = 1234;
    ctx
}

/// A month: salary, transport aid, overtime, a bonus; health, pension,
/// solidarity fund and a payroll loan.
fn payroll() -> PayrollDocument {
    let earning = |kind, amount, quantity| Earning {
        kind,
        description: None,
        amount,
        quantity,
        percent: None,
    };
    let deduction = |kind, amount, percent| Deduction {
        kind,
        description: None,
        percent,
        base: None,
        amount,
    };
    PayrollDocument {
        kind: PayrollKind::Individual,
        employee: Employee {
            id_type: "13".into(),
            id_number: "1020304050".into(),
            first_name: "Ana".into(),
            first_surname: "Gómez".into(),
            second_surname: Some("Ruiz".into()),
            worker_type: "01".into(),
            worker_subtype: "00".into(),
            contract_type: "2".into(),
            ..Employee::default()
        },
        period: Period {
            hired: Some(date("2024-02-01")),
            retired: None,
            settlement_start: date("2025-03-01"),
            settlement_end: date("2025-03-31"),
            days_worked: 30,
        },
        earnings: vec![
            earning(EarningKind::Basic, dec!(4500000), Some(dec!(30))),
            earning(EarningKind::Transport, dec!(200000), None),
            earning(EarningKind::OvertimeDay, dec!(234375), Some(dec!(10))),
            earning(EarningKind::Premium, dec!(300000), None),
        ],
        deductions: vec![
            deduction(DeductionKind::Health, dec!(180000), Some(dec!(4))),
            deduction(DeductionKind::Pension, dec!(180000), Some(dec!(4))),
            deduction(DeductionKind::SolidarityFund, dec!(45000), Some(dec!(1))),
            deduction(DeductionKind::Loan, dec!(250000), None),
        ],
        declared: DeclaredTotals::default(),
        notes: vec!["Nómina de marzo".into()],
        novelty: None,
        generation_date: None,
        generation_time: None,
        payroll_period: "1".into(),
        currency: "COP".into(),
        exchange_rate: None,
        place: Place::default(),
        employer: EmployerOverride::default(),
        payment: Payment::default(),
        payment_dates: vec![date("2025-03-31")],
        rounding: None,
        predecessor: None,
    }
}

fn stages(c: &mut Criterion) {
    let key = fixtures::company_key();
    let ctx = context();
    let doc = payroll();
    let t = totals::validate_and_total(&doc).unwrap();
    let (gen_date, gen_time) = payroll::generation(&doc, &ctx);
    let cune = payroll::cune(&doc, &ctx, &t, &gen_date, &gen_time);
    let url = codes::qr_url(ctx.environment, &cune);
    let number = ctx.document_number();
    let ssc = codes::software_security_code(&ctx.software.id, &ctx.software.pin, &number);
    let input = xml::PayrollBuildInput {
        doc: &doc,
        ctx: &ctx,
        totals: &t,
        cune: &cune,
        qr_url: &url,
        software_security_code: &ssc,
        gen_date: &gen_date,
        gen_time: &gen_time,
    };
    let unsigned = xml::build(&input).unwrap();
    let issued = payroll::issue(&doc, &ctx, &key).unwrap();
    xades::verify(&issued.xml).unwrap();
    let signed_info = {
        let s = issued.xml.find("<ds:SignedInfo").unwrap();
        let e = issued.xml.find("</ds:SignedInfo>").unwrap();
        issued.xml[s..e].to_string()
    };
    eprintln!(
        "sizes: unsigned {} B, signed {} B, zip {} B",
        unsigned.len(),
        issued.xml.len(),
        issued.zip().unwrap().len()
    );

    let mut g = c.benchmark_group("payroll");
    g.bench_function("a_issue_whole", |b| {
        b.iter(|| payroll::issue(black_box(&doc), &ctx, &key).unwrap())
    });
    g.bench_function("b_validate_and_totals", |b| {
        b.iter(|| totals::validate_and_total(black_box(&doc)).unwrap())
    });
    g.bench_function("b2_cune_qr_ssc", |b| {
        b.iter(|| {
            let cune = payroll::cune(black_box(&doc), &ctx, &t, &gen_date, &gen_time);
            let ssc = codes::software_security_code(&ctx.software.id, &ctx.software.pin, &number);
            (cune, ssc)
        })
    });
    g.bench_function("c_xml_build", |b| {
        b.iter(|| xml::build(black_box(&input)).unwrap())
    });
    g.bench_function("e_rsa2048_sign", |b| {
        b.iter(|| {
            key.sign_rsa_sha256(black_box(signed_info.as_bytes()))
                .unwrap()
        })
    });
    g.bench_function("f_xades_sign_whole", |b| {
        b.iter(|| xades::sign(black_box(&unsigned), &key, ctx.issue_instant).unwrap())
    });
    g.finish();
}

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

criterion_group!(benches, stages);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
}
