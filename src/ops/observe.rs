//! Outermost middleware: a request id on every request (taken from
//! `X-Request-Id` or generated) and echoed on the response, a tracing span
//! carrying it so every log line of the request has it, one access-log line,
//! and the request metrics by route, method and status. No label takes a
//! value the client chose freely: the route is the matched pattern (or
//! `unmatched`), the method one of HTTP's own (or `other`), the status one
//! the server answered; every label set is kept for the process's life.

use std::time::Instant;

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::middleware::Next;
use tracing::Instrument;

use crate::metrics::{HTTP_LATENCY, HTTP_REQUESTS};

pub const REQUEST_ID: &str = "x-request-id";

fn request_id(req: &ServiceRequest) -> String {
    req.headers()
        .get(REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && v.len() <= 128 && v.bytes().all(|b| b.is_ascii_graphic()))
        .map(str::to_string)
        .unwrap_or_else(|| uuid::Uuid::now_v7().simple().to_string())
}

/// The method as a metrics label: HTTP's standard methods by name, any
/// other (a client may send any token as a method) as `other`.
fn method_label(method: &actix_web::http::Method) -> &'static str {
    use actix_web::http::Method;
    const KNOWN: [(Method, &str); 9] = [
        (Method::GET, "GET"),
        (Method::POST, "POST"),
        (Method::PUT, "PUT"),
        (Method::PATCH, "PATCH"),
        (Method::DELETE, "DELETE"),
        (Method::HEAD, "HEAD"),
        (Method::OPTIONS, "OPTIONS"),
        (Method::CONNECT, "CONNECT"),
        (Method::TRACE, "TRACE"),
    ];
    KNOWN
        .iter()
        .find(|(m, _)| m == method)
        .map_or("other", |(_, name)| name)
}

pub async fn observe(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let started = Instant::now();
    let id = request_id(&req);
    let method = req.method().to_string();
    let method_label = method_label(req.method());
    let path = req.path().to_string();
    let span = tracing::info_span!("request", request_id = %id, %method, %path);
    // Inner middleware answers its refusals as responses (not `Err`), so
    // every request reaches the counting below.
    let mut res = next
        .call(req)
        .instrument(span.clone())
        .await?
        .map_into_boxed_body();
    let status = res.status().as_u16();
    let route = res
        .request()
        .match_pattern()
        .unwrap_or_else(|| "unmatched".to_string());
    let elapsed = started.elapsed();
    metrics::counter!(HTTP_REQUESTS, "route" => route.clone(), "method" => method_label, "status" => status.to_string())
        .increment(1);
    metrics::histogram!(HTTP_LATENCY, "route" => route).record(elapsed.as_secs_f64());
    if let Ok(v) = HeaderValue::from_str(&id) {
        res.headers_mut()
            .insert(HeaderName::from_static(REQUEST_ID), v);
    }
    span.in_scope(|| {
        let micros = elapsed.as_micros() as u64;
        if status >= 500 {
            tracing::error!(target: "emisor::access", status, micros, "request failed");
        } else {
            tracing::info!(target: "emisor::access", status, micros, "request");
        }
    });
    Ok(res)
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::http::Method;

    #[test]
    fn only_standard_methods_are_labels_of_their_own() {
        assert_eq!(method_label(&Method::GET), "GET");
        assert_eq!(method_label(&Method::DELETE), "DELETE");
        let long = "X".repeat(4000);
        for odd in ["PROPFIND", "get", long.as_str()] {
            let m = Method::from_bytes(odd.as_bytes()).unwrap();
            assert_eq!(method_label(&m), "other", "{odd}");
        }
    }
}
