//! Control of the simulator (decisions.md §2), under `/__sim/`:
//! `POST /__sim/mode`, `GET /__sim/mode`, `GET /__sim/stats`,
//! `POST /__sim/reset`, `PUT /__sim/issuers`, `GET /__sim/issuers`,
//! `PUT /__sim/acquirers`, `GET /__sim/acquirers` (the buyers `GetAcquirer`
//! knows besides the registered issuers), and
//! `GET /__sim/documents/{code}/application-response` (the ApplicationResponse
//! it answered for an accepted code, so a test can compare what was kept).

use super::server::SimShared;
use super::state::{AcquirerRecord, IssuerRecord, ModeSettings};
use actix_web::{web, HttpResponse};
use serde::Deserialize;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/__sim/mode")
            .route(web::post().to(set_mode))
            .route(web::get().to(get_mode)),
    )
    .service(web::resource("/__sim/stats").route(web::get().to(stats)))
    .service(web::resource("/__sim/reset").route(web::post().to(reset)))
    .service(
        web::resource("/__sim/issuers")
            .route(web::put().to(put_issuers))
            .route(web::get().to(get_issuers)),
    )
    .service(
        web::resource("/__sim/acquirers")
            .route(web::put().to(put_acquirers))
            .route(web::get().to(get_acquirers)),
    )
    .service(
        web::resource("/__sim/documents/{code}/application-response")
            .route(web::get().to(application_response)),
    );
}

async fn application_response(
    shared: web::Data<SimShared>,
    code: web::Path<String>,
) -> HttpResponse {
    match shared.state.application_response(&code) {
        Some(xml) => HttpResponse::Ok()
            .content_type("application/xml; charset=utf-8")
            .body(xml),
        None => HttpResponse::NotFound()
            .json(serde_json::json!({"error": "no accepted document with that code"})),
    }
}

fn bad_request(message: &str) -> HttpResponse {
    HttpResponse::BadRequest().json(serde_json::json!({ "error": message }))
}

async fn set_mode(shared: web::Data<SimShared>, body: web::Json<ModeSettings>) -> HttpResponse {
    let mode = body.into_inner();
    if !mode.fail_ratio.is_finite() || !(0.0..=1.0).contains(&mode.fail_ratio) {
        return bad_request("fail_ratio must be between 0.0 and 1.0");
    }
    shared.state.set_mode(mode);
    HttpResponse::Ok().json(mode)
}

async fn get_mode(shared: web::Data<SimShared>) -> HttpResponse {
    HttpResponse::Ok().json(shared.state.mode())
}

async fn stats(shared: web::Data<SimShared>) -> HttpResponse {
    HttpResponse::Ok().json(shared.state.stats())
}

async fn reset(shared: web::Data<SimShared>) -> HttpResponse {
    shared.state.reset();
    shared.contingency.reset();
    HttpResponse::Ok().json(shared.state.stats())
}

/// One issuer or a list.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Issuers {
    One(IssuerRecord),
    Many(Vec<IssuerRecord>),
}

async fn put_issuers(shared: web::Data<SimShared>, body: web::Json<Issuers>) -> HttpResponse {
    let list = match body.into_inner() {
        Issuers::One(i) => vec![i],
        Issuers::Many(v) => v,
    };
    if list.iter().any(|i| i.nit.trim().is_empty()) {
        return bad_request("every issuer needs a nit");
    }
    let registered = list.len();
    for issuer in list {
        shared.registry.register(issuer);
    }
    HttpResponse::Ok().json(serde_json::json!({ "registered": registered }))
}

/// One buyer or a list.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Acquirers {
    One(AcquirerRecord),
    Many(Vec<AcquirerRecord>),
}

async fn put_acquirers(shared: web::Data<SimShared>, body: web::Json<Acquirers>) -> HttpResponse {
    let list = match body.into_inner() {
        Acquirers::One(a) => vec![a],
        Acquirers::Many(v) => v,
    };
    if list.iter().any(|a| {
        a.identification_type.trim().is_empty()
            || a.identification_number.trim().is_empty()
            || a.name.trim().is_empty()
    }) {
        return bad_request("every buyer needs identificationType, identificationNumber and name");
    }
    let registered = list.len();
    for buyer in list {
        shared.registry.register_acquirer(buyer);
    }
    HttpResponse::Ok().json(serde_json::json!({ "registered": registered }))
}

async fn get_acquirers(shared: web::Data<SimShared>) -> HttpResponse {
    HttpResponse::Ok().json(shared.registry.acquirers())
}

/// The issuers with their PINs and technical keys: a test control, so 404
/// unless the simulator serves those ([`super::SimOptions::test_controls`]).
async fn get_issuers(shared: web::Data<SimShared>) -> HttpResponse {
    if !shared.opts.test_controls {
        return not_served();
    }
    HttpResponse::Ok().json(shared.registry.issuers())
}

/// The answer to a test control this simulator does not serve.
pub(super) fn not_served() -> HttpResponse {
    HttpResponse::NotFound().json(serde_json::json!({
        "error": "not served: test controls need [testing] shared_clock (or a separate emisor tax-sim)"
    }))
}
