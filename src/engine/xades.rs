//! XAdES-EPES enveloped signature (the authority's policy v2, protocol.md §3).
//!
//! [`sign`] is the hot path and never parses: the UBL builders hand over a
//! document whose root element is already in inclusive C14N form, so
//! * the enveloped reference digest is SHA-256 over the root element bytes;
//! * the KeyInfo, SignedProperties and SignedInfo canonical forms are
//!   generated directly as strings carrying every namespace in scope where
//!   they sit (the root's declarations, `ds` from `ds:Signature`, `xades`/
//!   `xades141` from `xades:QualifyingProperties`), and the fragment inserted
//!   into the document is written so that canonicalizing it gives exactly
//!   those strings (checked in the tests against `c14n.rs` and `xmlsec1`).
//!
//! [`verify`] is the general path (roxmltree + `c14n.rs`) used by the
//! authority simulator for arbitrary documents.

use std::borrow::Cow;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use chrono::{DateTime, FixedOffset};
use openssl::hash::MessageDigest;
use openssl::sign::Verifier;
use openssl::x509::X509;
use sha2::{Digest, Sha256, Sha384, Sha512};

use super::c14n::{self, Algorithm};
use super::signing_key::{SigningKey, SigningKeyError};

/// XML-DSig namespace.
pub const NS_DS: &str = "http://www.w3.org/2000/09/xmldsig#";
/// XAdES 1.3.2 namespace.
pub const NS_XADES: &str = "http://uri.etsi.org/01903/v1.3.2#";
/// XAdES 1.4.1 namespace.
pub const NS_XADES141: &str = "http://uri.etsi.org/01903/v1.4.1#";
/// Signature policy v2 document.
pub const POLICY_URL: &str =
    "https://facturaelectronica.dian.gov.co/politicadefirma/v2/politicadefirmav2.pdf";
/// base64(SHA-256(politicadefirmav2.pdf)) (protocol.md §1.9 V11).
pub const POLICY_HASH_SHA256: &str = "dMoMvtcG5aIzgYo0tIsSQeVJBDnUnfSOfBpxXrmor0Y=";
/// Optional policy description.
pub const POLICY_DESCRIPTION: &str =
    "Política de firma para facturas electrónicas de la República de Colombia.";
/// Where the signature goes (the LAST occurrence).
pub const PLACEHOLDER: &str = "<ext:ExtensionContent></ext:ExtensionContent>";

const ALG_RSA_SHA256: &str = "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256";
const ALG_RSA_SHA384: &str = "http://www.w3.org/2001/04/xmldsig-more#rsa-sha384";
const ALG_RSA_SHA512: &str = "http://www.w3.org/2001/04/xmldsig-more#rsa-sha512";
const ALG_SHA256: &str = "http://www.w3.org/2001/04/xmlenc#sha256";
const ALG_SHA384: &str = "http://www.w3.org/2001/04/xmldsig-more#sha384";
const ALG_SHA512: &str = "http://www.w3.org/2001/04/xmlenc#sha512";
const ALG_ENVELOPED: &str = "http://www.w3.org/2000/09/xmldsig#enveloped-signature";
const TYPE_SIGNED_PROPERTIES: &str = "http://uri.etsi.org/01903#SignedProperties";
const NS_UBL_EXT: &str = "urn:oasis:names:specification:ubl:schema:xsd:CommonExtensionComponents-2";

