//! The issuer records on PostgreSQL: companies, credentials, API keys,
//! customers, settings, and the store's health.

use std::sync::Arc;

use chrono::{DateTime, NaiveDate, Utc};
use postgres::Row;

use crate::engine::postgres::records::{big, json, record, record_opt, records, unsigned};
use crate::engine::postgres::{db_error, is_unique_violation, storable, PgStore, Sql};
use crate::error::{StoreError, StoreResult};
use crate::model::*;
use crate::traits::{
    ApiKeyStore, CompanyStore, CredentialStore, CustomerStore, SettingsStore, StoreHealth,
};

impl CompanyStore for PgStore {
    fn create_company(&self, new: NewCompany) -> StoreResult<Company> {
        let _sealing = self.sealing_scope();
        let mut conn = self.conn()?;
        let mut tx = conn.transaction().map_err(db_error)?;
        let id: i64 = tx
            .query_one("SELECT nextval('company_ids')", &[])
            .map_err(db_error)?
            .get(0);
        let company = Company {
            id: unsigned(id),
            nit: new.nit.clone(),
            dv: new.dv,
            name: new.name,
            trade_name: new.trade_name,
            address: new.address,
            municipality_code: new.municipality_code,
            municipality_name: new.municipality_name,
            department_code: new.department_code,
            department_name: new.department_name,
            email: new.email,
            phone: new.phone,
            organization_type: new.organization_type,
            tax_regime: new.tax_regime,
            tax_responsibilities: new.tax_responsibilities,
            rate_limit_per_minute: new.rate_limit_per_minute,
            monthly_document_limit: new.monthly_document_limit,
            webhook_url: None,
            webhook_secret: None,
            demo: new.demo,
            created_at: Utc::now(),
        };
        let inserted = tx.execute(
            "INSERT INTO companies (id, nit, created_at, record) VALUES ($1, $2, $3, $4)",
            &[
                &id,
                &company.nit,
                &company.created_at,
                &json("companies", &company)?,
            ],
        );
        match inserted {
            Err(e) if is_unique_violation(&e) => Err(StoreError::Conflict(format!(
                "a company with NIT {} already exists",
                new.nit
            ))),
            Err(e) => Err(db_error(e)),
            Ok(_) => {
                tx.commit().map_err(db_error)?;
                Ok(company)
            }
        }
    }

    fn company(&self, id: CompanyId) -> StoreResult<Option<Company>> {
        let _sealing = self.sealing_scope();
        let row = self
            .conn()?
            .query_opt("SELECT record FROM companies WHERE id = $1", &[&big(id)?])
            .map_err(db_error)?;
        row.map(|r| record("companies", &r, "record")).transpose()
    }

    fn company_by_nit(&self, nit: &str) -> StoreResult<Option<Company>> {
        if !storable(nit) {
            return Ok(None);
        }
        let _sealing = self.sealing_scope();
        let row = self
            .conn()?
            .query_opt("SELECT record FROM companies WHERE nit = $1", &[&nit])
            .map_err(db_error)?;
        row.map(|r| record("companies", &r, "record")).transpose()
    }

    fn companies(&self) -> StoreResult<Vec<Company>> {
        let _sealing = self.sealing_scope();
        let rows = self
            .conn()?
            .query("SELECT record FROM companies ORDER BY id", &[])
            .map_err(db_error)?;
        records("companies", &rows)
    }

    fn update_company(&self, company: &Company) -> StoreResult<()> {
        let _sealing = self.sealing_scope();
        let changed = self
            .conn()?
            .execute(
                "UPDATE companies SET record = $2 WHERE id = $1",
                &[&big(company.id)?, &json("companies", company)?],
            )
            .map_err(db_error)?;
        if changed == 0 {
            return Err(StoreError::NotFound("company"));
        }
        Ok(())
    }
}

