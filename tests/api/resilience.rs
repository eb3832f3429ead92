//! Resilience of the transmission path (spec 3.1, 3.2, 8; issues 4 and 5),
//! driven through HTTP against the in-process simulator with a scaled clock:
//! retries and dead letter, recovery, business rejection, production with
//! the breaker open, a lost answer, pacing.

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

use emisor::api::invoice_request::examples;
use serde_json::{json, Value};

use crate::support::app::*;
use crate::support::bodies::unique;
use crate::support::flow::*;

fn doc_id(res: &Value) -> u64 {
    res["data"]["documento"]["id"].as_u64().expect("id")
}

fn code_of(res: &Value) -> String {
    res["data"]["cufe"].as_str().expect("cufe").to_string()
}

fn sends(stats: &Value) -> u64 {
    stats["calls"]["SendBillSync"].as_u64().unwrap_or(0)
}

fn readyz(app: &TestApp) -> Value {
    let res = app
        .client
        .get(format!("{}/readyz", app.url))
        .send()
        .expect("readyz");
    res.json().expect("readyz JSON")
}

#[test]
fn authority_down_dead_letters_after_scaled_retries_then_recovery_accepts() {
    let app = TestApp::spawn_with(
        fast_launch().env("EMISOR_RESILIENCE__RECOVERY_INTERVAL_S", "50"), // 0.5 s
    );
    let mut ws = Ws::connect(&app, &app.sk_test());
    sim_mode(&app, json!({"mode": "down"}));

    // A few documents, so the breaker opens (5 consecutive failures) while
    // they still have attempts left: those wait in state 5.
    let started = Instant::now();
    let ids: Vec<u64> = (0..4)
        .map(|_| doc_id(&post_async(&app, &examples::invoice())))
        .collect();
    let mut seen: HashMap<u64, Vec<u64>> = HashMap::new();
    // The breaker's pause each time it is seen OPEN (spec 3.2: 60, 120, 300 s).
    let mut pauses: Vec<u64> = Vec::new();
    let watch_breaker = |pauses: &mut Vec<u64>| {
        let b = readyz(&app)["data"]["breaker"]["detail"].clone();
        if b["state"] == "OPEN" {
            let p = b["pause_ms"].as_u64().expect("pause_ms");
            if pauses.last() != Some(&p) {
                pauses.push(p);
            }
        }
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        watch_breaker(&mut pauses);
        for id in &ids {
            let s = status_of(&app, *id)["id_estado_documento"]
                .as_u64()
                .expect("state");
            let states = seen.entry(*id).or_default();
            if states.last() != Some(&s) {
                states.push(s);
            }
        }
        if seen.values().all(|s| s.last() == Some(&6)) {
            break;
        }
        assert!(Instant::now() < deadline, "not all dead-lettered: {seen:?}");
        std::thread::sleep(Duration::from_millis(30));
    }
    let dead_after = started.elapsed();
    for (id, states) in &seen {
        // Queued when first seen, or already waiting: under load its
        // first send can fail before the test first looks.
        assert!(matches!(states.first(), Some(3 | 5)), "{id}: {states:?}");
        assert!(
            states.iter().all(|s| [3, 5, 6].contains(s)),
            "{id}: only queued, waiting and dead: {states:?}"
        );
    }
    assert!(
        seen.values().any(|s| s.contains(&5)),
        "the open breaker put documents in state 5: {seen:?}"
    );
    // The first send and five retries 0.1, 0.2, 0.4, 0.8, 1.6 s apart at
    // least (spec 8's 10-160 s at time_scale 0.01).
    assert!(
        dead_after >= Duration::from_millis(3000),
        "dead-lettered after {dead_after:?}: the retries were not spaced"
    );
    for id in &ids {
        let e = ws.event_for("facturacion:error", *id, Duration::from_secs(5));
        assert_eq!(e["data"]["id_estado_documento"], 6, "{e}");
        assert_eq!(e["data"]["estado"], "Dead Letter", "{e}");
        assert!(
            e["data"]["errors"]
                .as_array()
                .is_some_and(|a| !a.is_empty()),
            "{e}"
        );
        let rec = status_of(&app, *id);
        assert_eq!(rec["tax_response"]["isValid"], false, "{rec}");
    }
    // Recovery keeps probing while the authority is down: each failed
    // half-open probe grows the pause, 0.6 s, 1.2 s, then 3 s (scaled).
    let deadline = Instant::now() + Duration::from_secs(15);
    while pauses.len() < 3 {
        assert!(Instant::now() < deadline, "pauses seen: {pauses:?}");
        watch_breaker(&mut pauses);
        std::thread::sleep(Duration::from_millis(30));
    }
    assert_eq!(pauses, [600, 1200, 3000], "breaker pause growth");
    // Those probes were recovery asking; while nobody answers, nothing is
    // re-queued: the documents stay dead and no second error is announced.
    let later = ws.events_within(Duration::from_millis(1200));
    assert!(
        later.iter().all(|e| e["event"] != "facturacion:error"),
        "re-queued while the authority was down: {later:?}"
    );
    for id in &ids {
        assert_eq!(status_of(&app, *id)["id_estado_documento"], 6);
    }
    let stats = sim_stats(&app);
    assert_eq!(stats["accepted_count"], 0);
    assert!(
        sends(&stats) <= 4 * 6,
        "at most six sends (the first and five retries) each reached the authority: {stats}"
    );

    // The authority comes back: the recovery job re-queues them.
    sim_mode(&app, json!({"mode": "up"}));
    for id in &ids {
        let e = ws.event_for("facturacion:update", *id, Duration::from_secs(20));
        assert_eq!(e["data"]["id_estado_documento"], 2, "{e}");
    }
    wait_all(&app, &ids, 2, Duration::from_secs(5));
    let stats = sim_stats(&app);
    assert_eq!(stats["accepted_count"], 4, "{stats}");
    let r = readyz(&app);
    assert_eq!(r["data"]["breaker"]["state"], "CLOSED", "{r}");
}

