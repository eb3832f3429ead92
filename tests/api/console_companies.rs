//! The console's Companies section over HTTP against the real server:
//! signed in through the sign-in form, changes posted as a browser posts
//! them (urlencoded forms, the certificate as multipart), every change
//! checked through the admin API and the customer API.

use reqwest::blocking::{Client, Response};
use reqwest::redirect::Policy;
use serde_json::Value;

use crate::admin::pkcs12;
use crate::support::app::*;

/// A browser's session: no redirects followed, the session cookie sent.
struct Browser {
    url: String,
    client: Client,
    cookie: String,
}

fn no_redirects() -> Client {
    Client::builder().redirect(Policy::none()).build().unwrap()
}

/// The value of cookie `name` in a response's `Set-Cookie` headers.
fn set_cookie(res: &Response, name: &str) -> Option<String> {
    res.headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|v| {
            v.split(';')
                .next()
                .and_then(|kv| kv.strip_prefix(&format!("{name}=")))
                .map(str::to_string)
        })
}

/// The value of the first `name="csrf"` field of a page.
fn csrf_of(html: &str) -> String {
    let at = html.find(r#"name="csrf" value=""#).expect("a csrf field");
    let rest = &html[at + r#"name="csrf" value=""#.len()..];
    rest[..rest.find('"').unwrap()].to_string()
}

/// The text of the element with `id`.
fn text_of(html: &str, id: &str) -> String {
    let at = html.find(&format!(r#"id="{id}">"#)).expect(id);
    let rest = &html[at + id.len() + 6..];
    rest[..rest.find('<').unwrap()].to_string()
}

fn location(res: &Response) -> String {
    res.headers()
        .get("location")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string()
}

impl Browser {
    /// Signs in through the form with `credential` (the admin token or a key).
    fn sign_in(app: &TestApp, credential: &str) -> Browser {
        let client = no_redirects();
        let form = client
            .get(format!("{}/console/entrar", app.url))
            .send()
            .unwrap();
        let entry = set_cookie(&form, "emisor_entrada").expect("the sign-in cookie");
        let csrf = csrf_of(&form.text().unwrap());
        let res = client
            .post(format!("{}/console/entrar", app.url))
            .header("Cookie", format!("emisor_entrada={entry}"))
            .form(&[("csrf", csrf.as_str()), ("credencial", credential)])
            .send()
            .unwrap();
        assert_eq!(res.status(), 303, "signed in");
        let cookie = set_cookie(&res, "emisor_sesion").expect("a session cookie");
        Browser {
            url: app.url.clone(),
            client,
            cookie,
        }
    }

    fn get(&self, path: &str) -> (u16, String) {
        let res = self
            .client
            .get(format!("{}{path}", self.url))
            .header("Cookie", format!("emisor_sesion={}", self.cookie))
            .send()
            .unwrap();
        let status = res.status().as_u16();
        let to = location(&res);
        let body = res.text().unwrap();
        (status, if status == 303 { to } else { body })
    }

    /// The sign-in's CSRF token, from a page it sees.
    fn csrf(&self) -> String {
        let (status, page) = self.get("/console");
        assert_eq!(status, 200, "{page}");
        csrf_of(&page)
    }

    /// Posts a form; `csrf` as given (None: without one). Answers the
    /// status and the page, or the `Location` of a 303.
    fn post(&self, path: &str, csrf: Option<&str>, fields: &[(&str, &str)]) -> (u16, String) {
        let mut form: Vec<(&str, &str)> = fields.to_vec();
        if let Some(c) = csrf {
            form.push(("csrf", c));
        }
        let res = self
            .client
            .post(format!("{}{path}", self.url))
            .header("Cookie", format!("emisor_sesion={}", self.cookie))
            .header("Origin", &self.url)
            .form(&form)
            .send()
            .unwrap();
        let status = res.status().as_u16();
        let to = location(&res);
        let body = res.text().unwrap();
        (status, if status == 303 { to } else { body })
    }

    /// Posts the certificate form as a browser does (multipart).
    fn upload(&self, path: &str, csrf: Option<&str>, p12: &[u8], password: &str) -> (u16, String) {
        let boundary = "----emisorprueba7MA4YWxkTrZu0gW";
        let mut body = Vec::new();
        let mut text = |name: &str, value: &str| {
            body.extend_from_slice(
                format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n").as_bytes(),
            );
        };
        if let Some(c) = csrf {
            text("csrf", c);
        }
        text("clave", password);
        body.extend_from_slice(
            format!("--{boundary}\r\nContent-Disposition: form-data; name=\"archivo\"; filename=\"firma.p12\"\r\nContent-Type: application/x-pkcs12\r\n\r\n").as_bytes(),
        );
        body.extend_from_slice(p12);
        body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
        let res = self
            .client
            .post(format!("{}{path}", self.url))
            .header("Cookie", format!("emisor_sesion={}", self.cookie))
            .header("Origin", &self.url)
            .header(
                "Content-Type",
                format!("multipart/form-data; boundary={boundary}"),
            )
            .body(body)
            .send()
            .unwrap();
        let status = res.status().as_u16();
        let to = location(&res);
        let text = res.text().unwrap();
        (status, if status == 303 { to } else { text })
    }
}

fn companies(app: &TestApp) -> Vec<Value> {
    let (status, body) = json(app.admin_get("/admin/companies"));
    assert_eq!(status, 200);
    body["data"].as_array().unwrap().clone()
}

fn keys_of(app: &TestApp, company: u64) -> Vec<Value> {
    let (status, body) = json(app.admin_get(&format!("/admin/companies/{company}/api-keys")));
    assert_eq!(status, 200, "{body}");
    body["data"].as_array().unwrap().clone()
}

#[test]
fn admin_creates_a_company_and_uploads_its_certificate() {
    let app = TestApp::spawn();
    let admin = Browser::sign_in(&app, &app.admin_token());
    let csrf = admin.csrf();
    let before = companies(&app).len();

    // The admin API's validation, its message at the form, nothing made.
    let (status, page) = admin.post(
        "/console/empresas",
        Some(&csrf),
        &[("nit", "12a"), ("razon_social", "Mala S.A.S.")],
    );
    assert_eq!(status, 422, "{page}");
    assert!(
        page.contains("nit: must be 1 to 15 digits, without check digit"),
        "{page}"
    );
    assert!(
        page.contains(r#"value="Mala S.A.S.""#),
        "the form keeps what was typed"
    );
    assert_eq!(companies(&app).len(), before);

    let (status, to) = admin.post(
        "/console/empresas",
        Some(&csrf),
        &[
            ("nit", "900373115"),
            ("razon_social", "Ferretería <Andina> S.A.S."),
            ("municipio_codigo", "11001"),
            ("municipio_nombre", "Bogotá"),
            ("tipo_organizacion", "1"),
            ("regimen", "48"),
        ],
    );
    assert_eq!(status, 303, "{to}");
    let id: u64 = to
        .strip_prefix("/console/empresas/")
        .and_then(|r| r.strip_suffix("?ok=creada"))
        .expect(&to)
        .parse()
        .unwrap();
    let (_, made) = json(app.admin_get(&format!("/admin/companies/{id}")));
    assert_eq!(made["data"]["razon_social"], "Ferretería <Andina> S.A.S.");
    assert_eq!(made["data"]["dv"], 3, "the check digit computed: {made}");
    // The same NIT again: the API's conflict, at the form.
    let (status, page) = admin.post(
        "/console/empresas",
        Some(&csrf),
        &[("nit", "900373115"), ("razon_social", "Otra")],
    );
    assert_eq!(status, 409, "{page}");

    let (status, list) = admin.get("/console/empresas");
    assert_eq!(status, 200);
    // Escaped, never markup.
    assert!(list.contains("Ferretería &lt;Andina&gt; S.A.S."), "{list}");
    assert!(list.contains("900373115-3"), "{list}");
    assert!(list.contains("Sin set de pruebas"), "{list}");

    let (status, page) = admin.get(&to);
    assert_eq!(status, 200);
    assert!(page.contains("Empresa creada."), "{page}");
    assert!(page.contains("Sin certificado"), "{page}");

    // A wrong password: the API's message, nothing stored.
    let path = format!("/console/empresas/{id}/certificado");
    let (status, page) = admin.upload(&path, Some(&csrf), &pkcs12(-1, 30), "otra");
    assert_eq!(status, 422, "{page}");
    assert!(page.contains("cannot read the PKCS#12 file"), "{page}");
    let (status, page) = admin.upload(&path, Some(&csrf), &pkcs12(-30, -1), "secreto");
    assert_eq!(status, 422, "{page}");
    assert!(page.contains("expired on"), "{page}");
    let (_, made) = json(app.admin_get(&format!("/admin/companies/{id}")));
    assert!(made["data"]["alertas"]["certificado"].is_null(), "{made}");

    let (status, to) = admin.upload(&path, Some(&csrf), &pkcs12(-1, 30), "secreto");
    assert_eq!(status, 303, "{to}");
    assert_eq!(to, format!("/console/empresas/{id}?ok=certificado"));
    let (_, made) = json(app.admin_get(&format!("/admin/companies/{id}")));
    let cert = &made["data"]["alertas"]["certificado"];
    assert_eq!(cert["sujeto"], "Prueba", "{made}");
    let (_, page) = admin.get(&to);
    assert!(page.contains("Certificado cargado."), "{page}");
    assert!(page.contains("Prueba"), "{page}");
    assert!(
        page.contains(cert["serial"].as_str().unwrap()),
        "the serial shown: {page}"
    );
    let left = cert["dias_restantes"].as_i64().unwrap();
    assert!(
        page.contains(&format!("{left} días")),
        "days left shown: {page}"
    );
}

#[test]
fn a_key_is_shown_once_and_its_revocation_ends_the_api_and_the_console() {
    let app = TestApp::spawn_with(Launch::default().capture_log().env("RUST_LOG", "info"));
    let admin = Browser::sign_in(&app, &app.admin_token());
    let csrf = admin.csrf();

    let (status, page) = admin.post(
        "/console/empresas/1/llaves",
        Some(&csrf),
        &[("ambiente", "produccion-no"), ("label", "caja")],
    );
    assert_eq!(status, 422, "{page}");
    assert!(
        page.contains("ambiente: must be `test` or `live`"),
        "{page}"
    );

    let before = keys_of(&app, 1).len();
    let (status, page) = admin.post(
        "/console/empresas/1/llaves",
        Some(&csrf),
        &[("ambiente", "test"), ("label", "caja 2")],
    );
    assert_eq!(status, 200, "{page}");
    let key = text_of(&page, "nueva-llave");
    assert!(key.starts_with("sk_test_"), "{key}");
    let keys = keys_of(&app, 1);
    assert_eq!(keys.len(), before + 1);
    let made = keys.iter().find(|k| k["label"] == "caja 2").unwrap();
    let key_id = made["id"].as_u64().unwrap();

    // It works on the API, and opens a company session.
    let res = app.get("/v1/api/clientes?id_empresa=1", &key);
    assert_eq!(res.status(), 200);
    let company = Browser::sign_in(&app, &key);
    assert_eq!(company.get("/console").0, 200);

    // Never shown again.
    let (_, page) = admin.get("/console/empresas/1");
    assert!(!page.contains(&key), "the key shown again");
    assert!(page.contains("caja 2"), "{page}");

    let (status, to) = admin.post(
        &format!("/console/empresas/1/llaves/{key_id}/revocar"),
        Some(&csrf),
        &[],
    );
    assert_eq!(status, 303, "{to}");
    assert_eq!(to, "/console/empresas/1?ok=llave-revocada");
    assert_error(
        app.get("/v1/api/clientes?id_empresa=1", &key),
        401,
        "INVALID_API_KEY",
    );
    // The console session signed in with it goes to sign-in.
    assert_eq!(
        company.get("/console"),
        (303, "/console/entrar".to_string())
    );
    let keys = keys_of(&app, 1);
    let revoked = keys.iter().find(|k| k["id"] == key_id).unwrap();
    assert!(revoked["revoked_at"].is_string(), "{revoked}");
    let (_, page) = admin.get(&to);
    assert!(page.contains("Llave revocada"), "{page}");
    // A key of another company is not revoked through this company's page.
    let (status, _) = admin.post(
        &format!("/console/empresas/999/llaves/{key_id}/revocar"),
        Some(&csrf),
        &[],
    );
    assert_eq!(status, 404);
    assert!(!app.log().contains(&key), "the key in the log");
}

#[test]
fn a_company_session_gets_403_and_a_change_without_csrf_changes_nothing() {
    let app = TestApp::spawn();
    let company = Browser::sign_in(&app, &app.sk_test());
    let own = company.csrf();
    for path in [
        "/console/empresas",
        "/console/empresas/1",
        "/console/empresas/1/set-pruebas",
    ] {
        let (status, page) = company.get(path);
        assert_eq!(status, 403, "{path}: {page}");
        assert!(
            page.contains("solo para la sesión de administración"),
            "{page}"
        );
    }
    let before = companies(&app).len();
    let certificate = || {
        let (_, made) = json(app.admin_get("/admin/companies/1"));
        made["data"]["alertas"]["certificado"]["serial"].clone()
    };
    let serial = certificate();
    let (status, _) = company.post(
        "/console/empresas",
        Some(&own),
        &[("nit", "900373115"), ("razon_social", "Intrusa")],
    );
    assert_eq!(status, 403);
    let keys_before = keys_of(&app, 1).len();
    let (status, _) = company.post(
        "/console/empresas/1/llaves",
        Some(&own),
        &[("ambiente", "test")],
    );
    assert_eq!(status, 403);
    assert_eq!(keys_of(&app, 1).len(), keys_before);

    let admin = Browser::sign_in(&app, &app.admin_token());
    let csrf = admin.csrf();
    // Without the token, or with another sign-in's: refused, nothing made.
    for token in [None, Some(own.as_str())] {
        let (status, page) = admin.post(
            "/console/empresas",
            token,
            &[("nit", "900373115"), ("razon_social", "Sin token")],
        );
        assert_eq!(status, 403, "{page}");
        assert!(page.contains("CSRF"), "{page}");
        let (status, _) = admin.post("/console/empresas/1/llaves", token, &[("ambiente", "test")]);
        assert_eq!(status, 403);
        let (status, _) = admin.upload(
            "/console/empresas/1/certificado",
            token,
            &pkcs12(-1, 30),
            "secreto",
        );
        assert_eq!(status, 403);
    }
    // A file past the upload limit: refused before anything is read into
    // the store.
    let (status, page) = admin.upload(
        "/console/empresas/1/certificado",
        Some(&csrf),
        &vec![0x30; 300 * 1024],
        "secreto",
    );
    assert_eq!(status, 400, "{page}");
    assert!(page.contains("demasiado grande"), "{page}");
    let (status, _) = admin.post(
        &format!(
            "/console/empresas/1/llaves/{}/revocar",
            keys_of(&app, 1)[0]["id"]
        ),
        None,
        &[],
    );
    assert_eq!(status, 403);
    assert_eq!(companies(&app).len(), before);
    assert_eq!(keys_of(&app, 1).len(), keys_before);
    assert!(keys_of(&app, 1).iter().all(|k| k["revoked_at"].is_null()));
    assert_eq!(certificate(), serial, "no certificate replaced");
    // With it, the admin's change goes through.
    let (status, _) = admin.post(
        "/console/empresas",
        Some(&csrf),
        &[("nit", "900373115"), ("razon_social", "Con token")],
    );
    assert_eq!(status, 303);
    assert_eq!(companies(&app).len(), before + 1);
}

#[test]
fn software_webhook_limits_test_set_and_backups_go_through_the_admin_code() {
    let backups = tempfile::tempdir().unwrap();
    let app = TestApp::spawn_with(
        Launch::default()
            .env("EMISOR_BACKUP__DIR", backups.path().to_str().unwrap())
            .env("EMISOR_AUTHORITY__SIM_ASYNC_DELAY_S", "0.2")
            .env("EMISOR_RESILIENCE__TIME_SCALE", "0.05"),
    );
    let admin = Browser::sign_in(&app, &app.admin_token());
    let csrf = admin.csrf();

    // Software: the API's validation, then registered.
    let (status, page) = admin.post(
        "/console/empresas/1/software",
        Some(&csrf),
        &[("tipo", "nomina"), ("software_id", " "), ("pin", "1")],
    );
    assert_eq!(status, 422, "{page}");
    assert!(page.contains("software_id: is required"), "{page}");
    let (status, to) = admin.post(
        "/console/empresas/1/software",
        Some(&csrf),
        &[
            ("tipo", "nomina"),
            ("software_id", "nomina-consola-1"),
            ("pin", "54321"),
        ],
    );
    assert_eq!(
        (status, to.as_str()),
        (303, "/console/empresas/1?ok=software")
    );
    let (_, page) = admin.get("/console/empresas/1");
    assert!(page.contains("nomina-consola-1"), "{page}");
    assert!(!page.contains("54321"), "the PIN is never shown");

    // Numbering: what is left of each range and its validity end, as the
    // admin API's warnings compute them.
    let (_, made) = json(app.admin_get("/admin/companies/1"));
    let ranges = made["data"]["alertas"]["numeracion"].as_array().unwrap();
    assert!(!ranges.is_empty(), "{made}");
    let numbering = page.split("id=\"numeracion\"").nth(1).unwrap();
    for r in ranges {
        let row = format!(
            "{}{} – {}{}",
            r["prefijo"].as_str().unwrap(),
            r["desde"],
            r["prefijo"].as_str().unwrap(),
            r["hasta"]
        );
        assert!(numbering.contains(&row), "{row}: {numbering}");
        let left = format!(r#"data-label="Quedan">{}"#, r["restantes"]);
        assert!(numbering.contains(&left), "{left}");
    }
    for v in made["data"]["alertas"]["vigencias"].as_array().unwrap() {
        let end =
            chrono::NaiveDate::parse_from_str(v["vigencia_hasta"].as_str().unwrap(), "%Y-%m-%d")
                .unwrap()
                .format("%d/%m/%Y")
                .to_string();
        assert!(numbering.contains(&end), "{end}");
    }

    // Webhook: a bad URL refused; the first URL shows its secret once.
    let (status, page) = admin.post(
        "/console/empresas/1/webhook",
        Some(&csrf),
        &[("url", "ftp://x")],
    );
    assert_eq!(status, 422, "{page}");
    assert!(
        page.contains("webhook_url: must be an http(s) URL"),
        "{page}"
    );
    let (status, page) = admin.post(
        "/console/empresas/1/webhook",
        Some(&csrf),
        &[("url", "http://127.0.0.1:9/ganchos")],
    );
    assert_eq!(status, 200, "{page}");
    let secret = text_of(&page, "nuevo-secreto");
    assert!(secret.starts_with("whsec_"), "{secret}");
    let (_, made) = json(app.admin_get("/admin/companies/1"));
    assert_eq!(made["data"]["webhook_url"], "http://127.0.0.1:9/ganchos");
    let (_, page) = admin.get("/console/empresas/1");
    assert!(!page.contains(&secret), "the secret shown again");

    // Limits.
    let (status, _) = admin.post(
        "/console/empresas/1/limites",
        Some(&csrf),
        &[
            ("rate_limit_per_minute", "0"),
            ("limite_documentos_mes", ""),
        ],
    );
    assert_eq!(status, 422);
    let (status, _) = admin.post(
        "/console/empresas/1/limites",
        Some(&csrf),
        &[
            ("rate_limit_per_minute", "120"),
            ("limite_documentos_mes", "5000"),
        ],
    );
    assert_eq!(status, 303);
    let (_, made) = json(app.admin_get("/admin/companies/1"));
    assert_eq!(made["data"]["rate_limit_per_minute"], 120);
    assert_eq!(made["data"]["limite_documentos_mes"], 5000);

    // The test set: the API's plan check, then a run to its end.
    let (status, page) = admin.post(
        "/console/empresas/1/set-pruebas",
        Some(&csrf),
        &[
            ("facturas", "0"),
            ("notas_credito", "1"),
            ("notas_debito", "0"),
        ],
    );
    assert_eq!(status, 422, "{page}");
    assert!(page.contains("notes need at least one invoice"), "{page}");
    let (status, to) = admin.post(
        "/console/empresas/1/set-pruebas",
        Some(&csrf),
        &[
            ("facturas", "2"),
            ("notas_credito", "0"),
            ("notas_debito", "0"),
        ],
    );
    assert_eq!(status, 303, "{to}");
    assert_eq!(to, "/console/empresas/1/set-pruebas?ok=set-iniciado");
    let run = loop {
        let (status, body) = json(app.admin_get("/admin/companies/1/set-pruebas"));
        assert_eq!(status, 200, "{body}");
        if body["data"]["estado"] != "en_progreso" {
            break body["data"].clone();
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert_eq!(run["estado"], "aceptado", "{run}");
    assert_eq!(run["total"], 2);
    let (status, page) = admin.get("/console/empresas/1/set-pruebas");
    assert_eq!(status, 200);
    assert!(page.contains("Set de pruebas aceptado"), "{page}");
    assert!(
        !page.contains("http-equiv=\"refresh\""),
        "a finished run stops reloading"
    );
    let number = run["documentos"][0]["numero"].as_str().unwrap();
    assert!(page.contains(number), "{page}");
    let (_, list) = admin.get("/console/empresas");
    assert!(list.contains("Set de pruebas aceptado"), "{list}");

    // Backups: none, then one run from the console, listed with its
    // manifest (a sled store's: PostgreSQL is backed up with its own tools).
    if on_postgres() {
        return;
    }
    let (_, list) = admin.get("/console/empresas");
    assert!(list.contains("Ninguna todavía."), "{list}");
    let (status, to) = admin.post("/console/empresas/copias", Some(&csrf), &[]);
    assert_eq!((status, to.as_str()), (303, "/console/empresas?ok=copia"));
    let made: Vec<_> = std::fs::read_dir(backups.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(made.len(), 1, "{made:?}");
    assert!(made[0].starts_with("emisor-"), "{made:?}");
    assert!(backups
        .path()
        .join(&made[0])
        .join("manifest.json")
        .is_file());
    let (_, list) = admin.get(&to);
    assert!(list.contains("Copia de seguridad completa."), "{list}");
    assert!(list.contains(&made[0]), "{list}");
    assert!(list.contains("Completa"), "{list}");
}
