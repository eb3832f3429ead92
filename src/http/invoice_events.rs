//! What the received-invoice events API and the registry answer and check
//! alike: the bounds and check of an event's free text, the answer of a
//! registered event, and how an invoice stands against the authority's copy.

use emisor_store::{CopyCheck, CopyState, InvoiceEvent};
use serde_json::{json, Value};

use super::error::{ApiError, FieldError};
use crate::engine::validate::text_problem;
use crate::issuing::invoice_events::state_name;

/// Longest name and note an event or the registry writes: the bounds of
/// every API ([`crate::engine::limits`]).
pub const NAME_MAX: usize = crate::engine::limits::NAME;
pub const NOTE_MAX: usize = crate::engine::limits::TEXT;

/// Checks free text bound for an event's XML, as the invoice APIs do: a
/// character XML cannot carry, or more than its maximum of characters, is
/// a 422 naming every field (before anything is numbered or stored).
pub fn check_texts(fields: &[(&str, Option<&str>, usize)]) -> Result<(), ApiError> {
    let details: Vec<FieldError> = fields
        .iter()
        .filter_map(|(field, value, max)| {
            text_problem((*value)?, *max).map(|problem| FieldError::new(*field, problem))
        })
        .collect();
    if details.is_empty() {
        Ok(())
    } else {
        Err(ApiError::validation_list(details))
    }
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