/// Errors of [`sign`] and [`verify`].
#[derive(Debug, thiserror::Error)]
pub enum XadesError {
    #[error(
        "the document has no `<ext:ExtensionContent></ext:ExtensionContent>` for the signature"
    )]
    NoPlaceholder,
    #[error("the unsigned document does not follow the builder contract: {0}")]
    Contract(&'static str),
    #[error("signing key: {0}")]
    Key(#[from] SigningKeyError),
    #[error("OpenSSL: {0}")]
    OpenSsl(#[from] openssl::error::ErrorStack),
    #[error("XML is not well formed: {0}")]
    Xml(String),
    #[error("missing {0}")]
    Missing(&'static str),
    #[error("unsupported {0}")]
    Unsupported(String),
    #[error("reference `{0}` not found or not unique")]
    UnresolvedReference(String),
    #[error("digest of reference `{0}` does not match")]
    DigestMismatch(String),
    #[error("signature value does not verify")]
    BadSignatureValue,
    #[error("invalid base64 in {0}")]
    BadBase64(&'static str),
    #[error("the signature does not cover the whole document (no URI=\"\" reference)")]
    DocumentNotCovered,
}

/// What [`verify`] found in a valid signature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedSignature {
    /// The embedded signing certificate (DER).
    pub certificate_der: Vec<u8>,
    /// `xades:SigningTime` text (empty if absent).
    pub signing_time: String,
    /// Policy identifier is the v2 URL and its SHA-256 hash is the known one.
    pub policy_ok: bool,
    /// A `xades:SigningCertificate/Cert/CertDigest` equals the digest of the
    /// embedded certificate.
    pub signing_certificate_ok: bool,
    /// `xades:ClaimedRole` text (empty if absent).
    pub claimed_role: String,
}

// ---------------------------------------------------------------------------
// Signing (fast path, no DOM)
// ---------------------------------------------------------------------------

/// Namespace declarations and inherited `xml:*` attributes in scope at the
/// insertion point, values kept in canonical (escaped) form. The texts
/// borrow from the root's start tag (or are constants) on the fast path:
/// no heap block each.
#[derive(Debug, Default, Clone)]
struct Scope<'a> {
    ns: Vec<(Cow<'a, str>, Cow<'a, str>)>,
    xml_attrs: Vec<(Cow<'a, str>, Cow<'a, str>)>,
}

impl<'a> Scope<'a> {
    fn set_ns(&mut self, prefix: impl Into<Cow<'a, str>>, uri: impl Into<Cow<'a, str>>) {
        let (prefix, uri) = (prefix.into(), uri.into());
        match self.ns.iter_mut().find(|(p, _)| *p == prefix) {
            Some(e) => e.1 = uri,
            None => self.ns.push((prefix, uri)),
        }
    }

    /// ` xmlns="…" xmlns:a="…" …` in canonical order (default first, then by prefix).
    fn render_ns(&self, out: &mut String) {
        let mut v: Vec<&(Cow<str>, Cow<str>)> = self
            .ns
            .iter()
            .filter(|(p, u)| !(p.is_empty() && u.is_empty()))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        for (p, u) in v {
            if p.is_empty() {
                out.push_str(" xmlns=\"");
            } else {
                out.push_str(" xmlns:");
                out.push_str(p);
                out.push_str("=\"");
            }
            out.push_str(u);
            out.push('"');
        }
    }

    fn render_xml_attrs(&self, out: &mut String) {
        let mut v: Vec<&(Cow<str>, Cow<str>)> = self.xml_attrs.iter().collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        for (l, val) in v {
            out.push_str(" xml:");
            out.push_str(l);
            out.push_str("=\"");
            out.push_str(val);
            out.push('"');
        }
    }
}

/// Byte offset just past the root element's start tag (canonical form: every
/// attribute value in double quotes, `"` escaped inside).
fn start_tag_end(root: &str) -> Option<usize> {
    let mut in_quote = false;
    for (i, b) in root.bytes().enumerate() {
        match b {
            b'"' => in_quote = !in_quote,
            b'>' if !in_quote => return Some(i + 1),
            _ => {}
        }
    }
    None
}

/// Namespace declarations and `xml:*` attributes of a canonical start tag.
fn scan_start_tag<'a>(tag: &'a str, scope: &mut Scope<'a>) -> Result<(), XadesError> {
    // Skip `<qname`.
    let body = tag
        .strip_prefix('<')
        .and_then(|t| t.strip_suffix('>'))
        .ok_or(XadesError::Contract("root start tag"))?;
    let mut rest = body.find(' ').and_then(|i| body.get(i..)).unwrap_or("");
    loop {
        rest = rest.trim_start_matches(' ');
        if rest.is_empty() {
            return Ok(());
        }
        let eq = rest
            .find("=\"")
            .ok_or(XadesError::Contract("root attribute"))?;
        let name = rest.get(..eq).unwrap_or("");
        let after = rest.get(eq + 2..).unwrap_or("");
        let close = after
            .find('"')
            .ok_or(XadesError::Contract("root attribute value"))?;
        let value = after.get(..close).unwrap_or("");
        if name == "xmlns" {
            scope.set_ns("", value);
        } else if let Some(p) = name.strip_prefix("xmlns:") {
            scope.set_ns(p, value);
        } else if let Some(l) = name.strip_prefix("xml:") {
            scope.xml_attrs.push((l.into(), value.into()));
        }
        rest = after.get(close + 1..).unwrap_or("");
    }
}

/// Slow path, only when the builder contract is bent (namespace declarations
/// or `xml:*` attributes below the root): read the scope of the target
/// `ext:ExtensionContent` with a parser.
fn scope_by_parsing(root: &str, insert_at: usize) -> Result<Scope<'static>, XadesError> {
    let doc = roxmltree::Document::parse(root).map_err(|e| XadesError::Xml(e.to_string()))?;
    let target = doc
        .descendants()
        .filter(|n| {
            n.is_element()
                && n.tag_name().name() == "ExtensionContent"
                && n.tag_name().namespace() == Some(NS_UBL_EXT)
        })
        .find(|n| {
            let r = n.range();
            r.start < insert_at && insert_at < r.end
        })
        .ok_or(XadesError::NoPlaceholder)?;
    let mut scope = Scope::default();
    for ns in target.namespaces() {
        if ns.uri() == c14n::NS_XML {
            continue;
        }
        let mut v = String::new();
        c14n::escape_attr(ns.uri(), &mut v);
        scope.set_ns(ns.name().unwrap_or("").to_string(), v);
    }
    for anc in target.ancestors().filter(|n| n.is_element()) {
        for a in anc.attributes() {
            if a.namespace() == Some(c14n::NS_XML)
                && !scope.xml_attrs.iter().any(|(l, _)| *l == a.name())
            {
                let mut v = String::new();
                c14n::escape_attr(a.value(), &mut v);
                scope
                    .xml_attrs
                    .push((a.name().to_string().into(), v.into()));
            }
        }
    }
    Ok(scope)
}

