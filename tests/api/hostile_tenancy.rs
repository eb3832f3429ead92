//! The hostile client against what tenants and environments share (issue
//! 50; `shared/reference/redteam-2026-11-28.md` has every attack): the
//! WebSocket's rooms and sockets, a test key against production documents,
//! `/metrics` labels, keys in URLs, trickled bodies, out-of-range dates,
//! long free text and wrong admin tokens. Each test repeats an attack of the
//! report and checks that it now fails as decisions.md says: a 4xx in the
//! envelope, nothing changed, nothing heard by the wrong socket.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use emisor::api::invoice_request::examples;
use serde_json::{json, Value};

use crate::support::app::*;
use crate::support::bodies::unique;
use crate::support::flow::*;

const UPDATE: &str = "facturacion:update";
/// Long enough for an event that should not come to have come.
const QUIET: Duration = Duration::from_millis(1500);
const WITHIN: Duration = Duration::from_secs(20);

/// A demo company created through the admin API, with its two keys.
struct Company {
    id: u64,
    sk_test: String,
    sk_live: String,
}

fn demo_company(app: &TestApp, nit: &str) -> Company {
    let (status, created) = json(app.admin_post(
        "/admin/companies",
        &json!({"nit": nit, "razon_social": format!("Empresa {nit} S.A.S."), "demo": true}),
    ));
    assert_eq!(status, 201, "{created}");
    let d = &created["data"];
    Company {
        id: d["id_empresa"].as_u64().expect("id_empresa"),
        sk_test: d["sk_test"].as_str().expect("sk_test").to_string(),
        sk_live: d["sk_live"].as_str().expect("sk_live").to_string(),
    }
}

/// A new key of `company` in `ambiente` (`test` or `live`) for `user`:
/// `(key id, key)`.
fn user_key(app: &TestApp, company: u64, ambiente: &str, user: Option<u64>) -> (u64, String) {
    let (status, created) = json(app.admin_post(
        &format!("/admin/companies/{company}/api-keys"),
        &json!({"ambiente": ambiente, "label": "hostile", "user_id": user}),
    ));
    assert_eq!(status, 201, "{created}");
    (
        created["data"]["id"].as_u64().expect("key id"),
        created["data"]["key"].as_str().expect("key").to_string(),
    )
}

/// `body` issued with `key` (made unique); the answer's `data`.
fn issue_with(app: &TestApp, key: &str, body: Value) -> Value {
    let (status, res) = json(app.post("/v1/api/facturacion", key, &unique(body)));
    assert_eq!(status, 200, "{res}");
    res["data"].clone()
}

/// `body` as a draft (numbered, signed, not sent); its id.
fn draft(app: &TestApp, key: &str, mut body: Value) -> u64 {
    body["transmit"] = json!(false);
    issue_with(app, key, body)["documento"]["id"]
        .as_u64()
        .expect("id")
}

fn state_of(app: &TestApp, key: &str, id: u64) -> Value {
    let (status, res) = json(app.get(
        &format!("/v1/api/facturacion/{id}/status?id_empresa=1"),
        key,
    ));
    assert_eq!(status, 200, "{res}");
    res["data"]["id_estado_documento"].clone()
}

// ---------------------------------------------------------------------------
// WebSocket rooms (finding 2) and environments on the socket (finding 4).

