//! The external checkers (xmlsec1, xmllint, pdftotext, zbarimg) and the
//! code recomputed from a served XML.

use std::io::Write;
use std::process::{Command, Stdio};

use emisor::engine::codes;

use super::app::*;

/// Is `name` installed? Under `REQUIRE_CHECKERS` (CI) a missing one fails.
pub fn tool(name: &str) -> bool {
    let found = Command::new(name).arg("--version").output().is_ok();
    if !found && std::env::var_os("REQUIRE_CHECKERS").is_some() {
        panic!("{name} is required (REQUIRE_CHECKERS is set) but not installed");
    }
    found
}

/// The authority's schemas: `EMISOR_SCHEMAS_DIR`, or `../shared/schemas`
/// beside the repository.
pub fn schemas_dir() -> std::path::PathBuf {
    std::env::var_os("EMISOR_SCHEMAS_DIR")
        .map(Into::into)
        .unwrap_or_else(|| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/schemas")
        })
}

/// The signed XML verifies with xmlsec1 (the certificate in KeyInfo trusted).
pub fn xmlsec_verifies(xml: &str) {
    if !tool("xmlsec1") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("doc.xml");
    std::fs::write(&path, xml).unwrap();
    let start = xml.find("<ds:X509Certificate>").unwrap() + "<ds:X509Certificate>".len();
    let end = xml[start..].find("</ds:X509Certificate>").unwrap() + start;
    let pem = format!(
        "-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n",
        &xml[start..end]
    );
    let cert = dir.path().join("cert.pem");
    std::fs::write(&cert, pem).unwrap();
    let out = Command::new("xmlsec1")
        .args(["--verify", "--pubkey-cert-pem"])
        .arg(&cert)
        .args(["--enabled-reference-uris", "empty,same-doc"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "xmlsec1: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The XML is valid against its UBL 2.1 maindoc schema (the README's known
/// quirk, long X.509 serials, ignored).
pub fn xsd_valid(xml: &str) {
    if !tool("xmllint") {
        return;
    }
    let schemas = schemas_dir();
    let root = if xml.contains("<CreditNote") {
        "UBL-CreditNote-2.1.xsd"
    } else {
        "UBL-Invoice-2.1.xsd"
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("doc.xml");
    std::fs::write(&path, xml).unwrap();
    let out = Command::new("xmllint")
        .arg("--noout")
        .arg("--schema")
        .arg(schemas.join("maindoc").join(root))
        .arg(&path)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.ends_with(" validates") && !l.ends_with(" fails to validate"))
        .filter(|l| !l.contains("X509SerialNumber"))
        .collect();
    assert!(errors.is_empty(), "xmllint: {}", errors.join("\n"));

    // The UBL schemas leave `sts:DianExtensions` to a lax wildcard: a
    // wrapper importing the authority's `DIAN_UBL_Structures.xsd` beside the
    // maindoc schema makes xmllint validate it too. The schemas README's
    // quirk there (the check digit in the provider ids' `schemeID`) is the
    // one message allowed, and its presence proves the extension was read.
    let ns = roxmltree::Document::parse(xml)
        .unwrap()
        .root_element()
        .tag_name()
        .namespace()
        .unwrap()
        .to_string();
    let wrapper = dir.path().join("wrapper.xsd");
    std::fs::write(
        &wrapper,
        format!(
            r#"<?xml version="1.0" encoding="UTF-8"?>
<xsd:schema xmlns:xsd="http://www.w3.org/2001/XMLSchema" targetNamespace="urn:emisor:test:wrapper" elementFormDefault="qualified">
  <xsd:import namespace="{ns}" schemaLocation="file://{main}"/>
  <xsd:import namespace="dian:gov:co:facturaelectronica:Structures-2-1" schemaLocation="file://{ext}"/>
</xsd:schema>
"#,
            main = std::fs::canonicalize(schemas.join("maindoc").join(root))
                .unwrap()
                .display(),
            ext = std::fs::canonicalize(schemas.join("extensions").join("DIAN_UBL_Structures.xsd"))
                .unwrap()
                .display(),
        ),
    )
    .unwrap();
    let out = Command::new("xmllint")
        .arg("--noout")
        .arg("--schema")
        .arg(&wrapper)
        .arg(&path)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let quirk = |l: &str| {
        ((l.contains("ProviderID") || l.contains("AuthorizationProviderID"))
            && l.contains("'schemeID'"))
            || l.contains("X509SerialNumber")
    };
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.ends_with(" validates") && !l.ends_with(" fails to validate"))
        .filter(|l| !quirk(l))
        .collect();
    assert!(
        errors.is_empty(),
        "xmllint with DianExtensions: {}",
        errors.join("\n")
    );
    assert!(
        stderr.lines().any(quirk),
        "the extension was not validated: {stderr}"
    );
}

/// The code recomputed from the signed XML with the software PIN.
pub fn recomputed_code(app: &TestApp, xml: &str) -> String {
    let input = codes::extract_code_input(xml).expect("code input");
    input.recompute(app.keys["software_pin"].as_str().unwrap())
}

pub fn pdftotext(pdf: &[u8]) -> String {
    let mut child = Command::new("pdftotext")
        .args(["-layout", "-", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(pdf).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

/// The QR codes `zbarimg` finds on the pages rendered at 200 dpi.
pub fn zbarimg(pdf: &[u8]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("doc.pdf");
    std::fs::write(&path, pdf).unwrap();
    let status = Command::new("pdftoppm")
        .args(["-r", "200", "-png"])
        .arg(&path)
        .arg(dir.path().join("page"))
        .status()
        .unwrap();
    assert!(status.success());
    let mut pages: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "png"))
        .collect();
    pages.sort();
    let out = Command::new("zbarimg")
        .args(["--raw", "-q", "-Sdisable", "-Sqrcode.enable"])
        .args(&pages)
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// The signed XML a family route serves.
pub fn xml_of(app: &TestApp, path: &str) -> String {
    let res = app.get(path, &app.sk_test());
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-type"], "text/xml; charset=utf-8");
    res.text().unwrap()
}
