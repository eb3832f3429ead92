//! What one node tells its sockets reaches every node's (docs/operations.md,
//! "Several nodes"): a WebSocket, the console's stream and the operator's
//! channel on one node hear the events of work done on another, a key
//! revoked on one node is refused and its socket closed on the others (and a
//! company's changed rate limit counts there), and events cross again once
//! the database comes back after the nodes lost it, or restarts.

use std::io::{BufRead, BufReader};
use std::time::{Duration, Instant};

use emisor::api::invoice_request::examples;
use serde_json::{json, Value};

use crate::console::harness::{http, http_sign_in};
use crate::support::app::*;
use crate::support::bodies::unique;
use crate::support::flow::{fast_launch, Ws};
use crate::support::nodes::*;
use crate::support::pg::PrivateCluster;

const UPDATE: &str = "facturacion:update";
const RECONCILIATION: &str = "operador:reconciliacion";
/// Ample for a note to cross; the tests wait for an outcome, never time it.
const WITHIN: Duration = Duration::from_secs(20);
/// Long enough for a second copy of an event to arrive, were one sent.
const QUIET: Duration = Duration::from_secs(2);
/// Well under the key cache's expiry when several nodes share the store
/// (`SHARED_KEY_TTL`, 30 s): what is seen within it was told, not expired.
const TOLD_WITHIN: Duration = Duration::from_secs(10);

/// An invoice issued (and accepted) through `app`; its id.
fn issue(app: &TestApp, key: &str) -> u64 {
    let (status, res) = json(app.post("/v1/api/facturacion", key, &unique(examples::invoice())));
    assert_eq!(status, 200, "{res}");
    res["data"]["documento"]["id"].as_u64().expect("id")
}

#[test]
fn a_socket_on_any_node_hears_a_document_issued_on_another_once() {
    if !on_shared_database() {
        return;
    }
    let nodes = Nodes::start(3, fast_launch());
    let key = nodes.sk_test();
    let (a, b, c) = (&nodes.nodes[0], &nodes.nodes[1], &nodes.nodes[2]);
    let mut on_a = Ws::connect(a, &key);
    let mut on_b = Ws::connect(b, &key);
    let mut on_c = Ws::connect(c, &key);

    let id = issue(b, &key);
    for (ws, node) in [(&mut on_a, "A"), (&mut on_b, "B"), (&mut on_c, "C")] {
        let event = ws.event_for(UPDATE, id, WITHIN);
        assert_eq!(event["data"]["id_estado_documento"], 2, "{node}: {event}");
        assert_eq!(
            event["data"]["estado"], "Enviado/Aceptado",
            "{node}: {event}"
        );
    }
    // Once each: the issuing node passes over its own note.
    for (ws, node) in [(&mut on_a, "A"), (&mut on_b, "B"), (&mut on_c, "C")] {
        assert_eq!(ws.more_events_for(UPDATE, id, QUIET), 0, "{node}");
    }

    // Another company's room on another node hears nothing of it: the
    // rooms travel with the event.
    let (status, other) =
        json(a.admin_post("/admin/companies/1/api-keys", &json!({"ambiente": "live"})));
    assert_eq!(status, 201, "{other}");
    let live = other["data"]["key"].as_str().expect("key").to_string();
    let mut production = Ws::connect(a, &live);
    let second = issue(c, &key);
    on_a.event_for(UPDATE, second, WITHIN);
    assert!(
        production.events_within(QUIET).is_empty(),
        "production's room hears no test document"
    );
}

