//! Small pieces several console pages show: a document type's name, the
//! authority's rule texts of a document, a document's full number.

use emisor_store::{DocumentRecord, PAYROLL_DOCUMENT_TYPE};

/// A document type's name as an accountant says it (spec 2.2, payroll).
pub fn type_name(document_type: u8) -> &'static str {
    match document_type {
        1 => "Factura de venta",
        2 => "Nota crédito",
        3 => "Nota débito",
        4 => "Documento soporte",
        5 => "Nota de ajuste (soporte)",
        6 => "Factura de exportación",
        7 => "Factura de contingencia (T03)",
        8 => "Factura de contingencia (T04)",
        9 => "Documento equivalente POS",
        10 => "Nota de ajuste POS",
        t if t == PAYROLL_DOCUMENT_TYPE || t == 102 => "Nómina electrónica",
        t if t == PAYROLL_DOCUMENT_TYPE + 1 || t == 103 => "Nota de ajuste de nómina",
        _ => "Documento recibido",
    }
}

/// A state's name in the console (spec 3.1's, with the authority named).
pub fn state_name(state: u8) -> &'static str {
    match state {
        emisor_store::state::DRAFT => "Borrador",
        emisor_store::state::ACCEPTED => "Aceptado",
        emisor_store::state::QUEUED => "En cola",
        emisor_store::state::REJECTED => "Rechazado",
        emisor_store::state::WAITING_AUTHORITY => "Esperando a la autoridad",
        emisor_store::state::DEAD_LETTER => "Dead letter (reintentos agotados)",
        _ => "Desconocido",
    }
}

/// `SETP990000012`: the prefix and the number as printed.
pub fn full_number(doc: &DocumentRecord) -> String {
    format!("{}{}", doc.prefix, doc.number)
}

/// The authority's rejection texts (`Regla: …, Rechazo: …`) and, when
/// there are none, its status description.
pub fn rule_texts(doc: &DocumentRecord) -> Vec<String> {
    let Some(t) = doc.transmission.as_ref() else {
        return Vec::new();
    };
    let errors: Vec<String> = t
        .get("errors")
        .and_then(|e| e.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|e| e.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    if !errors.is_empty() {
        return errors;
    }
    t.get("status_description")
        .and_then(|d| d.as_str())
        .filter(|d| !d.is_empty())
        .map(|d| vec![d.to_string()])
        .unwrap_or_default()
}
