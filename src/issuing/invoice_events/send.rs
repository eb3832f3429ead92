//! One transmission of a stored event with `SendEventUpdateStatus`, through
//! the transmitter and its breaker, every step written down before the
//! next (as `issuing::transmit` does for documents): the job is marked in
//! flight before the call, and a job found in flight asks the authority
//! for the event's CUDE before sending again, so an event is sent once.
//! A rejection leaves the invoice as it was: the event stops counting.

use chrono::Utc;
use emisor_actors::retry_scheduler::JobOutcome;
use emisor_actors::transmitter::TransmitFailure;
use emisor_store::{EventState, Job, StoreError};

use super::title::refresh_eligibility;
use crate::authority::port::{AuthorityRequest, AuthorityResponse};
use crate::authority::Transmission;
use crate::issuing::Issuing;

/// What one run of an event's job came to.
#[derive(Debug, Clone)]
pub enum Sent {
    /// Finished (accepted or rejected), or nothing left to do.
    Done(Option<Transmission>),
    /// Tried again at `at_ms`.
    Retry {
        at_ms: i64,
        transmission: Transmission,
    },
}

impl Sent {
    pub fn transmission(&self) -> Option<Transmission> {
        match self {
            Sent::Done(t) => t.clone(),
            Sent::Retry { transmission, .. } => Some(transmission.clone()),
        }
    }

    fn outcome(&self) -> JobOutcome {
        match self {
            Sent::Done(_) => JobOutcome::Done,
            Sent::Retry { at_ms, .. } => JobOutcome::RetryAt(*at_ms),
        }
    }
}

fn failure(description: String, retryable: bool) -> Transmission {
    Transmission {
        is_valid: false,
        status_description: description.clone(),
        errors: vec![description],
        retryable,
        ..Transmission::default()
    }
}

fn ids(job: &Job) -> Option<(u64, u64)> {
    Some((
        job.payload.get("received_id")?.as_u64()?,
        job.payload.get("event_id")?.as_u64()?,
    ))
}

/// The scheduler's entry point for an event job.
pub async fn run_job(issuing: &Issuing, job: Job) -> JobOutcome {
    send(issuing, job).await.outcome()
}

