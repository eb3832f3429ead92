//! A console session is one on every node (docs/operations.md, "Several
//! nodes"): signed in through one node, a browser behind a load balancer
//! is served by another, and signing out through any node ends it on all.

use crate::console::harness::{csrf_of, http, http_sign_in, page};
use crate::support::flow::fast_launch;
use crate::support::nodes::*;

#[test]
fn a_console_session_opened_on_one_node_serves_on_another_until_it_ends() {
    if !on_shared_database() {
        return;
    }
    let nodes = Nodes::start(2, fast_launch());
    let (a, b) = (&nodes.nodes[0], &nodes.nodes[1]);
    let cookie = http_sign_in(a, &nodes.sk_test()).expect("signed in on A");
    let (status, html) = page(b, &cookie, "/console");
    assert_eq!(status, 200, "B serves A's session");
    let (status, _) = page(a, &cookie, "/console");
    assert_eq!(status, 200, "and A still does");

    // The admin's session: its environment, changed through A, is B's too.
    let admin = http_sign_in(a, &a.admin_token()).expect("admin signed in on A");
    let (_, admin_html) = page(a, &admin, "/console");
    let shows = |html: &str, code: &str| html.contains(&format!("value=\"{code}\" selected"));
    assert!(shows(&page(b, &admin, "/console").1, "2"), "testing first");
    let token = csrf_of(&admin_html).expect("csrf");
    let res = http()
        .post(format!("{}/console/ambiente", a.url))
        .header("Cookie", &admin)
        .header("Origin", &a.url)
        .form(&[("csrf", token.as_str()), ("ambiente", "1")])
        .send()
        .expect("switch");
    assert_eq!(res.status().as_u16(), 303);
    let (status, on_b) = page(b, &admin, "/console");
    assert_eq!(status, 200);
    assert!(shows(&on_b, "1"), "B shows production");

    // Signed out through B: refused on A.
    let token = csrf_of(&html).expect("csrf");
    let res = http()
        .post(format!("{}/console/salir", b.url))
        .header("Cookie", &cookie)
        .header("Origin", &b.url)
        .form(&[("csrf", token.as_str())])
        .send()
        .expect("sign out");
    assert_eq!(res.status().as_u16(), 303);
    assert_eq!(page(a, &cookie, "/console").0, 303, "A sends it to sign in");
    assert_eq!(page(b, &cookie, "/console").0, 303);
    assert_eq!(page(a, &admin, "/console").0, 200, "the admin's goes on");
}
