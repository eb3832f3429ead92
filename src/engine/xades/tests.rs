use super::sign::sign_inner;
use super::verify::{ds_child, ns_desc};
use super::*;
use crate::engine::c14n::{self, Algorithm};
use crate::engine::signing_key::generate_self_signed;
use crate::engine::signing_key::SigningKey;
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use chrono::{DateTime, FixedOffset};
use sha2::{Digest, Sha256};
use std::io::Write as _;
use std::process::Command;
use std::sync::OnceLock;

fn key() -> &'static SigningKey {
    static KEY: OnceLock<SigningKey> = OnceLock::new();
    KEY.get_or_init(|| {
        let (der, pw) =
            generate_self_signed("Empresa Demo S.A.S. & Cía <test>", "900373076", 30).unwrap();
        SigningKey::from_pkcs12(&der, &pw).unwrap()
    })
}

/// The invoice namespaces and a schema location.
fn root_ns() -> String {
    [
        crate::fixtures::UBL_NS,
        " xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\"",
        " xsi:schemaLocation=\"urn:oasis:names:specification:ubl:schema:xsd:Invoice-2 http://docs.oasis-open.org/ubl/os-UBL-2.1/xsd/maindoc/UBL-Invoice-2.1.xsd\"",
    ]
    .concat()
}

/// A small UBL-like invoice in canonical form (builder contract).
fn unsigned_with(root_attrs: &str, second_extension: &str) -> String {
    [
        "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>",
        "<Invoice",
        root_attrs,
        "><ext:UBLExtensions><ext:UBLExtension><ext:ExtensionContent><sts:DianExtensions>",
        "<sts:InvoiceSource><cbc:IdentificationCode listAgencyID=\"6\" listAgencyName=\"United Nations Economic Commission for Europe\">CO</cbc:IdentificationCode></sts:InvoiceSource>",
        "<sts:SoftwareSecurityCode schemeAgencyID=\"195\">abc</sts:SoftwareSecurityCode>",
        "<sts:QRCode>https://catalogo-vpfe-hab.dian.gov.co/document/searchqr?documentkey=x&amp;y=1</sts:QRCode>",
        "</sts:DianExtensions></ext:ExtensionContent></ext:UBLExtension>",
        second_extension,
        "</ext:UBLExtensions><cbc:UBLVersionID>UBL 2.1</cbc:UBLVersionID><cbc:ProfileExecutionID>2</cbc:ProfileExecutionID>",
        "<cbc:ID>SETP990000001</cbc:ID><cbc:IssueDate>2024-02-15</cbc:IssueDate><cbc:IssueTime>07:43:48-05:00</cbc:IssueTime>",
        "<cbc:Note>Hola &amp; adiós &lt;3 &gt; \"comillas\" 'simples' ñ</cbc:Note>",
        "<cac:LegalMonetaryTotal><cbc:PayableAmount currencyID=\"COP\">1190.00</cbc:PayableAmount></cac:LegalMonetaryTotal>",
        "</Invoice>",
    ]
    .concat()
}

const EMPTY_EXT: &str =
    "<ext:UBLExtension><ext:ExtensionContent></ext:ExtensionContent></ext:UBLExtension>";

fn unsigned() -> String {
    unsigned_with(&root_ns(), EMPTY_EXT)
}

fn time() -> DateTime<FixedOffset> {
    DateTime::parse_from_rfc3339("2024-02-15T12:43:48.123Z")
        .unwrap()
        .fixed_offset()
}

use crate::testing::tool;

/// `(exit ok, combined output)` of `xmlsec1 --verify`.
fn xmlsec1_verify(xml: &str) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    let cert = dir.path().join("cert.pem");
    let file = dir.path().join("signed.xml");
    std::fs::File::create(&cert)
        .unwrap()
        .write_all(&key().certificate_pem().unwrap())
        .unwrap();
    std::fs::File::create(&file)
        .unwrap()
        .write_all(xml.as_bytes())
        .unwrap();
    let out = Command::new("xmlsec1")
        .args(["--verify", "--pubkey-cert-pem"])
        .arg(&cert)
        .args(["--enabled-reference-uris", "empty,same-doc"])
        .arg(&file)
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

