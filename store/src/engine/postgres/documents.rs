//! Documents, their files and history, jobs and their leases, events and
//! mail on PostgreSQL. Each trait method is one transaction, committed
//! before it returns; the compound writes the async store makes in one
//! group commit on sled are one transaction here (`*_in` helpers).

use chrono::{DateTime, FixedOffset, Utc};
use postgres::error::SqlState;
use postgres::types::ToSql;
use postgres::Row;

use crate::durability::flusher::Committed;
use crate::engine::postgres::issuer::{unchanged_customer, upsert_customer_in, Ahead};
use crate::engine::postgres::keys::{check_hold, NUMBERING_HOLD};
use crate::engine::postgres::nodes::{Completion, COMPLETE_CLAIM};
use crate::engine::postgres::records::{
    big, json, pack, record, records, unpack, unpack_text, unsigned,
};
use crate::engine::postgres::statements::Tx;
use crate::engine::postgres::{db_error, is_unique_violation, storable, PgStore, Sql};
use crate::error::{StoreError, StoreResult};
use crate::model::*;
use crate::traits::{CredentialStore, DocumentStore, EventStore, JobLeases, JobStore, MailStore};

fn environment_code(e: Environment) -> i16 {
    i16::from(e.authority_code())
}

fn family_code(t: u8) -> i16 {
    i16::from(Family::of_document_type(t).tag())
}

/// A document's payable amount for its `numeric` column (the model keeps
/// it as decimal text): NULL when it is not a plain decimal (a half-built
/// document has none); the record keeps it as given.
fn total_param(total: &str) -> Option<&str> {
    let t = total.trim();
    let digits = t.strip_prefix('-').unwrap_or(t);
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    let plain = !whole.is_empty()
        && whole.bytes().all(|b| b.is_ascii_digit())
        && fraction.bytes().all(|b| b.is_ascii_digit());
    plain.then_some(t)
}

/// `doc`'s columns and record over its row ($1-$9), unless the stored
/// record holds more authority events than `doc` ($10).
const WRITE_DOCUMENT: &str = "UPDATE documents SET state = $2, pending_build = $3, issue_date = $4,
         total = $5::text::numeric, code = $6, list_keys = $7, updated_at = $8, record = $9
     WHERE id = $1 AND coalesce(jsonb_array_length(record -> 'authority_events'), 0) <= $10";

/// The parameters of [`WRITE_DOCUMENT`] for `doc`.
fn document_params(doc: &DocumentRecord) -> StoreResult<DocumentParams<'_>> {
    Ok(DocumentParams {
        id: big(doc.id)?,
        state: i16::from(doc.state),
        total: total_param(&doc.total),
        list_keys: json("documents", &doc.list_keys)?,
        record: json("documents", doc)?,
        events: i32::try_from(doc.authority_events.len()).unwrap_or(i32::MAX),
        doc,
    })
}

struct DocumentParams<'d> {
    id: i64,
    state: i16,
    total: Option<&'d str>,
    list_keys: postgres::types::Json<serde_json::Value>,
    record: postgres::types::Json<serde_json::Value>,
    events: i32,
    doc: &'d DocumentRecord,
}

impl DocumentParams<'_> {
    fn as_params(&self) -> [&(dyn ToSql + Sync); 10] {
        [
            &self.id,
            &self.state,
            &self.doc.pending_build,
            &self.doc.issue_date,
            &self.total,
            &self.doc.code,
            &self.list_keys,
            &self.doc.updated_at,
            &self.record,
            &self.events,
        ]
    }
}

/// Writes `doc` over its row in `client`'s transaction; an invoice's
/// authority events only grow (a copy read before the events sweep stored
/// some keeps them, as on sled). The usual write is one statement; a row
/// holding more events is read, locked, and merged with.
fn write_document(client: &mut impl Sql, doc: &DocumentRecord) -> StoreResult<()> {
    let written = client
        .execute(WRITE_DOCUMENT, &document_params(doc)?.as_params())
        .map_err(db_error)?;
    if written == 1 {
        return Ok(());
    }
    let stored = client
        .query_opt(
            "SELECT record FROM documents WHERE id = $1 FOR UPDATE",
            &[&big(doc.id)?],
        )
        .map_err(db_error)?
        .ok_or(StoreError::NotFound("document"))?;
    let stored: DocumentRecord = record("documents", &stored, "record")?;
    let mut merged = doc.clone();
    if stored.authority_events.len() > doc.authority_events.len() {
        merged.authority_events = stored.authority_events;
        match stored.list_keys.get(EVENT_STANDING_KEY) {
            Some(standing) => merged
                .list_keys
                .insert(EVENT_STANDING_KEY.into(), standing.clone()),
            None => merged.list_keys.remove(EVENT_STANDING_KEY),
        };
    }
    // The row is locked and `merged` holds at least its events: written.
    client
        .execute(WRITE_DOCUMENT, &document_params(&merged)?.as_params())
        .map_err(db_error)?;
    Ok(())
}

/// A document built, in one statement: its record written as by
/// [`WRITE_DOCUMENT`] ($1-$10), unless another node took it up half-built
/// ($19: this node; [`still_building`]), and, only when it was written,
/// its files ($11-$16, as [`put_files`] writes them) and its history line
/// ($17, $18), and its payload's claim in the shared window completed
/// ($20-$23: [`Completion`], all null for none). Answers 1 when written,
/// 0 when nothing was (no such row,
/// one another node took up, or one holding more authority events:
/// [`write_document`] merges with it).
const BUILT: &str = "WITH built AS (
         UPDATE documents SET state = $2, pending_build = $3, issue_date = $4,
             total = $5::text::numeric, code = $6, list_keys = $7, updated_at = $8, record = $9
         WHERE id = $1 AND coalesce(jsonb_array_length(record -> 'authority_events'), 0) <= $10
             AND (NOT pending_build OR build_node IS NULL OR build_node = $19)
         RETURNING id
     ), files AS (
         INSERT INTO document_files (document_id, xml_name, zip_name, xml, zip, zip_at, zip_at_offset_s)
         SELECT id, $11::text, $12::text, $13::bytea, $14::bytea, $15::timestamptz, $16::integer
         FROM built
         ON CONFLICT (document_id) DO UPDATE SET xml_name = excluded.xml_name,
             zip_name = excluded.zip_name, xml = excluded.xml, zip = excluded.zip,
             zip_at = excluded.zip_at, zip_at_offset_s = excluded.zip_at_offset_s
     ), history AS (
         INSERT INTO document_history (document_id, at, entry)
         SELECT id, $17::timestamptz, $18::jsonb FROM built
     ), claim AS (
         UPDATE payload_claims c SET document_id = built.id,
             expires_at = now() + make_interval(secs => $23::float8)
         FROM built
         WHERE c.company_id = $20::bigint AND c.payload_hash = $21::bytea AND c.token = $22::bigint
     )
     SELECT count(*) FROM built";

