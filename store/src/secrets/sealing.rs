//! Secrets at rest: every secret field of a stored record (a company's
//! PKCS#12 and its password, technical keys, software PINs, webhook secrets)
//! is written as a sealed value, AES-256-GCM under the installation's master
//! key:
//!
//! ```json
//! {"sealed": 1, "key_id": "9f2c…", "nonce": "<base64, 12 bytes>", "ciphertext": "<base64, data ‖ 16-byte tag>"}
//! ```
//!
//! `sealed` is the format version and `key_id` names the master key (the
//! first 8 bytes of a SHA-256 of it, in hex), so a start with the wrong key
//! is refused before anything is read, and during a rotation values under
//! either key stay readable. The associated data binds both.
//!
//! Records are sealed and unsealed only inside a [`Scope`], which the store
//! opens around its reads and writes of the credential trees: a record with a
//! secret serialized anywhere else (an answer, a log line) fails instead of
//! showing it.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use openssl::symm::{decrypt_aead, encrypt_aead, Cipher};
use secrecy::{ExposeSecret, SecretBox};
use serde::de::Error as _;
use serde::ser::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::error::{StoreError, StoreResult};
use crate::secrets::secret::{SecretBytes, SecretText};

/// Format version of sealed values written by this build.
pub const SEALED_FORMAT_V1: u8 = 1;
/// AES-256: a master key is 32 bytes.
pub const MASTER_KEY_LEN: usize = 32;
const NONCE_LEN: usize = 12;
const TAG_LEN: usize = 16;

/// The installation's master key. `Debug` shows its id only.
pub struct MasterKey {
    id: String,
    key: SecretBox<[u8; MASTER_KEY_LEN]>,
}

impl MasterKey {
    pub fn from_bytes(bytes: &[u8]) -> StoreResult<MasterKey> {
        let key: [u8; MASTER_KEY_LEN] = bytes.try_into().map_err(|_| {
            StoreError::Sealing(format!(
                "a master key is {MASTER_KEY_LEN} bytes, this one has {}",
                bytes.len()
            ))
        })?;
        let digest = Sha256::new()
            .chain_update(b"emisor master key id\0")
            .chain_update(key)
            .finalize();
        Ok(MasterKey {
            id: hex_prefix(&digest[..8]),
            key: SecretBox::new(Box::new(key)),
        })
    }

    /// 32 bytes from OpenSSL's CSPRNG.
    pub fn generate() -> StoreResult<MasterKey> {
        let mut bytes = secrecy::zeroize::Zeroizing::new([0u8; MASTER_KEY_LEN]);
        openssl::rand::rand_bytes(bytes.as_mut())
            .map_err(|e| StoreError::Sealing(format!("no random bytes for a key: {e}")))?;
        MasterKey::from_bytes(bytes.as_ref())
    }

    /// Names the key without revealing it (in sealed values and messages).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The key itself, to write it to its file.
    pub fn expose_bytes(&self) -> &[u8; MASTER_KEY_LEN] {
        self.key.expose_secret()
    }
}

impl fmt::Debug for MasterKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MasterKey").field("id", &self.id).finish()
    }
}

