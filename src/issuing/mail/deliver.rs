//! One attempt of an email job: build the message, hand it to the mailer,
//! then write down what happened — the log entry with the attempt, and the
//! job removed (sent, or no retry left) or moved to its next run — in one
//! durable write. A crash before that write leaves the job as it was: it
//! runs again after the restart with the same Message-ID.

use std::sync::Arc;

use chrono::Utc;
use emisor_actors::mailer::SendMail;
use emisor_actors::retry_scheduler::{JobOutcome, Schedule};
use emisor_store::{email_status, EmailAttempt, EmailJob, EmailLog, EventRecord, Job};
use futures_util::future::BoxFuture;

use super::message::{self, BuildError};
use super::MAIL_JOB;
use crate::issuing::Issuing;

fn now_ms() -> i64 {
    Utc::now().timestamp_millis()
}

/// When to try again after `failed` attempts: one retry per configured
/// `mail_retry_delays_s`, scaled; `None` when they are spent.
fn retry_delay(issuing: &Issuing, failed: u32) -> Option<std::time::Duration> {
    let r = &issuing.settings.resilience;
    let i = (failed.max(1) - 1) as usize;
    r.mail_retry_delays_s.get(i).map(|&s| r.scaled(s))
}

/// Runs one attempt of the email job `job` and stores its outcome.
pub async fn attempt(issuing: &Issuing, mut job: Job) -> JobOutcome {
    let store = &issuing.store;
    let Some(email_id) = job.payload.get("email_id").and_then(|v| v.as_u64()) else {
        return remove(issuing, job.id).await;
    };
    let log = match store.email_log(email_id).await {
        Ok(Some(log)) if log.status == email_status::QUEUED => log,
        Ok(_) => {
            // Its log never landed (a crash between the two writes), or it
            // was finished already: nothing to send.
            return remove(issuing, job.id).await;
        }
        Err(e) => {
            tracing::error!(email_id, error = %e, "reading an email log");
            return JobOutcome::RetryAt(now_ms() + 1000);
        }
    };
    let doc = match store.document(log.document_id).await {
        Ok(Some(doc)) => doc,
        Ok(None) => {
            let error = BuildError::Permanent("the document no longer exists".into());
            return record(issuing, log, job, Err(error), None).await;
        }
        Err(e) => {
            tracing::error!(email_id, error = %e, "reading the document to mail");
            return JobOutcome::RetryAt(now_ms() + 1000);
        }
    };
    job.attempts += 1;
    let built = match message::build(issuing, &doc, &log).await {
        Ok(b) => b,
        Err(e) => return record(issuing, log, job, Err(e), None).await,
    };
    let sent = issuing
        .mail
        .mailer
        .send(SendMail {
            message_id: built.message_id.clone(),
            envelope: built.envelope.clone(),
            raw: built.raw.clone(),
        })
        .await
        .unwrap_or_else(|e| Err(format!("mailer unavailable: {e}")))
        .map_err(BuildError::Transient);
    record(issuing, log, job, sent.map(|_| ()), Some(built)).await
}

/// Removes a job with nothing to send. A removal that fails (the store
/// away) is tried again rather than left: a job left stored would run
/// again after a restart, or on the node that takes it up.
async fn remove(issuing: &Issuing, job_id: u64) -> JobOutcome {
    match issuing.store.remove_job(job_id).await {
        Ok(()) => JobOutcome::Done,
        Err(e) => {
            tracing::error!(job_id, error = %e, "removing an email job with nothing to send");
            JobOutcome::RetryAt(now_ms() + 1000)
        }
    }
}

