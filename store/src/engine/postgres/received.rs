//! Received invoices and their events' files on PostgreSQL. A record is
//! written in one transaction holding its row (and, for a new one, the
//! unique indexes: one upload per company and CUFE, one record per CUFE
//! that every party finds), guarded by its version as on sled: two writers
//! of one invoice never both win.

use crate::engine::postgres::records::{big, json, pack, records, unpack, unpack_text, unsigned};
use crate::engine::postgres::{db_error, is_unique_violation, storable, PgStore, Sql};
use crate::error::{StoreError, StoreResult};
use crate::model::received::{CopyState, EventFiles, ReceivedInvoice};
use crate::model::{CompanyId, Environment, Page};
use crate::traits::ReceivedStore;

fn environment_code(e: Environment) -> i16 {
    i16::from(e.authority_code())
}

/// The record the CUFE finds, if any (locked for the caller's transaction).
fn cufe_holder(client: &mut impl Sql, cufe: &str) -> StoreResult<Option<u64>> {
    let row = client
        .query_opt(
            "SELECT id FROM received WHERE cufe = $1 AND cufe_record FOR UPDATE",
            &[&cufe],
        )
        .map_err(db_error)?;
    Ok(row.map(|r| unsigned(r.get(0))))
}

fn upload_of(client: &mut impl Sql, company: CompanyId, cufe: &str) -> StoreResult<Option<u64>> {
    let row = client
        .query_opt(
            "SELECT id FROM received WHERE uploaded_by = $1 AND cufe = $2",
            &[&big(company)?, &cufe],
        )
        .map_err(db_error)?;
    Ok(row.map(|r| unsigned(r.get(0))))
}

/// What [`write_received_in`] left: the record written, or the unique
/// index that refused it (another transaction took the upload or the CUFE).
pub(crate) type Written = Result<ReceivedInvoice, postgres::Error>;

/// Writes a received invoice in `client`'s transaction: a new one (id 0)
/// refused when its uploader has an upload of its CUFE, or when it is
/// vouched for and the CUFE has a vouched record; another only over the
/// version it read. `imported` keeps the id and version as given.
pub(crate) fn write_received_in(
    client: &mut impl Sql,
    mut r: ReceivedInvoice,
    upload: Option<String>,
    imported: bool,
) -> StoreResult<Written> {
    let new = r.id == 0 || imported;
    if r.id == 0 {
        r.id = unsigned(
            client
                .query_one("SELECT nextval('received_ids')", &[])
                .map_err(db_error)?
                .get(0),
        );
    }
    let expected = r.version;
    if !imported {
        r.version += 1;
    }
    let vouched = r.authority_copy.state == CopyState::Same;
    let holder = cufe_holder(client, &r.cufe)?;
    if new {
        if let Some(company) = r.uploaded_by {
            if let Some(id) = upload_of(client, company, &r.cufe)? {
                return Err(StoreError::DuplicateReference { id });
            }
        }
        if let (true, Some(id)) = (vouched, holder) {
            return Err(StoreError::DuplicateReference { id });
        }
    } else {
        let old = client
            .query_opt(
                "SELECT version FROM received WHERE id = $1 FOR UPDATE",
                &[&big(r.id)?],
            )
            .map_err(db_error)?
            .ok_or(StoreError::NotFound("received invoice"))?;
        if unsigned(old.get(0)) != expected {
            return Err(StoreError::Conflict(
                "the invoice changed meanwhile; try again".into(),
            ));
        }
    }
    // The CUFE's record: a vouched one when it has none; this one while
    // it stays vouched; never one while another is.
    let cufe_record = match holder {
        None => vouched,
        Some(h) => h == r.id && vouched,
    };
    let buyer = r.buyer.company_id.map(big).transpose()?;
    let holder_company = r.holder.company_id.map(big).transpose()?;
    let eligible = r.eligible && holder_company.is_some();
    let upload = upload.map(|x| pack(x.as_bytes())).transpose()?;
    let written = client.execute(
        "INSERT INTO received (id, cufe, uploaded_by, cufe_record, unchecked, buyer, holder,
             environment, eligible, version, record, upload)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
         ON CONFLICT (id) DO UPDATE SET cufe_record = excluded.cufe_record,
             unchecked = excluded.unchecked, buyer = excluded.buyer, holder = excluded.holder,
             eligible = excluded.eligible, version = excluded.version, record = excluded.record,
             upload = coalesce(excluded.upload, received.upload)",
        &[
            &big(r.id)?,
            &r.cufe,
            &r.uploaded_by.map(big).transpose()?,
            &cufe_record,
            &(r.authority_copy.state == CopyState::Unchecked),
            &buyer,
            &holder_company,
            &environment_code(r.environment),
            &eligible,
            &big(r.version)?,
            &json("received", &r)?,
            &upload,
        ],
    );
    match written {
        Ok(_) => Ok(Ok(r)),
        Err(e) if is_unique_violation(&e) => Ok(Err(e)),
        Err(e) => Err(db_error(e)),
    }
}

