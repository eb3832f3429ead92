//! Signing: the fast path, no DOM (see the module doc of [`super`]).

use std::borrow::Cow;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use chrono::{DateTime, FixedOffset};
use sha2::{Digest, Sha256};

use crate::engine::c14n;
use crate::engine::signing_key::SigningKey;

use super::*;

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
pub(super) struct Signed {
    pub(super) xml: String,
    #[cfg_attr(not(test), allow(dead_code))]
    pub(super) keyinfo_c14n: String,
    #[cfg_attr(not(test), allow(dead_code))]
    pub(super) signedprops_c14n: String,
    #[cfg_attr(not(test), allow(dead_code))]
    pub(super) signedinfo_c14n: String,
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

pub(super) fn sign_inner(
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
    let time_text = crate::engine::date_text::instant_millis(&signing_time);

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
