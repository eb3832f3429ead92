//! [`ReceivedStore`] as async code sees it (see `async_store`): reads on
//! the store threads, writes through the flusher, durable on return.

use crate::async_store::AsyncStore;
use crate::error::StoreResult;
use crate::model::received::{EventFiles, ReceivedInvoice};
use crate::model::Company;
use crate::model::{CompanyId, Environment, Job, Page};
use crate::traits::{JobStore, ReceivedStore};

impl AsyncStore {
    pub async fn received(&self, id: u64) -> StoreResult<Option<ReceivedInvoice>> {
        self.off_thread(move |s| s.received(id)).await
    }

    /// The record every party finds by `cufe` (the vouched one).
    pub async fn received_by_cufe(&self, cufe: String) -> StoreResult<Option<ReceivedInvoice>> {
        self.off_thread(move |s| s.received_by_cufe(&cufe)).await
    }

    /// `company`'s upload of `cufe`.
    pub async fn received_upload_of(
        &self,
        company: CompanyId,
        cufe: String,
    ) -> StoreResult<Option<ReceivedInvoice>> {
        self.off_thread(move |s| s.received_upload_of(company, &cufe))
            .await
    }

    /// The signed invoice an upload carried.
    pub async fn received_upload(&self, id: u64) -> StoreResult<Option<String>> {
        self.off_thread(move |s| s.received_upload(id)).await
    }

    /// Ids of the uploads not yet compared with the authority's copy.
    pub async fn unchecked_received(&self) -> StoreResult<Vec<u64>> {
        self.off_thread(|s| s.unchecked_received()).await
    }

    /// Stores a received invoice (and the uploaded XML), durable on return.
    pub async fn save_received(
        &self,
        record: ReceivedInvoice,
        upload: Option<String>,
    ) -> StoreResult<ReceivedInvoice> {
        let (record_pg, upload_pg) = (record.clone(), upload.clone());
        self.durable(
            move |s| s.save_received_unflushed(record, upload),
            move |p| p.save_received(record_pg, upload_pg),
        )
        .await
    }

    /// An event accepted by the API, in one group commit: its files, its
    /// transmission job, then the invoice naming it (a crash before the
    /// last write leaves a job whose event is not stored, which the job
    /// runner drops). Returns the invoice and the job as stored.
    pub async fn save_received_event(
        &self,
        record: ReceivedInvoice,
        event_id: u64,
        files: EventFiles,
        job: Job,
    ) -> StoreResult<(ReceivedInvoice, Job)> {
        let (record_pg, files_pg, job_pg) = (record.clone(), files.clone(), job.clone());
        self.durable(
            move |s| {
                s.put_event_files(event_id, &files)?;
                let job = s.put_job_unflushed(job)?;
                let record = s.save_received_unflushed(record, None)?;
                Ok((record, job))
            },
            // The same writes in the same order, each committed.
            move |p| {
                p.put_event_files(event_id, &files_pg)?;
                let job = p.put_job(job_pg)?;
                let record = p.save_received(record_pg, None)?;
                Ok((record, job))
            },
        )
        .await
    }

    /// An event's outcome and the end of its job, durable on return.
    pub async fn finish_received_event(
        &self,
        record: ReceivedInvoice,
        job: Option<u64>,
    ) -> StoreResult<ReceivedInvoice> {
        let record_pg = record.clone();
        self.durable(
            move |s| {
                let record = s.save_received_unflushed(record, None)?;
                if let Some(id) = job {
                    s.remove_job_unflushed(id)?;
                }
                Ok(record)
            },
            move |p| {
                let record = p.save_received(record_pg, None)?;
                if let Some(id) = job {
                    p.remove_job(id)?;
                }
                Ok(record)
            },
        )
        .await
    }

    pub async fn received_page(
        &self,
        buyer: CompanyId,
        environment: Environment,
        page: u32,
        limit: u32,
    ) -> StoreResult<Page<ReceivedInvoice>> {
        self.off_thread(move |s| s.received_page(buyer, environment, page, limit))
            .await
    }

    pub async fn eligible_page(
        &self,
        holder: CompanyId,
        environment: Environment,
        page: u32,
        limit: u32,
    ) -> StoreResult<Page<ReceivedInvoice>> {
        self.off_thread(move |s| s.eligible_page(holder, environment, page, limit))
            .await
    }

    pub async fn next_event_id(&self) -> StoreResult<u64> {
        self.off_thread(|s| s.next_event_id()).await
    }

    pub async fn event_files(&self, event_id: u64) -> StoreResult<Option<EventFiles>> {
        self.off_thread(move |s| s.event_files(event_id)).await
    }

    pub async fn company_by_nit(&self, nit: String) -> StoreResult<Option<Company>> {
        self.off_thread(move |s| s.company_by_nit(&nit)).await
    }

    pub async fn document_by_code(&self, code: String) -> StoreResult<Option<u64>> {
        self.off_thread(move |s| s.document_by_code(&code)).await
    }
}
