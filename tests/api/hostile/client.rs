//! The whole hostile client: every keyed endpoint, then what the
//! server holds; a key given twice; events and the registry.

use super::*;

#[test]
#[cfg_attr(not(feature = "soak"), ignore = "soak")]
fn hostile_client_gets_4xx_envelopes_and_changes_nothing() {
    let app = TestApp::spawn_with(
        Launch::default()
            .capture_log()
            .env("EMISOR_RATE_LIMIT__REQUESTS_PER_MINUTE", "1000000")
            .env("EMISOR_AUTHORITY__SIM_ASYNC_DELAY_S", "0.01")
            .env("EMISOR_RESILIENCE__TIME_SCALE", "0.01"),
    );
    let started = Instant::now();
    let world = setup(&app);
    let kinds = hostile_kinds();
    let mut rng = Rng(SEED);
    let mut p = Probe::new(&app);

    // The keyed API: documents, customers, contingency, reads.
    let before = holdings(&app);
    let mut acc = Accepted::default();
    p.section("facturacion");
    facturacion(&mut p, &world, &kinds, &mut rng, &mut acc);
    p.section("facturacion-es");
    facturacion_es(&mut p, &world, &kinds, &mut rng, &mut acc);
    p.section("clientes");
    clientes(&mut p, &kinds, &mut rng, &mut acc);
    p.section("contingency");
    contingency(&mut p, &world, &kinds, &mut rng);
    p.section("support documents and POS");
    families(&mut p, &world, &kinds, &mut rng, &mut acc);
    p.section("reads");
    reads(&mut p, &world);
    p.section("methods and keys");
    methods_and_keys(&mut p, &world);
    let after = holdings(&app);
    let mut problems = acc.explains(&before, &after);

    // The admin API, against a second company.
    let one = company_one(&app);
    let counts = admin_counts(&app);
    p.section("admin");
    let created = admin(&mut p, &kinds, &mut rng);
    let now = admin_counts(&app);
    let expected = Created {
        companies: counts.companies + created.companies,
        resolutions: counts.resolutions + created.resolutions,
        keys: counts.keys + created.keys,
    };
    if now != expected {
        problems.push(format!(
            "admin (companies, resolutions, keys): {counts:?} + accepted {created:?} != {now:?}"
        ));
    }
    problems.extend(difference("company 1", &one, &company_one(&app)));

    let (status, health) = json(
        app.client
            .get(format!("{}/healthz", app.url))
            .send()
            .unwrap(),
    );
    assert_eq!(status, 200, "alive at the end: {health}");
    let log = app.log();
    for bad in ["panicked", "internal error"] {
        if let Some(line) = log.lines().find(|l| l.contains(bad)) {
            problems.push(format!("server log: {line}"));
        }
    }
    eprintln!(
        "hostile: {} requests ({}) in {:.1} s, by status {:?}; accepted {} documents, {} customers",
        p.sent,
        p.tally(),
        started.elapsed().as_secs_f64(),
        p.by_status,
        acc.documents,
        acc.customers.len()
    );
    problems.extend(p.failures.iter().cloned());
    assert!(
        problems.is_empty(),
        "{} problems:\n{}",
        problems.len(),
        problems
            .iter()
            .take(40)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// One body, sent raw: the duplicate-key cases cannot be built as a `Value`.
pub(super) fn send_text(
    app: &TestApp,
    method: Method,
    path: &str,
    admin: bool,
    text: String,
) -> (u16, Value) {
    let req = app
        .client
        .request(method, format!("{}{path}", app.url))
        .header("Content-Type", "application/json");
    let req = if admin {
        req.bearer_auth(app.admin_token())
    } else {
        req.header("X-Api-Key", app.sk_test())
    };
    json(req.body(text).send().unwrap())
}

/// `text` (one object) with `insert` placed right after `anchor`.
pub(super) fn inserted(text: &str, anchor: &str, insert: &str) -> String {
    assert!(text.contains(anchor), "{anchor} not in {text}");
    text.replacen(anchor, &format!("{anchor}{insert}"), 1)
}

#[test]
fn a_key_twice_is_malformed_json_naming_it_on_keyed_and_admin_endpoints() {
    let app = TestApp::spawn();
    let mut invoice = examples::invoice();
    invoice["transmit"] = json!(false);
    invoice["referencia_externa"] = json!("dup-keys");
    let invoice = invoice.to_string();
    let customer = examples::company_customer().to_string();
    let next =
        || data(app.get("/v1/api/facturacion/consecutivo/fe", &app.sk_test()))["siguiente"].clone();
    let numbering = next();
    let customers = data(app.get("/v1/api/clientes", &app.sk_test()))["total"].clone();
    let companies = data(app.admin_get("/admin/companies"));
    // (method, path, admin, body, path of the key given twice)
    let cases = [
        (
            Method::POST,
            "/v1/api/facturacion",
            false,
            inserted(&invoice, "{", r#""transmit":true,"#),
            "transmit",
        ),
        (
            Method::POST,
            "/v1/api/facturacion",
            false,
            inserted(
                &invoice,
                r#""customer":{"#,
                r#""email":"otro@example.test","#,
            ),
            "customer.email",
        ),
        (
            Method::POST,
            "/v1/api/facturacion",
            false,
            inserted(&invoice, r#""invoice_lines":[{"#, r#""description":"x","#),
            "invoice_lines[0].description",
        ),
        (
            Method::POST,
            "/v1/api/clientes",
            false,
            inserted(
                &customer,
                r#""type_document_identification":{"#,
                r#""code":"13","#,
            ),
            "type_document_identification.code",
        ),
        (
            Method::POST,
            "/admin/companies",
            true,
            r#"{"nit":"811000001","razon_social":"Dup S.A.S.","nit":"811000002"}"#.into(),
            "nit",
        ),
        (
            Method::PATCH,
            "/admin/companies/1",
            true,
            r#"{"rate_limit_per_minute":5,"rate_limit_per_minute":7}"#.into(),
            "rate_limit_per_minute",
        ),
        // The test-set plan ignores unknown fields; a duplicate inside one
        // is still found.
        (
            Method::POST,
            "/admin/companies/1/set-pruebas",
            true,
            r#"{"facturas":1,"extra":{"y":[{"z":1,"z":2}]}}"#.into(),
            "extra.y[0].z",
        ),
    ];
    for (method, path, admin, text, at) in cases {
        let key = at.rsplit('.').next().unwrap();
        let (status, body) = send_text(&app, method.clone(), path, admin, text.clone());
        assert_eq!(status, 400, "{method} {path} {text}: {body}");
        assert_eq!(
            body["error"]["code"], "MALFORMED_JSON",
            "{method} {path} {text}: {body}"
        );
        assert_eq!(
            body["message"],
            format!("{at}: duplicate key `{key}`"),
            "{body}"
        );
    }
    // Nothing was written: no number taken, no customer, company or run.
    assert_eq!(next(), numbering);
    assert_eq!(
        data(app.get("/v1/api/clientes", &app.sk_test()))["total"],
        customers
    );
    let now = data(app.admin_get("/admin/companies"));
    assert_eq!(now, companies);
    assert_error(
        app.admin_get("/admin/companies/1/set-pruebas"),
        404,
        "NOT_FOUND",
    );
    // The bodies without their duplicate are accepted.
    let (status, body) = json(app.post_raw("/v1/api/facturacion", &app.sk_test(), invoice));
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["data"]["documento"]["numero"],
        numbering.to_string().trim_matches('"')
    );
}

/// The event and registry routes against garbage: every answer
/// a 4xx in the envelope, nothing stored, nothing sent to the authority.
#[test]
fn hostile_event_and_registry_requests_get_4xx_and_change_nothing() {
    let app = TestApp::spawn_with(
        Launch::default().env("EMISOR_RATE_LIMIT__REQUESTS_PER_MINUTE", "100000"),
    );
    let key = app.sk_test();
    let cufe = "a".repeat(96);
    let huge = "x".repeat(100_000);
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let bomb = "<?xml version=\"1.0\"?><!DOCTYPE l [<!ENTITY a \"aaaaaaaaaa\"><!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;\"><!ENTITY c \"&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;\">]><Invoice xmlns=\"urn:oasis:names:specification:ubl:schema:xsd:Invoice-2\">&c;</Invoice>";
    let event_paths = [
        "eventos/acuse-recibo",
        "eventos/recibo-bien",
        "eventos/aceptacion-expresa",
        "eventos/aceptacion-tacita",
        "eventos/reclamo",
    ];
    let mut bodies: Vec<(String, String)> = Vec::new();
    for path in event_paths {
        for body in [
            "".to_string(),
            "null".into(),
            "[]".into(),
            "{}".into(),
            "{\"cufe\": 5}".into(),
            "{\"cufe\": null}".into(),
            json!({"cufe": ""}).to_string(),
            json!({"cufe": huge}).to_string(),
            json!({"cufe": "zz\u{0}<&>"}).to_string(),
            json!({"cufe": cufe, "id_empresa": 999}).to_string(),
            json!({"cufe": cufe, "id_empresa": "uno"}).to_string(),
            json!({"cufe": cufe, "motivo": ["01"]}).to_string(),
            json!({"cufe": cufe, "motivo": huge}).to_string(),
            format!("{{\"cufe\": \"{cufe}\", \"cufe\": \"{cufe}\"}}"),
            json!({"cufe": cufe}).to_string(),
            nested_objects(10_000),
        ] {
            bodies.push((path.to_string(), body));
        }
    }
    for body in [
        json!({"xml_base64": "not base64!"}).to_string(),
        json!({"xml_base64": b64("")}).to_string(),
        json!({"xml_base64": b64("<Invoice")}).to_string(),
        json!({"xml_base64": b64(bomb)}).to_string(),
        json!({"xml_base64": b64(&format!("<Invoice xmlns=\"urn:oasis:names:specification:ubl:schema:xsd:Invoice-2\">{huge}</Invoice>"))}).to_string(),
        json!({"xml_base64": base64::engine::general_purpose::STANDARD.encode([0xff, 0xfe, 0x00])}).to_string(),
        json!({"xml_base64": 42}).to_string(),
        json!({"id_empresa": 1}).to_string(),
        "{\"xml_base64\": \"a\", \"xml_base64\": \"b\"}".into(),
    ] {
        bodies.push(("eventos/cargar-documento".into(), body));
    }
    for body in [
        json!({"cufe": cufe}).to_string(),
        json!({"cufe": cufe, "codigo_evento": "999"}).to_string(),
        json!({"cufe": cufe, "codigo_evento": 36}).to_string(),
        json!({"cufe": cufe, "codigo_evento": "036"}).to_string(),
        json!({"cufe": cufe, "codigo_evento": "036", "endosatario": {}}).to_string(),
        json!({"cufe": cufe, "codigo_evento": "036", "endosatario": {"tipo_documento": "31", "numero_documento": huge, "nombre": "x"}}).to_string(),
        json!({"cufe": cufe, "codigo_evento": "036", "endosatario": {"tipo_documento": "31", "numero_documento": "9001", "dv": "77", "nombre": "x"}}).to_string(),
        json!({"cufe": cufe, "codigo_evento": "036", "endosatario": {"tipo_documento": "<x>", "numero_documento": "9001", "nombre": "x"}}).to_string(),
        json!({"cufe": cufe, "codigo_evento": "035", "condiciones_financieras": {"valor_nominal_factura": "mucho"}}).to_string(),
        json!({"cufe": cufe, "codigo_evento": "035", "condiciones_financieras": {"fecha_vencimiento_pago": "2030-02-30"}}).to_string(),
        json!({"cufe": cufe, "codigo_evento": "035"}).to_string(),
    ] {
        bodies.push(("registry/registrar-evento".into(), body));
    }
    for (path, body) in &bodies {
        let res = app.post_raw(&format!("/v1/api/{path}"), &key, body.clone());
        let status = res.status().as_u16();
        let text = res.text().unwrap();
        assert!(
            (400..500).contains(&status),
            "{path} {}: {status} {text}",
            abbreviate(body)
        );
        let v: Value =
            serde_json::from_str(&text).unwrap_or_else(|_| panic!("{path}: not JSON: {text}"));
        assert_eq!(v["success"], false, "{path}: {text}");
        assert!(v["error"]["code"].is_string(), "{path}: {text}");
    }
    // The XML form of the upload, with garbage.
    for body in [&b"\xff\xfe"[..], b"", bomb.as_bytes(), huge.as_bytes()] {
        let res = app
            .client
            .post(format!("{}/v1/api/eventos/cargar-documento", app.url))
            .header("X-Api-Key", &key)
            .header("Content-Type", "application/xml")
            .body(body.to_vec())
            .send()
            .unwrap();
        let status = res.status().as_u16();
        assert!((400..500).contains(&status), "XML upload: {status}");
    }
    for path in [
        "eventos/documentos?page=0",
        "eventos/documentos?limit=0",
        "eventos/documentos?limit=1000",
        "eventos/documentos?page=-1",
        "eventos/documentos?page=abc",
        "eventos/documentos/zzz",
        "eventos/documentos/%00",
        &format!("eventos/documentos/{cufe}"),
        &format!("eventos/documentos/{cufe}/eventos/1/xml"),
        &format!("eventos/documentos/{cufe}/eventos/-1/xml"),
        "registry/facturas-elegibles?limit=101",
        "registry/hoja-de-vida/..%2F..%2Fetc",
        &format!("registry/hoja-de-vida/{}", "f".repeat(5000)),
    ] {
        let res = app.get(&format!("/v1/api/{path}"), &key);
        let status = res.status().as_u16();
        assert!((400..500).contains(&status), "GET {path}: {status}");
    }
    // Nothing stored, nothing sent.
    let (_, list) = json(app.get("/v1/api/eventos/documentos", &key));
    assert_eq!(list["data"]["total"], 0, "{list}");
    let (_, eligible) = json(app.get("/v1/api/registry/facturas-elegibles", &key));
    assert_eq!(eligible["data"]["total"], 0, "{eligible}");
    let stats = crate::support::flow::sim_stats(&app);
    assert!(
        stats["calls"].get("SendEventUpdateStatus").is_none(),
        "{stats}"
    );
}
