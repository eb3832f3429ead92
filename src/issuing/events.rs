//! Real-time events (spec 6.1, decisions.md §4): `facturacion:update` when
//! the authority accepts or rejects, `facturacion:error` when retries are
//! exhausted, `contingencia:batch` when a contingency batch starts. Sent to
//! the company's room, and a document's events also to the room of the user
//! whose key issued it; the rooms are those of the document's company and
//! environment. Delivery never blocks issuing (the hub drops slow sockets).
//! Every node on one database hears them (`crate::fanout`).
//! Webhooks are per company.

use emisor_actors::ws_hub::{Broadcast, Room, Scope};
use emisor_store::{state, CompanyId, DocumentRecord, Environment};
use serde_json::json;

use super::Issuing;
use crate::authority::Transmission;

pub const UPDATE: &str = "facturacion:update";
pub const ERROR: &str = "facturacion:error";
pub const CONTINGENCY_BATCH: &str = "contingencia:batch";
/// An event someone else registered on the company's invoice, learned
/// from the authority (decisions.md §4 "WebSocket").
pub const INVOICE_EVENT: &str = "factura:evento";

/// `{id, prefijo, numero, id_estado_documento, estado, errors, zipKey}`.
pub fn payload(doc: &DocumentRecord, t: &Transmission) -> serde_json::Value {
    json!({
        "id": doc.id,
        "prefijo": doc.prefix,
        "numero": doc.number.to_string(),
        "id_estado_documento": doc.state,
        "estado": state::name(doc.state),
        "errors": t.errors,
        "zipKey": t.zip_key,
    })
}

/// The scope of the rooms of `company` in `environment`.
pub fn scope(company: CompanyId, environment: Environment) -> Scope {
    Scope {
        company,
        environment: environment.authority_code(),
    }
}

/// An event to the room of a company's environment and to the company's
/// webhook (the delivery job is durable when this returns).
pub async fn to_company(
    issuing: &Issuing,
    (company, environment): (CompanyId, Environment),
    event: &'static str,
    data: serde_json::Value,
) {
    super::webhooks::enqueue(issuing, company, event, &data).await;
    let b = Broadcast::new(Room::Company(scope(company, environment)), event, data);
    crate::fanout::broadcast(&issuing.store, &issuing.hub, b).await;
}

/// The rooms that hear about `doc`: its company's, and its user's when a
/// user's key issued it, both in the document's environment.
pub fn rooms_of(doc: &DocumentRecord) -> Vec<Room> {
    let scope = scope(doc.company_id, doc.environment);
    let mut rooms = vec![Room::Company(scope)];
    rooms.extend(doc.user_id.map(|user| Room::User(scope, user)));
    rooms
}

/// One event about `doc`: the company's webhook, and one broadcast to its
/// rooms (the hub sends it once to a socket that is in both).
async fn about(
    issuing: &Issuing,
    doc: &DocumentRecord,
    event: &'static str,
    data: serde_json::Value,
) {
    super::webhooks::enqueue(issuing, doc.company_id, event, &data).await;
    let b = Broadcast::to_rooms(rooms_of(doc), event, data);
    crate::fanout::broadcast(&issuing.store, &issuing.hub, b).await;
}

pub async fn update(issuing: &Issuing, doc: &DocumentRecord, t: &Transmission) {
    about(issuing, doc, UPDATE, payload(doc, t)).await;
}

pub async fn error(issuing: &Issuing, doc: &DocumentRecord, t: &Transmission) {
    about(issuing, doc, ERROR, payload(doc, t)).await;
}

/// `factura:evento` about `doc` (its rooms and its company's webhook).
pub async fn invoice_event(issuing: &Issuing, doc: &DocumentRecord, data: serde_json::Value) {
    about(issuing, doc, INVOICE_EVENT, data).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn document(user_id: Option<u64>, environment: &str) -> DocumentRecord {
        serde_json::from_value(json!({
            "id": 5, "company_id": 3, "environment": environment, "document_type": 1,
            "resolution_id": 1, "prefix": "SETP", "number": 990000001, "state": 2,
            "issue_date": "2026-01-02", "user_id": user_id,
            "created_at": "2026-01-02T00:00:00Z", "updated_at": "2026-01-02T00:00:00Z",
        }))
        .unwrap()
    }

    #[test]
    fn a_users_document_goes_to_the_company_and_the_user_of_its_environment() {
        let test = Scope {
            company: 3,
            environment: 2,
        };
        assert_eq!(
            rooms_of(&document(Some(17), "test")),
            [Room::Company(test), Room::User(test, 17)]
        );
        assert_eq!(rooms_of(&document(None, "test")), [Room::Company(test)]);
        let live = Scope {
            company: 3,
            environment: 1,
        };
        assert_eq!(
            rooms_of(&document(Some(17), "live")),
            [Room::Company(live), Room::User(live, 17)]
        );
    }
}
