//! One transmission of a stored document, every step written down before the
//! next: the job is marked in flight before the call, the answer is stored
//! before anyone is told. A job found in flight after a crash asks the
//! authority for the document's status first, so nothing is sent twice. A
//! document whose day is over is dated again before it is sent
//! ([`same_day`]: annex 1.9).

use chrono::Utc;
use emisor_actors::retry_scheduler::JobOutcome;
use emisor_actors::transmitter::{Submit, TransmitFailure};
use emisor_store::{
    state, Company, DocumentRecord, Environment, HistoryEntry, Job, MissingApplicationResponse,
};
use futures_util::future::BoxFuture;

use super::events;
use super::kind::StoredKind;
use super::same_day;
use super::Issuing;
use crate::authority::port::{AuthorityCall, AuthorityRequest, AuthorityResponse, AuthorityTarget};
use crate::authority::simulator;
use crate::authority::{Transmission, WsSigner};
use crate::engine::model::DocumentKind;

/// The authority's production service, for real companies with `sk_live_` keys.
pub const PRODUCTION_URL: &str = "https://vpfe.dian.gov.co/WcfDianCustomerServices.svc";
/// The authority's test service.
pub const HABILITACION_URL: &str = "https://vpfe-hab.dian.gov.co/WcfDianCustomerServices.svc";

