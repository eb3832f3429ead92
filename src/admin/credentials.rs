//! Software registrations, numbering resolutions and the signing certificate.

use actix_web::{get, post, web, HttpResponse};
use base64::Engine;
use chrono::{NaiveDate, Utc};
use emisor_store::{NewResolution, SoftwareKind, SoftwareRegistration, PAYROLL_DOCUMENT_TYPE};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::views::ResolutionView;
use crate::http::envelope;
use crate::http::error::{ApiError, ApiResult};
use crate::http::json::Json;
use crate::http::state::AppState;
use crate::provisioning::certificates::import_pkcs12;
use crate::provisioning::companies::checked_nit;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SoftwareRequest {
    /// `facturacion` or `nomina`.
    pub tipo: String,
    pub software_id: String,
    pub pin: String,
    #[serde(default)]
    pub test_set_id: Option<String>,
    /// NIT of the software provider; default the company itself.
    #[serde(default)]
    pub proveedor_nit: Option<String>,
}

pub fn software_kind(tipo: &str) -> Result<SoftwareKind, ApiError> {
    match tipo {
        "facturacion" | "invoicing" => Ok(SoftwareKind::Invoicing),
        "nomina" | "payroll" => Ok(SoftwareKind::Payroll),
        _ => Err(ApiError::validation(
            "tipo",
            "must be `facturacion` or `nomina`",
        )),
    }
}

#[derive(Serialize, ToSchema)]
pub struct SoftwareView {
    pub tipo: String,
    pub software_id: String,
    pub test_set_id: Option<String>,
    pub proveedor_nit: String,
}

#[utoipa::path(post, path = "/admin/companies/{id}/software", operation_id = "setSoftware", tag = "admin", security(("admin_token" = [])),
    params(("id" = u64, Path, description = "id_empresa")), request_body = SoftwareRequest,
    responses((status = 200, description = "registered", body = inline(envelope::Envelope<SoftwareView>)),
              (status = 404, description = "no such company", body = crate::http::error::ErrorEnvelope),
              (status = 422, description = "invalid", body = crate::http::error::ErrorEnvelope)))]
#[post("/companies/{id}/software")]
pub async fn set_software(
    state: web::Data<AppState>,
    id: web::Path<u64>,
    body: Json<SoftwareRequest>,
) -> ApiResult<HttpResponse> {
    let view = register_software(&state, id.into_inner(), body.0).await?;
    Ok(envelope::ok("Software registrado", view))
}

