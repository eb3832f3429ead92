//! A graceful stop (SIGTERM) closes the store: the next start finds the
//! clean-close mark and skips the repair; a kill -9 does not.

use emisor::api::invoice_request::examples;

use crate::support::app::*;
use crate::support::bodies::unique;

const REPAIRED: &str = "not closed cleanly";

fn started(dir: &std::path::Path) -> TestApp {
    TestApp::start_in(dir, Launch::default().capture_log())
}

#[test]
#[cfg_attr(not(feature = "soak"), ignore = "soak")]
fn a_sigterm_stop_reopens_without_repair_and_a_kill_does_not() {
    let mut app = TestApp::spawn_with(Launch::default().capture_log());
    let dir = app.dir.clone();
    let (status, res) = json(app.post(
        "/v1/api/facturacion",
        &app.sk_test(),
        &unique(examples::invoice()),
    ));
    assert_eq!(status, 200, "{res}");
    app.stop();

    let mut again = started(&dir);
    let log = again.log();
    assert!(!log.contains(REPAIRED), "{log}");
    let (_, page) = json(again.get("/v1/api/facturacion", &again.sk_test()));
    assert_eq!(page["data"]["total"], 1, "{page}");

    // The control: a killed process leaves no mark, and the next start repairs.
    again.kill();
    let third = started(&dir);
    let log = third.log();
    assert!(log.contains(REPAIRED), "{log}");
    let (_, page) = json(third.get("/v1/api/facturacion", &third.sk_test()));
    assert_eq!(page["data"]["total"], 1, "{page}");
}
