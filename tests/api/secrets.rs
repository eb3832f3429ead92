//! Secrets at rest: the data dir and the master key are the
//! owner's alone; no file of the data dir but `demo-keys.json` shows a
//! PKCS#12, its password, a technical key, a PIN or a webhook secret; a
//! wrong or missing key refuses to start and changes nothing; a rotation,
//! even killed midway, keeps every company signing; a store written before
//! sealing is sealed at start and still signs.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use emisor::api::invoice_request::examples;
use serde_json::{json, Value};
use sha2::Digest;

use crate::support::app::*;
use crate::support::bodies::unique;

/// Issues `body` for `key` synchronously; the simulator must accept it
/// (it checks the signature, the code made with the technical key or the
/// PIN, and the software security code made with the PIN).
fn issue_accepted(app: &TestApp, key: &str, body: &Value) -> Value {
    let (status, res) = json(app.post("/v1/api/facturacion", key, &unique(body.clone())));
    assert_eq!(status, 200, "{res}");
    assert_eq!(res["data"]["id_estado_documento"], 2, "accepted: {res}");
    res["data"].clone()
}

/// An invoice (CUFE: technical key) and a credit note on it (CUDE: PIN).
fn issue_both_kinds(app: &TestApp, key: &str) {
    let invoice = issue_accepted(app, key, &examples::invoice());
    let id = invoice["documento"]["id"].as_u64().unwrap();
    issue_accepted(
        app,
        key,
        &examples::with_reference(examples::credit_note(), id),
    );
}

/// Every path under `dir` (directories included), sorted.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![dir.to_path_buf()];
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p.clone());
            }
            out.push(p);
        }
    }
    out.sort();
    out
}

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
}

/// Directories 0700, files 0600, everywhere under `dir`.
fn assert_owner_only(dir: &Path) {
    for p in walk(dir) {
        let want = if p.is_dir() { 0o700 } else { 0o600 };
        assert_eq!(mode(&p), want, "{} is {:o}", p.display(), mode(&p));
    }
}

fn key_file_of(dir: &Path) -> PathBuf {
    let mut name = dir.as_os_str().to_owned();
    name.push(".key");
    PathBuf::from(name)
}

#[test]
fn a_first_start_leaves_the_data_dir_and_the_key_to_the_owner() {
    if !sled_only("it checks the sled files at rest") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let mut app = TestApp::start_in(&dir, Launch::default().key_file());
    issue_both_kinds(&app, &app.sk_test());
    app.stop();

    assert_owner_only(&dir);
    let seg = walk(&dir)
        .into_iter()
        .any(|p| p.extension().is_some_and(|e| e == "seg"));
    assert!(seg, "the document file log is among the files checked");
    // The key: beside the data dir, not in it; 32 bytes, the owner's.
    let key = key_file_of(&dir);
    assert_eq!(key, tmp.path().join("data.key"));
    assert_eq!(std::fs::read(&key).unwrap().len(), 32);
    assert_eq!(mode(&key), 0o600);
    assert!(!walk(&dir)
        .iter()
        .any(|p| p.extension().is_some_and(|e| e == "key")));

    // The same key opens it again.
    let app = TestApp::start_in(&dir, Launch::default().key_file());
    issue_accepted(&app, &app.sk_test(), &examples::invoice());
}

#[test]
fn a_data_dir_others_can_read_is_tightened_and_the_start_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    std::fs::create_dir_all(dir.join("outbox")).unwrap();
    std::fs::write(dir.join("outbox/old.eml"), b"Subject: x\r\n\r\n").unwrap();
    for (p, m) in [
        (dir.clone(), 0o755),
        (dir.join("outbox"), 0o775),
        (dir.join("outbox/old.eml"), 0o644),
    ] {
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(m)).unwrap();
    }
    let mut app = TestApp::start_in(&dir, Launch::default().capture_log());
    issue_accepted(&app, &app.sk_test(), &examples::invoice());
    app.stop();
    assert_owner_only(&dir);
    let log = app.log();
    assert!(
        log.contains("was readable by other users") && log.contains("tightened"),
        "{log}"
    );
}

/// The forms a secret could take in a file: as is, hex, base64.
fn renderings_of_text(s: &str) -> Vec<Vec<u8>> {
    vec![
        s.as_bytes().to_vec(),
        hex::encode(s).into_bytes(),
        B64.encode(s).into_bytes(),
    ]
}

