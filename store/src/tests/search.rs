//! The console's search against a plain filter of the same documents.
use std::collections::BTreeMap;

use chrono::{Duration, NaiveDate};

use crate::indexes::words::{name_matches, words};
use crate::tests::index::{history_line, record};
use crate::tests::{company, new_doc, open, resolution};
use crate::*;

fn day(n: i64) -> NaiveDate {
    NaiveDate::from_ymd_opt(2026, 1, 1).unwrap() + Duration::days(n)
}

fn pick(id: u64, salt: u64, n: u64) -> u64 {
    let mut x = id.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ salt.wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
    x ^= x >> 31;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 29;
    x % n
}

const NAMES: [&str; 8] = [
    "Panadería Peña",
    "Comercializadora Andina S.A.S.",
    "ÉXITO Andino Ltda",
    "Distribuidora del Pacífico",
    "Pañales y Compañía",
    "Andrés Comercial",
    "Ferretería Ñuñoa",
    "Consumidor final",
];

/// An employee whose number is also customer 3's.
const EMPLOYEES: [&str; 4] = ["1020304050", "52000111", "900100003", "79111222"];

/// The documents and the customers they name, per company.
struct Corpus {
    docs: Vec<DocumentRecord>,
    customers: BTreeMap<u64, Customer>,
}

fn corpus(s: &SledStore) -> Corpus {
    let mut customers = BTreeMap::new();
    let mut ids: BTreeMap<CompanyId, Vec<u64>> = BTreeMap::new();
    for company_id in [1u64, 2] {
        for (i, name) in NAMES.iter().enumerate() {
            let c = s
                .upsert_customer(
                    company_id,
                    CustomerInput {
                        identification_number: format!("90010000{i}"),
                        name: (*name).into(),
                        email: "a@b.co".into(),
                        ..Default::default()
                    },
                )
                .unwrap();
            ids.entry(company_id).or_default().push(c.id);
            customers.insert(c.id, c);
        }
    }
    let types = [1u8, 2, 3, 4, 5, 9, 10, 11, 6];
    let prefixes = ["SETP", "NC", "DS", "POS", "FE1"];
    let docs = (1..=1500u64)
        .map(|id| {
            let company_id = 1 + pick(id, 1, 2);
            let mut d = record(
                id,
                company_id,
                types[pick(id, 2, 9) as usize],
                1 + pick(id, 3, 6) as u8,
                day(pick(id, 4, 60) as i64),
            );
            if pick(id, 5, 10) == 0 {
                d.environment = Environment::Live;
            }
            d.pending_build = pick(id, 6, 17) == 0;
            d.prefix = prefixes[pick(id, 7, 5) as usize].into();
            // Bare numbers repeat across prefixes.
            d.number = 1 + pick(id, 8, 400);
            if pick(id, 9, 8) != 0 {
                d.code = Some(format!("{:096x}", id * 7919));
            }
            if Family::of_document_type(d.document_type) == Family::Payroll {
                d.list_keys.insert("tipo".into(), "INDIVIDUAL".into());
                d.list_keys.insert(
                    "empleado".into(),
                    EMPLOYEES[pick(id, 10, 4) as usize].into(),
                );
            } else if pick(id, 11, 9) != 0 {
                let of = &ids[&company_id];
                d.customer_id = Some(of[pick(id, 12, of.len() as u64) as usize]);
            }
            d
        })
        .collect();
    Corpus { docs, customers }
}

impl Corpus {
    /// The identification number of whom the document is for.
    fn party_number(&self, d: &DocumentRecord) -> Option<String> {
        if Family::of_document_type(d.document_type) == Family::Payroll {
            return d.list_keys.get("empleado").cloned();
        }
        d.customer_id
            .map(|id| self.customers[&id].identification_number.clone())
    }

    fn party_name(&self, d: &DocumentRecord) -> Option<&str> {
        d.customer_id.map(|id| self.customers[&id].name.as_str())
    }