/// Registers a company's invoicing or payroll software (the admin API's
/// and the console's).
pub async fn register_software(
    state: &AppState,
    id: u64,
    r: SoftwareRequest,
) -> ApiResult<SoftwareView> {
    let kind = software_kind(&r.tipo)?;
    if r.software_id.trim().is_empty() {
        return Err(ApiError::validation("software_id", "is required"));
    }
    if r.pin.trim().is_empty() {
        return Err(ApiError::validation("pin", "is required"));
    }
    let view = state
        .store
        .blocking(move |s| -> ApiResult<SoftwareView> {
            let company = s
                .company(id)?
                .ok_or_else(|| ApiError::NotFound("company".into()))?;
            let provider_nit = r.proveedor_nit.clone().unwrap_or(company.nit.clone());
            let provider_dv = checked_nit(&provider_nit, None)?;
            s.put_software(SoftwareRegistration {
                company_id: id,
                kind,
                software_id: r.software_id.trim().to_string(),
                pin: r.pin.trim().into(),
                test_set_id: r.test_set_id.clone(),
                provider_nit: provider_nit.clone(),
                provider_dv,
                registered_at: Utc::now(),
            })?;
            Ok(SoftwareView {
                tipo: r.tipo,
                software_id: r.software_id,
                test_set_id: r.test_set_id,
                proveedor_nit: provider_nit,
            })
        })
        .await??;
    state.sync_authority(id).await;
    Ok(view)
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ResolutionRequest {
    /// 1-10 (spec 2.2) or 11 for payroll.
    pub id_tipo_documento: u8,
    pub numero_resolucion: String,
    pub fecha_resolucion: NaiveDate,
    pub prefijo: String,
    pub desde: u64,
    pub hasta: u64,
    pub vigencia_desde: NaiveDate,
    pub vigencia_hasta: NaiveDate,
    /// Technical key (ClTec) of the range; required for CUFE-coded types.
    #[serde(default)]
    pub clave_tecnica: Option<String>,
    /// Other invoice types numbered from the same range: the authority
    /// numbers invoices (1), exports (6) and T04 (8) from one invoice
    /// resolution, so an invoice resolution may serve 6 and 8 too.
    #[serde(default)]
    pub tipos_adicionales: Vec<u8>,
}

/// The types that share one authority range: its validator maps document
/// types 02 (export) and 04 (T04) to 01 when it looks up the range of an
/// invoice (protocol.md 7.5c, `ValidateNumberingRange`).
const INVOICE_RANGE_TYPES: [u8; 3] = [1, 6, 8];

impl ResolutionRequest {
    pub fn into_new(self) -> Result<NewResolution, ApiError> {
        if !(1..=PAYROLL_DOCUMENT_TYPE).contains(&self.id_tipo_documento) {
            return Err(ApiError::validation("id_tipo_documento", "must be 1 to 11"));
        }
        if self.prefijo.len() > 4 || !self.prefijo.chars().all(|c| c.is_ascii_alphanumeric()) {
            return Err(ApiError::validation("prefijo", "up to 4 letters or digits"));
        }
        if self.desde == 0 || self.desde > self.hasta {
            return Err(ApiError::validation(
                "desde",
                "must be at least 1 and not above `hasta`",
            ));
        }
        if self.vigencia_desde > self.vigencia_hasta {
            return Err(ApiError::validation(
                "vigencia_hasta",
                "must not be before `vigencia_desde`",
            ));
        }
        let mut also_serves = Vec::new();
        for t in self.tipos_adicionales {
            let shares = INVOICE_RANGE_TYPES.contains(&t)
                && INVOICE_RANGE_TYPES.contains(&self.id_tipo_documento);
            if !shares {
                return Err(ApiError::validation(
                    "tipos_adicionales",
                    "only invoices (1), exports (6) and T04 (8) share a resolution",
                ));
            }
            if t != self.id_tipo_documento && !also_serves.contains(&t) {
                also_serves.push(t);
            }
        }
        let key = self.clave_tecnica.unwrap_or_default().trim().to_lowercase();
        // Invoices (1, 6) and T04 (8) carry a CUFE computed with the key.
        if INVOICE_RANGE_TYPES.contains(&self.id_tipo_documento) && key.is_empty() {
            return Err(ApiError::validation(
                "clave_tecnica",
                "is required for this document type",
            ));
        }
        Ok(NewResolution {
            document_type: self.id_tipo_documento,
            also_serves,
            resolution_number: self.numero_resolucion,
            resolution_date: self.fecha_resolucion,
            prefix: self.prefijo,
            from: self.desde,
            to: self.hasta,
            valid_from: self.vigencia_desde,
            valid_to: self.vigencia_hasta,
            technical_key: key.into(),
        })
    }
}

#[utoipa::path(post, path = "/admin/companies/{id}/resoluciones", operation_id = "addResolution", tag = "admin", security(("admin_token" = [])),
    params(("id" = u64, Path, description = "id_empresa")), request_body = ResolutionRequest,
    responses((status = 201, description = "added", body = inline(envelope::Envelope<ResolutionView>)),
              (status = 404, description = "no such company", body = crate::http::error::ErrorEnvelope),
              (status = 422, description = "invalid", body = crate::http::error::ErrorEnvelope)))]