fn b64_sha256(data: &[u8]) -> String {
    B64.encode(Sha256::digest(data))
}

/// Everything `sign` computes; the canonical strings are exposed to tests.
struct Signed {
    xml: String,
    #[cfg_attr(not(test), allow(dead_code))]
    keyinfo_c14n: String,
    #[cfg_attr(not(test), allow(dead_code))]
    signedprops_c14n: String,
    #[cfg_attr(not(test), allow(dead_code))]
    signedinfo_c14n: String,
}

/// Wrap `inner` in `<qname …>…</qname>`, with the scope's namespace
/// declarations and `xml:*` attributes when `canonical` (as a document subset
/// apex) or without them (as it sits in the document).
fn element(out: &mut String, qname: &str, id: Option<&str>, scope: Option<&Scope>, inner: &str) {
    out.push('<');
    out.push_str(qname);
    if let Some(s) = scope {
        s.render_ns(out);
    }
    if let Some(id) = id {
        out.push_str(" Id=\"");
        out.push_str(id);
        out.push('"');
    }
    if let Some(s) = scope {
        s.render_xml_attrs(out);
    }
    out.push('>');
    out.push_str(inner);
    out.push_str("</");
    out.push_str(qname);
    out.push('>');
}

fn digest_method_sha256(out: &mut String) {
    out.push_str("<ds:DigestMethod Algorithm=\"");
    out.push_str(ALG_SHA256);
    out.push_str("\"></ds:DigestMethod>");
}

/// Sign `unsigned_xml` (builder contract: XML declaration, then the root
/// element already in inclusive C14N form) with an enveloped XAdES-EPES
/// signature placed in the LAST `<ext:ExtensionContent></ext:ExtensionContent>`.
/// `signing_time` is written at offset -05:00 with milliseconds.
pub fn sign(
    unsigned_xml: &str,
    key: &SigningKey,
    signing_time: DateTime<FixedOffset>,
) -> Result<String, XadesError> {
    sign_inner(unsigned_xml, key, signing_time).map(|s| s.xml)
}

