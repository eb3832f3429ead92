//! `POST /registry/registrar-evento`: 035 registration as a title (the
//! first, or the new holder's subsequent one), 036 endorsement in property
//! (the endorsee becomes the holder), 037 in guarantee, 038 in
//! procuration, by the legitimate holder (decisions.md "Registry terms").

use actix_web::{post, web, HttpResponse};
use chrono::NaiveDate;
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::engine::events::terms::{NegotiationInput, RegistrationMode};
use crate::engine::events::EventKind;
use crate::http::auth::AuthContext;
use crate::http::error::{ApiError, ApiResult};
use crate::http::invoice_events::{check_texts, event_answer, event_message, NAME_MAX, NOTE_MAX};
use crate::http::json::Json;
use crate::http::state::AppState;
use crate::issuing::invoice_events::register::{register, Endorsee, EventRequest, RegistryTerms};

#[derive(Debug, Deserialize, ToSchema)]
pub struct EndorseeBody {
    pub tipo_documento: String,
    pub numero_documento: String,
    pub dv: Option<String>,
    #[schema(max_length = 450)]
    pub nombre: String,
    /// e.g. `ENDOSATARIO_EN_PROPIEDAD`.
    #[schema(max_length = 450)]
    pub calidad_tenedor: Option<String>,
}

/// The endorsement's financial conditions, written in the authority's
/// `InformacionNegociacion` (decisions.md "Registry terms").
#[derive(Debug, Deserialize, Serialize, ToSchema)]
pub struct FinancialConditions {
    /// ValorTotalEndoso (default: the invoice's payable amount).
    #[schema(value_type = Option<f64>)]
    pub valor_nominal_factura: Option<Decimal>,
    /// Default 100: PrecioPagarseFEV = valor_nominal_factura × porcentaje_anticipo / 100.
    #[schema(value_type = Option<f64>)]
    pub porcentaje_anticipo: Option<Decimal>,
    /// PrecioPagarseFEV; TasaDescuento = 100 × (1 − valor_desembolsado / valor_nominal_factura), 2 decimals.
    #[schema(value_type = Option<f64>)]
    pub valor_desembolsado: Option<Decimal>,
    /// Written in the event's note.
    #[schema(value_type = Option<f64>)]
    pub tasa_descuento_mensual: Option<Decimal>,
    /// Written in the event's note.
    pub fecha_vencimiento_pago: Option<NaiveDate>,
    /// MedioPago, the authority's payment means code (default `42`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 3)]
    pub medio_pago: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct RegistryBody {
    pub cufe: String,
    /// `035`-`038` (or `inscripcion`, `endoso_propiedad`, `endoso_garantia`, `endoso_procuracion`).
    pub codigo_evento: String,
    pub endosatario: Option<EndorseeBody>,
    pub condiciones_financieras: Option<FinancialConditions>,
    /// 035: `general` (sub-type 361, the default) or `directa` (362); a
    /// holder's subsequent registration is 363 or 364.
    pub tipo_inscripcion: Option<String>,
    /// 036: with the endorser's liability (371, the default) or without (372).
    pub con_responsabilidad: Option<bool>,
    #[schema(max_length = 4000)]
    pub observaciones: Option<String>,
    pub id_empresa: Option<u64>,
}

fn endorsee(b: EndorseeBody) -> Result<Endorsee, ApiError> {
    check_texts(&[
        ("endosatario.nombre", Some(&b.nombre), NAME_MAX),
        (
            "endosatario.calidad_tenedor",
            b.calidad_tenedor.as_deref(),
            NAME_MAX,
        ),
    ])?;
    let number = b.numero_documento.trim().to_string();
    if number.is_empty() || number.len() > 20 || !number.bytes().all(|c| c.is_ascii_alphanumeric())
    {
        return Err(ApiError::validation(
            "endosatario.numero_documento",
            "must be 1 to 20 letters or digits",
        ));
    }
    let id_type = b.tipo_documento.trim().to_string();
    if id_type.is_empty() || id_type.len() > 2 || !id_type.bytes().all(|c| c.is_ascii_digit()) {
        return Err(ApiError::validation(
            "endosatario.tipo_documento",
            "must be an identification type code such as 31 (NIT) or 13 (CC)",
        ));
    }
    if b.nombre.trim().is_empty() {
        return Err(ApiError::validation("endosatario.nombre", "is required"));
    }
    let check_digit = match b.dv.as_deref().map(str::trim).filter(|d| !d.is_empty()) {
        None => None,
        Some(d) => Some(
            d.parse::<u8>()
                .ok()
                .filter(|n| *n <= 9)
                .ok_or_else(|| ApiError::validation("endosatario.dv", "must be one digit"))?,
        ),
    };
    Ok(Endorsee {
        id_type,
        id_number: number,
        check_digit,
        name: b.nombre.trim().to_string(),
        holder_quality: b
            .calidad_tenedor
            .map(|q| q.trim().to_string())
            .filter(|q| !q.is_empty()),
    })
}

/// The registry terms of `body` for `kind`, each only where it applies.
fn registry_terms(kind: EventKind, body: &RegistryBody) -> Result<RegistryTerms, ApiError> {
    let mut terms = RegistryTerms::default();
    match (&body.tipo_inscripcion, kind) {
        (None, _) => {}
        (Some(t), EventKind::Registration) => {
            terms.mode = RegistrationMode::from_api(t).ok_or_else(|| {
                ApiError::validation("tipo_inscripcion", "must be general or directa")
            })?;
        }
        (Some(_), _) => {
            return Err(ApiError::validation(
                "tipo_inscripcion",
                "applies to a registration (035) only",
            ))
        }
    }
    match (body.con_responsabilidad, kind) {
        (None, _) => {}
        (Some(v), EventKind::EndorsementProperty) => terms.with_liability = v,
        (Some(_), _) => {
            return Err(ApiError::validation(
                "con_responsabilidad",
                "applies to an endorsement in property (036) only",
            ))
        }
    }
    if let Some(c) = &body.condiciones_financieras {
        if !kind.is_endorsement() {
            return Err(ApiError::validation(
                "condiciones_financieras",
                "apply to an endorsement (036, 037, 038) only",
            ));
        }
        check_texts(&[(
            "condiciones_financieras.medio_pago",
            c.medio_pago.as_deref(),
            NAME_MAX,
        )])?;
        terms.negotiation = NegotiationInput {
            nominal_value: c.valor_nominal_factura,
            advance_percent: c.porcentaje_anticipo,
            disbursed: c.valor_desembolsado,
            payment_means: c.medio_pago.clone(),
        };
        terms.monthly_rate = c.tasa_descuento_mensual;
        terms.payment_date = c.fecha_vencimiento_pago;
    }
    Ok(terms)
}

#[utoipa::path(post, path = "/v1/api/registry/registrar-evento", operation_id = "registerRegistryEvent", tag = "registry",
    security(("api_key" = [])), request_body = RegistryBody,
    responses((status = 200, description = "success, message, cude_evento; data has the event"),
              (status = 403, description = "not the legitimate holder", body = crate::http::error::ErrorEnvelope),
              (status = 404, description = "unknown CUFE", body = crate::http::error::ErrorEnvelope),
              (status = 409, description = "INVALID_STATE: not eligible (a cash invoice, naming its payment form), out of order, or an endorsement before the holder's own registration", body = crate::http::error::ErrorEnvelope),
              (status = 422, description = "unknown codigo_evento, endosatario missing, financial conditions that contradict each other, a text XML cannot carry or too long", body = crate::http::error::ErrorEnvelope)))]
