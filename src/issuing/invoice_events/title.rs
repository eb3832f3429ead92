//! The invoice as its events see it: found by CUFE, or adopted from a
//! document another company of this service issued to the caller (no
//! upload needed); who it involves, who may act, and what follows from its
//! events (holder, eligibility).

use chrono::Utc;
use emisor_store::{state, CopyCheck, CopyState, EventState, PartyRef, ReceivedInvoice};

use super::{kind_of, EventError};
use crate::engine::events::order;
use crate::engine::events::received::ReceivedInvoiceFacts;
use crate::engine::events::terms::{self, InvoiceTerms};
use crate::engine::events::EventKind;
use crate::engine::model::DocumentKind;
use crate::issuing::issue::Caller;
use crate::issuing::kind::invoicing_kind;
use crate::issuing::Issuing;

/// A CUFE as the routes take it: 96 hex digits, compared in lower case.
pub fn normalize_cufe(cufe: &str) -> Result<String, EventError> {
    let c = cufe.trim().to_ascii_lowercase();
    if c.len() == 96 && c.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(c)
    } else {
        Err(EventError::invalid(
            "cufe",
            "must be 96 hexadecimal characters (SHA-384)",
        ))
    }
}

/// The party of an identification, with the company of this service it is.
pub async fn party(issuing: &Issuing, id_number: &str, name: &str) -> Result<PartyRef, EventError> {
    let company = issuing.store.company_by_nit(id_number.to_string()).await?;
    Ok(PartyRef {
        id_number: id_number.to_string(),
        id_type: "31".into(),
        check_digit: company.as_ref().map(|c| c.dv),
        name: company
            .as_ref()
            .map(|c| c.name.clone())
            .filter(|_| name.is_empty())
            .unwrap_or_else(|| name.to_string()),
        company_id: company.map(|c| c.id),
    })
}

/// A new record from what was read of the invoice.
pub async fn from_facts(
    issuing: &Issuing,
    facts: &ReceivedInvoiceFacts,
    caller: &Caller,
) -> Result<ReceivedInvoice, EventError> {
    let vendor = party(issuing, &facts.vendor_nit, &facts.vendor_name).await?;
    let buyer = party(issuing, &facts.buyer_id, &facts.buyer_name).await?;
    let now = Utc::now();
    Ok(ReceivedInvoice {
        id: 0,
        version: 0,
        cufe: facts.cufe.clone(),
        environment: caller.environment,
        number: facts.number.clone(),
        type_code: facts.type_code.clone(),
        issue_date: facts.issue_date,
        due_date: facts.due_date,
        currency: facts.currency.clone(),
        total: facts.total.to_string(),
        holder: vendor.clone(),
        vendor,
        buyer,
        uploaded_by: None,
        document_id: None,
        eligible: false,
        authority_copy: CopyCheck::same("issued through this service"),
        events: Vec::new(),
        created_at: now,
        updated_at: now,
    })
}

/// The stored invoice of `cufe` for `caller`, in the caller's environment:
/// its own upload, unless that differs from the authority's copy and the
/// invoice as every party finds it (issued here, or uploaded and vouched
/// for) involves the caller.
pub async fn lookup(
    issuing: &Issuing,
    caller: &Caller,
    caller_nit: &str,
    cufe: &str,
) -> Result<Option<ReceivedInvoice>, EventError> {
    let own = issuing
        .store
        .received_upload_of(caller.company, cufe.to_string())
        .await?
        .filter(|o| o.environment == caller.environment);
    if let Some(o) = own
        .as_ref()
        .filter(|o| o.authority_copy.state != CopyState::Differs)
    {
        return Ok(Some(o.clone()));
    }
    let shared = issuing
        .store
        .received_by_cufe(cufe.to_string())
        .await?
        .filter(|t| t.environment == caller.environment && involves(t, caller.company, caller_nit));
    Ok(shared.or(own))
}