#[test]
fn fixture_is_canonical() {
    if !tool("xmllint") {
        eprintln!("SKIPPED fixture_is_canonical: xmllint not installed");
        return;
    }
    let xml = unsigned();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let root_text = &xml[xml.find("?>").unwrap() + 2..];
    assert_eq!(
        c14n::canonicalize(doc.root(), None, &Algorithm::inclusive()),
        root_text
    );
    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(xml.as_bytes()).unwrap();
    let out = Command::new("xmllint")
        .arg("--c14n")
        .arg(f.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8(out.stdout).unwrap(), root_text);
}

#[test]
fn xmlsec1_accepts_signature() {
    let signed = sign(&unsigned(), key(), time()).unwrap();
    if !tool("xmlsec1") {
        eprintln!("SKIPPED xmlsec1_accepts_signature: xmlsec1 not installed");
        return;
    }
    let (ok, text) = xmlsec1_verify(&signed);
    assert!(ok && text.contains("OK"), "{text}");
    assert!(
        text.contains("SignedInfo References (ok/all): 3/3"),
        "{text}"
    );
}

fn tamper_at(xml: &str, marker: &str, offset: usize) -> String {
    let i = xml.find(marker).unwrap() + marker.len() + offset;
    let c = xml.as_bytes()[i];
    let replacement = if c == b'A' { "B" } else { "A" };
    format!("{}{}{}", &xml[..i], replacement, &xml[i + 1..])
}

#[test]
fn tampering_is_detected() {
    let signed = sign(&unsigned(), key(), time()).unwrap();
    let cases = [
        ("body", tamper_at(&signed, "<cbc:Note>", 1)),
        ("body attribute", tamper_at(&signed, "currencyID=\"", 1)),
        (
            "SignedProperties",
            tamper_at(&signed, "<xades:ClaimedRole>", 2),
        ),
        (
            "SignedProperties time",
            tamper_at(&signed, "<xades:SigningTime>", 3),
        ),
        ("KeyInfo", tamper_at(&signed, "<ds:X509Certificate>", 200)),
        ("SignatureValue", tamper_at(&signed, "-sigvalue\">", 10)),
        (
            "SignedInfo digest",
            tamper_at(&signed, "<ds:DigestValue>", 5),
        ),
    ];
    let xmlsec = tool("xmlsec1");
    if !xmlsec {
        eprintln!("SKIPPED xmlsec1 part of tampering_is_detected: xmlsec1 not installed");
    }
    for (what, xml) in &cases {
        assert_ne!(xml, &signed);
        assert!(verify(xml).is_err(), "verify accepted tampered {what}");
        if xmlsec {
            let (ok, text) = xmlsec1_verify(xml);
            assert!(!ok, "xmlsec1 accepted tampered {what}: {text}");
        }
    }
}

