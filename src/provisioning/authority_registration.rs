//! What the authority knows about a company: its software (id and PIN),
//! numbering ranges with technical keys and test sets. The real authority
//! learns this when the company registers; a simulator learns it from the
//! demo company itself ([`super::issuer_registrar`]). Only demo companies
//! are ever registered: their authority is always a simulator.

use std::sync::Arc;

use emisor_store::{Company, CompanyId, Environment, SoftwareKind, Store};

use super::issuer_registrar::{IssuerRegistrar, Lookup, RegistrarTiming};
use super::ProvisioningError;
use crate::authority::simulator::{IssuerRecord, SoftwareRecord, SERVICE_PATH};
use crate::authority::NumberRange;
use crate::issuing::transmit::{HABILITACION_URL, PRODUCTION_URL};
use crate::issuing::Issuing;

/// One company's record and the simulators (base URLs) that must know it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registration {
    pub record: IssuerRecord,
    pub simulators: Vec<String>,
}

/// The simulator's view of one company.
pub fn issuer_record(
    store: &dyn Store,
    company: &Company,
) -> Result<IssuerRecord, ProvisioningError> {
    let mut software = Vec::new();
    let mut test_set_ids = Vec::new();
    for kind in [SoftwareKind::Invoicing, SoftwareKind::Payroll] {
        if let Some(s) = store.software(company.id, kind)? {
            software.push(SoftwareRecord {
                id: s.software_id,
                pin: s.pin.expose().to_string(),
            });
            test_set_ids.extend(s.test_set_id);
        }
    }
    let ranges = store
        .resolutions(company.id)?
        .into_iter()
        .map(|r| NumberRange {
            resolution_number: r.resolution_number,
            resolution_date: r.resolution_date.to_string(),
            prefix: r.prefix,
            from_number: r.from,
            to_number: r.to,
            valid_date_from: r.valid_from.to_string(),
            valid_date_to: r.valid_to.to_string(),
            technical_key: Some(r.technical_key.expose().to_string()).filter(|k| !k.is_empty()),
        })
        .collect();
    Ok(IssuerRecord {
        nit: company.nit.clone(),
        software,
        ranges,
        test_set_ids,
        name: Some(company.name.clone()),
        email: company.email.clone(),
    })
}

/// The base URL of the simulator serving `service_url`
/// (`http://host:port/WcfDianCustomerServices.svc` → `http://host:port`).
/// `None` for the authority's own services, or a URL that is not a
/// simulator's service path: nothing is registered there.
pub fn simulator_base(service_url: &str) -> Option<String> {
    let url = service_url.trim().trim_end_matches('/');
    if url == PRODUCTION_URL || url == HABILITACION_URL {
        return None;
    }
    let base = url.strip_suffix(SERVICE_PATH)?;
    (base.starts_with("http://") || base.starts_with("https://")).then(|| base.to_string())
}

/// The simulators a demo company's documents go to, in either environment.
pub fn demo_simulators(issuing: &Issuing, company: &Company) -> Vec<String> {
    let mut bases: Vec<String> = [Environment::Test, Environment::Live]
        .into_iter()
        .filter_map(|env| simulator_base(&issuing.authority_url(company, env)))
        .collect();
    bases.dedup();
    bases
}

/// What to register for `company`, and where: `None` unless it is a demo
/// company (a real one registers with the authority itself).
pub fn demo_registration(
    store: &dyn Store,
    company: CompanyId,
    simulators: impl Fn(&Company) -> Vec<String>,
) -> Result<Option<Registration>, ProvisioningError> {
    let Some(c) = store.company(company)?.filter(|c| c.demo) else {
        return Ok(None);
    };
    Ok(Some(Registration {
        record: issuer_record(store, &c)?,
        simulators: simulators(&c),
    }))
}

/// Every demo company (registered at start-up).
pub fn demo_companies(store: &dyn Store) -> Result<Vec<CompanyId>, ProvisioningError> {
    Ok(store
        .companies()?
        .into_iter()
        .filter(|c| c.demo)
        .map(|c| c.id)
        .collect())
}

/// Starts registering demo companies with the simulators they send to
/// (on the current arbiter). `store` is read on tokio's blocking pool
/// (a rare read: once per registration).
pub fn start_demo_registrar(
    issuing: &Arc<Issuing>,
    store: Arc<dyn Store + Send + Sync>,
) -> IssuerRegistrar {
    let timing = RegistrarTiming::scaled(issuing.settings.resilience.time_scale);
    let issuing = issuing.clone();
    let lookup: Lookup = Arc::new(move |company| {
        demo_registration(store.as_ref(), company, |c| demo_simulators(&issuing, c))
    });
    IssuerRegistrar::start(lookup, timing)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_simulator_base_is_its_service_url_without_the_service_path() {
        assert_eq!(
            simulator_base("http://127.0.0.1:4000/WcfDianCustomerServices.svc").as_deref(),
            Some("http://127.0.0.1:4000")
        );
        assert_eq!(
            simulator_base("http://sim.local/x/WcfDianCustomerServices.svc/").as_deref(),
            Some("http://sim.local/x")
        );
        assert_eq!(simulator_base(PRODUCTION_URL), None);
        assert_eq!(simulator_base(HABILITACION_URL), None);
        assert_eq!(simulator_base("http://127.0.0.1:4000/soap"), None);
        assert_eq!(simulator_base(""), None);
    }
}
