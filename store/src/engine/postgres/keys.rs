//! The master keys, imports and backups on PostgreSQL.

use std::sync::{Arc, PoisonError};

use chrono::Utc;

use crate::durability::flusher::FlusherPause;
use crate::engine::postgres::documents::{
    add_history, insert_document, put_application_response_in, put_files, put_job_in,
    write_email_log,
};
use crate::engine::postgres::received::{put_event_files_in, write_received_in};
use crate::engine::postgres::records::{big, json, record, unsigned};
use crate::engine::postgres::{db_error, off_runtime, Conn, PgStore, Sql, SEALED_TABLES};
use crate::engine::sled::sealing::secret_fields;
use crate::error::{StoreError, StoreResult};
use crate::model::export::{ExportItem, ExportedDocument};
use crate::model::*;
use crate::secrets::sealing::{self, Keyring, MasterKey};
use crate::traits::{Backup, CredentialStore, Import, MasterKeys};

impl MasterKeys for PgStore {
    fn keyring(&self) -> Arc<Keyring> {
        PgStore::keyring(self)
    }

    /// Every sealed value re-sealed under `new` in one transaction: after a
    /// crash they are all under the old key or all under the new one.
    fn rotate_master_key(&self, new: MasterKey) -> StoreResult<usize> {
        let next = self.keyring().rotated(new);
        let rewritten = self.in_transaction(|tx| {
            let mut rewritten = 0;
            for (table, tree) in SEALED_TABLES {
                let rows = tx
                    .query(
                        &format!("SELECT ctid::text, record FROM {table} FOR UPDATE"),
                        &[],
                    )
                    .map_err(db_error)?;
                for row in rows {
                    let at: String = row.get(0);
                    let mut record: serde_json::Value = row.get(1);
                    if sealing::reseal(tree, secret_fields(tree), &mut record, &next)? {
                        tx.execute(
                            &format!("UPDATE {table} SET record = $2 WHERE ctid = $1::text::tid"),
                            &[&at, &postgres::types::Json(&record)],
                        )
                        .map_err(db_error)?;
                        rewritten += 1;
                    }
                }
            }
            Ok(rewritten)
        })?;
        *self.keys.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(next);
        Ok(rewritten)
    }
}

/// Why a copy point is not taken here: PostgreSQL's own tools back it up.
/// Why a backup is refused on this engine.
pub const BACKUPS: &str = "on PostgreSQL, backups are PostgreSQL's own (pg_basebackup, \
    continuous archiving with point-in-time recovery, or pg_dump): see docs/operations.md";

/// The numbering hold of an imported store, as `meta` keeps it.
pub(crate) const NUMBERING_HOLD: &str = "numbering_hold";

/// The hold in `client`'s view (locked with `FOR UPDATE` by a writer).
pub(crate) fn read_hold(client: &mut impl Sql, lock: bool) -> StoreResult<Option<NumberingHold>> {
    let sql = if lock {
        "SELECT value FROM meta WHERE key = $1 FOR UPDATE"
    } else {
        "SELECT value FROM meta WHERE key = $1"
    };
    let row = client
        .query_opt(sql, &[&NUMBERING_HOLD])
        .map_err(db_error)?;
    row.map(|r| record("meta", &r, "value")).transpose()
}

fn put_hold(client: &mut impl Sql, hold: &NumberingHold) -> StoreResult<()> {
    client
        .execute(
            "INSERT INTO meta (key, value) VALUES ($1, $2)
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            &[&NUMBERING_HOLD, &json("meta", hold)?],
        )
        .map_err(db_error)?;
    Ok(())
}

/// Refuses a number from a numbering `hold` holds and no one confirmed
/// (phase one reads the hold with the statement that takes the number).
pub(crate) fn check_hold(
    hold: Option<NumberingHold>,
    company: CompanyId,
    resolution_id: u64,
) -> StoreResult<()> {
    let Some(h) = hold else {
        return Ok(());
    };
    let pair = (company, resolution_id);
    let held = h
        .held
        .iter()
        .any(|n| (n.company_id, n.resolution_id) == pair);
    let confirmed = h
        .confirmed
        .iter()
        .any(|c| (c.company_id, c.resolution_id) == pair);
    if held && !confirmed {
        return Err(StoreError::NumberingHeld { resolution_id });
    }
    Ok(())
}

/// Backups on PostgreSQL are the database's own, so there is no copy point
/// to take. An imported store (`emisor admin import`, `migrate`) holds its
/// numberings, as a restored sled data dir does, until each is confirmed.
impl Backup for PgStore {
    /// Nothing to hold: every write commits on its own.
    fn pause_flusher(&self) -> FlusherPause {
        FlusherPause::holding_nothing()
    }

