//! Verification: the general path over a parsed document.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use openssl::hash::MessageDigest;
use openssl::sign::Verifier;
use openssl::x509::X509;
use sha2::{Digest, Sha256, Sha384, Sha512};

use crate::engine::c14n::{self, Algorithm};

use super::*;

type Node<'a, 'i> = roxmltree::Node<'a, 'i>;

pub(super) fn ds_child<'a, 'i>(n: Node<'a, 'i>, name: &str) -> Option<Node<'a, 'i>> {
    ns_child(n, NS_DS, name)
}

fn ns_child<'a, 'i>(n: Node<'a, 'i>, ns: &str, name: &str) -> Option<Node<'a, 'i>> {
    n.children().find(|c| {
        c.is_element() && c.tag_name().name() == name && c.tag_name().namespace() == Some(ns)
    })
}

pub(super) fn ns_desc<'a, 'i>(n: Node<'a, 'i>, ns: &str, name: &str) -> Option<Node<'a, 'i>> {
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