/// Company B's user 17 and company A's user 17 are different rooms, and A's
/// user 17 in production is a third: each socket hears its own documents
/// only. Before, `user_17` was global and a test socket heard production.
#[test]
fn ws_user_rooms_never_cross_companies_or_environments() {
    let app = TestApp::spawn_with(fast_launch());
    let b = demo_company(&app, "900777001");
    let (_, a_user) = user_key(&app, 1, "test", Some(17));
    let (_, a_live_user) = user_key(&app, 1, "live", Some(17));
    let (_, b_user) = user_key(&app, b.id, "test", Some(17));
    let mut a_ws = Ws::connect(&app, &a_user);
    let mut a_live_ws = Ws::connect(&app, &a_live_user);
    let mut b_ws = Ws::connect(&app, &b_user);
    let id = |res: &Value| res["data"]["documento"]["id"].as_u64().expect("id");

    // B's user 17 issues: A's user 17 (test or live) hears nothing of it,
    // not its CUFE (`zipKey`) either.
    let by_b = id(&post_async_with(&app, &b_user, &examples::invoice()));
    let heard = b_ws.event_for(UPDATE, by_b, WITHIN);
    assert!(heard["data"]["zipKey"].is_string(), "{heard}");
    assert_eq!(a_ws.more_events_for(UPDATE, by_b, QUIET), 0, "A heard B's");
    assert_eq!(a_live_ws.more_events_for(UPDATE, by_b, QUIET), 0);

    // A's user 17 in testing: production's user 17 hears nothing.
    let by_a = id(&post_async_with(&app, &a_user, &examples::invoice()));
    a_ws.event_for(UPDATE, by_a, WITHIN);
    assert_eq!(a_live_ws.more_events_for(UPDATE, by_a, QUIET), 0);
    assert_eq!(b_ws.more_events_for(UPDATE, by_a, QUIET), 0);

    // A's user 17 in production (synchronous): only the live socket hears.
    let live = issue_with(&app, &a_live_user, examples::invoice());
    let live = live["documento"]["id"].as_u64().expect("id");
    a_live_ws.event_for(UPDATE, live, WITHIN);
    assert_eq!(
        a_ws.more_events_for(UPDATE, live, QUIET),
        0,
        "test heard live"
    );
    assert_eq!(b_ws.more_events_for(UPDATE, live, QUIET), 0);
}

// ---------------------------------------------------------------------------
// A test key against production documents (finding 4).

