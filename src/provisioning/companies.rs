//! Company creation: NIT and check digit, the fields documents need.

use emisor_store::{Company, NewCompany, Store};
use serde::Deserialize;
use utoipa::ToSchema;

use super::{invalid, ProvisioningError};
use crate::engine::codes::nit_check_digit;
use crate::engine::limits;
use crate::engine::validate::text_problem;

/// A company as the admin API and CLI take it (Spanish JSON names).
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CompanyRequest {
    /// NIT without check digit, dots or dashes.
    pub nit: String,
    /// Check digit; computed when absent, refused when it disagrees.
    #[serde(default)]
    pub dv: Option<u8>,
    pub razon_social: String,
    #[serde(default)]
    pub nombre_comercial: Option<String>,
    #[serde(default)]
    pub direccion: Option<String>,
    #[serde(default)]
    pub municipio_codigo: Option<String>,
    #[serde(default)]
    pub municipio_nombre: Option<String>,
    #[serde(default)]
    pub departamento_codigo: Option<String>,
    #[serde(default)]
    pub departamento_nombre: Option<String>,
    #[serde(default)]
    pub email: Option<String>,
    #[serde(default)]
    pub telefono: Option<String>,
    /// `1` legal entity (default), `2` natural person.
    #[serde(default)]
    pub tipo_organizacion: Option<u8>,
    /// `48` VAT responsible (default), `49` not responsible.
    #[serde(default)]
    pub regimen: Option<String>,
    /// Fiscal responsibilities, default `R-99-PN`.
    #[serde(default)]
    pub responsabilidades: Option<String>,
    #[serde(default)]
    pub rate_limit_per_minute: Option<u32>,
    #[serde(default)]
    pub limite_documentos_mes: Option<u32>,
    /// Provision as a sandbox company like the demo one.
    #[serde(default)]
    pub demo: bool,
}

/// Checks the NIT and returns its check digit.
pub fn checked_nit(nit: &str, dv: Option<u8>) -> Result<u8, ProvisioningError> {
    if nit.is_empty() || nit.len() > 15 || !nit.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid(
            "nit",
            "must be 1 to 15 digits, without check digit",
        ));
    }
    let computed = nit_check_digit(nit).ok_or_else(|| invalid("nit", "not a valid NIT"))?;
    match dv {
        Some(given) if given != computed => Err(invalid(
            "dv",
            format!("check digit {given} does not match NIT {nit} (expected {computed})"),
        )),
        _ => Ok(computed),
    }
}

/// The issuer's text goes into every document it signs: characters XML
/// cannot carry, or a field longer than a reader would ever print, would
/// make every later invoice fail instead of this request.
fn check_texts(req: &CompanyRequest) -> Result<(), ProvisioningError> {
    let texts = [
        (
            "razon_social",
            Some(req.razon_social.as_str()),
            limits::NAME,
        ),
        (
            "nombre_comercial",
            req.nombre_comercial.as_deref(),
            limits::NAME,
        ),
        ("direccion", req.direccion.as_deref(), limits::NAME),
        ("municipio_codigo", req.municipio_codigo.as_deref(), 10),
        ("municipio_nombre", req.municipio_nombre.as_deref(), 100),
        (
            "departamento_codigo",
            req.departamento_codigo.as_deref(),
            10,
        ),
        (
            "departamento_nombre",
            req.departamento_nombre.as_deref(),
            100,
        ),
        ("email", req.email.as_deref(), 254),
        ("telefono", req.telefono.as_deref(), 50),
        ("regimen", req.regimen.as_deref(), 10),
        ("responsabilidades", req.responsabilidades.as_deref(), 100),
    ];
    for (field, value, max) in texts {
        if let Some(problem) = value.and_then(|v| text_problem(v, max)) {
            return Err(invalid(field, problem));
        }
    }
    Ok(())
}

pub fn create_company(
    store: &dyn Store,
    req: &CompanyRequest,
) -> Result<Company, ProvisioningError> {
    let dv = checked_nit(&req.nit, req.dv)?;
    let name = req.razon_social.trim();
    if name.is_empty() {
        return Err(invalid("razon_social", "is required"));
    }
    let organization_type = req.tipo_organizacion.unwrap_or(1);
    if !matches!(organization_type, 1 | 2) {
        return Err(invalid("tipo_organizacion", "must be 1 or 2"));
    }
    // As `PATCH /admin/companies/{id}` says: a limit of 0 locks every key out.
    if req.rate_limit_per_minute == Some(0) {
        return Err(invalid("rate_limit_per_minute", "must be at least 1"));
    }
    check_texts(req)?;
    let text = |v: &Option<String>| v.clone().unwrap_or_default();
    let company = store.create_company(NewCompany {
        nit: req.nit.clone(),
        dv,
        name: name.to_string(),
        trade_name: req.nombre_comercial.clone(),
        address: text(&req.direccion),
        municipality_code: text(&req.municipio_codigo),
        municipality_name: text(&req.municipio_nombre),
        department_code: text(&req.departamento_codigo),
        department_name: text(&req.departamento_nombre),
        email: req.email.clone(),
        phone: req.telefono.clone(),
        organization_type,
        tax_regime: req.regimen.clone().unwrap_or_else(|| "48".into()),
        tax_responsibilities: req
            .responsabilidades
            .clone()
            .unwrap_or_else(|| "R-99-PN".into()),
        rate_limit_per_minute: req.rate_limit_per_minute,
        monthly_document_limit: req.limite_documentos_mes,
        demo: req.demo,
    })?;
    Ok(company)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nit_check_digit_is_computed_and_checked() {
        assert_eq!(checked_nit("800197268", None).ok(), Some(4));
        assert_eq!(checked_nit("800197268", Some(4)).ok(), Some(4));
        assert!(checked_nit("800197268", Some(5)).is_err());
        assert!(checked_nit("80019-7268", None).is_err());
        assert!(checked_nit("", None).is_err());
    }

    #[test]
    fn a_rate_limit_of_zero_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = emisor_store::SledStore::open(dir.path(), crate::testing::test_keys()).unwrap();
        let req = |limit| CompanyRequest {
            nit: "900123456".into(),
            razon_social: "Limitada S.A.S.".into(),
            rate_limit_per_minute: limit,
            ..Default::default()
        };
        match create_company(&store, &req(Some(0))) {
            Err(ProvisioningError::Invalid { field, .. }) => {
                assert_eq!(field, "rate_limit_per_minute")
            }
            other => panic!("{other:?}"),
        }
        assert!(create_company(&store, &req(Some(1))).is_ok());
    }

    #[test]
    fn text_that_every_document_would_carry_is_checked() {
        let dir = tempfile::tempdir().unwrap();
        let store = emisor_store::SledStore::open(dir.path(), crate::testing::test_keys()).unwrap();
        let base = CompanyRequest {
            nit: "900123456".into(),
            razon_social: "Textos S.A.S.".into(),
            ..Default::default()
        };
        let refused = |req: CompanyRequest| match create_company(&store, &req) {
            Err(ProvisioningError::Invalid { field, .. }) => field,
            other => panic!("{other:?}"),
        };
        let bad_address = CompanyRequest {
            direccion: Some("Calle \u{FFFE}".into()),
            ..base.clone()
        };
        assert_eq!(refused(bad_address), "direccion");
        let long_name = CompanyRequest {
            razon_social: "x".repeat(100_000),
            ..base.clone()
        };
        assert_eq!(refused(long_name), "razon_social");
        let store_api: &dyn Store = &store;
        assert!(store_api.companies().unwrap().is_empty(), "nothing written");
        assert!(create_company(&store, &base).is_ok());
    }
}
