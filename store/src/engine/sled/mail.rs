//! Emails of documents and the authority's ApplicationResponses on sled.
//!
//! An email is a log entry plus a durable job (kind `email`, no
//! `document_id`: the document index of jobs names its transmission job).
//! The job is written before the log, so a crash between the two leaves a
//! job whose log is missing, which its runner drops; never a log that says
//! queued with nothing to send it.

use std::io::{Read, Write};

use flate2::read::DeflateDecoder;
use flate2::write::DeflateEncoder;
use flate2::Compression;

use crate::encoding::codec::{decode, encode, id_key, scoped_key};
use crate::encoding::trees;
use crate::engine::sled::SledStore;
use crate::error::{StoreError, StoreResult};
use crate::model::*;
use crate::traits::MailStore;

fn compress(text: &str) -> StoreResult<Vec<u8>> {
    let mut e = DeflateEncoder::new(Vec::with_capacity(text.len() / 3), Compression::fast());
    e.write_all(text.as_bytes())
        .and_then(|_| e.finish())
        .map_err(|e| StoreError::Durability(format!("compressing: {e}")))
}

fn decompress(bytes: &[u8]) -> StoreResult<String> {
    let mut out = String::new();
    DeflateDecoder::new(bytes)
        .read_to_string(&mut out)
        .map_err(|e| StoreError::Corrupt {
            tree: trees::APPLICATION_RESPONSES,
            reason: e.to_string(),
        })?;
    Ok(out)
}

impl SledStore {
    pub(crate) fn put_application_response_unflushed(
        &self,
        document_id: u64,
        xml: &str,
    ) -> StoreResult<()> {
        self.application_responses
            .insert(id_key(document_id), compress(xml)?)?;
        Ok(())
    }

    /// Stores an email's job (with the log's id in its payload), then the
    /// log and its index entry. A new log (id 0) gets its id first.
    pub(crate) fn queue_email_unflushed(
        &self,
        mut log: EmailLog,
        mut job: Job,
    ) -> StoreResult<(EmailLog, Job)> {
        if log.id == 0 {
            log.id = self.next_seq_now(trees::EMAIL_LOGS)?;
        }
        job.document_id = None;
        job.payload = serde_json::json!({ "email_id": log.id });
        let job = self.put_job_unflushed(job)?;
        self.write_email_log(&log)?;
        Ok((log, job))
    }

    pub(crate) fn write_email_log(&self, log: &EmailLog) -> StoreResult<()> {
        self.email_logs
            .insert(id_key(log.id), encode(trees::EMAIL_LOGS, log)?)?;
        self.email_logs_by_document
            .insert(scoped_key(log.document_id, log.id), &[])?;
        Ok(())
    }

    pub(crate) fn update_email_unflushed(&self, log: &EmailLog, job: EmailJob) -> StoreResult<()> {
        match job {
            EmailJob::Put(j) => {
                self.put_job_unflushed(j)?;
            }
            EmailJob::Remove(id) => self.remove_job_unflushed(id)?,
            EmailJob::Keep => {}
        }
        self.write_email_log(log)
    }

    /// Whether a document already has its automatic email (a document
    /// accepted twice over, by a status query after a lost answer say, is
    /// mailed once).
    pub(crate) fn has_automatic_email(&self, document_id: u64) -> StoreResult<bool> {
        for log in self.email_logs_of(document_id)? {
            if log.automatic {
                return Ok(true);
            }
        }
        Ok(false)
    }

    fn email_logs_of(&self, document_id: u64) -> StoreResult<Vec<EmailLog>> {
        let mut out = Vec::new();
        for entry in self.email_logs_by_document.scan_prefix(id_key(document_id)) {
            let (k, _) = entry?;
            let Some(id) = k.get(8..16) else { continue };
            if let Some(v) = self.email_logs.get(id)? {
                out.push(decode(trees::EMAIL_LOGS, &v)?);
            }
        }
        Ok(out)
    }

    /// An accepted document's final write, in this order: the
    /// ApplicationResponse, its automatic email (job, then log), then the
    /// record and history, then the transmission job goes. A crash part way
    /// leaves the document not yet accepted, and the next answer writes it
    /// all again (the email only once).
    pub(crate) fn accept_document_unflushed(
        &self,
        doc: &DocumentRecord,
        transmission_job: Option<u64>,
        history: HistoryEntry,
        application_response: Option<&str>,
        email: Option<(EmailLog, Job)>,
    ) -> StoreResult<Option<(EmailLog, Job)>> {
        if let Some(ar) = application_response {
            self.put_application_response_unflushed(doc.id, ar)?;
        }
        let queued = match email {
            Some((log, job)) if !self.has_automatic_email(doc.id)? => {
                Some(self.queue_email_unflushed(log, job)?)
            }
            _ => None,
        };
        self.update_document_unflushed(doc, history)?;
        if let Some(id) = transmission_job {
            self.remove_job_unflushed(id)?;
        }
        Ok(queued)
    }
}

impl MailStore for SledStore {
    fn put_application_response(&self, document_id: u64, xml: &str) -> StoreResult<()> {
        self.put_application_response_unflushed(document_id, xml)?;
        self.flush_now()
    }

    fn application_response(&self, document_id: u64) -> StoreResult<Option<String>> {
        self.application_responses
            .get(id_key(document_id))?
            .map(|v| decompress(&v))
            .transpose()
    }

    fn queue_email(&self, log: EmailLog, job: Job) -> StoreResult<(EmailLog, Job)> {
        let queued = self.queue_email_unflushed(log, job)?;
        self.flush_now()?;
        Ok(queued)
    }

    fn email_log(&self, id: u64) -> StoreResult<Option<EmailLog>> {
        Self::get_decode(&self.email_logs, trees::EMAIL_LOGS, &id_key(id))
    }

    fn email_logs(&self, document_id: u64) -> StoreResult<Vec<EmailLog>> {
        self.email_logs_of(document_id)
    }

    fn update_email(&self, log: &EmailLog, job: EmailJob) -> StoreResult<()> {
        self.update_email_unflushed(log, job)?;
        self.flush_now()
    }
}