/// Every by-id and by-code route with an `sk_test_` key on production
/// documents: 404 as if missing, nothing changed; and the reverse.
#[test]
fn a_test_key_never_reads_or_acts_on_production_documents() {
    let app = TestApp::spawn_with(fast_launch());
    let (test, live) = (app.sk_test(), app.sk_live());
    let live_draft = draft(&app, &live, examples::invoice());
    let live_t04 = draft(&app, &live, examples::contingency_t04());
    let live_support = draft(&app, &live, examples::support_document());
    let live_pos = draft(&app, &live, examples::pos());
    let test_draft = draft(&app, &test, examples::invoice());
    let (status, payroll) = json(app.post("/v1/api/nomina/enviar", &live, &payroll_body()));
    assert_eq!(status, 200, "{payroll}");
    let payroll = payroll["data"]["id"].as_u64().expect("payroll id");
    let accepted = issue_with(&app, &live, examples::invoice());
    let accepted_id = accepted["documento"]["id"].as_u64().expect("id");
    assert_eq!(accepted["id_estado_documento"], 2, "{accepted}");

    let gone = |method: &str, path: String, key: &str| {
        let url = format!("{}{path}", app.url);
        let req = match method {
            "GET" => app.client.get(url),
            _ => app
                .client
                .post(url)
                .header("Content-Type", "application/json")
                .body("{}"),
        };
        let res = req.header("X-Api-Key", key).send().expect("request");
        assert_error(res, 404, "NOT_FOUND");
    };
    for path in ["status?id_empresa=1", "xml", "zip", "pdf", "pdf?width=80"] {
        gone(
            "GET",
            format!("/v1/api/facturacion/{live_draft}/{path}"),
            &test,
        );
    }
    // A production payroll with its salaries, through the unified id space.
    for path in ["xml", "zip", "pdf"] {
        gone(
            "GET",
            format!("/v1/api/facturacion/{payroll}/{path}"),
            &test,
        );
        gone("GET", format!("/v1/api/nomina/{payroll}/{path}"), &test);
    }
    gone(
        "POST",
        format!("/v1/api/facturacion/reenviar/{live_draft}"),
        &test,
    );
    gone(
        "POST",
        format!("/v1/api/email/documento/{accepted_id}"),
        &test,
    );
    gone("GET", format!("/v1/api/email/logs/{accepted_id}"), &test);
    for path in ["", "/pdf", "/xml"] {
        gone(
            "GET",
            format!("/v1/api/documentos-soporte/{live_support}{path}"),
            &test,
        );
    }
    gone(
        "POST",
        format!("/v1/api/documentos-soporte/{live_support}/consultar-tax"),
        &test,
    );
    gone("GET", format!("/v1/api/pos/{live_pos}"), &test);
    gone("GET", format!("/v1/api/pos/{live_pos}/tirilla"), &test);
    // And the other way round.
    gone(
        "GET",
        format!("/v1/api/facturacion/{test_draft}/xml"),
        &live,
    );

    // The production email the acceptance queued cannot be resent by id.
    let (status, logs) = json(app.get(&format!("/v1/api/email/logs/{accepted_id}"), &live));
    assert_eq!(status, 200, "{logs}");
    if let Some(log) = logs["data"]["items"][0]["id_correo"].as_u64() {
        gone("POST", format!("/v1/api/email/reenviar/{log}"), &test);
    }

    // Adjustment notes of another environment's original.
    gone(
        "POST",
        format!("/v1/api/documentos-soporte/{live_support}/nota-ajuste"),
        &test,
    );
    gone("POST", format!("/v1/api/pos/{live_pos}/nota-ajuste"), &test);
    // A test credit note naming the production invoice: as unknown.
    let note = examples::with_reference(examples::credit_note(), live_draft);
    let (status, res) = json(app.post("/v1/api/facturacion", &test, &unique(note)));
    assert_eq!(status, 422, "{res}");
    assert_eq!(
        res["error"]["details"][0]["field"], "id_documento_referencia",
        "{res}"
    );
    // …nor by its CUFE through the Spanish-named API.
    let cufe = accepted["cufe"].as_str().expect("cufe");
    let mut nota = emisor::api::facturacion_es::examples::nota_credito();
    nota.as_object_mut()
        .expect("object")
        .remove("documento_referencia");
    nota["cufe_factura_referencia"] = json!(cufe);
    nota["referencia"] = json!(format!("es-{}", std::process::id()));
    let res = assert_error(
        app.post("/v1/api/facturacion-es/nota-credito", &test, &nota),
        422,
        "VALIDATION_ERROR",
    );
    assert_eq!(
        res["error"]["details"][0]["field"], "cufe_factura_referencia",
        "{res}"
    );

    // Contingency: the test key queues no production draft.
    let (status, batch) = json(app.post(
        "/v1/api/facturacion/contingencia/enviar",
        &test,
        &json!({"id_empresa": 1, "documento_ids": [live_t04]}),
    ));
    assert_eq!(status, 200, "{batch}");
    assert_eq!(batch["data"]["total_encolados"], 0, "{batch}");
    assert_eq!(batch["data"]["errores"][0]["id"], live_t04, "{batch}");
    let (_, batch) = json(app.post(
        "/v1/api/facturacion/contingencia/enviar",
        &test,
        &json!({"id_empresa": 1}),
    ));
    assert_eq!(batch["data"]["total_pendientes"], 0, "{batch}");

    // Nothing moved: the production drafts are drafts, read with their key.
    for id in [live_draft, live_t04] {
        assert_eq!(state_of(&app, &live, id), 1);
    }
    assert_eq!(state_of(&app, &test, test_draft), 1);
}

/// A payroll body (the key decides company and environment).
fn payroll_body() -> Value {
    let mut body = crate::support::payroll::monthly(&crate::support::payroll::employee_number());
    body.as_object_mut().expect("object").remove("id_empresa");
    body.as_object_mut().expect("object").remove("ambiente");
    body
}

