//! Crashes. Mid-transmission: 50 asynchronous documents accepted,
//! the server killed with SIGKILL while it transmits them to a separate
//! `emisor tax-sim` (which learns the demo company from the server itself),
//! restarted on the same data dir: every document ends in its verdict and
//! the simulator received each exactly once, whether it accepts or rejects.
//! Mid-issuing: nothing answered is lost.

use std::time::Duration;

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
