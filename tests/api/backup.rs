//! Backups (issue 53, decisions.md "Data commands"): `emisor admin backup`
//! on a stopped data dir and through `POST /admin/backup` while the server
//! runs, `verify` reading a backup whole, and `restore` into a new data dir
//! whose numberings wait for the operator's confirmation.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use emisor::api::invoice_request::examples;
use serde_json::{json, Value};

use crate::support::app::*;
use crate::support::bodies::unique;
use crate::support::checkers::pdftotext;
use crate::support::external_sim::ExternalSim;
use crate::support::flow::{post_async, sim_mode_at, sim_stats_at, status_of, wait_all, Ws};

fn issue(app: &TestApp, key: &str) -> Value {
    let (status, res) = json(app.post("/v1/api/facturacion", key, &unique(examples::invoice())));
    assert_eq!(status, 200, "{res}");
    res["data"].clone()
}

fn verify(backup: &Path, key: Option<&Path>) -> (bool, Value, String) {
    let b = backup.to_str().unwrap();
    let mut args = vec!["verify", "--from", b];
    let k;
    if let Some(key) = key {
        k = key.to_str().unwrap().to_string();
        args.extend(["--key", &k]);
    }
    let (ok, out, err) = admin_command(backup, &args);
    let report = serde_json::from_str(&out).unwrap_or(Value::Null);
    (ok, report, err)
}

fn key_file(dir: &Path, of: &Path) -> PathBuf {
    let file = dir.join("master.key");
    std::fs::write(&file, master_key_for(of)).unwrap();
    file
}