/// The invoice of `cufe` for `caller`: stored ([`lookup`]), or adopted
/// from an accepted invoice another company issued here. `None` when the
/// caller has no part in it or it is of another environment (answered as
/// unknown).
pub async fn find(
    issuing: &Issuing,
    caller: &Caller,
    caller_nit: &str,
    cufe: &str,
) -> Result<Option<ReceivedInvoice>, EventError> {
    if let Some(t) = lookup(issuing, caller, caller_nit, cufe).await? {
        return Ok(Some(t));
    }
    if issuing
        .store
        .received_by_cufe(cufe.to_string())
        .await?
        .is_some()
    {
        // Vouched for and not the caller's.
        return Ok(None);
    }
    let Some(doc_id) = issuing.store.document_by_code(cufe.to_string()).await? else {
        return Ok(None);
    };
    let Some(doc) = issuing.store.document(doc_id).await? else {
        return Ok(None);
    };
    // An accepted invoice (FE, export, T04) of the caller's environment,
    // under its current code: the code index also keeps the code a
    // re-dated or resent document had before.
    if doc.state != state::ACCEPTED
        || !invoicing_kind(&doc).is_some_and(DocumentKind::is_sales_invoice)
        || doc.environment != caller.environment
        || doc.code.as_deref() != Some(cufe)
    {
        return Ok(None);
    }
    let Some(files) = issuing.store.document_files(doc_id).await? else {
        return Ok(None);
    };
    let facts = crate::engine::events::received::read(&files.xml)
        .map_err(|e| EventError::Internal(format!("reading document {doc_id}: {e}")))?;
    let mut record = from_facts(issuing, &facts, caller).await?;
    record.document_id = Some(doc_id);
    if !involves(&record, caller.company, caller_nit) {
        return Ok(None);
    }
    match issuing.store.save_received(record, None).await {
        Ok(stored) => Ok(Some(stored)),
        // Adopted by a concurrent request meanwhile: take that one.
        Err(emisor_store::StoreError::DuplicateReference { .. }) => Ok(issuing
            .store
            .received_by_cufe(cufe.to_string())
            .await?
            .filter(|t| {
                t.environment == caller.environment && involves(t, caller.company, caller_nit)
            })),
        Err(e) => Err(e.into()),
    }
}

/// The company has a part in the invoice: buyer, vendor, holder, uploader,
/// or a party of one of its events.
pub fn involves(t: &ReceivedInvoice, company: u64, nit: &str) -> bool {
    let is = |p: &PartyRef| p.company_id == Some(company) || p.id_number == nit;
    is(&t.buyer)
        || is(&t.vendor)
        || is(&t.holder)
        || t.uploaded_by == Some(company)
        || t.events.iter().any(|e| is(&e.sender) || is(&e.receiver))
}

/// Kinds of the events that count for the order: accepted or being sent.
pub fn counted(t: &ReceivedInvoice) -> Vec<EventKind> {
    t.events
        .iter()
        .filter(|e| e.state != EventState::Rejected)
        .filter_map(kind_of)
        .collect()
}

/// Kinds of the events the authority accepted.
pub fn accepted(t: &ReceivedInvoice) -> Vec<EventKind> {
    t.events
        .iter()
        .filter(|e| e.state == EventState::Accepted)
        .filter_map(kind_of)
        .collect()
}

/// Holder and eligibility from the events: the vendor holds it until an
/// endorsement in property is accepted; its events make it eligible once
/// its receipt events are accepted and no registration is registered or on
/// its way ([`refresh_eligibility`] adds the payment form).
pub fn settle(t: &mut ReceivedInvoice) {
    let mut holder = t.vendor.clone();
    for e in &t.events {
        if e.state == EventState::Accepted && kind_of(e) == Some(EventKind::EndorsementProperty) {
            holder = e.receiver.clone();
        }
    }
    t.holder = holder;
    t.eligible = order::eligible_for_registration(&accepted(t))
        && !counted(t).contains(&EventKind::Registration);
}

/// The invoice's signed XML: the document issued here, or the upload.
pub async fn invoice_xml(
    issuing: &Issuing,
    t: &ReceivedInvoice,
) -> Result<Option<String>, EventError> {
    if let Some(doc_id) = t.document_id {
        if let Some(files) = issuing.store.document_files(doc_id).await? {
            return Ok(Some(files.xml));
        }
    }
    Ok(issuing.store.received_upload(t.id).await?)
}

/// The invoice's payment terms, read from its XML (`None` without one).
pub async fn invoice_terms(
    issuing: &Issuing,
    t: &ReceivedInvoice,
) -> Result<Option<InvoiceTerms>, EventError> {
    Ok(invoice_xml(issuing, t)
        .await?
        .as_deref()
        .and_then(terms::invoice_terms))
}

/// Whether the invoice's payment form lets it become a title: credit, with
/// a due date (decisions.md "Events"; rule LGC62).
pub fn may_become_title(terms: &InvoiceTerms) -> bool {
    !terms.is_cash() && terms.payment_due_date.is_some()
}

/// [`settle`], then eligibility only for an invoice that may become a
/// title (its XML read when its events make it eligible; unreadable, it is
/// left as its events say).
pub async fn refresh_eligibility(issuing: &Issuing, t: &mut ReceivedInvoice) {
    settle(t);
    if !t.eligible {
        return;
    }
    match invoice_terms(issuing, t).await {
        Ok(Some(terms)) => t.eligible = may_become_title(&terms),
        Ok(None) => {}
        Err(e) => tracing::warn!(received = t.id, error = %e, "reading an invoice's payment terms"),
    }
}