/// Writes the attempt down and says what comes next.
async fn record(
    issuing: &Issuing,
    mut log: EmailLog,
    mut job: Job,
    result: Result<(), BuildError>,
    built: Option<message::Built>,
) -> JobOutcome {
    let now = Utc::now();
    if let Some(b) = built {
        log.message_id = b.message_id;
        log.subject = b.subject;
        log.note = b.note;
    }
    log.attempts += 1;
    let (outcome, change) = match &result {
        Ok(()) => {
            log.status = email_status::SENT.into();
            log.sent_at = Some(now);
            log.last_error = None;
            (JobOutcome::Done, EmailJob::Remove(job.id))
        }
        Err(e) => {
            log.last_error = Some(e.to_string());
            let retry = match e {
                BuildError::Transient(_) => retry_delay(issuing, job.attempts),
                BuildError::Permanent(_) => None,
            };
            match retry {
                Some(delay) => {
                    let at = now_ms() + delay.as_millis() as i64;
                    job.run_at_ms = at;
                    (JobOutcome::RetryAt(at), EmailJob::Put(job.clone()))
                }
                None => {
                    log.status = email_status::FAILED.into();
                    (JobOutcome::Done, EmailJob::Remove(job.id))
                }
            }
        }
    };
    log.history.push(EmailAttempt {
        at: now,
        ok: result.is_ok(),
        error: result.as_ref().err().map(ToString::to_string),
    });
    let (id, status, attempts) = (log.id, log.status.clone(), log.attempts);
    let failed = (log.status == email_status::FAILED).then(|| log.clone());
    if let Err(e) = issuing.store.update_email(log, change).await {
        // The attempt happened but is not written: run the job again (a
        // sent message goes again with its Message-ID, recognizably the same).
        tracing::error!(email_id = id, error = %e, "could not log an email attempt");
        return JobOutcome::RetryAt(now_ms() + 1000);
    }
    if let Some(log) = failed {
        failed_for_good(issuing, &log).await;
    }
    match &result {
        Ok(()) => tracing::info!(email_id = id, attempts, "email sent"),
        Err(e) => {
            tracing::warn!(email_id = id, attempts, status = %status, error = %e, "email attempt failed")
        }
    }
    outcome
}

/// The mail scheduler runs email jobs through this.
pub struct MailRunner(pub Arc<Issuing>);

impl emisor_actors::retry_scheduler::JobRunner for MailRunner {
    fn run(&self, job_id: u64) -> BoxFuture<'static, JobOutcome> {
        let issuing = self.0.clone();
        Box::pin(async move {
            if issuing.store.is_shared() {
                return crate::issuing::transmit::jobs::run_shared(
                    issuing,
                    job_id,
                    |issuing, job| {
                        Box::pin(async move {
                            if job.kind == MAIL_JOB {
                                attempt(&issuing, job).await
                            } else {
                                JobOutcome::Done
                            }
                        })
                    },
                )
                .await;
            }
            match issuing.store.job(job_id).await {
                Ok(Some(job)) if job.kind == MAIL_JOB => attempt(&issuing, job).await,
                Ok(_) => JobOutcome::Done,
                Err(e) => {
                    tracing::error!(job_id, error = %e, "reading an email job");
                    JobOutcome::RetryAt(now_ms() + 1000)
                }
            }
        })
    }

    /// The job is stored as the panicked run left it: the mail delays,
    /// then the last one again; never dropped.
    fn after_panic(&self, _job_id: u64, panics: u32) -> JobOutcome {
        let r = &self.0.settings.resilience;
        let delay = retry_delay(&self.0, panics)
            .or_else(|| r.mail_retry_delays_s.last().map(|&s| r.scaled(s)))
            .unwrap_or_else(|| r.scaled(60.0));
        JobOutcome::RetryAt(now_ms() + delay.as_millis() as i64)
    }

    fn stored(&self) -> BoxFuture<'static, Vec<Schedule>> {
        let issuing = self.0.clone();
        Box::pin(async move {
            match issuing.store.own_jobs().await {
                Ok(jobs) => jobs
                    .iter()
                    .filter(|j| j.kind == MAIL_JOB)
                    .map(|j| Schedule {
                        job_id: j.id,
                        run_at_ms: j.run_at_ms,
                    })
                    .collect(),
                Err(e) => {
                    tracing::error!(error = %e, "reading the stored email jobs");
                    Vec::new()
                }
            }
        })
    }
}

/// The company's log of emails that will not be tried again: what the
/// console's overview lists as needing a person.
pub const FAILED_EVENT: &str = "email_fallido";

/// Logs an email that failed for good (a resend from the document may try
/// it again).
async fn failed_for_good(issuing: &Issuing, log: &EmailLog) {
    let logged = issuing.store.append_event(EventRecord {
        id: 0,
        company_id: log.company_id,
        document_id: Some(log.document_id),
        kind: FAILED_EVENT.into(),
        at: Utc::now(),
        data: serde_json::json!({
            "email": log.id, "to": log.to, "attempts": log.attempts, "error": log.last_error,
        }),
    });
    if let Err(e) = logged.await {
        tracing::error!(email_id = log.id, error = %e, "could not log a failed email");
    }
}