fn hex_prefix(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The key new values are sealed under, and the others still accepted on
/// read (the previous key while a rotation completes).
#[derive(Debug, Clone)]
pub struct Keyring {
    current: Arc<MasterKey>,
    others: Vec<Arc<MasterKey>>,
    /// [`Keyring::without_secrets`].
    blind: bool,
}

impl Keyring {
    pub fn new(current: MasterKey) -> Keyring {
        Keyring {
            current: Arc::new(current),
            others: Vec::new(),
            blind: false,
        }
    }

    /// Opens a store for what needs no secret (a backup's documents, read
    /// by `verify` without the master key): the store opens whatever key
    /// its secrets are sealed under, and no sealed value opens. Nothing
    /// should be written through it.
    pub fn without_secrets() -> StoreResult<Keyring> {
        Ok(Keyring {
            blind: true,
            ..Keyring::new(MasterKey::generate()?)
        })
    }

    /// Also reads values sealed under `key`.
    pub fn accepting(mut self, key: MasterKey) -> Keyring {
        if key.id != self.current.id && self.others.iter().all(|k| k.id != key.id) {
            self.others.push(Arc::new(key));
        }
        self
    }

    /// `new` as the current key, this ring's keys still read.
    pub(crate) fn rotated(&self, new: MasterKey) -> Keyring {
        let mut others = vec![Arc::clone(&self.current)];
        others.extend(self.others.iter().cloned());
        others.retain(|k| k.id != new.id);
        Keyring {
            current: Arc::new(new),
            others,
            blind: self.blind,
        }
    }

    pub fn current(&self) -> &MasterKey {
        &self.current
    }

    pub fn knows(&self, key_id: &str) -> bool {
        self.blind || self.find(key_id).is_some()
    }

    fn find(&self, key_id: &str) -> Option<&MasterKey> {
        std::iter::once(&self.current)
            .chain(&self.others)
            .find(|k| k.id == key_id)
            .map(|k| k.as_ref())
    }

    pub(crate) fn seal(&self, plain: &[u8]) -> StoreResult<SealedValue> {
        let key = &self.current;
        let mut nonce = [0u8; NONCE_LEN];
        openssl::rand::rand_bytes(&mut nonce)
            .map_err(|e| StoreError::Sealing(format!("no random nonce: {e}")))?;
        let mut tag = [0u8; TAG_LEN];
        let mut ciphertext = encrypt_aead(
            Cipher::aes_256_gcm(),
            key.key.expose_secret(),
            Some(&nonce),
            &associated_data(SEALED_FORMAT_V1, &key.id),
            plain,
            &mut tag,
        )
        .map_err(|e| StoreError::Sealing(format!("sealing failed: {e}")))?;
        ciphertext.extend_from_slice(&tag);
        Ok(SealedValue {
            sealed: SEALED_FORMAT_V1,
            key_id: key.id.clone(),
            nonce: B64.encode(nonce),
            ciphertext: B64.encode(ciphertext),
        })
    }

    pub(crate) fn unseal(&self, v: &SealedValue) -> StoreResult<Vec<u8>> {
        if self.blind && self.find(&v.key_id).is_none() {
            // Records read whole without their secrets (`without_secrets`).
            return Ok(Vec::new());
        }
        if v.sealed != SEALED_FORMAT_V1 {
            return Err(StoreError::Sealing(format!(
                "a secret is sealed with format {}, this build reads format {SEALED_FORMAT_V1}",
                v.sealed
            )));
        }
        let key = self.find(&v.key_id).ok_or_else(|| {
            StoreError::Sealing(format!(
                "a secret is sealed under master key {}, which is not the one given ({})",
                v.key_id, self.current.id
            ))
        })?;
        let bad = |what: &str| StoreError::Sealing(format!("a sealed secret has a bad {what}"));
        let nonce = B64.decode(&v.nonce).map_err(|_| bad("nonce"))?;
        let data = B64.decode(&v.ciphertext).map_err(|_| bad("ciphertext"))?;
        if nonce.len() != NONCE_LEN || data.len() < TAG_LEN {
            return Err(bad("length"));
        }
        let (ciphertext, tag) = data.split_at(data.len() - TAG_LEN);
        decrypt_aead(
            Cipher::aes_256_gcm(),
            key.key.expose_secret(),
            Some(&nonce),
            &associated_data(v.sealed, &v.key_id),
            ciphertext,
            tag,
        )
        .map_err(|_| {
            StoreError::Sealing(format!(
                "a secret sealed under master key {} does not open (altered, or another key with the same id)",
                v.key_id
            ))
        })
    }
}

fn associated_data(format: u8, key_id: &str) -> Vec<u8> {
    format!("emisor sealed v{format} {key_id}").into_bytes()
}

/// A sealed value as stored (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SealedValue {
    sealed: u8,
    key_id: String,
    nonce: String,
    ciphertext: String,
}

thread_local! {
    static SCOPE: RefCell<Option<Arc<Keyring>>> = const { RefCell::new(None) };
}

/// While alive, this thread seals and unseals record fields with `keys`.
pub(crate) struct Scope {
    previous: Option<Arc<Keyring>>,
}

pub(crate) fn scope(keys: Arc<Keyring>) -> Scope {
    Scope {
        previous: SCOPE.with(|s| s.borrow_mut().replace(keys)),
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        let previous = self.previous.take();
        SCOPE.with(|s| *s.borrow_mut() = previous);
    }
}

