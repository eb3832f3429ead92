//! Whether a received invoice is the document the authority accepted for
//! its CUFE. Anyone can sign an XML that names any CUFE, so neither the
//! signature nor the signer says so (providers and mandataries sign for
//! vendors): the service asks the authority for its copy
//! (`GetXmlByDocumentKey`) and compares the two on the upload pool
//! ([`received::same_document`]). An invoice issued through this service
//! is its own copy: the document stored here is what the authority
//! accepted.
//!
//! Uploads stored before uploads were compared wait as
//! [`CopyState::Unchecked`]: those of invoices issued here are compared
//! with the local document at start-up, before the server answers; the
//! others in the background once the server runs, as the authority can be
//! reached, and at the latest when an event is asked on one. One that
//! differs is flagged ([`CopyState::Differs`]) and takes no more events.

use std::sync::Arc;
use std::time::Duration;

use emisor_store::{state, CopyCheck, CopyState, Environment, ReceivedInvoice};

use super::EventError;
use crate::authority::port::{AuthorityRequest, AuthorityResponse};
use crate::authority::transmission::DocumentXml;
use crate::engine::events::received;
use crate::issuing::xml_pool::PoolError;
use crate::issuing::Issuing;

/// What the comparison found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finding {
    Same,
    /// Not the authority's document, in words.
    Differs(String),
}

impl From<PoolError> for EventError {
    fn from(e: PoolError) -> Self {
        match e {
            PoolError::Busy => EventError::Busy,
            PoolError::Failed => EventError::Internal(e.to_string()),
        }
    }
}

/// What an answer of the authority's says of the upload, when it settles
/// anything: `Ok(copy)` for a document, `Err(finding)` for an answer that
/// says the upload cannot be its document, and `TaxUnavailable` when the
/// authority could not answer.
fn copy_of(answer: DocumentXml) -> Result<Result<Vec<u8>, String>, EventError> {
    let message = answer.message.trim().to_string();
    match answer.code.as_str() {
        DocumentXml::FOUND => match answer.xml {
            Some(xml) => Ok(Ok(xml)),
            None => Err(EventError::TaxUnavailable(
                "the authority found the invoice but sent no document".into(),
            )),
        },
        DocumentXml::NOT_FOUND => Ok(Err(format!(
            "the authority has no accepted invoice with this CUFE ({message})"
        ))),
        DocumentXml::NOT_AUTHORIZED => Ok(Err(format!(
            "the authority does not give this company the invoice of this CUFE: it is neither its vendor nor its buyer ({message})"
        ))),
        "500" | "" => Err(EventError::TaxUnavailable(format!(
            "the authority could not give its copy of the invoice: {message}"
        ))),
        code => Ok(Err(format!(
            "the authority refused to give its copy of the invoice: {code} {message}"
        ))),
    }
}

/// Asks the authority for its copy of `cufe`, with `company`'s credentials
/// in `environment`, through the transmitter (its pacing and breaker).
pub async fn authority_copy(
    issuing: &Issuing,
    company: u64,
    environment: Environment,
    cufe: &str,
) -> Result<Result<Vec<u8>, String>, EventError> {
    let target = issuing
        .target(company, environment)
        .await
        .map_err(|e| EventError::invalid("certificado", e.to_string()))?;
    let answer = issuing
        .call_authority(
            company,
            target,
            AuthorityRequest::GetXmlByDocumentKey {
                track_id: cufe.to_string(),
            },
        )
        .await
        .map_err(|f| {
            EventError::TaxUnavailable(format!("the authority could not be asked: {f}"))
        })?;
    match answer {
        AuthorityResponse::DocumentXml(d) => copy_of(d),
        _ => Err(EventError::Internal(
            "unexpected answer to GetXmlByDocumentKey".into(),
        )),
    }
}

/// Compares a received invoice with a copy, on the upload pool.
pub async fn compare(
    issuing: &Issuing,
    invoice_xml: String,
    copy: Vec<u8>,
) -> Result<Finding, EventError> {
    let same = issuing
        .uploads
        .run(move || received::same_document(&invoice_xml, &copy))
        .await?;
    Ok(match same {
        Ok(true) => Finding::Same,
        Ok(false) => Finding::Differs(
            "its content is not the document the authority accepted for this CUFE".into(),
        ),
        Err(e) => Finding::Differs(format!(
            "it cannot be compared with the authority's copy: {e}"
        )),
    })
}

/// The signed XML of the accepted invoice this service issued under
/// `cufe`, if it did.
async fn issued_here(issuing: &Issuing, cufe: &str) -> Result<Option<String>, EventError> {
    let Some(id) = issuing.store.document_by_code(cufe.to_string()).await? else {
        return Ok(None);
    };
    let accepted = issuing
        .store
        .document(id)
        .await?
        .is_some_and(|d| d.state == state::ACCEPTED);
    if !accepted {
        return Ok(None);
    }
    Ok(issuing.store.document_files(id).await?.map(|f| f.xml))
}

