//! The OpenAPI 3.1 document, generated from the handlers' annotations:
//! `GET /v1/api/openapi.json`, browsable at `/v1/api/docs/`. Every
//! operation names its `operation_id` (function names repeat across
//! modules); the error answers common to a surface come from
//! [`standard_errors`].

mod standard_errors;

use standard_errors::StandardErrors;

use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::{admin, api, ops};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "emisor",
        version = "1.0.0",
        description = "Colombian electronic tax documents: invoices, notes, support documents, POS, payroll, events. Every answer uses the envelope {success, message, data}; errors add error.code and error.details."
    ),
    paths(
        api::key_check::test_key,
        api::clientes::list::list_customers,
        api::clientes::create::create_customer,
        api::facturacion::create::create,
        api::facturacion::status::status,
        api::facturacion::files::xml,
        api::facturacion::files::zip,
        api::facturacion::pdf::pdf,
        api::facturacion::resend::resend,
        api::facturacion::contingency::send_contingency,
        api::facturacion::numbering::next_number,
        api::facturacion::numbering::subscription,
        api::ws::ws,
        api::nomina::enviar::enviar,
        api::nomina::ajuste::ajuste,
        api::nomina::estado::estado,
        api::nomina::list::listar,
        api::nomina::detail::detail,
        api::nomina::detail::xml,
        api::nomina::detail::zip,
        api::nomina::detail::pdf,
        admin::companies::create,
        admin::companies::list,
        admin::companies::get,
        admin::companies::update,
        admin::companies::webhook_log,
        admin::credentials::set_software,
        admin::credentials::add_resolution,
        admin::credentials::list_resolutions,
        admin::credentials::import_certificate,
        admin::keys::create,
        admin::keys::list,
        admin::keys::revoke,
        admin::test_set::start,
        admin::test_set::progress,
        ops::health::healthz,
        ops::health::readyz,
        ops::health::metrics,
    ),
    components(schemas(api::error::ErrorEnvelope)),
    modifiers(&Security, &StandardErrors),
    tags(
        (name = "api-keys", description = "Key check"),
        (name = "clientes", description = "Customers"),
        (name = "facturacion", description = "Unified invoicing API: all ten document types"),
        (name = "nomina", description = "Electronic payroll (NominaIndividual 102 and its adjustment 103)"),
        (name = "eventos", description = "Real-time events (WebSocket)"),
        (name = "admin", description = "Provisioning (admin token)"),
        (name = "operations", description = "Health and metrics"),
    )
)]
pub struct ApiDoc;

struct Security;

impl Modify for Security {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "api_key",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::new("X-Api-Key"))),
        );
        components.add_security_scheme(
            "admin_token",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}
