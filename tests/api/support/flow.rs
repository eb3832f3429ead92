//! Shared by the asynchronous, resilience, idempotency and crash tests: a
//! real WebSocket client, the simulator's control surface, and polling a
//! document's state with a deadline.

use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tungstenite::{Message, WebSocket};

use super::app::*;
use super::bodies::unique;

/// A server whose resilience clock runs 100× faster and whose rate limit
/// does not get in the way of polling.
pub fn fast_launch() -> Launch {
    Launch::default()
        .env("EMISOR_RESILIENCE__TIME_SCALE", "0.01")
        .env("EMISOR_RATE_LIMIT__REQUESTS_PER_MINUTE", "100000")
}

/// A WebSocket client joined to the key's rooms.
pub struct Ws {
    socket: WebSocket<TcpStream>,
    /// Events read while looking for another one, oldest first.
    seen: Vec<Value>,
}

impl Ws {
    pub fn connect(app: &TestApp, key: &str) -> Ws {
        let host = app.url.trim_start_matches("http://").to_string();
        let stream = TcpStream::connect(&host).expect("connect WebSocket");
        let url = format!("ws://{host}/v1/api/ws?api_key={key}");
        let (socket, response) = tungstenite::client(url.as_str(), stream).expect("WS handshake");
        assert_eq!(response.status().as_u16(), 101);
        socket
            .get_ref()
            .set_read_timeout(Some(Duration::from_millis(200)))
            .expect("read timeout");
        Ws {
            socket,
            seen: Vec::new(),
        }
    }

    /// The operator's socket (`/v1/api/ws/operador`) opened with `token` in
    /// `Authorization: Bearer`; the refusal's HTTP status otherwise.
    pub fn connect_operator(app: &TestApp, token: &str) -> Result<Ws, u16> {
        use tungstenite::client::IntoClientRequest;
        let host = app.url.trim_start_matches("http://").to_string();
        let stream = TcpStream::connect(&host).expect("connect WebSocket");
        let mut request = format!("ws://{host}/v1/api/ws/operador")
            .into_client_request()
            .expect("request");
        request.headers_mut().insert(
            "Authorization",
            format!("Bearer {token}").parse().expect("header"),
        );
        match tungstenite::client(request, stream) {
            Ok((socket, _)) => {
                socket
                    .get_ref()
                    .set_read_timeout(Some(Duration::from_millis(200)))
                    .expect("read timeout");
                Ok(Ws {
                    socket,
                    seen: Vec::new(),
                })
            }
            Err(tungstenite::HandshakeError::Failure(tungstenite::Error::Http(res))) => {
                Err(res.status().as_u16())
            }
            Err(e) => panic!("operator WS handshake: {e}"),
        }
    }

    /// Reads until an event matching `pred` arrives (or `within` passes).
    pub fn wait_for(&mut self, within: Duration, pred: impl Fn(&Value) -> bool) -> Value {
        if let Some(i) = self.seen.iter().position(&pred) {
            return self.seen.remove(i);
        }
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if let Some(v) = self.read_event() {
                if pred(&v) {
                    return v;
                }
                self.seen.push(v);
            }
        }
        panic!("no matching event within {within:?}; seen: {:?}", self.seen);
    }

    /// Every event that arrives within `within`, after those already read
    /// and not yet matched.
    pub fn events_within(&mut self, within: Duration) -> Vec<Value> {
        self.read_for(within);
        std::mem::take(&mut self.seen)
    }

    /// Reads every event arriving within `within` into `seen`.
    fn read_for(&mut self, within: Duration) {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if let Some(v) = self.read_event() {
                self.seen.push(v);
            }
        }
    }

    /// The next event, or `None` when the read timed out (or was a control frame).
    fn read_event(&mut self) -> Option<Value> {
        match self.socket.read() {
            Ok(Message::Text(text)) => Some(serde_json::from_str(&text).expect("event is JSON")),
            Ok(_) => None,
            Err(tungstenite::Error::Io(e))
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                None
            }
            Err(e) => panic!("WebSocket closed: {e}"),
        }
    }

    /// Whether the server closes the socket within `within` (a Close frame
    /// or the connection's end; pings read on the way are answered).
    pub fn closes_within(&mut self, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            match self.socket.read() {
                Ok(Message::Close(_)) => return true,
                Ok(Message::Text(text)) => {
                    self.seen
                        .push(serde_json::from_str(&text).expect("event is JSON"));
                }
                Ok(_) => {}
                Err(tungstenite::Error::Io(e))
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(_) => return true,
            }
        }
        false
    }

    /// The event `name` about document `id`.
    pub fn event_for(&mut self, name: &str, id: u64, within: Duration) -> Value {
        self.wait_for(within, |v| v["event"] == name && v["data"]["id"] == id)
    }

    /// How many more events `name` about document `id` arrive within
    /// `within` (waits the whole time; counts those already read too).
    pub fn more_events_for(&mut self, name: &str, id: u64, within: Duration) -> usize {
        self.read_for(within);
        self.seen
            .iter()
            .filter(|v| v["event"] == name && v["data"]["id"] == id)
            .count()
    }
}

