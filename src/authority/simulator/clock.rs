//! `GET /__sim/clock` and `POST /__sim/clock {"offset_s": N}`: the
//! simulator's test clock (`crate::clock::simulator`). Served by a separate
//! `emisor tax-sim`, and in-process only under `[testing] shared_clock`,
//! where the service's business clock follows it, so moving it moves both.

use super::server::SimShared;
use actix_web::{web, HttpResponse};
use serde::Deserialize;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/__sim/clock")
            .route(web::get().to(get_clock))
            .route(web::post().to(set_clock)),
    );
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ClockBody {
    offset_s: i64,
}

fn answer() -> HttpResponse {
    HttpResponse::Ok().json(serde_json::json!({
        "offset_s": crate::clock::simulator::offset_s(),
        "now": crate::clock::simulator::colombia_now().to_rfc3339(),
    }))
}

async fn get_clock(shared: web::Data<SimShared>) -> HttpResponse {
    if !shared.opts.test_controls {
        return super::control::not_served();
    }
    answer()
}

async fn set_clock(shared: web::Data<SimShared>, body: web::Json<ClockBody>) -> HttpResponse {
    if !shared.opts.test_controls {
        return super::control::not_served();
    }
    // Ten years either way is plenty for any test and keeps chrono in range.
    if body.offset_s.abs() > 10 * 366 * 24 * 3600 {
        return HttpResponse::BadRequest()
            .json(serde_json::json!({ "error": "offset_s is out of range" }));
    }
    crate::clock::simulator::set_offset_s(body.offset_s);
    answer()
}
