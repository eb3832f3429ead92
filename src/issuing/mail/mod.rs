//! Email of documents (spec 1.4, 4.8; decisions.md "Email", "Email
//! delivery"): the mail the authority prescribes for the buyer
//! (protocol.md 5.2-5.3), one ZIP with the signed AttachedDocument and the
//! PDF, sent through the mailer actor.
//!
//! Each email is a log entry and a durable job (kind [`MAIL_JOB`]) written
//! before the first attempt. A mail scheduler of its own runs the jobs, so
//! an SMTP server that is slow or down never holds up a transmission or an
//! API answer. A failed attempt is retried after each of
//! `mail_retry_delays_s` (scaled by `time_scale`), then the log says failed
//! and a resend may try again. The Message-ID is derived from the document
//! and the log entry: a message sent again after a crash between the
//! server's 250 and the log write is the same message.
//!
//! * [`message`]: subject, attachment and the MIME message.
//! * [`deliver`]: one attempt of an email job, and the mail scheduler's runner.

pub mod deliver;
pub mod message;

use std::sync::{Arc, OnceLock};

use chrono::Utc;
use emisor_actors::mailer::{MailTransport, Mailer, SmtpConfig};
use emisor_actors::retry_scheduler::RetryScheduler;
use emisor_actors::signer_pool::SignerPool;
use emisor_actors::supervisor::Restartable;
use emisor_store::{email_status, DocumentRecord, EmailLog, Job, StoreError};
use secrecy::ExposeSecret;

use super::Issuing;
use crate::config::Settings;

/// Job kind of an email.
pub const MAIL_JOB: &str = "email";
/// At most this many recipients (`to` and `cc` together) per email.
pub const MAX_RECIPIENTS: usize = 20;

/// The mailer, its scheduler, and the threads that build the attachment.
pub struct MailService {
    pub mailer: Arc<Restartable<Mailer>>,
    /// Set once started (it needs `Issuing` as its runner).
    pub scheduler: OnceLock<Arc<Restartable<RetryScheduler>>>,
    /// Signing the AttachedDocument and zipping run here, off the async threads.
    pub pool: SignerPool,
}

impl MailService {
    /// The mailer on `arbiter`, replaced if it dies.
    pub fn start(settings: &Settings, arbiter: actix::ArbiterHandle, pool: SignerPool) -> Self {
        let transport = transport(settings);
        let mailer = Restartable::start("mailer", move || {
            let t = transport.clone();
            <Mailer as actix::Actor>::start_in_arbiter(&arbiter, move |_| Mailer::new(&t))
        });
        MailService {
            mailer,
            scheduler: OnceLock::new(),
            pool,
        }
    }
}

/// SMTP when `[smtp] host` is set, otherwise `<data-dir>/outbox/`.
pub fn transport(settings: &Settings) -> MailTransport {
    let s = &settings.smtp;
    if s.host.trim().is_empty() {
        return MailTransport::Outbox(settings.data_dir().join("outbox"));
    }
    MailTransport::Smtp(SmtpConfig {
        host: s.host.trim().to_string(),
        port: s.port,
        starttls: s.starttls,
        username: s.username.clone(),
        password: s.password.expose_secret().to_string(),
        timeout: std::time::Duration::from_secs(30),
    })
}

/// Why an email was not queued.
#[derive(Debug, thiserror::Error)]
pub enum MailError {
    #[error("{field}: {message}")]
    Invalid { field: String, message: String },
    #[error("document {0} is not accepted (state {1}): only accepted documents are mailed")]
    NotAccepted(u64, u8),
    #[error("email {0} is already queued")]
    AlreadyQueued(u64),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl MailError {
    fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        MailError::Invalid {
            field: field.into(),
            message: message.into(),
        }
    }
}

/// Checks every address (`field[i]`), trimmed; at least one `to`.
pub fn check_recipients(to: &[String], cc: &[String]) -> Result<(), MailError> {
    if to.is_empty() {
        return Err(MailError::invalid("to", "at least one address is required"));
    }
    if to.len() + cc.len() > MAX_RECIPIENTS {
        return Err(MailError::invalid(
            "to",
            format!("at most {MAX_RECIPIENTS} recipients (to and cc together)"),
        ));
    }
    for (field, list) in [("to", to), ("cc", cc)] {
        for (i, a) in list.iter().enumerate() {
            let refuse = |why: String| MailError::invalid(format!("{field}[{i}]"), why);
            let address = a
                .parse::<lettre::Address>()
                .map_err(|e| refuse(format!("is not an email address ({e})")))?;
            if !literal_is_an_ip(address.domain()) {
                return Err(refuse(
                    "is not an email address (its domain literal is not an IP address)".into(),
                ));
            }
        }
    }
    Ok(())
}

/// A domain that is an address literal (`[192.0.2.1]`, `[IPv6:2001:db8::1]`)
/// holds an IP address: the address parser checks only its characters, so
/// `[999.1.1.1]` would pass and be queued for a server that cannot exist.
fn literal_is_an_ip(domain: &str) -> bool {
    let Some(literal) = domain.strip_prefix('[') else {
        return true;
    };
    let inner = literal.strip_suffix(']').unwrap_or(literal);
    let ip = inner.strip_prefix("IPv6:").unwrap_or(inner);
    ip.parse::<std::net::IpAddr>().is_ok()
}