impl CredentialStore for PgStore {
    fn put_software(&self, software: SoftwareRegistration) -> StoreResult<()> {
        let _sealing = self.sealing_scope();
        self.conn()?
            .execute(
                "INSERT INTO software (company_id, kind, record) VALUES ($1, $2, $3)
                 ON CONFLICT (company_id, kind) DO UPDATE SET record = excluded.record",
                &[
                    &big(software.company_id)?,
                    &i16::from(software.kind.tag()),
                    &json("software", &software)?,
                ],
            )
            .map_err(db_error)?;
        Ok(())
    }

    fn software(
        &self,
        company: CompanyId,
        kind: SoftwareKind,
    ) -> StoreResult<Option<SoftwareRegistration>> {
        let _sealing = self.sealing_scope();
        let row = self
            .conn()?
            .query_opt(
                "SELECT record FROM software WHERE company_id = $1 AND kind = $2",
                &[&big(company)?, &i16::from(kind.tag())],
            )
            .map_err(db_error)?;
        row.map(|r| record("software", &r, "record")).transpose()
    }

    fn add_resolution(
        &self,
        company: CompanyId,
        new: NewResolution,
    ) -> StoreResult<NumberingResolution> {
        let _sealing = self.sealing_scope();
        let mut conn = self.conn()?;
        let mut tx = conn.transaction().map_err(db_error)?;
        let id = unsigned(
            tx.query_one("SELECT nextval('resolution_ids')", &[])
                .map_err(db_error)?
                .get(0),
        );
        if test_set::by_id(id).is_some() || id >= test_set::TEST_SET_ID_BASE {
            return Err(StoreError::Conflict(
                "resolution ids have reached the test sets' ids".into(),
            ));
        }
        let r = NumberingResolution {
            id,
            company_id: company,
            document_type: new.document_type,
            also_serves: new.also_serves,
            resolution_number: new.resolution_number,
            resolution_date: new.resolution_date,
            prefix: new.prefix,
            from: new.from,
            to: new.to,
            valid_from: new.valid_from,
            valid_to: new.valid_to,
            technical_key: new.technical_key,
            created_at: Utc::now(),
        };
        tx.execute(
            "INSERT INTO resolutions (id, company_id, document_type, record) VALUES ($1, $2, $3, $4)",
            &[
                &big(id)?,
                &big(company)?,
                &i16::from(r.document_type),
                &json("resolutions", &r)?,
            ],
        )
        .map_err(db_error)?;
        tx.execute(
            "INSERT INTO counters (company_id, resolution_id, next) VALUES ($1, $2, $3)",
            &[&big(company)?, &big(id)?, &big(r.from)?],
        )
        .map_err(db_error)?;
        tx.commit().map_err(db_error)?;
        Ok(r)
    }

    fn resolutions(&self, company: CompanyId) -> StoreResult<Vec<NumberingResolution>> {
        let _sealing = self.sealing_scope();
        let rows = self
            .conn()?
            .query(
                "SELECT record FROM resolutions WHERE company_id = $1 ORDER BY id",
                &[&big(company)?],
            )
            .map_err(db_error)?;
        records("resolutions", &rows)
    }

    fn resolution(&self, company: CompanyId, id: u64) -> StoreResult<Option<NumberingResolution>> {
        if let Some(set) = test_set::by_id(id) {
            return Ok(Some(set.resolution(company)));
        }
        let _sealing = self.sealing_scope();
        let row = self
            .conn()?
            .query_opt(
                "SELECT record FROM resolutions WHERE company_id = $1 AND id = $2",
                &[&big(company)?, &big(id)?],
            )
            .map_err(db_error)?;
        row.map(|r| record("resolutions", &r, "record")).transpose()
    }

    fn active_resolution(
        &self,
        company: CompanyId,
        environment: Environment,
        document_type: u8,
        date: NaiveDate,
    ) -> StoreResult<Option<NumberingResolution>> {
        if let Some(r) = test_set_numbering(company, environment, document_type) {
            let open = r.valid_from <= date && date <= r.valid_to;
            return Ok((open && self.next_number(&r)? <= r.to).then_some(r));
        }
        Ok(self
            .active_with_next(company, document_type, date)?
            .map(|(r, _)| r))
    }

    fn next_number(&self, resolution: &NumberingResolution) -> StoreResult<u64> {
        next_number(&mut *self.conn()?, resolution)
    }

