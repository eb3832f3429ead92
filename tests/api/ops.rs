use crate::support::app::*;

#[test]
fn health_readiness_and_metrics() {
    let app = TestApp::spawn();
    let (status, body) = json(
        app.client
            .get(format!("{}/healthz", app.url))
            .send()
            .unwrap(),
    );
    assert_eq!(status, 200);
    assert_eq!(body["data"]["status"], "ok");
    let (status, ready) = json(
        app.client
            .get(format!("{}/readyz", app.url))
            .send()
            .unwrap(),
    );
    assert_eq!(status, 200, "{ready}");
    assert_eq!(ready["data"]["store"], "ok");
    let actors = ready["data"]["actors"].as_array().unwrap();
    let mut names: Vec<&str> = actors.iter().map(|a| a["name"].as_str().unwrap()).collect();
    names.sort_unstable();
    let mut expected = ACTORS.to_vec();
    expected.sort_unstable();
    assert_eq!(names, expected, "every supervised actor is reported");
    for a in actors {
        assert_eq!(a["alive"], true, "{a}");
        // A fresh server: nothing has died yet.
        assert_eq!(a["restarts"], 0, "{a}");
    }

    app.get("/v1/api/api-keys/test", &app.sk_test());
    app.get("/v1/api/api-keys/test", "bad");
    let res = app
        .client
        .get(format!("{}/metrics", app.url))
        .send()
        .unwrap();
    assert!(res.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/plain"));
    let text = res.text().unwrap();
    assert!(text.contains(r#"emisor_http_requests_total{route="/v1/api/api-keys/test",method="GET",status="200"} 1"#), "{text}");
    assert!(text.contains(r#"status="401""#), "{text}");
    assert!(
        text.contains("emisor_http_request_duration_seconds_bucket"),
        "{text}"
    );
    for actor in ACTORS {
        let up = format!(r#"emisor_actor_up{{actor="{actor}"}} 1"#);
        let restarts = format!(r#"emisor_actor_restarts_total{{actor="{actor}"}} 0"#);
        assert!(text.contains(&up), "{up} in {text}");
        assert!(text.contains(&restarts), "{restarts} in {text}");
    }
}

/// Every actor the service supervises, as `/readyz` and `/metrics` name them.
const ACTORS: [&str; 11] = [
    "rate_limiter",
    "idempotency_lock",
    "document_builder",
    "signer_pool",
    "transmitter",
    "retry_scheduler",
    "recovery_ticker",
    "webhook_sender",
    "ws_hub",
    "mailer",
    "mail_scheduler",
];

#[test]
fn every_response_has_a_request_id() {
    let app = TestApp::spawn();
    let res = app.get("/v1/api/api-keys/test", &app.sk_test());
    assert!(res.headers().get("x-request-id").is_some());
    let res = app
        .client
        .get(format!("{}/healthz", app.url))
        .header("X-Request-Id", "abc-123")
        .send()
        .unwrap();
    assert_eq!(res.headers()["x-request-id"], "abc-123");
}
