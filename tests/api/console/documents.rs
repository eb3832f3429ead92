//! The Documents section: a document the API issues appears in the list
//! live, opens, and its PDF downloads; a rejected one shows its rule text
//! and is resent from the console to acceptance; a company session sees
//! nothing of another environment or company; the search box finds a
//! document by number.

use std::time::Duration;

use emisor::api::invoice_request::examples;
use serde_json::json;

use super::harness::*;
use crate::support::app::*;
use crate::support::bodies::unique;
use crate::support::flow::sim_mode;

fn issue(app: &TestApp) -> (u64, String, u64) {
    let (status, res) = json(app.post(
        "/v1/api/facturacion",
        &app.sk_test(),
        &unique(examples::invoice()),
    ));
    assert_eq!(status, 200, "{res}");
    let d = &res["data"]["documento"];
    let (prefix, numero) = (
        d["prefijo"].as_str().unwrap_or_default(),
        d["numero"].as_str().unwrap_or_default(),
    );
    let number = if numero.starts_with(prefix) {
        numero.to_string()
    } else {
        format!("{prefix}{numero}")
    };
    (
        d["id"].as_u64().unwrap(),
        number,
        res["data"]["id_estado_documento"].as_u64().unwrap_or(0),
    )
}

#[test]
fn a_document_the_api_issues_appears_live_opens_and_its_pdf_downloads() {
    let app = TestApp::spawn();
    let Some(browser) = Browser::open(&app) else {
        return;
    };
    browser.sign_in(&app.sk_test());
    browser.goto("/console/documentos");
    assert!(browser.source().contains("Ningún documento"));
    let (id, number, _) = issue(&app);
    let row = format!("data-id=\"{id}\"");
    browser.wait_until(Duration::from_secs(20), "the new row", |b| {
        b.source().contains(&row)
    });
    assert_eq!(browser.path(), "/console/documentos", "no navigation");
    browser.check_page("documentos");

    // The search box finds it by its number, typed in lower case.
    browser.fill("#buscar", &number.to_lowercase());
    browser.click("form.filters button[type=submit]");
    browser.wait_until(Duration::from_secs(10), "the search's page", |b| {
        b.source().contains("1 documento<") && b.source().contains(&row)
    });

    browser.click(&format!("tr[{row}] a"));
    let page = format!("/console/documentos/{id}");
    browser.wait_until(Duration::from_secs(10), "the document's page", |b| {
        b.path() == page
    });
    let html = browser.source();
    assert!(
        html.contains("Historial") && html.contains(&number),
        "{html}"
    );
    assert!(html.contains(&format!("{page}/pdf")));
    browser.check_page("documento");

    // Its PDF, through the console's route, on the browser's session.
    let cookie = format!("emisor_sesion={}", browser.session_cookie().unwrap());
    let res = http()
        .get(format!("{}{page}/pdf", app.url))
        .header("Cookie", &cookie)
        .send()
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);
    assert_eq!(
        res.headers()["content-type"].to_str().unwrap(),
        "application/pdf"
    );
    assert!(res.bytes().unwrap().starts_with(b"%PDF"));
    let xml = http()
        .get(format!("{}{page}/xml", app.url))
        .header("Cookie", &cookie)
        .send()
        .unwrap();
    assert!(xml.text().unwrap().contains(&number));
}

#[test]
fn a_rejected_document_shows_its_rule_text_and_is_resent_to_acceptance() {
    let app = TestApp::spawn();
    sim_mode(&app, json!({"mode": "reject"}));
    let (id, _, state) = issue(&app);
    assert_eq!(state, 4);
    let Some(browser) = Browser::open(&app) else {
        return;
    };
    browser.sign_in(&app.sk_test());
    let page = format!("/console/documentos/{id}");
    browser.goto(&page);
    let html = browser.source();
    assert!(html.contains("Regla"), "the rule text: {html}");
    assert!(html.contains("Reenviar"));
    browser.check_page("documento-rechazado");

    sim_mode(&app, json!({"mode": "up"}));
    browser.click(&format!("form[action=\"{page}/reenviar\"] button"));
    browser.accept_alert();
    browser.wait_until(Duration::from_secs(30), "the resend's answer", |b| {
        b.source().contains("Documento regenerado")
    });
    let html = browser.source();
    assert!(html.contains("badge ok"), "accepted: {html}");
    assert!(!html.contains(&format!("{page}/reenviar")), "no resend now");
    crate::support::flow::wait_state(&app, id, 2, Duration::from_secs(5));
}

