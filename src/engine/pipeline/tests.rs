//! Pipeline tests: every kind signed and checked by tools nobody here wrote
//! (xmlsec1, xmllint), the code recomputed from the XML, the ZIP opened; a
//! property test over random documents; an `#[ignore]`d cost measurement.

use std::io::{Cursor, Read};
use std::process::Command;
use std::sync::OnceLock;

use chrono::{DateTime, FixedOffset, Utc};
use proptest::prelude::*;
use rust_decimal::Decimal;

use super::*;
use crate::engine::codes::extract_code_input;
use crate::engine::model::*;
use crate::engine::totals;
use crate::engine::ubl::tests::{
    after_declaration, assert_canonical, context, have_xmllint, recanonicalize, sample,
    xmllint_validate,
};

fn key() -> &'static SigningKey {
    static KEY: OnceLock<SigningKey> = OnceLock::new();
    KEY.get_or_init(crate::fixtures::company_key)
}

fn now() -> DateTime<FixedOffset> {
    Utc::now().with_timezone(&colombia_offset())
}

fn live_context(kind: DocumentKind) -> IssuerContext {
    let mut ctx = context(kind);
    ctx.issue_instant = now();
    ctx
}

/// The sample of `kind`, with its dates moved to today.
fn live_sample(kind: DocumentKind) -> Document {
    let mut d = sample(kind);
    for p in &mut d.payments {
        p.due_date = p
            .due_date
            .map(|_| now().date_naive() + chrono::Duration::days(30));
    }
    d
}

fn have_xmlsec1() -> bool {
    crate::testing::tool("xmlsec1")
}

/// `xmlsec1 --verify --pubkey-cert-pem` exit status and output.
fn xmlsec1_verify(xml: &str) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    let cert = dir.path().join("cert.pem");
    let file = dir.path().join("signed.xml");
    std::fs::write(&cert, key().certificate_pem().unwrap()).unwrap();
    std::fs::write(&file, xml).unwrap();
    let out = Command::new("xmlsec1")
        .args(["--verify", "--pubkey-cert-pem"])
        .arg(&cert)
        .args(["--enabled-reference-uris", "empty,same-doc"])
        .arg(&file)
        .output()
        .unwrap();
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

fn key_for(kind: DocumentKind, ctx: &IssuerContext) -> &str {
    match kind.code_key() {
        CodeKey::TechnicalKey => &ctx.resolution.technical_key,
        CodeKey::SoftwarePin => &ctx.software.pin,
    }
}

#[test]
fn every_kind_is_issued_signed_verified_and_recomputed() {
    let xmlsec = have_xmlsec1();
    let xmllint = have_xmllint();
    if !xmlsec {
        eprintln!("xmlsec1 not installed: external signature check skipped");
    }
    for kind in DocumentKind::ALL {
        let doc = live_sample(kind);
        let ctx = live_context(kind);
        let issued = issue(&doc, &ctx, key()).unwrap_or_else(|e| panic!("{kind:?}: {e}"));
        assert_eq!(issued.scheme, kind.code_scheme());
        assert_eq!(issued.code.len(), 96);
        assert!(issued.qr_url.ends_with(&issued.code));

        // The signature: ours and xmlsec1's verdicts.
        crate::engine::xades::verify(&issued.xml).unwrap_or_else(|e| panic!("{kind:?}: {e}"));
        if xmlsec {
            let (ok, out) = xmlsec1_verify(&issued.xml);
            assert!(ok, "{kind:?}: xmlsec1: {out}");
            // One character changed in the body breaks it.
            let tampered = issued
                .xml
                .replacen("Pedro Pérez", "Pedro Perez", 1)
                .replacen("<cbc:LineCountNumeric>3<", "<cbc:LineCountNumeric>4<", 1);
            assert!(
                !xmlsec1_verify(&tampered).0,
                "{kind:?}: tampering not detected"
            );
        }

        // The signed document is still schema-valid.
        if xmllint {
            xmllint_validate(&issued.xml).unwrap_or_else(|e| panic!("{kind:?}: {e}"));
        }

        // The code recomputes from the XML alone.
        let x = extract_code_input(&issued.xml).unwrap();
        assert_eq!(x.uuid, issued.code, "{kind:?}");
        assert_eq!(x.uuid_scheme_name, kind.code_scheme().scheme_name());
        assert_eq!(x.recompute(key_for(kind, &ctx)), issued.code, "{kind:?}");

        // The ZIP holds exactly the signed XML under its name.
        let mut archive = zip::ZipArchive::new(Cursor::new(issued.zip().unwrap())).unwrap();
        assert_eq!(archive.len(), 1);
        let mut f = archive.by_index(0).unwrap();
        assert_eq!(f.name(), issued.xml_name);
        let mut content = String::new();
        f.read_to_string(&mut content).unwrap();
        assert_eq!(content, issued.xml);
        assert!(issued.zip_name.starts_with("z0900000001000"));
        assert!(issued
            .xml_name
            .starts_with(crate::engine::package::file_prefix(kind)));
    }
}

