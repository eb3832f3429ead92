//! The same-day rule of annex 1.9 (FAD09e): a sales invoice goes out dated
//! the day it reaches the authority. With the shared test clock (the
//! service's business clock follows the in-process simulator's), a
//! document numbered at 23:59 and sent after midnight is re-dated once —
//! same number, new date, time and code — and accepted once: through a
//! queue while the authority is down, across a `kill -9` between the
//! re-dating and the send, and for a synchronous request. A data dir of
//! documents with one instant is sent as before. The power cut over a
//! re-dated document is in `power_cut`.

use std::time::{Duration, Instant};

use chrono::{DateTime, FixedOffset, NaiveDate};
use emisor::api::invoice_request::examples;
use emisor_store::{DocumentStore, SledStore};
use serde_json::json;

use crate::support::app::*;
use crate::support::bodies::unique;
use crate::support::clock::*;
use crate::support::events::set_clock;
use crate::support::external_sim::ExternalSim;
use crate::support::flow::*;

/// The day of an instant in Colombia.
fn day(at: DateTime<FixedOffset>) -> NaiveDate {
    at.with_timezone(&colombia()).date_naive()
}

/// A server whose business clock follows its simulator's, with recovery
/// probing every 0.5 s.
fn clocked() -> Launch {
    fast_launch()
        .shared_clock()
        .env("EMISOR_RESILIENCE__RECOVERY_INTERVAL_S", "50")
}

/// An asynchronous invoice numbered at 23:59 while the authority is down:
/// dated that day. Returns its id and code.
fn queued_at_2359(app: &TestApp) -> (u64, String, NaiveDate) {
    let before = next_midnight() - chrono::Duration::seconds(60);
    set_clock(app, offset_for(before));
    sim_mode(app, json!({"mode": "down"}));
    let res = post_async(app, &examples::invoice());
    let id = res["data"]["documento"]["id"].as_u64().expect("id");
    let code = res["data"]["cufe"].as_str().expect("cufe").to_string();
    let (issued, signed) = dates_in(&xml_of(app, id));
    assert_eq!(issued, day(before).to_string());
    assert_eq!(signed, issued);
    first_attempt(app, id);
    (id, code, day(before))
}

