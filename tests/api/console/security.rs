//! Who may see the console and how: signing in and out, the live view,
//! CSRF on every change, the stream's `Origin`, wrong credentials counted.

use std::time::Duration;

use emisor::api::invoice_request::examples;

use super::harness::*;
use crate::support::app::*;
use crate::support::bodies::unique;
use crate::support::flow::fast_launch;

/// The first tile's count on the overview: documents accepted today.
fn accepted_today(b: &Browser) -> Option<u64> {
    b.text(".tiles .tile .value")
        .and_then(|t| t.trim().parse().ok())
}

#[test]
fn a_key_signs_in_sees_an_api_document_arrive_without_a_reload_and_signs_out() {
    let app = TestApp::spawn_with(fast_launch());
    let Some(b) = Browser::open(&app) else { return };
    b.goto("/console");
    assert_eq!(
        b.path(),
        "/console/entrar",
        "no session: to the sign-in page"
    );
    b.check_page("sign-in");
    b.sign_in(&app.sk_test());
    assert!(
        b.source().contains("Empresa Demo"),
        "the key's company is shown"
    );
    let before = accepted_today(&b).expect("accepted today");
    b.check_page("overview");

    // The stream is open before the document is issued.
    b.wait_until(Duration::from_secs(10), "the live stream to open", |b| {
        b.js("return document.getElementById('live-status').getAttribute('data-state');") == "open"
    });
    b.js("window.notReloaded = true; return null;");
    let (status, res) = json(app.post(
        "/v1/api/facturacion",
        &app.sk_test(),
        &unique(examples::invoice()),
    ));
    assert_eq!(status, 200, "{res}");
    b.wait_until(
        Duration::from_secs(20),
        "the overview to count the new document",
        |b| accepted_today(b) == Some(before + 1),
    );
    assert_eq!(
        b.js("return window.notReloaded === true;"),
        true,
        "updated in place, no reload"
    );

    let cookie = b.session_cookie().expect("session cookie");
    b.click("form[action='/console/salir'] button");
    b.wait_until(Duration::from_secs(10), "the sign-in page", |b| {
        b.path() == "/console/entrar"
    });
    b.goto("/console");
    assert_eq!(b.path(), "/console/entrar", "signed out");
    // The old cookie opens nothing any more.
    let (status, _) = page(&app, &format!("emisor_sesion={cookie}"), "/console");
    assert_eq!(status, 303);
}

#[test]
fn a_form_posted_without_its_csrf_token_is_refused_and_changes_nothing() {
    let app = TestApp::spawn();
    let Some(b) = Browser::open(&app) else { return };
    b.sign_in(&app.sk_test());
    // The sign-out form, sent without its token: the session must survive.
    b.js(
        "const f = document.querySelector(\"form[action='/console/salir']\"); \
          f.querySelector('input[name=csrf]').remove(); f.submit(); return null;",
    );
    b.wait_until(Duration::from_secs(10), "the refusal page", |b| {
        b.source().contains("CSRF")
    });
    assert!(b.source().contains("403"), "{}", b.source());
    b.check_page("csrf-refused");
    b.goto("/console");
    assert_eq!(
        b.path(),
        "/console",
        "still signed in: the change was refused"
    );

    // The same over HTTP: a wrong token and another origin are refused too.
    let cookie = http_sign_in(&app, &app.sk_test()).expect("signed in");
    let (_, html) = page(&app, &cookie, "/console");
    let token = csrf_of(&html).expect("csrf");
    let post = |form: &[(&str, &str)], origin: Option<&str>| {
        let mut req = http()
            .post(format!("{}/console/salir", app.url))
            .header("Cookie", &cookie)
            .form(form);
        if let Some(o) = origin {
            req = req.header("Origin", o);
        }
        req.send().expect("post").status().as_u16()
    };
    assert_eq!(post(&[("csrf", "wrong")], None), 403);
    assert_eq!(post(&[], None), 403);
    assert_eq!(post(&[("csrf", &token)], Some("http://evil.example")), 403);
    assert_eq!(
        page(&app, &cookie, "/console").0,
        200,
        "none of them signed out"
    );
    assert_eq!(
        post(&[("csrf", &token)], Some(&app.url)),
        303,
        "the real one does"
    );
    assert_eq!(page(&app, &cookie, "/console").0, 303);
}

