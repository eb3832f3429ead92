//! Version 1 of the export file: what is written, in this order, and its
//! reader. A later version gets a module of its own beside this one, and
//! this reader stays.

use std::io::Write;
use std::sync::Arc;

use crate::export::{ExportError, ExportResult, Lines, Source, Summary};
use crate::model::export::{
    ExportItem, ExportedDocument, ExportedEventFiles, ExportedFiles, ExportedReceived,
    NumberingCounter, Setting,
};
use crate::model::test_set;
use crate::model::SoftwareKind;
use crate::secrets::sealing::{self, Keyring};
use crate::traits::Import;

/// Records read from the store at a time.
const PAGE: usize = 512;
/// The last line, and how it starts.
const END: &str = r#"{"entity":"end","records":"#;

pub(crate) struct Writer<'a> {
    out: &'a mut dyn Write,
    keys: Arc<Keyring>,
    summary: Summary,
    line: u64,
}

impl<'a> Writer<'a> {
    pub(crate) fn new(out: &'a mut dyn Write, keys: Arc<Keyring>) -> Self {
        Writer {
            out,
            keys,
            summary: Summary {
                version: 1,
                ..Summary::default()
            },
            line: 0,
        }
    }

    pub(crate) fn header(&mut self, header: &super::Header) -> ExportResult<()> {
        self.line += 1;
        serde_json::to_writer(&mut *self.out, header).map_err(|e| self.failed(e))?;
        self.out.write_all(b"\n")?;
        Ok(())
    }

    /// One record's line, its secrets sealed under the store's key.
    fn put(&mut self, item: ExportItem) -> ExportResult<()> {
        self.line += 1;
        let _sealing = sealing::scope(Arc::clone(&self.keys));
        serde_json::to_writer(&mut *self.out, &item).map_err(|e| self.failed(e))?;
        self.out.write_all(b"\n")?;
        self.summary.count(&item);
        Ok(())
    }

    fn failed(&self, e: serde_json::Error) -> ExportError {
        match e.io_error_kind() {
            Some(kind) => ExportError::Io(std::io::Error::new(kind, e.to_string())),
            None => ExportError::Write {
                line: self.line,
                reason: e.to_string(),
            },
        }
    }

    pub(crate) fn end(self) -> ExportResult<Summary> {
        writeln!(self.out, "{END}{}}}", self.summary.records)?;
        self.out.flush()?;
        Ok(self.summary)
    }
}