/// [`BUILT`] on `client`: whether the document was written.
fn write_built(
    client: &mut impl Sql,
    doc: &DocumentRecord,
    files: &DocumentFiles,
    history: &HistoryEntry,
    node: &str,
    claim: Option<&Completion>,
) -> StoreResult<bool> {
    let document = document_params(doc)?;
    let (claim_company, claim_hash, claim_token, claim_window) = (
        claim.map(|c| c.company),
        claim.map(|c| c.hash.as_slice()),
        claim.map(|c| c.token),
        claim.map(|c| c.window_secs),
    );
    let (zip, zip_at, offset) = zip_columns(files);
    let xml = pack(files.xml.as_bytes())?;
    let entry = json("document_history", history)?;
    let mut params: Vec<&(dyn ToSql + Sync)> = document.as_params().to_vec();
    params.extend_from_slice(&[
        &files.xml_name,
        &files.zip_name,
        &xml,
        &zip,
        &zip_at,
        &offset,
        &history.at,
        &entry,
        &node,
        &claim_company,
        &claim_hash,
        &claim_token,
        &claim_window,
    ]);
    let written: i64 = client.query_one(BUILT, &params).map_err(db_error)?.get(0);
    Ok(written == 1)
}

pub(crate) fn add_history(client: &mut impl Sql, id: u64, h: &HistoryEntry) -> StoreResult<()> {
    client
        .execute(
            "INSERT INTO document_history (document_id, at, entry) VALUES ($1, $2, $3)",
            &[&big(id)?, &h.at, &json("document_history", h)?],
        )
        .map_err(db_error)?;
    Ok(())
}

/// Stores (or replaces) a job; id 0 gets a new one.
/// The job written by `node` (`None`: an import), whose timetable then
/// holds it: every writer of a job schedules it where it runs.
pub(crate) fn put_job_in(
    client: &mut impl Sql,
    mut job: Job,
    node: Option<&str>,
) -> StoreResult<Job> {
    if job.id == 0 {
        job.id = unsigned(
            client
                .query_one("SELECT nextval('job_ids')", &[])
                .map_err(db_error)?
                .get(0),
        );
    }
    let document = job.document_id.map(big).transpose()?;
    client
        .execute(
            "INSERT INTO jobs (id, kind, company_id, document_id, run_at_ms, created_at, record, node)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
             ON CONFLICT (id) DO UPDATE SET kind = excluded.kind, company_id = excluded.company_id,
                 document_id = excluded.document_id, run_at_ms = excluded.run_at_ms,
                 record = excluded.record, node = excluded.node",
            &[
                &big(job.id)?,
                &job.kind,
                &big(job.company_id)?,
                &document,
                &job.run_at_ms,
                &job.created_at,
                &json("jobs", &job)?,
                &node,
            ],
        )
        .map_err(db_error)?;
    Ok(job)
}

fn remove_job_in(client: &mut impl Sql, id: u64) -> StoreResult<()> {
    client
        .execute("DELETE FROM jobs WHERE id = $1", &[&big(id)?])
        .map_err(db_error)?;
    Ok(())
}

/// The files' row: the XML once, compressed; the ZIP only when it is not
/// derived from the XML.
pub(crate) fn put_files(client: &mut impl Sql, id: u64, files: &DocumentFiles) -> StoreResult<()> {
    let (zip, zip_at, offset) = zip_columns(files);
    client
        .execute(
            "INSERT INTO document_files (document_id, xml_name, zip_name, xml, zip, zip_at, zip_at_offset_s)
             VALUES ($1, $2, $3, $4, $5, $6, $7)
             ON CONFLICT (document_id) DO UPDATE SET xml_name = excluded.xml_name,
                 zip_name = excluded.zip_name, xml = excluded.xml, zip = excluded.zip,
                 zip_at = excluded.zip_at, zip_at_offset_s = excluded.zip_at_offset_s",
            &[
                &big(id)?,
                &files.xml_name,
                &files.zip_name,
                &pack(files.xml.as_bytes())?,
                &zip,
                &zip_at,
                &offset,
            ],
        )
        .map_err(db_error)?;
    Ok(())
}

/// The ZIP's columns: its bytes when stored, or the stamp it is derived
/// at and that stamp's offset.
fn zip_columns(files: &DocumentFiles) -> (Option<&[u8]>, Option<DateTime<Utc>>, Option<i32>) {
    match &files.zip {
        ZipFile::Stored(bytes) => (Some(bytes), None, None),
        ZipFile::Derived { at } => (
            None,
            Some(at.with_timezone(&Utc)),
            Some(at.offset().local_minus_utc()),
        ),
    }
}