fn new_log(doc: &DocumentRecord, to: Vec<String>, cc: Vec<String>, automatic: bool) -> EmailLog {
    EmailLog {
        id: 0,
        company_id: doc.company_id,
        document_id: doc.id,
        to,
        cc,
        status: email_status::QUEUED.into(),
        attempts: 0,
        last_error: None,
        created_at: Utc::now(),
        sent_at: None,
        message_id: String::new(),
        subject: String::new(),
        automatic,
        resend_of: None,
        note: None,
        history: Vec::new(),
    }
}

fn new_job(company: u64) -> Job {
    Job {
        id: 0,
        kind: MAIL_JOB.into(),
        company_id: company,
        document_id: None,
        attempts: 0,
        run_at_ms: Utc::now().timestamp_millis(),
        in_flight: false,
        payload: serde_json::Value::Null,
        created_at: Utc::now(),
    }
}

fn trimmed(list: Vec<String>) -> Vec<String> {
    list.into_iter().map(|a| a.trim().to_string()).collect()
}

/// Queues an email of an accepted document: the log and its job are durable
/// before this returns, the first attempt follows at once in the background.
pub async fn queue_document_mail(
    issuing: &Issuing,
    doc: &DocumentRecord,
    to: Vec<String>,
    cc: Vec<String>,
) -> Result<EmailLog, MailError> {
    let (to, cc) = (trimmed(to), trimmed(cc));
    check_recipients(&to, &cc)?;
    if doc.state != emisor_store::state::ACCEPTED {
        return Err(MailError::NotAccepted(doc.id, doc.state));
    }
    let (log, job) = issuing
        .store
        .queue_email(new_log(doc, to, cc, false), new_job(doc.company_id))
        .await?;
    issuing.schedule(&job);
    Ok(log)
}

/// `reenviar`: a failed email is queued again as it was (same Message-ID,
/// a fresh set of retries); a sent one is sent again as a new email (a new
/// log entry and Message-ID, naming the one it resends). One still queued
/// is refused.
pub async fn resend(issuing: &Issuing, log: EmailLog) -> Result<EmailLog, MailError> {
    let company = log.company_id;
    match log.status.as_str() {
        email_status::QUEUED => Err(MailError::AlreadyQueued(log.id)),
        email_status::FAILED => {
            let mut log = log;
            log.status = email_status::QUEUED.into();
            let (log, job) = issuing.store.queue_email(log, new_job(company)).await?;
            issuing.schedule(&job);
            Ok(log)
        }
        _ => {
            let mut again = log.clone();
            again.id = 0;
            again.status = email_status::QUEUED.into();
            again.attempts = 0;
            again.last_error = None;
            again.created_at = Utc::now();
            again.sent_at = None;
            again.message_id = String::new();
            again.automatic = false;
            again.resend_of = Some(log.id);
            again.note = None;
            again.history = Vec::new();
            let (log, job) = issuing.store.queue_email(again, new_job(company)).await?;
            issuing.schedule(&job);
            Ok(log)
        }
    }
}

/// The automatic email of a document just accepted, to its customer's
/// address; `None` when the customer has none (a POS final consumer).
/// Stored with the acceptance itself ([`emisor_store::AsyncStore::finish_accepted`]).
pub async fn automatic_email(issuing: &Issuing, doc: &DocumentRecord) -> Option<(EmailLog, Job)> {
    let customer = doc.customer_id?;
    let c = match issuing.store.customer(doc.company_id, customer).await {
        Ok(c) => c?,
        Err(e) => {
            tracing::error!(doc = doc.id, error = %e, "reading the customer to mail");
            return None;
        }
    };
    let address = c.email.trim().to_string();
    if address.is_empty() {
        return None;
    }
    // An address the mailer cannot use is still logged (as a failure), so
    // the company sees why the customer got nothing.
    Some((
        new_log(doc, vec![address], Vec::new(), true),
        new_job(doc.company_id),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(to: &[&str], cc: &[&str]) -> Result<(), String> {
        let list = |l: &[&str]| l.iter().map(|a| a.to_string()).collect::<Vec<_>>();
        check_recipients(&list(to), &list(cc)).map_err(|e| e.to_string())
    }

    #[test]
    fn recipients_are_real_addresses_and_at_most_twenty() {
        assert!(check(&["cliente@example.test"], &["copia@example.test"]).is_ok());
        assert!(check(&["a@[192.0.2.1]", "b@[IPv6:2001:db8::1]"], &[]).is_ok());
        for bad in [
            "a@[999.1.1.1]",
            "a@[example.test]",
            "a@[IPv6:nope]",
            "a@example.test\r\nBcc: b@example.test",
            "Cliente <a@example.test>",
            "",
        ] {
            let e = check(&["cliente@example.test"], &[bad]).unwrap_err();
            assert!(
                e.starts_with("cc[0]: is not an email address"),
                "{bad}: {e}"
            );
        }
        assert!(check(&[], &["copia@example.test"])
            .unwrap_err()
            .starts_with("to:"));
        let many: Vec<String> = (0..20).map(|i| format!("c{i}@example.test")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        assert!(check(&many[..1], &many[1..]).is_ok());
        assert!(check(&many, &["one@example.test"]).is_err());
    }
}
