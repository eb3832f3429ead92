use serde_json::json;

use crate::support::app::*;

#[test]
fn restart_keeps_companies_keys_and_customers() {
    let mut app = TestApp::spawn();
    let key = app.sk_test();
    let demo_keys = std::fs::read_to_string(app.dir.join("demo-keys.json")).unwrap();
    let (status, _) = json(app.post(
        "/v1/api/clientes",
        &key,
        &json!({"identification_number": "900123", "name": "Cliente Uno", "email": "uno@example.com",
                "type_document_identification": {"code": "31"}}),
    ));
    assert_eq!(status, 201);
    let (_, created) = json(app.admin_post(
        "/admin/companies/1/api-keys",
        &json!({"ambiente": "live", "label": "pos"}),
    ));
    let new_key = created["data"]["key"].as_str().unwrap().to_string();
    let dir = app.dir.clone();
    let launch = Launch::default();
    // Keep the temp dir alive across the restart.
    app.stop();

    let app2 = TestApp::start_in(&dir, launch.clone());
    // No second bootstrap: the same keys; only the simulator's address is
    // the one it listens on now.
    let mut before: serde_json::Value = serde_json::from_str(&demo_keys).unwrap();
    let mut after = app2.keys.clone();
    let sim = after["tax_sim_url"].as_str().unwrap().to_string();
    let stats = app2
        .client
        .get(format!("{sim}/__sim/stats"))
        .send()
        .unwrap();
    assert_eq!(stats.status(), 200, "tax_sim_url {sim} answers");
    before["tax_sim_url"] = json!(null);
    after["tax_sim_url"] = json!(null);
    assert_eq!(after, before, "no second bootstrap");
    let (status, body) = json(app2.get("/v1/api/api-keys/test", &key));
    assert_eq!(status, 200, "{body}");
    let (_, live) = json(app2.get("/v1/api/api-keys/test", &new_key));
    assert_eq!(live["data"]["ambiente"], "produccion");
    let (_, list) = json(app2.get("/v1/api/clientes?q=uno", &key));
    assert_eq!(list["data"]["total"], 1);
    assert_eq!(list["data"]["items"][0]["dv"], 1, "{list}");
    let (_, companies) = json(app2.admin_get("/admin/companies"));
    assert_eq!(companies["data"].as_array().unwrap().len(), 1);
    drop(app);
}

#[test]
#[cfg_attr(not(feature = "soak"), ignore = "soak")]
fn kill_9_keeps_what_was_answered() {
    let mut app = TestApp::spawn();
    let key = app.sk_test();
    for i in 0..20 {
        let (status, _) = json(app.post(
            "/v1/api/clientes",
            &key,
            &json!({"identification_number": format!("{i}"), "name": format!("C{i}"), "email": "c@example.com"}),
        ));
        assert_eq!(status, 201);
    }
    let dir = app.dir.clone();
    app.kill();
    let app2 = TestApp::start_in(&dir, Launch::default());
    let (_, list) = json(app2.get("/v1/api/clientes?limit=100", &key));
    assert_eq!(list["data"]["total"], 20);
    drop(app);
}
