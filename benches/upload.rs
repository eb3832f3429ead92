//! CPU of one received-invoice upload (`cargar-documento`): what runs on
//! the upload pool for the worst upload the bounds let through, for a
//! typical invoice, and what refusing an over-bound body costs.
//!
//! The worst accepted shape: a signed invoice (its signature verifies) at
//! every bound at once: 100 namespace declarations, those the signed
//! sample does not use on nested elements as deep, holding as many
//! elements as the bounds and a 1 MiB body allow, in the default namespace
//! declared on the root (the farthest in roxmltree's in-scope list).
//! Its work is the bounded pre-scan, reading, the signature check
//! (canonicalising all of it) and the comparison with the authority's copy
//! (canonicalising it again, and the copy).
//!
//!   cargo bench --bench upload

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;

use criterion::{criterion_group, Criterion};
use emisor::engine::events::received;
use emisor::engine::xades;
use emisor::engine::xml_limits::{self, RECEIVED_INVOICE};
use emisor::fixtures;

/// The sample invoice with `nest` nested elements each declaring a prefix,
/// holding `inner` elements, in canonical form (the signer's contract),
/// signed.
fn signed_with(nest: usize, inner: usize) -> String {
    let unsigned = fixtures::unsigned_invoice(fixtures::NIT, "SETP990000001", fixtures::TECH_KEY);
    let mut body = String::new();
    for i in 0..nest {
        body.push_str(&format!("<p{i}:a xmlns:p{i}=\"urn:p:{i}\">"));
    }
    for _ in 0..inner {
        body.push_str("<a></a>");
    }
    for i in (0..nest).rev() {
        body.push_str(&format!("</p{i}:a>"));
    }
    let at = unsigned.rfind("</Invoice>").expect("root end");
    let unsigned = format!("{}{body}{}", &unsigned[..at], &unsigned[at..]);
    xades::sign(
        &unsigned,
        &fixtures::signing_key(),
        fixtures::signing_time(),
    )
    .expect("sign")
}

/// As many nested declarations and inner elements as the bounds allow.
fn worst() -> String {
    let plain = xml_limits::check(&signed_with(0, 0), &RECEIVED_INVOICE).expect("shape");
    let nest = RECEIVED_INVOICE.max_namespace_declarations - plain.namespace_declarations;
    let empty = signed_with(nest, 0);
    let base = xml_limits::check(&empty, &RECEIVED_INVOICE).expect("shape");
    // The request body holds at most 1 MiB (the XML itself, as
    // `application/xml`).
    let fits = (emisor::http::json::MAX_BODY - empty.len()) / "<a></a>".len();
    let xml = signed_with(
        nest,
        (RECEIVED_INVOICE.max_elements - base.elements).min(fits),
    );
    let shape = xml_limits::check(&xml, &RECEIVED_INVOICE).expect("within the bounds");
    eprintln!(
        "worst accepted upload: {} bytes, {} elements, {} declarations, depth {}",
        xml.len(),
        shape.elements,
        shape.namespace_declarations,
        shape.max_depth
    );
    xml
}

/// All an upload's pool work: read, verify, compare with `copy`.
fn upload_work(xml: &str, copy: &[u8]) {
    let facts = received::read(xml).expect("read");
    let verified = xades::verify(&facts.invoice_xml).expect("verify");
    assert!(verified.policy_ok);
    assert!(received::same_document(&facts.invoice_xml, copy).expect("compare"));
}

fn uploads(c: &mut Criterion) {
    let worst = worst();
    let (typical, _) = fixtures::signed_invoice(fixtures::NIT, "SETP990000001", fixtures::TECH_KEY);
    let mut nesting =
        String::from("<Invoice xmlns=\"urn:oasis:names:specification:ubl:schema:xsd:Invoice-2\">");
    for i in 0..5000 {
        nesting.push_str(&format!("<p{i}:a xmlns:p{i}=\"u\">"));
    }

    let mut g = c.benchmark_group("upload");
    g.sample_size(20);
    g.bench_function("a_worst_accepted_whole", |b| {
        b.iter(|| upload_work(black_box(&worst), worst.as_bytes()))
    });
    g.bench_function("b_worst_prescan", |b| {
        b.iter(|| xml_limits::check(black_box(&worst), &RECEIVED_INVOICE))
    });
    g.bench_function("c_worst_read", |b| {
        b.iter(|| received::read(black_box(&worst)).expect("read"))
    });
    g.bench_function("d_worst_verify", |b| {
        b.iter(|| xades::verify(black_box(&worst)).expect("verify"))
    });
    g.bench_function("e_worst_compare", |b| {
        b.iter(|| received::same_document(black_box(&worst), worst.as_bytes()).expect("compare"))
    });
    g.bench_function("f_typical_whole", |b| {
        b.iter(|| upload_work(black_box(&typical), typical.as_bytes()))
    });
    g.bench_function("g_refused_prefix_nesting_5000", |b| {
        b.iter(|| xml_limits::check(black_box(&nesting), &RECEIVED_INVOICE).expect_err("refused"))
    });
    g.finish();
}

criterion_group!(benches, uploads);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
}
