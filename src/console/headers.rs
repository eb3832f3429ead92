//! The headers every console answer carries: a Content-Security-Policy
//! that lets only the console's own script and style run (no inline code,
//! no other origin, no framing), and no caching of pages that show data.

use actix_web::HttpResponseBuilder;

/// Only the console's own files; forms post only to the console.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
    img-src 'self' data:; connect-src 'self'; form-action 'self'; \
    frame-ancestors 'none'; base-uri 'none'";

/// A page's headers. `same-origin` rather than `no-referrer`: with no
/// referrer at all, browsers send `Origin: null` on the forms' POSTs, which
/// the origin check then (rightly) refuses.
pub fn page(mut builder: HttpResponseBuilder) -> HttpResponseBuilder {
    builder
        .content_type("text/html; charset=utf-8")
        .insert_header(("Content-Security-Policy", CSP))
        .insert_header(("X-Content-Type-Options", "nosniff"))
        .insert_header(("X-Frame-Options", "DENY"))
        .insert_header(("Referrer-Policy", "same-origin"))
        .insert_header(("Cache-Control", "no-store"));
    builder
}
