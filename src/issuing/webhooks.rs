//! Outgoing webhooks (decisions.md §4): the same events as the WebSocket,
//! POSTed as JSON to the company's URL with an HMAC-SHA256 signature in
//! `X-Emisor-Signature: sha256=<hex>`. Each delivery is a durable job, retried
//! with the transmission backoff, and every attempt is logged.

use chrono::Utc;
use emisor_actors::retry_scheduler::JobOutcome;
use emisor_actors::webhook_sender::Deliver;
use emisor_store::{EventRecord, Job};
use hmac::{Hmac, Mac};
use serde_json::json;
use sha2::Sha256;

use super::Issuing;

pub const WEBHOOK_JOB: &str = "webhook";
/// Kind of the delivery-log events.
pub const DELIVERY_EVENT: &str = "webhook_delivery";
pub const SIGNATURE_HEADER: &str = "X-Emisor-Signature";
/// The `company_id` of the operator's deliveries (`[operator] webhook_url`,
/// signed with `[operator] webhook_secret`); companies are numbered from 1.
pub const OPERATOR: u64 = 0;

/// `sha256=<hex of HMAC-SHA256(secret, body)>`.
pub fn signature(secret: &str, body: &[u8]) -> String {
    let mut mac = match Hmac::<Sha256>::new_from_slice(secret.as_bytes()) {
        Ok(m) => m,
        // HMAC takes keys of any length; this arm cannot happen.
        Err(_) => return String::new(),
    };
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

/// Queues a delivery when the company has a webhook URL.
pub async fn enqueue(issuing: &Issuing, company: u64, event: &str, data: &serde_json::Value) {
    let Ok(Some(c)) = issuing.store.company(company).await else {
        return;
    };
    let Some(url) = c.webhook_url.filter(|u| !u.is_empty()) else {
        return;
    };
    let job = Job {
        id: 0,
        kind: WEBHOOK_JOB.into(),
        company_id: company,
        document_id: None,
        attempts: 0,
        run_at_ms: Utc::now().timestamp_millis(),
        in_flight: false,
        payload: json!({ "url": url, "event": event, "data": data }),
        created_at: Utc::now(),
    };
    match issuing.store.put_job(job).await {
        Ok(job) => issuing.schedule(&job),
        Err(e) => tracing::error!(company, error = %e, "could not queue a webhook"),
    }
}

/// One delivery attempt of a webhook job.
pub async fn deliver(issuing: &Issuing, mut job: Job) -> JobOutcome {
    let text = |key: &str| {
        job.payload
            .get(key)
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let url = text("url");
    let event = text("event");
    let body = json!({
        "id": job.id,
        "event": event,
        "data": job.payload.get("data"),
        "created_at": job.created_at.to_rfc3339(),
    })
    .to_string()
    .into_bytes();
    let secret = if job.company_id == OPERATOR {
        secrecy::ExposeSecret::expose_secret(&issuing.settings.operator.webhook_secret).into()
    } else {
        issuing
            .store
            .company(job.company_id)
            .await
            .ok()
            .flatten()
            .and_then(|c| c.webhook_secret)
            .unwrap_or_else(|| "".into())
    };
    job.attempts += 1;
    let result = issuing
        .webhooks
        .addr()
        .send(Deliver {
            url: url.clone(),
            headers: vec![
                (SIGNATURE_HEADER.into(), signature(secret.expose(), &body)),
                ("X-Emisor-Event".into(), event.clone()),
                ("X-Emisor-Delivery".into(), job.id.to_string()),
            ],
            body,
        })
        .await
        .unwrap_or_else(|e| Err(format!("webhook sender unavailable: {e}")));
    let delivered = matches!(result, Ok(status) if (200..300).contains(&status));
    // Like a document: the first delivery, then one retry per delay.
    let outcome = match issuing.settings.resilience.retry_delay(job.attempts) {
        Some(delay) if !delivered => {
            JobOutcome::RetryAt(Utc::now().timestamp_millis() + delay.as_millis() as i64)
        }
        _ => JobOutcome::Done,
    };
    let status = match (&result, &outcome) {
        (Ok(_), JobOutcome::Done) if delivered => "delivered",
        (_, JobOutcome::Done) => "failed",
        _ => "retrying",
    };
    let logged = issuing.store.append_event(EventRecord {
        id: 0,
        company_id: job.company_id,
        document_id: job.payload.pointer("/data/id").and_then(|id| id.as_u64()),
        kind: DELIVERY_EVENT.into(),
        at: Utc::now(),
        data: json!({
            "delivery": job.id, "event": event, "url": url, "attempt": job.attempts,
            "status": status,
            "http_status": result.as_ref().ok(),
            "error": result.as_ref().err(),
        }),
    });
    if let Err(e) = logged.await {
        tracing::error!(job = job.id, error = %e, "could not log a webhook delivery");
    }
    match outcome {
        JobOutcome::Done => {
            let _ = issuing.store.remove_job(job.id).await;
        }
        JobOutcome::RetryAt(at) => {
            job.run_at_ms = at;
            let _ = issuing.store.put_job(job).await;
        }
    }
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signature_is_hmac_sha256_hex() {
        // RFC 4231 test case 2.
        assert_eq!(
            signature("Jefe", b"what do ya want for nothing?"),
            "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }
}