    fn checkpoint_to(
        &self,
        _to: &std::path::Path,
        _at_point: &mut dyn FnMut(),
    ) -> StoreResult<CheckpointCopy> {
        Err(StoreError::NotOnThisEngine(BACKUPS.into()))
    }

    fn checkpoint_trees_to(
        &self,
        _to: &std::path::Path,
        _at_point: &mut dyn FnMut(),
    ) -> StoreResult<(CheckpointCopy, Vec<LogFile>)> {
        Err(StoreError::NotOnThisEngine(BACKUPS.into()))
    }

    /// Every numbering that exists now (each company's resolutions and
    /// the authority's test sets as each company uses them), held.
    fn hold_numberings(&self) -> StoreResult<NumberingHold> {
        let mut pairs: Vec<(CompanyId, u64)> = Vec::new();
        {
            let mut conn = self.conn()?;
            for row in conn
                .query("SELECT company_id, id FROM resolutions", &[])
                .map_err(db_error)?
            {
                pairs.push((unsigned(row.get(0)), unsigned(row.get(1))));
            }
            for row in conn
                .query("SELECT id FROM companies", &[])
                .map_err(db_error)?
            {
                let company = unsigned(row.get(0));
                pairs.extend(test_set::TEST_SETS.iter().map(|set| (company, set.id)));
            }
        }
        pairs.sort_unstable();
        pairs.dedup();
        let mut held = Vec::new();
        for (company, id) in pairs {
            if let Some(r) = self.resolution(company, id)? {
                held.push(HeldNumbering {
                    company_id: company,
                    resolution_id: id,
                    next: self.next_number(&r)?,
                    prefix: r.prefix,
                });
            }
        }
        let hold = NumberingHold {
            since: Utc::now(),
            held,
            confirmed: Vec::new(),
        };
        self.in_transaction(|tx| put_hold(tx, &hold))?;
        Ok(hold)
    }

    fn numbering_hold(&self) -> StoreResult<Option<NumberingHold>> {
        read_hold(&mut *self.conn()?, false)
    }

    /// Under the counter's row lock, as phase one takes a number.
    fn confirm_numbering(
        &self,
        company: CompanyId,
        resolution_id: u64,
        next: Option<u64>,
    ) -> StoreResult<ConfirmedNumbering> {
        let resolution = self
            .resolution(company, resolution_id)?
            .ok_or(StoreError::NotFound("numbering resolution"))?;
        self.in_transaction(|tx| {
            let mut hold = read_hold(tx, true)?
                .ok_or_else(|| StoreError::Conflict("no numbering is held".into()))?;
            tx.execute(
                "INSERT INTO counters (company_id, resolution_id, next) VALUES ($1, $2, $3)
                 ON CONFLICT DO NOTHING",
                &[&big(company)?, &big(resolution_id)?, &big(resolution.from)?],
            )
            .map_err(db_error)?;
            let current = unsigned(
                tx.query_one(
                    "SELECT next FROM counters WHERE company_id = $1 AND resolution_id = $2
                     FOR UPDATE",
                    &[&big(company)?, &big(resolution_id)?],
                )
                .map_err(db_error)?
                .get(0),
            );
            let next = next.unwrap_or(current);
            if next < current {
                return Err(StoreError::Conflict(format!(
                    "the next number of this numbering is already {current}: a smaller one \
                     would be given twice"
                )));
            }
            if next > resolution.to.saturating_add(1) {
                return Err(StoreError::Conflict(format!(
                    "{next} is past the end of the range ({})",
                    resolution.to
                )));
            }
            tx.execute(
                "UPDATE counters SET next = $3 WHERE company_id = $1 AND resolution_id = $2",
                &[&big(company)?, &big(resolution_id)?, &big(next)?],
            )
            .map_err(db_error)?;
            let confirmed = ConfirmedNumbering {
                company_id: company,
                resolution_id,
                next,
                at: Utc::now(),
            };
            hold.confirmed
                .retain(|c| (c.company_id, c.resolution_id) != (company, resolution_id));
            hold.confirmed.push(confirmed.clone());
            put_hold(tx, &hold)?;
            Ok(confirmed)
        })
    }
}

/// The tables an import must find empty.
const RECORD_TABLES: [&str; 15] = [
    "companies",
    "software",
    "resolutions",
    "counters",
    "certificates",
    "api_keys",
    "customers",
    "documents",
    "jobs",
    "events",
    "email_logs",
    "application_responses",
    "settings",
    "received",
    "received_event_files",
];

