//! Spanish-named invoicing API (spec 2.9, 4.2, 9.2): `/facturacion-es/*`, a
//! translation onto the unified API's document and issuing path (rate
//! limit, idempotency lock, numbering, signer, transmitter, queue, events).
//!
//! - `model`: the body read under every alias, with the caller's spelling;
//! - `mapping`: the unified document plus this API's own data, declared
//!   totals checked;
//! - `translator`: stored requests rebuilt after a crash or for a resend;
//! - `answer`: the Spanish answer.

pub mod answer;
pub mod examples;
pub mod mapping;
pub mod model;
pub mod names;
mod reader;
pub mod schema;
pub mod translator;

use actix_web::{post, web, HttpResponse};
use serde_json::Value;

use self::answer::AnswerFacts;
use self::model::Route;
use crate::http::auth::AuthContext;
use crate::http::error::{ApiError, ApiResult, ErrorEnvelope};
use crate::http::json::Json;
use crate::http::state::AppState;
use crate::issuing::issue::submit_recording;
use crate::issuing::reference::{refuse, refuse_unknown_code};

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(generic)
        .service(generic_no_slash)
        .service(factura)
        .service(nota_credito)
        .service(nota_debito)
        .service(documento_soporte)
        .service(nota_ajuste_ds)
        .service(pos)
        .service(exportacion);
}

/// A refusal worded in Spanish where the engine's words are known.
fn spanish(e: ApiError) -> ApiError {
    match e {
        ApiError::Validation { details, .. } => ApiError::validation_list(
            details
                .into_iter()
                .map(|d| {
                    let m = names::spanish_message(&d.message);
                    crate::http::error::FieldError::new(d.field, m)
                })
                .collect(),
        ),
        other => other,
    }
}

async fn issue(
    state: web::Data<AppState>,
    ctx: AuthContext,
    mut body: Value,
    route: Route,
) -> ApiResult<HttpResponse> {
    let mut parsed = model::read(&body, route, Some(ctx.environment))?;
    let issuing = state.issuing.clone();
    if parsed.request.customer.completar_adquiriente {
        complete_buyer(&state, &ctx, &mut parsed, &mut body).await?;
    }
    let request = match mapping::to_request(parsed) {
        Ok(request) => request,
        Err(refused) => {
            return Err(spanish(refuse(&issuing, ctx.owner(), refused).await.into()));
        }
    };
    let facts = AnswerFacts::of(&request.document);
    // A note's original is named as sent (by id, by its CUFE, or both);
    // the request is stored with the id issuing found.
    let stored = |original| translator::stored_request(route, original, body);
    let issued = submit_recording(&issuing, ctx.caller(), request, stored)
        .await
        .map_err(|e| spanish(e.into()))?;
    Ok(answer::response(issued, &facts))
}

/// `cliente.completar_adquiriente` (`crate::api::invoice_request::buyer`):
/// refused on a POS receipt; otherwise, once the body is valid in every
/// other respect, the buyer's missing name and email filled from the
/// authority, in the request and in the stored body, under the caller's
/// names.
async fn complete_buyer(
    state: &AppState,
    ctx: &AuthContext,
    parsed: &mut model::Parsed,
    body: &mut Value,
) -> ApiResult<()> {
    use crate::api::invoice_request::buyer;
    let names = parsed.names.clone();
    let object = names.spanish("customer");
    let key = |unified: &str, main: &str| {
        names
            .spanish(unified)
            .strip_prefix(&format!("{object}."))
            .map(str::to_string)
            .unwrap_or_else(|| main.to_string())
    };
    let (name, email) = (
        key("customer.name", "nombre"),
        key("customer.email", "correo"),
    );
    let at = buyer::Fields {
        object: &object,
        name: &name,
        email: &email,
        flag: "completar_adquiriente",
    };
    if parsed.kind == crate::engine::model::DocumentKind::Pos {
        return Err(ApiError::validation(
            format!("{object}.completar_adquiriente"),
            "no se acepta en un documento POS: indique el nombre y el correo del comprador",
        ));
    }
    match mapping::to_request(parsed.clone()) {
        Err(refused) => {
            return Err(spanish(
                refuse(&state.issuing, ctx.owner(), refused).await.into(),
            ));
        }
        // A note's original named by an unknown CUFE is refused before the
        // authority is asked.
        Ok(request) => refuse_unknown_code(&state.issuing, ctx.owner(), &request)
            .await
            .map_err(|e| spanish(e.into()))?,
    }
    buyer::complete(state, ctx, &mut parsed.request.customer, &buyer::UNIFIED)
        .await
        .map_err(|e| names.translate(e))?;
    buyer::write_into(body, &at, &parsed.request.customer);
    Ok(())
}

