//! The family pages in the browser: payroll, POS with its cash count,
//! support documents, received invoices with their deadline, the registry
//! and a title's history, each at a laptop's and a phone's size with no
//! sideways scroll (screenshots `familias-*`).

use serde_json::json;

use super::harness::Browser;
use crate::console_families::{ok_data, pos_sale, support_body};
use crate::support::app::*;
use crate::support::events::*;
use crate::support::flow::fast_launch;
use crate::support::payroll::{employee_number, monthly, salary_replacement};

#[test]
fn the_family_pages_fit_a_laptop_and_a_phone() {
    let app = TestApp::spawn_with(fast_launch());
    let seller = app.sk_test();
    let document = employee_number();
    let payroll = ok_data(app.post("/v1/api/nomina/enviar", &seller, &monthly(&document)));
    let cune = payroll["cune"].as_str().unwrap();
    ok_data(app.post(
        "/v1/api/nomina/ajuste",
        &seller,
        &salary_replacement(cune, &document),
    ));
    ok_data(app.post("/v1/api/pos/emitir", &seller, &pos_sale("3", "17")));
    ok_data(app.post("/v1/api/pos/emitir", &seller, &pos_sale("4", "18")));
    ok_data(app.post(
        "/v1/api/documentos-soporte/emitir",
        &seller,
        &support_body(),
    ));
    let buyer = key_of(&new_company(&app, BUYER_NIT, "Comprador S.A.S."));
    let (_, titled) = issue_to_buyer(&app);
    let (_, open) = issue_to_buyer(&app);
    for path in [
        "eventos/acuse-recibo",
        "eventos/recibo-bien",
        "eventos/aceptacion-expresa",
    ] {
        accepted_event(&app, &buyer, path, json!({"cufe": titled}));
    }
    accepted_event(&app, &buyer, "eventos/acuse-recibo", json!({"cufe": open}));
    accepted_event(&app, &buyer, "eventos/recibo-bien", json!({"cufe": open}));

    let Some(browser) = Browser::open(&app) else {
        return;
    };
    browser.sign_in(&seller);
    for (path, name, shows) in [
        ("/console/nomina", "nomina", "Ajuste"),
        ("/console/pos", "pos", "Arqueo de caja"),
        ("/console/soporte", "soporte", "Pedro Pérez"),
        ("/console/registro", "registro", "Facturas elegibles"),
    ] {
        browser.goto(path);
        assert_eq!(browser.path(), path);
        let html = browser.source();
        assert!(html.contains(shows), "{path}: {html}");
        assert!(
            html.contains("/console/documentos/"),
            "{path} links its rows"
        );
        browser.check_page(&format!("familias-{name}"));
    }
    browser.goto(&format!("/console/registro?cufe={titled}"));
    assert!(browser
        .text("#hoja-de-vida")
        .is_some_and(|t| t.contains("Tenedor legítimo")));
    browser.check_page("familias-registro-hoja-de-vida");

    browser.sign_in(&buyer);
    browser.goto("/console/recibidas");
    let html = browser.source();
    assert!(
        html.contains("Reclamo o aceptación expresa hasta el"),
        "{html}"
    );
    browser.check_page("familias-recibidas");
}
