//! The console's stylesheet and script, compiled into the binary: nothing
//! to build, nothing fetched from elsewhere (it works with no internet).

use actix_web::{web, HttpResponse};

const CSS: &str = include_str!("assets/console.css");
const JS: &str = include_str!("assets/console.js");

/// `GET /console/assets/{name}`
pub async fn asset(name: web::Path<String>) -> HttpResponse {
    let (body, kind) = match name.as_str() {
        "console.css" => (CSS, "text/css; charset=utf-8"),
        "console.js" => (JS, "text/javascript; charset=utf-8"),
        _ => return HttpResponse::NotFound().finish(),
    };
    HttpResponse::Ok()
        .content_type(kind)
        .insert_header(("X-Content-Type-Options", "nosniff"))
        // The binary's version changes them; an hour keeps a page's loads quick.
        .insert_header(("Cache-Control", "private, max-age=3600"))
        .body(body)
}
