//! The store on PostgreSQL going away and coming back: new work is
//! answered 503 `STORE_UNAVAILABLE` with `Retry-After`, `/readyz` says the
//! store is the cause, and the node recovers by itself once the database
//! takes connections again, numbering on without a gap. Runs on the
//! PostgreSQL runs of the suite only (`TEST_STORE_ENGINE=postgres`).

use emisor::api::invoice_request::examples;
use serde_json::{json, Value};

use crate::support::app::*;
use crate::support::bodies::unique;

fn issue(app: &TestApp) -> (u16, Value) {
    json(app.post(
        "/v1/api/facturacion",
        &app.sk_test(),
        &unique(examples::invoice()),
    ))
}

fn number(data: &Value) -> u64 {
    data["documento"]["numero"]
        .as_str()
        .and_then(|n| n.trim_start_matches(char::is_alphabetic).parse().ok())
        .or_else(|| data["documento"]["numero"].as_u64())
        .unwrap_or_else(|| panic!("no number in {data}"))
}

#[test]
fn a_node_that_loses_its_database_answers_503_and_recovers_by_itself() {
    if !on_postgres() {
        eprintln!("skipped: the store is sled in this run (TEST_STORE_ENGINE=postgres runs it)");
        return;
    }
    let app = TestApp::spawn();
    let (status, first) = issue(&app);
    assert_eq!(status, 200, "{first}");

    // The database refuses new connections and drops the node's.
    database_admin(&app.dir, false);
    let res = app.post(
        "/v1/api/facturacion",
        &app.sk_test(),
        &unique(examples::invoice()),
    );
    assert_eq!(res.status().as_u16(), 503);
    assert!(res.headers().get("retry-after").is_some());
    let body = assert_error(res, 503, "STORE_UNAVAILABLE");
    assert!(!body.to_string().contains("emisor_api_"), "{body}");
    let (ready, readiness) = json(
        app.client
            .get(format!("{}/readyz", app.url))
            .send()
            .unwrap(),
    );
    assert_eq!(ready, 503, "{readiness}");
    let store = readiness["data"]["store"].as_str().unwrap_or_default();
    assert!(store.contains("unavailable"), "{readiness}");
    assert!(!readiness.to_string().contains("password"), "{readiness}");

    // Back: ready again without a restart, and the refused request took no number.
    database_admin(&app.dir, true);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let res = app
            .client
            .get(format!("{}/readyz", app.url))
            .send()
            .unwrap();
        if res.status().as_u16() == 200 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "not ready again in 60 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let (status, second) = issue(&app);
    assert_eq!(status, 200, "{second}");
    assert_eq!(
        number(&second["data"]),
        number(&first["data"]) + 1,
        "no gap: {first} {second}"
    );
}

