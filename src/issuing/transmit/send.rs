//! One transmission of a stored document: asked about first when an
//! earlier send may have landed, re-dated when its day is over, sent with
//! the operation its kind says, and its outcome recorded before anyone is
//! told.

use chrono::Utc;
use emisor_actors::retry_scheduler::JobOutcome;
use emisor_actors::transmitter::TransmitFailure;
use emisor_store::{state, DocumentRecord, Job, MissingApplicationResponse};

use super::{failure_transmission, history, new_job, now_ms, tracked, Sent, TransmitError};
use crate::authority::port::{AuthorityRequest, AuthorityResponse, AuthorityTarget};
use crate::authority::Transmission;
use crate::engine::model::DocumentKind;
use crate::issuing::events;
use crate::issuing::kind::StoredKind;
use crate::issuing::same_day;
use crate::issuing::Issuing;

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
    pub(super) async fn transmit_document(
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
            let zip = crate::issuing::files::into_zip(std::mem::take(&mut files))
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
            let email = crate::issuing::mail::automatic_email(self, doc).await;
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
