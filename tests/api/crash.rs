//! Crashes. Mid-transmission: 50 asynchronous documents accepted,
//! the server killed with SIGKILL while it transmits them to a separate
//! `emisor tax-sim` (which learns the demo company from the server itself),
//! restarted on the same data dir: every document ends in its verdict and
//! the simulator received each exactly once, whether it accepts or rejects.
//! Mid-issuing: nothing answered is lost. A document whose build failed
//! once its number was taken (a test failpoint) is built at the next start
//! from its stored request, of today's format or the earlier one.

use std::time::Duration;

use emisor::api::invoice_request::examples;
use serde_json::{json, Value};

use crate::support::app::*;
use crate::support::crash::*;
use crate::support::external_sim::ExternalSim;
use crate::support::flow::*;

/// Every code reached the simulator once, and no send was repeated.
fn assert_received_once(stats: &Value, docs: &[(u64, String)]) {
    for (id, code) in docs {
        assert_eq!(
            stats["received"][code], 1,
            "document {id} reached the simulator once: {stats}"
        );
    }
    assert_eq!(
        stats["calls"]["SendBillSync"], 50,
        "no document sent twice: {stats}"
    );
}

#[test]
#[cfg_attr(not(feature = "soak"), ignore = "soak")]
fn sigkill_mid_processing_loses_nothing_and_sends_nothing_twice() {
    let sim = ExternalSim::start();
    let launch = fast_launch().env("EMISOR_AUTHORITY__URL", &sim.service_url());
    // Nothing registered by hand: the demo company registers itself.
    let mut app = TestApp::spawn_with(launch.clone());
    // Slow answers: three calls in flight for half a second each, so the
    // 50 documents take seconds to transmit and the kill lands mid-way.
    sim_mode_at(&sim.base, json!({"mode": "slow", "latency_ms": 500}));

    let docs = post_fifty(&app);
    let at_kill = kill_mid_call(&mut app, &sim);
    let accepted_at_kill = at_kill["accepted_count"].as_u64().expect("count");
    assert!(
        accepted_at_kill < 50,
        "the kill came after everything was done: {at_kill}"
    );

    sim_mode_at(&sim.base, json!({"mode": "up"}));
    let dir = app.dir.clone();
    let restarted = TestApp::start_in(&dir, launch);
    let ids: Vec<u64> = docs.iter().map(|(id, _)| *id).collect();
    wait_all(&restarted, &ids, 2, Duration::from_secs(25));

    let stats = sim_stats_at(&sim.base);
    assert_eq!(stats["accepted_count"], 50, "{stats}");
    assert_eq!(
        stats["rejected_count"], 0,
        "the simulator knew the company: {stats}"
    );
    for (id, code) in &docs {
        let rec = status_of(&restarted, *id);
        assert_eq!(rec["cufe"], code.as_str(), "{rec}");
        assert_eq!(
            stats["accepted"][code]["received"], 1,
            "document {id} reached the simulator once"
        );
    }
    assert_received_once(&stats, &docs);
    eprintln!(
        "crash test: {accepted_at_kill} accepted and {} in flight at the kill; GetStatus calls {}",
        at_kill["in_flight"], stats["calls"]["GetStatus"]
    );
    drop(app);
}

