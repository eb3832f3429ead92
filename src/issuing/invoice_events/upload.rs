//! `cargar-documento`: a vendor's invoice, received by the caller. It must
//! be a well-formed UBL invoice (or an AttachedDocument carrying one) whose
//! buyer is the caller, its signature must verify, and the authority must
//! say it accepted it (GetStatus by its CUFE, through the breaker): a buyer
//! cannot recompute a CUFE, which needs the vendor's technical key.

use emisor_store::ReceivedInvoice;

use super::title::from_facts;
use super::EventError;
use crate::authority::port::{AuthorityRequest, AuthorityResponse};
use crate::engine::events::received;
use crate::engine::xades;
use crate::issuing::issue::Caller;
use crate::issuing::Issuing;

/// Checks and stores an upload; the stored record.
pub async fn upload(
    issuing: &Issuing,
    caller: &Caller,
    caller_nit: &str,
    xml: &str,
) -> Result<ReceivedInvoice, EventError> {
    let field = "xml_base64";
    let facts = received::read(xml).map_err(|e| EventError::invalid(field, e.to_string()))?;
    if facts.buyer_id != caller_nit {
        return Err(EventError::invalid(
            field,
            format!(
                "the invoice's buyer is {}, not this company ({caller_nit})",
                facts.buyer_id
            ),
        ));
    }
    if facts.environment != caller.environment.authority_code() {
        return Err(EventError::invalid(
            field,
            format!(
                "the invoice is of environment {} (ProfileExecutionID), the key of environment {}",
                facts.environment,
                caller.environment.authority_code()
            ),
        ));
    }
    let verified = xades::verify(&facts.invoice_xml)
        .map_err(|e| EventError::invalid(field, format!("the signature does not verify: {e}")))?;
    if !verified.signing_certificate_ok || !verified.policy_ok {
        return Err(EventError::invalid(
            field,
            "the signature does not follow the authority's policy (signing certificate or policy)",
        ));
    }
    if let Some(existing) = issuing.store.received_by_cufe(facts.cufe.clone()).await? {
        return Err(EventError::Duplicate { id: existing.id });
    }
    let target = issuing
        .target(caller.company, caller.environment)
        .await
        .map_err(|e| EventError::invalid("certificado", e.to_string()))?;
    let status = issuing
        .call_authority(
            caller.company,
            target,
            AuthorityRequest::GetStatus {
                track_id: facts.cufe.clone(),
            },
        )
        .await
        .map_err(|f| {
            EventError::TaxUnavailable(format!("the authority could not be asked: {f}"))
        })?;
    match status {
        AuthorityResponse::Verdict(t) if t.accepted() => {}
        AuthorityResponse::Verdict(t) => {
            let why = if t.errors.is_empty() {
                format!("{} {}", t.status_code, t.status_description)
            } else {
                t.errors.join("; ")
            };
            return Err(EventError::invalid(
                field,
                format!(
                    "the authority has not accepted this invoice: {}",
                    why.trim()
                ),
            ));
        }
        _ => {
            return Err(EventError::Internal(
                "unexpected answer to GetStatus".into(),
            ))
        }
    }
    let mut record = from_facts(issuing, &facts, caller).await?;
    record.uploaded_by = Some(caller.company);
    record.document_id = issuing.store.document_by_code(facts.cufe.clone()).await?;
    Ok(issuing
        .store
        .save_received(record, Some(facts.invoice_xml))
        .await?)
}
