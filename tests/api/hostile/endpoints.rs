//! The attacks, endpoint by endpoint.

use super::*;

/// A fresh `referencia_externa`, so idempotency never masks a check.
pub(super) fn fresh_reference() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    format!("hostile-{}", N.fetch_add(1, Ordering::Relaxed))
}

pub(super) fn facturacion(
    p: &mut Probe,
    w: &World,
    kinds: &[Vec<String>],
    rng: &mut Rng,
    acc: &mut Accepted,
) {
    const PATH: &str = "/v1/api/facturacion";
    let mut seen = BTreeSet::new();
    for (name, base) in facturacion_bodies(w) {
        // Top-level fields in every body (their meaning depends on the
        // type); deeper ones where first met (`invoice_lines[*].code`).
        let plan = |path: &[Step]| {
            if path.len() == 1 || seen.insert(shape(path)) {
                Plan::OneOfEach
            } else {
                Plan::Skip
            }
        };
        for m in mutations(&base, kinds, rng, plan) {
            // The reference is unique unless it is what is being mutated.
            let text = if m.what.starts_with("referencia_externa") {
                m.text.clone()
            } else {
                let fresh = json!(fresh_reference()).to_string();
                m.text.replacen("\"hostile-base\"", &fresh, 1)
            };
            let what = format!("{name}: {}", m.what);
            let a = p.post_json(PATH, &what, text.clone());
            p.judged(&what, &a, &m);
            if a.accepted() {
                acc.document(&text, &a);
            }
        }
    }
    let invoice = facturacion_bodies(w).remove(0).1;
    let mut valid = || {
        let mut b = invoice.clone();
        b["referencia_externa"] = json!(fresh_reference());
        b.to_string()
    };
    p.body_attacks(Method::POST, PATH, false, &mut valid, &mut |sent, a| {
        acc.document(sent, a)
    });
}

pub(super) fn clientes(p: &mut Probe, kinds: &[Vec<String>], rng: &mut Rng, acc: &mut Accepted) {
    const PATH: &str = "/v1/api/clientes";
    let base = examples::company_customer();
    for m in mutations(&base, kinds, rng, |_| Plan::OneOfEach) {
        let a = p.post_json(PATH, &m.what, m.text.clone());
        p.judged(&m.what, &a, &m);
        if a.accepted() {
            acc.customer(&a);
        }
    }
    let mut valid = || base.to_string();
    p.body_attacks(Method::POST, PATH, false, &mut valid, &mut |_, a| {
        acc.customer(a)
    });
    for q in bad_queries().into_iter().chain(
        [
            "?limit=0",
            "?limit=-1",
            "?limit=101",
            "?limit=1e3",
            "?page=0",
            "?page=4294967296",
            "?q=%00",
            "?q=%FF",
        ]
        .map(String::from),
    ) {
        p.get(&format!("{PATH}{q}"));
    }
    // The buyer look-up: a bad type or number is refused before any call.
    const BUYER: &str = "/v1/api/clientes/adquiriente";
    for q in bad_queries() {
        p.get(&format!("{BUYER}{q}"));
    }
    let long = "9".repeat(10_000);
    for q in [
        String::new(),
        "?tipo_documento=31".into(),
        "?numero=900000001".into(),
        "?tipo_documento=99&numero=1".into(),
        "?tipo_documento=%FF&numero=1".into(),
        "?tipo_documento=31&numero=%00".into(),
        "?tipo_documento=31&numero=900000001-2".into(),
        "?tipo_documento=41&numero=%C3%B1".into(),
        format!("?tipo_documento=13&numero={long}"),
        "?tipo_documento=31&numero=1&tipo_documento=13".into(),
    ] {
        let path = format!("{BUYER}{q}");
        let a = p.get(&path);
        p.refused(&path, &a, true);
    }
}

pub(super) fn contingency(p: &mut Probe, w: &World, kinds: &[Vec<String>], rng: &mut Rng) {
    const PATH: &str = "/v1/api/facturacion/contingencia/enviar";
    // Valid and harmless: an id that is not a pending contingency document.
    let base = json!({"id_empresa": 1, "documento_ids": [w.invoice]});
    for m in mutations(&base, kinds, rng, |_| Plan::All) {
        let a = p.post_json(PATH, &m.what, m.text.clone());
        p.judged(&m.what, &a, &m);
    }
    let mut valid = || base.to_string();
    p.body_attacks(Method::POST, PATH, false, &mut valid, &mut |_, _| {});
    // Another company's document and id_empresa.
    p.post_json(
        PATH,
        "foreign id",
        json!({"id_empresa": 1, "documento_ids": [w.foreign]}).to_string(),
    );
    p.post_json(
        PATH,
        "foreign company",
        json!({"id_empresa": 2, "documento_ids": []}).to_string(),
    );
}