fn files_of(row: &Row) -> StoreResult<DocumentFiles> {
    let xml: Vec<u8> = row.try_get("xml").map_err(db_error)?;
    let zip: Option<Vec<u8>> = row.try_get("zip").map_err(db_error)?;
    let zip_at: Option<DateTime<Utc>> = row.try_get("zip_at").map_err(db_error)?;
    let offset: Option<i32> = row.try_get("zip_at_offset_s").map_err(db_error)?;
    let zip = match (zip, zip_at) {
        (Some(bytes), _) => ZipFile::Stored(bytes),
        (None, Some(at)) => {
            let offset =
                FixedOffset::east_opt(offset.unwrap_or(0)).ok_or_else(|| StoreError::Corrupt {
                    tree: "document_files",
                    reason: "a ZIP stamp's offset is out of range".into(),
                })?;
            ZipFile::Derived {
                at: at.with_timezone(&offset),
            }
        }
        (None, None) => ZipFile::Stored(Vec::new()),
    };
    Ok(DocumentFiles {
        xml: unpack_text("document_files", &xml)?,
        xml_name: row.try_get("xml_name").map_err(db_error)?,
        zip_name: row.try_get("zip_name").map_err(db_error)?,
        zip,
    })
}

pub(crate) fn put_application_response_in(
    client: &mut impl Sql,
    id: u64,
    xml: &str,
) -> StoreResult<()> {
    client
        .execute(
            "INSERT INTO application_responses (document_id, xml) VALUES ($1, $2)
             ON CONFLICT (document_id) DO UPDATE SET xml = excluded.xml",
            &[&big(id)?, &pack(xml.as_bytes())?],
        )
        .map_err(db_error)?;
    Ok(())
}

pub(crate) fn write_email_log(client: &mut impl Sql, log: &EmailLog) -> StoreResult<()> {
    client
        .execute(
            "INSERT INTO email_logs (id, document_id, automatic, record) VALUES ($1, $2, $3, $4)
             ON CONFLICT (id) DO UPDATE SET record = excluded.record, automatic = excluded.automatic",
            &[
                &big(log.id)?,
                &big(log.document_id)?,
                &log.automatic,
                &json("email_logs", log)?,
            ],
        )
        .map_err(db_error)?;
    Ok(())
}

/// An email's job (its payload naming the log) and the log; a new log
/// (id 0) gets its id first.
fn queue_email_in(
    client: &mut impl Sql,
    mut log: EmailLog,
    mut job: Job,
    node: Option<&str>,
) -> StoreResult<(EmailLog, Job)> {
    if log.id == 0 {
        log.id = unsigned(
            client
                .query_one("SELECT nextval('email_ids')", &[])
                .map_err(db_error)?
                .get(0),
        );
    }
    job.document_id = None;
    job.payload = serde_json::json!({ "email_id": log.id });
    let job = put_job_in(client, job, node)?;
    write_email_log(client, &log)?;
    Ok((log, job))
}

/// Phase one's numbering and insert in one statement
/// (`V7__phase_one_function.sql`): the number taken and the counter moved
/// on (its row locked to the commit), the month's usage moved on likewise,
/// the numbering hold compared with the one the caller checked, and the
/// document inserted half-built with its number; the commit does not wait
/// for the disk. A refusal raises one of the codes below.
const PHASE_ONE: &str = "SELECT emisor_number_document($1, $2, $3, $4, $5, $6, $7, $8, $9, $10,
     $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24)";

/// [`PHASE_ONE`]'s refusals: the month's documents at the limit, the
/// number outside the range, and a numbering hold other than the one
/// checked (read it, check it, and run the statement again with it).
const LIMIT_REACHED: &str = "EM001";
const RANGE_EXHAUSTED: &str = "EM002";
const HOLD_CHANGED: &str = "EM003";

/// Runs of [`PHASE_ONE`] a document makes at most while the hold changes
/// under it.
const HOLD_TRIES: usize = 3;

/// Whether `e` is one of [`PHASE_ONE`]'s refusals (or the reference's
/// unique rule): nothing was committed.
fn is_refusal(e: &postgres::Error) -> bool {
    is_unique_violation(e)
        || matches!(
            e.code().map(SqlState::code),
            Some(LIMIT_REACHED | RANGE_EXHAUSTED | HOLD_CHANGED)
        )
}

/// [`PHASE_ONE`] for `doc` (half-built, its number left to the statement),
/// on `client`: the number taken, or the database's refusal.
fn number_document(
    client: &mut impl Sql,
    new: &NewDocument,
    doc: &DocumentRecord,
    resolution: &NumberingResolution,
    hold: &Option<serde_json::Value>,
    node: &str,
) -> StoreResult<Result<u64, postgres::Error>> {
    let period = i32::try_from(new.period)
        .map_err(|_| StoreError::Conflict(format!("period {} is out of range", new.period)))?;
    let hold = hold.as_ref().map(postgres::types::Json);
    let request = pack(&new.request)?;
    let params: [&(dyn ToSql + Sync); 24] = [
        &big(doc.company_id)?,
        &big(resolution.id)?,
        &big(resolution.from.saturating_add(1))?,
        &period,
        &NUMBERING_HOLD,
        &hold,
        &new.monthly_limit.map(big).transpose()?,
        &big(resolution.from)?,
        &big(resolution.to)?,
        &big(doc.id)?,
        &environment_code(doc.environment),
        &family_code(doc.document_type),
        &i16::from(doc.document_type),
        &i16::from(doc.state),
        &doc.issue_date,
        &doc.external_reference,
        &json("documents", &doc.list_keys)?,
        &&new.payload_hash[..],
        &doc.created_at,
        &json("documents", doc)?,
        &request,
        &doc.customer_id.map(big).transpose()?,
        &doc.prefix,
        &node,
    ];
    Ok(client
        .query_one(PHASE_ONE, &params)
        .map(|row| unsigned(row.get(0))))
}

/// The numbering hold's stored value, as [`PHASE_ONE`] compares it.
fn read_raw_hold(client: &mut impl Sql) -> StoreResult<Option<serde_json::Value>> {
    let row = client
        .query_opt("SELECT value FROM meta WHERE key = $1", &[&NUMBERING_HOLD])
        .map_err(db_error)?;
    Ok(row.map(|r| r.get::<_, postgres::types::Json<serde_json::Value>>(0).0))
}