    fn matches_text(&self, d: &DocumentRecord, t: &str) -> bool {
        let folded: String = t
            .chars()
            .filter(|c| !c.is_whitespace())
            .flat_map(char::to_uppercase)
            .collect();
        let query = words(t);
        folded == d.full_number().to_uppercase()
            || folded == d.number.to_string()
            || d.code.as_deref().is_some_and(|c| c.eq_ignore_ascii_case(t))
            || self.party_number(d).as_deref() == Some(t)
            || (!query.is_empty() && self.party_name(d).is_some_and(|n| name_matches(n, &query)))
    }

    /// What a search must answer, by filtering every document.
    fn expected(&self, q: &DocumentSearch) -> (Vec<u64>, u64) {
        let mut hits: Vec<&DocumentRecord> = self
            .docs
            .iter()
            .filter(|d| {
                d.company_id == q.company_id
                    && d.environment == q.environment
                    && !d.pending_build
                    && q.family
                        .is_none_or(|f| Family::of_document_type(d.document_type) == f)
                    && q.from.is_none_or(|f| d.issue_date >= f)
                    && q.to.is_none_or(|t| d.issue_date <= t)
                    && (q.states.is_empty() || q.states.contains(&d.state))
                    && q.customer
                        .as_deref()
                        .is_none_or(|c| self.party_number(d).as_deref() == Some(c))
                    && q.number.as_deref().is_none_or(|n| {
                        n == d.full_number().to_uppercase() || n == d.number.to_string()
                    })
                    && q.text.as_deref().is_none_or(|t| self.matches_text(d, t))
            })
            .collect();
        hits.sort_by_key(|d| std::cmp::Reverse((d.issue_date, d.id)));
        let total = hits.len() as u64;
        let page = hits
            .into_iter()
            .skip(((q.page.max(1) - 1) * q.limit) as usize)
            .take(q.limit as usize)
            .map(|d| d.id)
            .collect();
        (page, total)
    }

    /// A built document of company 1 in the test environment with a code
    /// and a customer.
    fn sample(&self) -> &DocumentRecord {
        self.docs
            .iter()
            .find(|d| {
                d.company_id == 1
                    && d.environment == Environment::Test
                    && !d.pending_build
                    && d.code.is_some()
                    && d.customer_id.is_some()
            })
            .unwrap()
    }
}

fn search(company_id: CompanyId) -> DocumentSearch {
    DocumentSearch {
        company_id,
        environment: Environment::Test,
        family: None,
        from: None,
        to: None,
        states: Vec::new(),
        customer: None,
        number: None,
        text: None,
        page: 1,
        limit: 20,
    }
}

fn searches(c: &Corpus) -> Vec<DocumentSearch> {
    let sample = c.sample();
    let code = sample.code.clone().unwrap();
    let mut out = vec![search(3)];
    for company_id in [1, 2] {
        let base = search(company_id);
        out.push(base.clone());
        out.push(DocumentSearch {
            page: 3,
            limit: 7,
            ..base.clone()
        });
        out.push(DocumentSearch {
            page: 25,
            ..base.clone()
        });
        out.push(DocumentSearch {
            environment: Environment::Live,
            ..base.clone()
        });
        out.push(DocumentSearch {
            from: Some(day(10)),
            to: Some(day(30)),
            states: vec![2, 4],
            page: 2,
            limit: 5,
            ..base.clone()
        });
        for family in Family::ALL {
            out.push(DocumentSearch {
                family: Some(family),
                states: vec![1, 2],
                ..base.clone()
            });
        }
        // The customer filter: a buyer, an employee, one that is both, none.
        for who in ["900100001", "1020304050", "900100003", "123"] {
            out.push(DocumentSearch {
                customer: Some(who.into()),
                ..base.clone()
            });
            out.push(DocumentSearch {
                customer: Some(who.into()),
                family: Some(Family::Payroll),
                ..base.clone()
            });
            out.push(DocumentSearch {
                customer: Some(who.into()),
                states: vec![2],
                from: Some(day(20)),
                page: 2,
                limit: 3,
                ..base.clone()
            });
        }
        // The number filter, full or bare.
        for n in [
            sample.full_number(),
            sample.number.to_string(),
            "FE112".into(),
        ] {
            out.push(DocumentSearch {
                number: Some(n.clone()),
                ..base.clone()
            });
            out.push(DocumentSearch {
                number: Some(n),
                family: Some(Family::Invoices),
                customer: Some("900100002".into()),
                ..base.clone()
            });
        }
        // Free text: a number, a code, a customer by number and by name.
        for t in [
            sample.full_number(),
            sample.full_number().to_lowercase(),
            sample.number.to_string(),
            code.clone(),
            code.to_uppercase(),
            "900100004".into(),
            "1020304050".into(),
            "900100003".into(),
            "pan".into(),
            "PEÑA".into(),
            "andin".into(),
            "andina com".into(),
            "exito".into(),
            "ñuñoa".into(),
            "zzz".into(),
        ] {
            out.push(DocumentSearch {
                text: Some(t.clone()),
                ..base.clone()
            });
            out.push(DocumentSearch {
                text: Some(t.clone()),
                family: Some(Family::Invoices),
                states: vec![1, 2, 3],
                limit: 5,
                page: 2,
                ..base.clone()
            });
            out.push(DocumentSearch {
                text: Some(t),
                customer: Some("900100001".into()),
                from: Some(day(5)),
                to: Some(day(40)),
                ..base.clone()
            });
        }
        out.push(DocumentSearch {
            text: Some("andina".into()),
            number: Some(sample.number.to_string()),
            ..base.clone()
        });
    }
    out
}

