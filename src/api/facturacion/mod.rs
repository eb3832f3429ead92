//! Unified invoicing API (spec 2.5–2.8, 4.1): `POST /facturacion` for all ten
//! document types, and the endpoints around it.

pub mod contingency;
pub mod create;
pub mod files;
pub mod list;
pub mod numbering;
pub mod pdf;
pub mod resend;
pub mod responses;
pub mod status;
pub mod translator;

use actix_web::web;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(create::create)
        .service(contingency::send_contingency)
        .service(resend::resend)
        .service(numbering::next_number)
        .service(numbering::subscription)
        .service(status::status)
        .service(files::xml)
        .service(files::zip)
        .service(pdf::pdf)
        .service(list::list);
}