/// Ids in paths, query strings and document types.
pub(super) fn reads(p: &mut Probe, w: &World) {
    const F: &str = "/v1/api/facturacion";
    let ids = bad_ids()
        .into_iter()
        .chain([w.foreign.to_string(), "4000000".into()]);
    for id in ids {
        for path in [
            format!("{F}/{id}/status?id_empresa=1"),
            format!("{F}/{id}/xml"),
            format!("{F}/{id}/zip"),
            format!("{F}/{id}/pdf"),
        ] {
            let a = p.get(&path);
            p.refused(&path, &a, true);
        }
        let path = format!("{F}/reenviar/{id}");
        let a = p.keyed(
            Method::POST,
            &path,
            Some("application/json"),
            b"{}".to_vec(),
        );
        p.refused(&path, &a, true);
    }
    // `+1` is document 1 to Rust's parser: answered, whatever it is.
    p.get(&format!("{F}/+1/status?id_empresa=1"));
    p.get(&format!("{F}/+1/xml"));
    // An id a document of this company has: only the query is hostile.
    for q in bad_queries() {
        p.get(&format!("{F}/{}/status{q}", w.invoice));
        p.get(&format!("{F}/suscripcion{q}"));
        p.get(&format!("{F}/{}/xml{q}", w.invoice));
        p.get(&format!("{F}/{}/pdf{q}", w.invoice));
    }
    let tipos = bad_ids()
        .into_iter()
        .chain(
            [
                "+1", "11", "255", "256", "FE", "fE", "t03", "nap", "x", "%201%20", "1.0",
            ]
            .map(String::from),
        )
        .chain(["nc".repeat(5_000)]);
    for t in tipos {
        p.get(&format!("{F}/consecutivo/{t}"));
    }
}

/// Every keyed route with a wrong method, a broken WebSocket handshake, and
/// keys that are no keys.
pub(super) fn methods_and_keys(p: &mut Probe, w: &World) {
    const F: &str = "/v1/api/facturacion";
    let routes = [
        F.to_string(),
        format!("{F}/{}/status", w.invoice),
        format!("{F}/{}/xml", w.invoice),
        format!("{F}/{}/zip", w.invoice),
        format!("{F}/{}/pdf", w.invoice),
        format!("{F}/reenviar/{}", w.invoice),
        format!("{F}/consecutivo/1"),
        format!("{F}/suscripcion"),
        format!("{F}/contingencia/enviar"),
        "/v1/api/clientes".into(),
        "/v1/api/api-keys/test".into(),
        "/v1/api/clientes/adquiriente?tipo_documento=31&numero=900000001".into(),
    ];
    for route in &routes {
        for m in [Method::PUT, Method::DELETE, Method::PATCH, Method::OPTIONS] {
            let what = format!("{m} {route}");
            let a = p.keyed(m, route, Some("application/json"), b"{}".to_vec());
            p.refused(&what, &a, true);
        }
    }
    let a = p.get("/v1/api/ws");
    p.refused("GET /v1/api/ws without upgrade", &a, true);
    let req = p
        .request(Method::GET, "/v1/api/ws", false)
        .header("Connection", "upgrade")
        .header("Upgrade", "websocket")
        .header("Sec-WebSocket-Version", "99");
    let a = p.send("GET /v1/api/ws version 99", req);
    p.refused("GET /v1/api/ws version 99", &a, true);

    let keys: [&[u8]; 6] = [
        b"",
        b"sk_test_",
        b"sk_live_x",
        &[b"sk_test_".as_slice(), &[b'a'; 7_000]].concat(),
        b"sk_test_\xFF\xFE",
        b"Bearer sk_test_x",
    ];
    for key in keys {
        for route in [&routes[0], &routes[1], &routes[8]] {
            let what = format!(
                "POST {route} key {}",
                abbreviate(&String::from_utf8_lossy(key))
            );
            let header = reqwest::header::HeaderValue::from_bytes(key).unwrap();
            let req = p.app.client.post(p.url(route)).header("X-Api-Key", header);
            let a = p.send(&what, req.body("{}"));
            p.refused(&what, &a, true);
        }
    }
    let a = p.send("GET without key", p.app.client.get(p.url(&routes[6])));
    p.refused("GET without key", &a, true);
    let url = p.url(&format!("{}?api_key=sk_test_nope", routes[6]));
    let a = p.send("GET key in query", p.app.client.get(url));
    p.refused("GET key in query", &a, true);
}