pub(crate) fn put_event_files_in(
    client: &mut impl Sql,
    event_id: u64,
    files: &EventFiles,
) -> StoreResult<()> {
    let bytes = serde_json::to_vec(files).map_err(|e| StoreError::Corrupt {
        tree: "received_event_files",
        reason: e.to_string(),
    })?;
    client
        .execute(
            "INSERT INTO received_event_files (event_id, files) VALUES ($1, $2)
             ON CONFLICT (event_id) DO UPDATE SET files = excluded.files",
            &[&big(event_id)?, &pack(&bytes)?],
        )
        .map_err(db_error)?;
    Ok(())
}

impl PgStore {
    /// [`write_received_in`] in a transaction of its own; a unique index's
    /// refusal names the record that holds the upload or the CUFE.
    pub(crate) fn write_received(
        &self,
        r: ReceivedInvoice,
        upload: Option<String>,
    ) -> StoreResult<ReceivedInvoice> {
        let (uploaded_by, cufe) = (r.uploaded_by, r.cufe.clone());
        let mut conn = self.conn()?;
        let mut tx = conn.transaction().map_err(db_error)?;
        match write_received_in(&mut tx, r, upload, false)? {
            Ok(r) => {
                tx.commit().map_err(db_error)?;
                Ok(r)
            }
            Err(e) => {
                drop(tx);
                // Another node's transaction took the upload or the CUFE.
                let id = match uploaded_by {
                    Some(c) => upload_of(&mut *conn, c, &cufe)?,
                    None => None,
                };
                let id = match id {
                    Some(id) => Some(id),
                    None => cufe_holder(&mut *conn, &cufe)?,
                };
                Err(match id {
                    Some(id) => StoreError::DuplicateReference { id },
                    None => db_error(e),
                })
            }
        }
    }

    fn received_where(
        &self,
        filter: &str,
        params: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> StoreResult<Vec<ReceivedInvoice>> {
        let rows = self
            .conn()?
            .query(
                &format!("SELECT record FROM received WHERE {filter}"),
                params,
            )
            .map_err(db_error)?;
        records("received", &rows)
    }

    fn received_list(
        &self,
        filter: &str,
        owner: CompanyId,
        environment: Environment,
        page: u32,
        limit: u32,
    ) -> StoreResult<Page<ReceivedInvoice>> {
        let owner = big(owner)?;
        let env = environment_code(environment);
        let total: i64 = self
            .conn()?
            .query_one(
                &format!("SELECT count(*) FROM received WHERE {filter}"),
                &[&owner, &env],
            )
            .map_err(db_error)?
            .get(0);
        let page = page.max(1);
        let skip = i64::from(page - 1).saturating_mul(i64::from(limit));
        let items = self.received_where(
            &format!("{filter} ORDER BY id DESC LIMIT $3 OFFSET $4"),
            &[&owner, &env, &i64::from(limit), &skip],
        )?;
        Ok(Page {
            items,
            page,
            limit,
            total: unsigned(total),
        })
    }
}

impl ReceivedStore for PgStore {
    fn received(&self, id: u64) -> StoreResult<Option<ReceivedInvoice>> {
        Ok(self
            .received_where("id = $1", &[&big(id)?])?
            .into_iter()
            .next())
    }