#[post("/companies/{id}/resoluciones")]
pub async fn add_resolution(
    state: web::Data<AppState>,
    id: web::Path<u64>,
    body: Json<ResolutionRequest>,
) -> ApiResult<HttpResponse> {
    let new = body.0.into_new()?;
    let st = state.clone();
    let id = id.into_inner();
    let view = st
        .store
        .blocking(move |s| -> ApiResult<ResolutionView> {
            s.company(id)?
                .ok_or_else(|| ApiError::NotFound("company".into()))?;
            let r = s.add_resolution(id, new)?;
            let next = s.next_number(&r)?;
            Ok(ResolutionView::new(r, next))
        })
        .await??;
    state.sync_authority(id).await;
    Ok(envelope::created("Resolución agregada", view))
}

#[utoipa::path(get, path = "/admin/companies/{id}/resoluciones", operation_id = "listResolutions", tag = "admin", security(("admin_token" = [])),
    params(("id" = u64, Path, description = "id_empresa")),
    responses((status = 200, description = "the company's resolutions", body = inline(envelope::Envelope<Vec<ResolutionView>>))))]
#[get("/companies/{id}/resoluciones")]
pub async fn list_resolutions(
    state: web::Data<AppState>,
    id: web::Path<u64>,
) -> ApiResult<HttpResponse> {
    let st = state.clone();
    let id = id.into_inner();
    let views = st
        .store
        .blocking(move |s| -> ApiResult<Vec<ResolutionView>> {
            s.company(id)?
                .ok_or_else(|| ApiError::NotFound("company".into()))?;
            s.resolutions(id)?
                .into_iter()
                .map(|r| {
                    let next = s.next_number(&r)?;
                    Ok(ResolutionView::new(r, next))
                })
                .collect()
        })
        .await??;
    Ok(envelope::ok("Resoluciones", views))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CertificateRequest {
    /// The PKCS#12 (.p12/.pfx) file, base64.
    pub pkcs12_base64: String,
    pub password: String,
}

#[derive(Serialize, ToSchema)]
pub struct CertificateView {
    pub sujeto: String,
    pub emisor: String,
    pub serial: String,
    pub valido_desde: String,
    pub valido_hasta: String,
}

#[utoipa::path(post, path = "/admin/companies/{id}/certificado", operation_id = "importCertificate", tag = "admin", security(("admin_token" = [])),
    params(("id" = u64, Path, description = "id_empresa")), request_body = CertificateRequest,
    responses((status = 200, description = "imported", body = inline(envelope::Envelope<CertificateView>)),
              (status = 404, description = "no such company", body = crate::http::error::ErrorEnvelope),
              (status = 422, description = "unreadable, expired or not yet valid", body = crate::http::error::ErrorEnvelope)))]
#[post("/companies/{id}/certificado")]
pub async fn import_certificate(
    state: web::Data<AppState>,
    id: web::Path<u64>,
    body: Json<CertificateRequest>,
) -> ApiResult<HttpResponse> {
    let r = body.0;
    let der = base64::engine::general_purpose::STANDARD
        .decode(r.pkcs12_base64.trim())
        .map_err(|_| ApiError::validation("pkcs12_base64", "is not base64"))?;
    let view = import_certificate_der(&state, id.into_inner(), der, r.password).await?;
    Ok(envelope::ok("Certificado importado", view))
}

/// Checks and stores a company's PKCS#12 certificate (the admin API's and
/// the console's upload).
pub async fn import_certificate_der(
    state: &AppState,
    id: u64,
    der: Vec<u8>,
    password: String,
) -> ApiResult<CertificateView> {
    let rec = state
        .store
        .blocking(move |s| import_pkcs12(s, id, &der, &password, Utc::now()))
        .await??;
    Ok(CertificateView {
        sujeto: rec.subject,
        emisor: rec.issuer,
        serial: rec.serial,
        valido_desde: rec.not_before.to_rfc3339(),
        valido_hasta: rec.not_after.to_rfc3339(),
    })
}
