//! The console's list of documents: a company's documents of every family
//! in one environment, filtered and searched through the store's indexes
//! ([`emisor_store::DocumentSearch`]), each as a list row shows it.

use chrono::{DateTime, FixedOffset, NaiveDate};
use emisor_store::{
    AsyncStore, CompanyId, DocumentRecord, DocumentSearch, Environment, Family, StoreResult,
};
use serde::Serialize;

use crate::engine::model::colombia_offset;
use crate::issuing::stored::{self, Domain, Stored};

/// Rows a page holds at most.
pub const MAX_LIMIT: u32 = 100;

/// What the console's documents page asks (its GET form).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConsoleQuery {
    /// One family; none is every family.
    pub family: Option<Family>,
    /// Any of these states (1-6); empty = all.
    pub states: Vec<u8>,
    /// Issue dates (Colombia time), inclusive.
    pub from: Option<NaiveDate>,
    pub to: Option<NaiveDate>,
    /// The buyer's, supplier's or employee's identification number.
    pub customer: Option<String>,
    /// A full number (`SETP990000012`) or a bare one.
    pub number: Option<String>,
    /// A number, a code, a customer's identification number or words of
    /// its name.
    pub text: Option<String>,
    /// From 1.
    pub page: u32,
    /// 1 to [`MAX_LIMIT`].
    pub limit: u32,
}

/// One row of the list.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DocumentRow {
    pub id: u64,
    pub family: Family,
    /// The store's document type (1-10, payroll 11 and 12).
    pub document_type: u8,
    /// Prefix and number, as the document shows it.
    pub number: String,
    pub issue_date: NaiveDate,
    /// When it was dated and signed, Colombia time.
    pub issued_at: DateTime<FixedOffset>,
    /// Whom it is for: the buyer, a support document's supplier, a
    /// payroll's employee (none for a document without one).
    pub customer_name: Option<String>,
    pub customer_id: Option<String>,
    /// Payable amount, as stored (a decimal string).
    pub total: String,
    pub state: u8,
    /// CUFE, CUDE, CUDS or CUNE.
    pub code: Option<String>,
}

/// A page of rows; `total_exact` is false when a search by name reached
/// more customers than one search reads (the rows and `total` are then
/// those of the first ones).
#[derive(Debug, Clone, Serialize)]
pub struct RowsPage {
    pub items: Vec<DocumentRow>,
    pub page: u32,
    pub limit: u32,
    pub total: u64,
    pub total_exact: bool,
}

/// A page of `company`'s documents in `environment` as `q` asks.
pub async fn search(
    store: &AsyncStore,
    company: CompanyId,
    environment: Environment,
    q: &ConsoleQuery,
) -> StoreResult<RowsPage> {
    let text = |s: &Option<String>| {
        s.as_deref()
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_string)
    };
    let found = store
        .search_documents(DocumentSearch {
            company_id: company,
            environment,
            family: q.family,
            from: q.from,
            to: q.to,
            states: q.states.clone(),
            customer: text(&q.customer),
            number: text(&q.number),
            text: text(&q.text),
            page: q.page.max(1),
            limit: q.limit.clamp(1, MAX_LIMIT),
        })
        .await?;
    let mut items = Vec::with_capacity(found.items.len());
    for doc in found.items {
        let (customer_name, customer_id) = party(store, &doc).await?;
        items.push(DocumentRow {
            id: doc.id,
            family: Family::of_document_type(doc.document_type),
            document_type: doc.document_type,
            number: doc.full_number(),
            issue_date: doc.issue_date,
            issued_at: doc.instant().with_timezone(&colombia_offset()),
            customer_name,
            customer_id,
            total: doc.total.clone(),
            state: doc.state,
            code: doc.code.clone(),
        });
    }
    Ok(RowsPage {
        items,
        page: found.page,
        limit: found.limit,
        total: found.total,
        total_exact: found.total_exact,
    })
}

/// Whom `doc` is for: its customer record, or a payroll's employee (the
/// name from its stored request; none for a request of the earlier
/// format, which the list shows by number only).
async fn party(
    store: &AsyncStore,
    doc: &DocumentRecord,
) -> StoreResult<(Option<String>, Option<String>)> {
    if let Some(id) = doc.customer_id {
        return Ok(match store.customer(doc.company_id, id).await? {
            Some(c) => (Some(c.name), Some(c.identification_number)),
            None => (None, None),
        });
    }
    let employee = doc.list_keys.get("empleado").cloned();
    if employee.is_none() {
        return Ok((None, None));
    }
    let name = match store.document_request(doc.id).await? {
        Some(bytes) => match stored::read(&bytes) {
            Ok(Stored::Domain {
                domain: Domain::Payroll(p),
                ..
            }) => {
                let e = &p.employee;
                let parts = [
                    Some(e.first_name.as_str()),
                    e.other_names.as_deref(),
                    Some(e.first_surname.as_str()),
                    e.second_surname.as_deref(),
                ];
                Some(
                    parts
                        .into_iter()
                        .flatten()
                        .filter(|s| !s.is_empty())
                        .collect::<Vec<_>>()
                        .join(" "),
                )
            }
            _ => None,
        },
        None => None,
    };
    Ok((name, employee))
}