#[test]
fn business_rejection_is_final_until_resent() {
    let app = TestApp::spawn_with(fast_launch());
    let mut ws = Ws::connect(&app, &app.sk_test());
    sim_mode(&app, json!({"mode": "reject"}));

    let res = post_async(&app, &examples::invoice());
    let id = doc_id(&res);
    let code = code_of(&res);
    let e = ws.event_for("facturacion:update", id, Duration::from_secs(20));
    assert_eq!(e["data"]["id_estado_documento"], 4, "{e}");
    assert_eq!(e["data"]["estado"], "Rechazado", "{e}");
    assert!(
        e["data"]["errors"][0]
            .as_str()
            .is_some_and(|m| m.starts_with("Regla: ")),
        "{e}"
    );
    // Longer than the first retry delays (0.1 + 0.2 s): nothing is retried.
    std::thread::sleep(Duration::from_millis(800));
    let rec = status_of(&app, id);
    assert_eq!(rec["id_estado_documento"], 4, "{rec}");
    assert_eq!(rec["tax_response"]["isValid"], false, "{rec}");
    assert_eq!(rec["tax_track_id"], code, "{rec}");
    assert_eq!(e["data"]["zipKey"], code, "{e}");
    let stats = sim_stats(&app);
    assert_eq!(sends(&stats), 1, "sent once: {stats}");
    assert_eq!(stats["received"][&code], 1, "{stats}");
    let r = readyz(&app);
    assert_eq!(
        r["data"]["breaker"]["state"], "CLOSED",
        "a rejection is an answer, not a failure: {r}"
    );

    // Resend after the authority accepts again.
    sim_mode(&app, json!({"mode": "up"}));
    let (status, resent) = json(app.post(
        &format!("/v1/api/facturacion/reenviar/{id}"),
        &app.sk_test(),
        &json!({}),
    ));
    assert_eq!(status, 200, "{resent}");
    assert_eq!(resent["data"]["id_estado_documento"], 2, "{resent}");
    assert_eq!(resent["data"]["transmission"]["isValid"], true, "{resent}");
    assert_eq!(
        resent["data"]["documento"]["numero"], res["data"]["documento"]["numero"],
        "same number"
    );
    assert_eq!(status_of(&app, id)["id_estado_documento"], 2);
    let stats = sim_stats(&app);
    assert_eq!(sends(&stats), 2, "{stats}");
    assert_eq!(stats["accepted_count"], 1, "{stats}");
}

#[test]
fn production_key_with_the_breaker_open_is_refused_and_writes_nothing() {
    // time_scale 0.1: the breaker stays open 6 s, retries 1, 2, 4… s apart.
    let app = TestApp::spawn_with(
        Launch::default()
            .env("EMISOR_RESILIENCE__TIME_SCALE", "0.1")
            .env("EMISOR_RATE_LIMIT__REQUESTS_PER_MINUTE", "100000"),
    );
    sim_mode(&app, json!({"mode": "down"}));
    let ids: Vec<u64> = (0..5)
        .map(|_| doc_id(&post_async(&app, &examples::invoice())))
        .collect();
    // Five failed sends open the breaker; the first retry then finds it open.
    let deadline = Instant::now() + Duration::from_secs(15);
    while !ids
        .iter()
        .any(|id| status_of(&app, *id)["id_estado_documento"] == 5)
    {
        assert!(Instant::now() < deadline, "no document reached state 5");
        std::thread::sleep(Duration::from_millis(50));
    }
    let r = readyz(&app);
    assert_eq!(r["data"]["breaker"]["state"], "OPEN", "{r}");

    let live = app.sk_live();
    // Production numbers from the company's own resolution.
    let live_next = || {
        let (_, c) = json(app.get("/v1/api/facturacion/consecutivo/fe", &live));
        c["data"]["siguiente"].clone()
    };
    let before_fe = live_next();
    let (_, sub) = json(app.get("/v1/api/facturacion/suscripcion", &app.sk_test()));
    let used = sub["data"]["usados"].clone();
    let sends_before = sends(&sim_stats(&app));
    for asynchronous in [false, true] {
        let mut body = unique(examples::invoice());
        body["async"] = json!(asynchronous);
        let err = assert_error(
            app.post("/v1/api/facturacion", &live, &body),
            503,
            "TAX_UNAVAILABLE",
        );
        assert!(
            err["data"].is_null() || err["data"]["id"].is_null(),
            "{err}"
        );
    }
    assert_eq!(live_next(), before_fe, "no number consumed");
    let (_, sub) = json(app.get("/v1/api/facturacion/suscripcion", &live));
    assert_eq!(sub["data"]["usados"], used, "no document written");
    assert_eq!(sends(&sim_stats(&app)), sends_before, "nothing sent");
    // A sandbox key still queues (it waits for the authority).
    let queued = post_async(&app, &examples::invoice());
    assert_eq!(queued["status"], 202);
}

