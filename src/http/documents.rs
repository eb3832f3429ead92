//! The routes every issued document has, shared by the families that list
//! their own documents (support documents, POS): the document of the key's
//! company in a family, its detail with history, a live status from the
//! authority, its XML and PDF as answers, a list item, and the Spanish
//! names of the states.

use std::collections::BTreeMap;

use actix_web::HttpResponse;
use emisor_store::{DocumentRecord, Family};
use serde::Serialize;

use super::auth::AuthContext;
use super::error::ApiError;
use super::state::AppState;
use crate::issuing::stored;

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
        .and_then(|r| serde_json::from_slice(stored::caller(&r)).ok())
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