/// The in-process simulator's base URL.
pub fn sim_url(app: &TestApp) -> String {
    app.keys["tax_sim_url"]
        .as_str()
        .expect("tax_sim_url")
        .to_string()
}

pub fn sim_mode_at(base: &str, mode: Value) {
    let res = client()
        .post(format!("{base}/__sim/mode"))
        .json(&mode)
        .send()
        .expect("sim mode");
    assert!(res.status().is_success(), "sim mode {mode}");
}

pub fn sim_stats_at(base: &str) -> Value {
    client()
        .get(format!("{base}/__sim/stats"))
        .send()
        .expect("sim stats")
        .json()
        .expect("stats JSON")
}

pub fn sim_mode(app: &TestApp, mode: Value) {
    sim_mode_at(&sim_url(app), mode)
}

pub fn sim_stats(app: &TestApp) -> Value {
    sim_stats_at(&sim_url(app))
}

/// `POST /facturacion` with `async: true` (made unique); the 202 body.
pub fn post_async(app: &TestApp, body: &Value) -> Value {
    post_async_with(app, &app.sk_test(), body)
}

/// [`post_async`] with the given key.
pub fn post_async_with(app: &TestApp, key: &str, body: &Value) -> Value {
    let mut body = unique(body.clone());
    body["async"] = json!(true);
    let (status, res) = json(app.post("/v1/api/facturacion", key, &body));
    assert_eq!(status, 202, "{res}");
    res
}

/// The status record of a document.
pub fn status_of(app: &TestApp, id: u64) -> Value {
    let (status, rec) = json(app.get(
        &format!("/v1/api/facturacion/{id}/status?id_empresa=1"),
        &app.sk_test(),
    ));
    assert_eq!(status, 200, "{rec}");
    rec["data"].clone()
}

/// Polls until document `id` is in `state`; returns its record.
pub fn wait_state(app: &TestApp, id: u64, state: u64, within: Duration) -> Value {
    let deadline = Instant::now() + within;
    let mut last = Value::Null;
    while Instant::now() < deadline {
        last = status_of(app, id);
        if last["id_estado_documento"] == state {
            return last;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("document {id} not in state {state} within {within:?}: {last}");
}

/// Polls until every document of `ids` is in `state`.
pub fn wait_all(app: &TestApp, ids: &[u64], state: u64, within: Duration) {
    let deadline = Instant::now() + within;
    let mut pending: Vec<u64> = ids.to_vec();
    while !pending.is_empty() {
        pending.retain(|id| status_of(app, *id)["id_estado_documento"] != state);
        if pending.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{} documents not in state {state} within {within:?}: {:?}",
            pending.len(),
            pending
                .iter()
                .map(|id| status_of(app, *id))
                .take(3)
                .collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `consecutivo` of a type: the next number.
pub fn next_number(app: &TestApp, tipo: &str) -> u64 {
    let (status, res) = json(app.get(
        &format!("/v1/api/facturacion/consecutivo/{tipo}"),
        &app.sk_test(),
    ));
    assert_eq!(status, 200, "{res}");
    res["data"]["siguiente"].as_u64().expect("siguiente")
}
