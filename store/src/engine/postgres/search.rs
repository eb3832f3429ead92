//! The console's search on PostgreSQL ([`DocumentStore::search_documents`]
//! semantics): one query over `documents` with the filters given, its
//! parties (customers by identification number or by the words of their
//! names, employees by identification number) resolved first.

use postgres::types::ToSql;

use crate::engine::postgres::records::{big, records, unsigned};
use crate::engine::postgres::{db_error, PgStore, Sql};
use crate::error::StoreResult;
use crate::indexes::doc_index::EMPLOYEE_LIST_KEY;
use crate::indexes::words::{name_words, words};
use crate::model::*;

/// Digits a number may have (a `u64`).
const MAX_DIGITS: usize = 19;

/// A search text's or filter's number: upper case, spaces out.
fn folded_number(text: &str) -> String {
    text.chars()
        .filter(|c| !c.is_whitespace())
        .flat_map(char::to_uppercase)
        .collect()
}

/// (prefix, number) for each place a number text's trailing digits may
/// start (`SETP12` is `SETP` 12, or `SETP1` 2); numbers have no leading
/// zeros.
fn number_splits(text: &str) -> (Vec<String>, Vec<i64>) {
    let digits = text.chars().rev().take_while(char::is_ascii_digit).count();
    let (mut prefixes, mut numbers) = (Vec::new(), Vec::new());
    for k in 1..=digits.min(MAX_DIGITS) {
        let at = text.len() - k;
        if k > 1 && text[at..].starts_with('0') {
            continue;
        }
        if let Ok(n) = text[at..].parse::<i64>() {
            prefixes.push(text[..at].to_string());
            numbers.push(n);
        }
    }
    (prefixes, numbers)
}

/// Whom a text or filter names: customers' ids, employees' numbers.
#[derive(Default)]
struct Parties {
    customers: Vec<i64>,
    employees: Vec<String>,
}

impl PgStore {
    fn parties_by_identification(&self, company: CompanyId, number: &str) -> StoreResult<Parties> {
        let rows = self
            .conn()?
            .query(
                "SELECT id FROM customers WHERE company_id = $1 AND identification_number = $2",
                &[&big(company)?, &number],
            )
            .map_err(db_error)?;
        Ok(Parties {
            customers: rows.iter().map(|r| r.get(0)).collect(),
            employees: vec![number.to_string()],
        })
    }

    /// The parties a text names: by identification number, and the
    /// customers each of whose names has a word starting with each word of
    /// the text, at most [`SEARCH_CUSTOMERS`] (`exact` goes false past it).
    /// The names are folded here, as sled folds them (case and accents
    /// aside), reading the company's customers in id order.
    fn parties_of_text(
        &self,
        company: CompanyId,
        text: &str,
        exact: &mut bool,
    ) -> StoreResult<Parties> {
        let mut parties = self.parties_by_identification(company, text)?;
        let query = words(text);
        if query.is_empty() {
            return Ok(parties);
        }
        let rows = self
            .conn()?
            .query(
                "SELECT id, name FROM customers WHERE company_id = $1 ORDER BY id",
                &[&big(company)?],
            )
            .map_err(db_error)?;
        let mut found = 0;
        for row in rows {
            let name: String = row.get(1);
            let words = name_words(&name);
            if query
                .iter()
                .all(|q| words.iter().any(|w| w.starts_with(q.as_str())))
            {
                if found == SEARCH_CUSTOMERS {
                    *exact = false;
                    break;
                }
                found += 1;
                parties.customers.push(row.get(0));
            }
        }
        Ok(parties)
    }