    fn put_certificate(&self, certificate: CertificateRecord) -> StoreResult<()> {
        let _sealing = self.sealing_scope();
        self.conn()?
            .execute(
                "INSERT INTO certificates (company_id, record) VALUES ($1, $2)
                 ON CONFLICT (company_id) DO UPDATE SET record = excluded.record",
                &[
                    &big(certificate.company_id)?,
                    &json("certificates", &certificate)?,
                ],
            )
            .map_err(db_error)?;
        Ok(())
    }

    fn certificate(&self, company: CompanyId) -> StoreResult<Option<CertificateRecord>> {
        let _sealing = self.sealing_scope();
        let row = self
            .conn()?
            .query_opt(
                "SELECT record FROM certificates WHERE company_id = $1",
                &[&big(company)?],
            )
            .map_err(db_error)?;
        row.map(|r| record("certificates", &r, "record"))
            .transpose()
    }
}

/// The authority's test set a document of `document_type` takes its number
/// from in `environment`, when it takes it from one: then it never takes
/// it from the company's own resolutions.
fn test_set_numbering(
    company: CompanyId,
    environment: Environment,
    document_type: u8,
) -> Option<NumberingResolution> {
    let set = test_set::for_document_type(document_type)?;
    (environment == Environment::Test).then(|| set.resolution(company))
}

/// The company, its software of a kind, its certificate and a counter,
/// read in one statement ($3 NULL: no counter).
const ISSUER_ROWS: &str = "SELECT (SELECT record FROM companies WHERE id = $1) AS company,
         (SELECT record FROM software WHERE company_id = $1 AND kind = $2) AS software,
         (SELECT record FROM certificates WHERE company_id = $1) AS certificate,
         (SELECT next FROM counters WHERE company_id = $1 AND resolution_id = $3) AS next";

/// [`ISSUER_ROWS`] with what phase one reads ahead ([`Ahead`]): the new
/// document's id and its customer as stored ($4, its identification
/// number), read without a lock.
const ISSUER_ROWS_AHEAD: &str = "SELECT (SELECT record FROM companies WHERE id = $1) AS company,
         (SELECT record FROM software WHERE company_id = $1 AND kind = $2) AS software,
         (SELECT record FROM certificates WHERE company_id = $1) AS certificate,
         (SELECT next FROM counters WHERE company_id = $1 AND resolution_id = $3) AS next,
         nextval('document_ids') AS id,
         (SELECT record FROM customers
          WHERE company_id = $1 AND identification_number = $4) AS customer";

/// What phase one reads before its numbering statement, read with the
/// issuer's records when the issuing path asks (one round trip fewer): the
/// new document's id (a sequence's: a request refused after it leaves the
/// id unused, as a refused phase one does) and its customer as stored,
/// read without a lock, as phase one reads it.
#[derive(Debug, Clone)]
pub(crate) struct Ahead {
    pub(crate) id: u64,
    pub(crate) customer: Option<Customer>,
}

impl Ahead {
    /// `row`'s `id` and `customer`.
    pub(crate) fn from_row(row: &Row) -> StoreResult<Ahead> {
        Ok(Ahead {
            id: unsigned(row.try_get("id").map_err(db_error)?),
            customer: record_opt("customers", row, "customer")?,
        })
    }
}

impl PgStore {
    /// What the issuing path reads before phase one: one statement when the
    /// resolution is known without a read (by its id, or the authority's
    /// test set), its counter read with the issuer's records; two when it
    /// is chosen among the company's own (each with its counter, then the
    /// issuer's records).
    pub fn issuer_records(
        &self,
        company: CompanyId,
        kind: SoftwareKind,
        choice: ResolutionChoice,
    ) -> StoreResult<IssuerRecords> {
        self.issuer_records_ahead(company, kind, choice, None)
            .map(|(records, _)| records)
    }

