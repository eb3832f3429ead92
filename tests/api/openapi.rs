use serde_json::Value;

use crate::helpers::*;

#[test]
fn openapi_document_lists_every_route_and_docs_page_serves() {
    let app = TestApp::spawn();
    let res = app
        .client
        .get(format!("{}/v1/api/openapi.json", app.url))
        .send()
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);
    let doc: Value = res.json().unwrap();
    assert!(
        doc["openapi"].as_str().unwrap().starts_with("3.1"),
        "{}",
        doc["openapi"]
    );
    let paths = doc["paths"].as_object().unwrap();
    for (path, method) in [
        ("/v1/api/api-keys/test", "get"),
        ("/v1/api/clientes", "get"),
        ("/v1/api/clientes", "post"),
        ("/v1/api/facturacion", "post"),
        ("/v1/api/facturacion/{id}/status", "get"),
        ("/v1/api/facturacion/{id}/xml", "get"),
        ("/v1/api/facturacion/{id}/zip", "get"),
        ("/v1/api/facturacion/reenviar/{id}", "post"),
        ("/v1/api/facturacion/contingencia/enviar", "post"),
        ("/v1/api/facturacion/consecutivo/{tipo}", "get"),
        ("/v1/api/facturacion/suscripcion", "get"),
        ("/v1/api/ws", "get"),
        ("/admin/companies", "post"),
        ("/admin/companies", "get"),
        ("/admin/companies/{id}", "get"),
        ("/admin/companies/{id}", "patch"),
        ("/admin/companies/{id}/software", "post"),
        ("/admin/companies/{id}/resoluciones", "post"),
        ("/admin/companies/{id}/resoluciones", "get"),
        ("/admin/companies/{id}/certificado", "post"),
        ("/admin/companies/{id}/api-keys", "post"),
        ("/admin/companies/{id}/api-keys", "get"),
        ("/admin/api-keys/{key_id}/revoke", "post"),
        ("/healthz", "get"),
        ("/readyz", "get"),
        ("/metrics", "get"),
    ] {
        assert!(
            paths.get(path).and_then(|p| p.get(method)).is_some(),
            "{method} {path} missing"
        );
    }
    assert!(doc["components"]["securitySchemes"]["api_key"].is_object());
    let page = app
        .client
        .get(format!("{}/v1/api/docs/", app.url))
        .send()
        .unwrap();
    assert_eq!(page.status().as_u16(), 200);
    assert!(
        page.text().unwrap().contains("swagger"),
        "docs page is Swagger UI"
    );
}
