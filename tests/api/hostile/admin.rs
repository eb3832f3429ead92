//! Admin.

use super::*;

/// Company 1 as the admin API shows it: untouched by the admin attacks.
pub(super) fn company_one(app: &TestApp) -> Value {
    json!([
        data(app.admin_get("/admin/companies/1")),
        data(app.admin_get("/admin/companies/1/resoluciones")),
        data(app.admin_get("/admin/companies/1/api-keys")),
    ])
}

/// Where `after` differs from `before`, if it does.
pub(super) fn difference(what: &str, before: &Value, after: &Value) -> Option<String> {
    if before == after {
        return None;
    }
    let leaf_changed = |p: &Vec<Step>| {
        let v = get(before, p);
        !v.is_object() && !v.is_array() && v != get(after, p)
    };
    let how = match paths(before).into_iter().find(leaf_changed) {
        Some(p) => format!(
            "{} was {} and is {}",
            show(&p),
            get(before, &p),
            get(after, &p)
        ),
        None => format!("is now {}", abbreviate(&after.to_string())),
    };
    Some(format!("{what} changed: {how}"))
}

/// Waits for a test-set run of company 2 to end, so the next request is
/// judged on its body rather than on a run in progress.
pub(super) fn wait_for_test_set(app: &TestApp) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        let (_, run) = json(app.admin_get("/admin/companies/2/set-pruebas"));
        if run["data"]["estado"] != "en_progreso" {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("test set of company 2 still running after 60 s");
}

/// What accepted admin requests created: companies, and resolutions and
/// keys of company 2.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub(super) struct Created {
    pub(super) companies: usize,
    pub(super) resolutions: usize,
    pub(super) keys: usize,
}

impl Created {
    pub(super) fn count(&mut self, route: &str, a: &Answer) {
        if a.status != 201 {
            return;
        }
        match route {
            "/admin/companies" => self.companies += 1,
            "/admin/companies/2/resoluciones" => self.resolutions += 1,
            "/admin/companies/2/api-keys" => self.keys += 1,
            _ => {}
        }
    }
}

pub(super) fn admin_counts(app: &TestApp) -> Created {
    let len = |path: &str| data(app.admin_get(path)).as_array().unwrap().len();
    Created {
        companies: len("/admin/companies"),
        resolutions: len("/admin/companies/2/resoluciones"),
        keys: len("/admin/companies/2/api-keys"),
    }
}

/// `POST /admin/companies`, each request with a NIT of its own.
pub(super) fn admin_companies(
    p: &mut Probe,
    kinds: &[Vec<String>],
    rng: &mut Rng,
    created: &mut Created,
) {
    const PATH: &str = "/admin/companies";
    let mut nit = 700_000_000u64;
    let mut company = || {
        nit += 1;
        json!({"nit": nit.to_string(), "razon_social": "Hostil S.A.S.", "direccion": "Calle 1",
               "email": "hostil@example.test", "tipo_organizacion": 1,
               "rate_limit_per_minute": 100, "limite_documentos_mes": 10, "demo": false})
    };
    let base = company();
    for m in mutations(&base, kinds, rng, |_| Plan::OneOfEach) {
        let text = if m.what.starts_with("nit") {
            m.text.clone()
        } else {
            m.text
                .replacen(&base["nit"].to_string(), &company()["nit"].to_string(), 1)
        };
        let a = p.admin(Method::POST, PATH, &m.what, text);
        p.judged(&m.what, &a, &m);
        created.count(PATH, &a);
    }
    // PATCH refuses a limit of 0 requests a minute; so must creation.
    let mut zero = company();
    zero["rate_limit_per_minute"] = json!(0);
    let a = p.admin(
        Method::POST,
        PATH,
        "rate_limit_per_minute = 0",
        zero.to_string(),
    );
    p.refused("POST /admin/companies rate_limit_per_minute = 0", &a, true);
    created.count(PATH, &a);
    let mut valid = || company().to_string();
    p.body_attacks(Method::POST, PATH, true, &mut valid, &mut |_, a| {
        created.count(PATH, a)
    });
}

