//! Webhooks: the same events as the WebSocket, POSTed to the company's URL
//! with an HMAC-SHA256 signature, retried with backoff, and logged.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use emisor::api::invoice_request::examples;
use emisor::issuing::webhooks::signature;
use serde_json::{json, Value};

use crate::support::app::*;

/// One received request: headers (lower-case names) and body.
pub type Received = Arc<Mutex<Vec<(Vec<(String, String)>, Vec<u8>)>>>;

/// A minimal HTTP receiver answering `500` to the first `fail_first`
/// requests and `200` after.
pub fn receiver(fail_first: usize) -> (String, Received) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hooks", listener.local_addr().unwrap());
    let got: Received = Arc::default();
    let seen = got.clone();
    std::thread::spawn(move || {
        for (n, stream) in listener.incoming().enumerate() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut headers = Vec::new();
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            loop {
                line.clear();
                reader.read_line(&mut line).unwrap();
                let l = line.trim_end();
                if l.is_empty() {
                    break;
                }
                if let Some((k, v)) = l.split_once(':') {
                    headers.push((k.trim().to_lowercase(), v.trim().to_string()));
                }
            }
            let len: usize = headers
                .iter()
                .find(|(k, _)| k == "content-length")
                .map(|(_, v)| v.parse().unwrap())
                .unwrap_or(0);
            let mut body = vec![0; len];
            reader.read_exact(&mut body).unwrap();
            seen.lock().unwrap().push((headers, body));
            let status = if n < fail_first {
                "500 Internal Server Error"
            } else {
                "200 OK"
            };
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
            );
        }
    });
    (url, got)
}

pub fn header<'a>(headers: &'a [(String, String)], name: &str) -> &'a str {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
        .unwrap_or("")
}

#[test]
fn events_are_posted_signed_retried_and_logged() {
    let app = TestApp::spawn_with(Launch::default().env("EMISOR_RESILIENCE__TIME_SCALE", "0.01"));
    let (url, got) = receiver(2);
    let (status, company) = json(
        app.client
            .patch(format!("{}/admin/companies/1", app.url))
            .bearer_auth(app.admin_token())
            .json(&json!({"webhook_url": url}))
            .send()
            .unwrap(),
    );
    assert_eq!(status, 200, "{company}");
    let secret = company["data"]["webhook_secret"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(secret.starts_with("whsec_"));

    let mut body = examples::invoice();
    body["referencia_externa"] = json!("webhook-1");
    let (status, issued) = json(app.post("/v1/api/facturacion", &app.sk_test(), &body));
    assert_eq!(status, 200, "{issued}");
    let id = issued["data"]["documento"]["id"].as_u64().unwrap();

    // Two refusals, then delivered (retry delays 0.1 s, 0.2 s scaled).
    let deadline = Instant::now() + Duration::from_secs(20);
    while got.lock().unwrap().len() < 3 {
        assert!(Instant::now() < deadline, "webhook not retried to success");
        std::thread::sleep(Duration::from_millis(50));
    }
    let deliveries = got.lock().unwrap().clone();
    let (headers, raw) = &deliveries[2];
    assert_eq!(
        header(headers, "x-emisor-signature"),
        signature(&secret, raw),
        "HMAC-SHA256 of the body"
    );
    assert_eq!(header(headers, "x-emisor-event"), "facturacion:update");
    let event: Value = serde_json::from_slice(raw).unwrap();
    assert_eq!(event["event"], "facturacion:update");
    assert_eq!(event["data"]["id"], id);
    assert_eq!(event["data"]["id_estado_documento"], 2);
    assert_eq!(deliveries[0].1, *raw, "the same delivery is retried");

    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (_, log) = json(app.admin_get("/admin/companies/1/webhooks"));
        let statuses: Vec<String> = log["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["delivery"]["status"].as_str().unwrap().to_string())
            .collect();
        if statuses == ["retrying", "retrying", "delivered"] {
            break;
        }
        assert!(Instant::now() < deadline, "delivery log: {statuses:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_error(
        app.client
            .patch(format!("{}/admin/companies/1", app.url))
            .bearer_auth(app.admin_token())
            .json(&json!({"webhook_url": "ftp://x"}))
            .send()
            .unwrap(),
        422,
        "VALIDATION_ERROR",
    );
}
