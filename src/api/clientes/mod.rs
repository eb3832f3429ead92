//! Customers (spec 2.6, decisions.md §4): upserted by identification number;
//! a buyer looked up at the authority ([`adquiriente`]).

pub mod adquiriente;
pub mod create;
pub mod list;
pub mod model;

use actix_web::web;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(adquiriente::look_up_buyer)
        .service(list::list_customers)
        .service(create::create_customer);
}
