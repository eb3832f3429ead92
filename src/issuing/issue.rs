//! Issuing one document: validate everything first (so a refused request
//! changes nothing), take the number and write a placeholder (phase one),
//! build and sign on the pool, make the files, record and transmission job
//! durable in one group commit (phase two), then transmit now or later.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use std::time::{Duration, Instant};

use chrono::{DateTime, Datelike, FixedOffset, NaiveDate, Utc};
use emisor_actors::document_builder::Pipeline;
use emisor_actors::idempotency::{Claim, Duplicate};
use emisor_actors::retry_scheduler::JobOutcome;
use emisor_store::{
    state, AsyncStore, DocumentFiles, DocumentRecord, Environment, HistoryEntry, Job, NewDocument,
    PayloadClaim, ResolutionChoice, SoftwareKind, StoreError, ZipFile,
};
use serde_json::json;

use super::context::{colombia_now, issuer_context, setup_from, IssuerSetup};
use super::duplicates::Payload;
use super::error::{IssueError, IssueResult};
use super::reference::resolve;
use super::request::DocumentRequest;
use super::stored::{self, DomainRef};
use super::transmit::{new_job, Sent};
use super::Issuing;
use crate::authority::Transmission;
use crate::engine::model::{colombia_offset, IssuerContext};
use crate::engine::pipeline::IssuedDocument;
use crate::engine::signing_key::SigningKey;
use crate::engine::totals::Totals;
use crate::engine::validate::{validate_and_total, CertificateValidity};
use crate::issuing::worker::{BuildRequest, IssueRequest};

/// Documents a month when the company has no plan of its own (decisions.md §4).
pub const DEFAULT_MONTHLY_LIMIT: u64 = 10_000;

/// The outcome of an issue, with the document's totals as issuing
/// computed and checked them (`T`: an invoicing document's [`Totals`], a
/// payroll's own), so that no caller computes them again.
#[derive(Debug)]
pub enum Issued<T = Totals> {
    /// Built (and, when asked, transmitted) before answering.
    Done {
        doc: DocumentRecord,
        xml: String,
        transmission: Option<Box<Transmission>>,
        totals: T,
    },
    /// Built and queued for background transmission.
    Queued {
        doc: DocumentRecord,
        job_id: u64,
        totals: T,
    },
}

impl<T> Issued<T> {
    /// The issued document's record.
    pub fn doc(&self) -> &DocumentRecord {
        match self {
            Issued::Done { doc, .. } | Issued::Queued { doc, .. } => doc,
        }
    }
}

pub(crate) fn history(actor: &str, event: &str, to: u8, data: serde_json::Value) -> HistoryEntry {
    HistoryEntry {
        at: Utc::now(),
        actor: actor.into(),
        event: event.into(),
        from_state: None,
        to_state: Some(to),
        data,
    }
}

pub(crate) fn signing_key(issuing: &Issuing, setup: &IssuerSetup) -> IssueResult<Arc<SigningKey>> {
    let cert = &setup.certificate;
    issuing
        .keys
        .get_or_load(setup.company.id, &cert.serial, || {
            SigningKey::from_pkcs12(cert.pkcs12_der.expose(), cert.password.expose())
        })
        .map_err(|e| IssueError::invalid("certificado", e.to_string()))
}