/// Each sequence and the ids it must go past after an import.
const SEQUENCES: [(&str, &str); 9] = [
    ("company_ids", "SELECT max(id) FROM companies"),
    ("resolution_ids", "SELECT max(id) FROM resolutions"),
    ("api_key_ids", "SELECT max(id) FROM api_keys"),
    ("customer_ids", "SELECT max(id) FROM customers"),
    ("document_ids", "SELECT max(id) FROM documents"),
    ("job_ids", "SELECT max(id) FROM jobs"),
    ("event_ids", "SELECT max(id) FROM events"),
    ("email_ids", "SELECT max(id) FROM email_logs"),
    ("received_ids", "SELECT max(id) FROM received"),
];

/// An export's document with its request, files, history and
/// ApplicationResponse, in `client`'s transaction.
fn import_document(client: &mut impl Sql, d: ExportedDocument) -> StoreResult<()> {
    let ExportedDocument {
        mut record,
        request,
        files,
        history,
        application_response,
    } = d;
    let id = record.id;
    let request = match request {
        Some(r) => {
            record.request = serde_json::Value::Null;
            r
        }
        None => record.request.to_string().into_bytes(),
    };
    // No payload hash is exported: the duplicate window is minutes long,
    // and the imported documents are older.
    insert_document(client, &record, &request, &[0; 32], None)?.map_err(db_error)?;
    if let Some(files) = files {
        let files = files.files().ok_or_else(|| StoreError::Corrupt {
            tree: "document_files",
            reason: format!("the XML of document {id} is not UTF-8"),
        })?;
        put_files(client, id, &files)?;
    }
    for h in &history {
        add_history(client, id, h)?;
    }
    if let Some(xml) = &application_response {
        put_application_response_in(client, id, xml)?;
    }
    Ok(())
}

fn exec(
    client: &mut impl Sql,
    sql: &str,
    params: &[&(dyn postgres::types::ToSql + Sync)],
) -> StoreResult<()> {
    client.execute(sql, params).map(|_| ()).map_err(db_error)
}

/// One record of an export, in `client`'s transaction.
fn import_item(client: &mut impl Sql, item: ExportItem) -> StoreResult<()> {
    match item {
        ExportItem::Company(c) => exec(
            client,
            "INSERT INTO companies (id, nit, created_at, record) VALUES ($1, $2, $3, $4)",
            &[&big(c.id)?, &c.nit, &c.created_at, &json("companies", &c)?],
        ),
        ExportItem::Software(s) => exec(
            client,
            "INSERT INTO software (company_id, kind, record) VALUES ($1, $2, $3)",
            &[
                &big(s.company_id)?,
                &i16::from(s.kind.tag()),
                &json("software", &s)?,
            ],
        ),
        ExportItem::Resolution(r) => exec(
            client,
            "INSERT INTO resolutions (id, company_id, document_type, record)
             VALUES ($1, $2, $3, $4)",
            &[
                &big(r.id)?,
                &big(r.company_id)?,
                &i16::from(r.document_type),
                &json("resolutions", &r)?,
            ],
        ),
        ExportItem::Counter(c) => exec(
            client,
            "INSERT INTO counters (company_id, resolution_id, next) VALUES ($1, $2, $3)
             ON CONFLICT (company_id, resolution_id) DO UPDATE SET next = excluded.next",
            &[&big(c.company_id)?, &big(c.resolution_id)?, &big(c.next)?],
        ),
        ExportItem::Certificate(c) => exec(
            client,
            "INSERT INTO certificates (company_id, record) VALUES ($1, $2)",
            &[&big(c.company_id)?, &json("certificates", &c)?],
        ),
        ExportItem::ApiKey(k) => exec(
            client,
            "INSERT INTO api_keys (id, company_id, hash, record) VALUES ($1, $2, $3, $4)",
            &[
                &big(k.id)?,
                &big(k.company_id)?,
                &k.hash,
                &json("api_keys", &k)?,
            ],
        ),
        ExportItem::Customer(c) => exec(
            client,
            "INSERT INTO customers (company_id, id, identification_number, name, record)
             VALUES ($1, $2, $3, $4, $5)",
            &[
                &big(c.company_id)?,
                &big(c.id)?,
                &c.identification_number,
                &c.name,
                &json("customers", &c)?,
            ],
        ),
        ExportItem::Setting(s) => exec(
            client,
            "INSERT INTO settings (key, value) VALUES ($1, $2)",
            &[&s.key, &s.value],
        ),
        ExportItem::Document(d) => import_document(client, *d),
        ExportItem::Job(job) => put_job_in(client, job, None).map(|_| ()),
        ExportItem::EmailLog(log) => write_email_log(client, &log),
        ExportItem::Event(e) => exec(
            client,
            "INSERT INTO events (id, company_id, kind, at, record) VALUES ($1, $2, $3, $4, $5)",
            &[
                &big(e.id)?,
                &big(e.company_id)?,
                &e.kind,
                &e.at,
                &json("events", &e)?,
            ],
        ),
        ExportItem::Received(r) => {
            write_received_in(client, r.record, r.upload, true)?.map_err(db_error)?;
            Ok(())
        }
        ExportItem::EventFiles(f) => put_event_files_in(client, f.event_id, &f.files),
        ExportItem::NumberingHold(hold) => put_hold(client, &hold),
    }
}