#[test]
fn a_company_session_sees_its_environment_only_and_changes_need_the_csrf_token() {
    let app = TestApp::spawn();
    let (id, number, _) = issue(&app);
    let link = format!("/console/documentos/{id}");
    let test = http_sign_in(&app, &app.sk_test()).unwrap();
    let (status, html) = page(&app, &test, "/console/documentos");
    assert_eq!(status, 200);
    assert!(html.contains(&link), "{html}");
    let (status, html) = page(&app, &test, &link);
    assert_eq!(status, 200);
    assert!(html.contains(&number));

    // The production key's session: not in the list, 404 by URL, and no
    // file either.
    let live = http_sign_in(&app, &app.sk_live()).unwrap();
    let (_, html) = page(&app, &live, "/console/documentos");
    assert!(!html.contains(&link));
    for path in [link.clone(), format!("{link}/pdf"), format!("{link}/zip")] {
        assert_eq!(page(&app, &live, &path).0, 404, "{path}");
    }
    // Another company's list: 404; a bad filter: the console's 400.
    assert_eq!(page(&app, &test, "/console/documentos?empresa=999").0, 404);
    assert_eq!(page(&app, &test, "/console/documentos?estado=9").0, 400);
    assert_eq!(page(&app, &test, "/console/documentos?desde=ayer").0, 400);

    // An action without the sign-in's CSRF token is refused; with it, a
    // check with the authority of an accepted document is not allowed.
    let post = |form: &[(&str, &str)]| {
        http()
            .post(format!("{}{link}/consultar", app.url))
            .header("Cookie", &test)
            .form(form)
            .send()
            .unwrap()
            .status()
            .as_u16()
    };
    assert_eq!(post(&[]), 403);
    let (_, html) = page(&app, &test, &link);
    let token = csrf_of(&html).unwrap();
    assert_eq!(post(&[("csrf", &token)]), 409);
    // Another environment's session posting to it: 404.
    let (_, live_html) = page(&app, &live, "/console/documentos");
    let live_token = csrf_of(&live_html).unwrap();
    let status = http()
        .post(format!("{}{link}/reenviar", app.url))
        .header("Cookie", &live)
        .form(&[("csrf", live_token.as_str())])
        .send()
        .unwrap()
        .status()
        .as_u16();
    assert_eq!(status, 404);
}

/// In the browser: a company's key sees neither another company's
/// document nor the other environment's, in the list or by URL.
#[test]
fn a_company_key_sees_neither_another_companys_nor_the_other_environments_documents() {
    let app = TestApp::spawn();
    let (own, own_number, _) = issue(&app);
    let other = crate::support::events::new_company(&app, "900123457", "Otra Empresa S.A.S.");
    let other_key = crate::support::events::key_of(&other);
    let (status, res) = json(app.post(
        "/v1/api/facturacion",
        &other_key,
        &unique(examples::invoice()),
    ));
    assert_eq!(status, 200, "{res}");
    let theirs = res["data"]["documento"]["id"].as_u64().unwrap();

    let Some(b) = Browser::open(&app) else { return };
    b.sign_in(&app.sk_test());
    b.goto("/console/documentos");
    let list = b.source();
    assert!(
        list.contains(&format!("/console/documentos/{own}")),
        "own document listed"
    );
    assert!(
        !list.contains(&format!("/console/documentos/{theirs}\"")),
        "not theirs"
    );
    assert!(!list.contains("Otra Empresa"));
    b.goto(&format!("/console/documentos/{theirs}"));
    assert!(
        b.source().contains("404"),
        "another company's document by URL"
    );
    b.check_page("documento-de-otra-empresa");
    b.goto(&format!("/console/documentos/{theirs}/pdf"));
    assert!(b.source().contains("404"));

    // The same company's production key: not its testing document either.
    let Some(live) = Browser::open(&app) else {
        return;
    };
    live.sign_in(&app.sk_live());
    live.goto("/console/documentos");
    assert!(!live.source().contains(&own_number));
    live.goto(&format!("/console/documentos/{own}"));
    assert!(
        live.source().contains("404"),
        "the other environment's document by URL"
    );
}