/// The forms the PKCS#12 bytes could take: windows of its middle (the
/// encrypted bags; its head is common DER) as they are, as the JSON array
/// serde made of a `Vec<u8>`, in hex, and in base64 at each alignment.
fn renderings_of_bytes(b: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for start in [b.len() / 4, b.len() / 2, 3 * b.len() / 4] {
        let w = &b[start..start + 30];
        out.push(w.to_vec());
        let array = serde_json::to_string(w).unwrap();
        out.push(array.as_bytes()[1..array.len() - 1].to_vec());
        out.push(hex::encode(w).into_bytes());
        for shift in 0..3 {
            let encoded = B64.encode(&b[start + shift..start + shift + 30]);
            out.push(encoded.as_bytes()[4..32].to_vec());
        }
    }
    out
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[test]
#[cfg_attr(not(feature = "soak"), ignore = "soak")]
fn no_file_of_the_data_dir_but_demo_keys_shows_a_secret() {
    // The server's own log goes into the data dir and is searched too.
    let mut app = TestApp::spawn_with(
        Launch::default()
            .capture_log()
            .env("RUST_LOG", "info,emisor=debug"),
    );
    let keys = app.keys.clone();

    // A certificate whose PKCS#12 and password this test knows.
    let (p12, password) =
        emisor::engine::signing_key::generate_self_signed("Empresa Demo S.A.S.", "900000001", 365)
            .unwrap();
    let (status, body) = json(app.admin_post(
        "/admin/companies/1/certificado",
        &json!({"pkcs12_base64": B64.encode(&p12), "password": password}),
    ));
    assert_eq!(status, 200, "{body}");
    // PINs that cannot occur by chance (the demo's are five digits).
    let salt = &hex::encode(sha2::Sha256::digest(app.dir.as_os_str().as_encoded_bytes()))[..12];
    let pins = [format!("pin-{salt}-f"), format!("pin-{salt}-n")];
    for (tipo, id, pin) in [
        ("facturacion", &keys["software_id"], &pins[0]),
        ("nomina", &keys["payroll_software_id"], &pins[1]),
    ] {
        let (status, body) = json(app.admin_post(
            "/admin/companies/1/software",
            &json!({"tipo": tipo, "software_id": id, "pin": pin}),
        ));
        assert_eq!(status, 200, "{body}");
        assert!(!body.to_string().contains(pin.as_str()), "{body}");
    }
    // A webhook secret, shown once; its deliveries fail (nothing listens).
    let (status, company) = json(
        app.client
            .patch(format!("{}/admin/companies/1", app.url))
            .bearer_auth(app.admin_token())
            .json(&json!({"webhook_url": "http://127.0.0.1:9/hook"}))
            .send()
            .unwrap(),
    );
    assert_eq!(status, 200, "{company}");
    let webhook = company["data"]["webhook_secret"]
        .as_str()
        .unwrap()
        .to_string();
    let (_, again) = json(app.admin_get("/admin/companies/1"));
    assert!(again["data"].get("webhook_secret").is_none(), "{again}");
    assert!(!again.to_string().contains(&webhook));

    // Invoices (technical key), a credit note (PIN), a support document.
    issue_both_kinds(&app, &app.sk_test());
    issue_accepted(&app, &app.sk_test(), &examples::support_document());
    app.stop();

    let technical_keys: Vec<String> = keys["resoluciones"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["clave_tecnica"].as_str().unwrap().to_string())
        .filter(|k| !k.is_empty())
        .collect();
    assert!(technical_keys.len() >= 2, "{keys}");
    let mut needles: Vec<(String, Vec<u8>)> = Vec::new();
    let texts = technical_keys
        .iter()
        .map(|k| ("technical key", k.as_str()))
        .chain(pins.iter().map(|p| ("PIN", p.as_str())))
        .chain([
            ("PKCS#12 password", password.as_str()),
            ("webhook secret", &webhook),
        ]);
    for (what, text) in texts {
        for r in renderings_of_text(text) {
            needles.push((format!("{what} {text}"), r));
        }
    }
    for r in renderings_of_bytes(&p12) {
        needles.push(("PKCS#12 bytes".into(), r));
    }

    let demo_keys = std::fs::read(app.dir.join("demo-keys.json")).unwrap();
    assert!(
        technical_keys
            .iter()
            .all(|k| contains(&demo_keys, k.as_bytes())),
        "the operator's copy shows them"
    );
    let mut searched = 0;
    for path in walk(&app.dir) {
        if path.is_dir() || path.file_name().is_some_and(|n| n == "demo-keys.json") {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        searched += bytes.len();
        for (what, needle) in &needles {
            assert!(
                !contains(&bytes, needle),
                "{what} readable in {}",
                path.display()
            );
        }
    }
    assert!(searched > 100_000, "searched only {searched} bytes");
}

/// Starts `emisor serve` expecting it to refuse; its stderr.
fn refused_start(dir: &Path, env: &[(&str, &str)]) -> String {
    let mut cmd = Command::new(BIN);
    cmd.args(["serve", "--bind", "127.0.0.1:0", "--data-dir"])
        .arg(dir)
        .env_remove(MASTER_KEY_ENV)
        .envs(store_env(dir))
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("emisor started instead of refusing");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(!status.success());
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    err
}

/// What a stopped data dir holds: the files outside sled with a digest of
/// their bytes, and every sled tree's entries (sled rewrites its own files
/// on any open, one that only reads included, so its content is compared).
fn content(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for p in walk(dir) {
        if p.is_file() && !p.starts_with(dir.join("sled")) {
            let digest = sha2::Sha256::digest(std::fs::read(&p).unwrap());
            out.insert(p.display().to_string(), format!("{digest:x}"));
        }
    }
    let db = sled::open(dir.join("sled")).unwrap();
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
        out.insert(format!("tree {name}"), format!("{:x}", digest.finalize()));
    }
    out
}

#[test]
fn a_wrong_or_missing_master_key_refuses_to_start_and_changes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let mut app = TestApp::start_in(&dir, Launch::default().key_file());
    issue_accepted(&app, &app.sk_test(), &examples::invoice());
    app.stop();
    let key_file = key_file_of(&dir);
    let key = std::fs::read(&key_file).unwrap();
    let before = content(&dir);

    // Another key in the file.
    std::fs::write(&key_file, [0x5au8; 32]).unwrap();
    let err = refused_start(&dir, &[]);
    assert!(
        err.contains(&key_file.display().to_string()) && err.contains("does not open"),
        "{err}"
    );
    assert_eq!(
        content(&dir),
        before,
        "the refused start changed the data dir"
    );

    // No key file at all: none is made up.
    std::fs::remove_file(&key_file).unwrap();
    let err = refused_start(&dir, &[]);
    assert!(
        err.contains(&key_file.display().to_string()) && err.contains("does not exist"),
        "{err}"
    );
    assert!(!key_file.exists(), "a new key was made beside sealed data");
    assert_eq!(content(&dir), before);

    // Another key in the environment (it wins over the file).
    std::fs::write(&key_file, &key).unwrap();
    let other = B64.encode([0x33u8; 32]);
    let err = refused_start(&dir, &[(MASTER_KEY_ENV, &other)]);
    assert!(
        err.contains(MASTER_KEY_ENV) && err.contains("does not open"),
        "{err}"
    );
    assert_eq!(content(&dir), before);

    // The right key: it starts and signs.
    let app = TestApp::start_in(&dir, Launch::default().key_file());
    issue_accepted(&app, &app.sk_test(), &examples::invoice());
}

