//! The overview: what needs a person, for the sign-in's company and
//! environment only; the admin's environment switch.

use emisor::api::invoice_request::examples;
use serde_json::json;

use super::harness::*;
use crate::support::app::*;
use crate::support::bodies::unique;

fn post_form(app: &TestApp, cookie: &str, path: &str, form: &[(&str, &str)]) -> u16 {
    http()
        .post(format!("{}{path}", app.url))
        .header("Cookie", cookie)
        .form(form)
        .send()
        .expect("post")
        .status()
        .as_u16()
}

#[test]
fn a_rejected_document_shows_its_rule_text_to_its_environment_only_and_the_admin_switches() {
    let app = TestApp::spawn();
    crate::support::flow::sim_mode(&app, json!({"mode": "reject"}));
    let (status, res) = json(app.post(
        "/v1/api/facturacion",
        &app.sk_test(),
        &unique(examples::invoice()),
    ));
    assert_eq!(status, 200, "{res}");
    assert_eq!(res["data"]["id_estado_documento"], 4, "{res}");
    let id = res["data"]["documento"]["id"].as_u64().unwrap();
    let link = format!("/console/documentos/{id}");

    // The test key's session sees it with the authority's rule text.
    let test = http_sign_in(&app, &app.sk_test()).unwrap();
    let (status, html) = page(&app, &test, "/console");
    assert_eq!(status, 200);
    let rejected = html
        .split("Rechazados por la autoridad")
        .nth(1)
        .unwrap_or_default();
    assert!(rejected.contains(&link), "{rejected}");
    assert!(rejected.contains("Regla"), "the rule text: {rejected}");

    // The live key's session (same company, production) does not.
    let live = http_sign_in(&app, &app.sk_live()).unwrap();
    let (_, html) = page(&app, &live, "/console");
    assert!(
        !html.contains(&link),
        "production does not see a testing document"
    );
    assert!(html.contains("Producción"));

    // The admin sees it in testing, not after switching to production.
    let admin = http_sign_in(&app, &app.admin_token()).unwrap();
    let (_, html) = page(&app, &admin, "/console");
    assert!(html.contains(&link) && html.contains("Administración"));
    let token = csrf_of(&html).unwrap();
    assert_eq!(
        post_form(
            &app,
            &admin,
            "/console/ambiente",
            &[("csrf", &token), ("ambiente", "1")]
        ),
        303
    );
    let (_, html) = page(&app, &admin, "/console");
    assert!(!html.contains(&link), "production shown now");
    assert_eq!(
        post_form(
            &app,
            &admin,
            "/console/ambiente",
            &[("csrf", &token), ("ambiente", "7")]
        ),
        400
    );
    // A company session cannot switch (its key decides).
    let (_, html) = page(&app, &test, "/console");
    let token = csrf_of(&html).unwrap();
    assert_eq!(
        post_form(
            &app,
            &test,
            "/console/ambiente",
            &[("csrf", &token), ("ambiente", "1")]
        ),
        403
    );
    let (_, html) = page(&app, &test, "/console");
    assert!(html.contains(&link), "still testing");
    // A company session asking for another company's overview: 404.
    assert_eq!(page(&app, &test, "/console?empresa=999").0, 404);
    let (status, html) = page(&app, &test, "/console?empresa=abc");
    assert_eq!(status, 400);
    assert!(
        html.contains("Parámetros inválidos"),
        "the console's own page: {html}"
    );
}