    /// [`issuer_records`](Self::issuer_records), and, when `ahead` is
    /// given (the identification number of the document's customer, if
    /// it has one), what phase one reads ahead in the same statement.
    pub(crate) fn issuer_records_ahead(
        &self,
        company: CompanyId,
        kind: SoftwareKind,
        choice: ResolutionChoice,
        ahead: Option<Option<&str>>,
    ) -> StoreResult<(IssuerRecords, Option<Ahead>)> {
        let known = match choice {
            ResolutionChoice::Id(id) => self.resolution(company, id)?,
            ResolutionChoice::Active {
                environment,
                document_type,
                date,
            } => match test_set_numbering(company, environment, document_type) {
                Some(r) => Some(r).filter(|r| r.valid_from <= date && date <= r.valid_to),
                None => {
                    let active = self.active_with_next(company, document_type, date)?;
                    let (mut records, ahead) = self.issuer_rows(company, kind, None, ahead)?;
                    records.next_number = active.as_ref().map(|(_, next)| *next);
                    records.resolution = active.map(|(r, _)| r);
                    return Ok((records, ahead));
                }
            },
        };
        let (mut records, ahead) = self.issuer_rows(company, kind, known.as_ref(), ahead)?;
        records.resolution = known;
        // A test set whose range is spent is not active (as
        // `active_resolution` answers).
        if let (ResolutionChoice::Active { .. }, Some(r), Some(next)) =
            (choice, &records.resolution, records.next_number)
        {
            if next > r.to {
                records.resolution = None;
                records.next_number = None;
            }
        }
        Ok((records, ahead))
    }

    /// [`ISSUER_ROWS`]: the records, and `resolution`'s next number; with
    /// `ahead`, [`ISSUER_ROWS_AHEAD`].
    fn issuer_rows(
        &self,
        company: CompanyId,
        kind: SoftwareKind,
        resolution: Option<&NumberingResolution>,
        ahead: Option<Option<&str>>,
    ) -> StoreResult<(IssuerRecords, Option<Ahead>)> {
        let counter = resolution.map(|r| big(r.id)).transpose()?;
        let _sealing = self.sealing_scope();
        let mut conn = self.conn()?;
        let (company, kind) = (big(company)?, i16::from(kind.tag()));
        let row = match ahead {
            None => conn.query_one(ISSUER_ROWS, &[&company, &kind, &counter]),
            Some(customer) => {
                conn.query_one(ISSUER_ROWS_AHEAD, &[&company, &kind, &counter, &customer])
            }
        }
        .map_err(db_error)?;
        let next: Option<i64> = row.try_get("next").map_err(db_error)?;
        let records = IssuerRecords {
            company: record_opt("companies", &row, "company")?.map(Arc::new),
            software: record_opt("software", &row, "software")?.map(Arc::new),
            resolution: None,
            certificate: record_opt("certificates", &row, "certificate")?.map(Arc::new),
            next_number: resolution.map(|r| next.map_or(r.from, unsigned)),
        };
        let ahead = ahead.map(|_| Ahead::from_row(&row)).transpose()?;
        Ok((records, ahead))
    }

    /// The company's own resolution a document of `document_type` takes its
    /// number from on `date`, and its next number: the newest open one
    /// whose range is not spent. Every resolution is read with its counter
    /// in one statement.
    fn active_with_next(
        &self,
        company: CompanyId,
        document_type: u8,
        date: NaiveDate,
    ) -> StoreResult<Option<(NumberingResolution, u64)>> {
        let rows = {
            let _sealing = self.sealing_scope();
            self.conn()?
                .query(
                    "SELECT r.record, c.next FROM resolutions r
                     LEFT JOIN counters c ON c.company_id = r.company_id AND c.resolution_id = r.id
                     WHERE r.company_id = $1 ORDER BY r.id DESC",
                    &[&big(company)?],
                )
                .map_err(db_error)?
        };
        for row in rows {
            let r: NumberingResolution = {
                let _sealing = self.sealing_scope();
                record("resolutions", &row, "record")?
            };
            if !r.serves(document_type) || date < r.valid_from || r.valid_to < date {
                continue;
            }
            let next: Option<i64> = row.try_get("next").map_err(db_error)?;
            let next = next.map_or(r.from, unsigned);
            if next <= r.to {
                return Ok(Some((r, next)));
            }
        }
        Ok(None)
    }
}

