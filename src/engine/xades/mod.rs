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
//! authority simulator and the upload checks for arbitrary documents.
//!
//! `sign.rs` and `verify.rs` hold the two; this file their shared names.

mod sign;
mod verify;

pub use sign::sign;
pub use verify::{verify, MAX_REFERENCES};

use super::signing_key::SigningKeyError;

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

#[cfg(test)]
mod tests;
