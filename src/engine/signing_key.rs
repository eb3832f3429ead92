//! The issuer's signing certificate and RSA key, parsed ONCE from PKCS#12 and
//! shared (`Arc<SigningKey>`) by every signature: parsing a PKCS#12 and
//! checking its key costs tens of milliseconds, signing costs about one RSA
//! operation. Everything the XAdES signature needs from the certificate
//! (base64 DER, SHA-256 digest, issuer, serial) is precomputed here.

use std::sync::Once;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use chrono::{DateTime, Utc};
use openssl::asn1::{Asn1Integer, Asn1Time, Asn1TimeRef};
use openssl::bn::{BigNum, MsbOption};
use openssl::hash::MessageDigest;
use openssl::nid::Nid;
use openssl::pkcs12::Pkcs12;
use openssl::pkey::{PKey, Private};
use openssl::rsa::{Padding, Rsa};
use openssl::x509::extension::{KeyUsage, SubjectKeyIdentifier};
use openssl::x509::{X509NameBuilder, X509NameRef, X509};
use rand::distributions::Alphanumeric;
use rand::Rng as _;
use sha2::{Digest, Sha256};

/// Errors loading or creating a signing key.
#[derive(Debug, thiserror::Error)]
pub enum SigningKeyError {
    #[error("the PKCS#12 password contains a NUL byte")]
    PasswordNul,
    #[error("cannot read the PKCS#12 (wrong password, or a legacy algorithm not available): {0}")]
    Pkcs12(openssl::error::ErrorStack),
    #[error("the PKCS#12 holds no private key")]
    NoPrivateKey,
    #[error("the PKCS#12 holds no certificate")]
    NoCertificate,
    #[error("the private key is not an RSA key")]
    NotRsa,
    #[error("the certificate does not match the private key")]
    KeyMismatch,
    #[error("invalid argument: {0}")]
    InvalidArgument(&'static str),
    #[error("OpenSSL: {0}")]
    OpenSsl(#[from] openssl::error::ErrorStack),
}

/// DER of a DigestInfo for SHA-256 up to its 32 digest bytes (RFC 8017
/// §9.2, note 1).
const SHA256_DIGEST_INFO: [u8; 19] = [
    0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01, 0x05,
    0x00, 0x04, 0x20,
];

static LEGACY_PROVIDER: Once = Once::new();

/// Load OpenSSL's legacy provider (RC2/3DES-based PKCS#12 files made by older
/// tools) next to the default one, once per process. The provider handle is
/// not `Sync`, so it is leaked on purpose: it must stay loaded for the whole
/// process anyway. Failure (a build without the legacy module) is ignored:
/// modern PKCS#12 files (AES + PBKDF2) load without it.
pub fn ensure_legacy_provider() {
    LEGACY_PROVIDER.call_once(|| {
        if let Ok(p) = openssl::provider::Provider::try_load(None, "legacy", true) {
            std::mem::forget(p);
        }
    });
}

/// Signing material of one certificate. `Send + Sync`; share it with `Arc`.
pub struct SigningKey {
    private_key: PKey<Private>,
    /// The same key as OpenSSL's RSA object, signed with directly.
    rsa: Rsa<Private>,
    certificate: X509,
    certificate_der: Vec<u8>,
    certificate_base64: String,
    certificate_sha256_base64: String,
    issuer_name: String,
    serial_decimal: String,
    not_before: DateTime<Utc>,
    not_after: DateTime<Utc>,
    subject_cn: String,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey")
            .field("subject_cn", &self.subject_cn)
            .field("issuer_name", &self.issuer_name)
            .field("serial_decimal", &self.serial_decimal)
            .field("not_before", &self.not_before)
            .field("not_after", &self.not_after)
            .finish_non_exhaustive()
    }
}

impl SigningKey {
    /// Parse a PKCS#12 (DER bytes) protected by `password`.
    pub fn from_pkcs12(der: &[u8], password: &str) -> Result<SigningKey, SigningKeyError> {
        if password.contains('\0') {
            // openssl's parse2 would panic on an interior NUL.
            return Err(SigningKeyError::PasswordNul);
        }
        ensure_legacy_provider();
        let p12 = Pkcs12::from_der(der).map_err(SigningKeyError::Pkcs12)?;
        let parsed = p12.parse2(password).map_err(SigningKeyError::Pkcs12)?;
        let pkey = parsed.pkey.ok_or(SigningKeyError::NoPrivateKey)?;
        let cert = parsed.cert.ok_or(SigningKeyError::NoCertificate)?;
        Self::from_parts(pkey, cert)
    }