/// The next number of `resolution` as `client` sees it (the resolution's
/// first before any was taken; a test set's counter is the company's own).
pub(crate) fn next_number(
    client: &mut impl Sql,
    resolution: &NumberingResolution,
) -> StoreResult<u64> {
    let row = client
        .query_opt(
            "SELECT next FROM counters WHERE company_id = $1 AND resolution_id = $2",
            &[&big(resolution.company_id)?, &big(resolution.id)?],
        )
        .map_err(db_error)?;
    Ok(row.map_or(resolution.from, |r| unsigned(r.get(0))))
}

impl ApiKeyStore for PgStore {
    fn insert_api_key(&self, record: ApiKeyRecord) -> StoreResult<ApiKeyRecord> {
        let mut conn = self.conn()?;
        let mut tx = conn.transaction().map_err(db_error)?;
        let mut r = record;
        r.id = unsigned(
            tx.query_one("SELECT nextval('api_key_ids')", &[])
                .map_err(db_error)?
                .get(0),
        );
        let inserted = tx.execute(
            "INSERT INTO api_keys (id, company_id, hash, record) VALUES ($1, $2, $3, $4)",
            &[
                &big(r.id)?,
                &big(r.company_id)?,
                &r.hash,
                &json("api_keys", &r)?,
            ],
        );
        match inserted {
            Err(e) if is_unique_violation(&e) => {
                Err(StoreError::Conflict("API key hash already stored".into()))
            }
            Err(e) => Err(db_error(e)),
            Ok(_) => {
                tx.commit().map_err(db_error)?;
                Ok(r)
            }
        }
    }

    fn api_key_by_hash(&self, hash_hex: &str) -> StoreResult<Option<ApiKeyRecord>> {
        if !storable(hash_hex) {
            return Ok(None);
        }
        let row = self
            .conn()?
            .query_opt("SELECT record FROM api_keys WHERE hash = $1", &[&hash_hex])
            .map_err(db_error)?;
        row.map(|r| record("api_keys", &r, "record")).transpose()
    }

    fn api_keys(&self, company: CompanyId) -> StoreResult<Vec<ApiKeyRecord>> {
        let rows = self
            .conn()?
            .query(
                "SELECT record FROM api_keys WHERE company_id = $1 ORDER BY id",
                &[&big(company)?],
            )
            .map_err(db_error)?;
        records("api_keys", &rows)
    }

    fn revoke_api_key(&self, id: u64, at: DateTime<Utc>) -> StoreResult<Option<ApiKeyRecord>> {
        let mut conn = self.conn()?;
        let mut tx = conn.transaction().map_err(db_error)?;
        let Some(row) = tx
            .query_opt(
                "SELECT record FROM api_keys WHERE id = $1 FOR UPDATE",
                &[&big(id)?],
            )
            .map_err(db_error)?
        else {
            return Ok(None);
        };
        let mut key: ApiKeyRecord = record("api_keys", &row, "record")?;
        if key.revoked_at.is_none() {
            key.revoked_at = Some(at);
            tx.execute(
                "UPDATE api_keys SET record = $2 WHERE id = $1",
                &[&big(id)?, &json("api_keys", &key)?],
            )
            .map_err(db_error)?;
            tx.commit().map_err(db_error)?;
        }
        Ok(Some(key))
    }
}

/// The customer `input` makes of `old` (or a new one with `id`): a field
/// left out keeps its stored value, an empty email keeps the stored one
/// (the sled engine's rule, `upsert_customer_unflushed`).
fn upserted(
    company: CompanyId,
    id: u64,
    old: Option<&Customer>,
    input: &CustomerInput,
    now: DateTime<Utc>,
) -> Customer {
    let keep = |new: &Option<String>, old: Option<&Option<String>>| {
        new.clone().or_else(|| old.cloned().flatten())
    };
    Customer {
        id,
        company_id: company,
        identification_number: input.identification_number.clone(),
        name: input.name.clone(),
        email: match (input.email.is_empty(), old) {
            (true, Some(o)) => o.email.clone(),
            _ => input.email.clone(),
        },
        id_type_code: keep(&input.id_type_code, old.map(|o| &o.id_type_code)),
        organization_type_code: keep(
            &input.organization_type_code,
            old.map(|o| &o.organization_type_code),
        ),
        address: keep(&input.address, old.map(|o| &o.address)),
        municipality_code: keep(&input.municipality_code, old.map(|o| &o.municipality_code)),
        municipality_name: keep(&input.municipality_name, old.map(|o| &o.municipality_name)),
        country_code: keep(&input.country_code, old.map(|o| &o.country_code)),
        phone: keep(&input.phone, old.map(|o| &o.phone)),
        created_at: old.map_or(now, |o| o.created_at),
        updated_at: now,
    }
}