/// Two companies, each with its own certificate and credentials; their
/// `sk_test` keys. The server is stopped at the end.
fn two_companies(dir: &Path) -> Vec<String> {
    let mut app = TestApp::start_in(dir, Launch::default().key_file());
    let (status, second) = json(app.admin_post(
        "/admin/companies",
        &json!({"nit": "800197268", "razon_social": "Segunda S.A.S.", "demo": true}),
    ));
    assert_eq!(status, 201, "{second}");
    let keys = vec![
        app.sk_test(),
        second["data"]["sk_test"].as_str().unwrap().to_string(),
    ];
    for key in &keys {
        issue_accepted(&app, key, &examples::invoice());
    }
    app.stop();
    keys
}

fn every_company_signs(dir: &Path, keys: &[String]) {
    let mut app = TestApp::start_in(dir, Launch::default().key_file());
    for key in keys {
        issue_both_kinds(&app, key);
    }
    app.stop();
}

fn rotate_command(dir: &Path) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(["admin", "--data-dir"])
        .arg(dir)
        .arg("rotate-master-key")
        .env_remove(MASTER_KEY_ENV)
        .envs(store_env(dir));
    cmd
}

#[test]
fn a_rotation_keeps_every_company_signing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let keys = two_companies(&dir);
    let key_file = key_file_of(&dir);
    let old = std::fs::read(&key_file).unwrap();

    let out = rotate_command(&dir).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_ne!(report["old_key_id"], report["new_key_id"], "{report}");
    assert!(
        report["records_resealed"].as_u64().unwrap() >= 2 * 4,
        "{report}"
    );
    let new = std::fs::read(&key_file).unwrap();
    assert_ne!(new, old);
    assert_eq!(new.len(), 32);
    assert_eq!(mode(&key_file), 0o600);
    assert!(!PathBuf::from(format!("{}.new", key_file.display())).exists());

    every_company_signs(&dir, &keys);
    // The old key no longer opens the store.
    std::fs::write(&key_file, &old).unwrap();
    let err = refused_start(&dir, &[]);
    assert!(err.contains("does not open"), "{err}");
}

