//! Email: `/email/documento/:id`, `/email/reenviar/:id_correo`,
//! `/email/logs/:id_documento`.

use super::*;

/// Addresses no mail server could take, or that smuggle a header or a
/// second recipient.
pub(super) fn bad_addresses() -> Vec<String> {
    [
        "",
        " ",
        "a",
        "a@",
        "@example.test",
        "a@@example.test",
        "a b@example.test",
        "a@exa mple.test",
        "a@example..test",
        "a@-example.test",
        "a.@example.test",
        ".a@example.test",
        "a@example.test,b@example.test",
        "a@example.test;b@example.test",
        "a@example.test b@example.test",
        "<a@example.test>",
        "Cliente <a@example.test>",
        "a@example.test\r\nBcc: b@example.test",
        "a@example.test\nSubject: x",
        "a\u{0}@example.test",
        "a@example.test\u{0}",
        "a@exa\u{7}mple.test",
        "a@[999.1.1.1]",
        "a@example.test\u{202e}",
        "😀@😀",
    ]
    .map(String::from)
    .into_iter()
    .chain([
        // Past the 64-byte local part, the 254-byte domain, a 63-byte label.
        format!("{}@example.test", "a".repeat(65)),
        format!("a@{}.test", "b".repeat(64)),
        format!("a@{}test", "b.".repeat(130)),
        // 100 kB.
        format!("{}@example.test", "x".repeat(100_000)),
        format!("a@{}", "ñ".repeat(50_000)),
    ])
    .collect()
}

/// `n` good addresses.
pub(super) fn addresses(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("copia{i}@example.test")).collect()
}

/// How many emails each of `docs` has, as `key` sees them.
pub(super) fn mail_counts(app: &TestApp, docs: &[(u64, &str)]) -> Vec<u64> {
    docs.iter()
        .map(|(doc, key)| {
            let (status, res) = json(app.get(&format!("/v1/api/email/logs/{doc}?limit=1"), key));
            assert_eq!(status, 200, "{res}");
            res["data"]["total"].as_u64().unwrap()
        })
        .collect()
}