    fn received_by_cufe(&self, cufe: &str) -> StoreResult<Option<ReceivedInvoice>> {
        if !storable(cufe) {
            return Ok(None);
        }
        Ok(self
            .received_where("cufe = $1 AND cufe_record", &[&cufe])?
            .into_iter()
            .next())
    }

    fn received_upload_of(
        &self,
        company: CompanyId,
        cufe: &str,
    ) -> StoreResult<Option<ReceivedInvoice>> {
        if !storable(cufe) {
            return Ok(None);
        }
        Ok(self
            .received_where("uploaded_by = $1 AND cufe = $2", &[&big(company)?, &cufe])?
            .into_iter()
            .next())
    }

    fn unchecked_received(&self) -> StoreResult<Vec<u64>> {
        let rows = self
            .conn()?
            .query("SELECT id FROM received WHERE unchecked ORDER BY id", &[])
            .map_err(db_error)?;
        Ok(rows.iter().map(|r| unsigned(r.get(0))).collect())
    }

    fn save_received(
        &self,
        record: ReceivedInvoice,
        upload: Option<String>,
    ) -> StoreResult<ReceivedInvoice> {
        self.write_received(record, upload)
    }

    fn received_page(
        &self,
        buyer: CompanyId,
        environment: Environment,
        page: u32,
        limit: u32,
    ) -> StoreResult<Page<ReceivedInvoice>> {
        self.received_list(
            "buyer = $1 AND environment = $2",
            buyer,
            environment,
            page,
            limit,
        )
    }

    fn eligible_page(
        &self,
        holder: CompanyId,
        environment: Environment,
        page: u32,
        limit: u32,
    ) -> StoreResult<Page<ReceivedInvoice>> {
        self.received_list(
            "holder = $1 AND environment = $2 AND eligible",
            holder,
            environment,
            page,
            limit,
        )
    }

    fn received_upload(&self, id: u64) -> StoreResult<Option<String>> {
        let row = self
            .conn()?
            .query_opt(
                "SELECT upload FROM received WHERE id = $1 AND upload IS NOT NULL",
                &[&big(id)?],
            )
            .map_err(db_error)?;
        row.map(|r| unpack_text("received", r.get(0))).transpose()
    }

    fn next_event_id(&self) -> StoreResult<u64> {
        let row = self
            .conn()?
            .query_one("SELECT nextval('received_event_ids')", &[])
            .map_err(db_error)?;
        Ok(unsigned(row.get(0)))
    }

    fn put_event_files(&self, event_id: u64, files: &EventFiles) -> StoreResult<()> {
        put_event_files_in(&mut *self.conn()?, event_id, files)
    }

    fn event_files(&self, event_id: u64) -> StoreResult<Option<EventFiles>> {
        let row = self
            .conn()?
            .query_opt(
                "SELECT files FROM received_event_files WHERE event_id = $1",
                &[&big(event_id)?],
            )
            .map_err(db_error)?;
        let Some(row) = row else { return Ok(None) };
        let bytes = unpack("received_event_files", row.get(0))?;
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| StoreError::Corrupt {
                tree: "received_event_files",
                reason: e.to_string(),
            })
    }

    fn document_by_code(&self, code: &str) -> StoreResult<Option<u64>> {
        if !storable(code) {
            return Ok(None);
        }
        let row = self
            .conn()?
            .query_opt(
                "SELECT id FROM documents WHERE code = $1 ORDER BY id LIMIT 1",
                &[&code],
            )
            .map_err(db_error)?;
        Ok(row.map(|r| unsigned(r.get(0))))
    }

    fn received_after(&self, after: u64, limit: usize) -> StoreResult<Vec<ReceivedInvoice>> {
        self.received_where(
            "id > $1 ORDER BY id LIMIT $2",
            &[&big(after)?, &big(limit as u64)?],
        )
    }
}
