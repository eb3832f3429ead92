//! The sweep of events on a company's own invoices: two services pointed at
//! one `emisor tax-sim`, the buyer's registering its events on the seller's
//! invoices, the seller's learning each once from the authority
//! (`GetStatusEvent`), storing it, showing it and emitting `factura:evento`.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use base64::Engine as _;
use emisor::api::invoice_request::examples;
use serde_json::{json, Value};

use crate::support::app::*;
use crate::support::bodies::unique;
use crate::support::events::*;
use crate::support::external_sim::ExternalSim;
use crate::support::flow::*;

/// The seller's company: its own NIT, so that each service's demo company
/// (the same NIT in both) never stands in for it at the shared simulator.
const SELLER_NIT: &str = "890900608";

/// Pointed at the shared simulator, sweeping every second.
fn sweeping(sim: &ExternalSim) -> Launch {
    fast_launch()
        .env("EMISOR_AUTHORITY__URL", &sim.service_url())
        .env("EMISOR_EVENTS_SWEEP__INTERVAL_S", "1")
}

/// An invoice of `key`'s company to the buyer, accepted; (id, cufe).
fn issue(app: &TestApp, key: &str) -> (u64, String) {
    let (status, res) = json(app.post("/v1/api/facturacion", key, &unique(examples::invoice())));
    assert_eq!(status, 200, "{res}");
    assert_eq!(res["data"]["transmission"]["isValid"], true, "{res}");
    let id = res["data"]["documento"]["id"].as_u64().expect("id");
    (id, res["data"]["cufe"].as_str().expect("cufe").to_string())
}

/// The buyer's service receives the invoice from its signed XML.
fn receive(seller: &TestApp, seller_key: &str, buyer: &TestApp, buyer_key: &str, id: u64) {
    let res = seller.get(&format!("/v1/api/facturacion/{id}/xml"), seller_key);
    assert_eq!(res.status().as_u16(), 200);
    let xml = res.text().unwrap();
    let b64 = base64::engine::general_purpose::STANDARD.encode(xml);
    let (status, stored) = json(buyer.post(
        "/v1/api/eventos/cargar-documento",
        buyer_key,
        &json!({ "xml_base64": b64 }),
    ));
    assert_eq!(status, 201, "{stored}");
}

fn is_event_on(e: &Value, id: u64, code: &str) -> bool {
    e["event"] == "factura:evento" && e["data"]["id"] == id && e["data"]["codigo_evento"] == code
}

fn status(app: &TestApp, key: &str, company: u64, id: u64) -> Value {
    let (status, res) = json(app.get(
        &format!("/v1/api/facturacion/{id}/status?id_empresa={company}"),
        key,
    ));
    assert_eq!(status, 200, "{res}");
    res["data"].clone()
}

fn listed(app: &TestApp, key: &str, evento: &str) -> Vec<u64> {
    let (status, res) = json(app.get(&format!("/v1/api/facturacion?evento={evento}"), key));
    assert_eq!(status, 200, "{res}");
    res["data"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].as_u64().unwrap())
        .collect()
}

/// The webhook deliveries of `factura:evento`, counted by (invoice, code).
fn delivered(got: &crate::webhooks::Received) -> BTreeMap<(u64, String), usize> {
    let mut out = BTreeMap::new();
    for (_, body) in got.lock().unwrap().iter() {
        let v: Value = serde_json::from_slice(body).unwrap();
        if v["event"] == "factura:evento" {
            let key = (
                v["data"]["id"].as_u64().unwrap(),
                v["data"]["codigo_evento"].as_str().unwrap().to_string(),
            );
            *out.entry(key).or_default() += 1;
        }
    }
    out
}