#[test]
fn with_the_key_in_the_environment_a_rotation_writes_the_new_one_to_a_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let mut app = TestApp::start_in(&dir, Launch::default());
    let key = app.sk_test();
    app.stop();

    let out_file = tmp.path().join("new.key");
    let rotate = |out: Option<&Path>| {
        let mut cmd = rotate_command(&dir);
        cmd.env(MASTER_KEY_ENV, master_key_env(&dir));
        if let Some(out) = out {
            cmd.arg("--out").arg(out);
        }
        cmd.output().unwrap()
    };
    let refused = rotate(None);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--out"));
    let done = rotate(Some(&out_file));
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    assert_eq!(mode(&out_file), 0o600);
    let new_key = B64.encode(std::fs::read(&out_file).unwrap());

    let err = refused_start(&dir, &[(MASTER_KEY_ENV, &master_key_env(&dir))]);
    assert!(
        err.contains(MASTER_KEY_ENV) && err.contains("does not open"),
        "{err}"
    );
    let app = TestApp::start_in(&dir, Launch::default().env(MASTER_KEY_ENV, &new_key));
    issue_both_kinds(&app, &key);
}

#[test]
#[cfg_attr(not(feature = "soak"), ignore = "soak")]
fn a_rotation_killed_midway_leaves_a_key_that_opens_the_store() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let keys = two_companies(&dir);
    let key_file = key_file_of(&dir);
    let pending = PathBuf::from(format!("{}.new", key_file.display()));

    for step in ["new-key-written", "resealed"] {
        let old = std::fs::read(&key_file).unwrap();
        let mut child = rotate_command(&dir)
            .args(["--pause-at", step])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert!(line.starts_with("paused at"), "{step}: {line:?}");
        // SIGKILL: no destructor, no flush, no clean close.
        child.kill().unwrap();
        child.wait().unwrap();
        let new = std::fs::read(&pending).unwrap();
        assert_eq!(std::fs::read(&key_file).unwrap(), old, "{step}");

        every_company_signs(&dir, &keys);
        // The start finished the rotation: the new key is the key now.
        assert!(!pending.exists(), "{step}");
        assert_eq!(std::fs::read(&key_file).unwrap(), new, "{step}");
        assert_eq!(mode(&key_file), 0o600);
    }
}

/// Opens a sealed value (`emisor_store::sealing`'s format) with `key`,
/// independently of the store's code: AES-256-GCM, 12-byte nonce, the tag
/// after the ciphertext, the format and key id as associated data.
fn unseal(sealed: &Value, key: &[u8]) -> Vec<u8> {
    assert_eq!(sealed["sealed"], 1, "{sealed}");
    let kid = sealed["key_id"].as_str().unwrap();
    let nonce = B64.decode(sealed["nonce"].as_str().unwrap()).unwrap();
    let data = B64.decode(sealed["ciphertext"].as_str().unwrap()).unwrap();
    let (ct, tag) = data.split_at(data.len() - 16);
    openssl::symm::decrypt_aead(
        openssl::symm::Cipher::aes_256_gcm(),
        key,
        Some(&nonce),
        format!("emisor sealed v1 {kid}").as_bytes(),
        ct,
        tag,
    )
    .unwrap()
}

const CREDENTIAL_TREES: [&str; 4] = [
    "companies",
    "software_registrations",
    "numbering_resolutions",
    "certificates",
];
const SECRET_FIELDS: [&str; 5] = [
    "webhook_secret",
    "pin",
    "technical_key",
    "password",
    "pkcs12_der",
];

/// Every record of the credential trees of a stopped data dir.
fn credential_records(dir: &Path) -> BTreeMap<(String, Vec<u8>), Value> {
    credential_records_in(&sled::open(dir.join("sled")).unwrap())
        .into_iter()
        .collect()
}

