//! The OpenAPI 3.1 document, generated from the handlers' annotations:
//! `GET /v1/api/openapi.json`, browsable at `/v1/api/docs/`. Every
//! operation names its `operation_id` (function names repeat across
//! modules); the error answers common to a surface come from
//! [`standard_errors`].
//!
//! Assembled beside start-up, above every surface it lists (the API's
//! families, the admin API, health), so no surface imports another to be
//! documented.

mod standard_errors;

use standard_errors::StandardErrors;

use crate::api::facturacion_es::schema::SpanishExamples;

use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::{admin, api, http, ops};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "emisor",
        version = "1.0.0",
        description = "Colombian electronic tax documents: invoices, notes, support documents, POS, payroll, events. Every answer uses the envelope {success, message, data}; errors add error.code and error.details."
    ),
    paths(
        http::key_check::test_key,
        api::clientes::list::list_customers,
        api::clientes::create::create_customer,
        api::clientes::adquiriente::look_up_buyer,
        api::facturacion::create::create,
        api::documentos_soporte::emitir::emitir,
        api::documentos_soporte::nota_ajuste::nota_ajuste,
        api::documentos_soporte::list::list,
        api::documentos_soporte::detail::detail,
        api::documentos_soporte::detail::consultar_tax,
        api::documentos_soporte::detail::pdf,
        api::documentos_soporte::detail::xml,
        api::pos::emitir::emitir,
        api::pos::nota_ajuste::nota_ajuste,
        api::pos::tirilla::tirilla,
        api::pos::arqueo::arqueo,
        api::pos::list::list,
        api::pos::list::detail,
        api::facturacion::status::status,
        api::facturacion::files::xml,
        api::facturacion::files::zip,
        api::facturacion::pdf::pdf,
        api::facturacion::resend::resend,
        api::facturacion::contingency::send_contingency,
        api::facturacion::numbering::next_number,
        api::facturacion::numbering::subscription,
        api::facturacion::list::list,
        api::facturacion_es::generic,
        api::facturacion_es::factura,
        api::facturacion_es::nota_credito,
        api::facturacion_es::nota_debito,
        api::facturacion_es::documento_soporte,
        api::facturacion_es::nota_ajuste_ds,
        api::facturacion_es::pos,
        api::facturacion_es::exportacion,
        api::ws::ws,
        api::eventos::upload::upload,
        api::eventos::register::acknowledgement,
        api::eventos::register::goods_receipt,
        api::eventos::register::express_acceptance,
        api::eventos::register::tacit_acceptance,
        api::eventos::register::claim,
        api::eventos::list::list,
        api::eventos::list::detail,
        api::eventos::list::event_xml,
        api::registry::eligible::eligible,
        api::registry::register::register_event,
        api::registry::history::history,
        api::email::send::send,
        api::email::resend::resend,
        api::email::logs::logs,
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
        admin::operator::socket,
        admin::operator::webhook_log,
        admin::reconciliation::report,
        admin::reconciliation::run,
        admin::credentials::set_software,
        admin::credentials::add_resolution,
        admin::credentials::list_resolutions,
        admin::credentials::import_certificate,
        admin::keys::create,
        admin::keys::list,
        admin::keys::revoke,
        admin::test_set::start,
        admin::test_set::progress,
        admin::backup::take,
        admin::backup::export,
        admin::backup::hold,
        admin::backup::confirm,
        ops::health::healthz,
        ops::health::readyz,
        ops::health::metrics,
    ),
    components(schemas(http::error::ErrorEnvelope)),
    modifiers(&Security, &StandardErrors, &SpanishExamples),
    tags(
        (name = "api-keys", description = "Key check"),
        (name = "clientes", description = "Customers"),
        (name = "facturacion", description = "Unified invoicing API: all ten document types"),
        (name = "facturacion-es", description = "Spanish-named invoicing API: aliases, tax shortcuts, sectors"),
        (name = "documentos-soporte", description = "Support documents (spec 2.10, 4.3)"),
        (name = "pos", description = "POS receipts at the till (spec 2.11, 4.4)"),
        (name = "nomina", description = "Electronic payroll (NominaIndividual 102 and its adjustment 103)"),
        (name = "eventos", description = "Real-time events (WebSocket)"),
        (name = "eventos-recibidos", description = "Received invoices and their events 030-034"),
        (name = "registry", description = "Circulation registry: titles, endorsements, history"),
        (name = "email", description = "Email of documents: send, resend, logs"),
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
