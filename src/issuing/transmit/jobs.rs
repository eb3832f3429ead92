//! The transmission job of a document, and the scheduler's runner of
//! every stored job (transmissions, webhooks, events, emails).

use chrono::Utc;
use emisor_actors::retry_scheduler::JobOutcome;
use emisor_store::{state, DocumentRecord, Job};
use futures_util::future::BoxFuture;
use std::sync::Arc;

use super::now_ms;
use crate::issuing::Issuing;

/// A fresh transmission job for a document, due now.
pub fn new_job(doc: &DocumentRecord) -> Job {
    Job {
        id: 0,
        kind: crate::issuing::TRANSMIT_JOB.into(),
        company_id: doc.company_id,
        document_id: Some(doc.id),
        attempts: 0,
        run_at_ms: now_ms(),
        in_flight: false,
        payload: serde_json::Value::Null,
        created_at: Utc::now(),
    }
}

/// Who holds a transmission job's claim ([`emisor_store::JobLeases`]):
/// every transmission worker of this process (one process opens a data
/// dir), so a claim a crash left behind is taken over at once on restart,
/// while any other worker (reconciliation) waits for its release. On a
/// shared database the store names the worker with its node, and a dead
/// node's claim is taken over at once.
pub const TRANSMIT_WORKER: &str = "transmit";

/// Who holds the claim of a webhook's, an event's or an email's job on a
/// shared database, where two nodes may have one job on their timetables
/// (the node that wrote it last, and one that adopted it believing that
/// node dead).
pub const JOB_WORKER: &str = "job";

/// How long a transmission's claim lasts unless released first: longer
/// than a call waits in the paced queue and for its answer.
pub const TRANSMIT_CLAIM_MS: i64 = 15 * 60 * 1000;

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
            if job.kind == crate::issuing::mail::MAIL_JOB {
                issuing.schedule(&job); // the mail scheduler's
                return JobOutcome::Done;
            }
            if job.kind == crate::issuing::webhooks::WEBHOOK_JOB
                || job.kind == crate::issuing::invoice_events::EVENT_JOB
            {
                if !issuing.store.is_shared() {
                    return run_other(issuing, job).await;
                }
                return run_shared(issuing, job_id, run_other).await;
            }
            let Some(doc_id) = job.document_id else {
                return JobOutcome::Done;
            };
            // The document is read under the job's claim: another worker
            // holding it (reconciliation) may be settling it right now.
            if let Some(later) = claim(&issuing, job.id, TRANSMIT_WORKER, TRANSMIT_CLAIM_MS).await {
                return later;
            }
            let outcome = transmit_claimed(&issuing, job, doc_id).await;
            if let Err(e) = issuing.store.release_job(job_id, TRANSMIT_WORKER).await {
                tracing::error!(job_id, error = %e, "releasing the job's claim");
            }
            outcome
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
            match issuing.store.own_jobs().await {
                Ok(jobs) => jobs
                    .iter()
                    .filter(|j| j.kind != crate::issuing::mail::MAIL_JOB)
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

/// A webhook's or an event's job.
fn run_other(issuing: Arc<Issuing>, job: Job) -> BoxFuture<'static, JobOutcome> {
    Box::pin(async move {
        if job.kind == crate::issuing::webhooks::WEBHOOK_JOB {
            crate::issuing::webhooks::deliver(&issuing, job).await
        } else {
            crate::issuing::invoice_events::send::run_job(&issuing, job).await
        }
    })
}

/// Claims job `job_id` for `worker` for `for_ms`; when it cannot be had
/// (another worker holds it, or the store did not answer), the outcome
/// that tries again in a second.
async fn claim(
    issuing: &Issuing,
    job_id: u64,
    worker: &'static str,
    for_ms: i64,
) -> Option<JobOutcome> {
    match issuing
        .store
        .claim_job(job_id, worker, now_ms(), for_ms)
        .await
    {
        Ok(Some(_)) => None,
        Ok(None) => Some(JobOutcome::RetryAt(now_ms() + 1000)),
        Err(e) => {
            tracing::error!(job_id, error = %e, "claiming the job");
            Some(JobOutcome::RetryAt(now_ms() + 1000))
        }
    }
}

/// How long a webhook's, an event's or an email's claim lasts unless
/// released first: longer than one delivery waits for its answer.
const JOB_CLAIM_MS: i64 = 15 * 60 * 1000;

/// Runs job `job_id` with `run` under its claim on a shared database: the
/// job read again under it (another node may have run it meanwhile), and
/// left alone while another node's claim holds it.
pub(crate) async fn run_shared(
    issuing: Arc<Issuing>,
    job_id: u64,
    run: fn(Arc<Issuing>, Job) -> BoxFuture<'static, JobOutcome>,
) -> JobOutcome {
    if let Some(later) = claim(&issuing, job_id, JOB_WORKER, JOB_CLAIM_MS).await {
        return later;
    }
    let outcome = match issuing.store.job(job_id).await {
        Ok(Some(job)) => match not_due(&issuing, &job) {
            Some(later) => later,
            None => run(issuing.clone(), job).await,
        },
        Ok(None) => JobOutcome::Done, // run to its end by another node
        Err(e) => {
            tracing::error!(job_id, error = %e, "reading the job");
            JobOutcome::RetryAt(now_ms() + 1000)
        }
    };
    if let Err(e) = issuing.store.release_job(job_id, JOB_WORKER).await {
        tracing::error!(job_id, error = %e, "releasing the job's claim");
    }
    outcome
}

/// On a shared database, a job whose stored time is still ahead was run
/// by another node meanwhile, which set its next attempt: this node's
/// entry waits for that time rather than run it early. (Elsewhere one
/// timetable holds each job.)
fn not_due(issuing: &Issuing, job: &Job) -> Option<JobOutcome> {
    (issuing.store.is_shared() && job.run_at_ms > now_ms() + 50)
        .then_some(JobOutcome::RetryAt(job.run_at_ms))
}

/// Sends the document of `job`, whose claim this worker holds: both read
/// again under it (a worker that held it before may have settled them).
async fn transmit_claimed(issuing: &Issuing, job: Job, doc_id: u64) -> JobOutcome {
    let job_id = job.id;
    let job = match issuing.store.job(job_id).await {
        Ok(Some(job)) => job,
        Ok(None) => return JobOutcome::Done,
        Err(e) => {
            tracing::error!(job_id, error = %e, "reading the job");
            return JobOutcome::RetryAt(now_ms() + 1000);
        }
    };
    if let Some(later) = not_due(issuing, &job) {
        return later;
    }
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
}

impl Issuing {
    /// Puts a job on its scheduler's timetable (emails have their own).
    pub fn schedule(&self, job: &Job) {
        let scheduler = if job.kind == crate::issuing::mail::MAIL_JOB {
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