/// The operator's channel on every node hears an operator event made on
/// one of them (here a reconciliation finding of a pass asked of node B),
/// once each, and the finding is not made again by a pass on another node:
/// the report is shared too.
#[test]
fn the_operator_channel_on_any_node_hears_a_finding_made_on_another_once() {
    if !on_shared_database() {
        return;
    }
    // Every accepted document sampled; no periodic pass (passes are asked
    // of a chosen node through the admin API).
    let launch = fast_launch()
        .env("EMISOR_RECONCILIATION__SAMPLE_PERCENT", "100")
        .env("EMISOR_RECONCILIATION__INTERVAL_S", "86400");
    let nodes = Nodes::start(3, launch);
    let key = nodes.sk_test();
    let (a, b, c) = (&nodes.nodes[0], &nodes.nodes[1], &nodes.nodes[2]);
    let (status, res) = json(c.post("/v1/api/facturacion", &key, &unique(examples::invoice())));
    assert_eq!(status, 200, "{res}");
    assert_eq!(res["data"]["id_estado_documento"], 2, "{res}");
    let id = res["data"]["documento"]["id"].as_u64().expect("id");
    let code = res["data"]["cufe"].as_str().expect("cufe").to_string();

    let token = a.admin_token();
    let mut sockets: Vec<(Ws, &str)> = [(a, "A"), (b, "B"), (c, "C")]
        .into_iter()
        .map(|(node, name)| {
            let ws = Ws::connect_operator(node, &token).expect("operator socket");
            (ws, name)
        })
        .collect();
    // The authority forgets what it accepted: the document is a mismatch.
    let reset = client()
        .post(format!("{}/__sim/reset", nodes.sim.base))
        .send()
        .expect("sim reset");
    assert!(reset.status().is_success());

    let pass = |node: &TestApp| {
        let res = node
            .client
            .post(format!("{}/admin/reconciliacion", node.url))
            .bearer_auth(node.admin_token())
            .send()
            .expect("reconciliation pass");
        let (status, body) = json(res);
        assert_eq!(status, 200, "{body}");
        body["data"].clone()
    };
    let summary = pass(b);
    assert_eq!(summary["discrepancias"], 1, "{summary}");
    assert_eq!(summary["hallazgos_nuevos"], 1, "{summary}");

    let about = |e: &Value| e["event"] == RECONCILIATION && e["data"]["id_documento"] == id;
    for (ws, node) in &mut sockets {
        let heard = ws.wait_for(WITHIN, about);
        assert_eq!(heard["data"]["tipo"], "desconocido", "{node}: {heard}");
        assert_eq!(
            heard["data"]["clave"],
            format!("{id}:desconocido"),
            "{node}"
        );
        assert_eq!(heard["data"]["codigo"], code.as_str(), "{node}: {heard}");
        assert_eq!(heard["data"]["estado_servicio"], 2, "{node}: {heard}");
        assert_eq!(heard["data"]["corregido"], false, "{node}: {heard}");
    }

    // A pass on A finds the same mismatch, already reported: nothing is
    // sent again, and no socket hears the first one a second time.
    let again = pass(a);
    assert_eq!(again["discrepancias"], 1, "{again}");
    assert_eq!(again["hallazgos_nuevos"], 0, "{again}");
    for (ws, node) in &mut sockets {
        let more = ws.events_within(QUIET);
        let repeated = more.iter().filter(|e| about(e)).count();
        assert_eq!(repeated, 0, "{node}: {more:?}");
    }
}

/// The next server-sent event of a console stream whose data is `event`
/// about document `id` (reads until the client's timeout otherwise).
fn stream_event(lines: &mut impl BufRead, event: &str, id: u64) -> Value {
    let mut line = String::new();
    loop {
        line.clear();
        let n = lines.read_line(&mut line).expect("the stream goes on");
        assert!(n > 0, "the stream ended");
        if let Some(data) = line.trim_end().strip_prefix("data: ") {
            let v: Value = serde_json::from_str(data).expect("an event is JSON");
            if v["event"] == event && v["data"]["id"] == id {
                return v;
            }
        }
    }
}