/// An import's one transaction: begun by its first record, committed by
/// `finish_import`; an import that fails, or never finishes, leaves the
/// database as empty as it found it (rolled back when dropped).
#[derive(Default)]
pub(crate) struct ImportTx(Option<Conn>);

impl ImportTx {
    /// Ends the transaction without it (the connection goes back clean).
    fn roll_back(&mut self) {
        if let Some(mut conn) = self.0.take() {
            off_runtime(move || {
                let _ = conn.batch_execute("ROLLBACK");
            });
        }
    }
}

impl Drop for ImportTx {
    fn drop(&mut self) {
        self.roll_back();
    }
}

impl Import for PgStore {
    fn check_empty_for_import(&self) -> StoreResult<()> {
        let mut conn = self.conn()?;
        for table in RECORD_TABLES {
            let any: bool = conn
                .query_one(&format!("SELECT EXISTS (SELECT 1 FROM {table})"), &[])
                .map_err(db_error)?
                .get(0);
            if any {
                return Err(StoreError::Conflict(format!(
                    "the database already holds records (`{table}`): an import goes into an \
                     empty database"
                )));
            }
        }
        Ok(())
    }

    /// Each record written with its ids, in the import's one transaction.
    fn import(&self, item: ExportItem) -> StoreResult<()> {
        let _sealing = self.sealing_scope();
        let mut import = self.import.lock().unwrap_or_else(PoisonError::into_inner);
        let conn = match &mut import.0 {
            Some(conn) => conn,
            empty => {
                let mut conn = self.conn()?;
                conn.batch_execute("BEGIN").map_err(db_error)?;
                empty.insert(conn)
            }
        };
        let written = import_item(&mut **conn, item);
        if written.is_err() {
            import.roll_back();
        }
        written
    }

    /// The sequences moved past the imported ids, each company's usage by
    /// month counted from its documents, and the commit.
    fn finish_import(&self) -> StoreResult<()> {
        let mut import = self.import.lock().unwrap_or_else(PoisonError::into_inner);
        let mut conn = match import.0.take() {
            Some(conn) => conn,
            None => {
                let mut conn = self.conn()?;
                conn.batch_execute("BEGIN").map_err(db_error)?;
                conn
            }
        };
        let finished =
            finish_in(&mut *conn).and_then(|()| conn.batch_execute("COMMIT").map_err(db_error));
        if finished.is_err() {
            import.0 = Some(conn);
            import.roll_back();
        }
        finished
    }
}

fn finish_in(client: &mut impl Sql) -> StoreResult<()> {
    for (sequence, max) in SEQUENCES {
        exec(
            client,
            &format!("SELECT setval('{sequence}', coalesce(({max}), 0) + 1, false)"),
            &[],
        )?;
    }
    exec(
        client,
        "SELECT setval('received_event_ids', coalesce(greatest(
             (SELECT max(event_id) FROM received_event_files),
             (SELECT max((e->>'id')::bigint) FROM received,
                  jsonb_array_elements(record->'events') e)), 0) + 1, false)",
        &[],
    )?;
    // The trigger counted each document as a change: folded all at once.
    exec(client, crate::engine::postgres::list::FOLD, &[&i64::MAX])?;
    exec(
        client,
        "INSERT INTO monthly_usage (company_id, period, used)
         SELECT company_id, to_char(issue_date, 'YYYYMM')::integer, count(*)
         FROM documents GROUP BY 1, 2
         ON CONFLICT (company_id, period) DO UPDATE SET used = excluded.used",
        &[],
    )
}