#[test]
fn attached_document_signs_and_validates() {
    let kind = DocumentKind::Invoice;
    let doc = live_sample(kind);
    let ctx = live_context(kind);
    let issued = issue(&doc, &ctx, key()).unwrap();
    let unsigned =
        crate::engine::ubl::attached::build(&crate::engine::ubl::attached::AttachedInput {
            document: BuildInput {
                doc: &doc,
                ctx: &ctx,
                totals: &issued.totals,
                code: &issued.code,
                qr_url: &issued.qr_url,
                software_security_code: "",
            },
            signed_xml: &issued.xml,
            application_response: "<ApplicationResponse>ok</ApplicationResponse>",
            validated_at: now(),
            issued_at: now(),
        })
        .unwrap();
    let signed = crate::engine::xades::sign(&unsigned, key(), now()).unwrap();
    crate::engine::xades::verify(&signed).unwrap();
    if have_xmlsec1() {
        let (ok, out) = xmlsec1_verify(&signed);
        assert!(ok, "{out}");
    }
    if have_xmllint() {
        xmllint_validate(&signed).unwrap();
    }
}

#[test]
fn builder_output_equals_engine_c14n() {
    use crate::engine::c14n::{canonicalize, Algorithm};
    for kind in DocumentKind::ALL {
        let xml = crate::engine::ubl::tests::build_sample(kind);
        let parsed = roxmltree::Document::parse(&xml).unwrap();
        let c = canonicalize(parsed.root_element(), None, &Algorithm::inclusive());
        assert_eq!(c, after_declaration(&xml), "{kind:?}");
    }
}

#[test]
fn invalid_documents_are_rejected_with_fields() {
    let mut doc = live_sample(DocumentKind::Invoice);
    doc.lines.clear();
    let mut ctx = live_context(DocumentKind::Invoice);
    ctx.number = 1;
    match issue(&doc, &ctx, key()) {
        Err(EngineError::Validation(errs)) => {
            let fields: Vec<_> = errs.iter().map(|e| e.field.as_str()).collect();
            assert_eq!(fields, ["number", "lines"]);
        }
        other => panic!("{other:?}"),
    }
    // A certificate that is not valid yet at the issue instant.
    let mut ctx = live_context(DocumentKind::Invoice);
    ctx.issue_instant = DateTime::parse_from_rfc3339("2025-03-14T10:20:30-05:00").unwrap();
    match issue(&live_sample(DocumentKind::Invoice), &ctx, key()) {
        Err(EngineError::Validation(errs)) => assert_eq!(errs[0].field, "certificate"),
        other => panic!("{other:?}"),
    }
}