/// Refuses phase two of a half-built document that another node has
/// taken up (this node was judged dead: its lease ran out): that node
/// builds it into a draft, and this one's caller hears 503 rather than
/// 200 or 202. The row stays locked to the commit, so an adoption waits
/// for it or skips it.
fn still_building(client: &mut impl Sql, id: u64, node: &str) -> StoreResult<()> {
    let row = client
        .query_opt(
            "SELECT build_node FROM documents WHERE id = $1 AND pending_build FOR UPDATE",
            &[&big(id)?],
        )
        .map_err(db_error)?;
    match row.and_then(|r| r.get::<_, Option<String>>(0)) {
        Some(builder) if builder != node => Err(StoreError::Unavailable(
            "this node's lease ran out and another node took the document up".into(),
        )),
        _ => Ok(()),
    }
}

impl PgStore {
    /// Runs `f` in one transaction, committed before this returns.
    pub(crate) fn in_transaction<T>(
        &self,
        f: impl FnOnce(&mut Tx<'_>) -> StoreResult<T>,
    ) -> StoreResult<T> {
        let mut conn = self.conn()?;
        let mut tx = conn.transaction().map_err(db_error)?;
        let out = f(&mut tx)?;
        tx.commit().map_err(db_error)?;
        Ok(out)
    }

    /// Phase two: the files, the record built, its history line and its
    /// job, in one transaction. Without a job it is one statement
    /// ([`BUILT`]), unless the stored record holds authority events the
    /// built one lacks. Durable once this returns.
    pub fn complete_document(
        &self,
        doc: &DocumentRecord,
        files: &DocumentFiles,
        job: Option<Job>,
        history: &HistoryEntry,
    ) -> StoreResult<Option<Job>> {
        let alone = job.is_none();
        // The payload's claim in the shared window, completed in the same
        // commit (no round trip nor flush of its own afterwards).
        let claim = self.claims.completion(doc.id)?;
        let node = &self.node;
        if alone
            && write_built(
                &mut *self.conn()?,
                doc,
                files,
                history,
                node,
                claim.as_ref(),
            )?
        {
            self.completed(claim);
            return Ok(None);
        }
        let job = self.in_transaction(|tx| {
            let job = job.map(|j| put_job_in(tx, j, Some(node))).transpose()?;
            if alone || !write_built(tx, doc, files, history, node, claim.as_ref())? {
                // Taken up by another node (refused), no such record
                // (refused), or one to merge with.
                still_building(tx, doc.id, node)?;
                write_document(tx, doc)?;
                put_files(tx, doc.id, files)?;
                add_history(tx, doc.id, history)?;
                if let Some(c) = &claim {
                    tx.execute(
                        COMPLETE_CLAIM,
                        &[
                            &c.company,
                            &c.hash.as_slice(),
                            &c.token,
                            &big(doc.id)?,
                            &c.window_secs,
                        ],
                    )
                    .map_err(db_error)?;
                }
            }
            Ok(job)
        })?;
        self.completed(claim);
        Ok(job)
    }

    fn completed(&self, claim: Option<Completion>) {
        if let Some(c) = claim {
            self.claims.completed(&c);
        }
    }

    /// A document saved with its history line and, when given, its job
    /// stored and another removed, in one transaction.
    pub fn update_document_with(
        &self,
        doc: &DocumentRecord,
        history: &HistoryEntry,
        put: Option<Job>,
        remove: Option<u64>,
    ) -> StoreResult<Option<Job>> {
        self.in_transaction(|tx| {
            let job = put
                .map(|j| put_job_in(tx, j, Some(&self.node)))
                .transpose()?;
            write_document(tx, doc)?;
            add_history(tx, doc.id, history)?;
            if let Some(id) = remove {
                remove_job_in(tx, id)?;
            }
            Ok(job)
        })
    }

    /// Documents saved with their jobs and history lines, in one
    /// transaction.
    pub fn update_documents_with_jobs(
        &self,
        changes: Vec<(DocumentRecord, Job, HistoryEntry)>,
    ) -> StoreResult<Vec<Job>> {
        self.in_transaction(|tx| {
            changes
                .into_iter()
                .map(|(doc, job, history)| {
                    let job = put_job_in(tx, job, Some(&self.node))?;
                    write_document(tx, &doc)?;
                    add_history(tx, doc.id, &history)?;
                    Ok(job)
                })
                .collect()
        })
    }

    /// An acceptance in one transaction: the ApplicationResponse, the
    /// automatic email unless the document has one, the record, and its
    /// transmission job removed. Returns the email queued.
    pub fn accept_document(
        &self,
        doc: &DocumentRecord,
        transmission_job: Option<u64>,
        history: &HistoryEntry,
        application_response: Option<&str>,
        email: Option<(EmailLog, Job)>,
    ) -> StoreResult<Option<(EmailLog, Job)>> {
        self.in_transaction(|tx| {
            if let Some(ar) = application_response {
                put_application_response_in(tx, doc.id, ar)?;
            }
            let queued = match email {
                Some((log, job)) => {
                    let has: bool = tx
                        .query_one(
                            "SELECT EXISTS (SELECT 1 FROM email_logs
                                 WHERE document_id = $1 AND automatic)",
                            &[&big(doc.id)?],
                        )
                        .map_err(db_error)?
                        .get(0);
                    if has {
                        None
                    } else {
                        Some(queue_email_in(tx, log, job, Some(&self.node))?)
                    }
                }
                None => None,
            };
            write_document(tx, doc)?;
            add_history(tx, doc.id, history)?;
            if let Some(id) = transmission_job {
                remove_job_in(tx, id)?;
            }
            Ok(queued)
        })
    }

