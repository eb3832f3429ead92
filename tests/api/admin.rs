use base64::Engine;
use openssl::asn1::Asn1Time;
use openssl::hash::MessageDigest;
use openssl::pkcs12::Pkcs12;
use openssl::pkey::PKey;
use openssl::rsa::Rsa;
use openssl::x509::{X509NameBuilder, X509};
use serde_json::{json, Value};

use crate::support::app::*;

/// A PKCS#12 whose certificate is valid from `from_days` to `to_days` around now.
pub fn pkcs12(from_days: i64, to_days: i64) -> Vec<u8> {
    let key = PKey::from_rsa(Rsa::generate(2048).unwrap()).unwrap();
    let mut name = X509NameBuilder::new().unwrap();
    name.append_entry_by_text("CN", "Prueba").unwrap();
    let name = name.build();
    let now = chrono::Utc::now().timestamp();
    let mut b = X509::builder().unwrap();
    b.set_version(2).unwrap();
    b.set_subject_name(&name).unwrap();
    b.set_issuer_name(&name).unwrap();
    b.set_pubkey(&key).unwrap();
    b.set_not_before(&Asn1Time::from_unix(now + from_days * 86_400).unwrap())
        .unwrap();
    b.set_not_after(&Asn1Time::from_unix(now + to_days * 86_400).unwrap())
        .unwrap();
    b.sign(&key, MessageDigest::sha256()).unwrap();
    let cert = b.build();
    Pkcs12::builder()
        .name("prueba")
        .pkey(&key)
        .cert(&cert)
        .build2("secreto")
        .unwrap()
        .to_der()
        .unwrap()
}

#[test]
fn certificate_import_refuses_expired_and_future_certificates() {
    let app = TestApp::spawn();
    let b64 = |der: Vec<u8>| base64::engine::general_purpose::STANDARD.encode(der);
    let body = assert_error(
        app.admin_post(
            "/admin/companies/1/certificado",
            &json!({"pkcs12_base64": b64(pkcs12(-30, -1)), "password": "secreto"}),
        ),
        422,
        "VALIDATION_ERROR",
    );
    assert!(
        body["message"].as_str().unwrap().contains("expired"),
        "{body}"
    );
    let body = assert_error(
        app.admin_post(
            "/admin/companies/1/certificado",
            &json!({"pkcs12_base64": b64(pkcs12(2, 30)), "password": "secreto"}),
        ),
        422,
        "VALIDATION_ERROR",
    );
    assert!(
        body["message"].as_str().unwrap().contains("not valid yet"),
        "{body}"
    );
    assert_error(
        app.admin_post(
            "/admin/companies/1/certificado",
            &json!({"pkcs12_base64": b64(pkcs12(-1, 30)), "password": "wrong"}),
        ),
        422,
        "VALIDATION_ERROR",
    );
    let (status, ok) = json(app.admin_post(
        "/admin/companies/1/certificado",
        &json!({"pkcs12_base64": b64(pkcs12(-1, 30)), "password": "secreto"}),
    ));
    assert_eq!(status, 200, "{ok}");
    assert_eq!(ok["data"]["sujeto"], "Prueba");
}