#[test]
fn the_console_stream_on_one_node_hears_a_document_issued_on_another() {
    if !on_shared_database() {
        return;
    }
    let nodes = Nodes::start(2, fast_launch());
    let key = nodes.sk_test();
    let (a, b) = (&nodes.nodes[0], &nodes.nodes[1]);
    let cookie = http_sign_in(a, &key).expect("signed in on A");
    let res = http()
        .get(format!("{}/console/stream", a.url))
        .header("Cookie", &cookie)
        .header("Origin", &a.url)
        .send()
        .expect("stream");
    assert_eq!(res.status().as_u16(), 200);
    let mut lines = BufReader::new(res);
    let mut first = String::new();
    lines
        .read_line(&mut first)
        .expect("the stream's first line");
    assert_eq!(first.trim_end(), ": emisor", "joined the hub");

    let id = issue(b, &key);
    let event = stream_event(&mut lines, UPDATE, id);
    assert_eq!(event["data"]["id_estado_documento"], 2, "{event}");
}

/// Polls `check` until it holds or `within` passes; whether it held.
fn eventually(within: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + within;
    loop {
        if check() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_key_revoked_or_a_limit_changed_on_one_node_holds_on_another() {
    if !on_shared_database() {
        return;
    }
    let nodes = Nodes::start(2, fast_launch());
    let (a, b) = (&nodes.nodes[0], &nodes.nodes[1]);
    let (status, made) =
        json(b.admin_post("/admin/companies/1/api-keys", &json!({"ambiente": "test"})));
    assert_eq!(status, 201, "{made}");
    let key = made["data"]["key"].as_str().expect("key").to_string();
    let key_id = made["data"]["id"].as_u64().expect("key id");
    const ASK: &str = "/v1/api/facturacion/suscripcion";
    // A knows the key (cached) and has a socket open with it.
    assert_eq!(a.get(ASK, &key).status().as_u16(), 200);
    let mut socket = Ws::connect(a, &key);

    let (status, revoked) =
        json(b.admin_post(&format!("/admin/api-keys/{key_id}/revoke"), &json!({})));
    assert_eq!(status, 200, "{revoked}");
    assert_eq!(b.get(ASK, &key).status().as_u16(), 401, "on B at once");
    assert!(
        eventually(TOLD_WITHIN, || a.get(ASK, &key).status().as_u16() == 401),
        "A refuses the key once told"
    );
    assert!(
        socket.closes_within(TOLD_WITHIN),
        "A closed the key's socket"
    );
    // The company's other key is untouched on A.
    let other = nodes.sk_test();
    assert_eq!(a.get(ASK, &other).status().as_u16(), 200);

    // A company's rate limit changed through B is A's too once told (its
    // cached key carries the limit).
    let limit = |res: reqwest::blocking::Response| {
        res.headers()
            .get("x-ratelimit-limit")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    assert_eq!(limit(a.get(ASK, &other)), "100000");
    let (status, changed) = json(
        b.client
            .patch(format!("{}/admin/companies/1", b.url))
            .bearer_auth(b.admin_token())
            .json(&json!({"rate_limit_per_minute": 50000}))
            .send()
            .expect("PATCH"),
    );
    assert_eq!(status, 200, "{changed}");
    assert!(
        eventually(TOLD_WITHIN, || limit(a.get(ASK, &other)) == "50000"),
        "A counts with the new limit"
    );
}

#[test]
fn a_key_revoked_by_the_command_line_is_refused_and_its_socket_closed_by_the_nodes() {
    if !on_shared_database() {
        return;
    }
    let nodes = Nodes::start(2, fast_launch());
    let (a, b) = (&nodes.nodes[0], &nodes.nodes[1]);
    let (status, made) =
        json(a.admin_post("/admin/companies/1/api-keys", &json!({"ambiente": "test"})));
    assert_eq!(status, 201, "{made}");
    let key = made["data"]["key"].as_str().expect("key").to_string();
    let key_id = made["data"]["id"].as_u64().expect("key id").to_string();
    const ASK: &str = "/v1/api/facturacion/suscripcion";
    for node in [a, b] {
        assert_eq!(node.get(ASK, &key).status().as_u16(), 200);
    }
    let mut socket = Ws::connect(b, &key);

    let (ok, out) = nodes.admin_cli(&["key", "revoke", "--id", &key_id]);
    assert!(ok, "{out}");
    for node in [a, b] {
        assert!(
            eventually(TOLD_WITHIN, || node.get(ASK, &key).status().as_u16() == 401),
            "the nodes refuse the key once told"
        );
    }
    assert!(socket.closes_within(TOLD_WITHIN), "its socket closed");
}

#[test]
fn events_and_revocations_cross_again_after_the_nodes_lose_the_database() {
    if !on_shared_database() {
        return;
    }
    let nodes = Nodes::start(2, fast_launch());
    let key = nodes.sk_test();
    let (a, b) = (&nodes.nodes[0], &nodes.nodes[1]);
    let (status, made) =
        json(b.admin_post("/admin/companies/1/api-keys", &json!({"ambiente": "test"})));
    assert_eq!(status, 201, "{made}");
    let doomed = made["data"]["key"].as_str().expect("key").to_string();
    let doomed_id = made["data"]["id"].as_u64().expect("key id");
    const ASK: &str = "/v1/api/facturacion/suscripcion";
    assert_eq!(a.get(ASK, &doomed).status().as_u16(), 200);
    let mut doomed_socket = Ws::connect(a, &doomed);

    // Every connection ended and new ones refused, then allowed again: what
    // a restart of the database does to the nodes.
    nodes.database_available(false);
    nodes.database_available(true);

    // The key is revoked while A may not be listening yet: A makes up for
    // what it missed once it listens again, or hears it.
    assert!(
        eventually(WITHIN, || {
            let res = b.admin_post(&format!("/admin/api-keys/{doomed_id}/revoke"), &json!({}));
            res.status().as_u16() == 200
        }),
        "B revokes once the database is back"
    );
    assert!(
        eventually(WITHIN, || a.get(ASK, &doomed).status().as_u16() == 401),
        "A refuses the revoked key"
    );
    assert!(doomed_socket.closes_within(WITHIN), "A closed its socket");

    // Events cross again: a document issued on B is heard on A.
    let mut on_a = Ws::connect(a, &key);
    let id = {
        let mut id = None;
        assert!(
            eventually(WITHIN, || {
                let res = b.post("/v1/api/facturacion", &key, &unique(examples::invoice()));
                if res.status().as_u16() != 200 {
                    return false;
                }
                let (_, body) = json(res);
                id = body["data"]["documento"]["id"].as_u64();
                true
            }),
            "B issues once the database is back"
        );
        id.expect("id")
    };
    on_a.event_for(UPDATE, id, WITHIN);
}

#[test]
fn events_cross_again_after_the_database_restarts() {
    if !on_shared_database() {
        return;
    }
    let Some(cluster) = PrivateCluster::start() else {
        return;
    };
    let nodes = Nodes::start(2, fast_launch().env("EMISOR_STORE__URL", &cluster.url()));
    let key = nodes.sk_test();
    let (a, b) = (&nodes.nodes[0], &nodes.nodes[1]);
    let mut on_a = Ws::connect(a, &key);
    let before = issue(b, &key);
    on_a.event_for(UPDATE, before, WITHIN);

    // Every server process ended at once, then started again: the nodes
    // run on, and A's listener connects again by itself.
    cluster.crash();
    cluster.start_again();

    // B issues once it reaches the database again; A hears one of its
    // documents once it listens again (one issued before may be missed).
    let mut issued: Vec<u64> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        assert!(
            Instant::now() < deadline,
            "no event crossed after the restart; issued on B: {issued:?}"
        );
        let res = b.post("/v1/api/facturacion", &key, &unique(examples::invoice()));
        if res.status().as_u16() == 200 {
            let (_, body) = json(res);
            issued.extend(body["data"]["documento"]["id"].as_u64());
        }
        let heard = on_a.events_within(Duration::from_millis(500));
        if heard.iter().any(|e| {
            e["event"] == UPDATE
                && e["data"]["id"]
                    .as_u64()
                    .is_some_and(|id| issued.contains(&id))
        }) {
            break;
        }
    }
}
