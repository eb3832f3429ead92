//! Issuing one document: validate everything first (so a refused request
//! changes nothing), take the number and write a placeholder (phase one),
//! build and sign on the pool, make the files, record and transmission job
//! durable in one group commit (phase two), then transmit now or later.

use std::sync::Arc;

use chrono::{Datelike, Utc};
use emisor_actors::document_builder::Build;
use emisor_actors::retry_scheduler::JobOutcome;
use emisor_store::{
    state, DocumentFiles, DocumentRecord, Environment, HistoryEntry, Job, NewDocument, StoreError,
};
use serde_json::json;

use super::context::{colombia_now, issuer_context, load_setup, IssuerSetup};
use super::transmit::new_job;
use super::Issuing;
use crate::api::error::ApiError;
use crate::api::facturacion::mapping::{to_document, MappedDocument, ReferencedDocument};
use crate::api::facturacion::request::FacturacionRequest;
use crate::authority::Transmission;
use crate::engine::codes::CodeScheme;
use crate::engine::model::DocumentKind;
use crate::engine::pipeline::IssuedDocument;
use crate::engine::signing_key::SigningKey;
use crate::engine::validate::{validate_and_total, CertificateValidity};
use crate::engine::worker::IssueRequest;

/// Documents a month when the company has no plan of its own (decisions.md §4).
pub const DEFAULT_MONTHLY_LIMIT: u64 = 10_000;

/// The outcome of an issue.
#[derive(Debug)]
pub enum Issued {
    /// Built (and, when asked, transmitted) before answering.
    Done {
        doc: DocumentRecord,
        xml: String,
        transmission: Option<Box<Transmission>>,
    },
    /// Built and queued for background transmission.
    Queued { doc: DocumentRecord, job_id: u64 },
}

fn history(actor: &str, event: &str, to: u8, data: serde_json::Value) -> HistoryEntry {
    HistoryEntry {
        at: Utc::now(),
        actor: actor.into(),
        event: event.into(),
        from_state: None,
        to_state: Some(to),
        data,
    }
}

/// The stored document a note refers to, if it is this company's.
pub fn referenced_document(
    issuing: &Issuing,
    company: u64,
    id: Option<u64>,
) -> Result<Option<ReferencedDocument>, ApiError> {
    let Some(id) = id else { return Ok(None) };
    let Some(doc) = issuing.store.document(id)? else {
        return Ok(None);
    };
    if doc.company_id != company {
        return Ok(None);
    }
    let (Some(code), Some(scheme), Some(kind)) = (
        doc.code.clone(),
        doc.code_scheme
            .as_deref()
            .and_then(CodeScheme::from_scheme_name),
        DocumentKind::from_code(doc.document_type),
    ) else {
        return Ok(None);
    };
    Ok(Some(ReferencedDocument {
        id: doc.id,
        number: doc.full_number(),
        code,
        scheme,
        issue_date: doc.issue_date,
        kind,
    }))
}

fn signing_key(issuing: &Issuing, setup: &IssuerSetup) -> Result<Arc<SigningKey>, ApiError> {
    let cert = &setup.certificate;
    issuing
        .keys
        .get_or_load(setup.company.id, &cert.serial, || {
            SigningKey::from_pkcs12(&cert.pkcs12_der, &cert.password)
        })
        .map_err(|e| ApiError::validation("certificado", e.to_string()))
}

/// Builds on the signer pool (never on an HTTP worker).
async fn build(
    issuing: &Issuing,
    mapped: &MappedDocument,
    setup: &IssuerSetup,
    key: Arc<SigningKey>,
    env: Environment,
    number: u64,
) -> Result<IssuedDocument, ApiError> {
    let context = issuer_context(setup, env, number, colombia_now());
    let input = IssueRequest {
        document: mapped.document.clone(),
        context,
        key,
    };
    // The actor queues the build; the result comes straight from the pool.
    let queued = issuing
        .builder
        .send(Build::new(input))
        .await
        .map_err(|e| ApiError::Internal(format!("document builder unavailable: {e}")))?;
    queued
        .await
        .map_err(|e| ApiError::Internal(format!("building the document: {e}")))
}