    /// A document whose build failed: it is already written half-built by
    /// phase one; its target state becomes DRAFT (its caller hears of the
    /// failure, so it is not transmitted unasked).
    pub fn keep_pending(&self, id: u64) -> StoreResult<()> {
        self.in_transaction(|tx| {
            let Some(row) = tx
                .query_opt(
                    "SELECT record FROM documents WHERE id = $1 AND pending_build FOR UPDATE",
                    &[&big(id)?],
                )
                .map_err(db_error)?
            else {
                return Ok(());
            };
            let mut d: DocumentRecord = record("documents", &row, "record")?;
            d.state = state::DRAFT;
            write_document(tx, &d)
        })
    }

    /// Whether the document's files are stored.
    pub fn has_files(&self, id: u64) -> StoreResult<bool> {
        let row = self
            .conn()?
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM document_files WHERE document_id = $1)",
                &[&big(id)?],
            )
            .map_err(db_error)?;
        Ok(row.get(0))
    }

    /// [`MailStore::update_email`] in a transaction of the caller's.
    pub fn update_email_with(&self, log: &EmailLog, job: EmailJob) -> StoreResult<()> {
        self.in_transaction(|tx| {
            match job {
                EmailJob::Put(j) => {
                    put_job_in(tx, j, Some(&self.node))?;
                }
                EmailJob::Remove(id) => remove_job_in(tx, id)?,
                EmailJob::Keep => {}
            }
            write_email_log(tx, log)
        })
    }

    /// Phase one: the document's id and its customer as stored, read
    /// without a lock in one statement; then [`PHASE_ONE`] (the schema's
    /// `emisor_number_document`), which takes the number (the counter's
    /// row locked to the commit: every node numbering from the same
    /// resolution waits for it), moves the month's usage on (its row
    /// likewise), compares the numbering hold with the one checked, and
    /// inserts the document half-built. That statement runs alone in its
    /// own transaction when the customer needs no write (none, or one the
    /// request leaves as stored: the usual invoice), else in one with the
    /// customer's write. The reference is claimed by a unique index, which
    /// makes a second transaction with the same reference wait for the
    /// first and fail once it commits. A refusal raises in the statement,
    /// so everything rolls back: nothing consumed. `resolution`, when the
    /// caller read it, spares its read here.
    pub fn create_numbered(
        &self,
        new: NewDocument,
        resolution: Option<NumberingResolution>,
    ) -> StoreResult<DocumentRecord> {
        self.create_numbered_ahead(new, resolution, None)
    }

    /// [`create_numbered`](Self::create_numbered) with the id and the
    /// customer read ahead with the issuer's records (when `ahead` is
    /// given): one round trip fewer.
    pub(crate) fn create_numbered_ahead(
        &self,
        new: NewDocument,
        resolution: Option<NumberingResolution>,
        ahead: Option<Ahead>,
    ) -> StoreResult<DocumentRecord> {
        let resolution = match resolution {
            Some(r) if r.id == new.resolution_id && r.company_id == new.company_id => r,
            _ => self
                .resolution(new.company_id, new.resolution_id)?
                .ok_or(StoreError::NotFound("numbering resolution"))?,
        };
        let mut conn = self.conn()?;
        let Ahead {
            id,
            customer: stored,
        } = match ahead {
            Some(ahead) => ahead,
            None => Ahead::from_row(
                &conn
                    .query_one(
                        "SELECT nextval('document_ids') AS id,
                             (SELECT record FROM customers
                              WHERE company_id = $1 AND identification_number = $2) AS customer",
                        &[
                            &big(new.company_id)?,
                            &new.customer
                                .as_ref()
                                .map(|c| c.identification_number.as_str()),
                        ],
                    )
                    .map_err(db_error)?,
            )?,
        };
        // Ok: the customer's id, nothing to write; Err: the input to write
        // (a customer read ahead under another identification number is
        // not left as stored either).
        let customer = match &new.customer {
            None => Ok(None),
            Some(input) => unchanged_customer(new.company_id, stored, input)
                .map(|c| Some(c.id))
                .ok_or(input),
        };
        let mut hold = self.hold_seen();
        for _ in 0..HOLD_TRIES {
            let taken = match customer {
                Ok(customer_id) => {
                    let doc = new.half_built(id, &resolution, 0, customer_id, Utc::now());
                    match number_document(&mut *conn, &new, &doc, &resolution, &hold, &self.node)? {
                        Ok(number) => Ok((doc, number)),
                        // Sent alone, so committed at once: an answer
                        // lost may be a commit.
                        Err(e) if !is_refusal(&e) => {
                            return Err(match db_error(e) {
                                StoreError::Unavailable(cause) => {
                                    StoreError::UnsettledCommit { id, cause }
                                }
                                other => other,
                            })
                        }
                        Err(e) => Err(e),
                    }
                }
                Err(input) => {
                    let mut tx = conn.transaction().map_err(db_error)?;
                    let customer_id = upsert_customer_in(&mut tx, new.company_id, input)?.id;
                    let doc = new.half_built(id, &resolution, 0, Some(customer_id), Utc::now());
                    match number_document(&mut tx, &new, &doc, &resolution, &hold, &self.node)? {
                        Ok(number) => {
                            tx.commit().map_err(|e| match db_error(e) {
                                // Sent, and its answer lost: committed or
                                // not, nobody can say until the database
                                // is back.
                                StoreError::Unavailable(cause) => {
                                    StoreError::UnsettledCommit { id, cause }
                                }
                                other => other,
                            })?;
                            Ok((doc, number))
                        }
                        Err(e) => Err(e),
                    }
                }
            };
            let e = match taken {
                Ok((mut doc, number)) => {
                    doc.number = number;
                    self.claims.numbered(new.company_id, &new.payload_hash, id);
                    return Ok(doc);
                }
                Err(e) => e,
            };
            match e.code().map(SqlState::code) {
                Some(HOLD_CHANGED) => {
                    // An imported store's hold, read and checked here,
                    // then the statement again with it.
                    hold = read_raw_hold(&mut *conn)?;
                    let parsed = hold
                        .clone()
                        .map(serde_json::from_value)
                        .transpose()
                        .map_err(|e| StoreError::Corrupt {
                            tree: "meta",
                            reason: e.to_string(),
                        })?;
                    check_hold(parsed, new.company_id, resolution.id)?;
                    self.remember_hold(&hold);
                }
                Some(LIMIT_REACHED) => {
                    return Err(StoreError::LimitReached {
                        limit: new.monthly_limit.unwrap_or(0),
                    })
                }
                Some(RANGE_EXHAUSTED) => {
                    return Err(StoreError::RangeExhausted {
                        resolution_id: resolution.id,
                    })
                }
                _ if is_unique_violation(&e) => {
                    // The reference is held by another document, committed
                    // before or meanwhile (on this node or another).
                    if let Some(r) = new.external_reference.as_deref() {
                        if let Some(id) = reference_holder(&mut *conn, new.company_id, r)? {
                            return Err(StoreError::DuplicateReference { id });
                        }
                    }
                    return Err(db_error(e));
                }
                _ => return Err(db_error(e)),
            }
        }
        Err(StoreError::Conflict(
            "the numbering hold changed at every try; try again".into(),
        ))
    }

    fn hold_seen(&self) -> Option<serde_json::Value> {
        self.hold_seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    fn remember_hold(&self, hold: &Option<serde_json::Value>) {
        hold.clone_into(
            &mut self
                .hold_seen
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
    }

    fn documents_where(
        &self,
        filter: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> StoreResult<Vec<DocumentRecord>> {
        let rows = self
            .conn()?
            .query(
                &format!("SELECT record FROM documents WHERE {filter}"),
                params,
            )
            .map_err(db_error)?;
        records("documents", &rows)
    }
}

impl DocumentStore for PgStore {
    /// Phase one ([`PgStore::create_numbered`]).
    fn create_document(&self, new: NewDocument) -> StoreResult<DocumentRecord> {
        self.create_numbered(new, None)
    }

    /// The files written (committed) beside the half-built record: the
    /// record does not point at them until [`commit_staged`](Self::commit_staged)
    /// marks it built, and a rebuild writes them over.
    fn stage_files(
        &self,
        document_id: u64,
        _company: CompanyId,
        _document_type: u8,
        files: &DocumentFiles,
    ) -> StoreResult<StagedFiles> {
        put_files(&mut *self.conn()?, document_id, files)?;
        Ok(StagedFiles {
            xml_name: files.xml_name.clone(),
            zip_name: files.zip_name.clone(),
            at: FileRef {
                segment: 0,
                offset: 0,
                xml_len: 0,
                zip_len: 0,
            },
            compressed: true,
            dictionary: None,
            zip_at: match &files.zip {
                ZipFile::Derived { at } => Some(*at),
                ZipFile::Stored(_) => None,
            },
            request_at: None,
        })
    }

    /// The record, its history line and its job in one transaction; the
    /// future is ready once it is committed.
    fn commit_staged(
        &self,
        doc: DocumentRecord,
        _files: StagedFiles,
        job: Option<Job>,
        history: HistoryEntry,
    ) -> Committed {
        let result = self.update_document_with(&doc, &history, job, None);
        Box::pin(std::future::ready(result))
    }

    fn document(&self, id: u64) -> StoreResult<Option<DocumentRecord>> {
        Ok(self
            .documents_where("id = $1", &[&big(id)?])?
            .into_iter()
            .next())
    }

    fn document_request(&self, id: u64) -> StoreResult<Option<Vec<u8>>> {
        let row = self
            .conn()?
            .query_opt("SELECT request FROM documents WHERE id = $1", &[&big(id)?])
            .map_err(db_error)?;
        row.map(|r| unpack("documents", r.get(0))).transpose()
    }

    fn document_files(&self, id: u64) -> StoreResult<Option<DocumentFiles>> {
        // Files staged for a document not yet built are not its files.
        let row = self
            .conn()?
            .query_opt(
                "SELECT f.* FROM document_files f JOIN documents d ON d.id = f.document_id
                 WHERE f.document_id = $1 AND NOT d.pending_build",
                &[&big(id)?],
            )
            .map_err(db_error)?;
        row.map(|r| files_of(&r)).transpose()
    }

    fn document_by_reference(
        &self,
        company: CompanyId,
        reference: &str,
    ) -> StoreResult<Option<u64>> {
        reference_holder(&mut *self.conn()?, company, reference)
    }

    fn update_document(&self, doc: &DocumentRecord, history: HistoryEntry) -> StoreResult<()> {
        self.update_document_with(doc, &history, None, None)
            .map(|_| ())
    }

    fn history(&self, id: u64) -> StoreResult<Vec<HistoryEntry>> {
        let rows = self
            .conn()?
            .query(
                "SELECT entry FROM document_history WHERE document_id = $1 ORDER BY line",
                &[&big(id)?],
            )
            .map_err(db_error)?;
        rows.iter()
            .map(|r| record("document_history", r, "entry"))
            .collect()
    }

    fn documents_in_states(
        &self,
        company: Option<CompanyId>,
        states: &[u8],
    ) -> StoreResult<Vec<DocumentRecord>> {
        let states: Vec<i16> = states.iter().map(|s| i16::from(*s)).collect();
        let company = company.map(big).transpose()?;
        self.documents_where(
            "state = ANY($1) AND NOT pending_build AND ($2::bigint IS NULL OR company_id = $2)
             ORDER BY id",
            &[&states, &company],
        )
    }

    /// Each as a draft: phase two is one transaction that clears
    /// `pending_build`, so a half-built row's caller was never answered
    /// (or was answered an error) and it is not transmitted unasked, as
    /// sled's repair does with a half-built record (`repair::as_draft`).
    fn pending_builds(&self) -> StoreResult<Vec<DocumentRecord>> {
        let mut docs = self.documents_where("pending_build ORDER BY id", &[])?;
        for d in &mut docs {
            d.state = state::DRAFT;
        }
        Ok(docs)
    }

    fn recent_requests(&self, since: DateTime<Utc>) -> StoreResult<Vec<RecentRequest>> {
        let rows = self
            .conn()?
            .query(
                "SELECT id, company_id, created_at, payload_hash FROM documents
                 WHERE created_at >= $1 ORDER BY created_at, id",
                &[&since],
            )
            .map_err(db_error)?;
        let mut out = Vec::with_capacity(rows.len());
        for r in rows {
            let hash: Vec<u8> = r.get(3);
            let Ok(payload_hash) = <[u8; 32]>::try_from(hash.as_slice()) else {
                continue;
            };
            out.push(RecentRequest {
                document_id: unsigned(r.get(0)),
                company_id: unsigned(r.get(1)),
                created_at: r.get(2),
                payload_hash,
            });
        }
        Ok(out)
    }

    fn monthly_usage(&self, company: CompanyId, period: u32) -> StoreResult<u64> {
        let period = i32::try_from(period).unwrap_or(i32::MAX);
        let row = self
            .conn()?
            .query_opt(
                "SELECT used FROM monthly_usage WHERE company_id = $1 AND period = $2",
                &[&big(company)?, &period],
            )
            .map_err(db_error)?;
        Ok(row.map_or(0, |r| unsigned(r.get(0))))
    }

    fn document_counts(&self) -> StoreResult<Vec<((u8, u8), u64)>> {
        let rows = self
            .conn()?
            .query(
                "SELECT document_type, state, count(*) FROM documents
                 WHERE NOT pending_build GROUP BY document_type, state ORDER BY 1, 2",
                &[],
            )
            .map_err(db_error)?;
        Ok(rows
            .iter()
            .map(|r| {
                let t: i16 = r.get(0);
                let s: i16 = r.get(1);
                let n: i64 = r.get(2);
                (
                    (u8::try_from(t).unwrap_or(0), u8::try_from(s).unwrap_or(0)),
                    unsigned(n),
                )
            })
            .collect())
    }

    fn list_documents(&self, q: &ListQuery) -> StoreResult<Page<DocumentRecord>> {
        self.list(q)
    }

    fn search_documents(&self, query: &DocumentSearch) -> StoreResult<SearchPage> {
        self.search(query)
    }

    fn documents_after(&self, after: u64, limit: usize) -> StoreResult<Vec<DocumentRecord>> {
        self.documents_where(
            "id > $1 ORDER BY id LIMIT $2",
            &[&big(after)?, &big(limit as u64)?],
        )
    }
}

/// A new document's row (phase one by `node`, or an import); a unique
/// index's refusal is handed back for the caller to name.
pub(crate) fn insert_document(
    client: &mut impl Sql,
    doc: &DocumentRecord,
    request: &[u8],
    payload_hash: &[u8; 32],
    node: Option<&str>,
) -> StoreResult<Result<u64, postgres::Error>> {
    Ok(client.execute(
        "INSERT INTO documents (id, company_id, environment, family, document_type,
             resolution_id, number, state, pending_build, issue_date, total,
             external_reference, code, list_keys, payload_hash, created_at, updated_at,
             record, request, customer_id, prefix, build_node)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11::text::numeric, $12, $13, $14,
             $15, $16, $17, $18, $19, $20, $21, $22)",
        &[
            &big(doc.id)?,
            &big(doc.company_id)?,
            &environment_code(doc.environment),
            &family_code(doc.document_type),
            &i16::from(doc.document_type),
            &big(doc.resolution_id)?,
            &big(doc.number)?,
            &i16::from(doc.state),
            &doc.pending_build,
            &doc.issue_date,
            &total_param(&doc.total),
            &doc.external_reference,
            &doc.code,
            &json("documents", &doc.list_keys)?,
            &&payload_hash[..],
            &doc.created_at,
            &doc.updated_at,
            &json("documents", doc)?,
            &pack(request)?,
            &doc.customer_id.map(big).transpose()?,
            &doc.prefix,
            &node,
        ],
    ))
}