/// The same crash with a simulator that rejects everything: a document it
/// had judged when the server died is recorded as rejected from its
/// `GetStatus` answer, not sent again.
#[test]
#[cfg_attr(not(feature = "soak"), ignore = "soak")]
fn sigkill_mid_processing_records_rejections_without_resending() {
    let sim = ExternalSim::start();
    let launch = fast_launch().env("EMISOR_AUTHORITY__URL", &sim.service_url());
    let mut app = TestApp::spawn_with(launch.clone());
    sim_mode_at(&sim.base, json!({"mode": "reject", "latency_ms": 500}));

    let docs = post_fifty(&app);
    let at_kill = kill_mid_call(&mut app, &sim);
    let judged_at_kill = at_kill["rejected_count"].as_u64().expect("count");
    assert!(
        judged_at_kill < 50,
        "the kill came after everything was done: {at_kill}"
    );

    sim_mode_at(&sim.base, json!({"mode": "reject"}));
    let dir = app.dir.clone();
    let restarted = TestApp::start_in(&dir, launch);
    let ids: Vec<u64> = docs.iter().map(|(id, _)| *id).collect();
    wait_all(&restarted, &ids, 4, Duration::from_secs(25));

    let stats = sim_stats_at(&sim.base);
    assert_eq!(stats["accepted_count"], 0, "{stats}");
    assert_eq!(stats["rejected_count"], 50, "each judged once: {stats}");
    for (id, code) in &docs {
        let rec = status_of(&restarted, *id);
        assert_eq!(rec["cufe"], code.as_str(), "{rec}");
        assert_eq!(rec["tax_response"]["isValid"], false, "{rec}");
        assert_eq!(rec["tax_response"]["statusCode"], "99", "{rec}");
    }
    assert_received_once(&stats, &docs);
    eprintln!(
        "reject crash test: {judged_at_kill} rejected and {} in flight at the kill; GetStatus calls {}",
        at_kill["in_flight"], stats["calls"]["GetStatus"]
    );
    drop(app);
}

/// SIGKILL while eight clients issue synchronously (`transmit: false`):
/// every document answered 200 is there after the restart with its XML and
/// ZIP (the file log and the records that point into it), and no number is
/// given twice, before or after (the numbering counter is recomputed from
/// the documents when the store was not closed cleanly).
#[test]
fn sigkill_while_issuing_keeps_every_answered_document_and_its_files() {
    issue_kill_and_check(fast_launch(), |_, answered| answered >= 40);
}

/// The same with sled's snapshot written every 20 ms (`[store]
/// checkpoint_ms`): the kill comes once 40 documents were answered and
/// three snapshots were written while they were, so the restart recovers
/// from a snapshot taken beside a live log, not the one of its last open.
#[test]
#[cfg_attr(not(feature = "soak"), ignore = "soak")]
fn sigkill_after_checkpoints_keeps_every_answered_document_and_its_files() {
    let launch = fast_launch().env("EMISOR_STORE__CHECKPOINT_MS", "20");
    let mut seen = std::collections::BTreeSet::new();
    issue_kill_and_check(launch, move |app, answered| {
        if let Ok(entries) = std::fs::read_dir(app.dir.join("sled")) {
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if name.starts_with("snap.") && !name.ends_with(".generating") {
                    seen.insert(name);
                }
            }
        }
        answered >= 40 && seen.len() >= 4
    });
}

/// Eight clients issue until `kill_when(app, answered)`; the server is
/// killed with SIGKILL and restarted on its data dir: every answered
/// document is there with its number, XML and ZIP, and new numbers are new.
fn issue_kill_and_check(launch: Launch, kill_when: impl FnMut(&TestApp, usize) -> bool) {
    let mut app = TestApp::spawn_with(launch.clone());
    let clients = issue_until(&app, kill_when);
    app.kill();
    let before = clients.finish();
    let dir = app.dir.clone();
    let restarted = TestApp::start_in(&dir, launch);
    check_answered(&restarted, &before, Duration::ZERO);
}

/// The server with the test failpoint under which a new document's build
/// fails once its number is taken (it is kept half-built, as one whose
/// build failed or panicked); `as_sent`: requests stored in the earlier
/// format (the caller's JSON alone) rather than with their domain request.
fn builds_failing(launch: &Launch, as_sent: bool) -> Launch {
    let launch = launch.clone().env("FAILPOINT_BUILD", "fail");
    if as_sent {
        launch.env("FAILPOINT_REQUEST_FORMAT", "as_sent")
    } else {
        launch
    }
}