#[test]
fn the_stream_is_refused_from_another_origin_and_without_a_session() {
    let app = TestApp::spawn();
    let cookie = http_sign_in(&app, &app.sk_test()).expect("signed in");
    let open = |cookie: Option<&str>, headers: &[(&str, &str)]| {
        let mut req = http().get(format!("{}/console/stream", app.url));
        if let Some(c) = cookie {
            req = req.header("Cookie", c);
        }
        for (name, value) in headers {
            req = req.header(*name, *value);
        }
        let res = req.send().expect("stream");
        let kind = res
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        (res.status().as_u16(), kind)
    };
    let c = Some(cookie.as_str());
    assert_eq!(open(c, &[("Origin", "http://evil.example")]).0, 403);
    assert_eq!(open(c, &[("Origin", "null")]).0, 403);
    assert_eq!(
        open(
            c,
            &[
                ("Origin", "http://evil.example"),
                ("Sec-Fetch-Site", "same-origin")
            ]
        )
        .0,
        403,
        "a foreign Origin is refused whatever else is said"
    );
    assert_eq!(
        open(c, &[]).0,
        403,
        "neither Origin nor Sec-Fetch-Site: not the console's page"
    );
    assert_eq!(open(c, &[("Sec-Fetch-Site", "cross-site")]).0, 403);
    assert_eq!(
        open(None, &[("Origin", &app.url)]).0,
        303,
        "no session: to sign in"
    );
    // A browser's same-origin EventSource sends no Origin, but says so.
    assert_eq!(open(c, &[("Sec-Fetch-Site", "same-origin")]).0, 200);
    let (status, kind) = open(c, &[("Origin", &app.url)]);
    assert_eq!(status, 200);
    assert!(kind.starts_with("text/event-stream"), "{kind}");
}

#[test]
fn wrong_credentials_are_refused_logged_without_the_secret_and_limited() {
    let app = TestApp::spawn_with(Launch::default().capture_log());
    let guess = "sk_test_notarealkeyatallnotarealkeyatallnotareal";
    for _ in 0..10 {
        assert_eq!(http_sign_in(&app, guess), Err(401));
    }
    assert_eq!(
        http_sign_in(&app, "adm_wrong"),
        Err(429),
        "the address used its budget"
    );
    assert_eq!(
        http_sign_in(&app, &app.admin_token()),
        Err(429),
        "even the right token waits: the answer tells nothing"
    );
    let log = app.log();
    assert!(log.contains("wrong console credential"), "{log}");
    assert!(!log.contains(guess), "the guess is never logged");
    // The session cookie is HttpOnly and SameSite=Strict, scoped to /console.
    let app = TestApp::spawn();
    let client = http();
    let form = client
        .get(format!("{}/console/entrar", app.url))
        .send()
        .expect("form");
    let pre = set_cookie(&form, "emisor_entrada").expect("form cookie");
    let token = csrf_of(&form.text().expect("page")).expect("csrf");
    let res = client
        .post(format!("{}/console/entrar", app.url))
        .header("Cookie", format!("emisor_entrada={pre}"))
        .form(&[
            ("csrf", token.as_str()),
            ("credencial", app.admin_token().as_str()),
        ])
        .send()
        .expect("sign in");
    let session = res
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with("emisor_sesion="))
        .expect("session cookie")
        .to_string();
    for part in [
        "HttpOnly",
        "SameSite=Strict",
        "Path=/console",
        "Max-Age=28800",
    ] {
        assert!(session.contains(part), "{session}");
    }
    assert!(
        !session.contains("Secure"),
        "secure_cookie is off by default"
    );
    // Without the form's own cookie the sign-in is refused (login CSRF).
    let res = client
        .post(format!("{}/console/entrar", app.url))
        .form(&[
            ("csrf", token.as_str()),
            ("credencial", app.admin_token().as_str()),
        ])
        .send()
        .expect("sign in");
    assert_eq!(res.status().as_u16(), 403);
}

#[test]
fn every_page_has_a_content_security_policy_and_the_console_can_be_turned_off() {
    let app = TestApp::spawn_with(Launch::default().env("EMISOR_CONSOLE__SECURE_COOKIE", "true"));
    let res = http()
        .get(format!("{}/console/entrar", app.url))
        .send()
        .expect("form");
    let csp = res
        .headers()
        .get("content-security-policy")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    assert!(
        csp.contains("script-src 'self'") && csp.contains("frame-ancestors 'none'"),
        "{csp}"
    );
    assert!(!csp.contains("unsafe-inline"), "{csp}");
    let pre = res
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with("emisor_entrada="))
        .expect("form cookie")
        .to_string();
    assert!(pre.contains("Secure"), "{pre}");
    let js = http()
        .get(format!("{}/console/assets/console.js", app.url))
        .send()
        .expect("js");
    assert_eq!(js.status().as_u16(), 200);

    let off = TestApp::spawn_with(Launch::default().env("EMISOR_CONSOLE__ENABLED", "false"));
    let res = http()
        .get(format!("{}/console", off.url))
        .send()
        .expect("console");
    assert_error(res, 404, "NOT_FOUND");
    let res = http()
        .get(format!("{}/console/entrar", off.url))
        .send()
        .expect("console");
    assert_eq!(res.status().as_u16(), 404);
}
