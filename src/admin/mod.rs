//! Administration: the `/admin` HTTP API (bearer admin token) for a running
//! server, and the `emisor admin` CLI for a stopped one. Both call
//! `crate::provisioning`, so they do exactly the same thing.
//! `test_set_run` drives the authority's enablement test set through
//! issuing, with the unified API's example documents.

pub mod auth;
pub mod backup;
pub mod cli;
pub mod companies;
pub mod credentials;
pub mod data;
pub mod keys;
pub mod operator;
pub mod reconciliation;
pub mod test_set;
pub mod test_set_run;
pub mod views;

use actix_web::middleware::from_fn;
use actix_web::web;

pub fn configure(cfg: &mut web::ServiceConfig) {
    // Before the customer API's `/v1/api` scope, which would take it.
    cfg.service(operator::socket);
    cfg.service(
        web::scope("/admin")
            .wrap(from_fn(auth::require_admin))
            .service(companies::create)
            .service(companies::list)
            .service(companies::get)
            .service(companies::update)
            .service(companies::webhook_log)
            .service(operator::webhook_log)
            .service(reconciliation::report)
            .service(reconciliation::run)
            .service(credentials::set_software)
            .service(credentials::add_resolution)
            .service(credentials::list_resolutions)
            .service(credentials::import_certificate)
            .service(keys::create)
            .service(keys::list)
            .service(keys::revoke)
            .service(test_set::start)
            .service(test_set::progress)
            .service(backup::take)
            .service(backup::export)
            .service(backup::hold)
            .service(backup::confirm),
    );
}
