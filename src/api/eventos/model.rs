//! JSON shapes of the events and the registry (spec 2.13): Spanish names
//! at the boundary.

use emisor_store::{CopyCheck, CopyState, InvoiceEvent, PartyRef, ReceivedInvoice};
use serde::Deserialize;
use serde_json::{json, Value};
use utoipa::ToSchema;

use crate::issuing::invoice_events::state_name;

/// Body of 030, 032, 033 and 034.
#[derive(Debug, Deserialize, ToSchema)]
pub struct EventBody {
    /// CUFE of the invoice.
    pub cufe: String,
    /// Inferred from the key when omitted.
    pub id_empresa: Option<u64>,
    pub notes: Option<String>,
}

/// Body of a claim (031).
#[derive(Debug, Deserialize, ToSchema)]
pub struct ClaimBody {
    pub cufe: String,
    /// Claim concept `01`-`04` (spec 2.8).
    pub motivo: Option<String>,
    pub id_empresa: Option<u64>,
    pub notes: Option<String>,
}

/// `cargar-documento` as JSON (else the XML itself with `Content-Type: application/xml`).
#[derive(Debug, Deserialize, ToSchema)]
pub struct UploadBody {
    /// The signed invoice, or its AttachedDocument, in base64.
    pub xml_base64: String,
    pub id_empresa: Option<u64>,
}

fn party(p: &PartyRef) -> Value {
    json!({ "nit": p.id_number, "nombre": p.name, "id_empresa": p.company_id })
}

/// How the invoice stands against the authority's copy of its CUFE
/// (`igual`, `sin_comparar`: an upload stored before uploads were
/// compared, `difiere`: not the authority's document, no events).
pub fn copy_view(c: &CopyCheck) -> Value {
    let estado = match c.state {
        CopyState::Same => "igual",
        CopyState::Unchecked => "sin_comparar",
        CopyState::Differs => "difiere",
    };
    json!({
        "estado": estado,
        "fecha": c.checked_at.map(|t| t.to_rfc3339()),
        "detalle": c.detail,
    })
}

/// One event as the lists, the detail and the history show it.
pub fn event_view(e: &InvoiceEvent) -> Value {
    json!({
        "codigo_evento": e.code,
        "codigo_evento_tax": e.authority_code,
        "nombre_evento": e.name,
        "numero": e.number,
        "cude_evento": e.cude,
        "fecha_evento": e.issued_at.to_rfc3339(),
        "estado_tax": state_name(e.state),
        "emisor": party(&e.sender),
        "receptor": party(&e.receiver),
        "id_evento": e.id,
        "transmission": e.transmission,
        "detalles": e.details,
    })
}

/// A received invoice, with its events when `events`.
pub fn invoice_view(t: &ReceivedInvoice, events: bool) -> Value {
    let mut v = json!({
        "id": t.id,
        "cufe": t.cufe,
        "numero": t.number,
        "tipo_documento": t.type_code,
        "fecha_emision": t.issue_date,
        "fecha_vencimiento": t.due_date,
        "moneda": t.currency,
        "total": t.total.parse::<rust_decimal::Decimal>().ok(),
        "proveedor": party(&t.vendor),
        "comprador": party(&t.buyer),
        "tenedor_legitimo": party(&t.holder),
        "cargado": t.uploaded_by.is_some(),
        "elegible": t.eligible,
        "copia_tax": copy_view(&t.authority_copy),
    });
    if events {
        v["eventos"] = t.events.iter().map(event_view).collect();
    }
    v
}

/// The answer of an event (spec 2.13).
pub fn event_answer(cufe: &str, e: &InvoiceEvent) -> Value {
    json!({
        "cufe": cufe,
        "codigo_evento": e.code,
        "codigo_evento_tax": e.authority_code,
        "nombre_evento": e.name,
        "cude_evento": e.cude,
        "fecha_evento": e.issued_at.to_rfc3339(),
        "estado_tax": state_name(e.state),
        "id_evento": e.id,
        "transmission": e.transmission,
    })
}

/// The message of an event's answer.
pub fn event_message(e: &InvoiceEvent) -> &'static str {
    match e.state {
        emisor_store::EventState::Accepted => "Evento emitido y validado por tax",
        emisor_store::EventState::Rejected => "Evento rechazado por tax",
        emisor_store::EventState::Pending => "Evento emitido; el envío a tax se reintentará",
    }
}