/// Records the build on `doc` and hands its files over (moved, not copied:
/// the XML is ~10 kB and the ZIP a few more).
fn apply_build(doc: &mut DocumentRecord, issued: IssuedDocument) -> DocumentFiles {
    doc.pending_build = false;
    doc.code = Some(issued.code);
    doc.code_scheme = Some(issued.scheme.scheme_name().to_string());
    doc.qr_url = Some(issued.qr_url);
    doc.total = issued.totals.payable.round_dp(2).to_string();
    doc.updated_at = Utc::now();
    DocumentFiles {
        xml: issued.xml,
        xml_name: issued.xml_name,
        zip: issued.zip,
        zip_name: issued.zip_name,
    }
}

/// Maps store refusals of phase one to the API's answers.
fn refusal(e: StoreError) -> ApiError {
    match e {
        StoreError::DuplicateReference { id } => ApiError::Conflict {
            code: "DUPLICATE_REFERENCE",
            message: format!("a document with this referencia_externa already exists (id {id})"),
            data: Some(json!({ "id": id })),
        },
        StoreError::LimitReached { limit } => ApiError::validation(
            "suscripcion",
            format!("the monthly limit of {limit} documents is reached"),
        ),
        StoreError::RangeExhausted { .. } => {
            ApiError::validation("resolucion", "the numbering range is exhausted")
        }
        other => other.into(),
    }
}

/// On whose behalf a document is issued: the key's company and environment,
/// and its user, whose WebSocket room hears of the document too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caller {
    pub company: u64,
    pub environment: Environment,
    pub user: Option<u64>,
}

/// Issues a mapped request for `caller`.
pub async fn issue(
    issuing: &Arc<Issuing>,
    caller: Caller,
    mapped: MappedDocument,
    request: Vec<u8>,
) -> Result<Issued, ApiError> {
    let Caller {
        company,
        environment: env,
        user,
    } = caller;
    let store = issuing.store.clone();
    // Production: always synchronous (spec 8).
    let asynchronous = mapped.asynchronous && env == Environment::Test;
    if mapped.transmit && env == Environment::Live && !issuing.authority_available().await {
        return Err(ApiError::TaxUnavailable(
            "the tax authority is unavailable (circuit breaker open); nothing was issued, try again later".into(),
        ));
    }

    let today = colombia_now().date_naive();
    let kind_code = mapped.kind.code();
    // Credentials come from the store's in-memory cache: no disk, no hop.
    let setup = load_setup(store.as_ref(), company, kind_code, today, None)?;
    let key = signing_key(issuing, &setup)?;

    // Everything is checked before a number is taken.
    let peek = store.next_number(&setup.resolution)?;
    let ctx = issuer_context(&setup, env, peek, colombia_now());
    let cert = CertificateValidity {
        not_before: key.not_before(),
        not_after: key.not_after(),
    };
    let totals = validate_and_total(&mapped.document, &ctx, Some(cert))
        .map_err(|errors| mapped.validation_error(&errors))?;
    mapped.check_declared(&totals)?;

    let limit = setup
        .company
        .monthly_document_limit
        .map(u64::from)
        .unwrap_or(DEFAULT_MONTHLY_LIMIT);
    let period = today.year() as u32 * 100 + today.month();
    let new = NewDocument {
        company_id: company,
        environment: env,
        user_id: user,
        document_type: kind_code,
        resolution_id: setup.resolution.id,
        issue_date: today,
        external_reference: mapped.external_reference.clone(),
        customer: Some(mapped.customer.clone()),
        request,
        monthly_limit: Some(limit),
        period,
    };
    // Phase one (reference and limit checks, number, record, customer
    // upsert) is in memory under the store's numbering lock and refuses
    // before it writes anything. Not flushed: until phase two is durable
    // nothing was promised (a crash leaves a half-built document that resume
    // rebuilds with its number).
    let mut doc = store.create_document(new).map_err(refusal)?;

    let issued = build(issuing, &mapped, &setup, key, env, doc.number).await?;
    let files = apply_build(&mut doc, issued);
    doc.state = if mapped.transmit {
        state::QUEUED
    } else {
        state::DRAFT
    };
    let job = mapped.transmit.then(|| new_job(&doc));
    let entry = history(
        "api",
        "issued",
        doc.state,
        json!({ "code": doc.code, "async": asynchronous }),
    );
    // Phase two: the files are durable before the record pointing at them
    // is written, and the record before the client hears of it. The store's
    // flusher does both in one group commit; no thread blocks waiting.
    let staged = store.stage_files(doc.id, &files)?;
    let job = store.commit_staged(doc.clone(), staged, job, entry).await?;

    match job {
        None => Ok(Issued::Done {
            doc,
            xml: files.xml,
            transmission: None,
        }),
        Some(job) if asynchronous => {
            issuing.schedule(&job);
            Ok(Issued::Queued {
                doc,
                job_id: job.id,
            })
        }
        Some(job) => {
            let (sent, outcome) = issuing
                .transmit(doc.id, "api")
                .await
                .map_err(|e| ApiError::Internal(e.to_string()))?;
            if let JobOutcome::RetryAt(at) = outcome {
                let mut job = job;
                job.run_at_ms = at;
                issuing.schedule(&job);
            }
            Ok(Issued::Done {
                doc: sent.doc,
                xml: files.xml,
                transmission: Some(Box::new(sent.transmission)),
            })
        }
    }
}

