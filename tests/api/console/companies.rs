//! The Companies section in the browser: a certificate uploaded through
//! the file field, a key created (shown once) and revoked after the
//! confirmation, the API then answering 401.

use std::time::Duration;

use super::harness::*;
use crate::admin::pkcs12;
use crate::support::app::*;

#[test]
fn upload_a_certificate() {
    let app = TestApp::spawn();
    let Some(b) = Browser::open(&app) else { return };
    b.sign_in(&app.admin_token());
    b.goto("/console/empresas");
    assert!(b.source().contains("Empresa Demo"), "{}", b.source());
    b.check_page("empresas");

    let files = tempfile::tempdir().unwrap();
    let file = files.path().join("firma.p12");
    std::fs::write(&file, pkcs12(-1, 90)).unwrap();
    b.goto("/console/empresas/1");
    b.check_page("empresa");
    b.fill("#archivo", file.to_str().unwrap());
    b.fill("#clave", "secreto");
    b.click("#certificado button[type=submit]");
    b.wait_until(Duration::from_secs(10), "the certificate's notice", |b| {
        b.text("p.notice").as_deref() == Some("Certificado cargado.")
    });
    assert_eq!(b.path(), "/console/empresas/1");
    let shown = b.text("#certificado").unwrap_or_default();
    assert!(shown.contains("Prueba"), "{shown}");
    assert!(
        shown.contains("89 días") || shown.contains("90 días"),
        "{shown}"
    );
    b.check_page("empresa-certificado");
    let (_, company) = json(app.admin_get("/admin/companies/1"));
    assert_eq!(
        company["data"]["alertas"]["certificado"]["sujeto"], "Prueba",
        "{company}"
    );
}

#[test]
fn create_and_revoke_a_key() {
    let app = TestApp::spawn();
    let Some(b) = Browser::open(&app) else { return };
    b.sign_in(&app.admin_token());
    b.goto("/console/empresas/1");
    b.fill("#k-label", "caja navegador");
    b.click("form[action='/console/empresas/1/llaves'] button[type=submit]");
    b.wait_until(Duration::from_secs(10), "the new key's page", |b| {
        b.text("#nueva-llave").is_some()
    });
    let key = b.text("#nueva-llave").unwrap();
    assert!(key.starts_with("sk_test_"), "{key}");
    b.check_page("llave-creada");
    assert_eq!(
        app.get("/v1/api/clientes?id_empresa=1", &key).status(),
        200,
        "the new key works"
    );

    let (_, keys) = json(app.admin_get("/admin/companies/1/api-keys"));
    let id = keys["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["label"] == "caja navegador")
        .and_then(|k| k["id"].as_u64())
        .unwrap();
    b.goto("/console/empresas/1");
    assert!(!b.source().contains(&key), "never shown again");
    b.click(&format!(
        "form[action='/console/empresas/1/llaves/{id}/revocar'] button"
    ));
    b.accept_alert();
    b.wait_until(Duration::from_secs(10), "the revocation's notice", |b| {
        b.text("p.notice")
            .is_some_and(|t| t.starts_with("Llave revocada"))
    });
    b.check_page("llave-revocada");
    assert_error(
        app.get("/v1/api/clientes?id_empresa=1", &key),
        401,
        "INVALID_API_KEY",
    );
}