    /// Build from an already parsed key and certificate (checks they match).
    pub fn from_parts(
        private_key: PKey<Private>,
        certificate: X509,
    ) -> Result<SigningKey, SigningKeyError> {
        let rsa = private_key.rsa().map_err(|_| SigningKeyError::NotRsa)?;
        if !rsa.check_key().unwrap_or(false) {
            return Err(SigningKeyError::NotRsa);
        }
        if !certificate.public_key()?.public_eq(&private_key) {
            return Err(SigningKeyError::KeyMismatch);
        }
        let certificate_der = certificate.to_der()?;
        let certificate_base64 = B64.encode(&certificate_der);
        let certificate_sha256_base64 = B64.encode(Sha256::digest(&certificate_der));
        let issuer_name = rfc4514_reversed(certificate.issuer_name());
        let serial_decimal = certificate
            .serial_number()
            .to_bn()?
            .to_dec_str()?
            .to_string();
        let not_before = asn1_to_chrono(certificate.not_before())?;
        let not_after = asn1_to_chrono(certificate.not_after())?;
        let subject_cn = certificate
            .subject_name()
            .entries_by_nid(Nid::COMMONNAME)
            .next()
            .and_then(|e| e.data().to_string().ok())
            .unwrap_or_default();
        Ok(SigningKey {
            private_key,
            rsa,
            certificate,
            certificate_der,
            certificate_base64,
            certificate_sha256_base64,
            issuer_name,
            serial_decimal,
            not_before,
            not_after,
            subject_cn,
        })
    }

    /// RSASSA-PKCS1-v1_5 with SHA-256 over `data`: the DigestInfo of its
    /// hash, padded and raised to the private exponent. The same bytes as
    /// `EVP_DigestSign` (the scheme is deterministic) without a digest
    /// context and a key context fetched and freed per signature (their
    /// cost: docs/performance.md).
    pub fn sign_rsa_sha256(&self, data: &[u8]) -> Result<Vec<u8>, SigningKeyError> {
        let mut info = [0u8; SHA256_DIGEST_INFO.len() + 32];
        let (prefix, digest) = info.split_at_mut(SHA256_DIGEST_INFO.len());
        prefix.copy_from_slice(&SHA256_DIGEST_INFO);
        digest.copy_from_slice(&Sha256::digest(data));
        let mut out = vec![0u8; self.rsa.size() as usize];
        let len = self.rsa.private_encrypt(&info, &mut out, Padding::PKCS1)?;
        out.truncate(len);
        Ok(out)
    }

