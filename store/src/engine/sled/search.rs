//! The console's document search ([`DocumentSearch`]) on sled: pages of a
//! company's documents of every family, read from the document index's
//! runs (a family's, or a party's: `indexes/doc_index.rs`) and from two
//! lookups, never by reading the documents:
//!
//! - a number: the hashed index of `company ‖ environment ‖ number`
//!   ([`trees::DOCUMENTS_BY_NUMBER`]), each candidate confirmed against its
//!   record (a full number is tried at each place its digits may start);
//! - a code: the code index (`lookup`);
//! - a customer: by identification number (`customers_by_identification`,
//!   and a payroll's employee by the number itself), or by the words of its
//!   name ([`trees::CUSTOMER_WORDS`], `indexes/words.rs`), at most
//!   [`SEARCH_CUSTOMERS`] customers, each confirmed against its record.
//!
//! Without a party, a page is the union of each family's runs (one per
//! state asked, or the "any state" run) and `total` a sum of their day
//! counters. A party's documents are the union of its run in each family
//! searched: every entry of the run in the date range is read (a party's
//! run keeps no counters, so that writing a document costs one more entry
//! and a state change none), a state filter applied through the state
//! index; documents found by number or code outside those runs are merged
//! in by their issue day.

use std::cmp::Reverse;
use std::collections::{BTreeSet, HashMap};

use serde::Deserialize;

use crate::encoding::codec::{decode, id_key, read_u64, scoped_key, scoped_text_key};
use crate::encoding::trees;
use crate::engine::sled::index::day_range;
use crate::engine::sled::SledStore;
use crate::error::StoreResult;
use crate::indexes::doc_index::{day_number, dimension, inverted_day, run_from, scope, Party};
use crate::indexes::words::{customer_of, name_matches, name_words, prefix_key, word_key, words};
use crate::model::*;

/// Set in `META` once every document's number is in the number index.
pub(crate) const NUMBERS_INDEXED_KEY: &[u8] = b"document_numbers_indexed";

/// Set in `META` once every customer's name words are kept.
pub(crate) const CUSTOMER_WORDS_KEY: &[u8] = b"customer_name_words_built";

/// Candidates by number or code read at most for one search.
const MAX_CANDIDATES: usize = 256;

/// Name-word entries read at most for one search (several words of one
/// name, names that fail a second word of the query).
const MAX_WORD_ENTRIES: usize = 512;

/// Digits a number has at most (a u64).
const MAX_DIGITS: usize = 19;

/// The number index's key of a document.
fn number_key(company: CompanyId, environment: Environment, number: u64) -> Vec<u8> {
    let mut k = company.to_be_bytes().to_vec();
    k.push(environment.authority_code());
    k.extend_from_slice(number.to_string().as_bytes());
    k
}

/// What the number index needs of a record.
#[derive(Deserialize)]
struct Numbered {
    id: u64,
    company_id: CompanyId,
    environment: Environment,
    number: u64,
}

/// The runs a search reads: counted ones (a family's), or parties' runs.
enum Runs {
    Counted(Vec<Vec<u8>>),
    Parties(Vec<Vec<u8>>),
}

/// What a search keeps of the filters, to check a document found by
/// number or code.
struct Filter<'a> {
    q: &'a DocumentSearch,
    families: &'a [Family],
    first: u32,
    last: u32,
    /// The customer filter's parties, if one is given.
    parties: Option<&'a BTreeSet<Party>>,
}

impl Filter<'_> {
    fn accepts(&self, doc: &DocumentRecord) -> bool {
        let family = Family::of_document_type(doc.document_type);
        let day = day_number(doc.issue_date);
        doc.belongs_to(self.q.company_id, self.q.environment)
            && !doc.pending_build
            && self.families.contains(&family)
            && (self.q.states.is_empty() || self.q.states.contains(&doc.state))
            && (self.first..=self.last).contains(&day)
            && self
                .parties
                .is_none_or(|p| party_of(doc).is_some_and(|d| p.contains(&d)))
    }
}

fn party_of(doc: &DocumentRecord) -> Option<Party> {
    Party::of(
        Family::of_document_type(doc.document_type),
        doc.customer_id,
        &doc.list_keys,
    )
}

/// A search text's or filter's number: upper case, spaces out.
fn folded_number(text: &str) -> String {
    text.chars()
        .filter(|c| !c.is_whitespace())
        .flat_map(char::to_uppercase)
        .collect()
}

