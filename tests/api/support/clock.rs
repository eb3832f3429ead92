//! The shared test clock across midnight.

use std::path::Path;

use chrono::{DateTime, FixedOffset, Utc};
use emisor_store::{DocumentStore, SledStore};
use serde_json::Value;

use super::app::*;

/// Colombia's offset, -05:00.
pub fn colombia() -> FixedOffset {
    FixedOffset::west_opt(5 * 3600).expect("offset")
}

/// The coming midnight in Colombia.
pub fn next_midnight() -> DateTime<FixedOffset> {
    let tomorrow = Utc::now().with_timezone(&colombia()).date_naive() + chrono::Days::new(1);
    tomorrow
        .and_hms_opt(0, 0, 0)
        .expect("midnight")
        .and_local_timezone(colombia())
        .single()
        .expect("fixed offset")
}

/// The clock offset (seconds) that makes it `at` now.
pub fn offset_for(at: DateTime<FixedOffset>) -> i64 {
    (at.with_timezone(&Utc) - Utc::now()).num_seconds()
}

/// The `cbc:IssueDate` of a signed XML and the date of its
/// `xades:SigningTime`.
pub fn dates_in(xml: &str) -> (String, String) {
    let between = |open: &str, close: &str| {
        let start = xml.find(open).expect(open) + open.len();
        let end = start + xml[start..].find(close).expect(close);
        xml[start..end].to_string()
    };
    let signing = between("<xades:SigningTime>", "</xades:SigningTime>");
    (
        between("<cbc:IssueDate>", "</cbc:IssueDate>"),
        signing[..10].to_string(),
    )
}

pub fn xml_of(app: &TestApp, id: u64) -> String {
    let res = app.get(&format!("/v1/api/facturacion/{id}/xml"), &app.sk_test());
    assert_eq!(res.status().as_u16(), 200);
    res.text().expect("xml")
}

/// The `redated` history lines of document `id` in a stopped server's
/// store.
pub fn redatings(dir: &Path, id: u64) -> Vec<Value> {
    let store = SledStore::open(dir, keyring_for(dir)).expect("open the stopped server's store");
    store
        .history(id)
        .expect("history")
        .into_iter()
        .filter(|h| h.event == "redated")
        .map(|h| h.data)
        .collect()
}
