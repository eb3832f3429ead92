//! Cost of issuing one 5-line invoice, whole and stage by stage, and the
//! signer pool's throughput on one thread vs every core.
//!
//! `cargo bench --bench engine -- --warm-up-time 1 --measurement-time 3`
//!
//! The floor is one RSA-2048 signature (compare `openssl speed rsa2048`);
//! the target is a whole document within 1.3× of it. Figures:
//! docs/performance.md.

// A benchmark is test code: failing loudly on a broken fixture is what we want.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::sync::Arc;

use chrono::{DateTime, FixedOffset, Utc};
use criterion::{criterion_group, Criterion, Throughput};
use rust_decimal_macros::dec;
use sha2::{Digest, Sha256};

use emisor::engine::codes;
use emisor::engine::model::*;
use emisor::engine::package;
use emisor::engine::pipeline::{document_code, issue};
use emisor::engine::ubl::{self, BuildInput};
use emisor::engine::validate::{validate_and_total, CertificateValidity};
use emisor::engine::xades;
use emisor::fixtures;
use emisor_actors::signer_pool::{default_threads, SignerPool};

// ---------------------------------------------------------------------------
// A sample invoice (the issuer, customer and key are `emisor::fixtures`).
// ---------------------------------------------------------------------------

/// The sample context, issued at `at` (now): its resolution runs to 2035.
fn context(at: DateTime<FixedOffset>) -> IssuerContext {
    let mut ctx = fixtures::context(DocumentKind::Invoice, at);
    ctx.resolution.valid_to = chrono::NaiveDate::from_ymd_opt(2035, 1, 19).unwrap();
    ctx
}

/// Five lines: IVA 19 %, IVA 5 %, IVA + INC, an excluded line, a discount.
fn invoice() -> Document {
    let iva = |p| LineTax::percent("01", p);
    let mut lines = vec![
        Line::simple("Servicio de soporte mensual", dec!(1), dec!(850000)),
        Line::simple("Licencia de software", dec!(3), dec!(120000)),
        Line::simple("Almuerzo ejecutivo", dec!(12), dec!(18500)),
        Line::simple("Libro técnico", dec!(2), dec!(65000)),
        Line::simple("Cable de red (metros)", dec!(25.5), dec!(2300)),
    ];
    lines[0].taxes = vec![iva(dec!(19))];
    lines[1].taxes = vec![iva(dec!(5))];
    lines[2].taxes = vec![iva(dec!(19)), LineTax::percent("04", dec!(8))];
    lines[3].taxes = vec![iva(dec!(0))];
    lines[4].taxes = vec![iva(dec!(19))];
    lines[4].allowances_charges.push(AllowanceCharge {
        is_charge: false,
        reason_code: Some("01".into()),
        reason: "Descuento por volumen".into(),
        amount: dec!(5000),
    });
    let customer = fixtures::customer("Cliente Ejemplo S.A.");
    let mut d = Document::new(DocumentKind::Invoice, customer, lines);
    d.operation_type = Some("10".into());
    d.notes = vec!["Gracias por su compra".into()];
    d
}

/// The attributes of the root start tag (its namespace declarations), which
/// the canonical KeyInfo, SignedProperties and SignedInfo carry: their
/// digests are over strings this long.
fn root_namespaces(root: &str) -> String {
    let start_tag = &root[..root.find('>').unwrap()];
    start_tag[start_tag.find(' ').unwrap()..].to_string()
}

/// `<open …>…</close>` cut out of `xml`, with `ns` added to its start tag.
fn fragment_with_ns(xml: &str, open: &str, close: &str, ns: &str) -> String {
    let start = xml.find(open).unwrap();
    let end = xml[start..].find(close).unwrap() + start + close.len();
    let frag = &xml[start..end];
    format!("{open}{ns}{}", &frag[open.len()..])
}

// ---------------------------------------------------------------------------