#[test]
fn a_lost_answer_is_resolved_with_get_status_not_a_second_send() {
    let app = TestApp::spawn_with(fast_launch().env("EMISOR_AUTHORITY__TIMEOUT_MS", "300"));
    sim_mode(&app, json!({"mode": "slow", "latency_ms": 1500}));
    let res = post_async(&app, &examples::invoice());
    let id = doc_id(&res);
    let code = code_of(&res);
    // The simulator accepts the document, its answer comes after the client
    // has given up.
    let deadline = Instant::now() + Duration::from_secs(10);
    while sim_stats(&app)["accepted"].get(&code).is_none() {
        assert!(Instant::now() < deadline, "the simulator never got it");
        std::thread::sleep(Duration::from_millis(20));
    }
    sim_mode(&app, json!({"mode": "up"}));
    let rec = wait_state(&app, id, 2, Duration::from_secs(20));
    assert_eq!(rec["tax_response"]["isValid"], true, "{rec}");
    let stats = sim_stats(&app);
    assert_eq!(stats["accepted_count"], 1, "{stats}");
    assert_eq!(
        stats["accepted"][&code]["received"], 1,
        "the code reached the authority once: {stats}"
    );
    assert_eq!(sends(&stats), 1, "one SendBillSync: {stats}");
    assert!(
        stats["calls"]["GetStatus"].as_u64().unwrap_or(0) >= 1,
        "resolved by GetStatus: {stats}"
    );
}

#[test]
#[cfg_attr(not(feature = "soak"), ignore = "soak")]
fn pacing_never_exceeds_ten_a_second_or_three_in_flight() {
    let app = TestApp::spawn_with(fast_launch());
    // A little latency so calls overlap and the in-flight cap is exercised.
    sim_mode(&app, json!({"mode": "slow", "latency_ms": 150}));
    let ids: Vec<u64> = (0..40)
        .map(|_| doc_id(&post_async(&app, &examples::invoice())))
        .collect();
    wait_all(&app, &ids, 2, Duration::from_secs(25));
    let stats = sim_stats(&app);
    assert_eq!(stats["accepted_count"], 40, "{stats}");
    let max_in_flight = stats["max_in_flight"].as_u64().expect("max_in_flight");
    let max_per_second = stats["max_per_second"].as_u64().expect("max_per_second");
    assert!(max_in_flight <= 3, "{stats}");
    assert!(max_per_second <= 10, "{stats}");
    // The limits were reached, not merely respected by a trickle.
    assert!(max_in_flight >= 2, "{stats}");
    let codes: BTreeSet<&String> = stats["accepted"]
        .as_object()
        .expect("accepted")
        .keys()
        .collect();
    assert_eq!(codes.len(), 40);
}

#[test]
fn a_lost_answer_survives_dead_letter_and_recovery_without_a_second_send() {
    let app = TestApp::spawn_with(
        fast_launch()
            .env("EMISOR_AUTHORITY__TIMEOUT_MS", "300")
            .env("EMISOR_RESILIENCE__RECOVERY_INTERVAL_S", "50"),
    );
    let mut ws = Ws::connect(&app, &app.sk_test());
    sim_mode(&app, json!({"mode": "slow", "latency_ms": 1500}));
    let res = post_async(&app, &examples::invoice());
    let id = doc_id(&res);
    let code = code_of(&res);
    // Every answer is lost: the attempts run out while the document is, in
    // fact, accepted.
    let e = ws.event_for("facturacion:error", id, Duration::from_secs(20));
    assert_eq!(e["data"]["id_estado_documento"], 6, "{e}");
    let stats = sim_stats(&app);
    assert_eq!(stats["accepted"][&code]["received"], 1, "{stats}");
    assert!(
        stats["calls"]["GetStatus"].as_u64().unwrap_or(0) >= 1,
        "later attempts asked instead of sending: {stats}"
    );

    sim_mode(&app, json!({"mode": "up"}));
    let e = ws.event_for("facturacion:update", id, Duration::from_secs(20));
    assert_eq!(e["data"]["id_estado_documento"], 2, "{e}");
    let stats = sim_stats(&app);
    assert_eq!(stats["accepted"][&code]["received"], 1, "{stats}");
    assert_eq!(sends(&stats), 1, "one SendBillSync: {stats}");
}