fn in_scope<T>(f: impl FnOnce(&Keyring) -> T) -> Option<T> {
    SCOPE.with(|s| s.borrow().as_deref().map(f))
}

const OUTSIDE: &str = "a secret is written only by the store, sealed";

/// A secret field as found in a stored value: sealed, or (records written
/// before sealing existed, until the open that seals them) plain.
#[derive(Deserialize)]
#[serde(untagged)]
enum Stored<P> {
    Sealed(SealedValue),
    Plain(P),
}

fn seal_field<S: Serializer>(plain: &[u8], s: S) -> Result<S::Ok, S::Error> {
    match in_scope(|k| k.seal(plain)) {
        Some(Ok(sealed)) => sealed.serialize(s),
        Some(Err(e)) => Err(S::Error::custom(e)),
        None => Err(S::Error::custom(OUTSIDE)),
    }
}

fn unseal_field<E: serde::de::Error>(v: &SealedValue) -> Result<Vec<u8>, E> {
    match in_scope(|k| k.unseal(v)) {
        Some(r) => r.map_err(E::custom),
        None => Err(E::custom("a sealed secret is read only by the store")),
    }
}

/// `#[serde(with)]` for a [`SecretText`] field.
pub(crate) mod text {
    use super::*;

    pub fn serialize<S: Serializer>(v: &SecretText, s: S) -> Result<S::Ok, S::Error> {
        seal_field(v.expose().as_bytes(), s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<SecretText, D::Error> {
        match Stored::<String>::deserialize(d)? {
            Stored::Plain(s) => Ok(SecretText::new(s)),
            Stored::Sealed(v) => String::from_utf8(unseal_field(&v)?)
                .map(SecretText::new)
                .map_err(|_| D::Error::custom("a sealed text is not UTF-8")),
        }
    }
}

/// `#[serde(with)]` for an `Option<SecretText>` field (absent = `None`).
pub(crate) mod opt_text {
    use super::*;

    pub fn serialize<S: Serializer>(v: &Option<SecretText>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(t) => seal_field(t.expose().as_bytes(), s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<SecretText>, D::Error> {
        #[derive(Deserialize)]
        struct Wrap(#[serde(with = "super::text")] SecretText);
        Ok(Option::<Wrap>::deserialize(d)?.map(|w| w.0))
    }
}

/// `#[serde(with)]` for a [`SecretBytes`] field.
pub(crate) mod bytes {
    use super::*;

    pub fn serialize<S: Serializer>(v: &SecretBytes, s: S) -> Result<S::Ok, S::Error> {
        seal_field(v.expose(), s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<SecretBytes, D::Error> {
        match Stored::<Vec<u8>>::deserialize(d)? {
            Stored::Plain(b) => Ok(SecretBytes::new(b)),
            Stored::Sealed(v) => Ok(SecretBytes::new(unseal_field(&v)?)),
        }
    }
}

/// How a secret field is kept in its plain (pre-sealing) form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Plain {
    /// A JSON string.
    Text,
    /// A JSON array of byte values (how `Vec<u8>` was written).
    Bytes,
}

/// The secret fields of one kind of record, each with its plain form.
pub(crate) type SecretFields = &'static [(&'static str, Plain)];

/// What the store holds, before any key is chosen: the master keys its
/// sealed values name, and how many secrets are still plain.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SealedInventory {
    pub key_ids: BTreeSet<String>,
    pub sealed: usize,
    pub plain: usize,
}

enum Field {
    Absent,
    Plain(Vec<u8>),
    Sealed(SealedValue),
}

fn field(tree: &'static str, name: &str, kind: Plain, v: &Value) -> StoreResult<Field> {
    let corrupt = |reason: String| StoreError::Corrupt { tree, reason };
    Ok(match (v, kind) {
        (Value::Null, _) => Field::Absent,
        (Value::String(s), Plain::Text) => Field::Plain(s.as_bytes().to_vec()),
        (Value::Array(_), Plain::Bytes) => Field::Plain(
            serde_json::from_value::<Vec<u8>>(v.clone())
                .map_err(|e| corrupt(format!("`{name}`: {e}")))?,
        ),
        (Value::Object(_), _) => Field::Sealed(
            serde_json::from_value(v.clone()).map_err(|e| corrupt(format!("`{name}`: {e}")))?,
        ),
        _ => return Err(corrupt(format!("`{name}` is neither sealed nor plain"))),
    })
}

/// Adds one stored record (as JSON) of `tree`, whose secret fields are
/// `fields`, to the inventory.
pub(crate) fn survey(
    tree: &'static str,
    fields: SecretFields,
    record: &Value,
    inventory: &mut SealedInventory,
) -> StoreResult<()> {
    for &(name, kind) in fields {
        match field(tree, name, kind, record.get(name).unwrap_or(&Value::Null))? {
            Field::Absent => {}
            Field::Plain(_) => inventory.plain += 1,
            Field::Sealed(v) => {
                inventory.sealed += 1;
                inventory.key_ids.insert(v.key_id);
            }
        }
    }
    Ok(())
}

/// Seals the plain secrets of one stored record (as JSON) and re-seals those
/// under another key than `keys`' current one; every other field is left as
/// it is. Returns whether anything changed.
pub(crate) fn reseal(
    tree: &'static str,
    fields: SecretFields,
    record: &mut Value,
    keys: &Keyring,
) -> StoreResult<bool> {
    let mut changed = false;
    for &(name, kind) in fields {
        let Some(slot) = record.get_mut(name) else {
            continue;
        };
        let plain = match field(tree, name, kind, slot)? {
            Field::Absent => continue,
            Field::Sealed(v) if v.key_id == keys.current.id => continue,
            Field::Sealed(v) => secrecy::zeroize::Zeroizing::new(keys.unseal(&v)?),
            Field::Plain(p) => secrecy::zeroize::Zeroizing::new(p),
        };
        let sealed = keys.seal(&plain)?;
        *slot = serde_json::to_value(sealed).map_err(|e| StoreError::Corrupt {
            tree,
            reason: e.to_string(),
        })?;
        changed = true;
    }
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoding::trees;
    use crate::engine::sled::sealing::secret_fields;
    use serde_json::json;

    fn key(b: u8) -> MasterKey {
        MasterKey::from_bytes(&[b; 32]).unwrap()
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Record {
        name: String,
        #[serde(with = "text")]
        pin: SecretText,
        #[serde(default, with = "opt_text")]
        hook: Option<SecretText>,
        #[serde(with = "bytes")]
        blob: SecretBytes,
    }

    fn record() -> Record {
        Record {
            name: "visible".into(),
            pin: "pin-4711".into(),
            hook: Some("whsec_abc".into()),
            blob: SecretBytes::new(vec![0, 1, 2, 250]),
        }
    }

    #[test]
    fn a_sealed_record_reads_back_and_shows_no_secret() {
        let keys = Arc::new(Keyring::new(key(1)));
        let _s = scope(keys.clone());
        let json = serde_json::to_string(&record()).unwrap();
        assert!(json.contains("visible"));
        for secret in ["pin-4711", "whsec_abc", "[0,1,2,250]"] {
            assert!(!json.contains(secret), "{json}");
        }
        let v: Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["pin"]["sealed"], 1);
        assert_eq!(v["pin"]["key_id"], keys.current().id());
        assert_eq!(serde_json::from_str::<Record>(&json).unwrap(), record());
        // Two seals of one secret differ (fresh nonce each time).
        assert_ne!(json, serde_json::to_string(&record()).unwrap());
    }

    #[test]
    fn outside_the_store_a_record_with_secrets_does_not_serialize() {
        let err = serde_json::to_string(&record()).unwrap_err().to_string();
        assert!(err.contains("only by the store"), "{err}");
        let sealed = {
            let _s = scope(Arc::new(Keyring::new(key(1))));
            serde_json::to_string(&record()).unwrap()
        };
        assert!(serde_json::from_str::<Record>(&sealed).is_err());
    }

    #[test]
    fn another_key_or_an_altered_value_does_not_open() {
        let sealed = {
            let _s = scope(Arc::new(Keyring::new(key(1))));
            serde_json::to_string(&record()).unwrap()
        };
        {
            let _s = scope(Arc::new(Keyring::new(key(2))));
            let err = serde_json::from_str::<Record>(&sealed)
                .unwrap_err()
                .to_string();
            assert!(err.contains(key(1).id()), "{err}");
        }
        // One bit of the ciphertext flipped: the tag refuses it.
        let mut v: Value = serde_json::from_str(&sealed).unwrap();
        let mut ct = B64
            .decode(v["pin"]["ciphertext"].as_str().unwrap())
            .unwrap();
        ct[0] ^= 1;
        v["pin"]["ciphertext"] = json!(B64.encode(ct));
        let _s = scope(Arc::new(Keyring::new(key(1))));
        let err = serde_json::from_value::<Record>(v).unwrap_err().to_string();
        assert!(err.contains("does not open"), "{err}");
    }

    #[test]
    fn during_a_rotation_both_keys_read() {
        let old = {
            let _s = scope(Arc::new(Keyring::new(key(1))));
            serde_json::to_string(&record()).unwrap()
        };
        let _s = scope(Arc::new(Keyring::new(key(2)).accepting(key(1))));
        assert_eq!(serde_json::from_str::<Record>(&old).unwrap(), record());
        let new: Value = serde_json::to_value(record()).unwrap();
        assert_eq!(new["pin"]["key_id"], key(2).id());
    }

    #[test]
    fn plain_secrets_are_sealed_and_nothing_else_changes() {
        let plain = json!({
            "id": 3, "company_id": 1, "serial": "42", "extra": {"kept": [1, 2]},
            "pkcs12_der": [48, 130, 1, 2], "password": "p12-pass",
        });
        let mut inventory = SealedInventory::default();
        survey(
            trees::CERTIFICATES,
            secret_fields(trees::CERTIFICATES),
            &plain,
            &mut inventory,
        )
        .unwrap();
        assert_eq!((inventory.plain, inventory.sealed), (2, 0));

        let keys = Keyring::new(key(1));
        let mut v = plain.clone();
        assert!(reseal(
            trees::CERTIFICATES,
            secret_fields(trees::CERTIFICATES),
            &mut v,
            &keys
        )
        .unwrap());
        for (k, old) in plain.as_object().unwrap() {
            if k == "pkcs12_der" || k == "password" {
                assert_eq!(v[k]["key_id"], keys.current().id(), "{k}");
            } else {
                assert_eq!(&v[k], old, "{k} unchanged");
            }
        }
        let text = v.to_string();
        assert!(
            !text.contains("p12-pass") && !text.contains("48,130"),
            "{text}"
        );
        let mut again = SealedInventory::default();
        survey(
            trees::CERTIFICATES,
            secret_fields(trees::CERTIFICATES),
            &v,
            &mut again,
        )
        .unwrap();
        assert_eq!((again.plain, again.sealed), (0, 2));
        assert_eq!(
            again.key_ids,
            BTreeSet::from([keys.current().id().to_string()])
        );
        // Already under the current key: left as it is.
        assert!(!reseal(
            trees::CERTIFICATES,
            secret_fields(trees::CERTIFICATES),
            &mut v.clone(),
            &keys
        )
        .unwrap());

        // Under a new key: opened with the old one, sealed with the new.
        let rotated = Keyring::new(key(2)).accepting(key(1));
        let mut w = v.clone();
        assert!(reseal(
            trees::CERTIFICATES,
            secret_fields(trees::CERTIFICATES),
            &mut w,
            &rotated
        )
        .unwrap());
        assert_eq!(w["password"]["key_id"], key(2).id());
        let sealed: SealedValue = serde_json::from_value(w["password"].clone()).unwrap();
        assert_eq!(rotated.unseal(&sealed).unwrap(), b"p12-pass");
    }

    #[test]
    fn key_ids_name_the_key_and_keys_have_32_bytes() {
        assert_eq!(key(1).id(), key(1).id());
        assert_ne!(key(1).id(), key(2).id());
        assert_eq!(key(1).id().len(), 16);
        assert!(MasterKey::from_bytes(&[0u8; 16]).is_err());
        let generated = MasterKey::generate().unwrap();
        assert_ne!(generated.expose_bytes(), &[0u8; 32]);
        assert!(!format!("{generated:?}").contains(&format!("{:?}", generated.expose_bytes())));
    }
}
