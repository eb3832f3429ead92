//! What the support-document and POS APIs share: the Spanish state names of
//! their answers, the translation of their bodies onto the unified request
//! (so both reuse its mapping and validation), the renaming of the unified
//! field paths back to the caller's, and the routes every family has (detail,
//! live status, files).

use std::collections::BTreeMap;
use std::sync::Arc;

use actix_web::HttpResponse;
use emisor_store::{DocumentRecord, Family};
use rust_decimal::Decimal;
use serde::Serialize;

use super::facturacion::mapping::{to_document, MappedDocument, ReferencedDocument};
use super::facturacion::request::FacturacionRequest;
use crate::engine::model::Document;
use crate::engine::totals::Totals;
use crate::http::auth::AuthContext;
use crate::http::error::{ApiError, FieldError};
use crate::http::json::parse_value;
use crate::http::state::AppState;
use crate::issuing::request::CallerFields;

/// `estado_tax` by state (decisions.md §5).
pub fn estado_tax(state: u8) -> &'static str {
    match state {
        1 => "Borrador",
        2 => "Aceptado",
        3 => "En Cola",
        4 => "Rechazado",
        5 => "Esperando tax",
        6 => "Dead Letter",
        _ => "Desconocido",
    }
}

/// Payment means names of the authority's list (the ones a till uses).
pub fn payment_method_name(code: &str) -> &'static str {
    match code {
        "10" => "Efectivo",
        "20" => "Cheque",
        "42" => "Consignación",
        "47" => "Transferencia",
        "48" => "Tarjeta crédito",
        "49" => "Tarjeta débito",
        "ZZZ" => "Otro",
        _ => "Otro medio",
    }
}

/// How a family names the unified request's fields: `(unified, own)`
/// substrings, replaced in order (longest first where one contains another).
pub type Renames = &'static [(&'static str, &'static str)];

pub fn rename(renames: Renames, path: &str) -> String {
    let mut out = path.to_string();
    for (from, to) in renames {
        if out.contains(from) {
            out = out.replace(from, to);
        }
    }
    out
}

/// A refusal of the unified mapping, naming the family's fields.
pub fn renamed_error(renames: Renames, e: ApiError) -> ApiError {
    match e {
        ApiError::Validation { details, .. } => ApiError::validation_list(
            details
                .into_iter()
                .map(|d| FieldError::new(rename(renames, &d.field), d.message))
                .collect(),
        ),
        other => other,
    }
}

/// The unified caller fields, renamed to the family's.
#[derive(Debug)]
pub struct RenamedFields {
    pub inner: Arc<dyn CallerFields>,
    pub renames: Renames,
}

impl CallerFields for RenamedFields {
    fn field(&self, engine_field: &str) -> String {
        rename(self.renames, &self.inner.field(engine_field))
    }

    fn check_declared(&self, document: &Document, totals: &Totals) -> Result<(), Vec<FieldError>> {
        self.inner.check_declared(document, totals).map_err(|v| {
            v.into_iter()
                .map(|d| FieldError::new(rename(self.renames, &d.field), d.message))
                .collect()
        })
    }
}

/// An amount as the answers write it: rounded half-up to 2 decimals,
/// always with both (`19000.00`).
pub fn money(d: Decimal) -> String {
    let mut r = crate::engine::totals::round2(d);
    r.rescale(2);
    r.to_string()
}

/// A JSON number with the decimal's exact text (arbitrary precision).
pub fn num(d: Decimal) -> serde_json::Value {
    serde_json::from_str(&d.normalize().to_string()).unwrap_or(serde_json::Value::Null)
}

/// The family's body written as a unified request, mapped by the unified
/// API's rules; refusals name the family's fields.
pub fn map_unified(
    renames: Renames,
    unified: &serde_json::Value,
    reference: Option<&ReferencedDocument>,
) -> Result<MappedDocument, ApiError> {
    let req: FacturacionRequest = parse_value(unified).map_err(|e| renamed_error(renames, e))?;
    to_document(&req, reference).map_err(|e| renamed_error(renames, e))
}

/// A placeholder for a counterparty without email (the unified customer
/// requires one); the mapped document and the stored customer drop it.
pub const NO_EMAIL: &str = "sin-correo@correo.invalid";

/// Removes [`NO_EMAIL`] from the mapped document.
pub fn drop_placeholder_email(mapped: &mut MappedDocument) {
    if mapped.document.counterparty.email.as_deref() == Some(NO_EMAIL) {
        mapped.document.counterparty.email = None;
    }
    if mapped.customer.email == NO_EMAIL {
        mapped.customer.email = String::new();
    }
}

/// A document of the key's company and environment in `family`, or 404
/// (another company's, environment's or family's is as unknown as a
/// missing one).
pub async fn family_document(
    state: &AppState,
    ctx: &AuthContext,
    family: Family,
    id: u64,
) -> Result<DocumentRecord, ApiError> {
    state
        .store
        .document(id)
        .await?
        .filter(|d| ctx.owns(d) && Family::of_document_type(d.document_type) == family)
        .ok_or_else(|| ApiError::NotFound(format!("document {id}")))
}

/// A history entry as the detail shows it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct HistoryItem {
    pub fecha: String,
    pub evento: String,
    pub actor: String,
    pub estado_anterior: Option<u8>,
    pub estado: Option<u8>,
    #[schema(value_type = Object)]
    pub datos: serde_json::Value,
}