/// A query `ambiente` is the key's environment or a 422, on every route.
#[test]
fn a_query_ambiente_that_contradicts_the_key_is_a_422() {
    let app = TestApp::spawn();
    let (test, live) = (app.sk_test(), app.sk_live());
    let id = draft(&app, &test, examples::invoice());
    let status = |key: &str, query: &str| {
        app.get(
            &format!("/v1/api/facturacion/{id}/status?id_empresa=1&{query}"),
            key,
        )
    };
    let (code, res) = json(status(&test, "ambiente=2"));
    assert_eq!(code, 200, "{res}");
    let refused = assert_error(status(&test, "ambiente=1"), 422, "VALIDATION_ERROR");
    assert_eq!(refused["error"]["details"][0]["field"], "ambiente");
    assert_error(
        status(&test, "ambiente=2&ambiente=1"),
        422,
        "VALIDATION_ERROR",
    );
    assert_error(
        status(&test, "ambiente=produccion"),
        422,
        "VALIDATION_ERROR",
    );
    // On a list too, and for a production key asking for testing.
    assert_error(
        app.get("/v1/api/facturacion?ambiente=2", &live),
        422,
        "VALIDATION_ERROR",
    );
    let (code, _) = json(app.get("/v1/api/facturacion?ambiente=1", &live));
    assert_eq!(code, 200);
}

/// Received invoices and the registry by CUFE: an invoice one company
/// adopted in production is unknown to its test key (before, the stored
/// record answered any key of a party to it).
#[test]
fn a_received_invoice_is_seen_only_in_its_environment() {
    let app = TestApp::spawn_with(fast_launch());
    // The examples' customer, NIT 800197268.
    let buyer = demo_company(&app, "800197268");
    let accepted = issue_with(&app, &app.sk_live(), examples::invoice());
    assert_eq!(accepted["id_estado_documento"], 2, "{accepted}");
    let cufe = accepted["cufe"].as_str().expect("cufe");
    let path = format!("/v1/api/eventos/documentos/{cufe}");
    let (status, found) = json(app.get(&path, &buyer.sk_live));
    assert_eq!(status, 200, "{found}");
    assert_error(app.get(&path, &buyer.sk_test), 404, "NOT_FOUND");
    assert_error(app.get(&path, &app.sk_test()), 404, "NOT_FOUND");
    assert_error(
        app.get(
            &format!("/v1/api/registry/hoja-de-vida/{cufe}"),
            &buyer.sk_test,
        ),
        404,
        "NOT_FOUND",
    );
    assert_error(
        app.post(
            "/v1/api/eventos/acuse-recibo",
            &buyer.sk_test,
            &json!({"cufe": cufe}),
        ),
        404,
        "NOT_FOUND",
    );
    // The lists of received and eligible invoices are the key's
    // environment's: the test key pages through none of production's.
    let (_, live) = json(app.get("/v1/api/eventos/documentos", &buyer.sk_live));
    assert_eq!(live["data"]["total"], 1, "{live}");
    assert_eq!(live["data"]["items"][0]["cufe"], cufe);
    let (_, test) = json(app.get("/v1/api/eventos/documentos", &buyer.sk_test));
    assert_eq!(test["data"]["total"], 0, "{test}");
    assert_eq!(test["data"]["items"].as_array().map(Vec::len), Some(0));
    // The production key still sees it, events and all.
    let (status, _) = json(app.get(&path, &buyer.sk_live));
    assert_eq!(status, 200);
}

// ---------------------------------------------------------------------------
// /metrics (finding 6).

/// One raw request with `method`; the status line back.
fn raw_request(app: &TestApp, method: &str, path: &str) -> String {
    let mut s = TcpStream::connect(app.url.trim_start_matches("http://")).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: emisor\r\nConnection: close\r\n\r\n"
    )
    .expect("write");
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out.lines().next().unwrap_or_default().to_string()
}