/// Totals checked before the number was taken make the same document, and
/// what depends on the context is still checked.
#[test]
fn a_document_issued_with_checked_totals_is_the_one_issue_makes() {
    let doc = live_sample(DocumentKind::Invoice);
    let ctx = live_context(DocumentKind::Invoice);
    let totals = validate::validate_and_total(&doc, &ctx, None).unwrap();
    let whole = issue(&doc, &ctx, key()).unwrap();
    let checked = issue_checked(&doc, &ctx, key(), totals.clone()).unwrap();
    assert_eq!(checked.code, whole.code);
    assert_eq!(checked.totals, whole.totals);
    assert_eq!(checked.xml, whole.xml);
    let mut late = ctx.clone();
    late.number = 1;
    match issue_checked(&doc, &late, key(), totals) {
        Err(EngineError::Validation(errs)) => assert_eq!(errs[0].field, "number"),
        other => panic!("{other:?}"),
    }
}

// --- property test ------------------------------------------------------------

fn any_text() -> impl Strategy<Value = String> {
    // Any Unicode XML can carry, with the characters escaping must handle.
    let ch = prop_oneof![
        3 => proptest::char::any().prop_filter("xml char", |c| {
            !crate::engine::validate::is_forbidden_xml_char(*c)
        }),
        1 => prop::sample::select(vec!['<', '&', '>', '"', '\'', '\r', '\n', '\t', '𝄞', 'ñ', ']']),
    ];
    prop::collection::vec(ch, 1..40)
        .prop_map(|v| v.into_iter().collect::<String>())
        .prop_filter("not blank", |s| !s.trim().is_empty())
}

fn money(max_cents: i64, scale: u32) -> impl Strategy<Value = Decimal> {
    (0..max_cents).prop_map(move |c| Decimal::new(c, scale))
}

fn any_tax() -> impl Strategy<Value = LineTax> {
    prop_oneof![
        (prop::sample::select(vec!["01", "03", "04"]), money(2000, 2))
            .prop_map(|(c, p)| LineTax::percent(c, p)),
        money(50000, 2).prop_map(|a| LineTax::per_unit("22", a)),
    ]
}

fn any_line() -> impl Strategy<Value = Line> {
    (
        any_text(),
        (1i64..100_000).prop_map(|q| Decimal::new(q, 3)),
        money(1_000_000_000, 3),
        prop::collection::vec(any_tax(), 0..3),
        prop::collection::vec(
            (prop::sample::select(vec!["06", "07"]), money(1000, 2))
                .prop_map(|(c, p)| LineTax::percent(c, p)),
            0..2,
        ),
    )
        .prop_map(|(d, q, p, taxes, withholdings)| {
            let mut l = Line::simple(&d, q, p);
            l.taxes = taxes;
            l.withholdings = withholdings;
            l
        })
}