/// What one transmission ended in, for the synchronous answer.
#[derive(Debug, Clone)]
pub struct Sent {
    pub doc: DocumentRecord,
    pub transmission: Transmission,
    /// The XML it carries now, when this transmission re-dated it for the
    /// day it was sent (`same_day`): the one its caller holds is stale.
    pub xml: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum TransmitError {
    #[error("document {0} not found")]
    NotFound(u64),
    #[error("document {0} has no files")]
    NoFiles(u64),
    #[error(transparent)]
    Store(#[from] emisor_store::StoreError),
    #[error("signing credentials: {0}")]
    Credentials(String),
    #[error("building the ZIP: {0}")]
    Zip(String),
    #[error("dating the document for its send: {0}")]
    Redate(String),
}

fn history(actor: &str, event: &str, from: u8, to: u8, data: serde_json::Value) -> HistoryEntry {
    HistoryEntry {
        at: Utc::now(),
        actor: actor.into(),
        event: event.into(),
        from_state: Some(from),
        to_state: Some(to),
        data,
    }
}

fn now_ms() -> i64 {
    Utc::now().timestamp_millis()
}

/// A transmission object for failures that never reached a verdict.
fn failure_transmission(description: String, retryable: bool) -> Transmission {
    Transmission {
        is_valid: false,
        status_code: String::new(),
        status_description: description.clone(),
        errors: vec![description],
        retryable,
        ..Transmission::default()
    }
}

/// The transmission with its tracking key (spec 2.4 `zipKey`, equal to the
/// record's `tax_track_id`): the authority's ZipKey when it gave one (async
/// sends), otherwise the document's code, which is what a status query for
/// a SendBillSync document takes.
fn tracked(mut t: Transmission, doc: &DocumentRecord) -> Transmission {
    if t.zip_key.is_none() {
        t.zip_key = doc.track_id.clone().or_else(|| doc.code.clone());
    }
    t
}

/// Whether a failed send may still have been processed by the authority:
/// anything but a call that never left (breaker open, connection refused)
/// or one the authority refused outright (503, 429).
fn may_have_landed(failure: &TransmitFailure<crate::authority::TransmitError>) -> bool {
    use crate::authority::TransmitError as E;
    match failure {
        TransmitFailure::BreakerOpen { .. } => false,
        TransmitFailure::Failed { error, .. } => !matches!(
            error,
            E::Connect(_)
                | E::Signing(_)
                | E::Http {
                    status: 429 | 503,
                    ..
                }
        ),
        TransmitFailure::Stopped => true,
    }
}

impl Issuing {
    /// Where this company's documents go in this environment. A configured
    /// URL wins; otherwise sandbox keys use the in-process simulator, and
    /// production keys the authority's production service — except for demo
    /// companies, which never leave the simulator (decisions.md §5).
    pub fn authority_url(&self, company: &Company, env: Environment) -> String {
        let sim = self
            .sim_url
            .as_deref()
            .map(|base| format!("{base}{}", simulator::SERVICE_PATH));
        let a = &self.settings.authority;
        let url = match env {
            Environment::Test => Some(&a.url).filter(|u| !u.is_empty()).cloned(),
            Environment::Live if company.demo => [&a.url_production, &a.url]
                .into_iter()
                .find(|u| !u.is_empty())
                .cloned(),
            Environment::Live => Some(&a.url_production).filter(|u| !u.is_empty()).cloned(),
        };
        match (url, env) {
            (Some(u), _) => u,
            (None, Environment::Live) if !company.demo => PRODUCTION_URL.to_string(),
            (None, _) => sim.unwrap_or_else(|| HABILITACION_URL.to_string()),
        }
    }

    /// URL and WS-Security credentials of a company.
    pub async fn target(
        &self,
        company_id: u64,
        env: Environment,
    ) -> Result<AuthorityTarget, TransmitError> {
        let company = self
            .store
            .company(company_id)
            .await?
            .ok_or_else(|| TransmitError::Credentials("company not found".into()))?;
        let cert = self
            .store
            .certificate(company_id)
            .await?
            .ok_or_else(|| TransmitError::Credentials("no certificate".into()))?;
        let key = self
            .keys
            .get_or_load(company_id, &cert.serial, || {
                crate::engine::signing_key::SigningKey::from_pkcs12(
                    cert.pkcs12_der.expose(),
                    cert.password.expose(),
                )
            })
            .map_err(|e| TransmitError::Credentials(e.to_string()))?;
        let signer = WsSigner::new(key.private_key().clone(), key.certificate_der().to_vec())
            .map_err(|e| TransmitError::Credentials(e.to_string()))?;
        Ok(AuthorityTarget {
            url: self.authority_url(&company, env),
            signer,
        })
    }

    /// Sends one call through the paced transmitter.
    async fn call(
        &self,
        company: u64,
        target: AuthorityTarget,
        request: AuthorityRequest,
    ) -> Result<AuthorityResponse, TransmitFailure<crate::authority::TransmitError>> {
        self.call_as(company, target, request, false).await
    }

    /// [`Self::call`]; `urgent` goes ahead of the background backlog.
    async fn call_as(
        &self,
        company: u64,
        target: AuthorityTarget,
        request: AuthorityRequest,
        urgent: bool,
    ) -> Result<AuthorityResponse, TransmitFailure<crate::authority::TransmitError>> {
        let call = AuthorityCall { target, request };
        let submit = if urgent {
            Submit::urgent(company, call)
        } else {
            Submit::new(company, call)
        };
        match self.transmitter.send(submit).await {
            Ok(outcome) => outcome,
            Err(_) => Err(TransmitFailure::Stopped),
        }
    }

    /// One call of any operation, through the paced transmitter.
    pub async fn call_authority(
        &self,
        company: u64,
        target: AuthorityTarget,
        request: AuthorityRequest,
    ) -> Result<AuthorityResponse, TransmitFailure<crate::authority::TransmitError>> {
        self.call(company, target, request).await
    }

    /// Is the breaker letting calls through (closed or half-open)?
    pub async fn authority_available(&self) -> bool {
        use emisor_actors::breaker::BreakerState;
        use emisor_actors::transmitter::GetBreakerState;
        match self.transmitter.addr().send(GetBreakerState).await {
            Ok(report) => {
                report.snapshot.state != BreakerState::Open
                    || report.next_probe_at.is_some_and(|t| t <= Utc::now())
            }
            Err(_) => false,
        }
    }

    /// Recovery's probe: one status query for a waiting document, through
    /// the breaker. Any answer means the authority is reachable again; a
    /// failure leaves everything as it is (no re-queue, no new events).
    async fn authority_answers(&self, waiting: &[DocumentRecord]) -> bool {
        let mut probe = None;
        for d in waiting {
            let Some(code) = d.code.clone() else { continue };
            if let Ok(target) = self.target(d.company_id, d.environment).await {
                probe = Some((d.company_id, target, code));
                break;
            }
        }
        let Some((company, target, track_id)) = probe else {
            return false;
        };
        self.call(company, target, AuthorityRequest::GetStatus { track_id })
            .await
            .is_ok()
    }

    /// Transmits a stored document once (resuming safely if a previous
    /// attempt may have reached the authority) and records the outcome.
    /// Returns what to do with its job next.
    pub async fn transmit(
        &self,
        doc_id: u64,
        actor: &str,
    ) -> Result<(Sent, JobOutcome), TransmitError> {
        let doc = self
            .store
            .document(doc_id)
            .await?
            .ok_or(TransmitError::NotFound(doc_id))?;
        self.transmit_document(doc, None, actor).await
    }

    /// [`Issuing::transmit`] for a document already read, with its job when
    /// the caller holds it.
    async fn transmit_document(
        &self,
        mut doc: DocumentRecord,
        job: Option<Job>,
        actor: &str,
    ) -> Result<(Sent, JobOutcome), TransmitError> {
        let store = self.store.clone();
        let files = store
            .document_files(doc.id)
            .await?
            .ok_or(TransmitError::NoFiles(doc.id))?;
        let mut job = match job {
            Some(j) => j,
            None => match store.job_for_document(doc.id).await? {
                Some(j) => j,
                None => store.put_job(new_job(&doc)).await?,
            },
        };
        let target = match self.target(doc.company_id, doc.environment).await {
            Ok(t) => t,
            Err(e) => {
                // Without credentials nothing can be sent: a business error.
                let t = failure_transmission(e.to_string(), false);
                let sent = self
                    .finish(
                        &mut doc,
                        Some(&job),
                        t,
                        state::REJECTED,
                        actor,
                        "credentials",
                    )
                    .await?;
                return Ok((sent, JobOutcome::Done));
            }
        };
        let code = doc.code.clone().unwrap_or_default();

        // A send may have reached the authority before a crash or a lost
        // answer: ask before sending again, and send again only when the
        // authority says it does not have the document.
        let mut asked = false;
        if job.in_flight && !code.is_empty() {
            let status = self
                .call(
                    doc.company_id,
                    target.clone(),
                    AuthorityRequest::GetStatus {
                        track_id: code.clone(),
                    },
                )
                .await;
            match status {
                // It arrived: record the verdict it got (a rejection too)
                // rather than send the same document to be judged again —
                // unless it was refused for its date, which a re-dated
                // send mends.
                Ok(AuthorityResponse::Verdict(t))
                    if t.accepted()
                        || (t.known_rejection() && !same_day::refused_for_its_date(&t)) =>
                {
                    let (to, event) = if t.accepted() {
                        (state::ACCEPTED, "status_confirmed")
                    } else {
                        (state::REJECTED, "status_rejected")
                    };
                    let sent = self
                        .finish(&mut doc, Some(&job), t, to, actor, event)
                        .await?;
                    return Ok((sent, JobOutcome::Done));
                }
                // Not found: it never arrived, send (a new code too, when
                // its day is over).
                Ok(AuthorityResponse::Verdict(t)) => {
                    asked = same_day::absent(&t) || same_day::refused_for_its_date(&t)
                }
                Ok(_) => {}
                Err(failure) => {
                    // Still unknown whether the earlier send landed: this
                    // attempt is spent asking; ask again next time.
                    job.attempts += 1;
                    return self.failed_attempt(doc, job, failure, actor).await;
                }
            }
        }
        self.send_dated(doc, job, files, target, asked, actor).await
    }

    /// Sends `doc` dated the day it is sent (annex 1.9, [`same_day`]):
    /// re-dated first when its day is over, and once more should the
    /// authority refuse it for its date because midnight came on the way.
    /// `asked`: the authority has just said it does not have its code.
    async fn send_dated(
        &self,
        mut doc: DocumentRecord,
        mut job: Job,
        mut files: emisor_store::DocumentFiles,
        target: AuthorityTarget,
        mut asked: bool,
        actor: &str,
    ) -> Result<(Sent, JobOutcome), TransmitError> {
        let mut redate = same_day::due(&doc, same_day::today());
        let mut redated = false;
        loop {
            if redate {
                match self.redate(&mut doc, &target, asked, actor).await? {
                    same_day::Redated::Ready(new) => {
                        files = new;
                        redated = true;
                    }
                    same_day::Redated::Known(t) => {
                        let (to, event) = if t.accepted() {
                            (state::ACCEPTED, "status_confirmed")
                        } else {
                            (state::REJECTED, "status_rejected")
                        };
                        let sent = self
                            .finish(&mut doc, Some(&job), t, to, actor, event)
                            .await?;
                        return Ok((sent, JobOutcome::Done));
                    }
                    same_day::Redated::Unasked(failure) => {
                        job.attempts += 1;
                        return self.failed_attempt(doc, job, failure, actor).await;
                    }
                    same_day::Redated::InProcess(t) => {
                        // Asked again, before anything, at the next attempt.
                        job.attempts += 1;
                        job.in_flight = true;
                        let t = failure_transmission(
                            format!(
                                "the authority has not settled the document's code yet: {}",
                                t.status_description
                            ),
                            true,
                        );
                        return self.retry_later(doc, job, t, false, actor).await;
                    }
                    same_day::Redated::Unbuildable(error) => {
                        let t = failure_transmission(error, false);
                        let sent = self
                            .finish(
                                &mut doc,
                                Some(&job),
                                t,
                                state::REJECTED,
                                actor,
                                "redate_failed",
                            )
                            .await?;
                        return Ok((sent, JobOutcome::Done));
                    }
                }
            }
            // The caller's XML is stale once re-dated: the new one goes back.
            let xml = redated.then(|| files.xml.clone());
            let zip_name = files.zip_name.clone();
            let zip = super::files::into_zip(std::mem::take(&mut files))
                .map_err(|e| TransmitError::Zip(e.to_string()))?;
            let (sent, outcome) = match self
                .send_once(doc, job, zip_name, zip, &target, actor)
                .await?
            {
                Once::Refused(d, j, _) if !redated && same_day::due(&d, same_day::today()) => {
                    // Midnight came between the check and the authority:
                    // dated again at once (it was refused: not accepted).
                    (doc, job, asked, redate) = (d, j, true, true);
                    continue;
                }
                Once::Refused(d, mut j, t) => {
                    // The authority's day is not ours yet (its clock runs
                    // ahead): tried again later, dated then.
                    j.in_flight = false;
                    let t = Transmission {
                        retryable: true,
                        ..t
                    };
                    self.retry_later(d, j, t, false, actor).await?
                }
                Once::Done(sent, outcome) => (sent, outcome),
            };
            return Ok((Sent { xml, ..sent }, outcome));
        }
    }

    /// One send of `doc`'s ZIP, its job marked in flight before the call;
    /// its outcome recorded, except a refusal for the document's date
    /// (the caller dates it again, or tries later).
    async fn send_once(
        &self,
        mut doc: DocumentRecord,
        mut job: Job,
        zip_name: String,
        zip: Vec<u8>,
        target: &AuthorityTarget,
        actor: &str,
    ) -> Result<Once, TransmitError> {
        job.in_flight = true;
        job.attempts += 1;
        let job = self.store.put_job(job).await?;
        // Every transmitted document is one issuing built: a type it does
        // not know is sent as an invoice, as any invoicing type is.
        let kind = StoredKind::of(&doc).unwrap_or(StoredKind::Invoicing(DocumentKind::Invoice));
        let request = kind.send(zip_name, zip);
        // A POS sale sent while its customer waits at the till goes ahead
        // of the background sends (retries, async documents).
        let urgent = actor == "api" && kind.goes_first();
        let answer = self
            .call_as(doc.company_id, target.clone(), request, urgent)
            .await;
        doc.attempts = job.attempts;
        match answer {
            Ok(response) => {
                let t = response
                    .into_transmission()
                    .unwrap_or_else(|| failure_transmission("unexpected answer".into(), true));
                if same_day::refused_for_its_date(&t) && kind.dated_the_day_it_is_sent() {
                    return Ok(Once::Refused(doc, job, t));
                }
                let to = if t.accepted() {
                    state::ACCEPTED
                } else {
                    state::REJECTED
                };
                let event = if t.accepted() { "accepted" } else { "rejected" };
                let sent = self
                    .finish(&mut doc, Some(&job), t, to, actor, event)
                    .await?;
                Ok(Once::Done(sent, JobOutcome::Done))
            }
            Err(failure) => {
                let mut job = job;
                // A call that timed out (or broke mid-way) may have been
                // processed: the next attempt asks GetStatus first.
                job.in_flight = may_have_landed(&failure);
                let (sent, outcome) = self.failed_attempt(doc, job, failure, actor).await?;
                Ok(Once::Done(sent, outcome))
            }
        }
    }

    /// Records a failed attempt (`job.attempts` already counts it), as
    /// [`Self::retry_later`] does.
    async fn failed_attempt(
        &self,
        doc: DocumentRecord,
        job: Job,
        failure: TransmitFailure<crate::authority::TransmitError>,
        actor: &str,
    ) -> Result<(Sent, JobOutcome), TransmitError> {
        let retryable = failure.is_retryable();
        let breaker_open = matches!(failure, TransmitFailure::BreakerOpen { .. });
        let t = failure_transmission(failure.to_string(), retryable);
        self.retry_later(doc, job, t, breaker_open, actor).await
    }

    /// An attempt that reached no verdict, answered `t` (`job.attempts`
    /// already counts it): final when `t` is not retryable or the attempts
    /// are spent (state 6), otherwise scheduled again in state 3 (5 when
    /// the breaker is open).
    async fn retry_later(
        &self,
        mut doc: DocumentRecord,
        mut job: Job,
        t: Transmission,
        breaker_open: bool,
        actor: &str,
    ) -> Result<(Sent, JobOutcome), TransmitError> {
        doc.attempts = job.attempts;
        let retryable = t.retryable;
        let t = tracked(t, &doc);
        if !retryable {
            let sent = self
                .finish(&mut doc, Some(&job), t, state::REJECTED, actor, "failed")
                .await?;
            return Ok((sent, JobOutcome::Done));
        }
        let Some(delay) = self.settings.resilience.retry_delay(job.attempts) else {
            let sent = self
                .finish(
                    &mut doc,
                    Some(&job),
                    t,
                    state::DEAD_LETTER,
                    actor,
                    "dead_letter",
                )
                .await?;
            return Ok((sent, JobOutcome::Done));
        };
        let to = if breaker_open {
            state::WAITING_AUTHORITY
        } else {
            state::QUEUED
        };
        let run_at = now_ms() + delay.as_millis() as i64;
        job.run_at_ms = run_at;
        let from = doc.state;
        doc.state = to;
        doc.transmission = serde_json::to_value(&t).ok();
        doc.updated_at = Utc::now();
        self.store
            .update_document_with_job(
                doc.clone(),
                job,
                history(
                    actor,
                    "retry_scheduled",
                    from,
                    to,
                    serde_json::json!({
                        "attempt": doc.attempts, "error": t.status_description, "run_at_ms": run_at,
                    }),
                ),
            )
            .await?;
        Ok((
            Sent {
                doc,
                transmission: t,
                xml: None,
            },
            JobOutcome::RetryAt(run_at),
        ))
    }

    /// Stores a final outcome, removes the job, tells the rooms.
    pub(crate) async fn finish(
        &self,
        doc: &mut DocumentRecord,
        job: Option<&Job>,
        t: Transmission,
        to: u8,
        actor: &str,
        event: &str,
    ) -> Result<Sent, TransmitError> {
        let t = tracked(t, doc);
        let from = doc.state;
        doc.state = to;
        doc.transmission = serde_json::to_value(&t).ok();
        if let Some(k) = t.zip_key.clone() {
            doc.track_id = Some(k);
        }
        doc.updated_at = Utc::now();
        let entry = history(
            actor,
            event,
            from,
            to,
            serde_json::to_value(&t).unwrap_or_default(),
        );
        if to == state::ACCEPTED && from != state::ACCEPTED {
            // The authority's ApplicationResponse (or why there is none)
            // and the customer's email are kept with the acceptance itself.
            let application_response = application_response(&t);
            doc.application_response_missing = missing_reason(&t, application_response.is_some());
            let email = super::mail::automatic_email(self, doc).await;
            let queued = self
                .store
                .finish_accepted(
                    doc.clone(),
                    job.map(|j| j.id),
                    entry,
                    application_response,
                    email,
                )
                .await?;
            if let Some((_, mail_job)) = queued {
                self.schedule(&mail_job);
            }
        } else {
            self.store
                .finish_document(doc.clone(), job.map(|j| j.id), entry)
                .await?;
        }
        if to == state::DEAD_LETTER {
            events::error(self, doc, &t).await;
        } else {
            events::update(self, doc, &t).await;
        }
        Ok(Sent {
            doc: doc.clone(),
            transmission: t,
            xml: None,
        })
    }

    /// `check_tax`: asks the authority about a queued document now; an
    /// acceptance is recorded at once (and its pending job dropped).
    pub async fn check_status(
        &self,
        mut doc: DocumentRecord,
    ) -> Result<DocumentRecord, TransmitError> {
        let Some(code) = doc.code.clone() else {
            return Ok(doc);
        };
        let target = self.target(doc.company_id, doc.environment).await?;
        if let Ok(AuthorityResponse::Verdict(t)) = self
            .call(
                doc.company_id,
                target,
                AuthorityRequest::GetStatus { track_id: code },
            )
            .await
        {
            if t.accepted() {
                let job = self.store.job_for_document(doc.id).await?;
                let sent = self
                    .finish(
                        &mut doc,
                        job.as_ref(),
                        t,
                        state::ACCEPTED,
                        "api",
                        "status_checked",
                    )
                    .await?;
                return Ok(sent.doc);
            }
        }
        Ok(doc)
    }

    /// Puts a job on its scheduler's timetable (emails have their own).
    pub fn schedule(&self, job: &Job) {
        let scheduler = if job.kind == super::mail::MAIL_JOB {
            self.mail.scheduler.get()
        } else {
            self.scheduler.get()
        };
        if let Some(s) = scheduler {
            s.do_send(emisor_actors::retry_scheduler::Schedule {
                job_id: job.id,
                run_at_ms: job.run_at_ms,
            });
        }
    }
}

/// The authority's ApplicationResponse in an answer, decoded.
fn application_response(t: &Transmission) -> Option<String> {
    use base64::Engine;
    let b64 = t.application_response_b64.as_deref()?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64.trim())
        .ok()?;
    String::from_utf8(bytes).ok()
}

/// Why an accepting answer leaves the document without an
/// ApplicationResponse (`None` when it has one): rule 90 ("Documento
/// procesado anteriormente") counts as the acceptance of an earlier send
/// and brings none of its own.
fn missing_reason(t: &Transmission, kept: bool) -> Option<MissingApplicationResponse> {
    match (kept, t.duplicate) {
        (true, _) => None,
        (false, true) => Some(MissingApplicationResponse::AlreadyProcessed),
        (false, false) => Some(MissingApplicationResponse::NotInAnswer),
    }
}

/// What one send came to.
enum Once {
    /// Its outcome, recorded.
    Done(Sent, JobOutcome),
    /// Refused for the document's date (annex 1.9), not recorded.
    Refused(DocumentRecord, Job, Transmission),
}

/// A fresh transmission job for a document, due now.
pub fn new_job(doc: &DocumentRecord) -> Job {
    Job {
        id: 0,
        kind: super::TRANSMIT_JOB.into(),
        company_id: doc.company_id,
        document_id: Some(doc.id),
        attempts: 0,
        run_at_ms: now_ms(),
        in_flight: false,
        payload: serde_json::Value::Null,
        created_at: Utc::now(),
    }
}

/// Whether a transmission job may send this document: it must be fully
/// built and queued, waiting for the authority, or dead-lettered.
fn transmittable(doc: &DocumentRecord) -> bool {
    !doc.pending_build
        && matches!(
            doc.state,
            state::QUEUED | state::WAITING_AUTHORITY | state::DEAD_LETTER
        )
}

/// The scheduler runs jobs through this.
pub struct JobRunner(pub std::sync::Arc<Issuing>);

impl emisor_actors::retry_scheduler::JobRunner for JobRunner {
    fn run(&self, job_id: u64) -> BoxFuture<'static, JobOutcome> {
        let issuing = self.0.clone();
        Box::pin(async move {
            let job = match issuing.store.job(job_id).await {
                Ok(job) => job,
                Err(e) => {
                    tracing::error!(job_id, error = %e, "reading the job");
                    return JobOutcome::RetryAt(now_ms() + 1000);
                }
            };
            let Some(job) = job else {
                return JobOutcome::Done; // finished elsewhere (resend, recovery)
            };
            if job.kind == super::webhooks::WEBHOOK_JOB {
                return super::webhooks::deliver(&issuing, job).await;
            }
            if job.kind == super::invoice_events::EVENT_JOB {
                return super::invoice_events::send::run_job(&issuing, job).await;
            }
            if job.kind == super::mail::MAIL_JOB {
                issuing.schedule(&job); // the mail scheduler's
                return JobOutcome::Done;
            }
            let Some(doc_id) = job.document_id else {
                return JobOutcome::Done;
            };
            let doc = match issuing.store.document(doc_id).await {
                Ok(Some(doc)) if transmittable(&doc) => doc,
                Ok(_) => {
                    // A job left by a crash before its document was queued
                    // (the document was rebuilt as a draft) or after it was
                    // finished: nothing to send.
                    if let Err(e) = issuing.store.remove_job(job.id).await {
                        tracing::error!(job_id, error = %e, "removing a stale job");
                    }
                    return JobOutcome::Done;
                }
                Err(e) => {
                    tracing::error!(doc_id, error = %e, "reading the document to send");
                    return JobOutcome::RetryAt(now_ms() + 1000);
                }
            };
            match issuing.transmit_document(doc, Some(job), "worker").await {
                Ok((_, outcome)) => outcome,
                Err(e) => {
                    tracing::error!(doc_id, error = %e, "transmission job failed");
                    JobOutcome::RetryAt(now_ms() + 5000)
                }
            }
        })
    }