    pub fn private_key(&self) -> &PKey<Private> {
        &self.private_key
    }
    pub fn certificate(&self) -> &X509 {
        &self.certificate
    }
    /// Certificate, DER.
    pub fn certificate_der(&self) -> &[u8] {
        &self.certificate_der
    }
    /// Certificate, base64 of the DER (no line breaks) — `ds:X509Certificate`.
    pub fn certificate_base64(&self) -> &str {
        &self.certificate_base64
    }
    /// Certificate PEM (for tools such as `xmlsec1 --pubkey-cert-pem`).
    pub fn certificate_pem(&self) -> Result<Vec<u8>, SigningKeyError> {
        Ok(self.certificate.to_pem()?)
    }
    /// base64(SHA-256(certificate DER)) — `xades:CertDigest/ds:DigestValue`.
    pub fn certificate_sha256_base64(&self) -> &str {
        &self.certificate_sha256_base64
    }
    /// Issuer in reversed-RDN form `CN=…,O=…,C=CO` — `ds:X509IssuerName`.
    pub fn issuer_name(&self) -> &str {
        &self.issuer_name
    }
    /// Serial number, decimal — `ds:X509SerialNumber`.
    pub fn serial_decimal(&self) -> &str {
        &self.serial_decimal
    }
    pub fn not_before(&self) -> DateTime<Utc> {
        self.not_before
    }
    pub fn not_after(&self) -> DateTime<Utc> {
        self.not_after
    }
    /// Subject common name (empty if the certificate has none).
    pub fn subject_cn(&self) -> &str {
        &self.subject_cn
    }
    /// Whether `at` lies within the certificate's validity period.
    pub fn is_valid_at(&self, at: DateTime<Utc>) -> bool {
        self.not_before <= at && at <= self.not_after
    }
}

fn asn1_to_chrono(t: &Asn1TimeRef) -> Result<DateTime<Utc>, SigningKeyError> {
    let epoch = Asn1Time::from_unix(0)?;
    let d = epoch.diff(t)?;
    let secs = i64::from(d.days) * 86_400 + i64::from(d.secs);
    DateTime::<Utc>::from_timestamp(secs, 0).ok_or(SigningKeyError::InvalidArgument(
        "certificate time out of range",
    ))
}

/// Distinguished name as RFC 4514 text with the RDNs in reverse order (most
/// specific first): `CN=…,OU=…,O=…,C=CO`.
pub fn rfc4514_reversed(name: &X509NameRef) -> String {
    let mut parts: Vec<String> = Vec::new();
    for e in name.entries() {
        let nid = e.object().nid();
        let key = match nid {
            Nid::COMMONNAME => "CN".to_string(),
            Nid::ORGANIZATIONALUNITNAME => "OU".to_string(),
            Nid::ORGANIZATIONNAME => "O".to_string(),
            Nid::COUNTRYNAME => "C".to_string(),
            Nid::LOCALITYNAME => "L".to_string(),
            Nid::STATEORPROVINCENAME => "ST".to_string(),
            Nid::STREETADDRESS => "STREET".to_string(),
            Nid::PKCS9_EMAILADDRESS => "E".to_string(),
            Nid::SERIALNUMBER => "SERIALNUMBER".to_string(),
            _ => match nid.short_name() {
                Ok(s) if nid != Nid::UNDEF => s.to_string(),
                _ => e.object().to_string(),
            },
        };
        let value = match e.data().to_string() {
            Ok(s) => escape_rdn_value(&s),
            Err(_) => format!("#{}", hex::encode(e.data().as_slice())),
        };
        parts.push(format!("{key}={value}"));
    }
    parts.reverse();
    parts.join(",")
}

fn escape_rdn_value(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    let last = v.chars().count().saturating_sub(1);
    for (i, c) in v.chars().enumerate() {
        let special = matches!(c, ',' | '+' | '"' | '\\' | '<' | '>' | ';')
            || (i == 0 && (c == '#' || c == ' '))
            || (i == last && c == ' ');
        if special {
            out.push('\\');
        }
        if c == '\0' {
            out.push_str("\\00");
        } else {
            out.push(c);
        }
    }
    out
}

/// Create an RSA-2048 self-signed certificate (`CN=common_name, O=common_name,
/// C=CO`, subject serialNumber = `nit`) valid from one day ago for `days`
/// days, packed as a PKCS#12 with a fresh random password.
/// Returns `(pkcs12_der, password)`.
pub fn generate_self_signed(
    common_name: &str,
    nit: &str,
    days: u32,
) -> Result<(Vec<u8>, String), SigningKeyError> {
    if common_name.is_empty() || common_name.contains('\0') {
        return Err(SigningKeyError::InvalidArgument(
            "common name empty or with NUL",
        ));
    }
    if nit.contains('\0') {
        return Err(SigningKeyError::InvalidArgument("NIT with NUL"));
    }
    if days == 0 {
        return Err(SigningKeyError::InvalidArgument("days must be positive"));
    }
    let rsa = Rsa::generate(2048)?;
    let pkey = PKey::from_rsa(rsa)?;

    let mut name = X509NameBuilder::new()?;
    name.append_entry_by_nid(Nid::COUNTRYNAME, "CO")?;
    name.append_entry_by_nid(Nid::ORGANIZATIONNAME, common_name)?;
    if !nit.is_empty() {
        name.append_entry_by_nid(Nid::SERIALNUMBER, nit)?;
    }
    name.append_entry_by_nid(Nid::COMMONNAME, common_name)?;
    let name = name.build();

    let mut serial = BigNum::new()?;
    serial.rand(63, MsbOption::MAYBE_ZERO, false)?;
    serial.add_word(1)?;
    let serial = Asn1Integer::from_bn(&serial)?;

    let now = Utc::now().timestamp();
    let not_before = Asn1Time::from_unix(now - 86_400)?;
    let not_after = Asn1Time::from_unix(now + i64::from(days) * 86_400)?;

    let mut b = X509::builder()?;
    b.set_version(2)?;
    b.set_serial_number(&serial)?;
    b.set_subject_name(&name)?;
    b.set_issuer_name(&name)?;
    b.set_pubkey(&pkey)?;
    b.set_not_before(&not_before)?;
    b.set_not_after(&not_after)?;
    b.append_extension(
        KeyUsage::new()
            .critical()
            .digital_signature()
            .non_repudiation()
            .build()?,
    )?;
    let ski = SubjectKeyIdentifier::new().build(&b.x509v3_context(None, None))?;
    b.append_extension(ski)?;
    b.sign(&pkey, MessageDigest::sha256())?;
    let cert = b.build();

    let password: String = rand::thread_rng()
        .sample_iter(&Alphanumeric)
        .take(24)
        .map(char::from)
        .collect();
    let p12 = Pkcs12::builder()
        .name(common_name)
        .pkey(&pkey)
        .cert(&cert)
        .build2(&password)?;
    Ok((p12.to_der()?, password))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn self_signed_roundtrip() {
        assert_send_sync::<SigningKey>();
        let (der, pw) = generate_self_signed("Empresa Demo S.A.S.", "900373076", 365).unwrap();
        let k = SigningKey::from_pkcs12(&der, &pw).unwrap();
        assert_eq!(k.subject_cn(), "Empresa Demo S.A.S.");
        assert_eq!(
            k.issuer_name(),
            "CN=Empresa Demo S.A.S.,SERIALNUMBER=900373076,O=Empresa Demo S.A.S.,C=CO"
        );
        assert!(k.serial_decimal().chars().all(|c| c.is_ascii_digit()));
        let now = Utc::now();
        assert!(k.is_valid_at(now));
        assert!(k.not_before() <= now - chrono::Duration::hours(23));
        assert!(k.not_after() >= now + chrono::Duration::days(364));
        assert_eq!(
            B64.decode(k.certificate_sha256_base64()).unwrap(),
            Sha256::digest(k.certificate_der()).to_vec()
        );
        assert_eq!(
            B64.decode(k.certificate_base64()).unwrap(),
            k.certificate_der()
        );
        let sig = k.sign_rsa_sha256(b"hello").unwrap();
        assert_eq!(sig.len(), 256);
        let pubkey = k.certificate().public_key().unwrap();
        let mut v = openssl::sign::Verifier::new(MessageDigest::sha256(), &pubkey).unwrap();
        v.update(b"hello").unwrap();
        assert!(v.verify(&sig).unwrap());
    }

    #[test]
    fn signs_the_bytes_evp_digest_sign_makes() {
        let (der, pw) = generate_self_signed("X", "1", 1).unwrap();
        let k = SigningKey::from_pkcs12(&der, &pw).unwrap();
        for data in [&b""[..], b"<ds:SignedInfo/>", &[7u8; 5000]] {
            let mut evp =
                openssl::sign::Signer::new(MessageDigest::sha256(), k.private_key()).unwrap();
            evp.update(data).unwrap();
            assert_eq!(k.sign_rsa_sha256(data).unwrap(), evp.sign_to_vec().unwrap());
        }
    }

    #[test]
    fn bad_inputs_are_errors() {
        let (der, pw) = generate_self_signed("X", "", 1).unwrap();
        assert!(SigningKey::from_pkcs12(&der, "wrong").is_err());
        assert!(SigningKey::from_pkcs12(&der, "a\0b").is_err());
        assert!(SigningKey::from_pkcs12(b"garbage", &pw).is_err());
        assert!(generate_self_signed("", "1", 1).is_err());
        assert!(generate_self_signed("X", "1", 0).is_err());
    }

    /// A PKCS#12 made by `openssl pkcs12 -export -legacy` (RC2-40 + 3DES, as
    /// older tools and many CAs produce) loads through the legacy provider.
    #[test]
    fn loads_legacy_rc2_pkcs12() {
        use std::process::Command;
        let dir = tempfile::tempdir().unwrap();
        let (key_pem, cert_pem) = (dir.path().join("k.pem"), dir.path().join("c.pem"));
        let p12 = dir.path().join("legacy.p12");
        let (der, pw) = generate_self_signed("Legacy", "1", 2).unwrap();
        let k = SigningKey::from_pkcs12(&der, &pw).unwrap();
        std::fs::write(
            &key_pem,
            k.private_key().private_key_to_pem_pkcs8().unwrap(),
        )
        .unwrap();
        std::fs::write(&cert_pem, k.certificate_pem().unwrap()).unwrap();
        let made = Command::new("openssl")
            .args([
                "pkcs12",
                "-export",
                "-legacy",
                "-passout",
                "pass:secreto",
                "-inkey",
            ])
            .arg(&key_pem)
            .arg("-in")
            .arg(&cert_pem)
            .arg("-out")
            .arg(&p12)
            .status();
        if !matches!(made, Ok(s) if s.success()) {
            eprintln!("SKIPPED loads_legacy_rc2_pkcs12: openssl CLI cannot write a legacy PKCS#12");
            return;
        }
        let legacy = SigningKey::from_pkcs12(&std::fs::read(&p12).unwrap(), "secreto").unwrap();
        assert_eq!(legacy.certificate_der(), k.certificate_der());
    }

    #[test]
    fn rdn_escaping() {
        assert_eq!(escape_rdn_value("A, B+C"), "A\\, B\\+C");
        assert_eq!(escape_rdn_value(" x "), "\\ x\\ ");
        assert_eq!(escape_rdn_value("#1"), "\\#1");
    }
}