#[test]
fn a_backup_through_the_admin_api_and_of_a_stopped_data_dir_verifies_and_a_flipped_byte_does_not() {
    if !sled_only("a backup copies the sled data dir; PostgreSQL is backed up with its own tools") {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let allowed = root.path().join("backups");
    std::fs::create_dir(&allowed).unwrap();
    let mut app =
        TestApp::spawn_with(Launch::default().env("EMISOR_BACKUP__DIR", allowed.to_str().unwrap()));
    let issued: Vec<Value> = (0..3).map(|_| issue(&app, &app.sk_test())).collect();

    // Over HTTP: under [backup] dir only. Its outcome reaches the operator.
    let mut operator = Ws::connect_operator(&app, &app.admin_token()).expect("operator socket");
    let (status, res) = json(app.admin_post("/admin/backup", &json!({"destino": "uno"})));
    assert_eq!(status, 201, "{res}");
    let told = operator.wait_for(Duration::from_secs(10), |e| e["event"] == "operador:backup");
    assert_eq!(told["data"]["ok"], true, "{told}");
    assert!(
        told["data"]["destino"].as_str().unwrap().ends_with("uno"),
        "{told}"
    );
    assert_eq!(told["data"]["documentos"], 3, "{told}");
    let d = &res["data"];
    assert_eq!(d["documents"]["facturacion"], 3, "{d}");
    assert!(d["pause_ms"].as_f64().unwrap() >= 0.0, "{d}");
    assert!(d["files"].as_u64().unwrap() > 2, "{d}");
    assert!(
        d["last_document_id"].as_u64().unwrap() >= issued[2]["documento"]["id"].as_u64().unwrap(),
        "{d}"
    );
    let outside = root.path().join("elsewhere");
    // A directory holding something no backup wrote is refused too.
    std::fs::create_dir(allowed.join("otro")).unwrap();
    std::fs::write(allowed.join("otro/notas.txt"), "mine").unwrap();
    for destino in [outside.to_str().unwrap(), "../elsewhere", "otro"] {
        assert_error(
            app.admin_post("/admin/backup", &json!({"destino": destino})),
            422,
            "VALIDATION_ERROR",
        );
    }
    assert!(!outside.exists());
    let uno = allowed.join("uno");
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(uno.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["format"], 1);
    let names: Vec<&str> = manifest["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert!(
        names.iter().any(|n| n.starts_with("data-1/sled/")),
        "{names:?}"
    );
    assert!(
        names.iter().any(|n| n.starts_with("data-1/files/")),
        "{names:?}"
    );
    for left_out in ["demo-keys.json", "listening", "admin-token", "outbox"] {
        assert!(
            !names.iter().any(|n| n.contains(left_out)),
            "{left_out} in {names:?}"
        );
    }

    // The CLI finds the running server by its `listening` file.
    let dos = allowed.join("dos");
    let (ok, out, err) = admin_command(
        &app.dir,
        &[
            "--data-dir",
            app.dir.to_str().unwrap(),
            "backup",
            "--to",
            dos.to_str().unwrap(),
        ],
    );
    assert!(ok, "{err}");
    assert!(out.contains("\"pause_ms\""), "{out}");
    assert!(dos.join("manifest.json").exists());
    let (ok, _, err) = admin_command(
        &app.dir,
        &[
            "--data-dir",
            app.dir.to_str().unwrap(),
            "backup",
            "--to",
            outside.to_str().unwrap(),
        ],
    );
    assert!(!ok && err.contains("[backup] dir"), "{err}");

    // A stopped data dir: opened by the CLI itself, anywhere.
    app.stop();
    let offline = root.path().join("offline");
    let (ok, out, err) = admin_command(
        &app.dir,
        &[
            "--data-dir",
            app.dir.to_str().unwrap(),
            "backup",
            "--to",
            offline.to_str().unwrap(),
        ],
    );
    assert!(ok, "{err}");
    let view: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(view["documents"]["facturacion"], 3, "{view}");

    // verify reads each whole: every signature, and with the key every code.
    let key = key_file(root.path(), &app.dir);
    for backup in [&uno, &dos, &offline] {
        let (ok, report, err) = verify(backup, Some(&key));
        assert!(ok, "{report} {err}");
        assert_eq!(report["documents"], 3, "{report}");
        assert_eq!(report["signatures_verified"], 3, "{report}");
        assert_eq!(report["codes_recomputed"], 3, "{report}");
        assert_eq!(report["problems"], json!([]), "{report}");
    }
    let (ok, report, _) = verify(&uno, None);
    assert!(ok, "{report}");
    assert_eq!(report["codes_not_recomputed"], 3, "{report}");
    let wrong = root.path().join("wrong.key");
    std::fs::write(&wrong, [7u8; 32]).unwrap();
    let (ok, report, _) = verify(&uno, Some(&wrong));
    assert!(!ok, "{report}");

    // One flipped byte in any file fails it.
    let files: Vec<String> = manifest["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["bytes"].as_u64().unwrap() > 0)
        .map(|f| f["path"].as_str().unwrap().to_string())
        .collect();
    for (i, name) in files.iter().enumerate() {
        let copy = root.path().join(format!("flipped-{i}"));
        copy_dir(&uno, &copy);
        let path = copy.join(name);
        let mut bytes = std::fs::read(&path).unwrap();
        let at = bytes.len() / 2;
        bytes[at] ^= 0x01;
        std::fs::write(&path, bytes).unwrap();
        let (ok, report, err) = verify(&copy, None);
        assert!(!ok, "{name}: {report}");
        assert!(err.contains("problems"), "{err}");
        assert!(
            report["problems"].to_string().contains(name.as_str()),
            "{name}: {report}"
        );
        std::fs::remove_dir_all(&copy).unwrap();
    }

    // No manifest (a backup killed before it was written): not a backup.
    std::fs::remove_file(offline.join("manifest.json")).unwrap();
    let (ok, _, err) = verify(&offline, None);
    assert!(!ok && err.contains("not a complete backup"), "{err}");
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Every read endpoint of a document, as bytes.
fn reads(app: &TestApp, key: &str, id: u64) -> Vec<(String, Vec<u8>)> {
    ["status?id_empresa=1", "xml", "zip", "pdf"]
        .iter()
        .map(|what| {
            let path = format!("/v1/api/facturacion/{id}/{what}");
            let res = app.get(&path, key);
            assert_eq!(res.status().as_u16(), 200, "{path}");
            (path, res.bytes().unwrap().to_vec())
        })
        .collect()
}

/// The lists of the unified API's families.
fn lists(app: &TestApp, key: &str) -> Vec<(String, Vec<u8>)> {
    [
        "/v1/api/facturacion?limit=100",
        "/v1/api/documentos-soporte?limit=100",
        "/v1/api/pos?limit=100",
    ]
    .iter()
    .map(|path| {
        let res = app.get(path, key);
        assert_eq!(res.status().as_u16(), 200, "{path}");
        (path.to_string(), res.bytes().unwrap().to_vec())
    })
    .collect()
}

#[test]
fn a_restored_data_dir_serves_the_backup_point_and_issues_after_the_operator_confirms_the_next_number(
) {
    if !sled_only("a backup copies the sled data dir; PostgreSQL is backed up with its own tools") {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let allowed = root.path().join("backups");
    std::fs::create_dir(&allowed).unwrap();
    let mut app =
        TestApp::spawn_with(Launch::default().env("EMISOR_BACKUP__DIR", allowed.to_str().unwrap()));
    let key = app.sk_test();
    let mut before: Vec<u64> = (0..2)
        .map(|_| issue(&app, &key)["documento"]["id"].as_u64().unwrap())
        .collect();
    // A draft, a support document and a POS receipt beside the invoices.
    let mut draft = examples::invoice();
    draft["transmit"] = json!(false);
    for body in [draft, examples::support_document(), examples::pos()] {
        let (status, res) = json(app.post("/v1/api/facturacion", &key, &unique(body)));
        assert_eq!(status, 200, "{res}");
        before.push(res["data"]["documento"]["id"].as_u64().unwrap());
    }
    let referenced = {
        let mut body = unique(examples::invoice());
        body["referencia_externa"] = json!("REF-BACKUP-1");
        let (status, res) = json(app.post("/v1/api/facturacion", &key, &body));
        assert_eq!(status, 200, "{res}");
        res["data"]["documento"]["id"].as_u64().unwrap()
    };
    let (status, res) = json(app.admin_post("/admin/backup", &json!({"destino": "punto"})));
    assert_eq!(status, 201, "{res}");
    let answered: Vec<_> = before
        .iter()
        .chain([&referenced])
        .flat_map(|id| reads(&app, &key, *id))
        .chain(lists(&app, &key))
        .collect();
    let after = issue(&app, &key);
    let (_, consecutivo) = json(app.get("/v1/api/facturacion/consecutivo/fe", &key));
    let original_next = consecutivo["data"]["siguiente"].as_u64().unwrap();
    app.stop();

    let restored = root.path().join("restored");
    let (ok, out, err) = admin_command(
        &app.dir,
        &[
            "restore",
            "--from",
            allowed.join("punto").to_str().unwrap(),
            "--data-dir",
            restored.to_str().unwrap(),
        ],
    );
    assert!(ok, "{err}");
    let report: Value = serde_json::from_str(&out).unwrap();
    assert!(
        !report["numbering_hold"]["held"]
            .as_array()
            .unwrap()
            .is_empty(),
        "{report}"
    );
    assert!(!restored.join("demo-keys.json").exists());

    let mut back = TestApp::start_in(
        &restored,
        Launch::default().env(MASTER_KEY_ENV, &master_key_env(&app.dir)),
    );
    // No demo-keys.json in a backup: the same keys open it (their hashes are in the store).
    back.keys = app.keys.clone();
    let served: Vec<_> = before
        .iter()
        .chain([&referenced])
        .flat_map(|id| reads(&back, &key, *id))
        .chain(lists(&back, &key))
        .collect();
    assert_eq!(served.len(), answered.len());
    for ((path, a), (_, b)) in answered.iter().zip(&served) {
        if path.ends_with("/pdf") {
            // A PDF carries its rendering's date and id: its text is compared.
            assert_eq!(
                pdftotext(a),
                pdftotext(b),
                "{path} differs after the restore"
            );
        } else {
            assert!(a == b, "{path} differs after the restore");
        }
    }
    // Issued after the point: not there.
    let after_id = after["documento"]["id"].as_u64().unwrap();
    assert_eq!(
        back.get(
            &format!("/v1/api/facturacion/{after_id}/status?id_empresa=1"),
            &key
        )
        .status()
        .as_u16(),
        404
    );
    // The reference is still taken.
    let mut again = unique(examples::invoice());
    again["referencia_externa"] = json!("REF-BACKUP-1");
    let (status, res) = json(back.post("/v1/api/facturacion", &key, &again));
    assert_eq!(status, 409, "{res}");

    // Nothing is numbered until the operator confirms the next number.
    let res = back.post("/v1/api/facturacion", &key, &unique(examples::invoice()));
    let body = assert_error(res, 409, "INVALID_STATE");
    assert!(
        body["message"].as_str().unwrap().contains("confirm"),
        "{body}"
    );
    let (status, hold) = json(back.admin_get("/admin/numeraciones-retenidas"));
    assert_eq!(status, 200, "{hold}");
    let setp = hold["data"]["held"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["prefix"] == "SETP")
        .cloned()
        .unwrap_or_else(|| panic!("{hold}"));
    assert_eq!(setp["next"].as_u64().unwrap(), original_next - 1, "{hold}");
    let confirm = format!(
        "/admin/companies/{}/resoluciones/{}/confirmar",
        setp["company_id"], setp["resolution_id"]
    );
    assert_error(
        back.admin_post(&confirm, &json!({})),
        422,
        "VALIDATION_ERROR",
    );
    assert_error(
        back.admin_post(&confirm, &json!({"siguiente": original_next - 2})),
        409,
        "CONFLICT",
    );
    let (status, res) = json(back.admin_post(&confirm, &json!({"siguiente": original_next})));
    assert_eq!(status, 200, "{res}");
    let next = issue(&back, &key);
    assert_eq!(
        next["documento"]["numero"].as_str().unwrap(),
        original_next.to_string(),
        "{next}"
    );
}

#[test]
fn a_document_queued_at_the_backup_asks_the_authority_after_the_restore_and_is_accepted_once() {
    if !sled_only("a backup copies the sled data dir; PostgreSQL is backed up with its own tools") {
        return;
    }
    let sim = ExternalSim::start();
    let root = tempfile::tempdir().unwrap();
    let allowed = root.path().join("backups");
    std::fs::create_dir(&allowed).unwrap();
    let launch = Launch::default()
        .env("EMISOR_AUTHORITY__URL", &sim.service_url())
        .env("EMISOR_RESILIENCE__TIME_SCALE", "0.1")
        .env("EMISOR_RATE_LIMIT__REQUESTS_PER_MINUTE", "100000")
        .env("EMISOR_BACKUP__DIR", allowed.to_str().unwrap());
    let mut app = TestApp::spawn_with(launch.clone());
    // The authority away: the documents wait in the queue at the backup.
    sim_mode_at(&sim.base, json!({"mode": "down"}));
    let docs: Vec<(u64, String)> = (0..3)
        .map(|_| {
            let res = post_async(&app, &examples::invoice());
            (
                res["data"]["documento"]["id"].as_u64().unwrap(),
                res["data"]["cufe"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let ids: Vec<u64> = docs.iter().map(|(id, _)| *id).collect();
    let (status, res) = json(app.admin_post("/admin/backup", &json!({"destino": "cola"})));
    assert_eq!(status, 201, "{res}");
    // The original sends them once the authority is back, after the point.
    sim_mode_at(&sim.base, json!({"mode": "up"}));
    wait_all(&app, &ids, 2, Duration::from_secs(40));
    app.stop();
    let sent_before = sim_stats_at(&sim.base);

    let restored = root.path().join("restored");
    let (ok, out, err) = admin_command(
        &app.dir,
        &[
            "restore",
            "--from",
            allowed.join("cola").to_str().unwrap(),
            "--data-dir",
            restored.to_str().unwrap(),
        ],
    );
    assert!(ok, "{err}");
    let report: Value = serde_json::from_str(&out).unwrap();
    assert!(
        report["jobs_marked_in_flight"].as_u64().unwrap() >= 1,
        "{report}"
    );
    // A test set the original had not numbered from at the backup is held
    // too: it may have begun one since.
    let held = report["numbering_hold"]["held"].as_array().unwrap();
    for prefix in ["SETP", "SEDS", "EPOS"] {
        assert!(
            held.iter().any(|n| n["prefix"] == prefix),
            "{prefix}: {report}"
        );
    }
    let mut back = TestApp::start_in(
        &restored,
        launch.env(MASTER_KEY_ENV, &master_key_env(&app.dir)),
    );
    back.keys = app.keys.clone();
    // Queued in the copy: each asks the authority, which has it already.
    wait_all(&back, &ids, 2, Duration::from_secs(40));
    let stats = sim_stats_at(&sim.base);
    for (id, code) in &docs {
        assert_eq!(status_of(&back, *id)["cufe"], code.as_str());
        assert_eq!(
            stats["accepted"][code]["received"], 1,
            "document {id} reached the authority once: {stats}"
        );
    }
    assert!(
        stats["calls"]["GetStatus"].as_u64().unwrap_or(0)
            > sent_before["calls"]["GetStatus"].as_u64().unwrap_or(0),
        "{stats}"
    );
}

#[test]
fn scheduled_backups_keep_the_newest_and_report_in_metrics() {
    if !sled_only("a backup copies the sled data dir; PostgreSQL is backed up with its own tools") {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let allowed = root.path().join("backups");
    std::fs::create_dir(&allowed).unwrap();
    let mut app = TestApp::spawn_with(
        Launch::default()
            .env("EMISOR_BACKUP__DIR", allowed.to_str().unwrap())
            .env("EMISOR_BACKUP__INTERVAL_S", "1")
            .env("EMISOR_BACKUP__KEEP", "2"),
    );
    issue(&app, &app.sk_test());
    let complete = || -> Vec<PathBuf> {
        let mut all: Vec<PathBuf> = std::fs::read_dir(&allowed)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.join("manifest.json").exists())
            .collect();
        all.sort();
        all
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let mut seen = std::collections::BTreeSet::new();
    while seen.len() < 4 {
        assert!(std::time::Instant::now() < deadline, "{seen:?}");
        let now = complete();
        // `keep` 2, and the newest one between its manifest and the pruning.
        assert!(now.len() <= 3, "more than `keep` backups kept: {now:?}");
        seen.extend(now);
        std::thread::sleep(Duration::from_millis(100));
    }
    let metrics = app
        .client
        .get(format!("{}/metrics", app.url))
        .send()
        .unwrap()
        .text()
        .unwrap();
    for name in [
        "emisor_backup_last_success_timestamp_seconds",
        "emisor_backup_last_bytes",
        "emisor_backup_last_duration_seconds",
        "emisor_backup_last_pause_seconds",
    ] {
        let line = metrics
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("{name} missing"));
        let value: f64 = line.rsplit(' ').next().unwrap().parse().unwrap();
        assert!(value > 0.0 || name.ends_with("pause_seconds"), "{line}");
    }
    let first_two: Vec<&PathBuf> = seen.iter().take(2).collect();
    assert!(first_two.iter().all(|p| !p.exists()), "{first_two:?} kept");
    app.stop();
    // Each follows the one before: the log files linked, only the engine's
    // trees (and what the logs grew by) copied; every one kept verifies.
    let kept = complete();
    let newest = kept.last().unwrap();
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(newest.join("manifest.json")).unwrap()).unwrap();
    assert!(!manifest["follows"].is_null(), "{manifest}");
    assert!(
        manifest["copied_bytes"].as_u64().unwrap() < manifest["bytes"].as_u64().unwrap(),
        "{manifest}"
    );
    for backup in &kept {
        let (ok, report, err) = verify(backup, None);
        assert!(ok, "{} {report} {err}", backup.display());
        assert_eq!(report["documents"], 1, "{report}");
    }
}

/// `kill -9` at any moment of a backup: the destination either has its
/// manifest and verifies, or has none and `verify` refuses it; a new backup
/// into it then completes.
#[test]
fn a_backup_killed_at_any_moment_is_complete_and_verifies_or_is_refused() {
    if !sled_only("a backup copies the sled data dir; PostgreSQL is backed up with its own tools") {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let mut app = TestApp::spawn();
    for _ in 0..5 {
        issue(&app, &app.sk_test());
    }
    app.stop();
    let data = app.dir.to_str().unwrap().to_string();
    let mut refused = 0;
    for (i, after_ms) in [0u64, 2, 5, 10, 20, 40, 80, 160].into_iter().enumerate() {
        let to = root.path().join(format!("killed-{i}"));
        let mut child = Command::new(BIN)
            .args([
                "admin",
                "--data-dir",
                &data,
                "backup",
                "--to",
                to.to_str().unwrap(),
            ])
            .env(MASTER_KEY_ENV, master_key_env(&app.dir))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(after_ms));
        let _ = child.kill();
        let _ = child.wait();
        let (ok, report, err) = verify(&to, None);
        if to.join("manifest.json").exists() {
            assert!(ok, "{after_ms} ms: complete but {report} {err}");
        } else {
            refused += 1;
            assert!(!ok, "{after_ms} ms: {report}");
            // A new backup replaces the interrupted one.
            let (ok, _, err) = admin_command(
                &app.dir,
                &["--data-dir", &data, "backup", "--to", to.to_str().unwrap()],
            );
            assert!(ok, "{err}");
            let (ok, report, err) = verify(&to, None);
            assert!(ok, "{report} {err}");
        }
    }
    assert!(refused > 0, "every backup finished before its kill");
}

/// A second backup into the same directory follows the first: the engine's
/// copy anew, the logs' earlier bytes linked, only what they grew by
/// written; the earlier copy is gone and the new one verifies whole.
#[test]
fn a_second_backup_into_the_same_directory_copies_only_what_grew() {
    if !sled_only("a backup copies the sled data dir; PostgreSQL is backed up with its own tools") {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let allowed = root.path().join("backups");
    std::fs::create_dir(&allowed).unwrap();
    let mut app =
        TestApp::spawn_with(Launch::default().env("EMISOR_BACKUP__DIR", allowed.to_str().unwrap()));
    for _ in 0..3 {
        issue(&app, &app.sk_test());
    }
    let (status, first) = json(app.admin_post("/admin/backup", &json!({"destino": "diaria"})));
    assert_eq!(status, 201, "{first}");
    for _ in 0..2 {
        issue(&app, &app.sk_test());
    }
    let (status, second) = json(app.admin_post("/admin/backup", &json!({"destino": "diaria"})));
    assert_eq!(status, 201, "{second}");
    app.stop();
    let dir = allowed.join("diaria");
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["data"], "data-2", "{manifest}");
    assert!(!manifest["follows"].is_null(), "{manifest}");
    assert!(!dir.join("data-1").exists());
    let log_bytes = |m: &Value| -> u64 {
        m["files"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["path"].as_str().unwrap().contains("/files/"))
            .map(|f| f["bytes"].as_u64().unwrap())
            .sum()
    };
    let sled_bytes: u64 = manifest["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["path"].as_str().unwrap().contains("/sled/"))
        .map(|f| f["bytes"].as_u64().unwrap())
        .sum();
    let first_logs = first["data"]["bytes"].as_u64().unwrap();
    let copied = manifest["copied_bytes"].as_u64().unwrap();
    // The engine's copy, and the file log's growth: less than its whole.
    assert!(
        copied < sled_bytes + log_bytes(&manifest),
        "copied {copied}, sled {sled_bytes}, logs {} (first backup {first_logs})",
        log_bytes(&manifest)
    );
    let key = key_file(root.path(), &app.dir);
    let (ok, report, err) = verify(&dir, Some(&key));
    assert!(ok, "{report} {err}");
    assert_eq!(report["documents"], 5, "{report}");
    assert_eq!(report["codes_recomputed"], 5, "{report}");
}
