//! A list page on PostgreSQL ([`DocumentStore::list_documents`] semantics)
//! read as sled reads it: its `total` is a sum of the kept day counts
//! (`document_counts`, and the changes not yet folded into it, kept by the
//! trigger of migration V8), and a deep page skips whole days by their
//! counts, so that its `OFFSET` stays within a day. The page itself comes
//! from the list indexes (`documents_list`, `documents_list_by_state`, and
//! for a key asked its own, `documents_list_by_<key>`).
//!
//! [`DocumentStore::list_documents`]: crate::DocumentStore::list_documents

use chrono::NaiveDate;
use postgres::types::{Json, ToSql};

use crate::engine::postgres::records::{big, records, unsigned};
use crate::engine::postgres::{db_error, PgStore, Sql};
use crate::error::{StoreError, StoreResult};
use crate::model::*;

/// Longest key value the counts keep under its key (V8's
/// `document_count_max_value`, in characters): a list asking for a longer
/// one counts its rows.
const COUNTED_VALUE: usize = 200;

/// A cell's conditions: company, environment, family, key subset, states
/// (none: all), issue days.
macro_rules! cells {
    () => {
        "company_id = $1 AND environment = $2 AND family = $3 AND keys = $4
         AND (cardinality($5::smallint[]) = 0 OR state = ANY($5))
         AND ($6::date IS NULL OR issue_date >= $6) AND ($7::date IS NULL OR issue_date <= $7)"
    };
}

/// The matching documents per issue day, newest first (days with none
/// left out): the folded counts plus the changes not folded yet.
const DAYS: &str = concat!(
    "SELECT issue_date, sum(n)::bigint FROM (
         SELECT issue_date, n FROM document_counts WHERE ",
    cells!(),
    " UNION ALL
         SELECT issue_date, n FROM document_count_changes WHERE ",
    cells!(),
    ") c GROUP BY issue_date HAVING sum(n) <> 0 ORDER BY issue_date DESC"
);

/// Changes moved into the folded counts at a time.
const FOLD_BATCH: i64 = 50_000;

/// Taken (for the transaction) by the node folding the counts; another
/// node finding it taken leaves folding to it.
const FOLD_LOCK: i64 = 0x656d_6973_6f72_0008;

/// Moves changes (at most `$1`) into the folded counts, one row a cell.
/// Every change is moved once: a fold deletes the rows it adds up.
pub(crate) const FOLD: &str = "WITH moved AS (
        DELETE FROM document_count_changes WHERE ctid = ANY(ARRAY(
            SELECT ctid FROM document_count_changes LIMIT $1))
        RETURNING company_id, environment, family, keys, issue_date, state, n)
    INSERT INTO document_counts AS c (company_id, environment, family, keys, issue_date, state, n)
    SELECT company_id, environment, family, keys, issue_date, state, sum(n)
    FROM moved GROUP BY 1, 2, 3, 4, 5, 6
    ON CONFLICT (company_id, environment, family, keys, issue_date, state)
    DO UPDATE SET n = c.n + excluded.n";

/// The days a page at `offset` of `limit` reads, from the day counts
/// (newest first): (newest day, oldest day, documents on newer days
/// skipped); none past the last document.
fn page_days(
    days: &[(NaiveDate, i64)],
    offset: u64,
    limit: u64,
) -> Option<(NaiveDate, NaiveDate, u64)> {
    let mut seen = 0u64;
    let mut first: Option<(NaiveDate, u64)> = None;
    let mut last = None;
    for &(day, n) in days {
        let n = unsigned(n);
        if first.is_none() && seen + n > offset {
            first = Some((day, seen));
        }
        seen += n;
        if first.is_some() {
            last = Some(day);
            if seen >= offset.saturating_add(limit) {
                break;
            }
        }
    }
    let (newest, skipped) = first?;
    Some((newest, last?, skipped))
}