/// A new document's whole issue past its checks: phase one, the build and
/// the hand-over of phase two run in one job on the signer pool, whose
/// threads may block on the store (`phase_one` takes the number and says
/// what to build); the flusher answers the caller's task once phase two is
/// durable, and the task then transmits or queues. Each trip between
/// threads costs a thread wake-up: this path makes three (to the pool,
/// from it to the flusher, from the flusher back), not four (the pool's
/// answer woke the task on its way).
pub(crate) async fn issue_numbered<T: Send + 'static>(
    issuing: &Arc<Issuing>,
    transmit: bool,
    asynchronous: bool,
    phase_one: impl FnOnce() -> IssueResult<(DocumentRecord, BuildRequest, T)> + Send + 'static,
) -> IssueResult<Issued<T>> {
    let store = issuing.store.clone();
    let (tx, rx) = tokio::sync::oneshot::channel::<IssueResult<Built<T>>>();
    let answer = Answer(tx);
    // The id phase one numbered, or may have (0: none), for a document
    // the store went away from before its phase two was durable.
    let numbered = Arc::new(AtomicU64::new(0));
    let numbered_by_job = numbered.clone();
    // The flusher's group commit waits for this document (not for a
    // window's end) until the job is over.
    let incoming = store.incoming_commit();
    issuing
        .builds
        .run_then(
            move |pipeline| {
                let _incoming = incoming;
                let (doc, input, totals) = match phase_one() {
                    Ok(numbered) => numbered,
                    Err(e) => {
                        if let IssueError::Store(StoreError::UnsettledCommit { id, .. }) = &e {
                            numbered_by_job.store(*id, Ordering::SeqCst);
                        }
                        return answer.send(Err(e));
                    }
                };
                numbered_by_job.store(doc.id, Ordering::SeqCst);
                // Numbered but not built (an error, or a panic unwinding
                // through here): kept half-built, as phase one's record
                // always was (start-up rebuilds it).
                let mut unbuilt = KeepUnbuilt {
                    store: &store,
                    id: Some(doc.id),
                };
                if super::failpoint::build_fails() {
                    drop(unbuilt);
                    return answer.send(Err(building("FAILPOINT_BUILD: the build failed")));
                }
                match pipeline.build(input) {
                    Ok(issued) => {
                        unbuilt.id = None;
                        commit_built(&store, doc, issued, transmit, asynchronous, answer, totals)
                    }
                    Err(e) => {
                        drop(unbuilt);
                        answer.send(Err(building(e)))
                    }
                }
            },
            // A panic: the job's answer was dropped with it, and the
            // caller hears that the build stopped.
            |_| {},
        )
        .map_err(building)?;
    let built = rx
        .await
        .map_err(|_| building("the signer stopped before answering"))?;
    let (job, files, doc, totals) = match built {
        Ok(built) => built,
        Err(
            e @ IssueError::Store(StoreError::Unavailable(_) | StoreError::UnsettledCommit { .. }),
        ) => {
            // Numbered (or perhaps: phase one's commit lost its answer)
            // and its phase two refused: on PostgreSQL phase one is
            // committed, so the document waits half-built with its number
            // until it is built again (as a draft: its caller hears 503)
            // once the store answers.
            let id = numbered.load(Ordering::SeqCst);
            if id != 0 {
                super::resume::rebuild_when_back(issuing, id);
            }
            return Err(e);
        }
        Err(e) => return Err(e),
    };
    send_committed(issuing, doc, job, files, asynchronous, totals).await
}

/// Keeps a numbered document half-built when dropped: its build failed or
/// panicked (`id` taken away once the build succeeded and phase two has
/// it).
struct KeepUnbuilt<'a> {
    store: &'a AsyncStore,
    id: Option<u64>,
}

impl Drop for KeepUnbuilt<'_> {
    fn drop(&mut self) {
        let Some(id) = self.id else { return };
        if let Err(e) = self.store.keep_pending_blocking(id) {
            tracing::error!(error = %e, id, "a document whose build failed could not be kept half-built");
        }
    }
}

/// What phase two hands back: the stored job, the files, the document and
/// its totals.
type Built<T> = (Option<Job>, DocumentFiles, DocumentRecord, T);

/// Where a document's job answers its caller (from the signer when it
/// fails, from the flusher once phase two is durable).
struct Answer<T>(tokio::sync::oneshot::Sender<IssueResult<Built<T>>>);

impl<T> Answer<T> {
    fn send(self, result: IssueResult<Built<T>>) {
        // The caller may have gone; the document is issued all the same.
        let _ = self.0.send(result);
    }
}

fn building(e: impl std::fmt::Display) -> IssueError {
    IssueError::Internal(format!("building the document: {e}"))
}

