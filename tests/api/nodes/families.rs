//! Every family issues through any node, and numbering has no gap and no
//! duplicate when the nodes take numbers at once.

use std::collections::BTreeSet;

use emisor::api::invoice_request::examples;
use serde_json::{json, Value};

use crate::support::app::*;
use crate::support::bodies::unique;
use crate::support::events::{key_of, BUYER_NIT};
use crate::support::flow::{fast_launch, sim_stats_at, status_of};
use crate::support::nodes::*;
use crate::support::payroll::{employee_number, monthly, salary_replacement};

/// The answer's data, after checking it is a 200.
fn ok(res: reqwest::blocking::Response, what: &str) -> Value {
    let (status, body) = json(res);
    assert_eq!(status, 200, "{what}: {body}");
    assert_eq!(body["success"], true, "{what}: {body}");
    body["data"].clone()
}

/// Accepted by the authority, whichever family's answer it is.
fn accepted(data: &Value, what: &str) {
    let valid = data["transmission"]["isValid"]
        .as_bool()
        .or_else(|| data["tax_response"]["isValid"].as_bool())
        .or_else(|| data["is_valid"].as_bool())
        .or_else(|| data["estado_tax"].as_str().map(|s| s == "Aceptado"));
    assert_eq!(valid, Some(true), "{what} accepted: {data}");
}

#[test]
fn every_family_issues_through_three_nodes() {
    if !on_shared_database() {
        return;
    }
    let nodes = Nodes::start(3, fast_launch());
    let key = nodes.sk_test();

    let invoice = ok(
        nodes.post("/v1/api/facturacion", &key, &unique(examples::invoice())),
        "invoice",
    );
    accepted(&invoice, "invoice");
    let invoice_id = invoice["documento"]["id"].as_u64().expect("id");
    for (what, body) in [
        ("credit note", examples::credit_note()),
        ("debit note", examples::debit_note()),
    ] {
        let body = unique(examples::with_reference(body, invoice_id));
        let data = ok(nodes.post("/v1/api/facturacion", &key, &body), what);
        accepted(&data, what);
    }
    for (what, body) in [
        ("export invoice", examples::export_invoice()),
        ("support document", examples::support_document()),
        ("POS receipt", examples::pos()),
    ] {
        let data = ok(nodes.post("/v1/api/facturacion", &key, &unique(body)), what);
        accepted(&data, what);
    }

    let mut factura = emisor::api::facturacion_es::examples::factura();
    factura["referencia"] = json!(format!("nodes-es-{}", std::process::id()));
    let data = ok(
        nodes.post("/v1/api/facturacion-es/factura", &key, &factura),
        "Spanish invoice",
    );
    accepted(&data, "Spanish invoice");

    let support = ok(
        nodes.post(
            "/v1/api/documentos-soporte/emitir",
            &key,
            &crate::console_families::support_body(),
        ),
        "support document (its family)",
    );
    accepted(&support, "support document (its family)");
    let sale = ok(
        nodes.post(
            "/v1/api/pos/emitir",
            &key,
            &crate::console_families::pos_sale("1", "7"),
        ),
        "POS sale",
    );
    accepted(&sale, "POS sale");

    let employee = employee_number();
    let payroll = ok(
        nodes.post("/v1/api/nomina/enviar", &key, &monthly(&employee)),
        "payroll",
    );
    accepted(&payroll, "payroll");
    let cune = payroll["cune"].as_str().expect("cune");
    let adjustment = ok(
        nodes.post(
            "/v1/api/nomina/ajuste",
            &key,
            &salary_replacement(cune, &employee),
        ),
        "payroll adjustment",
    );
    accepted(&adjustment, "payroll adjustment");

    // A buyer made on one node receives an event on another, about an
    // invoice issued on a third.
    let (status, created) = json(nodes.next().admin_post(
        "/admin/companies",
        &json!({"nit": BUYER_NIT, "razon_social": "Comprador S.A.S.", "demo": true}),
    ));
    assert_eq!(status, 201, "{created}");
    let buyer = key_of(&created["data"]);
    let mut to_buyer = unique(examples::invoice());
    to_buyer["customer"]["identification_number"] = json!(BUYER_NIT);
    let sold = ok(
        nodes.post("/v1/api/facturacion", &key, &to_buyer),
        "invoice to the buyer",
    );
    accepted(&sold, "invoice to the buyer");
    let cufe = sold["cufe"].as_str().expect("cufe");
    let (status, res) = json(nodes.post(
        "/v1/api/eventos/acuse-recibo",
        &buyer,
        &json!({"cufe": cufe}),
    ));
    assert_eq!(status, 200, "event: {res}");
    let event = if res["data"].is_object() {
        &res["data"]
    } else {
        &res
    };
    assert_eq!(event["estado_tax"], "Aceptado", "event: {res}");

    // The one authority received them all, from the three nodes.
    let stats = sim_stats_at(&nodes.sim.base);
    assert!(
        stats["accepted_count"].as_u64().is_some_and(|n| n >= 12),
        "{stats}"
    );
    // Every document is seen from every node.
    for node in &nodes.nodes {
        let rec = status_of(node, invoice_id);
        assert_eq!(rec["cufe"], invoice["cufe"], "{rec}");
    }
}

#[test]
fn numbering_has_no_gap_and_no_duplicate_across_nodes() {
    if !on_shared_database() {
        return;
    }
    let nodes = Nodes::start(3, fast_launch());
    let key = nodes.sk_test();
    const CLIENTS: usize = 6;
    const EACH: usize = 10;
    let urls: Vec<String> = nodes.nodes.iter().map(|n| n.url.clone()).collect();
    let numbers: Vec<(String, u64)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..CLIENTS)
            .map(|c| {
                let (urls, key) = (&urls, &key);
                s.spawn(move || {
                    let http = client();
                    (0..EACH)
                        .map(|i| {
                            let url = &urls[(c + i) % urls.len()];
                            let mut body = unique(examples::invoice());
                            body["transmit"] = json!(false);
                            let res = http
                                .post(format!("{url}/v1/api/facturacion"))
                                .header("X-Api-Key", key)
                                .json(&body)
                                .send()
                                .expect("POST");
                            let data = ok(res, "invoice");
                            let doc = &data["documento"];
                            (
                                doc["prefijo"].as_str().expect("prefijo").to_string(),
                                doc["numero"]
                                    .as_str()
                                    .expect("numero")
                                    .parse::<u64>()
                                    .expect("number"),
                            )
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("client"))
            .collect()
    });
    assert_eq!(numbers.len(), CLIENTS * EACH);
    let prefixes: BTreeSet<&str> = numbers.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(prefixes.len(), 1, "one numbering: {prefixes:?}");
    let distinct: BTreeSet<u64> = numbers.iter().map(|(_, n)| *n).collect();
    assert_eq!(distinct.len(), numbers.len(), "a number twice: {numbers:?}");
    let (first, last) = (
        *distinct.first().expect("a number"),
        *distinct.last().expect("a number"),
    );
    assert_eq!(
        last - first + 1,
        numbers.len() as u64,
        "a gap between {first} and {last}: {distinct:?}"
    );
    // The database holds those documents and no other number.
    let mut db = nodes.database();
    let stored: i64 = db
        .query_one("SELECT count(DISTINCT number) FROM documents", &[])
        .expect("count")
        .get(0);
    assert_eq!(stored as usize, numbers.len());
}
