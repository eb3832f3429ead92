//! WS-Security 1.0 (X.509 token profile) as the authority accepts it
//! (protocol.md §4.3): a `wsu:Timestamp`, a `wsse:BinarySecurityToken` with the
//! certificate, and an RSA-SHA256 `ds:Signature` over `wsa:To` with exclusive
//! C14N and `InclusiveNamespaces`.
//!
//! Signing writes the header directly as text and produces the canonical forms
//! of `wsa:To` and `ds:SignedInfo` as strings consistent with what it writes
//! (the envelope must declare `soap` and `wcf` on its root and nothing else,
//! which [`super::envelope`] does). Verification, used by the simulator,
//! parses whatever a client sent and canonicalizes it with
//! [`crate::engine::c14n`].

use super::{escape_attr, escape_text, ns};
use crate::authority::operation::WCF_NS;
use crate::engine::c14n::{self, Algorithm};
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use chrono::{DateTime, Duration, SecondsFormat, Utc};
use openssl::hash::MessageDigest;
use openssl::pkey::{Id, PKey, Private};
use openssl::sign::{Signer, Verifier};
use openssl::x509::X509;
use roxmltree::{Document, Node};
use sha2::{Digest, Sha256};

/// `PrefixList` of the SignedInfo canonicalization.
pub const SIGNED_INFO_PREFIXES: &str = "wsa soap wcf";
/// `PrefixList` of the transform of the `wsa:To` reference.
pub const REFERENCE_PREFIXES: &str = "soap wcf";
/// Default `wsu:Expires` − `wsu:Created`, as production clients send.
pub const DEFAULT_TTL_SECONDS: i64 = 60_000;

#[derive(Debug, thiserror::Error)]
pub enum WsSecError {
    #[error("the signing key is not an RSA key")]
    NotRsa,
    #[error("cryptography failed: {0}")]
    Crypto(String),
    #[error("missing {0}")]
    Missing(&'static str),
    #[error("unsupported algorithm {0}")]
    Unsupported(String),
    #[error("reference {0} does not name exactly one element")]
    UnresolvedReference(String),
    #[error("the signature does not cover wsa:To")]
    ToNotSigned,
    #[error("digest of reference {0} does not match")]
    DigestMismatch(String),
    #[error("the signature value does not verify")]
    BadSignature,
    #[error("bad security token: {0}")]
    Certificate(String),
    #[error("the security timestamp has expired")]
    Expired,
}

impl From<openssl::error::ErrorStack> for WsSecError {
    fn from(e: openssl::error::ErrorStack) -> Self {
        WsSecError::Crypto(e.to_string())
    }
}

/// The caller's credentials: an RSA private key and its certificate (DER).
#[derive(Clone)]
pub struct WsSigner {
    key: PKey<Private>,
    cert_der: Vec<u8>,
    ttl: Duration,
}

impl std::fmt::Debug for WsSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WsSigner")
            .field("cert_der_len", &self.cert_der.len())
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

/// Identifiers of one signed header (fresh for every request).
#[derive(Debug, Clone)]
pub struct HeaderIds {
    pub timestamp: String,
    pub token: String,
    pub signature: String,
    pub key_info: String,
    pub token_reference: String,
    pub to: String,
}

impl HeaderIds {
    pub fn fresh() -> Self {
        let u = uuid::Uuid::new_v4().simple().to_string();
        HeaderIds {
            timestamp: format!("TS-{u}"),
            token: format!("X509-{u}"),
            signature: format!("SIG-{u}"),
            key_info: format!("KI-{u}"),
            token_reference: format!("STR-{u}"),
            to: format!("id-{u}"),
        }
    }
}

impl WsSigner {
    pub fn new(key: PKey<Private>, cert_der: Vec<u8>) -> Result<Self, WsSecError> {
        if key.id() != Id::RSA {
            return Err(WsSecError::NotRsa);
        }
        Ok(WsSigner {
            key,
            cert_der,
            ttl: Duration::seconds(DEFAULT_TTL_SECONDS),
        })
    }

