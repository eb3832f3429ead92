//! Secrets at rest in the store: sealed in sled, refused under another key,
//! sealed once when an older store is opened, re-sealed by a rotation.
use std::collections::BTreeMap;
use std::path::Path;

use chrono::Utc;
use serde_json::Value;
use sha2::Digest;

use crate::encoding::codec::{decode, encode};
use crate::tests::{company, keys, open, open_with_keys, resolution};
use crate::*;

const PIN: &str = "pin-31415926";
const TECHNICAL_KEY: &str = "tk-9d5f0c0ffee0b5e4c5a1d2e3f4a5b6c7d8e9f0a1";
const PASSWORD: &str = "p12-password-2718";
const WEBHOOK: &str = "whsec_sealedtest0123456789";

fn p12() -> Vec<u8> {
    (0..600u32).map(|i| (i * 7 + 3) as u8).collect()
}

fn key(b: u8) -> MasterKey {
    MasterKey::from_bytes(&[b; 32]).unwrap()
}

/// A company with one of each secret; its id.
fn provision(s: &SledStore) -> CompanyId {
    let mut c = s.create_company(company()).unwrap();
    c.webhook_secret = Some(WEBHOOK.into());
    s.update_company(&c).unwrap();
    s.put_software(SoftwareRegistration {
        company_id: c.id,
        kind: SoftwareKind::Invoicing,
        software_id: "sw-1".into(),
        pin: PIN.into(),
        test_set_id: None,
        provider_nit: "900000001".into(),
        provider_dv: 9,
        registered_at: Utc::now(),
    })
    .unwrap();
    let mut r = resolution(1, 100);
    r.technical_key = TECHNICAL_KEY.into();
    s.add_resolution(c.id, r).unwrap();
    s.put_certificate(CertificateRecord {
        company_id: c.id,
        pkcs12_der: p12().into(),
        password: PASSWORD.into(),
        subject: "Demo".into(),
        issuer: "Demo".into(),
        serial: "42".into(),
        not_before: Utc::now(),
        not_after: Utc::now(),
        imported_at: Utc::now(),
    })
    .unwrap();
    c.id
}

/// Every secret reads back as written.
fn assert_secrets(s: &SledStore, id: CompanyId) {
    let c = s.company(id).unwrap().unwrap();
    assert_eq!(c.webhook_secret.unwrap().expose(), WEBHOOK);
    let sw = s.software(id, SoftwareKind::Invoicing).unwrap().unwrap();
    assert_eq!(sw.pin.expose(), PIN);
    assert_eq!(
        s.resolutions(id).unwrap()[0].technical_key.expose(),
        TECHNICAL_KEY
    );
    let cert = s.certificate(id).unwrap().unwrap();
    assert_eq!(cert.pkcs12_der.expose(), p12().as_slice());
    assert_eq!(cert.password.expose(), PASSWORD);
}

/// The raw values of the credential trees, by tree and key.
fn raw(s: &SledStore) -> BTreeMap<(&'static str, Vec<u8>), Vec<u8>> {
    let mut out = BTreeMap::new();
    for (name, tree) in [
        (trees::COMPANIES, &s.companies),
        (trees::SOFTWARE, &s.software),
        (trees::RESOLUTIONS, &s.resolutions),
        (trees::CERTIFICATES, &s.certificates),
    ] {
        for item in tree.iter() {
            let (k, v) = item.unwrap();
            out.insert((name, k.to_vec()), v.to_vec());
        }
    }
    out
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// No raw value holds a secret, in any form it was ever written in.
fn assert_no_plain_secret(s: &SledStore) {
    let window = &p12()[200..232];
    let as_json: String = serde_json::to_string(window).unwrap();
    for ((tree, _), v) in raw(s) {
        for secret in [PIN, TECHNICAL_KEY, PASSWORD, WEBHOOK] {
            assert!(!contains(&v, secret.as_bytes()), "{secret} plain in {tree}");
        }
        assert!(!contains(&v, window), "PKCS#12 bytes in {tree}");
        let inner = &as_json[1..as_json.len() - 1];
        assert!(!contains(&v, inner.as_bytes()), "PKCS#12 array in {tree}");
    }
}

/// The master key ids the raw values name.
fn key_ids(s: &SledStore) -> Vec<String> {
    s.sealed_inventory().unwrap().key_ids.into_iter().collect()
}

#[test]
fn secrets_are_sealed_in_sled_and_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let id = {
        let s = open(dir.path());
        let id = provision(&s);
        assert_secrets(&s, id);
        assert_no_plain_secret(&s);
        let inventory = s.sealed_inventory().unwrap();
        assert_eq!((inventory.sealed, inventory.plain), (5, 0));
        assert_eq!(key_ids(&s), vec![keys().current().id().to_string()]);
        id
    };
    // From disk, not from the read cache.
    let s = open(dir.path());
    assert_secrets(&s, id);
}

