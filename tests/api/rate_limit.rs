use serde_json::json;

use crate::support::app::*;

/// The integer value of header `name` (the `X-RateLimit-*` ones).
pub(crate) fn header(res: &reqwest::blocking::Response, name: &str) -> i64 {
    res.headers()
        .get(name)
        .unwrap_or_else(|| panic!("missing {name}"))
        .to_str()
        .unwrap()
        .parse()
        .unwrap()
}

/// `res` is the 429 of a spent minute that ends at `reset`, with its headers.
pub(crate) fn assert_rate_limited(res: reqwest::blocking::Response, reset: i64) {
    assert_eq!(header(&res, "x-ratelimit-remaining"), 0);
    assert_eq!(header(&res, "x-ratelimit-reset"), reset);
    let retry_after = header(&res, "retry-after");
    let now = chrono::Utc::now().timestamp();
    assert!(
        (1..=60).contains(&retry_after) && now + retry_after >= reset - 1,
        "{retry_after}"
    );
    assert_error(res, 429, "RATE_LIMITED");
}

#[test]
fn hundred_and_first_request_is_429_and_other_companies_are_unaffected() {
    let app = TestApp::spawn();
    let (_, second) = json(app.admin_post(
        "/admin/companies",
        &json!({"nit": "800197268", "razon_social": "Otra S.A.S.", "demo": true}),
    ));
    let other = second["data"]["sk_test"].as_str().unwrap().to_string();
    let key = app.sk_test();

    wait_for_fresh_minute_if_needed();
    let mut reset = 0;
    for i in 1..=100 {
        let res = app.get("/v1/api/api-keys/test", &key);
        assert_eq!(res.status().as_u16(), 200, "request {i}");
        assert_eq!(header(&res, "x-ratelimit-limit"), 100);
        assert_eq!(header(&res, "x-ratelimit-remaining"), 100 - i);
        reset = header(&res, "x-ratelimit-reset");
    }
    assert_rate_limited(app.get("/v1/api/api-keys/test", &key), reset);

    // Errors of a limited key count too, and still carry the headers.
    let res = app.get("/v1/api/clientes?limit=0", &key);
    assert_eq!(res.status().as_u16(), 429);

    let res = app.get("/v1/api/api-keys/test", &other);
    assert_eq!(res.status().as_u16(), 200, "second company unaffected");
    assert_eq!(header(&res, "x-ratelimit-remaining"), 99);
}

#[test]
fn limit_is_configurable_per_company() {
    let app = TestApp::spawn();
    let (status, body) = json(
        app.client
            .patch(format!("{}/admin/companies/1", app.url))
            .bearer_auth(app.admin_token())
            .json(&json!({"rate_limit_per_minute": 3}))
            .send()
            .unwrap(),
    );
    assert_eq!(status, 200, "{body}");
    wait_for_fresh_minute_if_needed();
    for _ in 0..3 {
        let res = app.get("/v1/api/api-keys/test", &app.sk_test());
        assert_eq!(res.status().as_u16(), 200);
        assert_eq!(header(&res, "x-ratelimit-limit"), 3);
    }
    assert_error(
        app.get("/v1/api/api-keys/test", &app.sk_test()),
        429,
        "RATE_LIMITED",
    );
}

#[test]
fn id_empresa_refusals_are_counted_and_carry_the_headers() {
    let app = TestApp::spawn();
    let key = app.sk_test();
    wait_for_fresh_minute_if_needed();
    let remaining = |res: &reqwest::blocking::Response| header(res, "x-ratelimit-remaining");
    let before = remaining(&app.get("/v1/api/api-keys/test", &key));

    // Another company's id: 403, counted, with every rate header.
    let res = app.get("/v1/api/facturacion/2/status?id_empresa=2", &key);
    assert_eq!(header(&res, "x-ratelimit-limit"), 100);
    assert!(header(&res, "x-ratelimit-reset") > 0);
    assert_eq!(remaining(&res), before - 1);
    assert_error(res, 403, "FORBIDDEN");

    // Not a number: 422, counted too.
    let res = app.get("/v1/api/clientes?id_empresa=x", &key);
    assert_eq!(remaining(&res), before - 2);
    let body = assert_error(res, 422, "VALIDATION_ERROR");
    assert_eq!(body["error"]["details"][0]["field"], "id_empresa", "{body}");

    // The key's own company passes, and the next answer counts on from there.
    let res = app.get("/v1/api/clientes?id_empresa=1", &key);
    assert_eq!(res.status().as_u16(), 200);
    assert_eq!(remaining(&res), before - 3);
}
