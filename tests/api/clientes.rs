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