/// Records the event's outcome (or its progress, `job` kept) on the
/// invoice, re-reading it when another write came between.
async fn record(
    issuing: &Issuing,
    received_id: u64,
    event_id: u64,
    state: EventState,
    t: &Transmission,
    attempts: u32,
    finished_job: Option<u64>,
) -> Result<(), StoreError> {
    for _ in 0..8 {
        let Some(mut invoice) = issuing.store.received(received_id).await? else {
            return Ok(());
        };
        let Some(event) = invoice.events.iter_mut().find(|e| e.id == event_id) else {
            return Ok(());
        };
        event.state = state;
        event.attempts = attempts;
        event.transmission = serde_json::to_value(t).ok();
        event.updated_at = Utc::now();
        invoice.updated_at = Utc::now();
        refresh_eligibility(issuing, &mut invoice).await;
        match issuing
            .store
            .finish_received_event(invoice, finished_job)
            .await
        {
            Ok(_) => return Ok(()),
            Err(StoreError::Conflict(_)) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(StoreError::Conflict("the invoice kept changing".into()))
}

async fn finish(
    issuing: &Issuing,
    job: &Job,
    (received_id, event_id): (u64, u64),
    state: EventState,
    t: Transmission,
) -> Sent {
    match record(
        issuing,
        received_id,
        event_id,
        state,
        &t,
        job.attempts,
        Some(job.id),
    )
    .await
    {
        Ok(()) => Sent::Done(Some(t)),
        Err(e) => {
            tracing::error!(event_id, error = %e, "could not record an event's outcome");
            Sent::Retry {
                at_ms: Utc::now().timestamp_millis() + 5000,
                transmission: t,
            }
        }
    }
}

/// A failed attempt (`job.attempts` counts it): final when not retryable,
/// otherwise again after the retry delays, then every recovery interval
/// (an event is never dropped).
async fn failed(
    issuing: &Issuing,
    mut job: Job,
    ids: (u64, u64),
    f: TransmitFailure<crate::authority::TransmitError>,
) -> Sent {
    let t = failure(f.to_string(), f.is_retryable());
    if !f.is_retryable() {
        return finish(issuing, &job, ids, EventState::Rejected, t).await;
    }
    let r = &issuing.settings.resilience;
    let delay = r
        .retry_delay(job.attempts)
        .unwrap_or_else(|| r.scaled(r.recovery_interval_s));
    let at_ms = Utc::now().timestamp_millis() + delay.as_millis() as i64;
    job.run_at_ms = at_ms;
    if let Err(e) = issuing.store.put_job(job.clone()).await {
        tracing::error!(job = job.id, error = %e, "could not reschedule an event");
    }
    if let Err(e) = record(
        issuing,
        ids.0,
        ids.1,
        EventState::Pending,
        &t,
        job.attempts,
        None,
    )
    .await
    {
        tracing::error!(event_id = ids.1, error = %e, "could not record an event's attempt");
    }
    Sent::Retry {
        at_ms,
        transmission: t,
    }
}

/// Removes a job with nothing to send. A removal that fails (the store
/// away) is tried again rather than left: a job left stored would run
/// again after a restart, or on the node that takes it up.
async fn remove(issuing: &Issuing, job_id: u64) -> Sent {
    match issuing.store.remove_job(job_id).await {
        Ok(()) => Sent::Done(None),
        Err(e) => {
            tracing::error!(job_id, error = %e, "removing an event job with nothing to send");
            Sent::Retry {
                at_ms: Utc::now().timestamp_millis() + 1000,
                transmission: failure(e.to_string(), true),
            }
        }
    }
}

/// Sends (or resumes) the event of `job` once and records the outcome.
pub async fn send(issuing: &Issuing, mut job: Job) -> Sent {
    let Some(ids) = ids(&job) else {
        return remove(issuing, job.id).await;
    };
    let invoice = match issuing.store.received(ids.0).await {
        Ok(i) => i,
        Err(e) => {
            tracing::error!(error = %e, "reading an event's invoice");
            return Sent::Retry {
                at_ms: Utc::now().timestamp_millis() + 1000,
                transmission: failure(e.to_string(), true),
            };
        }
    };
    let event = invoice.and_then(|i| i.events.into_iter().find(|e| e.id == ids.1));
    let Some(event) = event.filter(|e| e.state == EventState::Pending) else {
        // Finished elsewhere, or never stored (a crash before its record).
        return remove(issuing, job.id).await;
    };
    let files = match issuing.store.event_files(event.id).await {
        Ok(Some(f)) => f,
        Ok(None) => {
            let t = failure("the event's files are missing".into(), false);
            return finish(issuing, &job, ids, EventState::Rejected, t).await;
        }
        Err(e) => {
            return Sent::Retry {
                at_ms: Utc::now().timestamp_millis() + 1000,
                transmission: failure(e.to_string(), true),
            }
        }
    };
    let target = match issuing.target(event.company_id, event.environment).await {
        Ok(t) => t,
        Err(e) => {
            let t = failure(e.to_string(), false);
            return finish(issuing, &job, ids, EventState::Rejected, t).await;
        }
    };
    if job.in_flight {
        let status = issuing
            .call_authority(
                event.company_id,
                target.clone(),
                AuthorityRequest::GetStatus {
                    track_id: event.cude.clone(),
                },
            )
            .await;
        match status {
            Ok(AuthorityResponse::Verdict(t)) if t.accepted() => {
                return finish(issuing, &job, ids, EventState::Accepted, t).await
            }
            Ok(AuthorityResponse::Verdict(t)) if t.known_rejection() => {
                return finish(issuing, &job, ids, EventState::Rejected, t).await
            }
            Ok(_) => {} // the authority does not have it: send
            Err(f) => {
                job.attempts += 1;
                return failed(issuing, job, ids, f).await;
            }
        }
    }
    job.in_flight = true;
    job.attempts += 1;
    let job = match issuing.store.put_job(job).await {
        Ok(j) => j,
        Err(e) => {
            return Sent::Retry {
                at_ms: Utc::now().timestamp_millis() + 1000,
                transmission: failure(e.to_string(), true),
            }
        }
    };
    let answer = issuing
        .call_authority(
            event.company_id,
            target,
            AuthorityRequest::SendEventUpdateStatus { zip: files.zip },
        )
        .await;
    match answer {
        Ok(response) => {
            let t = response
                .into_transmission()
                .unwrap_or_else(|| failure("unexpected answer".into(), true));
            let state = if t.accepted() {
                EventState::Accepted
            } else {
                EventState::Rejected
            };
            finish(issuing, &job, ids, state, t).await
        }
        Err(f) => {
            let mut job = job;
            // Never left (breaker open): nothing to ask about next time.
            job.in_flight = !matches!(f, TransmitFailure::BreakerOpen { .. });
            failed(issuing, job, ids, f).await
        }
    }
}