/// Requests with made-up methods add no label: they are all `other`.
#[test]
fn metrics_labels_take_no_value_the_client_chose() {
    let app = TestApp::spawn();
    let mut rng = 0x9e37_79b9_7f4a_7c15_u64;
    for i in 0..200 {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let method: String = (0..300)
            .map(|k| char::from(b'A' + ((rng >> (k % 60)) % 26) as u8))
            .collect();
        let line = raw_request(&app, &format!("X{i}{method}"), "/healthz");
        assert!(line.starts_with("HTTP/1.1 4"), "{line}");
    }
    raw_request(&app, "GET", "/v1/api/no-such-route");
    let text = app
        .client
        .get(format!("{}/metrics", app.url))
        .send()
        .expect("metrics")
        .text()
        .expect("text");
    let mut methods = std::collections::BTreeSet::new();
    for line in text.lines().filter(|l| l.contains("method=\"")) {
        let value = line.split("method=\"").nth(1).unwrap_or_default();
        methods.insert(value.split('"').next().unwrap_or_default().to_string());
    }
    let known = [
        "GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "CONNECT", "TRACE", "other",
    ];
    assert!(methods.contains("other"), "{methods:?}");
    assert!(
        methods.iter().all(|m| known.contains(&m.as_str())),
        "{methods:?}"
    );
    assert!(text.len() < 200_000, "/metrics is {} bytes", text.len());
}

// ---------------------------------------------------------------------------
// Revoked keys' sockets and dead sockets (finding 8).

/// Revoking a key closes its open sockets at once; other keys' stay.
#[test]
fn revoking_a_key_closes_its_websockets() {
    let app = TestApp::spawn_with(fast_launch());
    let (key_id, key) = user_key(&app, 1, "test", None);
    let mut revoked = Ws::connect(&app, &key);
    let mut other = Ws::connect(&app, &app.sk_test());
    let (status, res) =
        json(app.admin_post(&format!("/admin/api-keys/{key_id}/revoke"), &json!({})));
    assert_eq!(status, 200, "{res}");
    assert!(
        revoked.closes_within(Duration::from_secs(5)),
        "the revoked key's socket is still open"
    );
    let id = post_async(&app, &examples::invoice())["data"]["documento"]["id"]
        .as_u64()
        .expect("id");
    other.event_for(UPDATE, id, WITHIN);
}

/// The server pings every socket; one that answers nothing is closed after
/// two pings, one that only listens (its client answers pings) stays.
#[test]
fn a_socket_that_answers_no_ping_is_closed_and_a_listener_stays() {
    let app = TestApp::spawn_with(fast_launch().env("EMISOR_WEBSOCKET__PING_INTERVAL_S", "1"));
    let mut listener = Ws::connect(&app, &app.sk_test());
    let mut silent = Ws::connect(&app, &app.sk_test());
    // The listener reads (and so answers pings) for five intervals; the
    // silent one reads nothing meanwhile.
    assert!(listener.events_within(Duration::from_secs(5)).is_empty());
    assert!(
        silent.closes_within(Duration::from_secs(3)),
        "a socket that never answered stayed open"
    );
    let id = post_async(&app, &examples::invoice())["data"]["documento"]["id"]
        .as_u64()
        .expect("id");
    listener.event_for(UPDATE, id, WITHIN);
}

// ---------------------------------------------------------------------------
// Keys in URLs (finding 10).

/// `?api_key=` opens the WebSocket and nothing else.
#[test]
fn a_key_in_the_query_opens_only_the_websocket() {
    let app = TestApp::spawn();
    let key = app.sk_test();
    for path in [
        format!("/v1/api/api-keys/test?api_key={key}"),
        format!("/v1/api/facturacion?api_key={key}"),
    ] {
        let res = app
            .client
            .get(format!("{}{path}", app.url))
            .send()
            .expect("GET");
        assert_error(res, 401, "MISSING_API_KEY");
    }
    Ws::connect(&app, &key);
}

// ---------------------------------------------------------------------------
// Trickled bodies (finding 11).

/// A keyed client that sends its body a byte at a time is answered 408 in
/// the envelope once `[server] body_timeout_s` has passed, and its
/// connection closed.
#[test]
fn a_trickled_body_gets_408_and_its_connection_closed() {
    let app = TestApp::spawn_with(Launch::default().env("EMISOR_SERVER__BODY_TIMEOUT_S", "2"));
    let mut s = TcpStream::connect(app.url.trim_start_matches("http://")).expect("connect");
    s.set_read_timeout(Some(Duration::from_millis(300)))
        .expect("timeout");
    write!(
        s,
        "POST /v1/api/clientes HTTP/1.1\r\nHost: emisor\r\nX-Api-Key: {}\r\n\
         Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{{",
        app.sk_test()
    )
    .expect("headers");
    let started = Instant::now();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let closed = loop {
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "no answer after {:?}: {}",
            started.elapsed(),
            String::from_utf8_lossy(&got)
        );
        let _ = s.write_all(b" ");
        match s.read(&mut buf) {
            Ok(0) => break true,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(_) => break true, // reset: closed too
        }
    };
    assert!(closed);
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(text.contains("\"REQUEST_TIMEOUT\""), "{text}");
    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}