/// What a number text may be: (prefix, number) for each place its
/// trailing digits may start (`SETP12` is `SETP` 12, or `SETP1` 2).
fn number_splits(text: &str) -> Vec<(String, u64)> {
    let digits = text.chars().rev().take_while(char::is_ascii_digit).count();
    let mut out = Vec::new();
    for k in 1..=digits.min(MAX_DIGITS) {
        let at = text.len() - k;
        // A number is written without leading zeros.
        if k > 1 && text[at..].starts_with('0') {
            continue;
        }
        if let Ok(n) = text[at..].parse::<u64>() {
            out.push((text[..at].to_string(), n));
        }
    }
    out
}

impl SledStore {
    /// A page of [`DocumentSearch`] ([`crate::DocumentStore::search_documents`]).
    pub(crate) fn search_indexed(&self, q: &DocumentSearch) -> StoreResult<SearchPage> {
        // What this store wrote is found, flushed or not.
        self.derived.apply_deferred()?;
        let families: Vec<Family> = match q.family {
            Some(f) => vec![f],
            None => Family::ALL.to_vec(),
        };
        let states: BTreeSet<u8> = q.states.iter().copied().collect();
        let (first, last) = day_range(q.from, q.to);
        let text = q.text.as_deref().map(str::trim).filter(|t| !t.is_empty());
        let customer = q
            .customer
            .as_deref()
            .map(str::trim)
            .filter(|c| !c.is_empty());
        let filter_parties = match customer {
            Some(c) => Some(self.parties_by_identification(q.company_id, c)?),
            None => None,
        };
        let filter = Filter {
            q,
            families: &families,
            first,
            last,
            parties: filter_parties.as_ref(),
        };
        let number = q
            .number
            .as_deref()
            .map(folded_number)
            .filter(|n| !n.is_empty());
        let mut exact = true;
        let (dims, extras) = if let Some(number) = number {
            // A number filter: its few documents, checked one by one.
            let text_parties = match text {
                Some(t) => Some(self.parties_of_text(q.company_id, t, &mut exact)?),
                None => None,
            };
            let mut extras = Vec::new();
            for doc in self.by_number(q.company_id, q.environment, &number)? {
                let text_ok = match (text, &text_parties) {
                    (Some(t), Some(parties)) => {
                        matches_text(&doc, t)
                            || party_of(&doc).is_some_and(|p| parties.contains(&p))
                    }
                    _ => true,
                };
                if text_ok && filter.accepts(&doc) {
                    extras.push((day_number(doc.issue_date), doc.id));
                }
            }
            (Runs::Parties(Vec::new()), extras)
        } else if let Some(t) = text {
            let mut parties = self.parties_of_text(q.company_id, t, &mut exact)?;
            if let Some(only) = &filter_parties {
                parties.retain(|p| only.contains(p));
            }
            // Documents by number or code, unless a party's run holds them.
            let mut extras = Vec::new();
            let mut seen = BTreeSet::new();
            let mut found = self.by_number(q.company_id, q.environment, &folded_number(t))?;
            found.extend(self.by_code(t)?);
            for doc in found {
                let in_runs = party_of(&doc).is_some_and(|p| parties.contains(&p));
                if !in_runs && filter.accepts(&doc) && seen.insert(doc.id) {
                    extras.push((day_number(doc.issue_date), doc.id));
                }
            }
            (Runs::Parties(party_dims(q, &families, &parties)), extras)
        } else if let Some(parties) = &filter_parties {
            (Runs::Parties(party_dims(q, &families, parties)), Vec::new())
        } else {
            let mut dims = Vec::new();
            for f in &families {
                let s = scope(q.company_id, q.environment, *f);
                if states.is_empty() {
                    dims.push(dimension(&s, &[], None));
                }
                for state in &states {
                    dims.push(dimension(&s, &[], Some(*state)));
                }
            }
            (Runs::Counted(dims), Vec::new())
        };
        let (ids, total) = match dims {
            Runs::Counted(dims) => self.page_ids(&dims, &extras, first, last, q.page, q.limit)?,
            Runs::Parties(dims) => {
                let found = self.party_ids(&dims, &states, &extras, first, last)?;
                let total = found.len() as u64;
                let offset = (u64::from(q.page.max(1) - 1) * u64::from(q.limit)) as usize;
                let page = found
                    .into_iter()
                    .skip(offset)
                    .take(q.limit as usize)
                    .collect();
                (page, total)
            }
        };
        let mut items = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(doc) = Self::get_decode(&self.documents, trees::DOCUMENTS, &id_key(id))? {
                items.push(doc);
            }
        }
        Ok(SearchPage {
            items,
            page: q.page,
            limit: q.limit,
            total,
            total_exact: exact,
        })
    }

    /// Every id of the party runs `dims` issued from day `first` to
    /// `last` and in one of `states` (any when empty), with `extras` (as
    /// (day, id), in none of the runs), newest first. Each run's entries in
    /// range are read (a party's run has no day counters), and for a state
    /// filter the state index's chunk of each block they touch.
    fn party_ids(
        &self,
        dims: &[Vec<u8>],
        states: &BTreeSet<u8>,
        extras: &[(u32, u64)],
        first: u32,
        last: u32,
    ) -> StoreResult<Vec<u64>> {
        if first > last {
            return Ok(Vec::new());
        }
        let mut found: Vec<(u32, Reverse<u64>)> = Vec::new();
        let mut masks: HashMap<u64, u64> = HashMap::new();
        for dim in dims {
            let mut end = run_from(dim, first);
            end.extend_from_slice(&[0xFF; 8]);
            for chunk in self.document_index.chunks(run_from(dim, last)..=end) {
                let mut chunk = chunk?;
                if !states.is_empty() {
                    let mask = match masks.get(&chunk.block) {
                        Some(m) => *m,
                        None => {
                            let mut m = 0;
                            for s in states {
                                m |= self.documents_by_state.bits(&[*s], chunk.block)?;
                            }
                            masks.insert(chunk.block, m);
                            m
                        }
                    };
                    chunk.bits &= mask;
                }
                let day = inverted_day(dim, &chunk);
                found.extend(chunk.ids(true).map(|id| (day, Reverse(id))));
            }
        }
        found.extend(
            extras
                .iter()
                .filter(|(day, _)| (first..=last).contains(day))
                .map(|(day, id)| (u32::MAX - day, Reverse(*id))),
        );
        found.sort_unstable();
        Ok(found.into_iter().map(|(_, Reverse(id))| id).collect())
    }

    /// Whom an identification number names: the company's customer that
    /// holds it, and an employee of that number.
    fn parties_by_identification(
        &self,
        company: CompanyId,
        number: &str,
    ) -> StoreResult<BTreeSet<Party>> {
        let mut out = BTreeSet::new();
        if let Some(id) = self
            .customer_by_ident
            .get(scoped_text_key(company, number))?
            .and_then(|v| read_u64(&v))
        {
            out.insert(Party::Customer(id));
        }
        out.insert(Party::Employee(number.to_string()));
        Ok(out)
    }

    /// Whom a search text names: by identification number, and the
    /// customers each of whose names has a word starting with each word of
    /// the text (at most [`SEARCH_CUSTOMERS`]; `exact` goes false when
    /// more may match).
    fn parties_of_text(
        &self,
        company: CompanyId,
        text: &str,
        exact: &mut bool,
    ) -> StoreResult<BTreeSet<Party>> {
        let mut out = self.parties_by_identification(company, text)?;
        let query = words(text);
        // The longest word narrows the range most; the others are checked
        // against each customer's name.
        let Some(longest) = query.iter().max_by_key(|w| w.len()) else {
            return Ok(out);
        };
        let mut customers = BTreeSet::new();
        let mut read = 0;
        for item in self
            .customer_words
            .scan_prefix(prefix_key(company, longest))
        {
            let (k, _) = item?;
            read += 1;
            if read > MAX_WORD_ENTRIES || customers.len() == SEARCH_CUSTOMERS {
                *exact = false;
                break;
            }
            let Some(id) = customer_of(&k) else { continue };
            if customers.contains(&id) {
                continue;
            }
            let customer: Option<Customer> =
                Self::get_decode(&self.customers, trees::CUSTOMERS, &scoped_key(company, id))?;
            if customer.is_some_and(|c| name_matches(&c.name, &query)) {
                customers.insert(id);
            }
        }
        out.extend(customers.into_iter().map(Party::Customer));
        Ok(out)
    }

    /// The company's documents in `environment` whose full or bare number
    /// is `text` (folded), built ones only.
    fn by_number(
        &self,
        company: CompanyId,
        environment: Environment,
        text: &str,
    ) -> StoreResult<Vec<DocumentRecord>> {
        let mut out = Vec::new();
        let mut read = 0;
        for (prefix, number) in number_splits(text) {
            for id in
                self.documents_by_number
                    .candidates(&number_key(company, environment, number))?
            {
                read += 1;
                if read > MAX_CANDIDATES {
                    return Ok(out);
                }
                let Some(doc): Option<DocumentRecord> =
                    Self::get_decode(&self.documents, trees::DOCUMENTS, &id_key(id))?
                else {
                    continue;
                };
                if doc.belongs_to(company, environment)
                    && doc.number == number
                    && (prefix.is_empty() || doc.prefix.to_uppercase() == prefix)
                    && !out.iter().any(|d: &DocumentRecord| d.id == doc.id)
                {
                    out.push(doc);
                }
            }
        }
        Ok(out)
    }

    /// The document whose code is `text` (as typed, or in lower case).
    fn by_code(&self, text: &str) -> StoreResult<Option<DocumentRecord>> {
        let lower = text.to_lowercase();
        for code in [text, lower.as_str()] {
            if let Some(id) = self.find_by_code(code)? {
                return Self::get_decode(&self.documents, trees::DOCUMENTS, &id_key(id));
            }
        }
        Ok(None)
    }

    /// A built document's number into the number index (before its
    /// record: a stored number is always found).
    pub(crate) fn index_number_unflushed(&self, doc: &DocumentRecord) -> StoreResult<()> {
        self.documents_by_number.add(
            &number_key(doc.company_id, doc.environment, doc.number),
            doc.id,
        )
    }

    /// Once per data dir: every record's number indexed.
    pub(crate) fn build_number_index_once(&self) -> StoreResult<Option<u64>> {
        if self.meta.get(NUMBERS_INDEXED_KEY)?.is_some() {
            return Ok(None);
        }
        let mut numbers = self.documents_by_number.rebuild();
        let mut documents = 0;
        for item in self.documents.iter() {
            let (_, v) = item?;
            let d: Numbered = decode(trees::DOCUMENTS, &v)?;
            numbers.add(&number_key(d.company_id, d.environment, d.number), d.id);
            documents += 1;
        }
        numbers.write()?;
        self.meta.insert(NUMBERS_INDEXED_KEY, &[1u8])?;
        self.flush_now()?;
        Ok(Some(documents))
    }

    pub(crate) fn add_customer_words(
        &self,
        company: CompanyId,
        customer: u64,
        name: &str,
    ) -> StoreResult<()> {
        for w in name_words(name) {
            self.customer_words
                .insert(word_key(company, &w, customer), &[])?;
        }
        Ok(())
    }

    /// The words of `old` that `new` does not have.
    pub(crate) fn remove_customer_words(
        &self,
        company: CompanyId,
        customer: u64,
        old: &str,
        new: &str,
    ) -> StoreResult<()> {
        let kept = name_words(new);
        for w in name_words(old).into_iter().filter(|w| !kept.contains(w)) {
            self.customer_words
                .remove(word_key(company, &w, customer))?;
        }
        Ok(())
    }

    /// Once per data dir: every customer's name words kept.
    pub(crate) fn build_customer_words_once(&self) -> StoreResult<Option<u64>> {
        if self.meta.get(CUSTOMER_WORDS_KEY)?.is_some() {
            return Ok(None);
        }
        self.customer_words.clear()?;
        let mut customers = 0;
        for item in self.customers.iter() {
            let (_, v) = item?;
            let c: Customer = decode(trees::CUSTOMERS, &v)?;
            self.add_customer_words(c.company_id, c.id, &c.name)?;
            customers += 1;
        }
        self.meta.insert(CUSTOMER_WORDS_KEY, &[1u8])?;
        self.flush_now()?;
        Ok(Some(customers))
    }
}