macro_rules! spanish_route {
    ($name:ident, $path:literal, $doc_path:literal, $route:expr, $op:literal, $summary:literal) => {
        #[utoipa::path(post, path = $doc_path, operation_id = $op, tag = "facturacion-es",
            summary = $summary,
            security(("api_key" = [])),
            request_body = schema::SpanishRequest,
            responses(
                (status = 200, description = "emitido (y transmitido si transmitir no es false)", body = inline(crate::http::envelope::Envelope<answer::SpanishAnswer>)),
                (status = 202, description = "en cola (asincrono: true; nunca en /pos)", body = answer::QueuedSpanishEnvelope),
                (status = 409, description = "DUPLICATE_REFERENCE / DUPLICATE_IN_PROGRESS / DUPLICATE_PAYLOAD", body = ErrorEnvelope),
                (status = 503, description = "envío en producción con tax no disponible", body = ErrorEnvelope)))]
        #[post($path)]
        pub async fn $name(
            state: web::Data<AppState>,
            ctx: AuthContext,
            body: Json<Value>,
        ) -> ApiResult<HttpResponse> {
            issue(state, ctx, body.0, $route).await
        }
    };
}

spanish_route!(
    generic,
    "/facturacion-es/",
    "/v1/api/facturacion-es/",
    Route::Generic,
    "issueSpanish",
    "Cualquier documento; el tipo en `tipo`"
);
spanish_route!(factura, "/facturacion-es/factura", "/v1/api/facturacion-es/factura", Route::Factura, "issueSpanishInvoice", "Factura electrónica (sectores salud y transporte, combustibles; exportación con tipo_documento 02)");
spanish_route!(
    nota_credito,
    "/facturacion-es/nota-credito",
    "/v1/api/facturacion-es/nota-credito",
    Route::NotaCredito,
    "issueSpanishCreditNote",
    "Nota crédito (documento_referencia o cufe_factura_referencia)"
);
spanish_route!(
    nota_debito,
    "/facturacion-es/nota-debito",
    "/v1/api/facturacion-es/nota-debito",
    Route::NotaDebito,
    "issueSpanishDebitNote",
    "Nota débito (documento_referencia o cufe_factura_referencia)"
);
spanish_route!(
    documento_soporte,
    "/facturacion-es/documento-soporte",
    "/v1/api/facturacion-es/documento-soporte",
    Route::DocumentoSoporte,
    "issueSpanishSupportDocument",
    "Documento soporte"
);
spanish_route!(
    nota_ajuste_ds,
    "/facturacion-es/nota-ajuste-ds",
    "/v1/api/facturacion-es/nota-ajuste-ds",
    Route::NotaAjusteDs,
    "issueSpanishSupportAdjustment",
    "Nota de ajuste al documento soporte"
);
spanish_route!(
    pos,
    "/facturacion-es/pos",
    "/v1/api/facturacion-es/pos",
    Route::Pos,
    "issueSpanishPos",
    "Documento equivalente POS (siempre síncrono)"
);
spanish_route!(
    exportacion,
    "/facturacion-es/exportacion",
    "/v1/api/facturacion-es/exportacion",
    Route::Exportacion,
    "issueSpanishExport",
    "Factura de exportación"
);

/// `POST /facturacion-es` without the trailing slash: the generic route.
#[post("/facturacion-es")]
pub async fn generic_no_slash(
    state: web::Data<AppState>,
    ctx: AuthContext,
    body: Json<Value>,
) -> ApiResult<HttpResponse> {
    issue(state, ctx, body.0, Route::Generic).await
}
