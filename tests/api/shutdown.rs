//! SIGTERM drains in-flight requests: a slow synchronous issue started before
//! the signal is answered, and the process then exits cleanly.

use std::time::Duration;

use emisor::api::invoice_request::examples;
use serde_json::json;

use crate::support::app::*;

#[test]
fn sigterm_finishes_the_request_in_flight() {
    let mut app = TestApp::spawn();
    let sim = app.keys["tax_sim_url"].as_str().unwrap().to_string();
    let res = app
        .client
        .post(format!("{sim}/__sim/mode"))
        .json(&json!({"mode": "slow", "latency_ms": 1500}))
        .send()
        .unwrap();
    assert!(res.status().is_success());
    let url = app.url.clone();
    let key = app.sk_test();
    let request = std::thread::spawn(move || {
        let mut body = examples::invoice();
        body["referencia_externa"] = json!("shutdown-1");
        client()
            .post(format!("{url}/v1/api/facturacion"))
            .header("X-Api-Key", key)
            .json(&body)
            .send()
            .map(|r| (r.status().as_u16(), r.text().unwrap_or_default()))
    });
    std::thread::sleep(Duration::from_millis(500));
    app.stop(); // SIGTERM, waits for the exit
    let (status, body) = request.join().unwrap().expect("answered, not cut off");
    assert_eq!(status, 200, "{body}");
    let body: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["data"]["transmission"]["isValid"], true, "{body}");
}

#[test]
fn sigterm_closes_open_websockets_instead_of_waiting_for_them() {
    // A grace period longer than `stop` waits: an open socket holding the
    // stop for it would fail this test.
    let mut app =
        TestApp::spawn_with(Launch::default().env("EMISOR_SERVER__SHUTDOWN_TIMEOUT_S", "120"));
    let host = app.url.trim_start_matches("http://").to_string();
    let stream = std::net::TcpStream::connect(&host).unwrap();
    let url = format!("ws://{host}/v1/api/ws?api_key={}", app.sk_test());
    let (mut socket, _) = tungstenite::client(url.as_str(), stream).unwrap();
    socket
        .get_ref()
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    app.stop(); // SIGTERM, waits for the exit
                // The server said goodbye rather than dropping the connection.
    let closed = loop {
        match socket.read() {
            Ok(tungstenite::Message::Close(_)) => break true,
            Ok(_) => continue,
            Err(_) => break false,
        }
    };
    assert!(closed, "a Close frame before the end");
}
