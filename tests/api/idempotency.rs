//! Idempotency of `POST /facturacion` (spec 7–8, decisions.md §3): the
//! external reference, concurrent duplicates, identical payloads, and
//! numbering without gaps.

use std::sync::{Arc, Barrier};

use emisor::api::invoice_request::examples;
use serde_json::{json, Value};

use crate::support::app::*;
use crate::support::flow::next_number;

/// Default clock (the duplicate-payload window is the real 5 minutes), and
/// a rate limit out of the way.
fn launch() -> Launch {
    Launch::default().env("EMISOR_RATE_LIMIT__REQUESTS_PER_MINUTE", "100000")
}

fn with_reference(reference: &str) -> Value {
    let mut body = examples::invoice();
    body["referencia_externa"] = json!(reference);
    body
}

fn usage(app: &TestApp) -> u64 {
    let (_, sub) = json(app.get("/v1/api/facturacion/suscripcion", &app.sk_test()));
    sub["data"]["usados"].as_u64().expect("usados")
}

#[test]
fn a_reference_makes_one_document() {
    let app = TestApp::spawn_with(launch());
    let key = app.sk_test();
    let first = with_reference("pedido-1001");
    let (status, res) = json(app.post("/v1/api/facturacion", &key, &first));
    assert_eq!(status, 200, "{res}");
    let id = res["data"]["documento"]["id"].as_u64().expect("id");
    let next = next_number(&app, "fe");

    // The same reference with another payload, and the very same request
    // again (a client retry): both name the existing document.
    let mut changed = first.clone();
    changed["notes"] = json!("segundo intento");
    changed["customer"]["name"] = json!("Nombre Cambiado SAS");
    for body in [changed, first.clone()] {
        let err = assert_error(
            app.post("/v1/api/facturacion", &key, &body),
            409,
            "DUPLICATE_REFERENCE",
        );
        assert_eq!(err["data"]["id"], id, "{err}");
        let (_, customers) = json(app.get("/v1/api/clientes?q=Cambiado", &key));
        assert_eq!(
            customers["data"]["total"], 0,
            "a refused request changes no customer: {customers}"
        );
    }
    // Asynchronous and draft requests are held to it as well.
    let mut queued = first.clone();
    queued["async"] = json!(true);
    let err = assert_error(
        app.post("/v1/api/facturacion", &key, &queued),
        409,
        "DUPLICATE_REFERENCE",
    );
    assert_eq!(err["data"]["id"], id);
    assert_eq!(next_number(&app, "fe"), next, "no number consumed");
    assert_eq!(usage(&app), 1);

    // Another reference is another document.
    let (status, other) =
        json(app.post("/v1/api/facturacion", &key, &with_reference("pedido-1002")));
    assert_eq!(status, 200, "{other}");
    assert_ne!(other["data"]["documento"]["id"], id);
}

#[test]
fn sixteen_concurrent_requests_with_one_reference_make_one_document() {
    let app = TestApp::spawn_with(launch());
    let before = next_number(&app, "fe");
    let url = format!("{}/v1/api/facturacion", app.url);
    let key = app.sk_test();
    let body = with_reference("pedido-concurrente").to_string();
    let barrier = Arc::new(Barrier::new(16));
    let threads: Vec<_> = (0..16)
        .map(|_| {
            let (url, key, body, barrier) =
                (url.clone(), key.clone(), body.clone(), barrier.clone());
            std::thread::spawn(move || {
                let client = client();
                barrier.wait();
                let res = client
                    .post(url)
                    .header("X-Api-Key", key)
                    .header("Content-Type", "application/json")
                    .body(body)
                    .send()
                    .expect("POST");
                json(res)
            })
        })
        .collect();
    let answers: Vec<(u16, Value)> = threads
        .into_iter()
        .map(|t| t.join().expect("thread"))
        .collect();

    let ok: Vec<&Value> = answers
        .iter()
        .filter(|(s, _)| *s == 200)
        .map(|(_, b)| b)
        .collect();
    assert_eq!(ok.len(), 1, "exactly one proceeds: {answers:?}");
    let id = ok[0]["data"]["documento"]["id"].as_u64().expect("id");
    assert_eq!(ok[0]["data"]["transmission"]["isValid"], true, "{}", ok[0]);
    for (status, body) in answers.iter().filter(|(s, _)| *s != 200) {
        assert_eq!(*status, 409, "{body}");
        let code = body["error"]["code"].as_str().expect("code");
        assert!(
            ["DUPLICATE_IN_PROGRESS", "DUPLICATE_REFERENCE"].contains(&code),
            "{body}"
        );
        if code == "DUPLICATE_REFERENCE" {
            assert_eq!(body["data"]["id"], id, "{body}");
        }
    }
    assert_eq!(
        next_number(&app, "fe"),
        before + 1,
        "numbering advanced by one"
    );
    assert_eq!(usage(&app), 1, "one document exists");
    // The lock was released: the reference now answers DUPLICATE_REFERENCE.
    let err = assert_error(
        app.post_raw("/v1/api/facturacion", &key, body),
        409,
        "DUPLICATE_REFERENCE",
    );
    assert_eq!(err["data"]["id"], id);
}

