//! WebSocket rooms (spec 6.1, decisions.md §4): a key created with a
//! `user_id` joins `user_{id}` besides `empresa_{id}`; a document's events go
//! to its company's room and to the room of the user whose key issued it,
//! and a socket in both rooms gets each event once.

use std::time::Duration;

use emisor::api::invoice_request::examples;
use emisor_store::{DocumentStore, SledStore};
use serde_json::{json, Value};

use crate::support::app::*;
use crate::support::flow::*;

const UPDATE: &str = "facturacion:update";
/// Long enough for a duplicate to arrive (the hub sends both at once).
const QUIET: Duration = Duration::from_millis(1500);
const WITHIN: Duration = Duration::from_secs(20);

/// A new sk_test_ key of company 1 belonging to `user`.
fn user_key(app: &TestApp, user: u64) -> String {
    let (status, created) = json(app.admin_post(
        "/admin/companies/1/api-keys",
        &json!({"ambiente": "test", "label": "caja 3", "user_id": user}),
    ));
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["data"]["user_id"], user, "{created}");
    created["data"]["key"].as_str().expect("key").to_string()
}

fn document_id(res: &Value) -> u64 {
    res["data"]["documento"]["id"].as_u64().expect("id")
}

/// `ws` hears `facturacion:update` about `id` exactly once.
fn hears_once(ws: &mut Ws, who: &str, id: u64) {
    let event = ws.event_for(UPDATE, id, WITHIN);
    assert_eq!(event["data"]["id_estado_documento"], 2, "{who}: {event}");
    assert_eq!(
        ws.more_events_for(UPDATE, id, QUIET),
        0,
        "{who} heard document {id} more than once"
    );
}

#[test]
fn ws_user_room_hears_its_documents_once() {
    let mut app = TestApp::spawn_with(fast_launch());
    let user = user_key(&app, 17);
    let company = app.sk_test(); // the demo key: no user

    let (status, listed) = json(app.admin_get("/admin/companies/1/api-keys"));
    assert_eq!(status, 200, "{listed}");
    let users: Vec<&Value> = listed["data"]
        .as_array()
        .expect("keys")
        .iter()
        .map(|k| &k["user_id"])
        .collect();
    assert_eq!(users, [&Value::Null, &Value::Null, &json!(17)], "{listed}");

    // In empresa_1 and user_17 / in empresa_1 only.
    let mut user_ws = Ws::connect(&app, &user);
    let mut company_ws = Ws::connect(&app, &company);

    // Issued with the user's key: both rooms, the user's socket once.
    let by_user = document_id(&post_async_with(&app, &user, &examples::invoice()));
    hears_once(&mut user_ws, "the user's socket", by_user);
    hears_once(&mut company_ws, "the company's socket", by_user);

    // Issued with the company key: the company room, which the user's
    // socket is in too.
    let by_company = document_id(&post_async_with(&app, &company, &examples::invoice()));
    hears_once(&mut company_ws, "the company's socket", by_company);
    hears_once(&mut user_ws, "the user's socket", by_company);

    // Every socket is in its company's room, so the counts above cannot
    // tell whether the user's room was addressed at all: the stored
    // documents say which user each event goes to. (Open sockets would hold
    // the graceful stop for its whole timeout: close them first.)
    drop((user_ws, company_ws));
    app.stop();
    let user_of = |id: u64| -> Option<u64> {
        if on_postgres() {
            let record = stored_document(&app.dir, id).expect("document");
            return record["user_id"].as_u64();
        }
        let store = SledStore::open(&app.dir, keyring_for(&app.dir))
            .expect("open the stopped server's store");
        store.document(id).unwrap().expect("document").user_id
    };
    assert_eq!(user_of(by_user), Some(17));
    assert_eq!(user_of(by_company), None);
}