/// Every record, whatever a record names before it: the companies, each
/// company's records, the settings, documents (each followed by its
/// mails), jobs, events, received invoices (each followed by its events'
/// files) and a numbering hold.
pub(crate) fn write_all(source: &Source<'_>, w: &mut Writer<'_>) -> ExportResult<()> {
    let store = source.store;
    let companies = store.companies()?;
    for c in &companies {
        w.put(ExportItem::Company(c.clone()))?;
    }
    for c in &companies {
        for kind in [SoftwareKind::Invoicing, SoftwareKind::Payroll] {
            if let Some(s) = store.software(c.id, kind)? {
                w.put(ExportItem::Software(s))?;
            }
        }
        let own = store.resolutions(c.id)?;
        for r in &own {
            w.put(ExportItem::Resolution(r.clone()))?;
        }
        let sets = test_set::TEST_SETS.iter().map(|set| set.resolution(c.id));
        for r in own.into_iter().chain(sets) {
            let next = store.next_number(&r)?;
            w.put(ExportItem::Counter(NumberingCounter {
                company_id: c.id,
                resolution_id: r.id,
                next,
            }))?;
        }
        if let Some(cert) = store.certificate(c.id)? {
            w.put(ExportItem::Certificate(cert))?;
        }
        for k in store.api_keys(c.id)? {
            w.put(ExportItem::ApiKey(k))?;
        }
        let mut after = 0;
        loop {
            let customers = store.customers_after(c.id, after, PAGE)?;
            let Some(last) = customers.last() else { break };
            after = last.id;
            for customer in customers {
                w.put(ExportItem::Customer(customer))?;
            }
        }
    }
    for (key, value) in store.settings()? {
        w.put(ExportItem::Setting(Setting { key, value }))?;
    }
    let mut after = 0;
    loop {
        let documents = store.documents_after(after, PAGE)?;
        let Some(last) = documents.last() else { break };
        after = last.id;
        for record in documents {
            let id = record.id;
            let document = ExportedDocument {
                request: store.document_request(id)?,
                files: store.document_files(id)?.as_ref().map(ExportedFiles::of),
                history: store.history(id)?,
                application_response: store.application_response(id)?,
                record,
            };
            w.put(ExportItem::Document(Box::new(document)))?;
            for log in store.email_logs(id)? {
                w.put(ExportItem::EmailLog(log))?;
            }
        }
    }
    for job in store.jobs()? {
        w.put(ExportItem::Job(job))?;
    }
    for c in &companies {
        let mut after = 0;
        loop {
            let events = store.events_after(c.id, after, PAGE)?;
            let Some(last) = events.last() else { break };
            after = last.id;
            for e in events {
                w.put(ExportItem::Event(e))?;
            }
        }
    }
    let received = source.received;
    let mut after = 0;
    loop {
        let records = received.received_after(after, PAGE)?;
        let Some(last) = records.last() else { break };
        after = last.id;
        for record in records {
            let event_ids: Vec<u64> = record.events.iter().map(|e| e.id).collect();
            let upload = received.received_upload(record.id)?;
            w.put(ExportItem::Received(Box::new(ExportedReceived {
                record,
                upload,
            })))?;
            for event_id in event_ids {
                if let Some(files) = received.event_files(event_id)? {
                    w.put(ExportItem::EventFiles(ExportedEventFiles {
                        event_id,
                        files,
                    }))?;
                }
            }
        }
    }
    if let Some(hold) = source.backup.numbering_hold()? {
        w.put(ExportItem::NumberingHold(hold))?;
    }
    Ok(())
}

/// Reads the records after the header, up to and including the last line.
pub(crate) fn read(
    lines: &mut Lines<'_>,
    target: &dyn Import,
    keys: Arc<Keyring>,
) -> ExportResult<Summary> {
    let mut summary = Summary {
        version: 1,
        ..Summary::default()
    };
    loop {
        let Some(line) = lines.next()? else {
            return Err(ExportError::Line {
                line: lines.number,
                reason: format!(
                    "the file ends after {} records without its last line \
                     (`{END}N}}`): the export is cut short",
                    summary.records
                ),
            });
        };
        let at = lines.number;
        if line.starts_with(END) {
            let records: u64 = line
                .get(END.len()..line.len().saturating_sub(1))
                .and_then(|n| n.parse().ok())
                .ok_or_else(|| ExportError::Line {
                    line: at,
                    reason: "a last line without its count of records".into(),
                })?;
            if records != summary.records {
                return Err(ExportError::Line {
                    line: at,
                    reason: format!(
                        "the last line counts {records} records, the file holds {}",
                        summary.records
                    ),
                });
            }
            if let Some(extra) = lines.next()? {
                if !extra.trim().is_empty() {
                    return Err(ExportError::Line {
                        line: lines.number,
                        reason: "a line after the last line".into(),
                    });
                }
            }
            return Ok(summary);
        }
        let item: ExportItem = {
            // Sealed secrets open under this store's key, or the line fails.
            let _sealing = sealing::scope(Arc::clone(&keys));
            serde_json::from_str(&line).map_err(|e| ExportError::Line {
                line: at,
                reason: e.to_string(),
            })?
        };
        summary.count(&item);
        let kind = item.kind();
        target.import(item).map_err(|e| ExportError::Line {
            line: at,
            reason: format!("writing its {kind}: {e}"),
        })?;
    }
}
