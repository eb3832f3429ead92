//! `POST /registry/registrar-evento`: 035 registration as a title, 036
//! endorsement in property (the endorsee becomes the holder), 037 in
//! guarantee, 038 in procuration, by the legitimate holder.

use actix_web::{post, web, HttpResponse};
use chrono::NaiveDate;
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::api::auth::AuthContext;
use crate::api::error::{ApiError, ApiResult};
use crate::api::eventos::model::event_answer;
use crate::api::json::Json;
use crate::engine::events::EventKind;
use crate::issuing::invoice_events::register::{register, Endorsee, EventRequest};
use crate::state::AppState;

#[derive(Debug, Deserialize, ToSchema)]
pub struct EndorseeBody {
    pub tipo_documento: String,
    pub numero_documento: String,
    pub dv: Option<String>,
    pub nombre: String,
    /// e.g. `ENDOSATARIO_EN_PROPIEDAD`.
    pub calidad_tenedor: Option<String>,
}

#[derive(Debug, Deserialize, Serialize, ToSchema)]
pub struct FinancialConditions {
    #[schema(value_type = Option<f64>)]
    pub valor_nominal_factura: Option<Decimal>,
    #[schema(value_type = Option<f64>)]
    pub porcentaje_anticipo: Option<Decimal>,
    #[schema(value_type = Option<f64>)]
    pub valor_desembolsado: Option<Decimal>,
    #[schema(value_type = Option<f64>)]
    pub tasa_descuento_mensual: Option<Decimal>,
    pub fecha_vencimiento_pago: Option<NaiveDate>,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct RegistryBody {
    pub cufe: String,
    /// `035`-`038` (or `inscripcion`, `endoso_propiedad`, `endoso_garantia`, `endoso_procuracion`).
    pub codigo_evento: String,
    pub endosatario: Option<EndorseeBody>,
    pub condiciones_financieras: Option<FinancialConditions>,
    pub observaciones: Option<String>,
    pub id_empresa: Option<u64>,
}

fn endorsee(b: EndorseeBody) -> Result<Endorsee, ApiError> {
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
    if b.nombre.trim().is_empty() || b.nombre.len() > 450 {
        return Err(ApiError::validation(
            "endosatario.nombre",
            "is required (at most 450 characters)",
        ));
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
        holder_quality: b.calidad_tenedor,
    })
}

#[utoipa::path(post, path = "/v1/api/registry/registrar-evento", operation_id = "registerRegistryEvent", tag = "registry",
    security(("api_key" = [])), request_body = RegistryBody,
    responses((status = 200, description = "success, message, cude_evento; data has the event"),
              (status = 403, description = "not the legitimate holder", body = crate::api::error::ErrorEnvelope),
              (status = 404, description = "unknown CUFE", body = crate::api::error::ErrorEnvelope),
              (status = 409, description = "INVALID_STATE: not eligible, or out of order", body = crate::api::error::ErrorEnvelope),
              (status = 422, description = "unknown codigo_evento, endosatario missing", body = crate::api::error::ErrorEnvelope)))]
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
    };
    let done = register(&state.issuing, &ctx.caller(), &ctx.nit, req).await?;
    let e = &done.event;
    Ok(HttpResponse::Ok().json(serde_json::json!({
        "success": true,
        "message": crate::api::eventos::model::event_message(e),
        "cude_evento": e.cude,
        "data": event_answer(&done.invoice.cufe, e),
    })))
}
