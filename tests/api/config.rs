//! Config precedence (file < env < flag) and unknown keys, on the real binary.

use std::process::Command;

use crate::support::app::*;

#[test]
fn file_then_environment_then_flags() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("emisor.toml");
    std::fs::write(
        &file,
        "[server]\nbind = \"127.0.0.1:1\"\n[rate_limit]\nrequests_per_minute = 7\n",
    )
    .unwrap();
    let path = file.to_str().unwrap();

    // File alone: its limit applies (its bind is overridden by the --bind flag).
    let app = TestApp::spawn_with(Launch::default().arg("--config").arg(path));
    let (_, body) = json(app.get("/v1/api/api-keys/test", &app.sk_test()));
    assert_eq!(body["data"]["limite_por_minuto"], 7);
    drop(app);

    // The environment beats the file; the flag beats the environment's bind.
    let app = TestApp::spawn_with(
        Launch::default()
            .arg("--config")
            .arg(path)
            .env("EMISOR_RATE_LIMIT__REQUESTS_PER_MINUTE", "9")
            .env("EMISOR_SERVER__BIND", "127.0.0.1:2"),
    );
    let (_, body) = json(app.get("/v1/api/api-keys/test", &app.sk_test()));
    assert_eq!(body["data"]["limite_por_minuto"], 9);
    assert!(!app.url.ends_with(":2"));
}

#[test]
fn unknown_keys_stop_the_start_naming_the_key() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("bad.toml");
    std::fs::write(&file, "[rate_limit]\nrequests_per_minut = 7\n").unwrap();
    let out = Command::new(BIN)
        .args([
            "serve",
            "--bind",
            "127.0.0.1:0",
            "--config",
            file.to_str().unwrap(),
            "--data-dir",
        ])
        .arg(tmp.path().join("data"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("requests_per_minut"), "{err}");

    let out = Command::new(BIN)
        .args(["serve", "--bind", "127.0.0.1:0", "--data-dir"])
        .arg(tmp.path().join("data"))
        .env("EMISOR_SERVER__BINDD", "x")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("bindd"));
}

/// `[store] pool_size` and `threads`: a bad value stops the start naming
/// them; on PostgreSQL the node opens at most `pool_size` connections and
/// issues on `threads` store threads.
#[test]
fn the_stores_pool_size_and_threads_are_checked_and_used() {
    let tmp = tempfile::tempdir().unwrap();
    for (pool, threads, named) in [
        ("24", "0", "store.threads"),
        ("8", "16", "store.pool_size"),
        ("0", "1", "store.pool_size"),
        ("many", "16", "pool_size"),
    ] {
        let out = Command::new(BIN)
            .args(["serve", "--bind", "127.0.0.1:0", "--data-dir"])
            .arg(tmp.path().join("data"))
            .env("EMISOR_STORE__POOL_SIZE", pool)
            .env("EMISOR_STORE__THREADS", threads)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{pool}/{threads} started");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(named) && !err.contains("panicked"),
            "{pool}/{threads}: {err}"
        );
    }

    let app = TestApp::spawn_with(
        Launch::default()
            .env("EMISOR_STORE__POOL_SIZE", "6")
            .env("EMISOR_STORE__THREADS", "3"),
    );
    let key = app.sk_test();
    std::thread::scope(|s| {
        for _ in 0..6 {
            s.spawn(|| {
                let body = crate::support::bodies::unique(
                    emisor::api::invoice_request::examples::invoice(),
                );
                let (status, res) = json(app.post("/v1/api/facturacion", &key, &body));
                assert_eq!(status, 200, "{res}");
            });
        }
    });
    if on_postgres() {
        let url = store_env(&app.dir)
            .into_iter()
            .find(|(k, _)| k == "EMISOR_STORE__URL")
            .unwrap()
            .1;
        let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
        // The pool's: the sessions a node keeps out of its pool (leases,
        // the event listener, the start-up lock) are named `emisor …`. A
        // session a node closed may still be exiting on the server: asked
        // again for a few seconds before it counts.
        let count = |client: &mut postgres::Client| -> (i64, Vec<(String, String)>) {
            let rows = client
                .query(
                    "SELECT application_name, coalesce(left(query, 60), '') FROM pg_stat_activity \
                     WHERE datname = current_database() AND pid <> pg_backend_pid()",
                    &[],
                )
                .unwrap();
            let all: Vec<(String, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
            let pool = all
                .iter()
                .filter(|(name, _)| !name.starts_with("emisor "))
                .count();
            (pool as i64, all)
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let (mut open, mut all) = count(&mut client);
        while !(1..=6).contains(&open) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(100));
            (open, all) = count(&mut client);
        }
        assert!(
            (1..=6).contains(&open),
            "the node's connections: {open} of {all:?}"
        );
    }
}
