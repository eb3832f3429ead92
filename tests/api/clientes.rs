use serde_json::json;

use crate::support::app::*;

#[test]
fn create_upsert_list_and_search() {
    let app = TestApp::spawn();
    let key = app.sk_test();
    let customer = json!({
        "identification_number": "800197268", "name": "DIAN & Cía <test>", "email": "x@example.com",
        "type_document_identification": {"code": "31"}, "type_organization": {"code": "1"},
        "address": "Cra 8", "municipality": {"code": "11001", "name": "Bogotá"}, "country_code": "CO"
    });
    let (status, first) = json(app.post("/v1/api/clientes", &key, &customer));
    assert_eq!(status, 201, "{first}");
    assert_eq!(first["data"]["dv"], 4);
    assert_eq!(first["data"]["name"], "DIAN & Cía <test>");
    assert_eq!(first["data"]["municipality"]["code"], "11001");
    let mut changed = customer.clone();
    changed["name"] = json!("DIAN");
    let (status, second) = json(app.post("/v1/api/clientes", &key, &changed));
    assert_eq!(status, 200, "upsert by identification number");
    assert_eq!(second["data"]["id"], first["data"]["id"]);
    for i in 0..3 {
        app.post(
            "/v1/api/clientes",
            &key,
            &json!({"identification_number": format!("10{i}"), "name": format!("Persona {i}"), "email": "p@example.com"}),
        );
    }
    let (_, page) = json(app.get("/v1/api/clientes?limit=2&page=2", &key));
    assert_eq!(page["data"]["total"], 4);
    assert_eq!(page["data"]["page"], 2);
    assert_eq!(page["data"]["limit"], 2);
    assert_eq!(page["data"]["items"].as_array().unwrap().len(), 2);
    let (_, found) = json(app.get("/v1/api/clientes?q=persona%201", &key));
    assert_eq!(found["data"]["total"], 1);

    // Another company does not see them.
    let (_, second_co) = json(app.admin_post(
        "/admin/companies",
        &json!({"nit": "860000001", "razon_social": "Tercera", "demo": true}),
    ));
    let other = second_co["data"]["sk_test"].as_str().unwrap();
    let (_, none) = json(app.get("/v1/api/clientes", other));
    assert_eq!(none["data"]["total"], 0);
}

fn get_acquirer_calls(app: &TestApp) -> u64 {
    crate::support::flow::sim_stats(app)["calls"]["GetAcquirer"]
        .as_u64()
        .unwrap_or(0)
}

