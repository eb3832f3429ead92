//! The error answers that the middleware and the shared extractors can give
//! on any keyed or admin operation, documented once here rather than in
//! every handler's attribute. They are response components with the error
//! envelope as body; an operation that documents one of these statuses
//! itself, with its own description, keeps it.

use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::{
    ContentBuilder, ObjectBuilder, OpenApi, Ref, RefOr, Response, ResponseBuilder, Type,
};
use utoipa::Modify;

use crate::http::BASE;

/// Response components: name, description.
const RESPONSES: &[(&str, &str)] = &[
    (
        "Unauthorized",
        "MISSING_API_KEY or INVALID_API_KEY: no `X-Api-Key` header (or, on the WebSocket handshake only, `api_key` query parameter), or an unknown, malformed or revoked key",
    ),
    (
        "Forbidden",
        "FORBIDDEN: the `id_empresa` given (in the query on any route, or in the body) is not the key's company",
    ),
    (
        "NotFound",
        "NOT_FOUND: something the request names (a path id, a referenced document, a company) does not exist",
    ),
    (
        "ValidationError",
        "VALIDATION_ERROR: a field or parameter is missing or out of its set; `error.details` names it (on keyed routes this includes a query `id_empresa` that is not an integer, and a query `ambiente` that is not the key's environment)",
    ),
    (
        "RateLimited",
        "RATE_LIMITED: the key's requests per minute are used up; `Retry-After` says in how many seconds to try again",
    ),
    (
        "AdminUnauthorized",
        "MISSING_ADMIN_TOKEN or INVALID_ADMIN_TOKEN: no `Authorization: Bearer` token, or not the admin token",
    ),
    (
        "MalformedJson",
        "MALFORMED_JSON: the body is not one JSON object, a field has the wrong JSON type, or an object holds the same key twice",
    ),
    ("PayloadTooLarge", "PAYLOAD_TOO_LARGE: the body is over 1 MiB"),
    (
        "RequestTimeout",
        "REQUEST_TIMEOUT: the body did not arrive in full within `[server] body_timeout_s` (30 s by default); the connection is closed",
    ),
    (
        "AdminRateLimited",
        "RATE_LIMITED: too many wrong admin tokens from this address in the last minute; every admin request from it waits `Retry-After` seconds",
    ),
];

/// Under `/v1/api`: key check, rate limit and `id_empresa` check run first.
const KEYED: &[(&str, &str)] = &[
    ("401", "Unauthorized"),
    ("403", "Forbidden"),
    ("404", "NotFound"),
    ("422", "ValidationError"),
    ("429", "RateLimited"),
];

/// Under `/admin`: the token check runs first (an address that sent too
/// many wrong tokens waits). No per-company check there, so no 403.
const ADMIN: &[(&str, &str)] = &[
    ("401", "AdminUnauthorized"),
    ("404", "NotFound"),
    ("422", "ValidationError"),
    ("429", "AdminRateLimited"),
];

/// Wherever a body is read.
const BODY: &[(&str, &str)] = &[
    ("400", "MalformedJson"),
    ("408", "RequestTimeout"),
    ("413", "PayloadTooLarge"),
];

pub struct StandardErrors;

impl Modify for StandardErrors {
    fn modify(&self, openapi: &mut OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        for (name, description) in RESPONSES {
            components
                .responses
                .insert((*name).to_string(), RefOr::T(response(name, description)));
        }
        for (path, item) in openapi.paths.paths.iter_mut() {
            // The operator's socket sits under `/v1/api` but takes the admin token.
            let admin = path.starts_with("/admin/") || path == crate::admin::operator::PATH;
            let surface = if admin {
                ADMIN
            } else if path.starts_with(&format!("{BASE}/")) {
                KEYED
            } else {
                continue;
            };
            let operations = [
                &mut item.get,
                &mut item.put,
                &mut item.post,
                &mut item.delete,
                &mut item.patch,
            ];
            for op in operations.into_iter().flatten() {
                let body = if op.request_body.is_some() { BODY } else { &[] };
                for (status, name) in surface.iter().chain(body) {
                    op.responses
                        .responses
                        .entry((*status).to_string())
                        .or_insert_with(|| RefOr::Ref(Ref::from_response_name(*name)));
                }
            }
        }
    }
}

fn response(name: &str, description: &str) -> Response {
    let body = ContentBuilder::new()
        .schema(Some(Ref::from_schema_name("ErrorEnvelope")))
        .build();
    let mut r = ResponseBuilder::new()
        .description(description)
        .content("application/json", body);
    if name == "RateLimited" || name == "AdminRateLimited" {
        let seconds = ObjectBuilder::new().schema_type(Type::Integer).build();
        r = r.header(
            "Retry-After",
            HeaderBuilder::new()
                .schema(seconds)
                .description(Some("seconds until the key's window resets"))
                .build(),
        );
    }
    r.build()
}
