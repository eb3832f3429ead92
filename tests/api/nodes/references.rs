//! The idempotency claim across nodes (spec 7–8, decisions.md §3): the same
//! reference sent to every node at once makes one document, and an
//! identical payload is refused on any node within the window.

use std::sync::Barrier;

use emisor::api::invoice_request::examples;
use serde_json::{json, Value};

use crate::support::app::*;
use crate::support::flow::fast_launch;
use crate::support::nodes::*;

/// A rate limit out of the way and the real five-minute window.
fn launch() -> Launch {
    Launch::default().env("EMISOR_RATE_LIMIT__REQUESTS_PER_MINUTE", "100000")
}

/// Sends `bodies[i]` to node `i % n` all at once (a barrier before the
/// sends); the answers.
fn race(nodes: &Nodes, path: &str, bodies: Vec<Value>) -> Vec<(u16, Value)> {
    let key = nodes.sk_test();
    let barrier = Barrier::new(bodies.len());
    std::thread::scope(|s| {
        let threads: Vec<_> = bodies
            .into_iter()
            .enumerate()
            .map(|(i, body)| {
                let (barrier, key) = (&barrier, &key);
                let url = nodes.nodes[i % nodes.nodes.len()].url.clone();
                s.spawn(move || {
                    let http = client();
                    barrier.wait();
                    json(
                        http.post(format!("{url}{path}"))
                            .header("X-Api-Key", key)
                            .json(&body)
                            .send()
                            .expect("POST"),
                    )
                })
            })
            .collect();
        threads
            .into_iter()
            .map(|t| t.join().expect("client"))
            .collect()
    })
}

/// Exactly one answer is a 200; the others are 409s among `codes`, and a
/// `DUPLICATE_REFERENCE`/`DUPLICATE_PAYLOAD` names the document made. The
/// document's id.
fn one_document(answers: &[(u16, Value)], id_at: &[&str], codes: &[&str]) -> u64 {
    let made: Vec<&Value> = answers
        .iter()
        .filter(|(s, _)| *s == 200)
        .map(|(_, b)| b)
        .collect();
    assert_eq!(made.len(), 1, "exactly one proceeds: {answers:?}");
    let mut at = &made[0]["data"];
    for step in id_at {
        at = &at[*step];
    }
    let id = at.as_u64().expect("the document's id");
    for (status, body) in answers.iter().filter(|(s, _)| *s != 200) {
        assert_eq!(*status, 409, "{body}");
        let code = body["error"]["code"].as_str().expect("code");
        assert!(codes.contains(&code), "{body}");
        if code != "DUPLICATE_IN_PROGRESS" && !body["data"]["id"].is_null() {
            assert_eq!(body["data"]["id"], id, "{body}");
        }
    }
    id
}

fn documents_with_reference(nodes: &Nodes, reference: &str) -> i64 {
    nodes
        .database()
        .query_one(
            "SELECT count(*) FROM documents WHERE external_reference = $1",
            &[&reference],
        )
        .expect("count")
        .get(0)
}

#[test]
fn the_same_reference_on_every_node_at_once_makes_one_document() {
    if !on_shared_database() {
        return;
    }
    let nodes = Nodes::start(3, launch());
    let codes = ["DUPLICATE_IN_PROGRESS", "DUPLICATE_REFERENCE"];
    for round in 0..4 {
        let reference = format!("nodos-{round}-{}", std::process::id());
        // Two requests per node: the very same body (a client retrying on
        // another node) and the same reference with other content.
        let bodies: Vec<Value> = (0..6)
            .map(|i| {
                let mut body = examples::invoice();
                body["referencia_externa"] = json!(reference);
                body["transmit"] = json!(false);
                if i % 2 == 1 {
                    body["notes"] = json!(format!("intento {i}"));
                }
                body
            })
            .collect();
        let answers = race(&nodes, "/v1/api/facturacion", bodies);
        let id = one_document(&answers, &["documento", "id"], &codes);
        assert_eq!(documents_with_reference(&nodes, &reference), 1);
        // Settled: every node names the document.
        for node in &nodes.nodes {
            let mut body = examples::invoice();
            body["referencia_externa"] = json!(reference);
            let err = assert_error(
                node.post("/v1/api/facturacion", &nodes.sk_test(), &body),
                409,
                "DUPLICATE_REFERENCE",
            );
            assert_eq!(err["data"]["id"], id, "{err}");
        }
    }
}

#[test]
fn the_same_spanish_referencia_on_every_node_at_once_makes_one_document() {
    if !on_shared_database() {
        return;
    }
    let nodes = Nodes::start(3, launch());
    let codes = ["DUPLICATE_IN_PROGRESS", "DUPLICATE_REFERENCE"];
    for round in 0..3 {
        let reference = format!("es-nodos-{round}-{}", std::process::id());
        let bodies: Vec<Value> = (0..6)
            .map(|i| {
                let mut body = emisor::api::facturacion_es::examples::factura();
                body["referencia"] = json!(reference);
                if i % 2 == 1 {
                    body["observaciones"] = json!(format!("intento {i}"));
                }
                body
            })
            .collect();
        let answers = race(&nodes, "/v1/api/facturacion-es/factura", bodies);
        one_document(&answers, &["id"], &codes);
        assert_eq!(documents_with_reference(&nodes, &reference), 1);
    }
}

#[test]
fn an_identical_payload_is_refused_on_every_node_within_the_window() {
    if !on_shared_database() {
        return;
    }
    let nodes = Nodes::start(3, launch());
    let key = nodes.sk_test();
    // Made on one node, refused on each of the others.
    let mut body = examples::invoice();
    body["transmit"] = json!(false);
    body["notes"] = json!(format!("venta {}", std::process::id()));
    let (status, res) = json(nodes.nodes[0].post("/v1/api/facturacion", &key, &body));
    assert_eq!(status, 200, "{res}");
    let id = res["data"]["documento"]["id"].as_u64().expect("id");
    for node in &nodes.nodes[1..] {
        let err = assert_error(
            node.post("/v1/api/facturacion", &key, &body),
            409,
            "DUPLICATE_PAYLOAD",
        );
        assert_eq!(err["data"]["id"], id, "{err}");
    }
    // Sent to every node at once: one document.
    for round in 0..4 {
        let mut body = examples::invoice();
        body["transmit"] = json!(false);
        body["notes"] = json!(format!("carrera {round} {}", std::process::id()));
        let answers = race(&nodes, "/v1/api/facturacion", vec![body; 6]);
        one_document(&answers, &["documento", "id"], &["DUPLICATE_PAYLOAD"]);
    }
}

/// The window is the configured one on every node: once it has passed, the
/// same payload makes a new document on another node.
#[test]
fn an_identical_payload_is_accepted_again_after_the_window() {
    if !on_shared_database() {
        return;
    }
    // 300 s × 0.01: a three-second window.
    let nodes = Nodes::start(2, fast_launch());
    let key = nodes.sk_test();
    let mut body = examples::invoice();
    body["transmit"] = json!(false);
    let (status, res) = json(nodes.nodes[0].post("/v1/api/facturacion", &key, &body));
    assert_eq!(status, 200, "{res}");
    let first = res["data"]["documento"]["id"].as_u64().expect("id");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let second = loop {
        let (status, res) = json(nodes.nodes[1].post("/v1/api/facturacion", &key, &body));
        if status == 200 {
            break res["data"]["documento"]["id"].as_u64().expect("id");
        }
        assert_eq!(res["error"]["code"], "DUPLICATE_PAYLOAD", "{res}");
        assert!(std::time::Instant::now() < deadline, "never accepted again");
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    assert_ne!(first, second);
}
