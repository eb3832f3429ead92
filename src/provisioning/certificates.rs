//! Signing certificates: PKCS#12 import with the checks a user needs before
//! the first document fails at signing time.

use chrono::{DateTime, Utc};
use emisor_store::{CertificateRecord, CompanyId, Store};

use super::{invalid, ProvisioningError};
use crate::engine::signing_key::SigningKey;

/// Parses, checks validity at `now`, and stores the company's certificate.
pub fn import_pkcs12(
    store: &dyn Store,
    company: CompanyId,
    der: &[u8],
    password: &str,
    now: DateTime<Utc>,
) -> Result<CertificateRecord, ProvisioningError> {
    if store.company(company)?.is_none() {
        return Err(ProvisioningError::NotFound("company"));
    }
    let key = SigningKey::from_pkcs12(der, password)
        .map_err(|e| invalid("certificate", format!("cannot read the PKCS#12 file: {e}")))?;
    if now < key.not_before() {
        return Err(invalid(
            "certificate",
            format!(
                "not valid yet: valid from {}",
                key.not_before().to_rfc3339()
            ),
        ));
    }
    if now > key.not_after() {
        return Err(invalid(
            "certificate",
            format!("expired on {}", key.not_after().to_rfc3339()),
        ));
    }
    let record = CertificateRecord {
        company_id: company,
        pkcs12_der: der.to_vec().into(),
        password: password.into(),
        subject: key.subject_cn().to_string(),
        issuer: key.issuer_name().to_string(),
        serial: key.serial_decimal().to_string(),
        not_before: key.not_before(),
        not_after: key.not_after(),
        imported_at: now,
    };
    store.put_certificate(record.clone())?;
    Ok(record)
}