// ---------------------------------------------------------------------------
// Dates past 9999 (finding 12).

/// Every date a document carries is 0001-9999: a later one is a 422 naming
/// it, and no number is taken.
#[test]
fn dates_past_year_9999_are_422_and_take_no_number() {
    let app = TestApp::spawn();
    let key = app.sk_test();
    let next = next_number(&app, "fe");
    let far = "+10000-01-01";
    let refused = |path: &str, body: Value, field: &str| {
        let res = assert_error(app.post(path, &key, &body), 422, "VALIDATION_ERROR");
        let fields: Vec<&str> = res["error"]["details"]
            .as_array()
            .expect("details")
            .iter()
            .filter_map(|d| d["field"].as_str())
            .collect();
        assert!(fields.iter().any(|f| f.contains(field)), "{field}: {res}");
    };
    let mut credit = unique(examples::invoice());
    credit["payment_form"] = json!({"id": "2", "method": "10", "due_date": far});
    refused("/v1/api/facturacion", credit, "due_date");
    let mut t03 = unique(examples::contingency_t03());
    t03["referencia_contingencia"]["fecha"] = json!(far);
    refused("/v1/api/facturacion", t03, "referencia_contingencia.fecha");
    let mut export = unique(examples::export_invoice());
    export["exchange_rate"]["date"] = json!(far);
    refused("/v1/api/facturacion", export, "exchange_rate.date");
    let mut health = unique(examples::health_invoice());
    health["salud"]["fecha_fin"] = json!(far);
    refused("/v1/api/facturacion", health, "salud.fecha_fin");
    let mut factura = emisor::api::facturacion_es::examples::factura();
    factura
        .as_object_mut()
        .expect("object")
        .remove("dias_credito");
    factura["fecha_vencimiento"] = json!(far);
    factura["referencia"] = json!(format!("far-{}", std::process::id()));
    refused("/v1/api/facturacion-es/factura", factura, "vencimiento");
    let mut payroll = payroll_body();
    payroll["fechas_pagos"] = json!([far]);
    refused("/v1/api/nomina/enviar", payroll, "");
    assert_eq!(next_number(&app, "fe"), next, "no number taken");
}

// ---------------------------------------------------------------------------
// Free text and the PDF (finding 9).

