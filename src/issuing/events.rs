//! Real-time events (spec 6.1, decisions.md §4): `facturacion:update` when
//! the authority accepts or rejects, `facturacion:error` when retries are
//! exhausted, `contingencia:batch` when a contingency batch starts. Sent to
//! the company's room; delivery never blocks issuing (the hub drops slow
//! sockets).

use emisor_actors::ws_hub::{Broadcast, Room};
use emisor_store::{state, DocumentRecord};
use serde_json::json;

use super::Issuing;
use crate::authority::Transmission;

pub const UPDATE: &str = "facturacion:update";
pub const ERROR: &str = "facturacion:error";
pub const CONTINGENCY_BATCH: &str = "contingencia:batch";

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

pub fn to_company(issuing: &Issuing, company: u64, event: &'static str, data: serde_json::Value) {
    super::webhooks::enqueue(issuing, company, event, &data);
    issuing
        .hub
        .addr()
        .do_send(Broadcast::new(Room::Company(company), event, data));
}

pub fn update(issuing: &Issuing, doc: &DocumentRecord, t: &Transmission) {
    to_company(issuing, doc.company_id, UPDATE, payload(doc, t));
}

pub fn error(issuing: &Issuing, doc: &DocumentRecord, t: &Transmission) {
    to_company(issuing, doc.company_id, ERROR, payload(doc, t));
}