    /// The job is still stored as the panicked run left it (one that was in
    /// flight asks the authority first): the usual retry delays, then the
    /// recovery interval, as for a dead letter. It is never dropped.
    fn after_panic(&self, _job_id: u64, panics: u32) -> JobOutcome {
        let r = &self.0.settings.resilience;
        let delay = r
            .retry_delay(panics)
            .unwrap_or_else(|| r.scaled(r.recovery_interval_s));
        JobOutcome::RetryAt(now_ms() + delay.as_millis() as i64)
    }

    fn stored(&self) -> BoxFuture<'static, Vec<emisor_actors::retry_scheduler::Schedule>> {
        let issuing = self.0.clone();
        Box::pin(async move {
            match issuing.store.jobs().await {
                Ok(jobs) => jobs
                    .iter()
                    .filter(|j| j.kind != super::mail::MAIL_JOB)
                    .map(|j| emisor_actors::retry_scheduler::Schedule {
                        job_id: j.id,
                        run_at_ms: j.run_at_ms,
                    })
                    .collect(),
                Err(e) => {
                    tracing::error!(error = %e, "reading the stored jobs to reschedule");
                    Vec::new()
                }
            }
        })
    }
}

/// Recovery (spec 3.1): documents waiting for the authority (5) or dead
/// (6) are queued again, with a fresh attempt budget, once it is available.
pub struct Recovery(pub std::sync::Arc<Issuing>);