impl PgStore {
    pub(crate) fn list(&self, q: &ListQuery) -> StoreResult<Page<DocumentRecord>> {
        let empty = Page {
            items: Vec::new(),
            page: q.page,
            limit: q.limit,
            total: 0,
        };
        let indexed = q.family.indexed_keys();
        let mut keys = serde_json::Map::new();
        for (name, value) in &q.keys {
            if !indexed.contains(&name.as_str()) {
                return Err(StoreError::UnindexedKey {
                    family: q.family.name(),
                    key: name.clone(),
                });
            }
            let previous = keys.insert(name.clone(), serde_json::Value::String(value.clone()));
            if previous.is_some_and(|p| p.as_str() != Some(value)) {
                // Two values for one key: nothing matches both.
                return Ok(empty);
            }
        }
        let counted = q
            .keys
            .iter()
            .all(|(_, v)| v.chars().count() <= COUNTED_VALUE);
        let keys = Json(serde_json::Value::Object(keys));
        let states: Vec<i16> = q.states.iter().map(|s| i16::from(*s)).collect();
        let company = big(q.company_id)?;
        let environment = i16::from(q.environment.authority_code());
        let family = i16::from(q.family.tag());
        let limit = u64::from(q.limit);
        let offset = u64::from(q.page.saturating_sub(1)).saturating_mul(limit);
        let mut conn = self.conn()?;
        let params: [&(dyn ToSql + Sync); 7] = [
            &company,
            &environment,
            &family,
            &keys,
            &states,
            &q.from,
            &q.to,
        ];
        let (total, from, to, skip) = if counted {
            let days: Vec<(NaiveDate, i64)> = conn
                .query(DAYS, &params)
                .map_err(db_error)?
                .iter()
                .map(|r| (r.get(0), r.get(1)))
                .collect();
            let total = days.iter().map(|&(_, n)| unsigned(n)).sum();
            let Some((newest, oldest, skipped)) = page_days(&days, offset, limit) else {
                return Ok(Page { total, ..empty });
            };
            (total, Some(oldest), Some(newest), offset - skipped)
        } else {
            let total: i64 = conn
                .query_one(
                    "SELECT count(*) FROM documents
                     WHERE company_id = $1 AND environment = $2 AND family = $3
                       AND NOT pending_build AND list_keys @> $4
                       AND (cardinality($5::smallint[]) = 0 OR state = ANY($5))
                       AND ($6::date IS NULL OR issue_date >= $6)
                       AND ($7::date IS NULL OR issue_date <= $7)",
                    &params,
                )
                .map_err(db_error)?
                .get(0);
            (unsigned(total), q.from, q.to, offset)
        };
        let (limit, skip) = (big(limit)?, big(skip)?);
        let mut params: Vec<&(dyn ToSql + Sync)> = vec![
            &company,
            &environment,
            &family,
            &states,
            &from,
            &to,
            &limit,
            &skip,
        ];
        let mut filter = String::from(
            "company_id = $1 AND environment = $2 AND family = $3 AND NOT pending_build
             AND (cardinality($4::smallint[]) = 0 OR state = ANY($4))
             AND ($5::date IS NULL OR issue_date >= $5) AND ($6::date IS NULL OR issue_date <= $6)",
        );
        // Each key by its own index (V8's `documents_list_by_<key>`): the
        // names are the family's indexed keys, checked above.
        for (name, value) in &q.keys {
            params.push(value);
            let n = params.len();
            filter.push_str(&format!(
                " AND list_keys ? '{name}' AND left(list_keys ->> '{name}', {COUNTED_VALUE}) \
                 = left(${n}, {COUNTED_VALUE}) AND list_keys ->> '{name}' = ${n}"
            ));
        }
        let rows = conn
            .query(
                &format!(
                    "SELECT record FROM documents WHERE {filter}
                     ORDER BY issue_date DESC, id DESC LIMIT $7 OFFSET $8"
                ),
                &params,
            )
            .map_err(db_error)?;
        Ok(Page {
            items: records("documents", &rows)?,
            total,
            ..empty
        })
    }

    /// Moves a batch of the kept counts' changes into their folded rows,
    /// unless another node is doing so; how many cells it wrote.
    pub(crate) fn fold_document_counts(&self) -> StoreResult<u64> {
        let mut conn = self.conn()?;
        let mut tx = conn.transaction().map_err(db_error)?;
        let held: bool = tx
            .query_one("SELECT pg_try_advisory_xact_lock($1)", &[&FOLD_LOCK])
            .map_err(db_error)?
            .get(0);
        if !held {
            return Ok(0);
        }
        let cells = tx.execute(FOLD, &[&FOLD_BATCH]).map_err(db_error)?;
        tx.commit().map_err(db_error)?;
        Ok(cells)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(2026, 3, d).unwrap()
    }

    #[test]
    fn a_page_reads_only_the_days_its_documents_are_on() {
        // 10 on the 9th, 5 on the 8th, 7 on the 5th.
        let days = [(day(9), 10), (day(8), 5), (day(5), 7)];
        assert_eq!(page_days(&days, 0, 20), Some((day(9), day(5), 0)));
        assert_eq!(page_days(&days, 0, 10), Some((day(9), day(9), 0)));
        assert_eq!(page_days(&days, 10, 5), Some((day(8), day(8), 10)));
        assert_eq!(page_days(&days, 12, 5), Some((day(8), day(5), 10)));
        assert_eq!(page_days(&days, 15, 20), Some((day(5), day(5), 15)));
        assert_eq!(page_days(&days, 21, 20), Some((day(5), day(5), 15)));
        assert_eq!(page_days(&days, 22, 20), None);
        assert_eq!(page_days(&[], 0, 20), None);
    }
}