    pub(crate) fn search(&self, q: &DocumentSearch) -> StoreResult<SearchPage> {
        let company = big(q.company_id)?;
        let environment = i16::from(q.environment.authority_code());
        let family = q.family.map(|f| i16::from(f.tag()));
        let states: Vec<i16> = q.states.iter().map(|s| i16::from(*s)).collect();
        let payroll = i16::from(Family::Payroll.tag());
        let mut exact = true;
        let mut params: Vec<Box<dyn ToSql + Sync>> = vec![
            Box::new(company),
            Box::new(environment),
            Box::new(family),
            Box::new(states),
            Box::new(q.from),
            Box::new(q.to),
        ];
        let mut filter = String::from(
            "company_id = $1 AND environment = $2 AND NOT pending_build
             AND ($3::smallint IS NULL OR family = $3)
             AND (cardinality($4::smallint[]) = 0 OR state = ANY($4))
             AND ($5::date IS NULL OR issue_date >= $5) AND ($6::date IS NULL OR issue_date <= $6)",
        );
        let push = |params: &mut Vec<Box<dyn ToSql + Sync>>, v: Box<dyn ToSql + Sync>| {
            params.push(v);
            params.len()
        };
        // A party: a customer, or on payroll the employee's number.
        let party_sql = |params: &mut Vec<Box<dyn ToSql + Sync>>, parties: Parties| {
            let f = push(params, Box::new(payroll));
            let k = push(params, Box::new(EMPLOYEE_LIST_KEY));
            let c = push(params, Box::new(parties.customers));
            let e = push(params, Box::new(parties.employees));
            format!(
                "((family <> ${f} AND customer_id = ANY(${c}))
                  OR (family = ${f} AND list_keys->>${k} = ANY(${e})))"
            )
        };
        let number_sql = |p: usize, n: usize| {
            format!(
                "EXISTS (SELECT 1 FROM unnest(${p}::text[], ${n}::bigint[]) s(p, n)
                     WHERE documents.number = s.n AND (s.p = '' OR upper(documents.prefix) = s.p))"
            )
        };
        if let Some(c) = q
            .customer
            .as_deref()
            .map(str::trim)
            .filter(|c| !c.is_empty())
        {
            let parties = self.parties_by_identification(q.company_id, c)?;
            let party = party_sql(&mut params, parties);
            filter.push_str(&format!(" AND {party}"));
        }
        if let Some(n) = q
            .number
            .as_deref()
            .map(folded_number)
            .filter(|n| !n.is_empty())
        {
            let (prefixes, numbers) = number_splits(&n);
            let p = push(&mut params, Box::new(prefixes));
            let n = push(&mut params, Box::new(numbers));
            filter.push_str(&format!(" AND {}", number_sql(p, n)));
        }
        if let Some(t) = q.text.as_deref().map(str::trim).filter(|t| !t.is_empty()) {
            let parties = self.parties_of_text(q.company_id, t, &mut exact)?;
            let (prefixes, numbers) = number_splits(&folded_number(t));
            let p = push(&mut params, Box::new(prefixes));
            let n = push(&mut params, Box::new(numbers));
            let code = push(&mut params, Box::new(t.to_lowercase()));
            let party = party_sql(&mut params, parties);
            filter.push_str(&format!(
                " AND ({} OR lower(code) = ${code} OR {party})",
                number_sql(p, n)
            ));
        }
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|b| b.as_ref()).collect();
        let mut conn = self.conn()?;
        let total: i64 = conn
            .query_one(
                &format!("SELECT count(*) FROM documents WHERE {filter}"),
                &refs,
            )
            .map_err(db_error)?
            .get(0);
        let limit = i64::from(q.limit);
        let skip = i64::from(q.page.saturating_sub(1)).saturating_mul(limit);
        let mut page_refs = refs.clone();
        page_refs.push(&limit);
        page_refs.push(&skip);
        let (l, o) = (refs.len() + 1, refs.len() + 2);
        let rows = conn
            .query(
                &format!(
                    "SELECT record FROM documents WHERE {filter}
                     ORDER BY issue_date DESC, id DESC LIMIT ${l} OFFSET ${o}"
                ),
                &page_refs,
            )
            .map_err(db_error)?;
        Ok(SearchPage {
            items: records("documents", &rows)?,
            page: q.page,
            limit: q.limit,
            total: unsigned(total),
            total_exact: exact,
        })
    }
}
