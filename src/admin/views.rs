//! Admin JSON shapes (Spanish names at the boundary).

use emisor_store::{ApiKeyRecord, Company, NumberingResolution};
use serde::Serialize;
use utoipa::ToSchema;

#[derive(Serialize, ToSchema)]
pub struct CompanyView {
    pub id_empresa: u64,
    pub nit: String,
    pub dv: u8,
    pub razon_social: String,
    pub nombre_comercial: Option<String>,
    pub direccion: String,
    pub municipio_codigo: String,
    pub municipio_nombre: String,
    pub departamento_codigo: String,
    pub departamento_nombre: String,
    pub email: Option<String>,
    pub telefono: Option<String>,
    pub tipo_organizacion: u8,
    pub regimen: String,
    pub responsabilidades: String,
    pub rate_limit_per_minute: Option<u32>,
    pub limite_documentos_mes: Option<u32>,
    pub webhook_url: Option<String>,
    /// HMAC-SHA256 key of `X-Emisor-Signature`: only in the answer of the
    /// change that made it (the first `webhook_url`); never shown again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub webhook_secret: Option<String>,
    pub demo: bool,
    pub created_at: String,
    /// What runs out (numbering, validity, certificate, plan) and whether
    /// each crossed its `[warnings]` threshold: in the answer of
    /// `GET /admin/companies/{id}` only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alertas: Option<crate::operator::warnings::evaluate::Alertas>,
}

impl From<Company> for CompanyView {
    fn from(c: Company) -> Self {
        CompanyView {
            id_empresa: c.id,
            nit: c.nit,
            dv: c.dv,
            razon_social: c.name,
            nombre_comercial: c.trade_name,
            direccion: c.address,
            municipio_codigo: c.municipality_code,
            municipio_nombre: c.municipality_name,
            departamento_codigo: c.department_code,
            departamento_nombre: c.department_name,
            email: c.email,
            telefono: c.phone,
            tipo_organizacion: c.organization_type,
            regimen: c.tax_regime,
            responsabilidades: c.tax_responsibilities,
            rate_limit_per_minute: c.rate_limit_per_minute,
            limite_documentos_mes: c.monthly_document_limit,
            webhook_url: c.webhook_url,
            webhook_secret: None,
            demo: c.demo,
            created_at: c.created_at.to_rfc3339(),
            alertas: None,
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct ApiKeyView {
    pub id: u64,
    pub id_empresa: u64,
    /// `test` or `live`.
    pub ambiente: String,
    /// First characters of the key; the key itself is never shown again.
    pub prefijo: String,
    pub label: Option<String>,
    /// The user the key belongs to (WebSocket room `user_{id}`); null for a
    /// company key.
    pub user_id: Option<u64>,
    pub created_at: String,
    pub revoked_at: Option<String>,
    /// The full key: only in the answer that created it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

impl From<ApiKeyRecord> for ApiKeyView {
    fn from(k: ApiKeyRecord) -> Self {
        ApiKeyView {
            id: k.id,
            id_empresa: k.company_id,
            ambiente: match k.environment {
                emisor_store::Environment::Test => "test".into(),
                emisor_store::Environment::Live => "live".into(),
            },
            prefijo: k.display_prefix,
            label: k.label,
            user_id: k.user_id,
            created_at: k.created_at.to_rfc3339(),
            revoked_at: k.revoked_at.map(|t| t.to_rfc3339()),
            key: None,
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct ResolutionView {
    pub id: u64,
    pub id_tipo_documento: u8,
    /// Other types numbered from it (exports and T04 with an invoice resolution).
    pub tipos_adicionales: Vec<u8>,
    pub numero_resolucion: String,
    pub fecha_resolucion: String,
    pub prefijo: String,
    pub desde: u64,
    pub hasta: u64,
    pub siguiente: u64,
    pub vigencia_desde: String,
    pub vigencia_hasta: String,
}

impl ResolutionView {
    pub fn new(r: NumberingResolution, next: u64) -> Self {
        ResolutionView {
            id: r.id,
            id_tipo_documento: r.document_type,
            tipos_adicionales: r.also_serves,
            numero_resolucion: r.resolution_number,
            fecha_resolucion: r.resolution_date.to_string(),
            prefijo: r.prefix,
            desde: r.from,
            hasta: r.to,
            siguiente: next,
            vigencia_desde: r.valid_from.to_string(),
            vigencia_hasta: r.valid_to.to_string(),
        }
    }
}
