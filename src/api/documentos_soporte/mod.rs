//! Support documents as their own API (spec 2.10, 4.3): `/documentos-soporte`.
//! Each body is translated onto the unified request of type 4 or 5 and goes
//! through the issuing path of every API ([`translator::SupportTranslator`]).

pub mod detail;
pub mod emitir;
pub mod list;
pub mod mapping;
pub mod model;
pub mod nota_ajuste;
pub mod translator;

use actix_web::web;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(emitir::emitir)
        .service(nota_ajuste::nota_ajuste)
        .service(list::list)
        .service(detail::detail)
        .service(detail::consultar_tax)
        .service(detail::pdf)
        .service(detail::xml);
}