/// The document holding `reference` for `company`, if any.
fn reference_holder(
    client: &mut impl Sql,
    company: CompanyId,
    reference: &str,
) -> StoreResult<Option<u64>> {
    if !storable(reference) {
        return Ok(None);
    }
    let row = client
        .query_opt(
            "SELECT id FROM documents WHERE company_id = $1 AND external_reference = $2",
            &[&big(company)?, &reference],
        )
        .map_err(db_error)?;
    Ok(row.map(|r| unsigned(r.get(0))))
}

impl JobStore for PgStore {
    fn put_job(&self, job: Job) -> StoreResult<Job> {
        self.in_transaction(|tx| put_job_in(tx, job, Some(&self.node)))
    }

    fn remove_job(&self, id: u64) -> StoreResult<()> {
        remove_job_in(&mut *self.conn()?, id)
    }

    fn jobs(&self) -> StoreResult<Vec<Job>> {
        let rows = self
            .conn()?
            .query("SELECT record FROM jobs ORDER BY id", &[])
            .map_err(db_error)?;
        records("jobs", &rows)
    }

    fn job(&self, id: u64) -> StoreResult<Option<Job>> {
        let row = self
            .conn()?
            .query_opt("SELECT record FROM jobs WHERE id = $1", &[&big(id)?])
            .map_err(db_error)?;
        row.map(|r| record("jobs", &r, "record")).transpose()
    }