#[test]
fn the_sellers_service_learns_each_event_the_buyers_registers_once_and_emits_it() {
    let sim = ExternalSim::start();
    let buyer_app = TestApp::spawn_with(sweeping(&sim));
    let buyer = key_of(&new_company(&buyer_app, BUYER_NIT, "Comprador S.A.S."));

    // The seller's service first runs without the sweep: its invoices are
    // stored as they were before invoices kept the authority's events.
    let mut first = TestApp::spawn_with(sweeping(&sim).env("EMISOR_EVENTS_SWEEP__PER_SECOND", "0"));
    let seller_company = new_company(&first, SELLER_NIT, "Vendedora S.A.S.");
    let seller = key_of(&seller_company);
    let company = seller_company["id_empresa"].as_u64().unwrap();
    let (url, got) = crate::webhooks::receiver(0);
    let (code, patched) = json(
        first
            .client
            .patch(format!("{}/admin/companies/{company}", first.url))
            .bearer_auth(first.admin_token())
            .json(&json!({ "webhook_url": url }))
            .send()
            .unwrap(),
    );
    assert_eq!(code, 200, "{patched}");
    let (a, cufe_a) = issue(&first, &seller);
    let (b, cufe_b) = issue(&first, &seller);
    for id in [a, b] {
        receive(&first, &seller, &buyer_app, &buyer, id);
    }
    assert!(status(&first, &seller, company, a)["eventos"]
        .as_array()
        .unwrap()
        .is_empty());
    let dir = first.dir.clone();
    first.stop();

    // Now sweeping.
    let mut seller_app = TestApp::start_in(&dir, sweeping(&sim));
    let mut ws = Ws::connect(&seller_app, &seller);
    let within = Duration::from_secs(30);
    for (path, body) in [
        ("eventos/acuse-recibo", json!({ "cufe": cufe_a })),
        ("eventos/recibo-bien", json!({ "cufe": cufe_a })),
    ] {
        let registered = accepted_event(&buyer_app, &buyer, path, body);
        let code = registered["codigo_evento"].as_str().unwrap().to_string();
        let heard = ws.wait_for(within, |e| is_event_on(e, a, &code));
        assert_eq!(heard["data"]["cufe"], cufe_a.as_str());
        assert_eq!(heard["data"]["nit_emisor"], BUYER_NIT);
        assert_eq!(heard["data"]["cude_evento"], registered["cude_evento"]);
    }
    let record = status(&seller_app, &seller, company, a);
    assert_eq!(record["estado_eventos"], "acuse_sin_aceptacion", "{record}");
    assert_eq!(listed(&seller_app, &seller, "acuse_sin_aceptacion"), [a]);
    assert!(listed(&seller_app, &seller, "reclamada").is_empty());

    // A restart: what was learned is neither asked into new records nor
    // emitted again; what comes after is.
    seller_app.stop();
    let seller_app = TestApp::start_in(&dir, sweeping(&sim));
    let mut ws = Ws::connect(&seller_app, &seller);
    accepted_event(
        &buyer_app,
        &buyer,
        "eventos/reclamo",
        json!({ "cufe": cufe_a, "motivo": "01" }),
    );
    for path in [
        "eventos/acuse-recibo",
        "eventos/recibo-bien",
        "eventos/aceptacion-expresa",
    ] {
        accepted_event(&buyer_app, &buyer, path, json!({ "cufe": cufe_b }));
    }
    ws.wait_for(within, |e| is_event_on(e, a, "031"));
    ws.wait_for(within, |e| is_event_on(e, b, "033"));
    // Both invoices are settled now (claimed, accepted): later sweeps
    // leave them, and nothing else arrives.
    let rest = ws.events_within(Duration::from_secs(3));
    let again: Vec<&Value> = rest
        .iter()
        .filter(|e| e["event"] == "factura:evento")
        .filter(|e| e["data"]["id"] == a || e["data"]["codigo_evento"] == "033")
        .collect();
    assert!(again.is_empty(), "emitted again: {again:?}");

    let record = status(&seller_app, &seller, company, a);
    assert_eq!(record["estado_eventos"], "reclamada", "{record}");
    let events = record["eventos"].as_array().unwrap();
    let codes: Vec<&str> = events
        .iter()
        .map(|e| e["codigo_evento"].as_str().unwrap())
        .collect();
    assert_eq!(codes, ["030", "032", "031"], "{record}");
    for e in events {
        assert_eq!(e["nit_emisor"], BUYER_NIT);
        assert!(!e["nombre_evento"].as_str().unwrap().is_empty(), "{e}");
        assert!(!e["fecha_evento"].as_str().unwrap().is_empty(), "{e}");
    }
    assert_eq!(
        status(&seller_app, &seller, company, b)["estado_eventos"],
        "aceptada"
    );
    assert_eq!(listed(&seller_app, &seller, "reclamada"), [a]);
    assert_eq!(listed(&seller_app, &seller, "aceptada"), [b]);
    assert!(listed(&seller_app, &seller, "acuse_sin_aceptacion").is_empty());
    assert_error(
        seller_app.get("/v1/api/facturacion?evento=pagada", &seller),
        422,
        "VALIDATION_ERROR",
    );
    // The buyer's service learned nothing about invoices it did not issue.
    let (_, buyer_list) = json(buyer_app.get("/v1/api/facturacion?evento=reclamada", &buyer));
    assert_eq!(buyer_list["data"]["total"], 0);

    // The webhook heard each event once, across the restarts.
    let want: BTreeMap<(u64, String), usize> = [
        (a, "030"),
        (a, "032"),
        (a, "031"),
        (b, "030"),
        (b, "032"),
        (b, "033"),
    ]
    .into_iter()
    .map(|(id, c)| ((id, c.to_string()), 1))
    .collect();
    let deadline = Instant::now() + within;
    while delivered(&got) != want && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(delivered(&got), want);

    // /metrics counts what this process asked and learned (031 on the
    // first invoice, three on the second), never per company.
    let metrics = seller_app
        .client
        .get(format!("{}/metrics", seller_app.url))
        .send()
        .expect("metrics")
        .text()
        .expect("metrics text");
    let value = |name: &str| -> f64 {
        metrics
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {name}: {metrics}"))
    };
    assert!(value("emisor_events_sweep_events_learned_total") >= 4.0);
    assert!(value("emisor_events_sweep_invoices_asked_total") >= 2.0);
    for l in metrics
        .lines()
        .filter(|l| l.starts_with("emisor_events_sweep"))
    {
        assert!(!l.contains("empresa") && !l.contains("company"), "{l}");
    }
}