    /// Changes `wsu:Expires` − `wsu:Created`.
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    pub fn cert_der(&self) -> &[u8] {
        &self.cert_der
    }

    /// The whole `soap:Header` element for `action` sent to `to`.
    pub fn header(&self, action: &str, to: &str, now: DateTime<Utc>) -> Result<String, WsSecError> {
        self.header_with_ids(action, to, now, &HeaderIds::fresh())
    }

    pub fn header_with_ids(
        &self,
        action: &str,
        to: &str,
        now: DateTime<Utc>,
        ids: &HeaderIds,
    ) -> Result<String, WsSecError> {
        let to_id = escape_attr(&ids.to);
        let to_text = escape_text(to);
        let to_xml = format!(
            "<wsa:To xmlns:wsu=\"{wsu}\" wsu:Id=\"{to_id}\">{to_text}</wsa:To>",
            wsu = ns::WSU
        );
        let to_c14n = to_canonical(&to_id, &to_text);
        let digest = B64.encode(Sha256::digest(to_c14n.as_bytes()));

        let inner = signed_info_inner(&to_id, &digest);
        let signed_info_c14n = format!(
            "<ds:SignedInfo xmlns:ds=\"{ds}\" xmlns:soap=\"{soap}\" xmlns:wcf=\"{wcf}\" xmlns:wsa=\"{wsa}\">{inner}</ds:SignedInfo>",
            ds = ns::DS,
            soap = ns::SOAP12,
            wcf = WCF_NS,
            wsa = ns::WSA
        );
        let mut signer = Signer::new(MessageDigest::sha256(), &self.key)?;
        signer.update(signed_info_c14n.as_bytes())?;
        let signature = B64.encode(signer.sign_to_vec()?);

        let created = now.to_rfc3339_opts(SecondsFormat::Millis, true);
        let expires = (now + self.ttl).to_rfc3339_opts(SecondsFormat::Millis, true);
        let token = B64.encode(&self.cert_der);
        Ok(format!(
            concat!(
                "<soap:Header xmlns:wsa=\"{wsa}\">",
                "<wsse:Security xmlns:wsse=\"{wsse}\" xmlns:wsu=\"{wsu}\">",
                "<wsu:Timestamp wsu:Id=\"{ts_id}\"><wsu:Created>{created}</wsu:Created><wsu:Expires>{expires}</wsu:Expires></wsu:Timestamp>",
                "<wsse:BinarySecurityToken EncodingType=\"{enc}\" ValueType=\"{x509}\" wsu:Id=\"{tok_id}\">{token}</wsse:BinarySecurityToken>",
                "<ds:Signature xmlns:ds=\"{ds}\" Id=\"{sig_id}\">",
                "<ds:SignedInfo>{inner}</ds:SignedInfo>",
                "<ds:SignatureValue>{signature}</ds:SignatureValue>",
                "<ds:KeyInfo Id=\"{ki_id}\"><wsse:SecurityTokenReference wsu:Id=\"{str_id}\">",
                "<wsse:Reference URI=\"#{tok_id}\" ValueType=\"{x509}\"/>",
                "</wsse:SecurityTokenReference></ds:KeyInfo>",
                "</ds:Signature>",
                "</wsse:Security>",
                "<wsa:Action>{action}</wsa:Action>",
                "{to_xml}",
                "</soap:Header>"
            ),
            wsa = ns::WSA,
            wsse = ns::WSSE,
            wsu = ns::WSU,
            ds = ns::DS,
            enc = ns::BASE64_BINARY,
            x509 = ns::X509V3,
            ts_id = escape_attr(&ids.timestamp),
            tok_id = escape_attr(&ids.token),
            sig_id = escape_attr(&ids.signature),
            ki_id = escape_attr(&ids.key_info),
            str_id = escape_attr(&ids.token_reference),
            created = created,
            expires = expires,
            token = token,
            inner = inner,
            signature = signature,
            action = escape_text(action),
            to_xml = to_xml,
        ))
    }
}

/// Exclusive canonical form of the `wsa:To` written by [`WsSigner::header`]
/// under an envelope declaring `soap` and `wcf` (PrefixList `soap wcf`).
fn to_canonical(to_id_escaped: &str, to_text_escaped: &str) -> String {
    format!(
        "<wsa:To xmlns:soap=\"{soap}\" xmlns:wcf=\"{wcf}\" xmlns:wsa=\"{wsa}\" xmlns:wsu=\"{wsu}\" wsu:Id=\"{to_id_escaped}\">{to_text_escaped}</wsa:To>",
        soap = ns::SOAP12,
        wcf = WCF_NS,
        wsa = ns::WSA,
        wsu = ns::WSU,
    )
}

/// Children of `ds:SignedInfo`, already in canonical form.
fn signed_info_inner(to_id_escaped: &str, digest: &str) -> String {
    format!(
        concat!(
            "<ds:CanonicalizationMethod Algorithm=\"{exc}\">",
            "<ec:InclusiveNamespaces xmlns:ec=\"{exc}\" PrefixList=\"{si_prefixes}\"></ec:InclusiveNamespaces>",
            "</ds:CanonicalizationMethod>",
            "<ds:SignatureMethod Algorithm=\"{rsa}\"></ds:SignatureMethod>",
            "<ds:Reference URI=\"#{to_id}\">",
            "<ds:Transforms><ds:Transform Algorithm=\"{exc}\">",
            "<ec:InclusiveNamespaces xmlns:ec=\"{exc}\" PrefixList=\"{ref_prefixes}\"></ec:InclusiveNamespaces>",
            "</ds:Transform></ds:Transforms>",
            "<ds:DigestMethod Algorithm=\"{sha}\"></ds:DigestMethod>",
            "<ds:DigestValue>{digest}</ds:DigestValue>",
            "</ds:Reference>"
        ),
        exc = ns::EXC_C14N,
        si_prefixes = SIGNED_INFO_PREFIXES,
        ref_prefixes = REFERENCE_PREFIXES,
        rsa = ns::RSA_SHA256,
        sha = ns::SHA256,
        to_id = to_id_escaped,
        digest = digest,
    )
}

/// What a verified request tells about its caller.
#[derive(Debug, Clone)]
pub struct VerifiedRequest {
    /// DER of the certificate whose key signed the request.
    pub cert_der: Vec<u8>,
    /// Text of the signed `wsa:To`.
    pub to: String,
    /// Text of `wsa:Action`, when present (not covered by the signature).
    pub action: Option<String>,
}

fn child<'a, 'i>(node: Node<'a, 'i>, ns_uri: &str, name: &str) -> Option<Node<'a, 'i>> {
    node.children().find(|c| {
        c.is_element() && c.tag_name().namespace() == Some(ns_uri) && c.tag_name().name() == name
    })
}

fn algorithm<'a>(node: Node<'a, '_>) -> &'a str {
    node.attribute("Algorithm").unwrap_or("")
}

/// The canonicalization a `CanonicalizationMethod` or `Transform` names,
/// with its `InclusiveNamespaces` PrefixList when exclusive.
fn algorithm_of(method: Node<'_, '_>) -> Result<Algorithm, WsSecError> {
    let mut alg = Algorithm::from_uri(algorithm(method))
        .ok_or_else(|| WsSecError::Unsupported(algorithm(method).to_string()))?;
    if alg.exclusive {
        alg.inclusive_prefixes = child(method, ns::EXC_C14N, "InclusiveNamespaces")
            .and_then(|n| n.attribute("PrefixList"))
            .map(|l| l.split_whitespace().map(str::to_string).collect())
            .unwrap_or_default();
    }
    Ok(alg)
}

fn decode_b64(text: &str) -> Option<Vec<u8>> {
    let compact: String = text.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    B64.decode(compact).ok()
}

/// The single element whose `wsu:Id` (or `Id`) is `id`; two matches are an error
/// (a wrapping attack would otherwise pick the wrong one).
fn element_by_id<'a, 'i>(doc: &'a Document<'i>, id: &str) -> Result<Node<'a, 'i>, WsSecError> {
    let mut found = doc.descendants().filter(|n| {
        n.is_element()
            && (n.attribute((ns::WSU, "Id")) == Some(id) || n.attribute("Id") == Some(id))
    });
    match (found.next(), found.next()) {
        (Some(n), None) => Ok(n),
        _ => Err(WsSecError::UnresolvedReference(id.to_string())),
    }
}

/// Verifies the WS-Security header of a SOAP 1.2 request: timestamp not
/// expired, every reference digest, a reference covering `wsa:To`, and the
/// RSA-SHA256 signature with the key of the referenced security token.
pub fn verify_request(
    doc: &Document<'_>,
    now: DateTime<Utc>,
) -> Result<VerifiedRequest, WsSecError> {
    let envelope = doc.root_element();
    let header = child(envelope, ns::SOAP12, "Header").ok_or(WsSecError::Missing("soap:Header"))?;
    let security =
        child(header, ns::WSSE, "Security").ok_or(WsSecError::Missing("wsse:Security"))?;

    let timestamp =
        child(security, ns::WSU, "Timestamp").ok_or(WsSecError::Missing("wsu:Timestamp"))?;
    if let Some(expires) = child(timestamp, ns::WSU, "Expires").and_then(|e| e.text()) {
        let expires = DateTime::parse_from_rfc3339(expires.trim())
            .map_err(|_| WsSecError::Missing("a valid wsu:Expires"))?;
        if expires.with_timezone(&Utc) < now {
            return Err(WsSecError::Expired);
        }
    }

    let signature =
        child(security, ns::DS, "Signature").ok_or(WsSecError::Missing("ds:Signature"))?;
    let signed_info =
        child(signature, ns::DS, "SignedInfo").ok_or(WsSecError::Missing("ds:SignedInfo"))?;
    let c14n_method = child(signed_info, ns::DS, "CanonicalizationMethod")
        .ok_or(WsSecError::Missing("ds:CanonicalizationMethod"))?;
    let si_alg = algorithm_of(c14n_method)?;
    let sig_method = child(signed_info, ns::DS, "SignatureMethod")
        .ok_or(WsSecError::Missing("ds:SignatureMethod"))?;
    if algorithm(sig_method) != ns::RSA_SHA256 {
        return Err(WsSecError::Unsupported(algorithm(sig_method).to_string()));
    }

    let mut to_signed: Option<String> = None;
    let mut references = 0usize;
    for reference in signed_info.children().filter(|c| {
        c.is_element()
            && c.tag_name().namespace() == Some(ns::DS)
            && c.tag_name().name() == "Reference"
    }) {
        references += 1;
        let uri = reference.attribute("URI").unwrap_or("");
        let id = uri
            .strip_prefix('#')
            .ok_or_else(|| WsSecError::UnresolvedReference(uri.to_string()))?;
        let target = element_by_id(doc, id)?;
        // No transform: inclusive C14N (XMLDSig default for a node set).
        let mut alg = Algorithm::inclusive();
        if let Some(transforms) = child(reference, ns::DS, "Transforms") {
            for t in transforms.children().filter(|c| c.is_element()) {
                alg = algorithm_of(t)?;
            }
        }
        let digest_method = child(reference, ns::DS, "DigestMethod")
            .ok_or(WsSecError::Missing("ds:DigestMethod"))?;
        if algorithm(digest_method) != ns::SHA256 {
            return Err(WsSecError::Unsupported(
                algorithm(digest_method).to_string(),
            ));
        }
        let expected = child(reference, ns::DS, "DigestValue")
            .and_then(|d| d.text())
            .and_then(decode_b64)
            .ok_or(WsSecError::Missing("ds:DigestValue"))?;
        let canonical = c14n::canonicalize(target, None, &alg);
        if Sha256::digest(canonical.as_bytes()).as_slice() != expected.as_slice() {
            return Err(WsSecError::DigestMismatch(uri.to_string()));
        }
        let is_to = target.tag_name().namespace() == Some(ns::WSA)
            && target.tag_name().name() == "To"
            && target.parent_element().map(|p| p.id()) == Some(header.id());
        if is_to {
            to_signed = Some(target.text().unwrap_or("").trim().to_string());
        }
    }
    if references == 0 {
        return Err(WsSecError::Missing("ds:Reference"));
    }
    let to = to_signed.ok_or(WsSecError::ToNotSigned)?;

    // The key: the token the KeyInfo points at, else the only token present.
    let token_ref = child(signature, ns::DS, "KeyInfo")
        .and_then(|ki| child(ki, ns::WSSE, "SecurityTokenReference"))
        .and_then(|str_| child(str_, ns::WSSE, "Reference"))
        .and_then(|r| r.attribute("URI"))
        .and_then(|u| u.strip_prefix('#'));
    let token = match token_ref {
        Some(id) => element_by_id(doc, id)?,
        None => child(security, ns::WSSE, "BinarySecurityToken")
            .ok_or(WsSecError::Missing("wsse:BinarySecurityToken"))?,
    };
    if token.tag_name().name() != "BinarySecurityToken" {
        return Err(WsSecError::Certificate(
            "the key reference is not a BinarySecurityToken".into(),
        ));
    }
    let cert_der = token
        .text()
        .and_then(decode_b64)
        .ok_or(WsSecError::Certificate("token is not base64".into()))?;
    let cert = X509::from_der(&cert_der).map_err(|e| WsSecError::Certificate(e.to_string()))?;
    let public = cert
        .public_key()
        .map_err(|e| WsSecError::Certificate(e.to_string()))?;

    let signature_value = child(signature, ns::DS, "SignatureValue")
        .and_then(|s| s.text())
        .and_then(decode_b64)
        .ok_or(WsSecError::Missing("ds:SignatureValue"))?;
    let canonical_si = c14n::canonicalize(signed_info, None, &si_alg);
    let mut verifier = Verifier::new(MessageDigest::sha256(), &public)?;
    verifier.update(canonical_si.as_bytes())?;
    if !verifier.verify(&signature_value).unwrap_or(false) {
        return Err(WsSecError::BadSignature);
    }

    let action = child(header, ns::WSA, "Action")
        .and_then(|a| a.text())
        .map(|t| t.trim().to_string());
    Ok(VerifiedRequest {
        cert_der,
        to,
        action,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authority::operation::Operation;
    use crate::authority::soap::envelope::Request;
    use crate::fixtures::signer;

    const TO: &str = "https://vpfe-hab.dian.gov.co/WcfDianCustomerServices.svc";

    fn envelope() -> String {
        Request::get_status("abc")
            .to_envelope(TO, &signer(), Utc::now())
            .expect("envelope")
    }

    #[test]
    fn written_canonical_forms_match_a_real_canonicalizer() {
        let xml = envelope();
        let doc = Document::parse(&xml).expect("parse");
        let to = doc
            .descendants()
            .find(|n| n.has_tag_name((ns::WSA, "To")))
            .expect("to");
        let id = to.attribute((ns::WSU, "Id")).expect("id");
        assert_eq!(
            c14n::canonicalize(to, None, &Algorithm::exclusive(&["soap", "wcf"])),
            to_canonical(id, TO)
        );
        let si = doc
            .descendants()
            .find(|n| n.has_tag_name((ns::DS, "SignedInfo")))
            .expect("si");
        let canonical =
            c14n::canonicalize(si, None, &Algorithm::exclusive(&["wsa", "soap", "wcf"]));
        assert!(canonical.starts_with(&format!(
            "<ds:SignedInfo xmlns:ds=\"{}\" xmlns:soap=\"{}\" xmlns:wcf=\"{}\" xmlns:wsa=\"{}\">",
            ns::DS,
            ns::SOAP12,
            WCF_NS,
            ns::WSA
        )));
    }

    #[test]
    fn a_signed_request_verifies() {
        let xml = envelope();
        let doc = Document::parse(&xml).expect("parse");
        let v = verify_request(&doc, Utc::now()).expect("verify");
        assert_eq!(v.to, TO);
        assert_eq!(
            v.action.as_deref(),
            Some(Operation::GetStatus.action().as_str())
        );
        assert_eq!(v.cert_der, signer().cert_der());
    }

    #[test]
    fn tampering_is_detected() {
        let xml = envelope();
        // The signed address changed.
        let bad_to = xml.replace(TO, "https://evil.example/WcfDianCustomerServices.svc");
        let doc = Document::parse(&bad_to).expect("parse");
        assert!(matches!(
            verify_request(&doc, Utc::now()),
            Err(WsSecError::DigestMismatch(_))
        ));
        // The signature value changed.
        let start = xml.find("<ds:SignatureValue>").expect("sv") + "<ds:SignatureValue>".len();
        let mut bytes = xml.clone().into_bytes();
        bytes[start + 3] = if bytes[start + 3] == b'A' { b'B' } else { b'A' };
        let bad_sig = String::from_utf8(bytes).expect("utf8");
        let doc = Document::parse(&bad_sig).expect("parse");
        assert!(matches!(
            verify_request(&doc, Utc::now()),
            Err(WsSecError::BadSignature)
        ));
        // Another key signs with the first certificate.
        let (other, _) = crate::fixtures::self_signed();
        let forged = WsSigner::new(other, signer().cert_der().to_vec()).expect("signer");
        let xml = Request::get_status("abc")
            .to_envelope(TO, &forged, Utc::now())
            .expect("env");
        let doc = Document::parse(&xml).expect("parse");
        assert!(matches!(
            verify_request(&doc, Utc::now()),
            Err(WsSecError::BadSignature)
        ));
    }

    #[test]
    fn expired_and_unsigned_requests_fail() {
        let xml = envelope();
        let doc = Document::parse(&xml).expect("parse");
        let later = Utc::now() + Duration::seconds(DEFAULT_TTL_SECONDS + 10);
        assert!(matches!(
            verify_request(&doc, later),
            Err(WsSecError::Expired)
        ));
        let unsigned = format!(
            "<soap:Envelope xmlns:soap=\"{}\"><soap:Header/><soap:Body/></soap:Envelope>",
            ns::SOAP12
        );
        let doc = Document::parse(&unsigned).expect("parse");
        assert!(matches!(
            verify_request(&doc, Utc::now()),
            Err(WsSecError::Missing(_))
        ));
    }

    /// Independent check with xmlsec1 when it is installed.
    #[test]
    fn xmlsec1_verifies_the_signature() {
        if !crate::testing::tool("xmlsec1") {
            eprintln!("SKIPPED xmlsec1_verifies_the_signature: xmlsec1 not installed");
            return;
        }
        let dir = tempfile::tempdir().expect("tmp");
        let xml_path = dir.path().join("req.xml");
        let pem_path = dir.path().join("cert.pem");
        std::fs::write(&xml_path, envelope()).expect("write");
        let pem = X509::from_der(signer().cert_der())
            .and_then(|c| c.to_pem())
            .expect("pem");
        std::fs::write(&pem_path, pem).expect("write");
        let out = std::process::Command::new("xmlsec1")
            .arg("--verify")
            .arg("--pubkey-cert-pem")
            .arg(&pem_path)
            .arg("--id-attr:Id")
            .arg(format!("{}:To", ns::WSA))
            .arg(&xml_path)
            .output()
            .expect("run");
        assert!(
            out.status.success(),
            "xmlsec1: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