fn check_all(s: &SledStore, c: &Corpus) {
    for q in searches(c) {
        let page = s.search_documents(&q).unwrap();
        let ids: Vec<u64> = page.items.iter().map(|d| d.id).collect();
        let (want, total) = c.expected(&q);
        assert_eq!((ids, page.total), (want, total), "{q:?}");
        assert!(page.total_exact);
    }
}

#[test]
fn every_filter_and_search_pages_and_counts_as_a_full_filter_would() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let c = corpus(&s);
    s.write_documents(&c.docs).unwrap();
    check_all(&s, &c);
    let all = searches(&c);
    let selecting = all.iter().filter(|q| !c.expected(q).0.is_empty()).count();
    assert!(selecting * 2 > all.len(), "{selecting} of {}", all.len());
}

#[test]
fn state_changes_and_renamed_customers_are_searched_as_they_are_now() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let mut c = corpus(&s);
    s.write_documents(&c.docs).unwrap();
    for d in c.docs.iter_mut().filter(|d| d.id % 3 == 0) {
        d.state = state::REJECTED;
        d.pending_build = false;
        s.update_document(d, history_line()).unwrap();
    }
    // "Panadería Peña" becomes "Panificadora Gómez": found by its new
    // words, no longer by "peña".
    let renamed = s
        .upsert_customer(
            1,
            CustomerInput {
                identification_number: "900100000".into(),
                name: "Panificadora Gómez".into(),
                email: "a@b.co".into(),
                ..Default::default()
            },
        )
        .unwrap();
    c.customers.insert(renamed.id, renamed);
    check_all(&s, &c);
    for (text, found) in [("gomez", true), ("peña", false)] {
        let q = DocumentSearch {
            text: Some(text.into()),
            ..search(1)
        };
        assert_eq!(s.search_documents(&q).unwrap().total > 0, found, "{text}");
    }
}

#[test]
fn a_name_that_starts_too_many_customers_says_its_total_is_not_exact() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    for i in 0..(SEARCH_CUSTOMERS + 5) {
        s.upsert_customer(
            1,
            CustomerInput {
                identification_number: format!("8{i:08}"),
                name: format!("Tienda {i}"),
                ..Default::default()
            },
        )
        .unwrap();
    }
    let q = DocumentSearch {
        text: Some("tienda".into()),
        ..search(1)
    };
    assert!(!s.search_documents(&q).unwrap().total_exact);
    let q = DocumentSearch {
        text: Some("tienda 3".into()),
        ..search(1)
    };
    assert!(s.search_documents(&q).unwrap().total_exact);
}