/// Waits for the first (refused) attempt of document `id`.
fn first_attempt(app: &TestApp, id: u64) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while status_of(app, id)["intentos"].as_u64().unwrap_or(0) == 0 {
        assert!(Instant::now() < deadline, "never tried");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Past midnight (00:01) with the authority back.
fn after_midnight(app: &TestApp) -> NaiveDate {
    let after = next_midnight() + chrono::Duration::seconds(60);
    set_clock(app, offset_for(after));
    sim_mode(app, json!({"mode": "up"}));
    day(after)
}

/// Accepted once, re-dated: new code and date, the XML served dated and
/// signed that day with the new code, the authority's only acceptance.
fn check_redated(app: &TestApp, id: u64, old: &str, today: NaiveDate) -> String {
    let rec = wait_state(app, id, 2, Duration::from_secs(30));
    let code = rec["cufe"].as_str().expect("cufe").to_string();
    assert_ne!(code, old, "re-dated: a new code: {rec}");
    assert_eq!(rec["fecha_emision"], today.to_string(), "{rec}");
    assert_eq!(rec["tax_track_id"], code.as_str(), "{rec}");
    let xml = xml_of(app, id);
    assert_eq!(
        dates_in(&xml),
        (today.to_string(), today.to_string()),
        "dated and signed the day it was sent"
    );
    assert!(xml.contains(&format!(">{code}</cbc:UUID>")), "{xml}");
    let stats = sim_stats(app);
    assert_eq!(stats["accepted_count"], 1, "accepted once: {stats}");
    assert_eq!(stats["accepted"][&code]["received"], 1, "{stats}");
    // (A retry checked at 23:59 whose call arrived after midnight had the
    // old code refused for its date, never accepted.)
    assert!(stats["accepted"].get(old).is_none(), "{stats}");
    code
}

#[test]
#[cfg_attr(not(feature = "soak"), ignore = "soak")]
fn a_document_queued_while_the_authority_is_down_at_2359_goes_out_dated_the_next_day_once() {
    let mut app = TestApp::spawn_with(clocked());
    let mut ws = Ws::connect(&app, &app.sk_test());
    let (id, old, queued_on) = queued_at_2359(&app);
    // Retried (and refused) while down, its date untouched.
    std::thread::sleep(Duration::from_millis(500));
    let rec = status_of(&app, id);
    assert!(
        [3, 5].contains(&rec["id_estado_documento"].as_u64().unwrap()),
        "{rec}"
    );
    assert_eq!(rec["cufe"], old.as_str(), "{rec}");
    assert_eq!(rec["fecha_emision"], queued_on.to_string(), "{rec}");

    let today = after_midnight(&app);
    let code = check_redated(&app, id, &old, today);
    // The room and the webhook hear the new code.
    let update = ws.wait_for(Duration::from_secs(5), |v| {
        v["event"] == "facturacion:update"
            && v["data"]["id"] == id
            && v["data"]["id_estado_documento"] == 2
    });
    assert_eq!(update["data"]["zipKey"], code.as_str(), "{update}");

    drop(ws);
    app.stop();
    let lines = redatings(&app.dir, id);
    assert_eq!(lines.len(), 1, "re-dated once: {lines:?}");
    assert_eq!(lines[0]["previous_code"], old.as_str());
    assert_eq!(lines[0]["code"], code.as_str());
    assert_eq!(lines[0]["previous_issue_date"], queued_on.to_string());
    assert_eq!(lines[0]["issue_date"], today.to_string());
}

/// Killed (`kill -9`, by the test failpoint `FAILPOINT_KILL_AT`) right
/// after the re-dating was committed, before the send: the restart sends
/// the committed build, not yet another one.
#[test]
#[cfg_attr(not(feature = "soak"), ignore = "soak")]
fn a_kill_between_the_redating_and_the_send_sends_the_committed_build_once() {
    let launch = clocked().capture_log();
    let mut app = TestApp::spawn_with(launch.clone().env("FAILPOINT_KILL_AT", "redated"));
    let (id, old, _) = queued_at_2359(&app);
    let today = after_midnight(&app);
    // The first send after midnight re-dates it, and the process dies.
    let deadline = Instant::now() + Duration::from_secs(30);
    while client()
        .get(format!("{}/healthz", app.url))
        .timeout(Duration::from_secs(2))
        .send()
        .is_ok()
    {
        assert!(Instant::now() < deadline, "the failpoint never fired");
        std::thread::sleep(Duration::from_millis(50));
    }
    app.kill();
    assert!(
        app.log().contains("FAILPOINT_KILL_AT"),
        "killed by the failpoint"
    );

    // Restarted past midnight on the same data dir (its simulator is a new
    // one: it holds only what is sent from here on).
    let offset = offset_for(next_midnight() + chrono::Duration::seconds(90));
    let mut restarted = TestApp::start_in(
        &app.dir,
        launch.env("EMISOR_TESTING__CLOCK_OFFSET_S", &offset.to_string()),
    );
    let code = check_redated(&restarted, id, &old, today);
    let stats = sim_stats(&restarted);
    assert_eq!(stats["calls"]["SendBillSync"], 1, "sent once: {stats}");
    restarted.stop();
    let lines = redatings(&app.dir, id);
    assert_eq!(lines.len(), 1, "re-dated once, before the kill: {lines:?}");
    assert_eq!(lines[0]["code"], code.as_str());
    assert_eq!(lines[0]["previous_code"], old.as_str());
}

/// A synchronous request at 23:59:59 whose send finds the authority down
/// is answered with its code in state 3 (final only at state 2); sent
/// after midnight, it goes out re-dated, once.
#[test]
fn a_sync_request_at_235959_sent_after_midnight_goes_out_dated_that_day_once() {
    let app = TestApp::spawn_with(clocked());
    let before = next_midnight() - chrono::Duration::seconds(1);
    set_clock(&app, offset_for(before));
    sim_mode(&app, json!({"mode": "down"}));
    let (status, res) = json(app.post(
        "/v1/api/facturacion",
        &app.sk_test(),
        &unique(examples::invoice()),
    ));
    assert_eq!(status, 200, "{res}");
    let id = res["data"]["documento"]["id"].as_u64().expect("id");
    let old = res["data"]["cufe"].as_str().expect("cufe").to_string();
    assert_eq!(res["data"]["id_estado_documento"], 3, "{res}");
    let answered = res["data"]["xml"].as_str().expect("xml");
    assert_eq!(
        dates_in(answered).0,
        day(before).to_string(),
        "numbered before midnight"
    );

    let today = after_midnight(&app);
    check_redated(&app, id, &old, today);
}

/// The race itself: an invoice numbered and sent just before midnight by
/// the service's clock reaches an authority whose clock already says it is
/// past midnight (a separate `emisor tax-sim` some seconds ahead), which
/// refuses it with FAD09e. Not a final rejection: once the service's day
/// has turned too, the document goes out re-dated and is accepted once.
#[test]
#[cfg_attr(not(feature = "soak"), ignore = "soak")]
fn an_invoice_refused_for_its_date_because_midnight_came_on_the_way_is_redated_and_accepted() {
    let sim = ExternalSim::start();
    // Room for the server to start before its midnight.
    let before = next_midnight() - chrono::Duration::seconds(15);
    let offset = offset_for(before);
    let moved = client()
        .post(format!("{}/__sim/clock", sim.base))
        .json(&json!({ "offset_s": offset + 20 }))
        .send()
        .expect("sim clock");
    assert!(moved.status().is_success());
    let app = TestApp::spawn_with(
        clocked()
            .env("EMISOR_AUTHORITY__URL", &sim.service_url())
            .env("EMISOR_TESTING__CLOCK_OFFSET_S", &offset.to_string()),
    );
    let (status, res) = json(app.post(
        "/v1/api/facturacion",
        &app.sk_test(),
        &unique(examples::invoice()),
    ));
    assert_eq!(status, 200, "{res}");
    let id = res["data"]["documento"]["id"].as_u64().expect("id");
    let old = res["data"]["cufe"].as_str().expect("cufe").to_string();
    let answered = res["data"]["xml"].as_str().expect("xml");
    let numbered = dates_in(answered).0;
    assert_eq!(
        numbered,
        day(before).to_string(),
        "numbered before the service's midnight (too slow a start?): {res}"
    );

    let rec = wait_state(&app, id, 2, Duration::from_secs(60));
    let code = rec["cufe"].as_str().expect("cufe").to_string();
    assert_ne!(code, old);
    let today = day(before).succ_opt().expect("a day");
    assert_eq!(rec["fecha_emision"], today.to_string(), "{rec}");
    assert_eq!(
        dates_in(&xml_of(&app, id)),
        (today.to_string(), today.to_string())
    );
    let stats = sim_stats_at(&sim.base);
    assert_eq!(stats["accepted_count"], 1, "{stats}");
    assert_eq!(stats["accepted"][&code]["received"], 1, "{stats}");
    assert!(
        stats["received"][&old].as_u64() >= Some(1),
        "the old code reached the authority: {stats}"
    );
    assert!(
        stats["accepted"].get(&old).is_none(),
        "and was refused, not accepted: {stats}"
    );
}

/// A data dir of the format before re-dating (documents with one instant,
/// the moment their number was taken): its documents open and are sent as
/// before, with their code and XML.
#[test]
fn a_data_dir_of_documents_with_one_instant_sends_them_as_before() {
    if !sled_only("it opens a sled data dir of the previous format") {
        return;
    }
    let mut app = TestApp::spawn_with(fast_launch());
    sim_mode(&app, json!({"mode": "down"}));
    let res = post_async(&app, &examples::invoice());
    let id = res["data"]["documento"]["id"].as_u64().expect("id");
    let code = res["data"]["cufe"].as_str().expect("cufe").to_string();
    let xml = xml_of(&app, id);
    app.stop();
    {
        let store =
            SledStore::open(&app.dir, keyring_for(&app.dir)).expect("open the stopped store");
        let record = store.document(id).expect("read").expect("document");
        let value = serde_json::to_value(&record).expect("json");
        assert!(value.get("issued_at").is_none(), "{value}");
    }
    // Its simulator is a new one, up.
    let restarted = TestApp::start_in(&app.dir, fast_launch());
    let rec = wait_state(&restarted, id, 2, Duration::from_secs(30));
    assert_eq!(rec["cufe"], code.as_str(), "{rec}");
    assert!(xml_of(&restarted, id) == xml, "the XML it had");
    let stats = sim_stats(&restarted);
    assert_eq!(stats["accepted"][&code]["received"], 1, "{stats}");
}

/// An invoice that cannot be dated the day it is sent (its credit due date,
/// the day it was numbered, would fall before the new issue date) is not
/// sent with yesterday's date to be refused: it is rejected (state 4) with
/// the reason, for its issuer to fix and resend.
#[test]
fn an_invoice_that_cannot_be_dated_the_send_day_is_rejected_with_the_reason_unsent() {
    let app = TestApp::spawn_with(clocked());
    let before = next_midnight() - chrono::Duration::seconds(60);
    set_clock(&app, offset_for(before));
    sim_mode(&app, json!({"mode": "down"}));
    let mut body = examples::invoice();
    body["payment_form"]["due_date"] = json!(day(before).to_string());
    let res = post_async(&app, &body);
    let id = res["data"]["documento"]["id"].as_u64().expect("id");
    let old = res["data"]["cufe"].as_str().expect("cufe").to_string();
    first_attempt(&app, id);

    after_midnight(&app);
    let rec = wait_state(&app, id, 4, Duration::from_secs(30));
    assert_eq!(rec["cufe"], old.as_str(), "{rec}");
    assert_eq!(rec["fecha_emision"], day(before).to_string(), "{rec}");
    let reason = rec["tax_response"]["statusDescription"]
        .as_str()
        .expect("reason");
    assert!(
        reason.contains("could not be dated") && reason.contains("due_date"),
        "{rec}"
    );
    // Nothing accepted, and no other code sent (its send at 23:59, had it
    // reached the authority after midnight, was refused).
    let stats = sim_stats(&app);
    assert_eq!(stats["accepted_count"], 0, "{stats}");
    let received = stats["received"].as_object().expect("received");
    assert!(received.keys().all(|c| *c == old), "{stats}");
}