/// Records the build on `doc` and hands its files over (moved, not copied:
/// the XML is ~10 kB and the ZIP a few more).
pub(crate) fn apply_build(doc: &mut DocumentRecord, issued: IssuedDocument) -> DocumentFiles {
    doc.pending_build = false;
    doc.code = Some(issued.code);
    doc.code_scheme = Some(issued.scheme.scheme_name().to_string());
    doc.qr_url = Some(issued.qr_url);
    // The document's worth (a health copay paid in advance not deducted),
    // as the answers' `total`; the XML's PayableAmount is net of it.
    doc.total = issued.totals.before_prepaid().round_dp(2).to_string();
    doc.updated_at = Utc::now();
    DocumentFiles {
        xml: issued.xml,
        xml_name: issued.xml_name,
        zip_name: issued.zip_name,
        zip: ZipFile::Derived {
            at: issued.signed_at,
        },
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

/// A refused claim. A request naming a reference is keyed by it: when its
/// payload (which includes the reference) already made a document, that
/// document exists with this reference, and the client retrying is told so.
pub(crate) fn duplicate(d: Duplicate, has_reference: bool) -> IssueError {
    match d {
        Duplicate::Payload {
            document_id: Some(id),
        } if has_reference => IssueError::DuplicateReference { id },
        Duplicate::InProgress => IssueError::DuplicateInProgress,
        Duplicate::Payload { document_id } => IssueError::DuplicatePayload { id: document_id },
    }
}

/// The whole issuing path for an API: the idempotency claim (reference and
/// identical payload, spec 7), then [`issue`] in a task of its own — a
/// client that disconnects drops its handler, never a document half way
/// (number taken, not yet built or sent). `canonical` is the caller's
/// request as canonical JSON: hashed for the duplicate window and stored.
pub async fn submit(
    issuing: &Arc<Issuing>,
    caller: Caller,
    request: DocumentRequest,
    canonical: Vec<u8>,
) -> IssueResult<Issued> {
    submit_recording(issuing, caller, request, |_| Ok(canonical)).await
}

/// [`submit`], the caller's request as canonical JSON made by `canonical`
/// once the note's original is found, from its id: for an API that records
/// the id of an original its caller named by its code, so that the request
/// is hashed and stored as it always was.
pub async fn submit_recording(
    issuing: &Arc<Issuing>,
    caller: Caller,
    request: DocumentRequest,
    canonical: impl FnOnce(Option<u64>) -> IssueResult<Vec<u8>>,
) -> IssueResult<Issued> {
    let mut request = request;
    request.check_paid()?;
    // A note's original is looked up before the claim: a request naming
    // none that fits is refused as it would be alone.
    let original = resolve(issuing, (caller.company, caller.environment), &mut request).await?;
    let canonical = canonical(original)?;
    let company = caller.company;
    let reference = request.external_reference.clone();
    let payload = Payload::new(canonical);
    under_claim(issuing, company, reference, payload.hash, {
        let issuing = issuing.clone();
        Box::pin(async move { issue(&issuing, caller, request, payload).await })
    })
    .await
}

/// Runs `work` (one document's issue) under the idempotency claim of its
/// reference and payload, in a task of its own, and completes the claim
/// with the document's id. Every family's `submit` goes through here.
/// `work` comes boxed: an issue's future is large, and each future that
/// held it by value would copy it whole at every move (the handler's, the
/// spawned task's; measured in docs/performance.md).
pub(crate) async fn under_claim<T: 'static>(
    issuing: &Arc<Issuing>,
    company: emisor_store::CompanyId,
    reference: Option<String>,
    payload_hash: [u8; 32],
    work: Pin<Box<dyn Future<Output = IssueResult<Issued<T>>> + 'static>>,
) -> IssueResult<Issued<T>> {
    let has_reference = reference.is_some();
    let guard = issuing
        .claims
        .claim(Claim {
            company,
            reference,
            payload_hash,
            now: Instant::now(),
        })
        .await
        .map_err(|d| duplicate(d, has_reference))?;
    // The guard releases the reference on every early return (drop).
    let shared = SharedClaim::take(issuing, company, payload_hash, has_reference).await?;
    // The shared claim is settled in the task too: a client that leaves
    // does not leave it in progress.
    let issued = actix_web::rt::spawn(async move {
        let issued = work.await;
        match &issued {
            Ok(issued) => shared.complete(issued.doc().id).await,
            Err(_) => shared.release().await,
        }
        issued
    })
    .await
    .map_err(|e| IssueError::Internal(format!("issuing task failed: {e}")))??;
    guard.complete(issued.doc().id, Instant::now());
    Ok(issued)
}

/// The payload's claim in the duplicate window every node shares, on a
/// store several nodes serve from (PostgreSQL); nothing on one that a
/// single process owns, whose claim table is the whole window.
struct SharedClaim {
    issuing: Arc<Issuing>,
    company: emisor_store::CompanyId,
    payload_hash: [u8; 32],
    token: Option<i64>,
}

impl SharedClaim {
    async fn take(
        issuing: &Arc<Issuing>,
        company: emisor_store::CompanyId,
        payload_hash: [u8; 32],
        has_reference: bool,
    ) -> IssueResult<SharedClaim> {
        let mut claim = SharedClaim {
            issuing: issuing.clone(),
            company,
            payload_hash,
            token: None,
        };
        if !issuing.store.is_shared() {
            return Ok(claim);
        }
        let window = issuing.claims.window();
        // A request being processed holds its payload at least this long,
        // however short the window: a node that dies mid-request leaves
        // its claim to expire.
        let hold = window.max(SHARED_CLAIM_HOLD);
        let refused = match issuing
            .store
            .claim_payload(company, payload_hash, hold, window)
            .await?
        {
            PayloadClaim::Claimed { token } => {
                claim.token = Some(token);
                return Ok(claim);
            }
            PayloadClaim::InProgress if has_reference => Duplicate::InProgress,
            PayloadClaim::InProgress => Duplicate::Payload { document_id: None },
            PayloadClaim::Made { document_id } => Duplicate::Payload {
                document_id: Some(document_id),
            },
        };
        Err(duplicate(refused, has_reference))
    }

    /// The payload made `document_id`. A failure is logged: the claim
    /// then stays in progress until it expires, refusing the payload as
    /// it should.
    async fn complete(self, document_id: u64) {
        let Some(token) = self.token else { return };
        let window = self.issuing.claims.window();
        if let Err(e) = self
            .issuing
            .store
            .complete_payload(self.company, self.payload_hash, token, document_id, window)
            .await
        {
            tracing::warn!(error = %e, document_id, "recording the payload in the shared duplicate window");
        }
    }

    /// Nothing was made: the payload is free again. A failure is logged:
    /// the claim then expires by itself.
    async fn release(self) {
        let Some(token) = self.token else { return };
        if let Err(e) = self
            .issuing
            .store
            .release_payload(self.company, self.payload_hash, token)
            .await
        {
            tracing::warn!(error = %e, "releasing a payload's shared claim");
        }
    }
}

/// The least time a shared claim of a request in progress is held.
const SHARED_CLAIM_HOLD: Duration = Duration::from_secs(60);

/// Issues a request for `caller`; `request` is what the caller sent, kept
/// with the document (to rebuild it, and for the duplicate window).
pub async fn issue(
    issuing: &Arc<Issuing>,
    caller: Caller,
    mut mapped: DocumentRequest,
    request: Payload,
) -> IssueResult<Issued> {
    let Caller {
        company,
        environment: env,
        ..
    } = caller;
    resolve(issuing, (company, env), &mut mapped).await?;
    let store = issuing.store.clone();
    // Production: always synchronous (spec 8).
    let asynchronous = mapped.asynchronous && env == Environment::Test;
    if mapped.transmit && env == Environment::Live && !issuing.authority_available().await {
        return Err(IssueError::TaxUnavailable(
            "the tax authority is unavailable (circuit breaker open); nothing was issued, try again later".into(),
        ));
    }

    let now = colombia_now();
    let today = now.date_naive();
    let kind_code = mapped.kind.code();
    let choice = ResolutionChoice::Active {
        environment: env,
        document_type: kind_code,
        date: today,
    };
    // Phase one, then the build, in one job on the signer pool: the
    // issuer's records, everything checked before a number is taken, then
    // the number, record and customer upsert in memory under the store's
    // numbering lock (refusing before it writes anything). Not flushed:
    // until phase two is durable nothing was promised (a crash leaves a
    // half-built document that resume rebuilds with its number).
    let transmit = mapped.transmit;
    issue_numbered(issuing, transmit, asynchronous, {
        let issuing = issuing.clone();
        move || {
            let customer = mapped.customer.identification_number.clone();
            let (doc, (document, context, key, totals)) = store.create_checked_for_blocking(
                company,
                SoftwareKind::Invoicing,
                choice,
                Some(&customer),
                |records| {
                    let setup =
                        setup_from(records, SoftwareKind::Invoicing, env, kind_code, today)?;
                    let key = signing_key(&issuing, &setup)?;
                    let (new, totals, context) =
                        checked_document(&mut mapped, &setup, &key, caller, now, request)?;
                    Ok::<_, IssueError>((new, (mapped.document, context, key, totals)))
                },
            )?;
            // The context the checks used, with the number taken and the
            // signing instant (the issuer's setup is the same).
            let input = IssueRequest {
                document,
                context: IssuerContext {
                    number: doc.number,
                    issue_instant: issued_at(&doc),
                    ..context
                },
                key,
                totals: Some(totals.clone()),
            };
            Ok((doc, input.into(), totals))
        }
    })
    .await
}

/// The document `mapped` makes for `caller`, its totals and the issuer's
/// context they were checked in, once everything a number must not be
/// taken for has been checked: the request against the issuer's setup and
/// certificate, and the totals it declares.
fn checked_document(
    mapped: &mut DocumentRequest,
    setup: &IssuerSetup,
    key: &SigningKey,
    caller: Caller,
    now: DateTime<FixedOffset>,
    request: Payload,
) -> IssueResult<(NewDocument, Totals, IssuerContext)> {
    let env = caller.environment;
    let today = now.date_naive();
    let ctx = issuer_context(setup, env, setup.next_number, now);
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
    let new = NewDocument {
        company_id: caller.company,
        environment: env,
        user_id: caller.user,
        document_type: mapped.kind.code(),
        resolution_id: setup.resolution.id,
        issue_date: today,
        external_reference: mapped.external_reference.clone(),
        // Only the store's upsert reads it from here on.
        customer: Some(std::mem::take(&mut mapped.customer)),
        api: mapped.api.tag().map(str::to_string),
        list_keys: mapped.list_keys_with(&totals),
        request: stored::write(&request.canonical, DomainRef::Invoicing(&mapped.document))?,
        payload_hash: request.hash,
        monthly_limit: Some(limit),
        period: today.year() as u32 * 100 + today.month(),
        queued: mapped.transmit,
        issued_at: crate::clock::recorded(now),
    };
    Ok((new, totals, ctx))
}

/// Phase two of a document just built (any family), handed to the store's
/// flusher at once: files, record, history and job durable in one group
/// commit (the files before the record pointing at them, the record before
/// the client hears of it). Await the result, then [`send_committed`].
fn commit_built<T: Send + 'static>(
    store: &AsyncStore,
    mut doc: DocumentRecord,
    issued: IssuedDocument,
    transmit: bool,
    asynchronous: bool,
    answer: Answer<T>,
    totals: T,
) {
    let files = apply_build(&mut doc, issued);
    doc.state = if transmit {
        state::QUEUED
    } else {
        state::DRAFT
    };
    let job = transmit.then(|| new_job(&doc));
    let entry = history(
        "api",
        "issued",
        doc.state,
        json!({ "code": doc.code, "async": asynchronous }),
    );
    // The answer travels with the writes, sent on once they are durable.
    store.commit_document_then(doc, files, job, entry, move |result| {
        answer.send(
            result
                .map(|(job, files, doc)| (job, files, doc, totals))
                .map_err(IssueError::from),
        )
    });
}