fn any_document() -> impl Strategy<Value = Document> {
    (
        prop::sample::select(DocumentKind::ALL.to_vec()),
        any_text(),
        prop::collection::vec(any_line(), 1..6),
        prop::collection::vec(any_text(), 0..2),
        prop::option::of(money(100_000, 2)),
    )
        .prop_map(|(kind, name, lines, notes, charge)| {
            let mut d = sample(kind);
            d.counterparty.name = name;
            d.lines = lines;
            d.notes = notes;
            d.allowances_charges = charge
                .map(|amount| AllowanceCharge {
                    is_charge: true,
                    reason_code: None,
                    reason: "Cargo".into(),
                    amount,
                })
                .into_iter()
                .collect();
            d
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn random_documents_total_escape_and_recompute(doc in any_document()) {
        let ctx = context(doc.kind);
        let t = validate::validate_and_total(&doc, &ctx, None)
            .map_err(|e| TestCaseError::fail(format!("{e:?}")))?;
        // Totals add up.
        let lines: Decimal = t.lines.iter().map(|l| l.line_extension).sum();
        prop_assert_eq!(t.line_extension, lines);
        let taxes: Decimal = t.taxes.iter().map(|g| g.amount).sum();
        prop_assert_eq!(t.tax_total, taxes);
        prop_assert_eq!(t.payable, t.line_extension + t.tax_total - t.allowance_total + t.charge_total);
        for g in &t.taxes {
            let s: Decimal = g.subtotals.iter().map(|s| s.amount).sum();
            prop_assert_eq!(g.amount, s);
        }
        prop_assert_eq!(t.clone(), totals::compute(&doc).unwrap());

        // XML: well formed, canonical, escaping holds.
        let code = document_code(&doc, &ctx, &t);
        let xml = crate::engine::ubl::build(&BuildInput {
            doc: &doc, ctx: &ctx, totals: &t, code: &code,
            qr_url: &codes::qr_url(ctx.environment, &code),
            software_security_code: "ssc",
        }).unwrap();
        let parsed = roxmltree::Document::parse(&xml).unwrap();
        prop_assert_eq!(recanonicalize(&xml), after_declaration(&xml));
        let who = if doc.kind.issuer_is_buyer() { "AccountingSupplierParty" } else { "AccountingCustomerParty" };
        let name = parsed.descendants()
            .find(|n| n.tag_name().name() == who)
            .and_then(|n| n.descendants().find(|n| n.tag_name().name() == "RegistrationName"))
            .and_then(|n| n.text())
            .unwrap_or("");
        prop_assert_eq!(name, doc.counterparty.name.as_str());
        let descriptions: Vec<&str> = parsed.descendants()
            .filter(|n| n.tag_name().name() == "Item")
            .filter_map(|n| n.children().find(|c| c.tag_name().name() == "Description"))
            .map(|n| n.text().unwrap_or(""))
            .collect();
        let expected: Vec<&str> = doc.lines.iter().map(|l| l.description.as_str()).collect();
        prop_assert_eq!(descriptions, expected);

        // The code recomputes from the XML.
        let x = extract_code_input(&xml).unwrap();
        prop_assert_eq!(x.recompute(key_for(doc.kind, &ctx)), code);
    }
}

#[test]
fn sample_documents_are_canonical() {
    for kind in DocumentKind::ALL {
        assert_canonical(&crate::engine::ubl::tests::build_sample(kind));
    }
}

// --- cost -----------------------------------------------------------------

/// `cargo test -p emisor --lib --release engine::pipeline::tests::cost -- --ignored --nocapture`
#[test]
#[ignore]
fn cost_of_building_and_zipping_a_five_line_invoice() {
    use std::time::Instant;
    let mut doc = live_sample(DocumentKind::Invoice);
    let base = doc.lines.clone();
    doc.lines = base.iter().cycle().take(5).cloned().collect();
    let ctx = live_context(DocumentKind::Invoice);
    let n = 2000u32;

    let t0 = Instant::now();
    let mut len = 0;
    for _ in 0..n {
        let t = validate::validate_and_total(&doc, &ctx, None).unwrap();
        let code = document_code(&doc, &ctx, &t);
        let xml = crate::engine::ubl::build(&BuildInput {
            doc: &doc,
            ctx: &ctx,
            totals: &t,
            code: &code,
            qr_url: "https://catalogo-vpfe-hab.dian.gov.co/document/searchqr?documentkey=x",
            software_security_code: "ssc",
        })
        .unwrap();
        len = xml.len();
    }
    let build = t0.elapsed() / n;

    let issued = issue(&doc, &ctx, key()).unwrap();
    let signed = issued.xml.as_bytes();
    let mut sizes = Vec::new();
    let mut times = Vec::new();
    for level in [1, 6] {
        let t0 = Instant::now();
        let mut size = 0;
        for _ in 0..n {
            size = crate::engine::package::zip_single_at_level("a.xml", signed, now(), level)
                .unwrap()
                .len();
        }
        times.push(t0.elapsed() / n);
        sizes.push(size);
    }
    let t0 = Instant::now();
    for _ in 0..200 {
        issue(&doc, &ctx, key()).unwrap();
    }
    let whole = t0.elapsed() / 200;
    println!(
        "5-line invoice: validate+totals+code+XML {build:?} ({len} B unsigned); \
         signed {} B; zip level 1 {:?} ({} B), level 6 {:?} ({} B); whole issue() {whole:?}",
        signed.len(),
        times[0],
        sizes[0],
        times[1],
        sizes[1]
    );
}
