//! Everything a company needs to issue a document of one type, loaded from
//! the store and checked, then turned into the engine's `IssuerContext`.
//! A missing piece is a 422 naming it, before any number is taken.

use std::cell::RefCell;
use std::sync::Arc;

use chrono::{DateTime, FixedOffset, NaiveDate};
use emisor_store::{
    AsyncStore, CertificateRecord, Company, Environment, IssuerRecords, NumberingResolution,
    ResolutionChoice, SoftwareKind, SoftwareRegistration,
};

use super::error::{IssueError, IssueResult};
use crate::engine::model::{
    Address, IssuerContext, OrganizationType, Party, Resolution, Software, SoftwareMaker,
    TaxSchemeRef,
};

/// The stored facts behind one document type of one company.
#[derive(Debug, Clone)]
pub struct IssuerSetup {
    pub company: Arc<Company>,
    pub software: Arc<SoftwareRegistration>,
    pub resolution: NumberingResolution,
    pub certificate: Arc<CertificateRecord>,
    /// The resolution's next number when the setup was read (none taken).
    pub next_number: u64,
}

/// Loads company, software, the resolution (the one with id `resolution`,
/// or the one a new document takes its number from: in the testing
/// environment the authority's test set for the type, otherwise the
/// company's own, valid on `date` with numbers left), and the certificate,
/// in one trip to the store.
pub async fn load_setup(
    store: &AsyncStore,
    company_id: u64,
    environment: Environment,
    document_type: u8,
    date: NaiveDate,
    resolution: Option<u64>,
) -> IssueResult<IssuerSetup> {
    load_setup_for(
        store,
        SoftwareKind::Invoicing,
        company_id,
        environment,
        document_type,
        date,
        resolution,
    )
    .await
}

/// [`load_setup`] with the software of `kind` (payroll has its own
/// registration, id and PIN).
pub async fn load_setup_for(
    store: &AsyncStore,
    kind: SoftwareKind,
    company_id: u64,
    environment: Environment,
    document_type: u8,
    date: NaiveDate,
    resolution: Option<u64>,
) -> IssueResult<IssuerSetup> {
    let choice = match resolution {
        Some(id) => ResolutionChoice::Id(id),
        None => ResolutionChoice::Active {
            environment,
            document_type,
            date,
        },
    };
    let records = store.issuer_records(company_id, kind, choice).await?;
    setup_from(records, kind, environment, document_type, date)
}

/// The setup [`load_setup_for`] reads, or what it lacks, named for the
/// client.
pub fn setup_from(
    records: IssuerRecords,
    kind: SoftwareKind,
    environment: Environment,
    document_type: u8,
    date: NaiveDate,
) -> IssueResult<IssuerSetup> {
    let company = records
        .company
        .ok_or_else(|| IssueError::NotFound("company".into()))?;
    let software = records.software.ok_or_else(|| {
        let what = match kind {
            SoftwareKind::Invoicing => "invoicing",
            SoftwareKind::Payroll => "payroll",
        };
        IssueError::invalid(
            "software",
            format!("the company has no registered {what} software"),
        )
    })?;
    let (Some(resolution), Some(next_number)) = (records.resolution, records.next_number) else {
        return Err(IssueError::invalid(
            "resolucion",
            format!(
                "no numbering resolution for document type {document_type} in the {} environment valid on {date} with numbers left",
                environment.name()
            ),
        ));
    };
    let certificate = records.certificate.ok_or_else(|| {
        IssueError::invalid("certificado", "the company has no signing certificate")
    })?;
    Ok(IssuerSetup {
        company,
        software,
        resolution,
        certificate,
        next_number,
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

thread_local! {
    /// The last company a thread issued for, with its party. The store
    /// hands out one `Arc` per company until the company changes, so
    /// pointer equality says the party is still the company's; the `Arc`
    /// held here keeps that address from being reused meanwhile.
    static LAST_PARTY: RefCell<Option<(Arc<Company>, Arc<Party>)>> = const { RefCell::new(None) };
}

/// [`company_party`], made once per company (and thread) rather than once
/// per document: its ~16 strings were a tenth of a signer's allocations.
fn shared_party(company: &Arc<Company>) -> Arc<Party> {
    LAST_PARTY.with_borrow_mut(|last| match last {
        Some((c, party)) if Arc::ptr_eq(c, company) => party.clone(),
        _ => {
            let party = Arc::new(company_party(company));
            *last = Some((company.clone(), party.clone()));
            party
        }
    })
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
        company: shared_party(&setup.company),
        software: Software {
            id: setup.software.software_id.clone(),
            pin: setup.software.pin.expose().to_string(),
            provider_nit: setup.software.provider_nit.clone(),
            provider_check_digit: setup.software.provider_dv,
            // No company configures its own maker yet: the product's name.
            maker: SoftwareMaker::default(),
        },
        resolution: Resolution {
            number: r.resolution_number.clone(),
            prefix: r.prefix.clone(),
            from: r.from,
            to: r.to,
            valid_from: r.valid_from,
            valid_to: r.valid_to,
            technical_key: r.technical_key.expose().to_string(),
        },
        environment: environment.authority_code(),
        number,
        issue_instant: instant,
        file_consecutive: None,
    }
}

/// Now on the business clock ([`crate::clock`]), in Colombia (a fixed
/// -05:00: no daylight saving).
pub fn colombia_now() -> DateTime<FixedOffset> {
    crate::clock::colombia_now()
}