/// The runs of `parties`' documents in `families`.
fn party_dims(q: &DocumentSearch, families: &[Family], parties: &BTreeSet<Party>) -> Vec<Vec<u8>> {
    let mut dims = Vec::new();
    for f in families {
        let s = scope(q.company_id, q.environment, *f);
        for p in parties {
            // A payroll's party is an employee, any other's a customer.
            if (*f == Family::Payroll) == matches!(p, Party::Employee(_)) {
                dims.push(p.dimension(&s));
            }
        }
    }
    dims
}

/// Whether `text` is `doc`'s full number, bare number or code.
fn matches_text(doc: &DocumentRecord, text: &str) -> bool {
    let folded = folded_number(text);
    folded == folded_number(&doc.full_number())
        || folded == doc.number.to_string()
        || doc
            .code
            .as_deref()
            .is_some_and(|c| c.eq_ignore_ascii_case(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_number_is_tried_at_each_place_its_digits_may_start() {
        assert_eq!(
            number_splits("SETP12"),
            [("SETP1".to_string(), 2), ("SETP".to_string(), 12)]
        );
        assert_eq!(
            number_splits("990000012").last(),
            Some(&(String::new(), 990000012))
        );
        assert!(number_splits("SETP").is_empty());
        assert_eq!(
            number_splits("FE012"),
            [("FE01".to_string(), 2), ("FE0".to_string(), 12)]
        );
        assert_eq!(number_splits(&"9".repeat(40)).len(), MAX_DIGITS);
        assert_eq!(folded_number(" setp 12 "), "SETP12");
    }
}
