//! `GET /facturacion`: the company's invoices and notes from the document
//! index, over HTTP, with every filter of decisions.md §4.

use chrono::{Duration, Utc};
use emisor::api::invoice_request::examples;
use serde_json::{json, Value};

use crate::support::app::*;
use crate::support::bodies::unique;

fn issue(app: &TestApp, body: Value) -> u64 {
    let (status, res) = json(app.post("/v1/api/facturacion", &app.sk_test(), &unique(body)));
    assert_eq!(status, 200, "{res}");
    res["data"]["documento"]["id"].as_u64().unwrap()
}

fn draft(mut body: Value) -> Value {
    body["transmit"] = json!(false);
    body
}

fn list(app: &TestApp, key: &str, query: &str) -> Value {
    let (status, res) = json(app.get(&format!("/v1/api/facturacion{query}"), key));
    assert_eq!(status, 200, "{query}: {res}");
    res["data"].clone()
}

fn ids(page: &Value) -> Vec<u64> {
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].as_u64().unwrap())
        .collect()
}

#[test]
fn invoices_and_notes_are_listed_by_date_state_and_page_and_only_to_their_company() {
    let mut app = TestApp::spawn();
    let key = app.sk_test();
    // Accepted (2): three invoices and a credit note; drafts (1): two.
    let mut accepted: Vec<u64> = (0..3).map(|_| issue(&app, examples::invoice())).collect();
    accepted.push(issue(
        &app,
        examples::with_reference(examples::credit_note(), accepted[0]),
    ));
    let drafts: Vec<u64> = (0..2)
        .map(|_| issue(&app, draft(examples::invoice())))
        .collect();
    // Other families are not in this list.
    let support = issue(&app, examples::support_document());
    let pos = issue(&app, examples::pos());

    let mut all: Vec<u64> = accepted.iter().chain(&drafts).copied().collect();
    all.sort_unstable_by(|a, b| b.cmp(a));
    let page = list(&app, &key, "");
    assert_eq!(page["total"], 6, "{page}");
    assert_eq!(
        (page["page"].as_u64(), page["limit"].as_u64()),
        (Some(1), Some(20))
    );
    assert_eq!(ids(&page), all, "newest first");
    assert!(!ids(&page).contains(&support) && !ids(&page).contains(&pos));
    let first = &page["items"][0];
    assert_eq!(first["id_estado_documento"], 1);
    assert_eq!(first["estado"], "Borrador");
    assert!(
        first["cufe"].as_str().is_some_and(|c| c.len() == 96),
        "{first}"
    );

    // States.
    let by_state = |q: &str| {
        let p = list(&app, &key, q);
        (p["total"].as_u64().unwrap(), ids(&p))
    };
    let mut want_drafts = drafts.clone();
    want_drafts.reverse();
    assert_eq!(by_state("?estado=1"), (2, want_drafts));
    assert_eq!(by_state("?estado=2").0, 4);
    assert_eq!(by_state("?estado=1,2").0, 6);
    assert_eq!(by_state("?estado=4").0, 0);

    // Paging: the pages together are the whole list, `total` on each.
    let p1 = list(&app, &key, "?limit=4");
    let p2 = list(&app, &key, "?limit=4&page=2");
    assert_eq!(
        (p1["total"].as_u64(), p2["total"].as_u64()),
        (Some(6), Some(6))
    );
    assert_eq!(p2["page"], 2);
    assert_eq!([ids(&p1), ids(&p2)].concat(), all);
    assert!(ids(&list(&app, &key, "?limit=4&page=3")).is_empty());
    let last = list(&app, &key, "?limit=100&page=4294967295");
    assert_eq!((last["total"].as_u64(), ids(&last).len()), (Some(6), 0));

    // Issue dates, Colombia time, inclusive.
    let today = (Utc::now() + Duration::hours(-5)).date_naive();
    let day = |d: chrono::NaiveDate| d.format("%Y-%m-%d").to_string();
    let range = |from: chrono::NaiveDate, to: chrono::NaiveDate| {
        list(
            &app,
            &key,
            &format!("?fecha_desde={}&fecha_hasta={}", day(from), day(to)),
        )["total"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(range(today, today), 6);
    assert_eq!(
        range(today - Duration::days(30), today - Duration::days(1)),
        0
    );
    assert_eq!(
        range(today + Duration::days(1), today + Duration::days(2)),
        0
    );
    let p = list(
        &app,
        &key,
        &format!("?fecha_desde={}&estado=2&limit=3", day(today)),
    );
    assert_eq!((p["total"].as_u64(), ids(&p).len()), (Some(4), 3));

    // Bad paging and filters: 422 naming the parameter.
    for (query, field) in [
        ("?limit=500", "limit"),
        ("?limit=0", "limit"),
        ("?page=0", "page"),
        ("?fecha_desde=2026-13-01", "fecha_desde"),
        ("?fecha_hasta=ayer", "fecha_hasta"),
        ("?estado=9", "estado"),
        ("?limit=diez", "limit"),
        ("?limit=-1", "limit"),
        ("?page=99999999999", "page"),
        ("?estado=1,,2", "estado"),
        ("?estado=%00", "estado"),
        ("?fecha_desde=2026-02-30", "fecha_desde"),
    ] {
        let res = assert_error(
            app.get(&format!("/v1/api/facturacion{query}"), &key),
            422,
            "VALIDATION_ERROR",
        );
        assert_eq!(res["error"]["details"][0]["field"], field, "{query}: {res}");
    }
    let res = assert_error(
        app.get(
            &format!(
                "/v1/api/facturacion?fecha_desde={}&fecha_hasta={}",
                day(today),
                day(today - Duration::days(1))
            ),
            &key,
        ),
        422,
        "VALIDATION_ERROR",
    );
    assert_eq!(res["error"]["details"][0]["field"], "fecha_desde");

    // Another company sees none of them, and may not name this one.
    let (_, other) = json(app.admin_post(
        "/admin/companies",
        &json!({"nit": "860000001", "razon_social": "Tercera", "demo": true}),
    ));
    let other_key = other["data"]["sk_test"].as_str().unwrap().to_string();
    assert_eq!(list(&app, &other_key, "")["total"], 0);
    let (_, checked) = json(app.get("/v1/api/api-keys/test", &key));
    let company_id = checked["data"]["id_empresa"].as_u64().unwrap();
    assert_eq!(
        list(&app, &key, &format!("?id_empresa={company_id}"))["total"],
        6
    );
    assert_error(
        app.get(
            &format!("/v1/api/facturacion?id_empresa={company_id}"),
            &other_key,
        ),
        403,
        "FORBIDDEN",
    );
    // Production keys list production documents: none here.
    assert_eq!(list(&app, &app.sk_live(), "")["total"], 0);

    // The index and its counters survive a restart.
    let dir = app.dir.clone();
    app.stop();
    let app = TestApp::start_in(&dir, Launch::default());
    let again = list(&app, &app.sk_test(), "?estado=2");
    assert_eq!(again["total"], 4);
}
