//! Building a stored document again, with the number it holds: one entry
//! point, [`build_again`], for a half-built document after a crash or a
//! power cut ([`rebuild`], at its own instant), a resend ([`resend`], now)
//! and the same-day re-dating ([`super::same_day`], now). The document's
//! kind picks the builder; its stored request says what to build.

use std::sync::Arc;

use chrono::{DateTime, FixedOffset, NaiveDate};
use emisor_store::{state, DocumentFiles, DocumentRecord, HistoryEntry, Job};
use serde_json::json;

use super::context::{colombia_now, issuer_context, load_setup, IssuerSetup};
use super::error::{IssueError, IssueResult};
use super::issue::{apply_build, date_at, history, issued_at, signing_key, transmit_now, Issued};
use super::kind::StoredKind;
use super::payroll;
use super::reference::resolve;
use super::request::{self, Api};
use super::stored::{self, Domain, Stored};
use super::transmit::new_job;
use super::Issuing;
use crate::engine::model::Document;
use crate::engine::pipeline::{EngineError, IssuedDocument};
use crate::engine::signing_key::SigningKey;
use crate::engine::validate::ValidationError;
use crate::issuing::worker::{BuildError, IssueRequest};

/// Builds `document` on the signer pool (never on an HTTP worker). A
/// document that no longer validates at its new instant (a resend, a
/// re-dating: a resolution expired, a due date now past) is a business
/// error, its fields named as its caller named them ([`refusal`]).
async fn build(
    issuing: &Issuing,
    doc: &DocumentRecord,
    caller: &[u8],
    document: Document,
    setup: &IssuerSetup,
    key: Arc<SigningKey>,
    (number, instant): (u64, DateTime<FixedOffset>),
) -> IssueResult<IssuedDocument> {
    let input = IssueRequest {
        document,
        context: issuer_context(setup, doc.environment, number, instant),
        key,
        totals: None,
    };
    // Queued straight on the builder's pool; the result comes back from it.
    match issuing.builds.build(input.into()).await {
        Ok(issued) => Ok(issued),
        Err(BuildError::Engine(EngineError::Validation(errors))) => {
            Err(refusal(issuing, doc, caller, &errors))
        }
        Err(e) => Err(IssueError::Internal(format!("building the document: {e}"))),
    }
}

/// The refusal of a document that no longer validates, its fields named as
/// its caller named them: its API's translator reads the caller's JSON
/// back for the names alone (the engine's own names if it cannot).
fn refusal(
    issuing: &Issuing,
    doc: &DocumentRecord,
    caller: &[u8],
    errors: &[ValidationError],
) -> IssueError {
    let named = api_of(doc)
        .and_then(|api| issuing.translators.get(api))
        .and_then(|translator| translator.translate(caller));
    match named {
        Ok(mapped) => mapped.validation_error(errors),
        Err(_) => IssueError::invalid_list(request::named(errors, str::to_string)),
    }
}

fn api_of(doc: &DocumentRecord) -> IssueResult<Api> {
    Api::from_tag(doc.api.as_deref()).ok_or_else(|| {
        IssueError::Internal(format!("document {} came through an unknown API", doc.id))
    })
}

/// A stored document's request (today's format or the earlier one).
async fn stored_request(issuing: &Issuing, doc: &DocumentRecord) -> IssueResult<Vec<u8>> {
    issuing
        .store
        .document_request(doc.id)
        .await?
        .ok_or_else(|| {
            IssueError::Internal(format!("the request of document {} is missing", doc.id))
        })
}

/// The instant a document is built again at: its own (a half-built one
/// after a crash or a power cut: the code its caller may hold stays the
/// same), or now on the business clock (a draft or rejected one being
/// resent, one re-dated for the day it is sent).
#[derive(Clone, Copy)]
pub(crate) enum Again {
    SameInstant,
    Now,
}

impl Again {
    /// The instant, and the issue date the record takes.
    pub(crate) fn instant(self, doc: &DocumentRecord) -> (DateTime<FixedOffset>, NaiveDate) {
        match self {
            Again::SameInstant => (issued_at(doc), doc.issue_date),
            Again::Now => {
                let now = colombia_now();
                (now, now.date_naive())
            }
        }
    }
}

/// Builds a stored document again from its request, with the number it
/// holds, at the instant `again` says. The caller stores the result.
pub(crate) async fn build_again(
    issuing: &Issuing,
    doc: DocumentRecord,
    again: Again,
) -> IssueResult<(DocumentRecord, DocumentFiles)> {
    match StoredKind::of(&doc) {
        Some(StoredKind::Payroll(_)) => build_payroll_again(issuing, doc, again).await,
        Some(StoredKind::Invoicing(_)) => build_invoicing_again(issuing, doc, again).await,
        None => Err(IssueError::Internal(format!(
            "document {} is of type {}, which issuing does not build",
            doc.id, doc.document_type
        ))),
    }
}