/// Compares a stored upload with the authority's copy (the document
/// issued here when it is one, else the authority's), without asking the
/// authority when `local_only`. `None` when nothing could be settled now.
async fn find(
    issuing: &Issuing,
    t: &ReceivedInvoice,
    local_only: bool,
) -> Result<Option<Finding>, EventError> {
    let Some(upload) = issuing.store.received_upload(t.id).await? else {
        return Ok(Some(Finding::Differs(
            "the uploaded XML is not stored".into(),
        )));
    };
    if let Some(local) = issued_here(issuing, &t.cufe).await? {
        return compare(issuing, upload, local.into_bytes()).await.map(Some);
    }
    let Some(company) = t.uploaded_by.filter(|_| !local_only) else {
        return Ok(None);
    };
    match authority_copy(issuing, company, t.environment, &t.cufe).await? {
        Ok(copy) => compare(issuing, upload, copy).await.map(Some),
        Err(why) => Ok(Some(Finding::Differs(why))),
    }
}

/// Writes what the comparison found; a record that differs stops being
/// eligible. Returns the record as stored.
async fn settle(
    issuing: &Issuing,
    mut t: ReceivedInvoice,
    finding: Finding,
) -> Result<ReceivedInvoice, EventError> {
    t.authority_copy = match finding {
        Finding::Same => CopyCheck::same("equal to the authority's copy"),
        Finding::Differs(why) => {
            tracing::warn!(
                received = t.id,
                cufe = %t.cufe,
                uploaded_by = ?t.uploaded_by,
                %why,
                "a received invoice is not the authority's document: flagged"
            );
            t.eligible = false;
            CopyCheck::differs(why)
        }
    };
    t.updated_at = chrono::Utc::now();
    Ok(issuing.store.save_received(t, None).await?)
}

/// A record events may be registered on: an unchecked upload is compared
/// first (503 `TAX_UNAVAILABLE` when the authority cannot be asked); one
/// that differs from the authority's copy is refused.
pub async fn vouched(issuing: &Issuing, t: ReceivedInvoice) -> Result<ReceivedInvoice, EventError> {
    let t = if t.authority_copy.state == CopyState::Unchecked {
        match find(issuing, &t, false).await? {
            Some(finding) => settle(issuing, t, finding).await?,
            None => t,
        }
    } else {
        t
    };
    match t.authority_copy.state {
        CopyState::Same => Ok(t),
        CopyState::Unchecked => Err(EventError::TaxUnavailable(
            "this upload has not been compared with the authority's copy yet".into(),
        )),
        CopyState::Differs => Err(EventError::InvalidState(format!(
            "this upload is not the document the authority accepted for its CUFE ({}); no event can be registered on it",
            t.authority_copy.detail.as_deref().unwrap_or("it differs")
        ))),
    }
}

/// Checks the stored upload `id` if it still waits; `Ok(false)` when it
/// must wait longer (the authority out of reach).
async fn check_one(issuing: &Issuing, id: u64, local_only: bool) -> Result<bool, EventError> {
    let Some(t) = issuing.store.received(id).await? else {
        return Ok(true);
    };
    if t.authority_copy.state != CopyState::Unchecked {
        return Ok(true);
    }
    match find(issuing, &t, local_only).await {
        Ok(Some(finding)) => {
            settle(issuing, t, finding).await?;
            Ok(true)
        }
        Ok(None) | Err(EventError::TaxUnavailable(_)) | Err(EventError::Busy) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Start-up: the waiting uploads of invoices issued here are compared now
/// (no authority needed), before the server answers; the rest in the
/// background. Never fails the start: what cannot be settled waits.
pub async fn at_start(issuing: &Arc<Issuing>) {
    let ids = match issuing.store.unchecked_received().await {
        Ok(ids) => ids,
        Err(e) => {
            tracing::error!(error = %e, "the uploads to compare could not be listed");
            return;
        }
    };
    if ids.is_empty() {
        return;
    }
    let mut waiting = 0;
    for &id in &ids {
        match check_one(issuing, id, true).await {
            Ok(true) => {}
            Ok(false) => waiting += 1,
            Err(e) => tracing::error!(received = id, error = %e, "an upload could not be compared"),
        }
    }
    tracing::info!(
        uploads = ids.len(),
        waiting,
        "uploads stored before they were compared with the authority's copy: those of invoices \
         issued here compared; the rest are compared in the background"
    );
    if waiting > 0 {
        let issuing = issuing.clone();
        actix_web::rt::spawn(async move { check_in_background(&issuing).await });
    }
}

/// Compares the waiting uploads with the authority's copies, pausing
/// `[resilience] recovery_interval_s` whenever the authority is out of
/// reach, until none waits.
async fn check_in_background(issuing: &Issuing) {
    let r = &issuing.settings.resilience;
    let pause = r
        .scaled(r.recovery_interval_s)
        .max(Duration::from_millis(100));
    loop {
        let ids = match issuing.store.unchecked_received().await {
            Ok(ids) => ids,
            Err(e) => {
                tracing::error!(error = %e, "the uploads to compare could not be listed");
                return;
            }
        };
        if ids.is_empty() {
            tracing::info!("every stored upload is compared with the authority's copy");
            return;
        }
        let mut settled = true;
        for id in ids {
            match check_one(issuing, id, false).await {
                Ok(true) => {}
                Ok(false) => settled = false,
                Err(e) => {
                    settled = false;
                    tracing::warn!(received = id, error = %e, "an upload could not be compared")
                }
            }
        }
        if !settled {
            actix_web::rt::time::sleep(pause).await;
        }
    }
}