/// What the code before the search left in a data dir: the index without
/// the party runs (under its own flag), no number index, no name words.
fn as_written_before_the_search(s: &SledStore, docs: &[DocumentRecord]) {
    use crate::indexes::doc_index::{run_from, IndexView};
    for d in docs {
        // Today's code writes no party run: taken out of the sets (it
        // has no counter).
        if let Some((dim, day)) = IndexView::of(d).party_cell() {
            assert!(s.document_index.remove(&run_from(&dim, day), d.id).unwrap());
        }
    }
    let meta = &s.meta;
    meta.remove(crate::indexes::doc_index::INDEX_BUILT_KEY)
        .unwrap();
    meta.insert(crate::indexes::doc_index::INDEX_V2_BUILT_KEY, &[1u8])
        .unwrap();
    s.documents_by_number.clear().unwrap();
    meta.remove(crate::engine::sled::search::NUMBERS_INDEXED_KEY)
        .unwrap();
    s.customer_words.clear().unwrap();
    meta.remove(crate::engine::sled::search::CUSTOMER_WORDS_KEY)
        .unwrap();
}

#[test]
fn a_data_dir_written_before_the_search_gains_its_indexes_at_open() {
    for clean in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let c;
        {
            let s = open(dir.path());
            c = corpus(&s);
            s.write_documents(&c.docs).unwrap();
            as_written_before_the_search(&s, &c.docs);
            s.flush().unwrap();
            // The lists of today's code answer as before.
            crate::tests::index::check_lists(&s, &c.docs);
            if !clean {
                s.close_uncleanly();
            }
        }
        let s = open(dir.path());
        check_all(&s, &c);
        crate::tests::index::check_lists(&s, &c.docs);
        assert!(s
            .meta
            .get(crate::indexes::doc_index::INDEX_V2_BUILT_KEY)
            .unwrap()
            .is_none());
        // Each filter and each kind of search finds what it should.
        let sample = c.sample();
        let customer = &c.customers[&sample.customer_id.unwrap()];
        for q in [
            DocumentSearch {
                customer: Some(customer.identification_number.clone()),
                ..search(1)
            },
            DocumentSearch {
                number: Some(sample.full_number()),
                ..search(1)
            },
            DocumentSearch {
                text: Some(sample.code.clone().unwrap()),
                ..search(1)
            },
            DocumentSearch {
                text: Some(words(&customer.name)[0].clone()),
                ..search(1)
            },
            DocumentSearch {
                text: Some("1020304050".into()),
                family: Some(Family::Payroll),
                ..search(1)
            },
        ] {
            let page = s.search_documents(&q).unwrap();
            assert!(page.total > 0, "{q:?}");
        }
    }
}

#[tokio::test]
async fn an_issued_document_is_found_by_number_code_and_customer() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let co = s.create_company(company()).unwrap();
    let r = s.add_resolution(co.id, resolution(1, 100)).unwrap();
    let mut d = s
        .create_document(NewDocument {
            customer: Some(CustomerInput {
                identification_number: "800200300".into(),
                name: "Librería Ángel".into(),
                email: "l@a.co".into(),
                ..Default::default()
            }),
            ..new_doc(&r, None)
        })
        .unwrap();
    let by_name = DocumentSearch {
        text: Some("angel".into()),
        ..search(co.id)
    };
    assert_eq!(
        s.search_documents(&by_name).unwrap().total,
        0,
        "half built: not found"
    );
    d.pending_build = false;
    d.state = state::QUEUED;
    d.code = Some("ab".repeat(48));
    let store = AsyncStore::new(s.clone()).unwrap();
    store
        .commit_document(d.clone(), DocumentFiles::default(), None, history_line())
        .await
        .unwrap();
    for q in [
        by_name.clone(),
        DocumentSearch {
            text: Some(d.full_number()),
            ..search(co.id)
        },
        DocumentSearch {
            text: Some("AB".repeat(48)),
            ..search(co.id)
        },
        DocumentSearch {
            customer: Some("800200300".into()),
            states: vec![state::QUEUED],
            ..search(co.id)
        },
    ] {
        let page = store.search_documents(q.clone()).await.unwrap();
        assert_eq!(
            page.items.iter().map(|x| x.id).collect::<Vec<_>>(),
            [d.id],
            "{q:?}"
        );
    }
    let elsewhere = DocumentSearch {
        environment: Environment::Live,
        ..by_name
    };
    assert_eq!(store.search_documents(elsewhere).await.unwrap().total, 0);
}