/// A 900 KB description (a minute of CPU per PDF before) is a 422; 4,000
/// characters are fine and draw; every family's free text is bounded.
#[test]
fn long_free_text_is_refused_and_what_is_accepted_draws() {
    let app = TestApp::spawn();
    let key = app.sk_test();
    let next = next_number(&app, "fe");
    let with_description = |text: String| {
        let mut body = unique(examples::invoice());
        body["transmit"] = json!(false);
        body["invoice_lines"][0]["description"] = json!(text);
        body
    };
    let res = assert_error(
        app.post(
            "/v1/api/facturacion",
            &key,
            &with_description("W".repeat(900_000)),
        ),
        422,
        "VALIDATION_ERROR",
    );
    assert_eq!(
        res["error"]["details"][0]["field"], "invoice_lines[0].description",
        "{res}"
    );
    assert!(
        res["message"].as_str().unwrap_or_default().contains("4000"),
        "{res}"
    );
    let mut notes = unique(examples::invoice());
    notes["notes"] = json!("n".repeat(4001));
    assert_error(
        app.post("/v1/api/facturacion", &key, &notes),
        422,
        "VALIDATION_ERROR",
    );
    assert_eq!(next_number(&app, "fe"), next, "no number taken");

    // Exactly the limit: accepted, and its PDF is drawn.
    let (status, res) = json(app.post(
        "/v1/api/facturacion",
        &key,
        &with_description("W".repeat(4000)),
    ));
    assert_eq!(status, 200, "{res}");
    let id = res["data"]["documento"]["id"].as_u64().expect("id");
    let pdf = app.get(&format!("/v1/api/facturacion/{id}/pdf"), &key);
    assert_eq!(pdf.status().as_u16(), 200);
    assert!(pdf.bytes().expect("pdf").starts_with(b"%PDF"));

    // The other families' descriptions.
    let long = "d".repeat(4001);
    let mut pos = unique(pos_body());
    pos["lineas"][0]["descripcion"] = json!(long);
    assert_error(
        app.post("/v1/api/pos/emitir", &key, &pos),
        422,
        "VALIDATION_ERROR",
    );
    let mut ds = unique(support_body());
    ds["lineas"][0]["descripcion"] = json!(long);
    assert_error(
        app.post("/v1/api/documentos-soporte/emitir", &key, &ds),
        422,
        "VALIDATION_ERROR",
    );
    let mut factura = emisor::api::facturacion_es::examples::factura();
    factura["lineas"][0]["descripcion"] = json!(long);
    factura["referencia"] = json!(format!("long-{}", std::process::id()));
    assert_error(
        app.post("/v1/api/facturacion-es/factura", &key, &factura),
        422,
        "VALIDATION_ERROR",
    );
    let mut payroll = payroll_body();
    payroll["empleado"]["primer_nombre"] = json!("n".repeat(201));
    assert_error(
        app.post("/v1/api/nomina/enviar", &key, &payroll),
        422,
        "VALIDATION_ERROR",
    );
}

/// A support document and a POS receipt as their own APIs take them
/// (drafts).
fn support_body() -> Value {
    json!({
        "proveedor": {"numero_identificacion": "1020304050", "nombre": "Pedro Pérez",
                      "tipo_documento": "13", "correo": "pedro@example.test", "municipio": "05001"},
        "lineas": [{"descripcion": "Servicio", "cantidad": 2, "precio_unitario": 50000,
                    "unidad_medida": "E48", "retenciones": [{"tipo": "07", "porcentaje": 4}]}],
        "forma_pago": "1", "metodo_pago": "10", "transmitir": false
    })
}

fn pos_body() -> Value {
    json!({
        "id_caja": "2", "id_cajero": "5",
        "lineas": [{"descripcion": "Café", "cantidad": 2, "precio_unitario": 4500,
                    "porcentaje_iva": 8, "tipo_impuesto": "04"}],
        "pagos": [{"forma": "1", "metodo": "10", "monto": 9720}],
        "transmitir": false
    })
}

// ---------------------------------------------------------------------------
// Wrong admin tokens (finding 13).

/// Each wrong admin token is logged without the token; after ten in a
/// minute the address waits (429, `Retry-After`), right token included.
#[test]
fn wrong_admin_tokens_are_logged_and_then_held_off() {
    let app = TestApp::spawn_with(Launch::default().capture_log());
    let wrong = "adm_guess-never-logged";
    let get = |token: &str| {
        app.client
            .get(format!("{}/admin/companies", app.url))
            .bearer_auth(token)
            .send()
            .expect("GET")
    };
    for _ in 0..10 {
        assert_error(get(wrong), 401, "INVALID_ADMIN_TOKEN");
    }
    let held = get(wrong);
    let retry: u64 = held
        .headers()
        .get("Retry-After")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .expect("Retry-After");
    assert!((1..=60).contains(&retry), "{retry}");
    assert_error(held, 429, "RATE_LIMITED");
    assert_error(get(&app.admin_token()), 429, "RATE_LIMITED");
    // The keyed API is another door: not held.
    let (status, _) = json(app.get("/v1/api/api-keys/test", &app.sk_test()));
    assert_eq!(status, 200);
    let log = app.log();
    assert!(log.matches("wrong admin token").count() >= 10, "{log}");
    assert!(!log.contains("never-logged"), "the token reached the log");
}
