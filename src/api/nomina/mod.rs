//! Electronic payroll (spec 2.12, 4.5): `POST /nomina/enviar` (102),
//! `POST /nomina/ajuste` (103), status, list, detail, files and PDF. Each payroll is
//! issued on the same path as every document (`issuing::payroll`).

pub mod ajuste;
pub mod detail;
pub mod enviar;
pub mod estado;
pub mod list;
pub mod mapping;
pub mod model;
pub mod responses;
pub mod translator;

use actix_web::web;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(enviar::enviar)
        .service(ajuste::ajuste)
        .service(estado::estado)
        .service(list::listar)
        .service(detail::xml)
        .service(detail::zip)
        .service(detail::pdf)
        .service(detail::detail);
}