/// `GET /clientes/adquiriente` over the demo company's simulator (real
/// SOAP): a company registered with it is found by its NIT, a buyer set
/// through the simulator's control by its cédula; an unknown buyer is a 404;
/// answers, a 404 too, come from the cache without a second call; the
/// authority out of reach is a 503 for a buyer not cached.
#[test]
fn buyers_are_looked_up_at_the_authority_and_cached() {
    let app = TestApp::spawn();
    let key = app.sk_test();
    let sim = crate::support::flow::sim_url(&app);
    let (status, created) = json(app.admin_post(
        "/admin/companies",
        &json!({"nit": "901234567", "razon_social": "Compradora Andina S.A.S.", "demo": true}),
    ));
    assert_eq!(status, 201, "{created}");
    let res = client()
        .put(format!("{sim}/__sim/acquirers"))
        .json(
            &json!({"identificationType": "13", "identificationNumber": "1020304050",
                      "name": "Ana Pérez", "email": "ana@example.co"}),
        )
        .send()
        .unwrap();
    assert!(res.status().is_success());
    let before = get_acquirer_calls(&app);

    let path = "/v1/api/clientes/adquiriente?tipo_documento=31&numero=901234567";
    let (status, found) = json(app.get(path, &key));
    assert_eq!(status, 200, "{found}");
    assert_eq!(found["data"]["nombre"], "Compradora Andina S.A.S.");
    let (status, person) = json(app.get(
        "/v1/api/clientes/adquiriente?tipo_documento=13&numero=1020304050",
        &key,
    ));
    assert_eq!(status, 200, "{person}");
    assert_eq!(
        person["data"],
        json!({"nombre": "Ana Pérez", "correo": "ana@example.co"})
    );
    let unknown = "/v1/api/clientes/adquiriente?tipo_documento=13&numero=6382356";
    assert_error(app.get(unknown, &key), 404, "NOT_FOUND");
    assert_eq!(get_acquirer_calls(&app), before + 3);

    // Again: from the cache, found and unknown alike, whichever key of the
    // company asks (the demo company's environments share its simulator).
    let (status, again) = json(app.get(path, &key));
    assert_eq!((status, &again["data"]), (200, &found["data"]));
    assert_eq!(json(app.get(path, &app.sk_live())).0, 200);
    assert_error(app.get(unknown, &key), 404, "NOT_FOUND");
    assert_eq!(
        get_acquirer_calls(&app),
        before + 3,
        "served from the cache"
    );

    // The authority out of reach: a buyer not cached is a 503, a cached one
    // is still answered.
    crate::support::flow::sim_mode(&app, json!({"mode": "down"}));
    assert_error(
        app.get(
            "/v1/api/clientes/adquiriente?tipo_documento=13&numero=55555555",
            &key,
        ),
        503,
        "TAX_UNAVAILABLE",
    );
    assert_eq!(json(app.get(path, &key)).0, 200);
    crate::support::flow::sim_mode(&app, json!({"mode": "up"}));
    // A failure is not cached: asked again once the authority is back.
    let (status, _) = json(app.get(
        "/v1/api/clientes/adquiriente?tipo_documento=13&numero=55555555",
        &key,
    ));
    assert_eq!(status, 404);
}

/// A bad type or number is a 422 naming it, and nothing is asked.
#[test]
fn a_bad_identification_is_refused_before_any_call() {
    let app = TestApp::spawn();
    let key = app.sk_test();
    let before = get_acquirer_calls(&app);
    for (query, field) in [
        ("tipo_documento=99&numero=900373076", "tipo_documento"),
        ("tipo_documento=31&numero=900373076-1", "numero"),
        ("tipo_documento=13&numero=", "numero"),
        ("tipo_documento=13&numero=123456789012345678901", "numero"),
        ("numero=900373076", "tipo_documento"),
        ("tipo_documento=31", "numero"),
    ] {
        let body = assert_error(
            app.get(&format!("/v1/api/clientes/adquiriente?{query}"), &key),
            422,
            "VALIDATION_ERROR",
        );
        assert!(body.to_string().contains(field), "{query}: {body}");
    }
    assert_eq!(get_acquirer_calls(&app), before);
}

/// Two services pointed at one `emisor tax-sim`, each company registered
/// there: one service finds the other's company by its NIT, with the name
/// it registered, and an unknown buyer is a 404.
#[test]
fn a_buyer_registered_by_another_service_is_found_at_the_shared_simulator() {
    use crate::support::external_sim::ExternalSim;
    let sim = ExternalSim::start();
    let launch = || Launch::default().env("EMISOR_AUTHORITY__URL", &sim.service_url());
    let seller = TestApp::spawn_with(launch());
    let other = TestApp::spawn_with(launch());
    let (status, created) = json(other.admin_post(
        "/admin/companies",
        &json!({"nit": "800197268", "razon_social": "Compradora Dos S.A.S.", "demo": true}),
    ));
    assert_eq!(status, 201, "{created}");

    let (status, found) = json(seller.get(
        "/v1/api/clientes/adquiriente?tipo_documento=31&numero=800197268",
        &seller.sk_test(),
    ));
    assert_eq!(status, 200, "{found}");
    assert_eq!(found["data"]["nombre"], "Compradora Dos S.A.S.");
    assert_error(
        seller.get(
            "/v1/api/clientes/adquiriente?tipo_documento=31&numero=800000009",
            &seller.sk_test(),
        ),
        404,
        "NOT_FOUND",
    );
    let calls = crate::support::flow::sim_stats_at(&sim.base)["calls"]["GetAcquirer"].clone();
    assert_eq!(calls, 2);
}
