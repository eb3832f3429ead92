//! Everything a company needs to issue a document of one type, loaded from
//! the store and checked, then turned into the engine's `IssuerContext`.
//! A missing piece is a 422 naming it, before any number is taken.

use chrono::{DateTime, FixedOffset, NaiveDate};
use emisor_store::{
    CertificateRecord, Company, Environment, NumberingResolution, SoftwareKind,
    SoftwareRegistration, Store,
};

use crate::api::error::ApiError;
use crate::engine::model::{
    Address, IssuerContext, OrganizationType, Party, Resolution, Software, TaxSchemeRef,
};

/// The stored facts behind one document type of one company.
#[derive(Debug, Clone)]
pub struct IssuerSetup {
    pub company: Company,
    pub software: SoftwareRegistration,
    pub resolution: NumberingResolution,
    pub certificate: CertificateRecord,
}

/// Loads company, software, the resolution (the one with id `resolution`,
/// or the one valid on `date` with numbers left), and the certificate.
pub fn load_setup(
    store: &dyn Store,
    company_id: u64,
    document_type: u8,
    date: NaiveDate,
    resolution: Option<u64>,
) -> Result<IssuerSetup, ApiError> {
    let company = store
        .company(company_id)?
        .ok_or_else(|| ApiError::NotFound("company".into()))?;
    let software = store
        .software(company_id, SoftwareKind::Invoicing)?
        .ok_or_else(|| {
            ApiError::validation(
                "software",
                "the company has no registered invoicing software",
            )
        })?;
    let resolution = match resolution {
        Some(id) => store
            .resolutions(company_id)?
            .into_iter()
            .find(|r| r.id == id),
        None => store.active_resolution(company_id, document_type, date)?,
    };
    let resolution = resolution.ok_or_else(|| {
            ApiError::validation(
                "resolucion",
                format!(
                    "no numbering resolution for document type {document_type} valid on {date} with numbers left"
                ),
            )
        })?;
    let certificate = store.certificate(company_id)?.ok_or_else(|| {
        ApiError::validation("certificado", "the company has no signing certificate")
    })?;
    Ok(IssuerSetup {
        company,
        software,
        resolution,
        certificate,
    })
}

/// The company as the issuing party of its documents.
pub fn company_party(c: &Company) -> Party {
    Party {
        id_type: "31".into(),
        id_number: c.nit.clone(),
        check_digit: Some(c.dv),
        name: c.name.clone(),
        trade_name: c.trade_name.clone(),
        email: c.email.clone(),
        phone: c.phone.clone(),
        address: Some(Address {
            line: c.address.clone(),
            municipality_code: c.municipality_code.clone(),
            municipality_name: c.municipality_name.clone(),
            department_name: c.department_name.clone(),
            department_code: c.department_code.clone(),
            postal_zone: None,
            country_code: "CO".into(),
            country_name: "Colombia".into(),
        }),
        organization_type: if c.organization_type == 2 {
            OrganizationType::NaturalPerson
        } else {
            OrganizationType::LegalEntity
        },
        tax_responsibilities: c.tax_responsibilities.clone(),
        tax_scheme: if c.tax_regime == "48" {
            TaxSchemeRef {
                id: "01".into(),
                name: "IVA".into(),
            }
        } else {
            TaxSchemeRef::default()
        },
    }
}

/// The engine's view of one issue: who, with which software and range,
/// which number, when.
pub fn issuer_context(
    setup: &IssuerSetup,
    environment: Environment,
    number: u64,
    instant: DateTime<FixedOffset>,
) -> IssuerContext {
    let r = &setup.resolution;
    IssuerContext {
        company: company_party(&setup.company),
        software: Software {
            id: setup.software.software_id.clone(),
            pin: setup.software.pin.clone(),
            provider_nit: setup.software.provider_nit.clone(),
            provider_check_digit: setup.software.provider_dv,
        },
        resolution: Resolution {
            number: r.resolution_number.clone(),
            prefix: r.prefix.clone(),
            from: r.from,
            to: r.to,
            valid_from: r.valid_from,
            valid_to: r.valid_to,
            technical_key: r.technical_key.clone(),
        },
        environment: environment.authority_code(),
        number,
        issue_instant: instant,
        file_consecutive: None,
    }
}

/// Now, in Colombia (a fixed -05:00: no daylight saving).
pub fn colombia_now() -> DateTime<FixedOffset> {
    chrono::Utc::now().with_timezone(&crate::engine::model::colombia_offset())
}