/// `stored` (read without a lock) when `input` leaves it as it is: nothing
/// to write for it.
pub(crate) fn unchanged_customer(
    company: CompanyId,
    stored: Option<Customer>,
    input: &CustomerInput,
) -> Option<Customer> {
    let old = stored?;
    (upserted(company, old.id, Some(&old), input, old.updated_at) == old).then_some(old)
}

/// Creates or updates a customer in `client`'s transaction; one left as it
/// is by `input` (the usual invoice: the same customer again) is not
/// rewritten, so its `updated_at` is when its data last changed.
///
/// The customer is read without a lock: documents for the same customer
/// wait for nothing when its data is unchanged (they write nothing, as if
/// each ran before any concurrent change). A change is made on the row
/// read again `FOR UPDATE`, so one committed meanwhile (by another
/// transaction or node) is merged with, never written over.
pub(crate) fn upsert_customer_in(
    client: &mut impl Sql,
    company: CompanyId,
    input: &CustomerInput,
) -> StoreResult<Customer> {
    let company_key = big(company)?;
    let mut lock = false;
    loop {
        let sql = if lock {
            "SELECT record FROM customers WHERE company_id = $1 AND identification_number = $2
             FOR UPDATE"
        } else {
            "SELECT record FROM customers WHERE company_id = $1 AND identification_number = $2"
        };
        let found = client
            .query_opt(sql, &[&company_key, &input.identification_number])
            .map_err(db_error)?;
        let now = Utc::now();
        if let Some(row) = found {
            let old: Customer = record("customers", &row, "record")?;
            let new = upserted(company, old.id, Some(&old), input, old.updated_at);
            if new == old {
                return Ok(old);
            }
            if !lock {
                lock = true;
                continue;
            }
            let new = Customer {
                updated_at: now,
                ..new
            };
            client
                .execute(
                    "UPDATE customers SET name = $3, record = $4 WHERE company_id = $1 AND id = $2",
                    &[
                        &company_key,
                        &big(new.id)?,
                        &new.name,
                        &json("customers", &new)?,
                    ],
                )
                .map_err(db_error)?;
            return Ok(new);
        }
        let id = unsigned(
            client
                .query_one("SELECT nextval('customer_ids')", &[])
                .map_err(db_error)?
                .get(0),
        );
        let new = upserted(company, id, None, input, now);
        // Another transaction inserting the same customer first: read it.
        let inserted = client
            .execute(
                "INSERT INTO customers (company_id, id, identification_number, name, record)
                 VALUES ($1, $2, $3, $4, $5)
                 ON CONFLICT (company_id, identification_number) DO NOTHING",
                &[
                    &company_key,
                    &big(id)?,
                    &new.identification_number,
                    &new.name,
                    &json("customers", &new)?,
                ],
            )
            .map_err(db_error)?;
        if inserted == 1 {
            return Ok(new);
        }
    }
}

impl CustomerStore for PgStore {
    fn upsert_customer(&self, company: CompanyId, input: CustomerInput) -> StoreResult<Customer> {
        let mut conn = self.conn()?;
        let mut tx = conn.transaction().map_err(db_error)?;
        let c = upsert_customer_in(&mut tx, company, &input)?;
        tx.commit().map_err(db_error)?;
        Ok(c)
    }

