//! The asynchronous path of `POST /facturacion` (spec 4.1, 3.1, 6.1): 202 →
//! background transmission → state 2, seen by a real WebSocket client and by
//! polling; contingency batches; `consecutivo`, `suscripcion` and the
//! monthly limit.

use std::time::Duration;

use emisor::api::invoice_request::examples;
use serde_json::json;

use crate::support::app::*;
use crate::support::bodies::unique;
use crate::support::flow::*;

#[test]
fn async_document_is_accepted_in_background_with_a_websocket_event() {
    let app = TestApp::spawn_with(fast_launch());
    let mut ws = Ws::connect(&app, &app.sk_test());

    let res = post_async(&app, &examples::invoice());
    assert_eq!(res["success"], true, "{res}");
    assert_eq!(res["status"], 202, "{res}");
    let data = &res["data"];
    let id = data["documento"]["id"].as_u64().expect("id");
    assert_eq!(data["documento"]["prefijo"], "SETP");
    assert!(data["documento"]["numero"].is_string(), "{res}");
    assert!(
        data["job_id"].as_str().is_some_and(|j| !j.is_empty()),
        "{res}"
    );
    assert_eq!(data["cufe_scheme"], "CUFE-SHA384");
    let code = data["cufe"].as_str().expect("cufe").to_string();
    assert_eq!(code.len(), 96);
    let poll_url = data["poll_url"].as_str().expect("poll_url");
    assert_eq!(
        poll_url,
        format!("/v1/api/facturacion/{id}/status?id_empresa=1")
    );

    let event = ws.event_for("facturacion:update", id, Duration::from_secs(20));
    let e = &event["data"];
    assert_eq!(e["id_estado_documento"], 2, "{event}");
    assert_eq!(e["estado"], "Enviado/Aceptado", "{event}");
    assert_eq!(e["prefijo"], "SETP");
    assert_eq!(e["numero"], data["documento"]["numero"]);
    assert_eq!(e["errors"], json!([]), "{event}");
    assert!(
        e["zipKey"].as_str().is_some_and(|k| !k.is_empty()),
        "{event}"
    );

    // The poll URL (as given) reaches state 2 too.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let rec = loop {
        let (status, rec) = json(app.get(poll_url, &app.sk_test()));
        assert_eq!(status, 200, "{rec}");
        if rec["data"]["id_estado_documento"] == 2 || std::time::Instant::now() > deadline {
            break rec["data"].clone();
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(rec["id_estado_documento"], 2, "{rec}");
    assert_eq!(rec["cufe"], code.as_str());
    assert_eq!(rec["tax_response"]["isValid"], true, "{rec}");
    assert_eq!(rec["tax_response"]["statusCode"], "00", "{rec}");
    assert_eq!(rec["tax_track_id"], e["zipKey"]);
}

#[test]
fn contingency_batch_queues_pending_t03_t04() {
    let app = TestApp::spawn_with(fast_launch());
    let key = app.sk_test();
    let mut ws = Ws::connect(&app, &key);
    let mut drafts = Vec::new();
    for body in [examples::contingency_t03(), examples::contingency_t04()] {
        let mut body = unique(body);
        body["transmit"] = json!(false);
        let (status, res) = json(app.post("/v1/api/facturacion", &key, &body));
        assert_eq!(status, 200, "{res}");
        assert_eq!(res["data"]["id_estado_documento"], 1, "{res}");
        drafts.push(res["data"]["documento"]["id"].as_u64().expect("id"));
    }
    // An ordinary draft invoice is not part of a contingency batch.
    let mut invoice = unique(examples::invoice());
    invoice["transmit"] = json!(false);
    let (_, inv) = json(app.post("/v1/api/facturacion", &key, &invoice));
    let invoice_id = inv["data"]["documento"]["id"].as_u64().expect("id");

    let (status, res) = json(app.post(
        "/v1/api/facturacion/contingencia/enviar",
        &key,
        &json!({"id_empresa": 1}),
    ));
    assert_eq!(status, 200, "{res}");
    assert!(res["message"].is_string());
    let b = &res["data"];
    assert_eq!(b["total_pendientes"], 2, "{res}");
    assert_eq!(b["total_encolados"], 2, "{res}");
    assert_eq!(b["total_errores"], 0, "{res}");
    let mut queued: Vec<u64> = b["documentos"]
        .as_array()
        .expect("documentos")
        .iter()
        .map(|d| {
            assert!(d["job_id"].as_str().is_some_and(|j| !j.is_empty()), "{d}");
            assert!(d["prefijo"].is_string() && d["numero"].is_string(), "{d}");
            d["id"].as_u64().expect("id")
        })
        .collect();
    queued.sort_unstable();
    assert_eq!(queued, drafts);

    let batch = ws.wait_for(Duration::from_secs(10), |v| {
        v["event"] == "contingencia:batch"
    });
    assert_eq!(batch["data"]["total_encolados"], 2, "{batch}");
    for id in &drafts {
        let event = ws.event_for("facturacion:update", *id, Duration::from_secs(20));
        assert_eq!(event["data"]["id_estado_documento"], 2, "{event}");
        wait_state(&app, *id, 2, Duration::from_secs(10));
    }
    assert_eq!(status_of(&app, invoice_id)["id_estado_documento"], 1);

    // Nothing left to send (an explicit null list means "all pending").
    let (_, again) = json(app.post(
        "/v1/api/facturacion/contingencia/enviar",
        &key,
        &json!({"id_empresa": 1, "documento_ids": null}),
    ));
    assert_eq!(again["data"]["total_pendientes"], 0, "{again}");
    assert_eq!(again["data"]["total_encolados"], 0, "{again}");
    // Another company's id is refused.
    assert_error(
        app.post(
            "/v1/api/facturacion/contingencia/enviar",
            &key,
            &json!({"id_empresa": 2}),
        ),
        403,
        "FORBIDDEN",
    );
}

#[test]
fn numbering_subscription_and_the_monthly_limit() {
    let app = TestApp::spawn_with(fast_launch());
    let key = app.sk_test();

    let (status, res) = json(app.get("/v1/api/facturacion/consecutivo/fe", &key));
    assert_eq!(status, 200, "{res}");
    let c = &res["data"];
    assert_eq!(c["prefijo"], "SETP", "{res}");
    assert_eq!(c["desde"], 990000000u64);
    assert_eq!(c["hasta"], 995000000u64);
    assert_eq!(c["siguiente"], 990000000u64);
    assert_eq!(c["restantes"], 995000000u64 - 990000000 + 1);
    assert!(c["vigencia_hasta"].is_string(), "{res}");
    // Numeric and short names name the same resolution.
    let (_, by_code) = json(app.get("/v1/api/facturacion/consecutivo/1", &key));
    assert_eq!(by_code["data"], res["data"]);
    assert_error(
        app.get("/v1/api/facturacion/consecutivo/xx", &key),
        422,
        "VALIDATION_ERROR",
    );

    let (status, sub) = json(app.get("/v1/api/facturacion/suscripcion", &key));
    assert_eq!(status, 200, "{sub}");
    let s = &sub["data"];
    assert_eq!(s["limite"], 10_000, "{sub}");
    assert_eq!(s["usados"], 0, "{sub}");
    assert_eq!(s["disponibles"], 10_000, "{sub}");
    for k in ["plan", "periodo_inicio", "periodo_fin"] {
        assert!(s[k].is_string(), "{k}: {sub}");
    }

    let (status, patched) = json(
        app.client
            .patch(format!("{}/admin/companies/1", app.url))
            .bearer_auth(app.admin_token())
            .json(&json!({"limite_documentos_mes": 2}))
            .send()
            .expect("PATCH"),
    );
    assert_eq!(status, 200, "{patched}");

    let mut draft = examples::invoice();
    draft["transmit"] = json!(false);
    for _ in 0..2 {
        let (status, res) = json(app.post("/v1/api/facturacion", &key, &unique(draft.clone())));
        assert_eq!(status, 200, "{res}");
    }
    let (_, sub) = json(app.get("/v1/api/facturacion/suscripcion", &key));
    assert_eq!(sub["data"]["limite"], 2, "{sub}");
    assert_eq!(sub["data"]["usados"], 2, "{sub}");
    assert_eq!(sub["data"]["disponibles"], 0, "{sub}");
    let before = next_number(&app, "fe");
    assert_eq!(before, 990000002);
    let mut over = unique(draft.clone());
    over["customer"]["identification_number"] = json!("900555777");
    let body = assert_error(
        app.post("/v1/api/facturacion", &key, &over),
        422,
        "VALIDATION_ERROR",
    );
    assert!(body.to_string().contains("suscripcion"), "{body}");
    let (_, customers) = json(app.get("/v1/api/clientes?q=900555777", &key));
    assert_eq!(
        customers["data"]["total"], 0,
        "nothing written: {customers}"
    );
    // Asynchronous requests are held to the limit too, and nothing is consumed.
    let mut queued = unique(examples::invoice());
    queued["async"] = json!(true);
    assert_error(
        app.post("/v1/api/facturacion", &key, &queued),
        422,
        "VALIDATION_ERROR",
    );
    assert_eq!(next_number(&app, "fe"), before, "no number consumed");
}