#[test]
fn verify_accepts_and_reports_xades_parts() {
    let signed = sign(&unsigned(), key(), time()).unwrap();
    let v = verify(&signed).unwrap();
    assert_eq!(v.certificate_der, key().certificate_der());
    assert_eq!(v.signing_time, "2024-02-15T07:43:48.123-05:00");
    assert!(v.signing_time.ends_with("-05:00"));
    assert!(v.policy_ok);
    assert!(v.signing_certificate_ok);
    assert_eq!(v.claimed_role, "supplier");

    // Direct XAdES assertions on the document.
    let doc = roxmltree::Document::parse(&signed).unwrap();
    let props = ns_desc(doc.root(), NS_XADES, "SignedProperties").unwrap();
    let hash = ns_desc(props, NS_XADES, "SigPolicyHash").unwrap();
    assert_eq!(
        ds_child(hash, "DigestValue").unwrap().text(),
        Some(POLICY_HASH_SHA256)
    );
    assert_eq!(
        ns_desc(props, NS_XADES, "Identifier").unwrap().text(),
        Some(POLICY_URL)
    );
    let cert_digest = ns_desc(props, NS_XADES, "CertDigest").unwrap();
    let expected = B64.encode(Sha256::digest(key().certificate_der()));
    assert_eq!(
        ds_child(cert_digest, "DigestValue").unwrap().text(),
        Some(expected.as_str())
    );
    let issuer = ns_desc(props, NS_DS, "X509IssuerName")
        .unwrap()
        .text()
        .unwrap();
    assert_eq!(issuer, key().issuer_name());
    assert!(issuer.starts_with("CN=Empresa Demo S.A.S. & Cía \\<test\\>,"));
    assert_eq!(
        ns_desc(props, NS_DS, "X509SerialNumber").unwrap().text(),
        Some(key().serial_decimal())
    );

    // Layout: the signature sits in the second (last) extension, references in order.
    let sig = ns_desc(doc.root(), NS_DS, "Signature").unwrap();
    let ext = sig.parent_element().unwrap();
    assert_eq!(ext.tag_name().name(), "ExtensionContent");
    assert!(ext
        .parent_element()
        .unwrap()
        .next_sibling_element()
        .is_none());
    let refs: Vec<_> = ds_child(sig, "SignedInfo")
        .unwrap()
        .children()
        .filter(|c| c.tag_name().name() == "Reference")
        .collect();
    assert_eq!(refs.len(), 3);
    assert_eq!(refs[0].attribute("URI"), Some(""));
    assert!(refs[1].attribute("URI").unwrap().ends_with("-keyinfo"));
    assert_eq!(refs[2].attribute("Type"), Some(TYPE_SIGNED_PROPERTIES));
    assert!(refs[2].attribute("URI").unwrap().ends_with("-signedprops"));

    // Same inputs → same bytes (deterministic Ids, PKCS#1 v1.5).
    assert_eq!(sign(&unsigned(), key(), time()).unwrap(), signed);
}

fn check_fast_path_against_c14n(unsigned_xml: &str) {
    let s = sign_inner(unsigned_xml, key(), time()).unwrap();
    let doc = roxmltree::Document::parse(&s.xml).unwrap();
    let sig = ns_desc(doc.root(), NS_DS, "Signature").unwrap();
    let inc = Algorithm::inclusive();
    let ki = ds_child(sig, "KeyInfo").unwrap();
    let sp = ns_desc(sig, NS_XADES, "SignedProperties").unwrap();
    let si = ds_child(sig, "SignedInfo").unwrap();
    assert_eq!(s.keyinfo_c14n, c14n::canonicalize(ki, None, &inc));
    assert_eq!(s.signedprops_c14n, c14n::canonicalize(sp, None, &inc));
    assert_eq!(s.signedinfo_c14n, c14n::canonicalize(si, None, &inc));
    // The enveloped digest input is the root element as given.
    let root_text = &unsigned_xml[unsigned_xml.find("?>").unwrap() + 2..];
    assert_eq!(
        c14n::canonicalize(doc.root(), Some(sig.id()), &inc),
        root_text
    );
    verify(&s.xml).unwrap();
    if tool("xmlsec1") {
        let (ok, text) = xmlsec1_verify(&s.xml);
        assert!(ok, "{text}");
    }
}

