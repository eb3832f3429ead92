use serde_json::json;

use crate::support::app::*;

#[test]
fn demo_key_answers_company_and_environment() {
    let app = TestApp::spawn();
    let (status, body) = json(app.get("/v1/api/api-keys/test", &app.sk_test()));
    assert_eq!(status, 200);
    assert_eq!(body["success"], true);
    assert_eq!(body["data"]["id_empresa"], 1);
    assert_eq!(body["data"]["nit"], "900000001");
    assert_eq!(body["data"]["ambiente"], "pruebas");
    assert_eq!(body["data"]["codigo_ambiente"], 2);

    let (_, live) = json(app.get("/v1/api/api-keys/test", &app.sk_live()));
    assert_eq!(live["data"]["ambiente"], "produccion");
    assert_eq!(live["data"]["codigo_ambiente"], 1);
}

#[test]
fn missing_malformed_unknown_and_revoked_keys_are_401() {
    let app = TestApp::spawn();
    let res = app
        .client
        .get(format!("{}/v1/api/api-keys/test", app.url))
        .send()
        .unwrap();
    assert_error(res, 401, "MISSING_API_KEY");
    assert_error(
        app.get("/v1/api/api-keys/test", "not-a-key"),
        401,
        "INVALID_API_KEY",
    );
    let unknown = format!("sk_test_{}", "A".repeat(43));
    assert_error(
        app.get("/v1/api/api-keys/test", &unknown),
        401,
        "INVALID_API_KEY",
    );

    // A new key works, then is revoked through the admin API.
    let (status, created) =
        json(app.admin_post("/admin/companies/1/api-keys", &json!({"ambiente": "test"})));
    assert_eq!(status, 201, "{created}");
    let key = created["data"]["key"].as_str().unwrap().to_string();
    let id = created["data"]["id"].as_u64().unwrap();
    assert_eq!(
        app.get("/v1/api/api-keys/test", &key).status().as_u16(),
        200
    );
    let (status, revoked) =
        json(app.admin_post(&format!("/admin/api-keys/{id}/revoke"), &json!({})));
    assert_eq!(status, 200, "{revoked}");
    assert!(revoked["data"]["revoked_at"].is_string());
    assert_error(
        app.get("/v1/api/api-keys/test", &key),
        401,
        "INVALID_API_KEY",
    );
    // The demo key is untouched.
    assert_eq!(
        app.get("/v1/api/api-keys/test", &app.sk_test())
            .status()
            .as_u16(),
        200
    );
}

#[test]
fn another_companys_id_empresa_is_403() {
    let app = TestApp::spawn();
    let (status, second) = json(app.admin_post(
        "/admin/companies",
        &json!({"nit": "800197268", "razon_social": "Otra S.A.S.", "demo": true}),
    ));
    assert_eq!(status, 201, "{second}");
    assert_eq!(second["data"]["id_empresa"], 2);
    assert_error(
        app.get("/v1/api/clientes?id_empresa=2", &app.sk_test()),
        403,
        "FORBIDDEN",
    );
    let other = second["data"]["sk_test"].as_str().unwrap();
    assert_error(
        app.get("/v1/api/clientes?id_empresa=1", other),
        403,
        "FORBIDDEN",
    );
    assert_eq!(
        app.get("/v1/api/clientes?id_empresa=1", &app.sk_test())
            .status()
            .as_u16(),
        200
    );
}

#[test]
fn admin_api_needs_the_bearer_token() {
    let app = TestApp::spawn();
    let res = app
        .client
        .get(format!("{}/admin/companies", app.url))
        .send()
        .unwrap();
    assert_error(res, 401, "MISSING_ADMIN_TOKEN");
    let res = app
        .client
        .get(format!("{}/admin/companies", app.url))
        .bearer_auth("wrong")
        .send()
        .unwrap();
    assert_error(res, 401, "INVALID_ADMIN_TOKEN");
    // An API key is not an admin token.
    let res = app
        .client
        .get(format!("{}/admin/companies", app.url))
        .bearer_auth(app.sk_test())
        .send()
        .unwrap();
    assert_error(res, 401, "INVALID_ADMIN_TOKEN");
    let (status, body) = json(app.admin_get("/admin/companies"));
    assert_eq!(status, 200);
    assert_eq!(body["data"][0]["nit"], "900000001");
}