    fn customer(&self, company: CompanyId, id: u64) -> StoreResult<Option<Customer>> {
        let row = self
            .conn()?
            .query_opt(
                "SELECT record FROM customers WHERE company_id = $1 AND id = $2",
                &[&big(company)?, &big(id)?],
            )
            .map_err(db_error)?;
        row.map(|r| record("customers", &r, "record")).transpose()
    }

    fn customers(
        &self,
        company: CompanyId,
        page: u32,
        limit: u32,
        query: Option<&str>,
    ) -> StoreResult<Page<Customer>> {
        // Case-insensitive on the name, as given on the number (the sled
        // engine's rule); `%` and `_` in the query are matched as themselves.
        let needle = query
            .filter(|q| !q.is_empty())
            .map(|q| {
                q.to_lowercase()
                    .replace('\\', "\\\\")
                    .replace('%', "\\%")
                    .replace('_', "\\_")
            })
            .map(|q| format!("%{q}%"));
        let filter = "company_id = $1
             AND ($2::text IS NULL OR lower(name) LIKE $2 OR identification_number LIKE $2)";
        let mut conn = self.conn()?;
        let total: i64 = conn
            .query_one(
                &format!("SELECT count(*) FROM customers WHERE {filter}"),
                &[&big(company)?, &needle],
            )
            .map_err(db_error)?
            .get(0);
        let skip = i64::from(page.saturating_sub(1)).saturating_mul(i64::from(limit));
        let rows = conn
            .query(
                &format!(
                    "SELECT record FROM customers WHERE {filter} ORDER BY id LIMIT $3 OFFSET $4"
                ),
                &[&big(company)?, &needle, &i64::from(limit), &skip],
            )
            .map_err(db_error)?;
        Ok(Page {
            items: records("customers", &rows)?,
            page,
            limit,
            total: unsigned(total),
        })
    }

    fn customers_after(
        &self,
        company: CompanyId,
        after: u64,
        limit: usize,
    ) -> StoreResult<Vec<Customer>> {
        let rows = self
            .conn()?
            .query(
                "SELECT record FROM customers WHERE company_id = $1 AND id > $2 ORDER BY id LIMIT $3",
                &[&big(company)?, &big(after)?, &big(limit as u64)?],
            )
            .map_err(db_error)?;
        records("customers", &rows)
    }
}

impl SettingsStore for PgStore {
    fn setting(&self, key: &str) -> StoreResult<Option<String>> {
        if !storable(key) {
            return Ok(None);
        }
        let row = self
            .conn()?
            .query_opt("SELECT value FROM settings WHERE key = $1", &[&key])
            .map_err(db_error)?;
        Ok(row.map(|r| r.get(0)))
    }

    fn put_setting(&self, key: &str, value: &str) -> StoreResult<()> {
        self.conn()?
            .execute(
                "INSERT INTO settings (key, value) VALUES ($1, $2)
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                &[&key, &value],
            )
            .map_err(db_error)?;
        Ok(())
    }

    fn settings(&self) -> StoreResult<Vec<(String, String)>> {
        let rows = self
            .conn()?
            .query("SELECT key, value FROM settings ORDER BY key", &[])
            .map_err(db_error)?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    }
}

impl StoreHealth for PgStore {
    fn is_empty(&self) -> StoreResult<bool> {
        let row = self
            .conn()?
            .query_one("SELECT NOT EXISTS (SELECT 1 FROM companies)", &[])
            .map_err(db_error)?;
        Ok(row.get(0))
    }

    /// A write committed and taken back: the database takes writes now.
    fn check_writable(&self) -> StoreResult<()> {
        let mut conn = self.conn()?;
        let mut tx = conn.transaction().map_err(db_error)?;
        tx.execute(
            "INSERT INTO meta (key, value) VALUES ('probe', to_jsonb(now()))
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            &[],
        )
        .map_err(db_error)?;
        tx.execute("DELETE FROM meta WHERE key = 'probe'", &[])
            .map_err(db_error)?;
        tx.commit().map_err(db_error)
    }

    /// Every method commits before it returns: nothing is left to flush.
    fn flush(&self) -> StoreResult<()> {
        Ok(())
    }
}
