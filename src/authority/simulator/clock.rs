//! `GET /__sim/clock` and `POST /__sim/clock {"offset_s": N}`: the business
//! clock (`crate::clock`) of this process, test and demo only. In-process,
//! the service reads the same clock, so moving it moves both.

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
        "offset_s": crate::clock::offset_s(),
        "now": crate::clock::colombia_now().to_rfc3339(),
    }))
}

async fn get_clock() -> HttpResponse {
    answer()
}

async fn set_clock(body: web::Json<ClockBody>) -> HttpResponse {
    // Ten years either way is plenty for any test and keeps chrono in range.
    if body.offset_s.abs() > 10 * 366 * 24 * 3600 {
        return HttpResponse::BadRequest()
            .json(serde_json::json!({ "error": "offset_s is out of range" }));
    }
    crate::clock::set_offset_s(body.offset_s);
    answer()
}
