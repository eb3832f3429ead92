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