#[test]
fn direct_canonical_strings_equal_c14n_of_signed_document() {
    check_fast_path_against_c14n(&unsigned());
    // Root without ds/xades declarations.
    let minimal = concat!(
        " xmlns=\"urn:oasis:names:specification:ubl:schema:xsd:Invoice-2\"",
        " xmlns:cac=\"urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2\"",
        " xmlns:cbc=\"urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2\"",
        " xmlns:ext=\"urn:oasis:names:specification:ubl:schema:xsd:CommonExtensionComponents-2\"",
        " xmlns:sts=\"dian:gov:co:facturaelectronica:Structures-2-1\""
    );
    check_fast_path_against_c14n(&unsigned_with(minimal, EMPTY_EXT));
    // Root binding `ds` elsewhere and carrying xml:lang (inherited by the subsets).
    let odd = concat!(
        " xmlns=\"urn:oasis:names:specification:ubl:schema:xsd:Invoice-2\"",
        " xmlns:cac=\"urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2\"",
        " xmlns:cbc=\"urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2\"",
        " xmlns:ds=\"urn:not-dsig\"",
        " xmlns:ext=\"urn:oasis:names:specification:ubl:schema:xsd:CommonExtensionComponents-2\"",
        " xmlns:sts=\"dian:gov:co:facturaelectronica:Structures-2-1\"",
        " xml:lang=\"es\""
    );
    check_fast_path_against_c14n(&unsigned_with(odd, EMPTY_EXT));
    // Contract bent: a declaration below the root → parsed slow path.
    let bent = "<ext:UBLExtension xmlns:zz=\"urn:zz\"><ext:ExtensionContent></ext:ExtensionContent></ext:UBLExtension>";
    check_fast_path_against_c14n(&unsigned_with(&root_ns(), bent));
}

#[test]
fn bad_input_is_an_error_not_a_panic() {
    assert!(matches!(
        sign("<Invoice></Invoice>", key(), time()),
        Err(XadesError::NoPlaceholder)
    ));
    for junk in [
        "",
        "<?xml",
        "<?xml ?>",
        "   ",
        "<a",
        "<a b=\"><ext:ExtensionContent></ext:ExtensionContent>",
        "<!-- x -->",
    ] {
        let _ = sign(junk, key(), time());
        assert!(verify(junk).is_err());
    }
    assert!(verify(&unsigned()).is_err());
    // Signature verification without a whole-document reference is refused.
    let signed = sign(&unsigned(), key(), time()).unwrap();
    assert!(verify(&signed.replace("URI=\"\"", "URI=\"#nowhere\"")).is_err());
}

/// `cargo test -p emisor --lib engine::xades::tests::sign_timing --release -- --ignored --nocapture`
#[test]
#[ignore]
fn sign_timing() {
    // About the size of a real signed invoice (~18 KB): add lines.
    let line = "<cac:InvoiceLine><cbc:ID>1</cbc:ID><cbc:InvoicedQuantity unitCode=\"94\">1.00</cbc:InvoicedQuantity><cbc:LineExtensionAmount currencyID=\"COP\">1000.00</cbc:LineExtensionAmount><cac:Item><cbc:Description>Producto de prueba con descripción</cbc:Description></cac:Item><cac:Price><cbc:PriceAmount currencyID=\"COP\">1000.00</cbc:PriceAmount></cac:Price></cac:InvoiceLine>";
    let xml = unsigned().replace("</Invoice>", &(line.repeat(45) + "</Invoice>"));
    let k = key();
    verify(&sign(&xml, k, time()).unwrap()).unwrap();
    let n = 500;
    let t0 = std::time::Instant::now();
    for _ in 0..n {
        std::hint::black_box(sign(std::hint::black_box(&xml), k, time()).unwrap());
    }
    let per = t0.elapsed() / n;
    let t1 = std::time::Instant::now();
    for _ in 0..n {
        std::hint::black_box(
            k.sign_rsa_sha256(std::hint::black_box(xml.as_bytes()))
                .unwrap(),
        );
    }
    let rsa = t1.elapsed() / n;
    let t2 = std::time::Instant::now();
    for _ in 0..50 {
        std::hint::black_box(
            verify(std::hint::black_box(&sign(&xml, k, time()).unwrap())).unwrap(),
        );
    }
    let ver = t2.elapsed() / 50;
    eprintln!(
        "sign: {per:?}/doc; bare RSA-2048 sign: {rsa:?}; sign+verify: {ver:?} (doc {} bytes)",
        xml.len()
    );
}