#[test]
fn a_store_written_before_sealing_is_migrated_and_still_signs() {
    if !sled_only("it opens a sled data dir written before sealing") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let mut app = TestApp::start_in(&dir, Launch::default().key_file());
    // PINs that cannot occur by chance, to search the files for them below.
    for (tipo, id) in [
        ("facturacion", "software_id"),
        ("nomina", "payroll_software_id"),
    ] {
        let pin = format!("pin-migrated-{tipo}");
        let body = json!({"tipo": tipo, "software_id": app.keys[id], "pin": pin});
        let (status, res) = json(app.admin_post("/admin/companies/1/software", &body));
        assert_eq!(status, 200, "{res}");
    }
    issue_accepted(&app, &app.sk_test(), &examples::invoice());
    app.stop();

    // Write the store as builds from before sealing did: the same records
    // with their secrets in plain text (a PKCS#12 as serde's array of
    // bytes), no key file, and the modes it created (0755 / 0644).
    let key_file = key_file_of(&dir);
    let key = std::fs::read(&key_file).unwrap();
    let mut plain = BTreeMap::new();
    {
        let db = sled::open(dir.join("sled")).unwrap();
        for ((tree, k), mut record) in credential_records_in(&db) {
            for field in SECRET_FIELDS {
                let Some(sealed) = record.get(field).filter(|v| v.is_object()).cloned() else {
                    continue;
                };
                let opened = unseal(&sealed, &key);
                record[field] = if field == "pkcs12_der" {
                    json!(opened)
                } else {
                    json!(String::from_utf8(opened).unwrap())
                };
            }
            let bytes = emisor_store::codec::encode("test", &record).unwrap();
            db.open_tree(&tree).unwrap().insert(&k, bytes).unwrap();
            plain.insert((tree, k), record);
        }
        db.flush().unwrap();
    }
    assert!(plain.values().any(|r| r["pin"].is_string()));
    assert!(plain.values().any(|r| r["pkcs12_der"].is_array()));
    let written_plain = walk(&dir.join("sled"))
        .iter()
        .filter(|p| p.is_file())
        .any(|p| contains(&std::fs::read(p).unwrap(), b"pin-migrated-facturacion"));
    assert!(
        written_plain,
        "the plain PIN is in sled's files before the start"
    );
    std::fs::remove_file(&key_file).unwrap();
    for p in walk(&dir) {
        let m = if p.is_dir() { 0o755 } else { 0o644 };
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(m)).unwrap();
    }

    let mut app = TestApp::start_in(&dir, Launch::default().key_file().capture_log());
    issue_both_kinds(&app, &app.sk_test());
    app.stop();
    let log = app.log();
    assert!(log.contains("a store from before sealed secrets"), "{log}");
    assert_owner_only(&dir);

    // No file keeps the plain secrets, not even in space sled has not
    // reused: the store was copied with them sealed.
    let mut needles: Vec<Vec<u8>> = Vec::new();
    for record in plain.values() {
        for field in SECRET_FIELDS {
            match &record[field] {
                Value::String(s) => needles.push(s.as_bytes().to_vec()),
                Value::Array(_) => {
                    let der: Vec<u8> = serde_json::from_value(record[field].clone()).unwrap();
                    needles.extend(renderings_of_bytes(&der));
                }
                _ => {}
            }
        }
    }
    assert!(needles.len() > 10);
    for path in walk(&dir) {
        if path.is_dir() || path.file_name().is_some_and(|n| n == "demo-keys.json") {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        for needle in &needles {
            let shown = String::from_utf8_lossy(needle);
            assert!(!contains(&bytes, needle), "{shown} in {}", path.display());
        }
    }

    // Every secret sealed under the new key; everything else as it was.
    let new_key = std::fs::read(&key_file).unwrap();
    assert_ne!(new_key, key);
    let migrated = credential_records(&dir);
    for ((tree, k), old) in &plain {
        let now = &migrated[&(tree.clone(), k.clone())];
        for (field, value) in old.as_object().unwrap() {
            if SECRET_FIELDS.contains(&field.as_str()) && !value.is_null() {
                let opened = unseal(&now[field], &new_key);
                let expected = match value {
                    Value::String(s) => s.as_bytes().to_vec(),
                    other => serde_json::from_value::<Vec<u8>>(other.clone()).unwrap(),
                };
                assert_eq!(opened, expected, "{tree}.{field}");
            } else {
                assert_eq!(&now[field], value, "{tree}.{field} changed");
            }
        }
    }
}

/// Every record of the credential trees, as JSON, with its tree and key.
fn credential_records_in(db: &sled::Db) -> Vec<((String, Vec<u8>), Value)> {
    let mut out = Vec::new();
    for tree in CREDENTIAL_TREES {
        for item in db.open_tree(tree).unwrap().iter() {
            let (k, v) = item.unwrap();
            let record: Value = emisor_store::codec::decode("test", &v).unwrap();
            out.push(((tree.to_string(), k.to_vec()), record));
        }
    }
    out
}