#[test]
fn admin_http_provisions_software_resolutions_and_demo_companies() {
    let app = TestApp::spawn();
    let (status, demo) = json(app.admin_post(
        "/admin/companies",
        &json!({"nit": "800197268", "razon_social": "Sandbox Dos", "demo": true}),
    ));
    assert_eq!(status, 201, "{demo}");
    let d = &demo["data"];
    // The demo-keys.json shape (decisions.md §5).
    for field in [
        "id_empresa",
        "nit",
        "sk_test",
        "sk_live",
        "admin_token",
        "tax_sim_url",
        "software_id",
        "software_pin",
        "payroll_software_id",
        "payroll_software_pin",
        "test_set_id",
        "resoluciones",
    ] {
        assert!(!d[field].is_null(), "missing {field}: {d}");
    }
    // Each numbering once per type it serves, the test set first
    // (decisions.md §5 "Numbering in the testing environment").
    let entries: Vec<(u64, &str, bool)> = d["resoluciones"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["id_tipo_documento"].as_u64().unwrap(),
                r["prefijo"].as_str().unwrap(),
                r["set_de_pruebas"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        entries,
        [
            (1, "SETP", true),
            (1, "FE", false),
            (2, "NC", false),
            (3, "ND", false),
            (4, "SEDS", true),
            (4, "DS", false),
            (5, "NDS", false),
            (6, "SETP", true),
            (6, "FE", false),
            (7, "CONT", false),
            (8, "SETP", true),
            (8, "FE", false),
            (9, "EPOS", true),
            (9, "POS", false),
            (10, "NAP", false),
            (11, "NOM", false),
        ],
        "all 10 types and payroll"
    );
    assert_eq!(d["resoluciones"][0]["prefijo"], "SETP");
    assert_eq!(d["resoluciones"][0]["desde"], 990000000);
    assert_eq!(
        d["resoluciones"][0]["clave_tecnica"],
        "fc8eac422eba16e22ffd8c6f94b3f40a6e38162c"
    );
    let own_invoice_key = d["resoluciones"][1]["clave_tecnica"].as_str().unwrap();
    assert_eq!(own_invoice_key.len(), 40);
    assert_eq!(
        d["resoluciones"][8]["clave_tecnica"], own_invoice_key,
        "one range for invoices, exports and T04"
    );
    let id = d["id_empresa"].as_u64().unwrap();

    let (status, sw) = json(app.admin_post(
        &format!("/admin/companies/{id}/software"),
        &json!({"tipo": "facturacion", "software_id": "abc", "pin": "12345"}),
    ));
    assert_eq!(status, 200, "{sw}");
    let (status, res) = json(app.admin_post(
        &format!("/admin/companies/{id}/resoluciones"),
        &json!({"id_tipo_documento": 1, "numero_resolucion": "18764000001", "fecha_resolucion": "2024-01-01",
                "prefijo": "FE", "desde": 1, "hasta": 5000, "vigencia_desde": "2024-01-01",
                "vigencia_hasta": "2026-12-31", "clave_tecnica": "ABCDEF"}),
    ));
    assert_eq!(status, 201, "{res}");
    assert_eq!(res["data"]["siguiente"], 1);
    assert_eq!(res["data"]["tipos_adicionales"], json!([]));
    // One resolution for invoices, exports and T04; other types do not
    // share one.
    let shared = json!({"id_tipo_documento": 1, "numero_resolucion": "18764000002",
        "fecha_resolucion": "2024-01-01", "prefijo": "FV", "desde": 1, "hasta": 5000,
        "vigencia_desde": "2024-01-01", "vigencia_hasta": "2026-12-31", "clave_tecnica": "ABCDEF",
        "tipos_adicionales": [6, 8]});
    let (status, res) =
        json(app.admin_post(&format!("/admin/companies/{id}/resoluciones"), &shared));
    assert_eq!(status, 201, "{res}");
    assert_eq!(res["data"]["tipos_adicionales"], json!([6, 8]));
    let mut mixed = shared.clone();
    mixed["tipos_adicionales"] = json!([2]);
    assert_error(
        app.admin_post(&format!("/admin/companies/{id}/resoluciones"), &mixed),
        422,
        "VALIDATION_ERROR",
    );
    let (_, list) = json(app.admin_get(&format!("/admin/companies/{id}/resoluciones")));
    let own = list["data"].as_array().unwrap();
    assert_eq!(own.len(), 11, "9 own resolutions and the 2 added");
    assert_eq!(own[0]["tipos_adicionales"], json!([6, 8]), "the demo's FE");
    let (_, keys) = json(app.admin_get(&format!("/admin/companies/{id}/api-keys")));
    let keys = keys["data"].as_array().unwrap();
    assert_eq!(keys.len(), 2);
    assert!(
        keys.iter().all(|k| k["key"].is_null()),
        "secrets never listed"
    );
}

#[test]
fn admin_cli_round_trip() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (ok, out) = admin_cli(
        dir,
        &[
            "company",
            "create",
            "--nit",
            "800197268",
            "--razon-social",
            "CLI S.A.S.",
            "--direccion",
            "Calle 1",
            "--municipio-codigo",
            "05001",
        ],
    );
    assert!(ok, "{out}");
    let company: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(company["dv"], 4);
    let id = company["id_empresa"].as_u64().unwrap().to_string();
    let (ok, out) = admin_cli(
        dir,
        &[
            "software",
            "set",
            "--company",
            &id,
            "--tipo",
            "facturacion",
            "--software-id",
            "sw-1",
            "--pin",
            "54321",
        ],
    );
    assert!(ok, "{out}");
    let (ok, out) = admin_cli(
        dir,
        &[
            "resolution",
            "add",
            "--company",
            &id,
            "--tipo",
            "1",
            "--numero",
            "18760000009",
            "--fecha",
            "2024-01-01",
            "--prefijo",
            "FV",
            "--desde",
            "1",
            "--hasta",
            "100",
            "--vigencia-desde",
            "2024-01-01",
            "--vigencia-hasta",
            "2030-01-01",
            "--clave-tecnica",
            "abc123",
            "--tipos-adicionales",
            "6,8",
        ],
    );
    assert!(ok, "{out}");
    let added: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(added["tipos_adicionales"], json!([6, 8]), "{out}");
    let (ok, out) = admin_cli(dir, &["resolution", "list", "--company", &id]);
    assert!(ok && out.contains("\"FV\""), "{out}");
    let p12 = dir.join("cert.p12");
    std::fs::write(&p12, pkcs12(-1, 365)).unwrap();
    let (ok, out) = admin_cli(
        dir,
        &[
            "certificate",
            "import",
            "--company",
            &id,
            "--file",
            p12.to_str().unwrap(),
            "--password",
            "secreto",
        ],
    );
    assert!(ok, "{out}");
    std::fs::write(&p12, pkcs12(-30, -2)).unwrap();
    let (ok, out) = admin_cli(
        dir,
        &[
            "certificate",
            "import",
            "--company",
            &id,
            "--file",
            p12.to_str().unwrap(),
            "--password",
            "secreto",
        ],
    );
    assert!(!ok && out.contains("expired"), "{out}");
    let (ok, out) = admin_cli(
        dir,
        &["key", "create", "--company", &id, "--ambiente", "test"],
    );
    assert!(ok, "{out}");
    let key: Value = serde_json::from_str(&out).unwrap();
    let secret = key["key"].as_str().unwrap().to_string();
    let key_id = key["id"].as_u64().unwrap().to_string();
    assert_eq!(key["user_id"], Value::Null, "a company key: {key}");
    let (ok, out) = admin_cli(
        dir,
        &[
            "key",
            "create",
            "--company",
            &id,
            "--ambiente",
            "test",
            "--user-id",
            "17",
        ],
    );
    assert!(ok, "{out}");
    let user_key: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(user_key["user_id"], 17, "{user_key}");
    let (ok, out) = admin_cli(dir, &["key", "list", "--company", &id]);
    assert!(
        ok && !out.contains(&secret),
        "list never shows the secret: {out}"
    );
    let listed: Value = serde_json::from_str(&out).unwrap();
    let users: Vec<&Value> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|k| &k["user_id"])
        .collect();
    assert_eq!(users, [&Value::Null, &json!(17)], "{listed}");

    // The server takes the provisioned data dir as it is (no demo bootstrap).
    let mut app = TestApp::start_in(dir, Launch::default());
    assert!(app.keys.is_null(), "no demo company on a provisioned dir");
    let (status, body) = json(app.get("/v1/api/api-keys/test", &secret));
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["empresa"], "CLI S.A.S.");
    // While it runs, the CLI refuses to touch the store (sled's lock; on
    // PostgreSQL several processes share the database).
    if !on_postgres() {
        let (ok, out) = admin_cli(dir, &["company", "list"]);
        assert!(!ok && out.contains("running"), "{out}");
    }
    app.stop();

    let (ok, out) = admin_cli(dir, &["key", "revoke", "--id", &key_id]);
    assert!(ok, "{out}");
    let app = TestApp::start_in(dir, Launch::default());
    assert_error(
        app.get("/v1/api/api-keys/test", &secret),
        401,
        "INVALID_API_KEY",
    );
    let token = std::fs::read_to_string(dir.join("admin-token")).unwrap();
    let res = app
        .client
        .get(format!("{}/admin/companies", app.url))
        .bearer_auth(token.trim())
        .send()
        .unwrap();
    assert_eq!(res.status().as_u16(), 200, "generated admin token works");
}