fn sign_inner(
    unsigned_xml: &str,
    key: &SigningKey,
    signing_time: DateTime<FixedOffset>,
) -> Result<Signed, XadesError> {
    // 1. Locate the root element bytes.
    let root_start = if unsigned_xml.starts_with("<?xml") {
        unsigned_xml
            .find("?>")
            .map(|i| i + 2)
            .ok_or(XadesError::Contract("XML declaration"))?
    } else {
        0
    };
    let after_decl = unsigned_xml
        .get(root_start..)
        .ok_or(XadesError::Contract("XML declaration"))?;
    let root_start = root_start + (after_decl.len() - after_decl.trim_start().len());
    let root_end = unsigned_xml.trim_end().len();
    let root = unsigned_xml
        .get(root_start..root_end)
        .filter(|r| {
            r.starts_with('<') && r.ends_with('>') && !r.starts_with("<!") && !r.starts_with("<?")
        })
        .ok_or(XadesError::Contract("root element"))?;

    // 2. Insertion point and namespace scope there.
    let ph = root.rfind(PLACEHOLDER).ok_or(XadesError::NoPlaceholder)?;
    let insert_in_root = ph + "<ext:ExtensionContent>".len();
    let tag_end = start_tag_end(root).ok_or(XadesError::Contract("root start tag"))?;
    let below_root = root.get(tag_end..).unwrap_or("");
    let mut scope = if below_root.contains(" xmlns") || below_root.contains(" xml:") {
        scope_by_parsing(root, insert_in_root)?
    } else {
        let mut s = Scope::default();
        scan_start_tag(root.get(..tag_end).unwrap_or(""), &mut s)?;
        s
    };
    scope.set_ns("ds", NS_DS);
    let mut sp_scope = scope.clone();
    sp_scope.set_ns("xades", NS_XADES);
    sp_scope.set_ns("xades141", NS_XADES141);

    // 3. Enveloped reference: the canonical document without the signature
    //    is the root element as given.
    let doc_digest = Sha256::digest(root.as_bytes());
    let doc_digest_b64 = B64.encode(doc_digest);

    let colombia = FixedOffset::west_opt(5 * 3600).ok_or(XadesError::Contract("offset"))?;
    let signing_time = signing_time.with_timezone(&colombia);
    let time_text = super::date_text::instant_millis(&signing_time);

    // Deterministic Ids: same document, time and certificate → same bytes.
    let mut h = Sha256::new();
    h.update(doc_digest);
    h.update(time_text.as_bytes());
    h.update(key.certificate_sha256_base64().as_bytes());
    let seed = hex::encode(h.finalize());
    let uuid = format!(
        "{}-{}-{}-{}-{}",
        seed.get(0..8).unwrap_or(""),
        seed.get(8..12).unwrap_or(""),
        seed.get(12..16).unwrap_or(""),
        seed.get(16..20).unwrap_or(""),
        seed.get(20..32).unwrap_or("")
    );
    let sig_id = format!("xmldsig-{uuid}");
    let keyinfo_id = format!("{sig_id}-keyinfo");
    let signedprops_id = format!("{sig_id}-signedprops");

    // 4. KeyInfo.
    let mut ki_inner = String::with_capacity(key.certificate_base64().len() + 80);
    ki_inner.push_str("<ds:X509Data><ds:X509Certificate>");
    ki_inner.push_str(key.certificate_base64());
    ki_inner.push_str("</ds:X509Certificate></ds:X509Data>");
    let mut keyinfo_c14n = String::with_capacity(ki_inner.len() + 1024);
    element(
        &mut keyinfo_c14n,
        "ds:KeyInfo",
        Some(&keyinfo_id),
        Some(&scope),
        &ki_inner,
    );

    // 5. SignedProperties.
    let mut sp_inner = String::with_capacity(1536);
    sp_inner.push_str("<xades:SignedSignatureProperties><xades:SigningTime>");
    sp_inner.push_str(&time_text);
    sp_inner
        .push_str("</xades:SigningTime><xades:SigningCertificate><xades:Cert><xades:CertDigest>");
    digest_method_sha256(&mut sp_inner);
    sp_inner.push_str("<ds:DigestValue>");
    sp_inner.push_str(key.certificate_sha256_base64());
    sp_inner
        .push_str("</ds:DigestValue></xades:CertDigest><xades:IssuerSerial><ds:X509IssuerName>");
    c14n::escape_text(key.issuer_name(), &mut sp_inner);
    sp_inner.push_str("</ds:X509IssuerName><ds:X509SerialNumber>");
    sp_inner.push_str(key.serial_decimal());
    sp_inner.push_str(
        "</ds:X509SerialNumber></xades:IssuerSerial></xades:Cert></xades:SigningCertificate>",
    );
    sp_inner.push_str("<xades:SignaturePolicyIdentifier><xades:SignaturePolicyId><xades:SigPolicyId><xades:Identifier>");
    sp_inner.push_str(POLICY_URL);
    sp_inner.push_str("</xades:Identifier><xades:Description>");
    sp_inner.push_str(POLICY_DESCRIPTION);
    sp_inner.push_str("</xades:Description></xades:SigPolicyId><xades:SigPolicyHash>");
    digest_method_sha256(&mut sp_inner);
    sp_inner.push_str("<ds:DigestValue>");
    sp_inner.push_str(POLICY_HASH_SHA256);
    sp_inner.push_str("</ds:DigestValue></xades:SigPolicyHash></xades:SignaturePolicyId></xades:SignaturePolicyIdentifier>");
    sp_inner.push_str("<xades:SignerRole><xades:ClaimedRoles><xades:ClaimedRole>supplier</xades:ClaimedRole></xades:ClaimedRoles></xades:SignerRole></xades:SignedSignatureProperties>");
    let mut signedprops_c14n = String::with_capacity(sp_inner.len() + 1024);
    element(
        &mut signedprops_c14n,
        "xades:SignedProperties",
        Some(&signedprops_id),
        Some(&sp_scope),
        &sp_inner,
    );

    // 6. SignedInfo.
    let mut si_inner = String::with_capacity(1200);
    si_inner.push_str("<ds:CanonicalizationMethod Algorithm=\"");
    si_inner.push_str(c14n::ALG_C14N);
    si_inner.push_str("\"></ds:CanonicalizationMethod><ds:SignatureMethod Algorithm=\"");
    si_inner.push_str(ALG_RSA_SHA256);
    si_inner.push_str("\"></ds:SignatureMethod>");
    si_inner.push_str("<ds:Reference Id=\"");
    si_inner.push_str(&sig_id);
    si_inner.push_str("-ref0\" URI=\"\"><ds:Transforms><ds:Transform Algorithm=\"");
    si_inner.push_str(ALG_ENVELOPED);
    si_inner.push_str("\"></ds:Transform></ds:Transforms>");
    digest_method_sha256(&mut si_inner);
    si_inner.push_str("<ds:DigestValue>");
    si_inner.push_str(&doc_digest_b64);
    si_inner.push_str("</ds:DigestValue></ds:Reference><ds:Reference URI=\"#");
    si_inner.push_str(&keyinfo_id);
    si_inner.push_str("\">");
    digest_method_sha256(&mut si_inner);
    si_inner.push_str("<ds:DigestValue>");
    si_inner.push_str(&b64_sha256(keyinfo_c14n.as_bytes()));
    si_inner.push_str("</ds:DigestValue></ds:Reference><ds:Reference Type=\"");
    si_inner.push_str(TYPE_SIGNED_PROPERTIES);
    si_inner.push_str("\" URI=\"#");
    si_inner.push_str(&signedprops_id);
    si_inner.push_str("\">");
    digest_method_sha256(&mut si_inner);
    si_inner.push_str("<ds:DigestValue>");
    si_inner.push_str(&b64_sha256(signedprops_c14n.as_bytes()));
    si_inner.push_str("</ds:DigestValue></ds:Reference>");
    let mut signedinfo_c14n = String::with_capacity(si_inner.len() + 1024);
    element(
        &mut signedinfo_c14n,
        "ds:SignedInfo",
        None,
        Some(&scope),
        &si_inner,
    );

    // 7. The one RSA operation.
    let signature_value = B64.encode(key.sign_rsa_sha256(signedinfo_c14n.as_bytes())?);

    // 8. Serialize the fragment as it sits in the document.
    let mut sig = String::with_capacity(si_inner.len() + ki_inner.len() + sp_inner.len() + 1024);
    sig.push_str("<ds:Signature xmlns:ds=\"");
    sig.push_str(NS_DS);
    sig.push_str("\" Id=\"");
    sig.push_str(&sig_id);
    sig.push_str("\">");
    element(&mut sig, "ds:SignedInfo", None, None, &si_inner);
    sig.push_str("<ds:SignatureValue Id=\"");
    sig.push_str(&sig_id);
    sig.push_str("-sigvalue\">");
    sig.push_str(&signature_value);
    sig.push_str("</ds:SignatureValue>");
    element(&mut sig, "ds:KeyInfo", Some(&keyinfo_id), None, &ki_inner);
    sig.push_str("<ds:Object><xades:QualifyingProperties xmlns:xades=\"");
    sig.push_str(NS_XADES);
    sig.push_str("\" xmlns:xades141=\"");
    sig.push_str(NS_XADES141);
    sig.push_str("\" Target=\"#");
    sig.push_str(&sig_id);
    sig.push_str("\">");
    element(
        &mut sig,
        "xades:SignedProperties",
        Some(&signedprops_id),
        None,
        &sp_inner,
    );
    sig.push_str("</xades:QualifyingProperties></ds:Object></ds:Signature>");

    let at = root_start + insert_in_root;
    let mut xml = String::with_capacity(unsigned_xml.len() + sig.len());
    xml.push_str(unsigned_xml.get(..at).unwrap_or(""));
    xml.push_str(&sig);
    xml.push_str(unsigned_xml.get(at..).unwrap_or(""));
    Ok(Signed {
        xml,
        keyinfo_c14n,
        signedprops_c14n,
        signedinfo_c14n,
    })
}

