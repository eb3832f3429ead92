//! Payroll on the issuing path every document takes: the idempotency
//! claim, the company's setup (its payroll software and `NOM` resolution),
//! the number taken in phase one, the build on the signer pool
//! (`engine::payroll`), phase two in one group commit, then the same
//! transmitter, breaker, retries and recovery as invoices — the
//! transmission job sends payroll with `SendNominaSync`. A payroll is a
//! `DocumentRecord` of type 11 (NominaIndividual) or 12 (its adjustment),
//! `api` = `nomina`, so crash recovery and "never sent twice" apply as to
//! any document.

use std::sync::Arc;

use chrono::{DateTime, Datelike, FixedOffset, NaiveDate};
use emisor_store::{
    DocumentRecord, Environment, NewDocument, ResolutionChoice, SoftwareKind, PAYROLL_DOCUMENT_TYPE,
};

use super::context::{colombia_now, issuer_context, load_setup_for, setup_from, IssuerSetup};
use super::duplicates::Payload;
use super::error::{IssueError, IssueResult};
use super::issue::{issue_numbered, issued_at, signing_key, Caller, Issued, DEFAULT_MONTHLY_LIMIT};
use super::kind::{PayrollType, StoredKind};
use super::request::{cap, named, Api};
pub use super::request::{PayrollRequest, PAYROLL_API};
use super::stored::{self, DomainRef};
use super::worker::PayrollIssueRequest;
use super::Issuing;
use crate::engine::payroll::model::PayrollDocument;
use crate::engine::payroll::totals::{validate_and_total, PayrollTotals};
use crate::engine::pipeline::IssuedDocument;
use crate::engine::signing_key::SigningKey;

/// The company's payroll setup: its payroll software and the resolution
/// numbering type 11 (adjustments take their numbers from it too).
pub(super) async fn setup(
    issuing: &Issuing,
    company: u64,
    env: Environment,
    resolution: Option<u64>,
) -> IssueResult<IssuerSetup> {
    load_setup_for(
        &issuing.store,
        SoftwareKind::Payroll,
        company,
        env,
        PAYROLL_DOCUMENT_TYPE,
        colombia_now().date_naive(),
        resolution,
    )
    .await
}

/// Builds on the signer pool.
pub(super) async fn build(
    issuing: &Issuing,
    document: &PayrollDocument,
    setup: &IssuerSetup,
    key: Arc<SigningKey>,
    env: Environment,
    (number, instant): (u64, DateTime<FixedOffset>),
) -> IssueResult<IssuedDocument> {
    let context = issuer_context(setup, env, number, instant);
    let input = PayrollIssueRequest {
        document: document.clone(),
        context,
        key,
    };
    issuing
        .builds
        .build(input.into())
        .await
        .map_err(|e| IssueError::Internal(format!("building the payroll: {e}")))
}

/// The idempotency claim (identical payload within the window, spec 7),
/// then [`issue`] in a task of its own, as `issue::submit` does.
pub async fn submit(
    issuing: &Arc<Issuing>,
    caller: Caller,
    request: PayrollRequest,
    canonical: Vec<u8>,
) -> IssueResult<Issued<PayrollTotals>> {
    let company = caller.company;
    let payload = Payload::new(canonical);
    super::issue::under_claim(issuing, company, None, payload.hash, {
        let issuing = issuing.clone();
        Box::pin(async move { issue(&issuing, caller, request, payload).await })
    })
    .await
}

/// The payroll an adjustment names by its CUNE: what the adjustment copies
/// from it.
#[derive(Debug, Clone)]
pub struct Predecessor {
    pub id: u64,
    /// Its full number (`NOM12`).
    pub number: String,
    pub issue_date: NaiveDate,
    /// What its caller sent (its JSON, as hashed).
    pub sent: Vec<u8>,
}

/// The payroll of `caller`'s company and environment whose CUNE is `cune`:
/// an adjustment's predecessor, with what its caller sent.
pub async fn predecessor(
    issuing: &Issuing,
    caller: Caller,
    cune: &str,
) -> IssueResult<Predecessor> {
    let original = by_code(issuing, caller.company, caller.environment, cune)
        .await?
        .ok_or_else(|| IssueError::NotFound(format!("payroll with CUNE {cune}")))?;
    let raw = issuing
        .store
        .document_request(original.id)
        .await?
        .ok_or_else(|| IssueError::Internal(format!("request of payroll {}", original.id)))?;
    Ok(Predecessor {
        id: original.id,
        number: original.full_number(),
        issue_date: original.issue_date,
        sent: stored::caller(&raw).to_vec(),
    })
}

/// An adjustment of the payroll whose CUNE is `cune`: its predecessor is
/// found among the caller's payrolls (as a note's original is), then
/// `complete` makes from it the payroll to issue and the caller's request
/// as canonical JSON (what it sent, with what it copies from the
/// predecessor), which go the way of [`submit`]. `E` is the API's error.
pub async fn submit_adjustment<E: From<IssueError>>(
    issuing: &Arc<Issuing>,
    caller: Caller,
    cune: &str,
    complete: impl FnOnce(&Predecessor) -> Result<(PayrollRequest, Vec<u8>), E>,
) -> Result<Issued<PayrollTotals>, E> {
    let found = predecessor(issuing, caller, cune).await?;
    let (request, canonical) = complete(&found)?;
    Ok(submit(issuing, caller, request, canonical).await?)
}