/// Builds a stored document again from its request, with the number it
/// holds and a new signing instant: a half-built one after a crash, or a
/// draft or rejected one being resent. The caller stores the result.
async fn build_again(
    issuing: &Arc<Issuing>,
    mut doc: DocumentRecord,
) -> Result<(DocumentRecord, DocumentFiles), ApiError> {
    let raw = issuing.store.document_request(doc.id)?.ok_or_else(|| {
        ApiError::Internal(format!("the request of document {} is missing", doc.id))
    })?;
    let req: FacturacionRequest = crate::api::json::parse(&raw)?;
    let reference = referenced_document(issuing, doc.company_id, req.id_documento_referencia)?;
    let mapped = to_document(&req, reference.as_ref())?;
    let setup = load_setup(
        issuing.store.as_ref(),
        doc.company_id,
        doc.document_type,
        doc.issue_date,
        Some(doc.resolution_id),
    )?;
    let key = signing_key(issuing, &setup)?;
    let issued = build(issuing, &mapped, &setup, key, doc.environment, doc.number).await?;
    let files = apply_build(&mut doc, issued);
    doc.issue_date = colombia_now().date_naive();
    Ok((doc, files))
}

/// A rebuilt document moved to state `to` (with its transmission job, if
/// any): files, record, history and job durable in one group commit.
async fn store_rebuilt(
    issuing: &Issuing,
    doc: &mut DocumentRecord,
    files: &DocumentFiles,
    to: u8,
    job: Option<Job>,
    entry: HistoryEntry,
) -> Result<Option<Job>, ApiError> {
    let from = doc.state;
    doc.state = to;
    let entry = HistoryEntry {
        from_state: Some(from),
        ..entry
    };
    let staged = issuing.store.stage_files(doc.id, files)?;
    Ok(issuing
        .store
        .commit_staged(doc.clone(), staged, job, entry)
        .await?)
}

/// A half-built document found at start-up, rebuilt and kept as a draft.
pub async fn rebuild(issuing: &Arc<Issuing>, doc: DocumentRecord) -> Result<(), ApiError> {
    let (mut doc, files) = build_again(issuing, doc).await?;
    let entry = history(
        "worker",
        "rebuilt",
        state::DRAFT,
        json!({ "code": doc.code }),
    );
    store_rebuilt(issuing, &mut doc, &files, state::DRAFT, None, entry).await?;
    Ok(())
}

/// `reenviar`: a draft or rejected document is built again (new signing
/// instant, same number), signed and transmitted synchronously.
pub async fn resend(issuing: &Arc<Issuing>, doc: DocumentRecord) -> Result<Issued, ApiError> {
    let (mut doc, files) = build_again(issuing, doc).await?;
    let entry = history("api", "resend", state::QUEUED, json!({ "code": doc.code }));
    let job = Some(new_job(&doc));
    let job = store_rebuilt(issuing, &mut doc, &files, state::QUEUED, job, entry)
        .await?
        .ok_or_else(|| ApiError::Internal("resend job not stored".into()))?;
    let (sent, outcome) = issuing
        .transmit(doc.id, "api")
        .await
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    if let JobOutcome::RetryAt(at) = outcome {
        let mut job = job;
        job.run_at_ms = at;
        issuing.schedule(&job);
    }
    Ok(Issued::Done {
        doc: sent.doc,
        xml: files.xml,
        transmission: Some(Box::new(sent.transmission)),
    })
}
