//! Every error code of decisions.md §3 the foundation can produce, each in
//! its envelope, and none of them changing anything.

use serde_json::json;

use crate::support::app::*;

#[test]
fn body_errors() {
    let app = TestApp::spawn();
    let key = app.sk_test();
    // Not JSON at all.
    assert_error(
        app.post_raw("/v1/api/clientes", &key, "{oops"),
        400,
        "MALFORMED_JSON",
    );
    assert_error(
        app.post_raw("/v1/api/clientes", &key, ""),
        400,
        "MALFORMED_JSON",
    );
    // An array is not read as a struct field by field.
    assert_error(
        app.post_raw("/v1/api/facturacion", &key, "[1, false, null]"),
        400,
        "MALFORMED_JSON",
    );
    // A field of the wrong JSON type.
    let body = assert_error(
        app.post(
            "/v1/api/clientes",
            &key,
            &json!({"identification_number": "1", "name": "A", "email": 5}),
        ),
        400,
        "MALFORMED_JSON",
    );
    assert!(
        body["message"].as_str().unwrap().contains("email"),
        "{body}"
    );
    // A required field missing: 422 naming it.
    let body = assert_error(
        app.post(
            "/v1/api/clientes",
            &key,
            &json!({"identification_number": "1", "name": "A"}),
        ),
        422,
        "VALIDATION_ERROR",
    );
    assert_eq!(body["error"]["details"][0]["field"], "email");
    // Business validation: several fields named at once.
    let body = assert_error(
        app.post(
            "/v1/api/clientes",
            &key,
            &json!({"identification_number": "", "name": "A", "email": "nope",
                    "type_organization": {"code": "7"}}),
        ),
        422,
        "VALIDATION_ERROR",
    );
    let fields: Vec<&str> = body["error"]["details"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["field"].as_str().unwrap())
        .collect();
    assert_eq!(
        fields,
        vec!["identification_number", "email", "type_organization.code"]
    );
    // Over 1 MiB.
    let big = format!(r#"{{"name": "{}"}}"#, "x".repeat(1_100_000));
    assert_error(
        app.post_raw("/v1/api/clientes", &key, big),
        413,
        "PAYLOAD_TOO_LARGE",
    );

    // None of that wrote anything.
    let (_, list) = json(app.get("/v1/api/clientes", &key));
    assert_eq!(list["data"]["total"], 0, "{list}");
}

#[test]
fn query_route_and_resource_errors() {
    let app = TestApp::spawn();
    let key = app.sk_test();
    let body = assert_error(
        app.get("/v1/api/clientes?limit=500", &key),
        422,
        "VALIDATION_ERROR",
    );
    assert_eq!(body["error"]["details"][0]["field"], "limit");
    let body = assert_error(
        app.get("/v1/api/clientes?page=abc", &key),
        422,
        "VALIDATION_ERROR",
    );
    assert_eq!(body["error"]["details"][0]["field"], "page");
    assert_error(
        app.get("/v1/api/clientes?id_empresa=x", &key),
        422,
        "VALIDATION_ERROR",
    );
    // The company is read decoded, and once: one of two values is not
    // enough to pass.
    let (status, _) = json(app.get("/v1/api/facturacion/suscripcion?id_empresa=%31", &key));
    assert_eq!(status, 200);
    assert_error(
        app.get(
            "/v1/api/facturacion/suscripcion?id_empresa=1&id_empresa=2",
            &key,
        ),
        422,
        "VALIDATION_ERROR",
    );
    assert_error(
        app.get("/v1/api/facturacion/suscripcion?id_empresa=%32", &key),
        403,
        "FORBIDDEN",
    );
    assert_error(app.get("/v1/api/no-such-thing", &key), 404, "NOT_FOUND");
    assert_error(app.admin_get("/admin/companies/99"), 404, "NOT_FOUND");
    assert_error(app.admin_get("/admin/companies/abc"), 404, "NOT_FOUND");
    let res = app
        .client
        .get(format!("{}/nowhere", app.url))
        .send()
        .unwrap();
    assert_error(res, 404, "NOT_FOUND");
}

#[test]
fn admin_validation_and_conflicts() {
    let app = TestApp::spawn();
    let body = assert_error(
        app.admin_post(
            "/admin/companies",
            &json!({"nit": "800197268", "dv": 5, "razon_social": "X"}),
        ),
        422,
        "VALIDATION_ERROR",
    );
    assert_eq!(body["error"]["details"][0]["field"], "dv");
    assert_error(
        app.admin_post(
            "/admin/companies",
            &json!({"nit": "900000001", "razon_social": "Twice"}),
        ),
        409,
        "CONFLICT",
    );
    let body = assert_error(
        app.admin_post(
            "/admin/companies/1/resoluciones",
            &json!({"id_tipo_documento": 1, "numero_resolucion": "1", "fecha_resolucion": "2024-01-01",
                    "prefijo": "FE", "desde": 10, "hasta": 5, "vigencia_desde": "2024-01-01",
                    "vigencia_hasta": "2025-01-01", "clave_tecnica": "abc"}),
        ),
        422,
        "VALIDATION_ERROR",
    );
    assert_eq!(body["error"]["details"][0]["field"], "desde");
    assert_error(
        app.admin_post(
            "/admin/companies/1/certificado",
            &json!({"pkcs12_base64": "%%%", "password": "x"}),
        ),
        422,
        "VALIDATION_ERROR",
    );
    assert_error(
        app.admin_post(
            "/admin/companies/1/certificado",
            &json!({"pkcs12_base64": "AAAA", "password": "x"}),
        ),
        422,
        "VALIDATION_ERROR",
    );
}
