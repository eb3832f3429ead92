//! What the authority knows about a company: its software (id and PIN),
//! numbering ranges with technical keys and test sets. The real authority
//! learns this when the company registers; the in-process simulator learns it
//! from the store, at start and after every admin change.

use emisor_store::{CompanyId, SoftwareKind, Store};

use super::ProvisioningError;
use crate::authority::simulator::{IssuerRecord, SimRegistry, SoftwareRecord};
use crate::authority::NumberRange;

/// The simulator's view of one company.
pub fn issuer_record(
    store: &dyn Store,
    company: CompanyId,
) -> Result<Option<IssuerRecord>, ProvisioningError> {
    let Some(c) = store.company(company)? else {
        return Ok(None);
    };
    let mut software = Vec::new();
    let mut test_set_ids = Vec::new();
    for kind in [SoftwareKind::Invoicing, SoftwareKind::Payroll] {
        if let Some(s) = store.software(company, kind)? {
            software.push(SoftwareRecord {
                id: s.software_id,
                pin: s.pin,
            });
            test_set_ids.extend(s.test_set_id);
        }
    }
    let ranges = store
        .resolutions(company)?
        .into_iter()
        .map(|r| NumberRange {
            resolution_number: r.resolution_number,
            resolution_date: r.resolution_date.to_string(),
            prefix: r.prefix,
            from_number: r.from,
            to_number: r.to,
            valid_date_from: r.valid_from.to_string(),
            valid_date_to: r.valid_to.to_string(),
            technical_key: Some(r.technical_key).filter(|k| !k.is_empty()),
        })
        .collect();
    Ok(Some(IssuerRecord {
        nit: c.nit,
        software,
        ranges,
        test_set_ids,
    }))
}

/// Registers one company with the simulator.
pub fn register_company(
    registry: &SimRegistry,
    store: &dyn Store,
    company: CompanyId,
) -> Result<(), ProvisioningError> {
    if let Some(record) = issuer_record(store, company)? {
        registry.register(record);
    }
    Ok(())
}

/// Registers every company (start-up).
pub fn register_all(registry: &SimRegistry, store: &dyn Store) -> Result<usize, ProvisioningError> {
    let companies = store.companies()?;
    for c in &companies {
        register_company(registry, store, c.id)?;
    }
    Ok(companies.len())
}
