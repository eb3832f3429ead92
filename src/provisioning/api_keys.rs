//! API keys: `sk_test_` / `sk_live_` followed by 32 random bytes in base62.
//! Only the SHA-256 of a key is stored; the key itself is shown once.

use chrono::Utc;
use emisor_store::{ApiKeyRecord, CompanyId, Environment, Store};
use rand::RngCore;
use sha2::{Digest, Sha256};

use super::ProvisioningError;

/// Base62 length of 32 bytes (62^43 > 2^256).
const SECRET_LEN: usize = 43;
const ALPHABET: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// A newly created key: the record as stored and the secret, shown once.
#[derive(Debug, Clone)]
pub struct IssuedKey {
    pub record: ApiKeyRecord,
    pub secret: String,
}

/// Fixed-width base62 of a 256-bit number (big-endian bytes).
fn base62(bytes: &[u8; 32]) -> String {
    let mut n = bytes.to_vec();
    let mut digits = Vec::with_capacity(SECRET_LEN);
    for _ in 0..SECRET_LEN {
        let mut rem: u32 = 0;
        for b in n.iter_mut() {
            let acc = (rem << 8) | u32::from(*b);
            *b = (acc / 62) as u8;
            rem = acc % 62;
        }
        // `rem` is below 62, the alphabet's length.
        digits.push(ALPHABET.get(rem as usize).copied().unwrap_or(b'0'));
    }
    digits.reverse();
    String::from_utf8_lossy(&digits).into_owned()
}

pub fn generate_secret(env: Environment) -> String {
    let mut bytes = [0u8; 32];
    rand::thread_rng().fill_bytes(&mut bytes);
    format!("{}{}", env.key_prefix(), base62(&bytes))
}

/// SHA-256 of the whole key, lowercase hex: the stored form and lookup key.
pub fn hash_key(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// The environment a key's shape claims, if it is well formed.
pub fn parse_shape(secret: &str) -> Option<Environment> {
    let (env, rest) = if let Some(rest) = secret.strip_prefix("sk_test_") {
        (Environment::Test, rest)
    } else if let Some(rest) = secret.strip_prefix("sk_live_") {
        (Environment::Live, rest)
    } else {
        return None;
    };
    (rest.len() == SECRET_LEN && rest.bytes().all(|b| b.is_ascii_alphanumeric())).then_some(env)
}

/// Creates a key of `company` for `env`. With `user`, the key belongs to
/// that user: its sockets join `user_{id}` and its documents' events go there.
pub fn create_api_key(
    store: &dyn Store,
    company: CompanyId,
    env: Environment,
    label: Option<String>,
    user: Option<u64>,
) -> Result<IssuedKey, ProvisioningError> {
    if store.company(company)?.is_none() {
        return Err(ProvisioningError::NotFound("company"));
    }
    let secret = generate_secret(env);
    let record = store.insert_api_key(ApiKeyRecord {
        id: 0,
        company_id: company,
        environment: env,
        hash: hash_key(&secret),
        display_prefix: secret.chars().take(12).collect(),
        label,
        user_id: user,
        created_at: Utc::now(),
        revoked_at: None,
    })?;
    Ok(IssuedKey { record, secret })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_have_the_documented_shape() {
        let k = generate_secret(Environment::Test);
        assert!(k.starts_with("sk_test_"));
        assert_eq!(k.len(), 8 + SECRET_LEN);
        assert_eq!(parse_shape(&k), Some(Environment::Test));
        assert_eq!(
            parse_shape(&generate_secret(Environment::Live)),
            Some(Environment::Live)
        );
        assert_eq!(parse_shape("sk_test_short"), None);
        assert_eq!(parse_shape(&k.replace("sk_test_", "pk_test_")), None);
        assert_ne!(generate_secret(Environment::Test), k);
    }

    #[test]
    fn base62_is_fixed_width_and_exact() {
        assert_eq!(base62(&[0u8; 32]), "0".repeat(SECRET_LEN));
        let mut one = [0u8; 32];
        one[31] = 61;
        assert!(base62(&one).ends_with('z'));
        assert_eq!(base62(&[255u8; 32]).len(), SECRET_LEN);
    }
}
