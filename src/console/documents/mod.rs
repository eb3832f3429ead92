//! The Documents section (`/console/documentos`): every family of a
//! company's documents in one list, filtered and searched
//! (`operator::documents`), and a document's page with its history, the
//! authority's answer, its files and the actions its state allows.
//!
//! * [`list`]: the list, with its filters and search box (a GET form).
//! * [`page`]: a document: facts, the authority's answer, the timeline.
//! * [`files`]: its XML, PDF and ZIP, through the code the API serves them
//!   with.
//! * [`actions`]: resend, email, check with the authority: each a POST with
//!   the sign-in's CSRF token, calling the issuing code the API calls.
//!
//! A company session sees its company in its environment only; any other
//! document is a 404, as the API answers it.

pub mod actions;
pub mod files;
pub mod list;
pub mod page;

use actix_web::web;
use emisor_store::DocumentRecord;

use super::error::{ConsoleError, ConsoleResult};
use super::guard::Signed;
use crate::http::state::AppState;

pub const PATH: &str = "/console/documentos";

/// The section's routes, inside the console's scope (one a line: the
/// console's hostile test reads them from here).
#[rustfmt::skip]
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/documentos", web::get().to(list::show))
        .route("/documentos/{id}", web::get().to(page::show))
        .route("/documentos/{id}/xml", web::get().to(files::xml))
        .route("/documentos/{id}/pdf", web::get().to(files::pdf))
        .route("/documentos/{id}/zip", web::get().to(files::zip))
        .route("/documentos/{id}/reenviar", web::post().to(actions::resend))
        .route("/documentos/{id}/correo", web::post().to(actions::email))
        .route("/documentos/{id}/consultar", web::post().to(actions::check));
}

/// A document's page.
pub fn document_path(id: u64) -> String {
    format!("{PATH}/{id}")
}

/// Document `id` as this session may see it: another company's or
/// environment's is as unknown as a missing one.
pub async fn visible(state: &AppState, signed: &Signed, id: u64) -> ConsoleResult<DocumentRecord> {
    state
        .store
        .document(id)
        .await?
        .filter(|d| !d.pending_build && signed.may_see(d.company_id, d.environment))
        .ok_or_else(|| ConsoleError::NotFound(format!("documento {id}")))
}

/// The fixed message of a `?ok=` code; anything else shows nothing.
pub fn notice(code: Option<&str>) -> Option<&'static str> {
    Some(match code? {
        "reenviado" => "Documento regenerado, firmado y enviado a la autoridad.",
        "correo" => "Correo en cola: sale en segundo plano.",
        "consultado" => "Estado consultado a la autoridad.",
        _ => return None,
    })
}