impl emisor_actors::recovery_ticker::Recovery for Recovery {
    fn recover(&self) -> BoxFuture<'static, usize> {
        let issuing = self.0.clone();
        Box::pin(async move {
            let docs = match issuing
                .store
                .documents_in_states(None, vec![state::WAITING_AUTHORITY, state::DEAD_LETTER])
                .await
            {
                Ok(d) => d,
                Err(e) => {
                    tracing::error!(error = %e, "recovery could not list documents");
                    return 0;
                }
            };
            // Asked, not inferred from the breaker: an open breaker whose
            // pause is over says only that a probe may be tried.
            if docs.is_empty() || !issuing.authority_answers(&docs).await {
                return 0;
            }
            let mut n = 0;
            for mut doc in docs {
                let mut job = match issuing.store.job_for_document(doc.id).await {
                    Ok(Some(mut j)) => {
                        j.attempts = 0;
                        j.run_at_ms = now_ms();
                        j
                    }
                    Ok(None) => new_job(&doc),
                    Err(_) => continue,
                };
                // An earlier attempt may have reached the authority (a lost
                // answer): ask for the code's status before sending again.
                job.in_flight = true;
                let from = doc.state;
                doc.state = state::QUEUED;
                doc.updated_at = Utc::now();
                let entry = history(
                    "recovery",
                    "requeued",
                    from,
                    state::QUEUED,
                    serde_json::Value::Null,
                );
                if let Ok(job) = issuing
                    .store
                    .update_document_with_job(doc, job, entry)
                    .await
                {
                    issuing.schedule(&job);
                    n += 1;
                }
            }
            n
        })
    }
}