    fn job_for_document(&self, document_id: u64) -> StoreResult<Option<Job>> {
        let row = self
            .conn()?
            .query_opt(
                "SELECT record FROM jobs WHERE document_id = $1 ORDER BY id DESC LIMIT 1",
                &[&big(document_id)?],
            )
            .map_err(db_error)?;
        row.map(|r| record("jobs", &r, "record")).transpose()
    }
}

fn lease_of(row: &Row) -> JobLease {
    JobLease {
        job_id: unsigned(row.get(0)),
        worker: row.get(1),
        expires_at_ms: row.get(2),
    }
}

/// Each change is one statement: PostgreSQL's row lock on the lease makes
/// two claims at once wait for each other, and the second sees the first's
/// lease. A worker is named with its node (`transmit@<node>`), so the same
/// worker on two nodes never holds one claim together; a claim whose node
/// is dead (its node lease expired) is taken at once, and a live node's
/// only once it expires (a claim written by a node of the previous schema
/// has no node: it expires as before).
impl JobLeases for PgStore {
    fn claim_job(
        &self,
        job: u64,
        worker: &str,
        now_ms: i64,
        for_ms: i64,
    ) -> StoreResult<Option<JobLease>> {
        let row = self
            .conn()?
            .query_opt(
                "INSERT INTO job_leases (job_id, worker, expires_at_ms, node) VALUES ($1, $2, $3, $5)
                 ON CONFLICT (job_id) DO UPDATE SET worker = excluded.worker,
                     expires_at_ms = excluded.expires_at_ms, node = excluded.node
                 WHERE job_leases.worker = excluded.worker OR job_leases.expires_at_ms <= $4
                     OR (job_leases.node <> $5 AND NOT EXISTS (
                         SELECT 1 FROM node_leases n
                         WHERE n.node = job_leases.node AND n.expires_at > now()))
                 RETURNING job_id, worker, expires_at_ms",
                &[
                    &big(job)?,
                    &self.worker(worker),
                    &now_ms.saturating_add(for_ms),
                    &now_ms,
                    &self.node(),
                ],
            )
            .map_err(db_error)?;
        Ok(row.as_ref().map(lease_of))
    }