#[test]
fn identical_payload_without_reference_is_refused_within_the_window() {
    let app = TestApp::spawn_with(launch());
    let key = app.sk_test();
    let mut body = examples::invoice();
    body["transmit"] = json!(false);
    assert!(body.get("referencia_externa").is_none());
    let (status, res) = json(app.post("/v1/api/facturacion", &key, &body));
    assert_eq!(status, 200, "{res}");
    let id = res["data"]["documento"]["id"].as_u64().expect("id");
    let next = next_number(&app, "fe");
    let err = assert_error(
        app.post("/v1/api/facturacion", &key, &body),
        409,
        "DUPLICATE_PAYLOAD",
    );
    assert_eq!(err["data"]["id"], id, "{err}");
    assert_eq!(next_number(&app, "fe"), next, "no number consumed");
    // A different payload is a different request.
    body["notes"] = json!("otra venta");
    let (status, res) = json(app.post("/v1/api/facturacion", &key, &body));
    assert_eq!(status, 200, "{res}");
    assert_eq!(next_number(&app, "fe"), next + 1);
}

#[test]
#[cfg_attr(not(feature = "soak"), ignore = "soak")]
fn identical_payload_is_still_refused_after_a_sigkill_and_restart() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut app = TestApp::start_in(tmp.path(), launch());
    let key = app.sk_test();
    let mut body = examples::invoice();
    body["transmit"] = json!(false);
    let (status, res) = json(app.post("/v1/api/facturacion", &key, &body));
    assert_eq!(status, 200, "{res}");
    let id = res["data"]["documento"]["id"].as_u64().expect("id");
    app.kill();

    let restarted = TestApp::start_in(tmp.path(), launch());
    let next = next_number(&restarted, "fe");
    // Spaced differently: the canonical JSON is the same.
    let reordered = serde_json::to_string_pretty(&body).expect("json");
    let err = assert_error(
        restarted.post_raw("/v1/api/facturacion", &key, reordered),
        409,
        "DUPLICATE_PAYLOAD",
    );
    assert_eq!(err["data"]["id"], id, "{err}");
    assert_eq!(next_number(&restarted, "fe"), next, "no number consumed");
}

#[test]
fn numbering_has_no_gaps_and_refusals_consume_nothing() {
    let app = TestApp::spawn_with(launch());
    let key = app.sk_test();
    let start = next_number(&app, "fe");
    let mut numbers = Vec::new();
    let mut issue = |n: usize, tweak: &dyn Fn(&mut Value)| {
        let mut body = with_reference(&format!("gap-{n}"));
        tweak(&mut body);
        let (status, res) = json(app.post("/v1/api/facturacion", &key, &body));
        assert!(status == 200 || status == 202, "{res}");
        let numero: u64 = res["data"]["documento"]["numero"]
            .as_str()
            .expect("numero")
            .parse()
            .expect("numeric");
        numbers.push(numero);
    };
    issue(0, &|_| {});
    issue(1, &|b| b["transmit"] = json!(false));
    issue(2, &|b| b["async"] = json!(true));

    // Refused requests in between: a bad customer email (422), a total that
    // does not add up (422), a duplicate reference (409).
    let mut bad_email = with_reference("gap-bad-email");
    bad_email["customer"]["email"] = json!("not-an-email");
    let err = assert_error(
        app.post("/v1/api/facturacion", &key, &bad_email),
        422,
        "VALIDATION_ERROR",
    );
    assert!(err.to_string().contains("customer.email"), "{err}");
    let mut bad_total = with_reference("gap-bad-total");
    bad_total["legal_monetary_totals"]["payable_amount"] = json!(1);
    assert_error(
        app.post("/v1/api/facturacion", &key, &bad_total),
        422,
        "VALIDATION_ERROR",
    );
    assert_error(
        app.post("/v1/api/facturacion", &key, &with_reference("gap-0")),
        409,
        "DUPLICATE_REFERENCE",
    );
    assert_eq!(
        next_number(&app, "fe"),
        start + 3,
        "refusals took no number"
    );

    issue(3, &|_| {});
    issue(4, &|b| b["transmit"] = json!(false));
    let expected: Vec<u64> = (start..start + 5).collect();
    assert_eq!(numbers, expected, "consecutive, no gaps");
    assert_eq!(usage(&app), 5);
    // The refused reference is free: it was never stored.
    let (status, res) = json(app.post(
        "/v1/api/facturacion",
        &key,
        &with_reference("gap-bad-email"),
    ));
    assert_eq!(status, 200, "{res}");
    assert_eq!(res["data"]["documento"]["numero"], (start + 5).to_string());
}
