use std::collections::BTreeMap;

use serde_json::Value;

use crate::support::app::*;

fn served_document(app: &TestApp) -> Value {
    let res = app
        .client
        .get(format!("{}/v1/api/openapi.json", app.url))
        .send()
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);
    res.json().unwrap()
}

/// Every operation: (path, method, operation).
fn operations(doc: &Value) -> Vec<(String, String, Value)> {
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in [
            "get", "put", "post", "delete", "patch", "head", "options", "trace",
        ] {
            if let Some(op) = item.get(method) {
                out.push((path.clone(), method.to_string(), op.clone()));
            }
        }
    }
    out
}

/// A response, with a `$ref` to a response component followed.
fn resolved<'a>(doc: &'a Value, response: &'a Value) -> &'a Value {
    match response["$ref"].as_str() {
        Some(r) => {
            let name = r.strip_prefix("#/components/responses/").unwrap();
            &doc["components"]["responses"][name]
        }
        None => response,
    }
}

/// Under `/v1/api` but on the admin surface: it takes the admin token.
const OPERATOR_SOCKET: &str = "/v1/api/ws/operador";

#[test]
fn openapi_document_lists_every_route_and_docs_page_serves() {
    let app = TestApp::spawn();
    let doc = served_document(&app);
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
        ("/v1/api/nomina/enviar", "post"),
        ("/v1/api/nomina/ajuste", "post"),
        ("/v1/api/nomina/estado/{trackId}", "get"),
        ("/v1/api/nomina/{id}", "get"),
        ("/v1/api/nomina/{id}/xml", "get"),
        ("/v1/api/nomina/{id}/zip", "get"),
        ("/v1/api/nomina/{id}/pdf", "get"),
        ("/v1/api/nomina/listar", "get"),
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
        ("/admin/companies/{id}/webhooks", "get"),
        ("/v1/api/ws/operador", "get"),
        ("/admin/operador/webhooks", "get"),
        ("/admin/companies/{id}/set-pruebas", "post"),
        ("/admin/companies/{id}/set-pruebas", "get"),
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

#[test]
fn operation_ids_are_unique_and_every_keyed_and_admin_operation_documents_its_errors() {
    let app = TestApp::spawn();
    let doc = served_document(&app);
    let mut ids: BTreeMap<String, String> = BTreeMap::new();
    let (mut keyed, mut admin) = (0, 0);
    for (path, method, op) in operations(&doc) {
        let here = format!("{method} {path}");
        let id = op["operationId"].as_str().unwrap_or_default().to_string();
        assert!(!id.is_empty(), "{here}: no operationId");
        if let Some(before) = ids.insert(id.clone(), here.clone()) {
            panic!("operationId {id} of {here} is also {before}'s");
        }
        let statuses: &[&str] = if path.starts_with("/admin/") || path == OPERATOR_SOCKET {
            admin += 1;
            &["401", "404", "422", "429"]
        } else if path.starts_with("/v1/api/") {
            keyed += 1;
            &["401", "403", "404", "422", "429"]
        } else {
            continue;
        };
        let body_statuses: &[&str] = if op.get("requestBody").is_some() {
            &["400", "408", "413"]
        } else {
            &[]
        };
        for status in statuses.iter().chain(body_statuses) {
            let response = resolved(&doc, &op["responses"][*status]);
            assert!(
                response["description"]
                    .as_str()
                    .is_some_and(|d| !d.is_empty()),
                "{here} {status}: {response}"
            );
            assert_eq!(
                response["content"]["application/json"]["schema"]["$ref"],
                "#/components/schemas/ErrorEnvelope",
                "{here} {status}: {response}"
            );
        }
        {
            let limited = resolved(&doc, &op["responses"]["429"]);
            assert!(
                limited["headers"]["Retry-After"].is_object(),
                "{here}: {limited}"
            );
        }
    }
    // At least the routes the test above lists.
    assert!(
        keyed >= 12 && admin >= 14,
        "{keyed} keyed and {admin} admin operations"
    );
    // The envelope the error answers point at.
    let envelope = &doc["components"]["schemas"]["ErrorEnvelope"];
    for field in ["success", "message", "error"] {
        assert!(
            envelope["properties"][field].is_object(),
            "{field}: {envelope}"
        );
    }
}

/// Free-text fields declare the lengths the API holds them to
/// (`engine::limits`), for every family's body.
#[test]
fn free_text_fields_declare_their_max_length() {
    use emisor::engine::limits::{NAME, PAYROLL_DESCRIPTION, PAYROLL_NAME, TEXT};
    let app = TestApp::spawn();
    let doc = served_document(&app);
    let schemas = &doc["components"]["schemas"];
    for (schema, field, limit) in [
        ("FacturacionRequest", "notes", TEXT),
        ("DocumentLine", "description", TEXT),
        ("AllowanceChargeRequest", "reason", TEXT),
        ("CustomerRequest", "name", NAME),
        ("CustomerRequest", "address", NAME),
        ("SpanishRequest", "observaciones", TEXT),
        ("SpanishLine", "descripcion", TEXT),
        ("SpanishCustomer", "nombre", NAME),
        ("PosRequest", "observaciones", TEXT),
        ("PosLine", "descripcion", TEXT),
        ("PosAdjustmentRequest", "motivo", TEXT),
        ("SupportRequest", "observaciones", TEXT),
        ("SupportLine", "descripcion", TEXT),
        ("Vendor", "nombre", NAME),
        ("AdjustmentRequest", "motivo", TEXT),
        ("Empleado", "primer_nombre", PAYROLL_NAME),
        ("Devengado", "descripcion", PAYROLL_DESCRIPTION),
        ("EventBody", "notes", TEXT),
        ("ClaimBody", "notes", TEXT),
        ("ReceiverBody", "nombres", NAME),
        ("RegistryBody", "observaciones", TEXT),
        ("EndorseeBody", "nombre", NAME),
    ] {
        let property = &schemas[schema]["properties"][field];
        assert_eq!(
            property["maxLength"].as_u64(),
            Some(limit as u64),
            "{schema}.{field}: {property}"
        );
    }
}

/// The documented 401, 403 and 422 of the keyed surface, and the 401 of the
/// admin one, are what every listed operation really answers: the checks
/// that give them run before any handler.
#[test]
fn every_operation_really_gives_its_surfaces_auth_answers() {
    // Two keyed requests per operation: more than a minute's default limit.
    let app = TestApp::spawn_with(
        Launch::default().env("EMISOR_RATE_LIMIT__REQUESTS_PER_MINUTE", "100000"),
    );
    let doc = served_document(&app);
    let key = app.sk_test();
    for (path, method, _) in operations(&doc) {
        let admin = path.starts_with("/admin/") || path == OPERATOR_SOCKET;
        let keyed = path.starts_with("/v1/api/") && !admin;
        if !keyed && !admin {
            continue;
        }
        let concrete = path
            .replace("{id}", "1")
            .replace("{key_id}", "1")
            .replace("{tipo}", "fe");
        let request = |query: &str| {
            let method = reqwest::Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            app.client
                .request(method, format!("{}{concrete}{query}", app.url))
        };
        let missing = if keyed {
            "MISSING_API_KEY"
        } else {
            "MISSING_ADMIN_TOKEN"
        };
        assert_error(request("").send().unwrap(), 401, missing);
        if keyed {
            let with_key = |query: &str| request(query).header("X-Api-Key", &key).send().unwrap();
            assert_error(with_key("?id_empresa=999"), 403, "FORBIDDEN");
            assert_error(with_key("?id_empresa=uno"), 422, "VALIDATION_ERROR");
        }
    }
}