/// Backups on PostgreSQL are PostgreSQL's own: one asked is refused saying
/// so, none is scheduled (start-up says that once, and the console's
/// backups section), and an export still reads the running store.
#[test]
fn a_backup_asked_of_a_postgresql_store_says_to_use_postgresqls_tools_and_none_is_scheduled() {
    if !on_postgres() {
        eprintln!("skipped: the store is sled in this run (TEST_STORE_ENGINE=postgres runs it)");
        return;
    }
    let allowed = tempfile::tempdir().unwrap();
    let app = TestApp::spawn_with(
        Launch::default()
            .env("EMISOR_BACKUP__DIR", allowed.path().to_str().unwrap())
            .env("EMISOR_BACKUP__INTERVAL_S", "1")
            .capture_log(),
    );
    let body = assert_error(
        app.admin_post("/admin/backup", &json!({"destino": "uno"})),
        409,
        "CONFLICT",
    );
    assert!(
        body["message"].as_str().unwrap().contains("pg_basebackup"),
        "{body}"
    );
    let (status, body) = json(app.admin_post("/admin/export", &json!({"destino": "datos.jsonl"})));
    assert_eq!(status, 201, "{body}");
    assert!(allowed.path().join("datos.jsonl").is_file());

    // Said once at start; three intervals later nothing was tried.
    let said = "scheduled backups ([backup] interval_s) do not run on PostgreSQL";
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !app.log().contains(said) {
        assert!(std::time::Instant::now() < deadline, "{}", app.log());
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_secs(3));
    let log = app.log();
    assert_eq!(log.matches(said).count(), 1, "{log}");
    assert!(log.contains("WARN"), "{log}");
    assert!(!log.contains("scheduled backup failed"), "{log}");
    let left: Vec<_> = std::fs::read_dir(allowed.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, vec![std::ffi::OsString::from("datos.jsonl")]);

    // `emisor admin backup` without a server says the same and makes no
    // directory.
    let wanted = allowed.path().join("por-linea");
    let out = std::process::Command::new(BIN)
        .args(["admin", "--data-dir"])
        .arg(allowed.path().join("sin-servidor"))
        .args(["backup", "--to"])
        .arg(&wanted)
        .env(MASTER_KEY_ENV, master_key_env(&app.dir))
        .envs(store_env(&app.dir))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("pg_basebackup"),
        "{err}"
    );
    assert!(!wanted.exists());

    // The console's backups section says the same, with no button to press.
    let admin = crate::console::harness::http_sign_in(&app, &app.admin_token()).unwrap();
    let (status, html) = crate::console::harness::page(&app, &admin, "/console/empresas");
    assert_eq!(status, 200);
    assert!(html.contains("pg_basebackup"), "{html}");
    assert!(!html.contains("Hacer una copia ahora"), "{html}");
}

#[test]
fn a_sled_data_dir_migrates_into_postgresql_and_serves_there() {
    if !on_postgres() {
        eprintln!("skipped: the store is sled in this run (TEST_STORE_ENGINE=postgres runs it)");
        return;
    }
    // A sled server, whatever the run's engine.
    let mut old = TestApp::spawn_with(Launch::default().env("EMISOR_STORE__ENGINE", "sled"));
    let key = old.sk_test();
    let (status, issued) = issue(&old);
    assert_eq!(status, 200, "{issued}");
    let id = issued["data"]["documento"]["id"]
        .as_u64()
        .expect("the document's id");
    old.stop();

    // Into the database of another dir, under the old dir's master key.
    let new = tempfile::tempdir().unwrap();
    let url = store_env(new.path())
        .into_iter()
        .find(|(k, _)| k == "EMISOR_STORE__URL")
        .map(|(_, v)| v)
        .unwrap();
    let from = old.dir.to_str().unwrap();
    let (ok, out, err) = admin_command(
        &old.dir,
        &["migrate", "--from-data-dir", from, "--to", &url],
    );
    assert!(ok, "{err}");
    assert!(
        !out.contains("emisor_ci:"),
        "the URL is never printed: {out}"
    );
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["import"]["documents"], 1, "{report}");
    assert!(!old.dir.with_extension("migrate.jsonl").exists());
    // Into a database that holds records: refused, nothing changed.
    let (ok, _, err) = admin_command(
        &old.dir,
        &["migrate", "--from-data-dir", from, "--to", &url],
    );
    assert!(!ok && err.contains("already holds records"), "{err}");

    let app = TestApp::start_in(
        new.path(),
        Launch::default().env(MASTER_KEY_ENV, &master_key_env(&old.dir)),
    );
    let (status, doc) = json(app.get(
        &format!("/v1/api/facturacion/{id}/status?id_empresa=1"),
        &key,
    ));
    assert_eq!(status, 200, "{doc}");
    let token = old.admin_token();
    let held = app
        .client
        .get(format!("{}/admin/numeraciones-retenidas", app.url))
        .bearer_auth(token)
        .send()
        .unwrap();
    let (status, held) = json(held);
    assert_eq!(status, 200, "{held}");
    assert!(
        held["data"]["held"]
            .as_array()
            .is_some_and(|h| !h.is_empty()),
        "{held}"
    );
}