/// An invoicing document built again: from its stored domain request, or
/// (a request of the earlier format, the caller's JSON alone) from what its
/// API's translator makes of the caller's JSON, as when it was issued.
async fn build_invoicing_again(
    issuing: &Issuing,
    mut doc: DocumentRecord,
    again: Again,
) -> IssueResult<(DocumentRecord, DocumentFiles)> {
    let raw = stored_request(issuing, &doc).await?;
    let document = match stored::read(&raw)? {
        Stored::Domain {
            domain: Domain::Invoicing(document),
            ..
        } => *document,
        Stored::Domain { .. } => {
            return Err(IssueError::Internal(format!(
                "document {} of type {} holds a payroll's request",
                doc.id, doc.document_type
            )))
        }
        Stored::AsSent(raw) => {
            let translator = issuing.translators.get(api_of(&doc)?)?;
            let mut request = translator.translate(raw)?;
            resolve(issuing, (doc.company_id, doc.environment), &mut request).await?;
            request.document
        }
    };
    let setup = load_setup(
        &issuing.store,
        doc.company_id,
        doc.environment,
        doc.document_type,
        doc.issue_date,
        Some(doc.resolution_id),
    )
    .await?;
    let key = signing_key(issuing, &setup)?;
    let (instant, date) = again.instant(&doc);
    let numbered = (doc.number, instant);
    let caller = stored::caller(&raw);
    let issued = build(issuing, &doc, caller, document, &setup, key, numbered).await?;
    let files = apply_build(&mut doc, issued);
    date_at(&mut doc, instant, date);
    if matches!(again, Again::Now) {
        // Its tracking key is its code: the old one's went with it.
        doc.track_id = None;
    }
    Ok((doc, files))
}

/// A stored payroll built again from its stored domain request (or, one
/// of the earlier format, from what the payroll translator makes of the
/// caller's JSON), with its number, at the instant `again` says.
async fn build_payroll_again(
    issuing: &Issuing,
    mut doc: DocumentRecord,
    again: Again,
) -> IssueResult<(DocumentRecord, DocumentFiles)> {
    let raw = stored_request(issuing, &doc).await?;
    let document = match stored::read(&raw)? {
        Stored::Domain {
            domain: Domain::Payroll(document),
            ..
        } => *document,
        Stored::Domain { .. } => {
            return Err(IssueError::Internal(format!(
                "payroll {} holds an invoicing document's request",
                doc.id
            )))
        }
        Stored::AsSent(raw) => issuing.translators.payroll()?.translate(raw)?.document,
    };
    let setup = payroll::setup(
        issuing,
        doc.company_id,
        doc.environment,
        Some(doc.resolution_id),
    )
    .await?;
    let key = signing_key(issuing, &setup)?;
    let (instant, date) = again.instant(&doc);
    let issued = payroll::build(
        issuing,
        &document,
        &setup,
        key,
        doc.environment,
        (doc.number, instant),
    )
    .await?;
    let files = apply_build(&mut doc, issued);
    date_at(&mut doc, instant, date);
    Ok((doc, files))
}

/// A rebuilt document moved to state `to` (with its transmission job, if
/// any): files, record, history and job durable in one group commit.
async fn store_rebuilt(
    issuing: &Issuing,
    doc: &mut DocumentRecord,
    files: DocumentFiles,
    to: u8,
    job: Option<Job>,
    entry: HistoryEntry,
) -> IssueResult<(Option<Job>, DocumentFiles)> {
    let from = doc.state;
    doc.state = to;
    let entry = HistoryEntry {
        from_state: Some(from),
        ..entry
    };
    Ok(issuing
        .store
        .commit_document(doc.clone(), files, job, entry)
        .await?)
}

/// A half-built document found at start-up, rebuilt into the state it
/// holds: a draft, or queued for transmission (its job stored with it)
/// when its caller asked for that and was answered before a power cut
/// took the built record (the store keeps QUEUED only then).
pub async fn rebuild(issuing: &Arc<Issuing>, doc: DocumentRecord) -> IssueResult<()> {
    let queued = doc.state == state::QUEUED;
    let to = if queued { state::QUEUED } else { state::DRAFT };
    let (mut doc, files) = build_again(issuing, doc, Again::SameInstant).await?;
    let job = queued.then(|| new_job(&doc));
    let entry = history("worker", "rebuilt", to, json!({ "code": doc.code }));
    store_rebuilt(issuing, &mut doc, files, to, job, entry).await?;
    Ok(())
}

/// `reenviar`: a draft or rejected document is built again (new signing
/// instant, same number), signed and transmitted synchronously. Its answer
/// names no totals.
pub async fn resend(issuing: &Arc<Issuing>, doc: DocumentRecord) -> IssueResult<Issued<()>> {
    let (mut doc, files) = build_again(issuing, doc, Again::Now).await?;
    let entry = history("api", "resend", state::QUEUED, json!({ "code": doc.code }));
    let job = Some(new_job(&doc));
    let (job, files) = store_rebuilt(issuing, &mut doc, files, state::QUEUED, job, entry).await?;
    // Its new code may be accepted once sent: the record must outlive a
    // power cut, or a resend after it would make yet another code.
    issuing.store.sync_power_safe().await?;
    let job = job.ok_or_else(|| IssueError::Internal("resend job not stored".into()))?;
    let sent = transmit_now(issuing, doc.id, job).await?;
    Ok(Issued::Done {
        doc: sent.doc,
        xml: sent.xml.unwrap_or(files.xml),
        transmission: Some(Box::new(sent.transmission)),
        totals: (),
    })
}
