//! POS receipts as their own API (spec 2.11, 4.4): `/pos`. Each body is
//! translated onto the unified request of type 9 or 10 and goes through the
//! issuing path of every API ([`translator::PosTranslator`]), synchronously.

pub mod arqueo;
pub mod emitir;
pub mod list;
pub mod mapping;
pub mod model;
pub mod nota_ajuste;
pub mod tirilla;
pub mod translator;

use actix_web::web;

pub fn configure(cfg: &mut web::ServiceConfig) {
    // `arqueo` before `/pos/{id}` (the detail only takes digits anyway).
    cfg.service(arqueo::arqueo)
        .service(emitir::emitir)
        .service(nota_ajuste::nota_ajuste)
        .service(tirilla::tirilla)
        .service(list::list)
        .service(list::detail);
}