#[cfg(test)]
mod tests {
    use base64::Engine;

    use super::*;
    use crate::authority::soap::response::DianResponse;

    fn answer(valid: bool, errors: &[&str], ar: Option<&str>) -> Transmission {
        DianResponse {
            error_messages: errors.iter().map(|e| e.to_string()).collect(),
            is_valid: valid,
            status_code: if valid { "00" } else { "99" }.into(),
            status_description: "Procesado Correctamente.".into(),
            xml_base64_bytes: ar.map(|a| base64::engine::general_purpose::STANDARD.encode(a)),
            xml_document_key: Some("cufe".into()),
            ..DianResponse::default()
        }
        .into_transmission()
    }

    fn reason(t: &Transmission) -> Option<MissingApplicationResponse> {
        missing_reason(t, application_response(t).is_some())
    }

    /// An acceptance says whether the authority's ApplicationResponse came
    /// with it, and if not why: "already processed" is not "accepted before
    /// responses were kept".
    #[test]
    fn an_acceptance_records_why_it_has_no_application_response() {
        let ar = "<ApplicationResponse/>";
        let accepted = answer(true, &[], Some(ar));
        assert!(accepted.accepted());
        assert_eq!(application_response(&accepted).as_deref(), Some(ar));
        assert_eq!(reason(&accepted), None);

        let duplicate = answer(
            false,
            &["Regla: 90, Rechazo: Documento procesado anteriormente."],
            None,
        );
        assert!(duplicate.accepted() && duplicate.duplicate);
        assert_eq!(
            reason(&duplicate),
            Some(MissingApplicationResponse::AlreadyProcessed)
        );

        let bare = answer(true, &[], None);
        assert!(bare.accepted());
        assert_eq!(reason(&bare), Some(MissingApplicationResponse::NotInAnswer));
        let undecodable = Transmission {
            application_response_b64: Some("%%% not base64".into()),
            ..answer(true, &[], None)
        };
        assert_eq!(
            reason(&undecodable),
            Some(MissingApplicationResponse::NotInAnswer)
        );
    }
}