#[post("/registry/registrar-evento")]
pub async fn register_event(
    state: web::Data<AppState>,
    ctx: AuthContext,
    body: Json<RegistryBody>,
) -> ApiResult<HttpResponse> {
    let body = body.0;
    if let Some(id) = body.id_empresa {
        ctx.ensure_company(id)?;
    }
    let kind = EventKind::registry_from_api(&body.codigo_evento).ok_or_else(|| {
        ApiError::validation(
            "codigo_evento",
            "must be 035 (inscripcion), 036 (endoso_propiedad), 037 (endoso_garantia) or 038 (endoso_procuracion)",
        )
    })?;
    check_texts(&[("observaciones", body.observaciones.as_deref(), NOTE_MAX)])?;
    let registry = registry_terms(kind, &body)?;
    let endorsee = match (kind.is_endorsement(), body.endosatario) {
        (true, None) => {
            return Err(ApiError::validation(
                "endosatario",
                "is required for an endorsement",
            ))
        }
        (true, Some(b)) => Some(endorsee(b)?),
        (false, _) => None,
    };
    let conditions = body
        .condiciones_financieras
        .map(|c| serde_json::to_value(c).map_err(|e| ApiError::Internal(e.to_string())))
        .transpose()?;
    let req = EventRequest {
        kind,
        cufe: body.cufe,
        notes: body.observaciones,
        claim_concept: None,
        endorsee,
        conditions,
        registry,
        received_by: None,
    };
    let done = register(&state.issuing, &ctx.caller(), &ctx.nit, req).await?;
    let e = &done.event;
    Ok(HttpResponse::Ok().json(serde_json::json!({
        "success": true,
        "message": event_message(e),
        "cude_evento": e.cude,
        "data": event_answer(&done.invoice.cufe, e),
    })))
}