/// More invoices than one page of the index, over two days: the oldest,
/// on the sweep's second page, is asked about too, and its event learned
/// (one service, the buyer a company of it, the shared clock).
#[test]
fn the_sweep_reaches_the_oldest_invoice_across_pages_and_days() {
    let app = TestApp::spawn_with(
        fast_launch()
            .shared_clock()
            .env("EMISOR_EVENTS_SWEEP__INTERVAL_S", "1")
            .env("EMISOR_EVENTS_SWEEP__PER_SECOND", "10"),
    );
    let buyer = key_of(&new_company(&app, BUYER_NIT, "Comprador S.A.S."));
    let (oldest, cufe) = issue_to_buyer(&app);
    for _ in 0..59 {
        issue_to_buyer(&app);
    }
    set_clock(&app, 86_400);
    for _ in 0..60 {
        issue_to_buyer(&app);
    }
    let mut ws = Ws::connect(&app, &app.sk_test());
    // The sweep that learns the first event may have read its pages while
    // the invoices were still being issued; the one that learns the
    // second started after it ended, with every invoice issued.
    for (path, code) in [
        ("eventos/acuse-recibo", "030"),
        ("eventos/recibo-bien", "032"),
    ] {
        accepted_event(&app, &buyer, path, json!({ "cufe": cufe }));
        let heard = ws.wait_for(Duration::from_secs(90), |e| is_event_on(e, oldest, code));
        assert_eq!(heard["data"]["cufe"], cufe.as_str());
    }
    assert_eq!(
        listed(&app, &app.sk_test(), "acuse_sin_aceptacion"),
        [oldest]
    );
}