fn files_under(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// What `dir` holds: every file outside sled with the SHA-256 of its
/// bytes, and every sled tree's entries. (sled rewrites its own files on any
/// open, even one that only reads, so its content is compared instead.)
fn snapshot(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                if p.file_name().is_some_and(|n| n != "sled") {
                    stack.push(p);
                }
            } else {
                let digest = sha2::Sha256::digest(std::fs::read(&p).unwrap());
                out.insert(p.display().to_string(), format!("{digest:x}"));
            }
        }
    }
    // A store just dropped may hold sled's lock a moment longer.
    let db = (0..100)
        .find_map(|_| {
            let opened = sled::open(dir.join("sled")).ok();
            if opened.is_none() {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            opened
        })
        .unwrap();
    for name in db.tree_names() {
        let mut digest = sha2::Sha256::new();
        for item in db.open_tree(&name).unwrap().iter() {
            let (k, v) = item.unwrap();
            digest.update((k.len() as u64).to_be_bytes());
            digest.update(&k);
            digest.update((v.len() as u64).to_be_bytes());
            digest.update(&v);
        }
        let name = String::from_utf8_lossy(&name).into_owned();
        out.insert(
            format!("sled tree {name}"),
            format!("{:x}", digest.finalize()),
        );
    }
    out
}

#[test]
fn another_key_is_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let id = provision(&open(dir.path()));
    let before = snapshot(dir.path());
    let err = match open_with_keys(dir.path(), || Keyring::new(key(9))) {
        Err(e) => e,
        Ok(_) => panic!("opened under another key"),
    };
    assert!(matches!(err, StoreError::MasterKey(_)), "{err}");
    let msg = err.to_string();
    assert!(msg.contains(keys().current().id()), "{msg}");
    assert!(msg.contains(key(9).id()), "{msg}");
    assert_eq!(
        snapshot(dir.path()),
        before,
        "the refused open changed files"
    );
    let s = open(dir.path());
    assert_secrets(&s, id);
}

