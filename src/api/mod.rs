//! The customer-facing REST API under `/v1/api` (spec §4): keyed, rate
//! limited, every answer in the envelope. One file per endpoint, grouped by
//! resource; each resource registers its routes in its `configure`.

pub mod clientes;
pub mod documentos_soporte;
pub mod email;
pub mod eventos;
pub mod facturacion;
pub mod facturacion_es;
pub mod invoice_request;
pub mod nomina;
pub mod pos;
pub mod registry;
pub mod ws;

use actix_web::middleware::from_fn;
use actix_web::web;

use crate::http::{auth, key_check, rate_limit, BASE};

/// Each API's translation of its stored requests, for issuing's rebuilds.
pub fn translators() -> crate::issuing::request::Translators {
    use std::sync::Arc;
    crate::issuing::request::Translators::default()
        .with(
            crate::issuing::request::Api::Unified,
            Arc::new(facturacion::translator::UnifiedTranslator),
        )
        .with(
            crate::issuing::request::Api::Spanish,
            Arc::new(facturacion_es::translator::SpanishTranslator),
        )
        .with(
            crate::issuing::request::Api::Support,
            Arc::new(documentos_soporte::translator::SupportTranslator),
        )
        .with(
            crate::issuing::request::Api::Pos,
            Arc::new(pos::translator::PosTranslator),
        )
        .with_payroll(Arc::new(nomina::translator::NominaTranslator))
}

/// Routes that need an API key. Order of wraps: the last is outermost, so a
/// request is authenticated first, then counted against its key's limit,
/// then its query `id_empresa` is checked (a refusal is counted and carries
/// the rate headers like any other answer).
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::scope(BASE)
            .wrap(from_fn(auth::own_company))
            .wrap(from_fn(rate_limit::limit))
            .wrap(from_fn(auth::authenticate))
            // Routes are tried in order: the busiest first.
            .configure(facturacion::configure)
            .service(key_check::test_key)
            .configure(clientes::configure)
            .configure(email::configure)
            .configure(eventos::configure)
            .configure(registry::configure)
            .configure(facturacion_es::configure)
            .configure(documentos_soporte::configure)
            .configure(pos::configure)
            .configure(nomina::configure)
            .service(ws::ws),
    );
}