/// Waits until every email of `doc` has left the queue (the automatic one).
pub(super) fn settled(app: &TestApp, doc: u64, key: &str) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (status, res) = json(app.get(&format!("/v1/api/email/logs/{doc}?limit=100"), key));
        assert_eq!(status, 200, "{res}");
        let items = res["data"]["items"].as_array().unwrap().clone();
        if !items.is_empty() && items.iter().all(|l| l["status"] != "queued") {
            return items;
        }
        assert!(Instant::now() < deadline, "emails of {doc}: {items:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// An invoice issued synchronously (accepted) with `key`; its id.
pub(super) fn accepted(app: &TestApp, key: &str) -> u64 {
    let mut body = examples::invoice();
    body["referencia_externa"] = json!(fresh_reference());
    let d = data(app.post("/v1/api/facturacion", key, &body));
    assert_eq!(d["id_estado_documento"], 2, "{d}");
    d["documento"]["id"].as_u64().unwrap()
}

#[test]
fn hostile_client_on_email_gets_4xx_envelopes_and_queues_nothing() {
    const E: &str = "/v1/api/email";
    let app = TestApp::spawn_with(
        Launch::default()
            .capture_log()
            .env("EMISOR_RATE_LIMIT__REQUESTS_PER_MINUTE", "1000000"),
    );
    let key = app.sk_test();
    let (status, second) = json(app.admin_post(
        "/admin/companies",
        &json!({"nit": "800197268", "razon_social": "Otra S.A.S.", "demo": true}),
    ));
    assert_eq!(status, 201, "{second}");
    let other_key = second["data"]["sk_test"].as_str().unwrap().to_string();
    let own = accepted(&app, &key);
    let draft = issue_draft(&app, &key, examples::invoice(), &fresh_reference());
    let foreign = accepted(&app, &other_key);
    // The automatic emails of both accepted invoices, out of the queue.
    let own_mail = settled(&app, own, &key)[0]["id_correo"].as_u64().unwrap();
    let foreign_mail = settled(&app, foreign, &other_key)[0]["id_correo"]
        .as_u64()
        .unwrap();
    let docs = [(own, key.as_str()), (draft, &key), (foreign, &other_key)];
    let before = mail_counts(&app, &docs);

    let kinds = hostile_kinds();
    let mut rng = Rng(SEED);
    let mut p = Probe::new(&app);
    // Sends that were accepted (a mutation may leave a body valid).
    let mut queued = 0u64;

    p.section("email/documento");
    let send = format!("{E}/documento/{own}");
    let base = json!({
        "to": ["cliente@example.test"],
        "cc": ["copia@example.test"],
        "id_empresa": 1
    });
    for m in mutations(&base, &kinds, &mut rng, |_| Plan::All) {
        let a = p.post_json(&send, &m.what, m.text.clone());
        p.judged(&m.what, &a, &m);
        queued += u64::from(a.accepted());
    }
    let mut valid = || base.to_string();
    p.body_attacks(Method::POST, &send, false, &mut valid, &mut |_, _| {
        queued += 1
    });
    for bad in bad_addresses() {
        for body in [
            json!({"to": [bad.clone()]}),
            json!({"to": ["cliente@example.test"], "cc": [bad.clone()]}),
            json!({"to": ["cliente@example.test", bad.clone()], "cc": []}),
        ] {
            let what = format!("address {}", abbreviate(&body.to_string()));
            let a = p.post_json(&send, &what, body.to_string());
            p.refused(&what, &a, true);
            if a.accepted() {
                queued += 1;
            } else if a.status != 422 && a.status != 413 {
                p.fail(&what, format!("{}: a bad address is a 422", a.status));
            }
        }
    }
    // Too many recipients: 20 in all is the most.
    for (to, cc) in [(1, 20), (21, 0), (10, 11), (1, 1_000), (1, 30_000)] {
        let body = json!({"to": addresses(to), "cc": addresses(cc)}).to_string();
        let what = format!("{to} to and {cc} cc");
        let a = p.post_json(&send, &what, body);
        p.refused(&what, &a, true);
        queued += u64::from(a.accepted());
    }
    for body in [
        json!({"to": []}),
        json!({"to": "cliente@example.test"}),
        json!({"to": [["cliente@example.test"]]}),
        json!({"to": [{"email": "cliente@example.test"}]}),
        json!({"to": [1]}),
        json!({"cc": "copia@example.test"}),
        json!({"cc": [null]}),
        json!({"id_empresa": 2}),
        json!({"id_empresa": "1"}),
        json!({"bcc": ["copia@example.test"]}),
        json!({"to": ["cliente@example.test"], "adjuntos": []}),
    ] {
        let what = body.to_string();
        let a = p.post_json(&send, &what, what.clone());
        p.refused(&what, &a, true);
        queued += u64::from(a.accepted());
    }
    // Ids that name no document of the key's company, or one not accepted.
    let ids =
        bad_ids()
            .into_iter()
            .chain([foreign.to_string(), draft.to_string(), "4000000".into()]);
    for id in ids {
        let path = format!("{E}/documento/{id}");
        for body in ["", "{}", r#"{"to": ["cliente@example.test"]}"#] {
            let a = p.post_json(&path, &format!("[{body}]"), body);
            p.refused(&path, &a, true);
            queued += u64::from(a.accepted());
        }
    }
    let a = p.post_json(&format!("{E}/documento/{draft}"), "draft", "{}");
    if a.status != 409 {
        p.fail(
            "a draft is mailed",
            format!("{}: INVALID_STATE is a 409", a.status),
        );
    }

    p.section("email/reenviar");
    let resend = format!("{E}/reenviar/{own_mail}");
    let mut resent = 0u64;
    for attack in body_attacks(r#"{"id_empresa":1}"#) {
        let what = format!("POST {resend} {}", attack.what);
        let req = p
            .request(Method::POST, &resend, false)
            .header("Content-Type", "application/json")
            .body(attack.body.clone());
        let a = p.send(&what, req);
        p.refused(&what, &a, attack.must_refuse);
        resent += u64::from(a.accepted());
    }
    for body in [
        r#"{"id_empresa":2}"#,
        r#"{"id_empresa":"1"}"#,
        r#"{"id_empresa":-1}"#,
        r#"{"id_empresa":1.5}"#,
        r#"{"id_empresa":18446744073709551616}"#,
        r#"{"to":["otro@example.test"]}"#,
        r#"{"id_empresa":1,"id_empresa":1}"#,
        "[]",
        "null",
    ] {
        let a = p.post_json(&resend, body, body);
        p.refused(&format!("reenviar {body}"), &a, true);
        resent += u64::from(a.accepted());
    }
    let ids = bad_ids()
        .into_iter()
        .chain([foreign_mail.to_string(), "4000000".into()]);
    for id in ids {
        let path = format!("{E}/reenviar/{id}");
        for body in ["", "{}"] {
            let a = p.post_json(&path, &format!("[{body}]"), body);
            p.refused(&path, &a, true);
            resent += u64::from(a.accepted());
        }
    }

    p.section("email/logs");
    let ids = bad_ids()
        .into_iter()
        .chain([foreign.to_string(), "4000000".into()]);
    for id in ids {
        let path = format!("{E}/logs/{id}");
        let a = p.get(&path);
        p.refused(&path, &a, true);
    }
    for q in bad_queries().into_iter().chain(
        [
            "?limit=0",
            "?limit=101",
            "?limit=-1",
            "?limit=abc",
            "?page=0",
            "?page=-1",
            "?page=4294967296",
            "?page=4294967295&limit=100",
            "?page=1.5",
        ]
        .map(String::from),
    ) {
        p.get(&format!("{E}/logs/{own}{q}"));
    }

    p.section("email methods and keys");
    let routes = [
        format!("{E}/documento/{own}"),
        format!("{E}/reenviar/{own_mail}"),
        format!("{E}/logs/{own}"),
    ];
    for route in &routes {
        for m in [Method::PUT, Method::DELETE, Method::PATCH] {
            let what = format!("{m} {route}");
            let a = p.keyed(m, route, Some("application/json"), b"{}".to_vec());
            p.refused(&what, &a, true);
        }
    }
    let keys: [&[u8]; 6] = [
        b"",
        b"sk_test_",
        b"sk_live_x",
        &[b"sk_test_".as_slice(), &[b'a'; 7_000]].concat(),
        b"sk_test_\xFF\xFE",
        b"Bearer sk_test_x",
    ];
    for route in &routes {
        let method = if route.contains("/logs/") {
            Method::GET
        } else {
            Method::POST
        };
        for key in keys {
            let what = format!(
                "{method} {route} key {}",
                abbreviate(&String::from_utf8_lossy(key))
            );
            let header = reqwest::header::HeaderValue::from_bytes(key).unwrap();
            let req = p
                .app
                .client
                .request(method.clone(), p.url(route))
                .header("X-Api-Key", header)
                .header("Content-Type", "application/json");
            let a = p.send(&what, req.body("{}"));
            p.refused(&what, &a, true);
            if a.accepted() {
                // Whichever it was, one more email of the document.
                queued += 1;
            } else if a.status != 401 {
                p.fail(&what, format!("{}: a bad key is a 401", a.status));
            }
        }
        let what = format!("{method} {route} without key");
        let req = p.app.client.request(method.clone(), p.url(route));
        let a = p.send(&what, req.body("{}"));
        p.refused(&what, &a, true);
        if a.status != 401 {
            p.fail(&what, format!("{}: no key is a 401", a.status));
        }
    }

    // Nothing queued but what was accepted: on the document mailed, on the
    // draft and on the other company's invoice.
    let after = mail_counts(&app, &docs);
    let mut problems = Vec::new();
    // The email resent was sent: each resend accepted is a new email.
    let expected = vec![before[0] + queued + resent, before[1], before[2]];
    if after != expected {
        problems.push(format!(
            "emails of (own, draft, foreign) went {before:?} → {after:?}; \
             accepted {queued} sends and {resent} resends"
        ));
    }
    let log = app.log();
    for bad in ["panicked", "internal error"] {
        if let Some(line) = log.lines().find(|l| l.contains(bad)) {
            problems.push(format!("server log: {line}"));
        }
    }
    eprintln!(
        "hostile email: {} requests ({}), by status {:?}; accepted {queued} sends, {resent} resends",
        p.sent,
        p.tally(),
        p.by_status,
    );
    problems.extend(p.failures.iter().cloned());
    assert!(
        problems.is_empty(),
        "{} problems:\n{}",
        problems.len(),
        problems
            .iter()
            .take(40)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}
