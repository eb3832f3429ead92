//! The authority's enablement test set: started by the admin CLI against the
//! running server, sent with SendTestSetAsync, followed with GetStatusZip.

use serde_json::json;

use crate::support::app::*;

#[test]
fn test_set_runs_to_acceptance_through_the_cli() {
    let app = TestApp::spawn_with(
        Launch::default()
            .env("EMISOR_AUTHORITY__SIM_ASYNC_DELAY_S", "0.2")
            .env("EMISOR_RESILIENCE__TIME_SCALE", "0.05"),
    );
    let out = std::process::Command::new(BIN)
        .args(["admin", "--data-dir"])
        .arg(&app.dir)
        .args(["test-set", "--company", "1"])
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("aceptado: 10 of 10 sent, 10 accepted"),
        "{text}"
    );

    let (status, body) = json(app.admin_get("/admin/companies/1/set-pruebas"));
    assert_eq!(status, 200);
    let run = &body["data"];
    assert_eq!(run["estado"], "aceptado");
    assert_eq!(run["test_set_id"], app.keys["test_set_id"]);
    assert!(run["documentos"]
        .as_array()
        .unwrap()
        .iter()
        .all(|d| d["zip_key"].is_string()));
    let sim = app.keys["tax_sim_url"].as_str().unwrap();
    let stats: serde_json::Value = app
        .client
        .get(format!("{sim}/__sim/stats"))
        .send()
        .unwrap()
        .json()
        .unwrap();
    let text = stats.to_string();
    assert!(
        text.contains("SendTestSetAsync") && text.contains("GetStatusZip"),
        "{text}"
    );
    // The documents themselves are accepted.
    let id = run["documentos"][0]["id"].as_u64().unwrap();
    let (_, rec) = json(app.get(
        &format!("/v1/api/facturacion/{id}/status?id_empresa=1"),
        &app.sk_test(),
    ));
    assert_eq!(rec["data"]["id_estado_documento"], 2, "{rec}");
    // A second run while none is in progress starts; a bad plan is refused.
    assert_error(
        app.admin_post(
            "/admin/companies/1/set-pruebas",
            &json!({"facturas": 0, "notas_credito": 1}),
        ),
        422,
        "VALIDATION_ERROR",
    );
}