#[test]
fn a_store_written_before_sealing_is_sealed_once_and_nothing_else_changes() {
    let dir = tempfile::tempdir().unwrap();
    // What an earlier build wrote: the same records, secrets in plain text
    // (`pkcs12_der` as the array of bytes serde made of a `Vec<u8>`).
    let (id, old) = {
        let s = open(dir.path());
        let id = provision(&s);
        let mut old = BTreeMap::new();
        for ((tree, k), v) in raw(&s) {
            let mut record: Value = decode(tree, &v).unwrap();
            for (field, plain) in [
                ("webhook_secret", Value::from(WEBHOOK)),
                ("pin", PIN.into()),
                ("technical_key", TECHNICAL_KEY.into()),
                ("password", PASSWORD.into()),
                ("pkcs12_der", serde_json::to_value(p12()).unwrap()),
            ] {
                if let Some(slot) = record.get_mut(field) {
                    *slot = plain;
                }
            }
            let tree_handle = match tree {
                trees::COMPANIES => &s.companies,
                trees::SOFTWARE => &s.software,
                trees::RESOLUTIONS => &s.resolutions,
                _ => &s.certificates,
            };
            tree_handle
                .insert(k.as_slice(), encode(tree, &record).unwrap())
                .unwrap();
            old.insert((tree, k), record);
        }
        s.flush().unwrap();
        let inventory = s.sealed_inventory().unwrap();
        assert_eq!((inventory.sealed, inventory.plain), (0, 5));
        (id, old)
    };
    let plain_on_disk = files_under(dir.path())
        .iter()
        .any(|p| contains(&std::fs::read(p).unwrap(), PASSWORD.as_bytes()));
    assert!(
        plain_on_disk,
        "the earlier build's plain values are in sled's files"
    );

    let s = open(dir.path());
    assert_secrets(&s, id);
    assert_no_plain_secret(&s);
    assert_eq!(key_ids(&s), vec![keys().current().id().to_string()]);
    // Not in sled's files either (space it has not reused yet included):
    // the store was copied with its secrets sealed.
    s.flush().unwrap();
    let window = &p12()[200..232];
    for path in files_under(dir.path()) {
        let bytes = std::fs::read(&path).unwrap();
        for secret in [PIN, TECHNICAL_KEY, PASSWORD, WEBHOOK] {
            assert!(!contains(&bytes, secret.as_bytes()), "{secret} in {path:?}");
        }
        assert!(!contains(&bytes, window), "PKCS#12 bytes in {path:?}");
    }
    let sealed = raw(&s);
    for ((tree, k), v) in &sealed {
        let now: Value = decode(tree, v).unwrap();
        let before = &old[&(*tree, k.clone())];
        for (field, value) in before.as_object().unwrap() {
            if crate::engine::sled::sealing::secret_fields(tree)
                .iter()
                .any(|(f, _)| f == field)
            {
                assert_eq!(now[field]["sealed"], 1, "{tree}.{field}");
            } else {
                assert_eq!(&now[field], value, "{tree}.{field} unchanged");
            }
        }
        assert_eq!(
            now.as_object().unwrap().len(),
            before.as_object().unwrap().len()
        );
    }
    drop(s);
    // Sealed once: the next open rewrites nothing (a new seal would differ).
    let s = open(dir.path());
    assert_eq!(raw(&s), sealed);
}

#[test]
fn a_rotation_reseals_every_secret_and_the_old_key_alone_no_longer_opens() {
    let dir = tempfile::tempdir().unwrap();
    let id = {
        let s = open(dir.path());
        let id = provision(&s);
        assert_eq!(s.rotate_master_key(key(2)).unwrap(), 4, "records rewritten");
        assert_eq!(key_ids(&s), vec![key(2).id().to_string()]);
        assert_no_plain_secret(&s);
        assert_secrets(&s, id);
        // New writes are sealed under the new key too.
        s.put_software(SoftwareRegistration {
            kind: SoftwareKind::Payroll,
            ..s.software(id, SoftwareKind::Invoicing).unwrap().unwrap()
        })
        .unwrap();
        assert_eq!(key_ids(&s), vec![key(2).id().to_string()]);
        id
    };
    let refused = open_with_keys(dir.path(), keys);
    assert!(matches!(refused, Err(StoreError::MasterKey(_))));
    let s = open_with_keys(dir.path(), || Keyring::new(key(2))).unwrap();
    assert_secrets(&s, id);
}

#[test]
fn an_open_that_accepts_the_previous_key_finishes_an_interrupted_rotation() {
    let dir = tempfile::tempdir().unwrap();
    // Sealed under the old key: the rotation's transaction never committed.
    let id = provision(&open(dir.path()));
    let next = || Keyring::new(key(2)).accepting(MasterKey::from_bytes(&[7u8; 32]).unwrap());
    let s = open_with_keys(dir.path(), next).unwrap();
    assert_eq!(key_ids(&s), vec![key(2).id().to_string()]);
    assert_secrets(&s, id);
    drop(s);
    let s = open_with_keys(dir.path(), || Keyring::new(key(2))).unwrap();
    assert_secrets(&s, id);
}

#[test]
fn records_print_no_secret() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let id = provision(&s);
    let shown = format!(
        "{:?} {:?} {:?} {:?}",
        s.company(id).unwrap(),
        s.software(id, SoftwareKind::Invoicing).unwrap(),
        s.resolutions(id).unwrap(),
        s.certificate(id).unwrap()
    );
    for secret in [PIN, TECHNICAL_KEY, PASSWORD, WEBHOOK] {
        assert!(!shown.contains(secret), "{shown}");
    }
    // Outside the store a record with a secret does not serialize at all.
    let company = s.company(id).unwrap().unwrap();
    assert!(serde_json::to_string(&company).is_err());
}