/// `GET /…/:id`: everything sent, the computed totals (kept as list keys),
/// code, state and history.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct DocumentDetail {
    pub id: u64,
    pub id_tipo_documento: u8,
    pub prefijo: String,
    pub numero: u64,
    pub codigo: Option<String>,
    pub codigo_esquema: Option<String>,
    pub qr_url: Option<String>,
    pub fecha_emision: String,
    pub id_estado_documento: u8,
    pub estado_tax: &'static str,
    pub total: String,
    /// Computed amounts and the family's keys (`proveedor`, `id_caja`…).
    pub resumen: BTreeMap<String, String>,
    /// The body as sent (an adjustment note's with the lines it adjusts).
    #[schema(value_type = Object)]
    pub solicitud: serde_json::Value,
    #[schema(value_type = Object)]
    pub transmision: Option<serde_json::Value>,
    pub historial: Vec<HistoryItem>,
}

pub async fn detail(state: &AppState, doc: DocumentRecord) -> Result<DocumentDetail, ApiError> {
    let raw = state.store.document_request(doc.id).await?;
    let solicitud = raw
        .and_then(|r| serde_json::from_slice(&r).ok())
        .unwrap_or(serde_json::Value::Null);
    let historial = state
        .store
        .history(doc.id)
        .await?
        .into_iter()
        .map(|h| HistoryItem {
            fecha: h.at.to_rfc3339(),
            evento: h.event,
            actor: h.actor,
            estado_anterior: h.from_state,
            estado: h.to_state,
            datos: h.data,
        })
        .collect();
    Ok(DocumentDetail {
        id: doc.id,
        id_tipo_documento: doc.document_type,
        prefijo: doc.prefix.clone(),
        numero: doc.number,
        codigo: doc.code.clone(),
        codigo_esquema: doc.code_scheme.clone(),
        qr_url: doc.qr_url.clone(),
        fecha_emision: doc.issue_date.to_string(),
        id_estado_documento: doc.state,
        estado_tax: estado_tax(doc.state),
        total: doc.total.clone(),
        resumen: doc.list_keys.clone(),
        solicitud,
        transmision: doc.transmission.clone(),
        historial,
    })
}

/// `POST /…/:id/consultar-tax`: the answer.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct LiveStatus {
    pub id: u64,
    pub codigo: Option<String>,
    pub id_estado_documento: u8,
    pub estado_tax: &'static str,
    #[schema(value_type = Object)]
    pub transmision: Option<serde_json::Value>,
}

/// A live GetStatus of the document's code through the breaker (the
/// unified `check_tax` path), which stores an acceptance it learns of.
pub async fn live_status(state: &AppState, doc: DocumentRecord) -> Result<LiveStatus, ApiError> {
    let doc = state
        .issuing
        .check_status(doc)
        .await
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    Ok(LiveStatus {
        id: doc.id,
        codigo: doc.code.clone(),
        id_estado_documento: doc.state,
        estado_tax: estado_tax(doc.state),
        transmision: doc.transmission.clone(),
    })
}

/// The signed XML of a document, as `/facturacion/:id/xml` serves it.
pub async fn xml(state: &AppState, doc: &DocumentRecord) -> Result<HttpResponse, ApiError> {
    let files = state
        .store
        .document_files(doc.id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("files of document {}", doc.id)))?;
    Ok(HttpResponse::Ok()
        .content_type("text/xml; charset=utf-8")
        .insert_header((
            "Content-Disposition",
            format!("inline; filename=\"{}\"", files.xml_name),
        ))
        .body(files.xml))
}

/// A PDF as a download.
pub fn pdf(name: &str, bytes: Vec<u8>) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/pdf")
        .insert_header((
            "Content-Disposition",
            format!("inline; filename=\"{name}\""),
        ))
        .body(bytes)
}

/// A list item's base fields, common to both families.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ListItem {
    pub id: u64,
    pub id_tipo_documento: u8,
    pub prefijo: String,
    pub numero: u64,
    pub codigo: Option<String>,
    pub fecha_emision: String,
    pub id_estado_documento: u8,
    pub estado_tax: &'static str,
    pub total: String,
    /// The family's keys and computed amounts.
    pub resumen: BTreeMap<String, String>,
}

impl From<DocumentRecord> for ListItem {
    fn from(d: DocumentRecord) -> Self {
        ListItem {
            id: d.id,
            id_tipo_documento: d.document_type,
            prefijo: d.prefix,
            numero: d.number,
            codigo: d.code,
            fecha_emision: d.issue_date.to_string(),
            id_estado_documento: d.state,
            estado_tax: estado_tax(d.state),
            total: d.total,
            resumen: d.list_keys,
        }
    }
}

/// A trimmed optional text of at most `max` characters, or a 422.
pub fn opt_text(
    field: &str,
    value: Option<&str>,
    max: usize,
    errors: &mut Vec<FieldError>,
) -> Option<String> {
    let v = value.map(str::trim).filter(|v| !v.is_empty())?;
    if v.chars().count() > max || v.chars().any(char::is_control) {
        errors.push(FieldError::new(
            field,
            format!("at most {max} characters, without control characters"),
        ));
    }
    Some(v.to_string())
}

/// Decimals written as exact JSON numbers (what `amount::*` reads back),
/// for bodies this API stores itself.
pub mod exact {
    use rust_decimal::Decimal;
    use serde::{Serialize, Serializer};

    pub fn required<S: Serializer>(d: &Decimal, s: S) -> Result<S::Ok, S::Error> {
        super::num(*d).serialize(s)
    }

    pub fn option<S: Serializer>(d: &Option<Decimal>, s: S) -> Result<S::Ok, S::Error> {
        d.map(super::num).serialize(s)
    }
}