// ---------------------------------------------------------------------------
// Verification (general path)
// ---------------------------------------------------------------------------

type Node<'a, 'i> = roxmltree::Node<'a, 'i>;

fn ds_child<'a, 'i>(n: Node<'a, 'i>, name: &str) -> Option<Node<'a, 'i>> {
    ns_child(n, NS_DS, name)
}

fn ns_child<'a, 'i>(n: Node<'a, 'i>, ns: &str, name: &str) -> Option<Node<'a, 'i>> {
    n.children().find(|c| {
        c.is_element() && c.tag_name().name() == name && c.tag_name().namespace() == Some(ns)
    })
}

fn ns_desc<'a, 'i>(n: Node<'a, 'i>, ns: &str, name: &str) -> Option<Node<'a, 'i>> {
    n.descendants().find(|c| {
        c.is_element() && c.tag_name().name() == name && c.tag_name().namespace() == Some(ns)
    })
}

fn b64_decode_ws(s: &str, what: &'static str) -> Result<Vec<u8>, XadesError> {
    let clean: String = s.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    B64.decode(clean.as_bytes())
        .map_err(|_| XadesError::BadBase64(what))
}

/// The canonicalization a `CanonicalizationMethod`/`Transform` element names,
/// with its InclusiveNamespaces PrefixList.
fn algorithm_of(el: Node<'_, '_>) -> Option<Algorithm> {
    let mut alg = Algorithm::from_uri(el.attribute("Algorithm")?)?;
    if alg.exclusive {
        if let Some(inc) = el
            .children()
            .find(|c| c.is_element() && c.tag_name().name() == "InclusiveNamespaces")
        {
            alg.inclusive_prefixes = inc
                .attribute("PrefixList")
                .unwrap_or("")
                .split_ascii_whitespace()
                .map(str::to_string)
                .collect();
        }
    }
    Some(alg)
}

