//! Unsealed secrets in memory: a PKCS#12 and its password, technical keys,
//! software PINs, webhook secrets. They live in `secrecy` boxes (wiped on
//! drop), print as `[REDACTED]` in `Debug`, and have no `Serialize` of their
//! own: a record holding one is written only by the store, which seals it
//! (`sealing`), so no answer or log line can carry one by accident.

use std::fmt;

use secrecy::{ExposeSecret, SecretSlice, SecretString};

/// A secret text (password, PIN, technical key, webhook secret).
#[derive(Clone)]
pub struct SecretText(SecretString);

impl SecretText {
    pub fn new(text: impl Into<String>) -> Self {
        SecretText(SecretString::from(text.into()))
    }

    /// The secret itself: only where it is used (a code, a signature, a
    /// key file) or deliberately shown once.
    pub fn expose(&self) -> &str {
        self.0.expose_secret()
    }

    pub fn is_empty(&self) -> bool {
        self.expose().is_empty()
    }
}

impl From<String> for SecretText {
    fn from(s: String) -> Self {
        SecretText::new(s)
    }
}

impl From<&str> for SecretText {
    fn from(s: &str) -> Self {
        SecretText::new(s)
    }
}

impl fmt::Debug for SecretText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[REDACTED]")
    }
}

/// Compares in constant time for equal lengths (records are compared in
/// tests and when deciding whether anything changed).
impl PartialEq for SecretText {
    fn eq(&self, other: &Self) -> bool {
        constant_time_eq(self.expose().as_bytes(), other.expose().as_bytes())
    }
}

/// Secret bytes (a PKCS#12 file).
#[derive(Clone)]
pub struct SecretBytes(SecretSlice<u8>);

impl SecretBytes {
    pub fn new(bytes: Vec<u8>) -> Self {
        SecretBytes(SecretSlice::from(bytes))
    }

    pub fn expose(&self) -> &[u8] {
        self.0.expose_secret()
    }
}

impl From<Vec<u8>> for SecretBytes {
    fn from(bytes: Vec<u8>) -> Self {
        SecretBytes::new(bytes)
    }
}

impl fmt::Debug for SecretBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[REDACTED {} bytes]", self.expose().len())
    }
}

impl PartialEq for SecretBytes {
    fn eq(&self, other: &Self) -> bool {
        constant_time_eq(self.expose(), other.expose())
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && openssl::memcmp::eq(a, b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_secret() {
        let t = SecretText::new("pin-do-not-print");
        let b = SecretBytes::new(b"p12-do-not-print".to_vec());
        for shown in [
            format!("{t:?}"),
            format!("{b:?}"),
            format!("{:?}", Some(&t)),
        ] {
            assert!(!shown.contains("do-not-print"), "{shown}");
            assert!(shown.contains("REDACTED"), "{shown}");
        }
        assert_eq!(t.expose(), "pin-do-not-print");
        assert_eq!(t, SecretText::from("pin-do-not-print"));
        assert_ne!(t, SecretText::from("pin-do-not-prin"));
        assert_eq!(b, SecretBytes::from(b"p12-do-not-print".to_vec()));
    }
}
