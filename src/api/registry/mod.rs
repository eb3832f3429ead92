//! The circulation registry (spec 4.7; decisions.md "Registry codes"):
//! invoices eligible as titles, the registration and endorsements (API
//! codes 035-038, the authority's 036-039 in the XML), and a title's
//! history with its current legitimate holder.

pub mod eligible;
pub mod history;
pub mod register;

use actix_web::web;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(eligible::eligible)
        .service(register::register_event)
        .service(history::history);
}