fn find_by_id<'a, 'i>(
    doc: &'a roxmltree::Document<'i>,
    id: &str,
) -> Result<Node<'a, 'i>, XadesError> {
    let mut found = doc.descendants().filter(|n| {
        n.is_element()
            && ["Id", "ID", "id"]
                .iter()
                .any(|a| n.attribute(*a) == Some(id))
    });
    match (found.next(), found.next()) {
        (Some(n), None) => Ok(n),
        _ => Err(XadesError::UnresolvedReference(format!(
            "#{}",
            id.chars().take(80).collect::<String>()
        ))),
    }
}

fn digest(alg_uri: &str, data: &[u8]) -> Result<Vec<u8>, XadesError> {
    Ok(match alg_uri {
        ALG_SHA256 => Sha256::digest(data).to_vec(),
        ALG_SHA384 => Sha384::digest(data).to_vec(),
        ALG_SHA512 => Sha512::digest(data).to_vec(),
        other => {
            return Err(XadesError::Unsupported(format!(
                "digest method {}",
                other.chars().take(80).collect::<String>()
            )))
        }
    })
}

/// Most `ds:Reference`s a verified signature may have (the authority's
/// XAdES-EPES has three: the document, KeyInfo, SignedProperties).
pub const MAX_REFERENCES: usize = 8;

