//! `cargar-documento`: a vendor's invoice, received by the caller. It must
//! be a well-formed UBL invoice (or an AttachedDocument carrying one) whose
//! buyer is the caller, its signature must verify, and it must be the very
//! document the authority accepted for its CUFE ([`copy_check`]): anyone
//! can sign an invoice that names any CUFE. The XML work runs on the
//! upload pool; the upload is the caller's own record (keyed by company
//! and CUFE), so no upload of another company's can lock the caller out.

use emisor_store::{CopyCheck, CopyState, ReceivedInvoice};

use super::copy_check::{self, Finding};
use super::title::{from_facts, involves};
use super::EventError;
use crate::engine::events::received::{self, ReceivedInvoiceFacts};
use crate::engine::xades;
use crate::issuing::issue::Caller;
use crate::issuing::Issuing;

const FIELD: &str = "xml_base64";

/// What can be checked without the authority: the XML within bounds, an
/// invoice, the caller its buyer, of the caller's environment, signed.
fn read_and_verify(
    xml: &str,
    caller_nit: &str,
    environment: u8,
) -> Result<ReceivedInvoiceFacts, String> {
    let facts = received::read(xml).map_err(|e| e.to_string())?;
    if facts.buyer_id != caller_nit {
        return Err(format!(
            "the invoice's buyer is {}, not this company ({caller_nit})",
            facts.buyer_id
        ));
    }
    if facts.environment != environment {
        return Err(format!(
            "the invoice is of environment {} (ProfileExecutionID), the key of environment {environment}",
            facts.environment
        ));
    }
    let verified = xades::verify(&facts.invoice_xml)
        .map_err(|e| format!("the signature does not verify: {e}"))?;
    if !verified.signing_certificate_ok || !verified.policy_ok {
        return Err(
            "the signature does not follow the authority's policy (signing certificate or policy)"
                .into(),
        );
    }
    Ok(facts)
}

/// Checks and stores an upload; the stored record.
pub async fn upload(
    issuing: &Issuing,
    caller: &Caller,
    caller_nit: &str,
    xml: String,
) -> Result<ReceivedInvoice, EventError> {
    let (nit, environment) = (caller_nit.to_string(), caller.environment.authority_code());
    let facts = issuing
        .uploads
        .run(move || read_and_verify(&xml, &nit, environment))
        .await?
        .map_err(|m| EventError::invalid(FIELD, m))?;

    // Received before: by this company, or the invoice as every party
    // finds it (issued here, or uploaded and vouched for).
    let own = issuing
        .store
        .received_upload_of(caller.company, facts.cufe.clone())
        .await?;
    if let Some(o) = own
        .as_ref()
        .filter(|o| o.authority_copy.state != CopyState::Differs)
    {
        return Err(EventError::Duplicate { id: o.id });
    }
    if let Some(shared) = issuing
        .store
        .received_by_cufe(facts.cufe.clone())
        .await?
        .filter(|t| involves(t, caller.company, caller_nit))
    {
        return Err(EventError::Duplicate { id: shared.id });
    }

    let copy = copy_check::authority_copy(issuing, caller.company, caller.environment, &facts.cufe)
        .await?
        .map_err(|why| EventError::invalid(FIELD, why))?;
    if let Finding::Differs(why) =
        copy_check::compare(issuing, facts.invoice_xml.clone(), copy).await?
    {
        return Err(EventError::invalid(
            FIELD,
            format!(
                "the invoice is not the one the authority accepted for CUFE {}: {why}",
                facts.cufe
            ),
        ));
    }

    let mut record = from_facts(issuing, &facts, caller).await?;
    record.uploaded_by = Some(caller.company);
    record.document_id = issuing.store.document_by_code(facts.cufe.clone()).await?;
    record.authority_copy = CopyCheck::same("equal to the authority's copy");
    if let Some(flagged) = own {
        // The company's earlier upload differed: the genuine one takes
        // its place (and its events' history).
        record.id = flagged.id;
        record.version = flagged.version;
        record.events = flagged.events;
        record.created_at = flagged.created_at;
        super::title::settle(&mut record);
        record.authority_copy.detail = Some(format!(
            "equal to the authority's copy; replaces an upload that was not ({})",
            flagged.authority_copy.detail.unwrap_or_default()
        ));
    }
    Ok(issuing
        .store
        .save_received(record, Some(facts.invoice_xml))
        .await?)
}