/// Valid bodies of company 2's endpoints; what they accept changes company
/// 2 only.
pub(super) fn company_two_bodies() -> Vec<(Method, &'static str, Value)> {
    let p12 = base64::engine::general_purpose::STANDARD.encode(crate::admin::pkcs12(-1, 365));
    vec![
        (
            Method::PATCH,
            "",
            json!({"rate_limit_per_minute": 100000, "limite_documentos_mes": 100000,
                   "webhook_url": ""}),
        ),
        (
            Method::POST,
            "/software",
            json!({"tipo": "facturacion", "software_id": "sw-hostil", "pin": "12345",
                   "test_set_id": "ts-hostil", "proveedor_nit": "900123456"}),
        ),
        (
            Method::POST,
            "/resoluciones",
            json!({"id_tipo_documento": 1, "numero_resolucion": "18760000099",
                   "fecha_resolucion": "2024-01-01", "prefijo": "HST", "desde": 1, "hasta": 1000,
                   "vigencia_desde": "2024-01-01", "vigencia_hasta": "2024-12-31",
                   "clave_tecnica": "abc"}),
        ),
        (
            Method::POST,
            "/certificado",
            json!({"pkcs12_base64": p12, "password": "secreto"}),
        ),
        (
            Method::POST,
            "/api-keys",
            json!({"ambiente": "test", "label": "hostil"}),
        ),
        (
            Method::POST,
            "/set-pruebas",
            json!({"facturas": 1, "notas_credito": 1, "notas_debito": 0}),
        ),
    ]
}

pub(super) fn admin_company_two(
    p: &mut Probe,
    kinds: &[Vec<String>],
    rng: &mut Rng,
    created: &mut Created,
) {
    for (method, tail, base) in company_two_bodies() {
        let path = format!("/admin/companies/2{tail}");
        let test_set = tail == "/set-pruebas";
        // The plan's counts are small integers that are summed: every
        // boundary number goes there.
        let plan = |_: &[Step]| if test_set { Plan::All } else { Plan::OneOfEach };
        for m in mutations(&base, kinds, rng, plan) {
            let a = p.admin(method.clone(), &path, &m.what, m.text.clone());
            p.judged(&m.what, &a, &m);
            created.count(&path, &a);
            if test_set && a.accepted() {
                wait_for_test_set(p.app);
            }
        }
        let mut valid = || base.to_string();
        p.body_attacks(method.clone(), &path, true, &mut valid, &mut |_, a| {
            created.count(&path, a)
        });
        if test_set {
            wait_for_test_set(p.app);
        }
        // The valid body on ids that are no company (a third of them).
        for id in bad_ids().into_iter().step_by(3) {
            let path = format!("/admin/companies/{id}{tail}");
            let a = p.admin(method.clone(), &path, "bad id", base.to_string());
            p.refused(&path, &a, true);
        }
    }
}

pub(super) fn admin_reads(p: &mut Probe) {
    for id in bad_ids() {
        for tail in [
            "",
            "/resoluciones",
            "/api-keys",
            "/webhooks",
            "/set-pruebas",
        ] {
            let path = format!("/admin/companies/{id}{tail}");
            let a = p.admin(Method::GET, &path, "bad id", Vec::new());
            p.refused(&path, &a, true);
        }
        let path = format!("/admin/api-keys/{id}/revoke");
        let a = p.admin(Method::POST, &path, "bad id", Vec::new());
        p.refused(&path, &a, true);
    }
    for token in ["", "x", "Bearer", &"a".repeat(10_000)] {
        let req = p
            .app
            .client
            .get(p.url("/admin/companies"))
            .header("Authorization", format!("Bearer {token}"));
        p.send(&format!("admin token {}", abbreviate(token)), req);
    }
}

pub(super) fn admin(p: &mut Probe, kinds: &[Vec<String>], rng: &mut Rng) -> Created {
    let mut created = Created::default();
    admin_companies(p, kinds, rng, &mut created);
    admin_company_two(p, kinds, rng, &mut created);
    admin_reads(p);
    created
}
