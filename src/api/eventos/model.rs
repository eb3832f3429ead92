//! JSON shapes of the events and the registry (spec 2.13): Spanish names
//! at the boundary.

use emisor_store::{InvoiceEvent, PartyRef, ReceivedInvoice};
use serde::Deserialize;
use serde_json::{json, Value};
use utoipa::ToSchema;

use crate::http::error::ApiError;
use crate::http::invoice_events::{check_texts, copy_view, NAME_MAX};
use crate::issuing::invoice_events::register::Receiver;
use crate::issuing::invoice_events::state_name;

/// Longest identification number.
const ID_MAX: usize = 20;

/// Who received the invoice or the goods (030, 032): written in the event
/// as `DocumentResponse/cac:IssuerParty/cac:Person`. Without it, the buyer
/// itself is named.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ReceiverBody {
    /// Identification type (`13` CC, `31` NIT…).
    pub tipo_documento: String,
    #[schema(max_length = 20)]
    pub numero_documento: String,
    #[schema(max_length = 450)]
    pub nombres: String,
    #[schema(max_length = 450)]
    pub apellidos: String,
    #[schema(max_length = 450)]
    pub cargo: Option<String>,
    #[schema(max_length = 450)]
    pub area: Option<String>,
}

impl ReceiverBody {
    /// The person, checked.
    pub fn to_receiver(self) -> Result<Receiver, ApiError> {
        check_texts(&[
            ("recibido_por.nombres", Some(&self.nombres), NAME_MAX),
            ("recibido_por.apellidos", Some(&self.apellidos), NAME_MAX),
            ("recibido_por.cargo", self.cargo.as_deref(), NAME_MAX),
            ("recibido_por.area", self.area.as_deref(), NAME_MAX),
        ])?;
        let number = self.numero_documento.trim().to_string();
        if number.is_empty()
            || number.len() > ID_MAX
            || !number.bytes().all(|c| c.is_ascii_alphanumeric())
        {
            return Err(ApiError::validation(
                "recibido_por.numero_documento",
                "must be 1 to 20 letters or digits",
            ));
        }
        let id_type = self.tipo_documento.trim().to_string();
        if id_type.is_empty() || id_type.len() > 2 || !id_type.bytes().all(|c| c.is_ascii_digit()) {
            return Err(ApiError::validation(
                "recibido_por.tipo_documento",
                "must be an identification type code such as 13 (CC) or 31 (NIT)",
            ));
        }
        let required = |field: &str, v: &str| {
            if v.trim().is_empty() {
                Err(ApiError::validation(field, "is required"))
            } else {
                Ok(v.trim().to_string())
            }
        };
        let optional =
            |v: Option<String>| v.map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        Ok(Receiver {
            id_type,
            id_number: number,
            first_name: required("recibido_por.nombres", &self.nombres)?,
            family_name: required("recibido_por.apellidos", &self.apellidos)?,
            job_title: optional(self.cargo),
            department: optional(self.area),
        })
    }
}

/// Body of 030, 032, 033 and 034.
#[derive(Debug, Deserialize, ToSchema)]
pub struct EventBody {
    /// CUFE of the invoice.
    pub cufe: String,
    /// Inferred from the key when omitted.
    pub id_empresa: Option<u64>,
    #[schema(max_length = 4000)]
    pub notes: Option<String>,
    /// Who received (030 and 032 only; the buyer itself when omitted).
    pub recibido_por: Option<ReceiverBody>,
}

/// Body of a claim (031).
#[derive(Debug, Deserialize, ToSchema)]
pub struct ClaimBody {
    pub cufe: String,
    /// Claim concept `01`-`04` (spec 2.8).
    pub motivo: Option<String>,
    pub id_empresa: Option<u64>,
    #[schema(max_length = 4000)]
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
    if let (true, Some(fields)) = (events, v.as_object_mut()) {
        fields.insert("eventos".into(), t.events.iter().map(event_view).collect());
    }
    v
}