fn stages(c: &mut Criterion) {
    let key = fixtures::company_key();
    let at = Utc::now().with_timezone(&colombia_offset());
    let doc = invoice();
    let ctx = context(at);
    let cert = CertificateValidity {
        not_before: key.not_before(),
        not_after: key.not_after(),
    };
    let totals = validate_and_total(&doc, &ctx, Some(cert)).unwrap();
    let code = document_code(&doc, &ctx, &totals);
    let qr_url = codes::qr_url(ctx.environment, &code);
    let number = ctx.document_number();
    let ssc = codes::software_security_code(&ctx.software.id, &ctx.software.pin, &number);
    let input = BuildInput {
        doc: &doc,
        ctx: &ctx,
        totals: &totals,
        code: &code,
        qr_url: &qr_url,
        software_security_code: &ssc,
    };
    let unsigned = ubl::build(&input).unwrap();
    let signed = xades::sign(&unsigned, &key, at).unwrap();
    let issued = issue(&doc, &ctx, &key).unwrap();
    xades::verify(&issued.xml).unwrap();

    let root = &unsigned[unsigned.find("?>").unwrap() + 2..];
    let ns = root_namespaces(root);
    let keyinfo = fragment_with_ns(&signed, "<ds:KeyInfo", "</ds:KeyInfo>", &ns);
    let signedprops = fragment_with_ns(
        &signed,
        "<xades:SignedProperties",
        "</xades:SignedProperties>",
        &ns,
    );
    let signedinfo = fragment_with_ns(&signed, "<ds:SignedInfo", "</ds:SignedInfo>", &ns);
    eprintln!(
        "sizes: unsigned {} B, signed {} B, zip {} B, KeyInfo {} B, SignedProperties {} B, SignedInfo {} B",
        unsigned.len(),
        issued.xml.len(),
        issued.zip().unwrap().len(),
        keyinfo.len(),
        signedprops.len(),
        signedinfo.len()
    );

    let mut g = c.benchmark_group("engine");
    g.bench_function("a_issue_whole", |b| {
        b.iter(|| issue(black_box(&doc), &ctx, &key).unwrap())
    });
    g.bench_function("b_validate_and_totals", |b| {
        b.iter(|| validate_and_total(black_box(&doc), &ctx, Some(cert)).unwrap())
    });
    g.bench_function("b2_code_qr_ssc", |b| {
        b.iter(|| {
            let code = document_code(black_box(&doc), &ctx, &totals);
            let qr = codes::qr_url(ctx.environment, &code);
            let ssc = codes::software_security_code(&ctx.software.id, &ctx.software.pin, &number);
            (code, qr, ssc)
        })
    });
    g.bench_function("c_ubl_build", |b| {
        b.iter(|| ubl::build(black_box(&input)).unwrap())
    });
    g.bench_function("d_digest_document", |b| {
        b.iter(|| Sha256::digest(black_box(root.as_bytes())))
    });
    g.bench_function("d_digest_signedinfo_keyinfo_signedprops", |b| {
        b.iter(|| {
            (
                Sha256::digest(black_box(keyinfo.as_bytes())),
                Sha256::digest(black_box(signedprops.as_bytes())),
                Sha256::digest(black_box(signedinfo.as_bytes())),
            )
        })
    });
    g.bench_function("e_rsa2048_sign", |b| {
        b.iter(|| {
            key.sign_rsa_sha256(black_box(signedinfo.as_bytes()))
                .unwrap()
        })
    });
    g.bench_function("f_xades_sign_whole", |b| {
        b.iter(|| xades::sign(black_box(&unsigned), &key, at).unwrap())
    });
    for level in [package::DEFLATE_LEVEL, 6] {
        g.bench_function(format!("g_zip_level_{level}"), |b| {
            b.iter(|| {
                package::zip_single_at_level(
                    &issued.xml_name,
                    black_box(issued.xml.as_bytes()),
                    at,
                    level,
                )
                .unwrap()
            })
        });
    }
    g.finish();
}

/// Documents issued per second through the pool.
fn pool_throughput(c: &mut Criterion) {
    const DOCS: u64 = 64;
    let key = Arc::new(fixtures::company_key());
    let at = Utc::now().with_timezone(&colombia_offset());
    let job = Arc::new((invoice(), context(at)));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let cores = default_threads();
    let mut g = c.benchmark_group("signer_pool");
    g.throughput(Throughput::Elements(DOCS));
    g.sample_size(10);
    let mut sizes = vec![1];
    if cores > 1 {
        sizes.push(cores);
    }
    for threads in sizes {
        let pool = SignerPool::new(threads, DOCS as usize).unwrap();
        g.bench_function(format!("h_issue_{DOCS}_docs_{threads}_threads"), |b| {
            b.iter(|| {
                let handles: Vec<_> = (0..DOCS)
                    .map(|_| {
                        let (job, key) = (Arc::clone(&job), Arc::clone(&key));
                        pool.spawn(move || issue(&job.0, &job.1, &key).map(|d| d.xml.len()))
                            .unwrap()
                    })
                    .collect();
                rt.block_on(async {
                    for h in handles {
                        h.await.unwrap().unwrap();
                    }
                })
            })
        });
    }
    g.finish();
}

/// The server's allocator (see `src/main.rs`), so the bench measures what
/// the server runs.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

criterion_group!(benches, stages, pool_throughput);

// `criterion_main!` with the allocator set up first.
fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
}