/// Verify the first `ds:Signature` of `signed_xml`: every reference digest
/// (with the transforms each names), the SignatureValue against the embedded
/// certificate, and report the XAdES parts. Certificate trust and validity
/// dates are the caller's business.
pub fn verify(signed_xml: &str) -> Result<VerifiedSignature, XadesError> {
    let doc = roxmltree::Document::parse(signed_xml).map_err(|e| XadesError::Xml(e.to_string()))?;
    let signature =
        ns_desc(doc.root(), NS_DS, "Signature").ok_or(XadesError::Missing("ds:Signature"))?;
    let signed_info =
        ds_child(signature, "SignedInfo").ok_or(XadesError::Missing("ds:SignedInfo"))?;

    // References: each costs a look-up and a canonicalisation of what it
    // names, so a hostile signature could ask for the document many times.
    let is_reference = |c: &Node<'_, '_>| {
        c.is_element()
            && c.tag_name().name() == "Reference"
            && c.tag_name().namespace() == Some(NS_DS)
    };
    if signed_info.children().filter(is_reference).count() > MAX_REFERENCES {
        return Err(XadesError::Unsupported(format!(
            "more than {MAX_REFERENCES} references"
        )));
    }
    let mut covers_document = false;
    for reference in signed_info.children().filter(is_reference) {
        let uri = reference
            .attribute("URI")
            .ok_or(XadesError::Unsupported("Reference without URI".into()))?;
        let target = if uri.is_empty() {
            doc.root()
        } else if let Some(id) = uri.strip_prefix('#') {
            find_by_id(&doc, id)?
        } else {
            return Err(XadesError::Unsupported(format!(
                "reference URI {}",
                uri.chars().take(80).collect::<String>()
            )));
        };
        let mut alg = Algorithm::inclusive();
        let mut exclude = None;
        if let Some(transforms) = ds_child(reference, "Transforms") {
            for t in transforms
                .children()
                .filter(|c| c.is_element() && c.tag_name().name() == "Transform")
            {
                let a = t.attribute("Algorithm").unwrap_or("");
                if a == ALG_ENVELOPED {
                    exclude = Some(signature.id());
                } else if let Some(c) = algorithm_of(t) {
                    alg = c;
                } else {
                    return Err(XadesError::Unsupported(format!(
                        "transform {}",
                        a.chars().take(80).collect::<String>()
                    )));
                }
            }
        }
        // Same-document references never carry comments.
        alg.with_comments = false;
        let data = c14n::canonicalize(target, exclude, &alg);
        let method = ds_child(reference, "DigestMethod")
            .and_then(|m| m.attribute("Algorithm"))
            .ok_or(XadesError::Missing("ds:DigestMethod"))?;
        let expected = b64_decode_ws(
            ds_child(reference, "DigestValue")
                .and_then(|v| v.text())
                .unwrap_or(""),
            "DigestValue",
        )?;
        if digest(method, data.as_bytes())? != expected {
            return Err(XadesError::DigestMismatch(uri.chars().take(80).collect()));
        }
        if uri.is_empty() && exclude.is_some() {
            covers_document = true;
        }
    }
    if !covers_document {
        return Err(XadesError::DocumentNotCovered);
    }

    // Certificate and SignatureValue.
    let cert_text = ds_child(signature, "KeyInfo")
        .and_then(|k| ns_desc(k, NS_DS, "X509Certificate"))
        .and_then(|c| c.text())
        .ok_or(XadesError::Missing("ds:X509Certificate"))?;
    let certificate_der = b64_decode_ws(cert_text, "X509Certificate")?;
    let cert = X509::from_der(&certificate_der)?;
    let public_key = cert.public_key()?;

    let si_alg = ds_child(signed_info, "CanonicalizationMethod")
        .and_then(algorithm_of)
        .ok_or(XadesError::Unsupported("CanonicalizationMethod".into()))?;
    let si_c14n = c14n::canonicalize(signed_info, None, &si_alg);
    let md = match ds_child(signed_info, "SignatureMethod").and_then(|m| m.attribute("Algorithm")) {
        Some(ALG_RSA_SHA256) => MessageDigest::sha256(),
        Some(ALG_RSA_SHA384) => MessageDigest::sha384(),
        Some(ALG_RSA_SHA512) => MessageDigest::sha512(),
        other => {
            return Err(XadesError::Unsupported(format!(
                "signature method {}",
                other
                    .unwrap_or("(none)")
                    .chars()
                    .take(80)
                    .collect::<String>()
            )))
        }
    };
    let sig_value = b64_decode_ws(
        ds_child(signature, "SignatureValue")
            .and_then(|v| v.text())
            .unwrap_or(""),
        "SignatureValue",
    )?;
    let mut verifier = Verifier::new(md, &public_key)?;
    verifier.update(si_c14n.as_bytes())?;
    if !verifier.verify(&sig_value).unwrap_or(false) {
        return Err(XadesError::BadSignatureValue);
    }

    // XAdES parts.
    let props = ns_desc(signature, NS_XADES, "SignedProperties");
    let text_in = |name: &str| -> String {
        props
            .and_then(|p| ns_desc(p, NS_XADES, name))
            .and_then(|n| n.text())
            .unwrap_or("")
            .trim()
            .to_string()
    };
    let signing_time = text_in("SigningTime");
    let claimed_role = text_in("ClaimedRole");
    let policy_ok = props
        .and_then(|p| ns_desc(p, NS_XADES, "SignaturePolicyId"))
        .is_some_and(|pid| {
            let ident = ns_desc(pid, NS_XADES, "Identifier")
                .and_then(|n| n.text())
                .map(str::trim);
            let hash = ns_desc(pid, NS_XADES, "SigPolicyHash");
            let method = hash
                .and_then(|h| ds_child(h, "DigestMethod"))
                .and_then(|m| m.attribute("Algorithm"));
            let value = hash
                .and_then(|h| ds_child(h, "DigestValue"))
                .and_then(|n| n.text())
                .map(str::trim);
            ident == Some(POLICY_URL)
                && method == Some(ALG_SHA256)
                && value == Some(POLICY_HASH_SHA256)
        });
    let cert_sha256 = Sha256::digest(&certificate_der).to_vec();
    let signing_certificate_ok = props
        .and_then(|p| ns_desc(p, NS_XADES, "SigningCertificate"))
        .is_some_and(|sc| {
            sc.descendants()
                .filter(|n| {
                    n.is_element()
                        && n.tag_name().name() == "CertDigest"
                        && n.tag_name().namespace() == Some(NS_XADES)
                })
                .any(|cd| {
                    let method =
                        ds_child(cd, "DigestMethod").and_then(|m| m.attribute("Algorithm"));
                    let value = ds_child(cd, "DigestValue")
                        .and_then(|n| n.text())
                        .and_then(|t| b64_decode_ws(t, "CertDigest").ok());
                    method == Some(ALG_SHA256) && value.as_deref() == Some(cert_sha256.as_slice())
                })
        });

    Ok(VerifiedSignature {
        certificate_der,
        signing_time,
        policy_ok,
        signing_certificate_ok,
        claimed_role,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::signing_key::generate_self_signed;
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
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
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
}