/// Posts `body` to `path` on a server whose builds fail (the caller hears
/// a 500), and stops it.
fn post_half_built_and_stop(app: &mut TestApp, path: &str, body: &Value) {
    let (status, res) = json(app.post(path, &app.sk_test(), body));
    assert_eq!(status, 500, "{res}");
    app.stop();
}
/// A half-built invoice (its number taken, its build failed) is built at
/// the next start from its stored request, with its number, into the
/// draft its request asked for. `as_sent`: a data dir of the earlier format, whose request is the
/// caller's JSON alone, rebuilt through the unified API's translator.
fn a_half_built_invoice_is_rebuilt(as_sent: bool) {
    let launch = fast_launch().capture_log();
    let mut app = TestApp::spawn_with(builds_failing(&launch, as_sent));
    let number = next_number(&app, "fe");
    let mut body = crate::support::bodies::unique(examples::invoice());
    body["transmit"] = json!(false);
    post_half_built_and_stop(&mut app, "/v1/api/facturacion", &body);

    let restarted = TestApp::start_in(&app.dir, launch);
    let key = restarted.sk_test();
    let numero = number.to_string();
    let found = (1..=20).find_map(|id| {
        let (status, rec) = json(restarted.get(
            &format!("/v1/api/facturacion/{id}/status?id_empresa=1"),
            &key,
        ));
        (status == 200 && rec["data"]["numero"] == numero.as_str()).then_some((id, rec))
    });
    let (id, rec) = found.expect("the half-built invoice is there");
    assert_eq!(rec["data"]["id_estado_documento"], 1, "{rec}");
    let code = rec["data"]["cufe"].as_str().expect("cufe");
    assert_eq!(code.len(), 96, "{rec}");
    let xml = restarted.get(&format!("/v1/api/facturacion/{id}/xml"), &key);
    assert_eq!(xml.status().as_u16(), 200);
    let xml = xml.text().unwrap();
    assert!(xml.contains(code), "the XML carries its code");
    assert!(xml.contains(&format!("{number}</cbc:ID>")), "its number");
    assert!(
        !restarted.log().contains("could not rebuild"),
        "{}",
        restarted.log()
    );
    assert_eq!(
        next_number(&restarted, "fe"),
        number + 1,
        "the number is spent"
    );
}

#[test]
#[cfg_attr(not(feature = "soak"), ignore = "soak")]
fn a_half_built_invoice_stored_with_its_domain_request_is_rebuilt_at_the_next_start() {
    a_half_built_invoice_is_rebuilt(false);
}

#[test]
#[cfg_attr(not(feature = "soak"), ignore = "soak")]
fn a_half_built_invoice_of_the_earlier_request_format_is_rebuilt_at_the_next_start() {
    a_half_built_invoice_is_rebuilt(true);
}

/// The same for a payroll: built at the restart from its stored domain
/// request, or (`as_sent`) from the caller's JSON through the payroll
/// translator.
fn a_half_built_payroll_is_rebuilt(as_sent: bool) {
    use crate::support::payroll::{employee_number, monthly};
    let launch = fast_launch().capture_log();
    let mut app = TestApp::spawn_with(builds_failing(&launch, as_sent));
    let mut body = monthly(&employee_number());
    body["transmit"] = json!(false);
    post_half_built_and_stop(&mut app, "/v1/api/nomina/enviar", &body);

    let restarted = TestApp::start_in(&app.dir, launch);
    let key = restarted.sk_test();
    let found = (1..=20).find_map(|id| {
        let (status, d) = json(restarted.get(&format!("/v1/api/nomina/{id}"), &key));
        (status == 200).then_some((id, d))
    });
    let (id, d) = found.unwrap_or_else(|| {
        let (_, d) = json(restarted.get("/v1/api/nomina/1", &key));
        panic!(
            "the half-built payroll is not there: {d}\n{}",
            restarted.log()
        )
    });
    let cune = d["data"]["cune"].as_str().expect("cune");
    assert_eq!(cune.len(), 96, "{d}");
    let xml = restarted.get(&format!("/v1/api/nomina/{id}/xml"), &key);
    assert_eq!(xml.status().as_u16(), 200);
    assert!(
        xml.text().unwrap().contains(cune),
        "the XML carries its CUNE"
    );
    assert!(
        !restarted.log().contains("could not rebuild"),
        "{}",
        restarted.log()
    );
}