/// After phase two: the answer, the document transmitted now
/// (synchronous) or its job queued.
async fn send_committed<T>(
    issuing: &Arc<Issuing>,
    doc: DocumentRecord,
    job: Option<Job>,
    files: DocumentFiles,
    asynchronous: bool,
    totals: T,
) -> IssueResult<Issued<T>> {
    match job {
        None => Ok(Issued::Done {
            doc,
            xml: files.xml,
            transmission: None,
            totals,
        }),
        Some(job) if asynchronous => {
            issuing.schedule(&job);
            Ok(Issued::Queued {
                doc,
                job_id: job.id,
                totals,
            })
        }
        Some(job) => {
            let sent = transmit_now(issuing, doc.id, job).await?;
            Ok(Issued::Done {
                doc: sent.doc,
                xml: sent.xml.unwrap_or(files.xml),
                transmission: Some(Box::new(sent.transmission)),
                totals,
            })
        }
    }
}

/// When a document is issued (its code's date and time), in Colombia's
/// offset: the instant its number was taken, or the one it was last built
/// at anew ([`DocumentRecord::instant`]).
pub(crate) fn issued_at(doc: &DocumentRecord) -> DateTime<FixedOffset> {
    doc.instant().with_timezone(&colombia_offset())
}

/// Dates `doc` at `instant` (its issue date `date`): the record keeps the
/// instant itself unless it is the one its number was taken at, so a
/// rebuild after a crash or a power cut finds the last instant committed.
pub(crate) fn date_at(doc: &mut DocumentRecord, instant: DateTime<FixedOffset>, date: NaiveDate) {
    let instant = instant.with_timezone(&Utc);
    doc.issue_date = date;
    doc.issued_at = (instant != doc.created_at).then_some(instant);
}

/// Transmits document `id` now, for the caller who waits for the answer;
/// a retry the transmission asks for is scheduled on `job`, its job.
pub(crate) async fn transmit_now(issuing: &Issuing, id: u64, job: Job) -> IssueResult<Sent> {
    let (sent, outcome) = issuing
        .transmit(id, "api")
        .await
        .map_err(|e| IssueError::Internal(e.to_string()))?;
    if let JobOutcome::RetryAt(at) = outcome {
        let mut job = job;
        job.run_at_ms = at;
        issuing.schedule(&job);
    }
    Ok(sent)
}