/// Everything checked before a number is taken; then number, build,
/// store, and transmit (synchronously: payroll has no async mode).
pub async fn issue(
    issuing: &Arc<Issuing>,
    caller: Caller,
    request: PayrollRequest,
    payload: Payload,
) -> IssueResult<Issued<PayrollTotals>> {
    let Caller {
        company,
        environment: env,
        ..
    } = caller;
    if request.transmit && env == Environment::Live && !issuing.authority_available().await {
        return Err(IssueError::TaxUnavailable(
            "the tax authority is unavailable (circuit breaker open); nothing was issued, try again later".into(),
        ));
    }
    let now = colombia_now();
    let today = now.date_naive();
    let choice = ResolutionChoice::Active {
        environment: env,
        document_type: PAYROLL_DOCUMENT_TYPE,
        date: today,
    };
    // Phase one and the build in one job on the signer pool, as
    // `issue::issue` does: the setup, the checks, then the number in memory
    // under the numbering lock; a crash before phase two leaves a
    // half-built payroll that resume rebuilds with its number.
    let store = issuing.store.clone();
    let transmit = request.transmit;
    issue_numbered(issuing, transmit, false, {
        let issuing = issuing.clone();
        move || {
            let (doc, (document, setup, key, totals)) = store.create_checked_blocking(
                company,
                SoftwareKind::Payroll,
                choice,
                |records| {
                    let setup = setup_from(
                        records,
                        SoftwareKind::Payroll,
                        env,
                        PAYROLL_DOCUMENT_TYPE,
                        today,
                    )?;
                    let key = signing_key(&issuing, &setup)?;
                    let (new, totals) =
                        checked_payroll(&request, &setup, &key, caller, today, payload)?;
                    let new = NewDocument {
                        issued_at: crate::clock::recorded(now),
                        ..new
                    };
                    Ok::<_, IssueError>((new, (request.document, setup, key, totals)))
                },
            )?;
            let input = PayrollIssueRequest {
                context: issuer_context(&setup, env, doc.number, issued_at(&doc)),
                document,
                key,
            };
            Ok((doc, input.into(), totals))
        }
    })
    .await
}

/// The document a payroll request makes for `caller`, and its totals, once
/// everything a number must not be taken for has been checked.
fn checked_payroll(
    request: &PayrollRequest,
    setup: &IssuerSetup,
    key: &SigningKey,
    caller: Caller,
    today: NaiveDate,
    payload: Payload,
) -> IssueResult<(NewDocument, PayrollTotals)> {
    if let Some(prefix) = &request.prefix {
        if *prefix != setup.resolution.prefix {
            return Err(IssueError::invalid(
                (request.fields)("prefix"),
                format!(
                    "the company's payroll resolution numbers with prefix {}",
                    setup.resolution.prefix
                ),
            ));
        }
    }
    if key.not_after() < crate::clock::now() {
        return Err(IssueError::invalid(
            "certificado",
            "the signing certificate has expired",
        ));
    }
    let totals = validate_and_total(&request.document)
        .map_err(|errors| IssueError::invalid_list(cap(named(&errors, |f| (request.fields)(f)))))?;
    let limit = setup
        .company
        .monthly_document_limit
        .map(u64::from)
        .unwrap_or(DEFAULT_MONTHLY_LIMIT);
    let new = NewDocument {
        company_id: caller.company,
        environment: caller.environment,
        user_id: caller.user,
        document_type: PayrollType::of(request.document.kind).code(),
        resolution_id: setup.resolution.id,
        issue_date: today,
        external_reference: None,
        customer: None,
        api: Api::Payroll.tag().map(str::to_string),
        list_keys: request.list_keys.clone(),
        request: stored::write(&payload.canonical, DomainRef::Payroll(&request.document))?,
        payload_hash: payload.hash,
        monthly_limit: Some(limit),
        period: today.year() as u32 * 100 + today.month(),
        queued: request.transmit,
        issued_at: None,
    };
    Ok((new, totals))
}

/// The company's payroll whose CUNE is `code`, if any (the original of an
/// adjustment or of a status query), through the store's code index.
pub async fn by_code(
    issuing: &Issuing,
    company: u64,
    env: Environment,
    code: &str,
) -> IssueResult<Option<DocumentRecord>> {
    // The code index is written with every built document, so this is one
    // look-up, not a scan; a code of another company or family is not found.
    let Some(id) = issuing.store.document_by_code(code.to_string()).await? else {
        return Ok(None);
    };
    Ok(issuing.store.document(id).await?.filter(|d| {
        d.company_id == company
            && StoredKind::of(d).is_some_and(StoredKind::is_payroll)
            && d.environment == env
            && d.code.as_deref() == Some(code)
    }))
}

/// `GET /nomina/estado`: asks the authority for a payroll's status and
/// records its verdict — an acceptance or a rejection the service had not
/// heard of (a lost answer, a send still being retried) — with its history,
/// the pending job dropped. Anything else (not found, no answer) leaves the
/// payroll as it is.
pub async fn refresh_status(
    issuing: &Issuing,
    mut doc: DocumentRecord,
) -> Result<DocumentRecord, super::transmit::TransmitError> {
    use crate::authority::port::{AuthorityRequest, AuthorityResponse};
    let Some(code) = doc.code.clone() else {
        return Ok(doc);
    };
    let target = issuing.target(doc.company_id, doc.environment).await?;
    let answer = issuing
        .call_authority(
            doc.company_id,
            target,
            AuthorityRequest::GetStatus { track_id: code },
        )
        .await;
    match answer {
        Ok(AuthorityResponse::Verdict(t)) if t.accepted() || t.known_rejection() => {
            let to = if t.accepted() {
                emisor_store::state::ACCEPTED
            } else {
                emisor_store::state::REJECTED
            };
            let job = issuing.store.job_for_document(doc.id).await?;
            let sent = issuing
                .finish(&mut doc, job.as_ref(), t, to, "api", "status_checked")
                .await?;
            Ok(sent.doc)
        }
        _ => Ok(doc),
    }
}