#[test]
#[cfg_attr(not(feature = "soak"), ignore = "soak")]
fn a_half_built_payroll_stored_with_its_domain_request_is_rebuilt_at_the_next_start() {
    a_half_built_payroll_is_rebuilt(false);
}

#[test]
#[cfg_attr(not(feature = "soak"), ignore = "soak")]
fn a_half_built_payroll_of_the_earlier_request_format_is_rebuilt_at_the_next_start() {
    a_half_built_payroll_is_rebuilt(true);
}

/// A Spanish credit note naming its original by its CUFE alone, half-built,
/// is built at the next start with that invoice as its billing reference,
/// whether its request was stored with its domain request or (`as_sent`) in
/// the earlier format, the caller's JSON alone; and the same body sent after
/// the restart is its duplicate: the request stored for it hashes as a new
/// one of the same body does.
fn a_half_built_note_named_by_its_cufe_is_rebuilt(as_sent: bool) {
    use emisor::api::facturacion_es::examples as es;
    let launch = fast_launch().capture_log();
    let mut app = TestApp::spawn_with(launch.clone());
    let (status, res) = json(app.post(
        "/v1/api/facturacion-es/factura",
        &app.sk_test(),
        &es::factura(),
    ));
    assert_eq!(status, 200, "{res}");
    let cufe = res["data"]["cufe"].as_str().expect("cufe").to_string();
    app.stop();

    let mut app = TestApp::start_in(&app.dir.clone(), builds_failing(&launch, as_sent));
    let mut note = es::nota_credito();
    let fields = note.as_object_mut().expect("object");
    fields.remove("documento_referencia");
    fields.insert("cufe_factura_referencia".into(), json!(cufe.to_uppercase()));
    fields.insert("transmitir".into(), json!(false));
    post_half_built_and_stop(&mut app, "/v1/api/facturacion-es/nota-credito", &note);

    let restarted = TestApp::start_in(&app.dir, launch);
    let key = restarted.sk_test();
    let (_, list) = json(restarted.get("/v1/api/facturacion?id_empresa=1", &key));
    let found = list["data"]["items"].as_array().and_then(|items| {
        let note = items.iter().find(|d| d["id_tipo_documento"] == 2)?;
        let id = note["id"].as_u64()?;
        let xml = restarted.get(&format!("/v1/api/facturacion/{id}/xml"), &key);
        (xml.status().as_u16() == 200).then(|| (id, xml.text().unwrap_or_default()))
    });
    let (id, xml) = found.unwrap_or_else(|| panic!("the note is not there: {list}"));
    assert!(
        xml.contains(&format!(
            "<cbc:UUID schemeName=\"CUFE-SHA384\">{cufe}</cbc:UUID>"
        )),
        "the note references the invoice by its CUFE"
    );
    assert!(
        !restarted.log().contains("could not rebuild"),
        "{}",
        restarted.log()
    );
    let res = assert_error(
        restarted.post("/v1/api/facturacion-es/nota-credito", &key, &note),
        409,
        "DUPLICATE_PAYLOAD",
    );
    assert_eq!(res["data"]["id"], id, "{res}");
}

#[test]
fn a_half_built_note_named_by_its_cufe_is_rebuilt_at_the_next_start() {
    a_half_built_note_named_by_its_cufe_is_rebuilt(false);
}

#[test]
fn a_half_built_note_named_by_its_cufe_of_the_earlier_request_format_is_rebuilt_at_the_next_start()
{
    a_half_built_note_named_by_its_cufe_is_rebuilt(true);
}