    fn renew_job_lease(
        &self,
        job: u64,
        worker: &str,
        now_ms: i64,
        for_ms: i64,
    ) -> StoreResult<Option<JobLease>> {
        let row = self
            .conn()?
            .query_opt(
                "UPDATE job_leases SET expires_at_ms = $3
                 WHERE job_id = $1 AND worker = $2 AND expires_at_ms > $4
                 RETURNING job_id, worker, expires_at_ms",
                &[
                    &big(job)?,
                    &self.worker(worker),
                    &now_ms.saturating_add(for_ms),
                    &now_ms,
                ],
            )
            .map_err(db_error)?;
        Ok(row.as_ref().map(lease_of))
    }

    fn release_job(&self, job: u64, worker: &str) -> StoreResult<bool> {
        let n = self
            .conn()?
            .execute(
                "DELETE FROM job_leases WHERE job_id = $1 AND worker = $2",
                &[&big(job)?, &self.worker(worker)],
            )
            .map_err(db_error)?;
        Ok(n > 0)
    }

    fn job_lease(&self, job: u64) -> StoreResult<Option<JobLease>> {
        let row = self
            .conn()?
            .query_opt(
                "SELECT job_id, worker, expires_at_ms FROM job_leases WHERE job_id = $1",
                &[&big(job)?],
            )
            .map_err(db_error)?;
        Ok(row.as_ref().map(lease_of))
    }
}

impl EventStore for PgStore {
    fn append_event(&self, mut event: EventRecord) -> StoreResult<EventRecord> {
        let mut conn = self.conn()?;
        event.id = unsigned(
            conn.query_one("SELECT nextval('event_ids')", &[])
                .map_err(db_error)?
                .get(0),
        );
        conn.execute(
            "INSERT INTO events (id, company_id, kind, at, record) VALUES ($1, $2, $3, $4, $5)",
            &[
                &big(event.id)?,
                &big(event.company_id)?,
                &event.kind,
                &event.at,
                &json("events", &event)?,
            ],
        )
        .map_err(db_error)?;
        Ok(event)
    }

    fn events(
        &self,
        company: CompanyId,
        kind: &str,
        limit: usize,
    ) -> StoreResult<Vec<EventRecord>> {
        let rows = self
            .conn()?
            .query(
                "SELECT record FROM (SELECT id, record FROM events
                     WHERE company_id = $1 AND kind = $2 ORDER BY id DESC LIMIT $3) newest
                 ORDER BY id",
                &[&big(company)?, &kind, &big(limit as u64)?],
            )
            .map_err(db_error)?;
        records("events", &rows)
    }

    fn events_after(
        &self,
        company: CompanyId,
        after: u64,
        limit: usize,
    ) -> StoreResult<Vec<EventRecord>> {
        let rows = self
            .conn()?
            .query(
                "SELECT record FROM events WHERE company_id = $1 AND id > $2 ORDER BY id LIMIT $3",
                &[&big(company)?, &big(after)?, &big(limit as u64)?],
            )
            .map_err(db_error)?;
        records("events", &rows)
    }
}

impl MailStore for PgStore {
    fn put_application_response(&self, document_id: u64, xml: &str) -> StoreResult<()> {
        put_application_response_in(&mut *self.conn()?, document_id, xml)
    }

    fn application_response(&self, document_id: u64) -> StoreResult<Option<String>> {
        let row = self
            .conn()?
            .query_opt(
                "SELECT xml FROM application_responses WHERE document_id = $1",
                &[&big(document_id)?],
            )
            .map_err(db_error)?;
        row.map(|r| unpack_text("application_responses", r.get(0)))
            .transpose()
    }

    fn queue_email(&self, log: EmailLog, job: Job) -> StoreResult<(EmailLog, Job)> {
        self.in_transaction(|tx| queue_email_in(tx, log, job, Some(&self.node)))
    }

    fn email_log(&self, id: u64) -> StoreResult<Option<EmailLog>> {
        let row = self
            .conn()?
            .query_opt("SELECT record FROM email_logs WHERE id = $1", &[&big(id)?])
            .map_err(db_error)?;
        row.map(|r| record("email_logs", &r, "record")).transpose()
    }

    fn email_logs(&self, document_id: u64) -> StoreResult<Vec<EmailLog>> {
        let rows = self
            .conn()?
            .query(
                "SELECT record FROM email_logs WHERE document_id = $1 ORDER BY id",
                &[&big(document_id)?],
            )
            .map_err(db_error)?;
        records("email_logs", &rows)
    }

    fn update_email(&self, log: &EmailLog, job: EmailJob) -> StoreResult<()> {
        self.update_email_with(log, job)
    }
}
