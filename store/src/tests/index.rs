//! The document index against a plain filter of the same documents.
use std::collections::BTreeMap;

use chrono::{Duration, NaiveDate, Utc};

use crate::tests::{company, new_doc, open, resolution};
use crate::*;

fn day(n: i64) -> NaiveDate {
    NaiveDate::from_ymd_opt(2026, 1, 1).unwrap() + Duration::days(n)
}

pub(crate) fn record(
    id: u64,
    company_id: CompanyId,
    document_type: u8,
    st: u8,
    date: NaiveDate,
) -> DocumentRecord {
    DocumentRecord {
        id,
        company_id,
        environment: Environment::Test,
        document_type,
        resolution_id: 1,
        prefix: "SETP".into(),
        number: id,
        state: st,
        pending_build: false,
        code: None,
        code_scheme: None,
        qr_url: None,
        issue_date: date,
        total: "1.00".into(),
        external_reference: None,
        customer_id: None,
        user_id: None,
        request: serde_json::Value::Null,
        transmission: None,
        attempts: 0,
        track_id: None,
        application_response_missing: None,
        api: None,
        list_keys: BTreeMap::new(),
        issued_at: None,
        authority_events: Vec::new(),
        created_at: Utc::now(),
        updated_at: Utc::now(),
    }
}

/// A deterministic pseudo-random pick in `0..n` for field `salt` of `id`.
fn pick(id: u64, salt: u64, n: u64) -> u64 {
    let mut x = id.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ salt.wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
    x ^= x >> 31;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 29;
    x % n
}

/// A spread of documents: two companies, both environments, every family
/// with its keys, six states, forty days, some half built.
fn corpus() -> Vec<DocumentRecord> {
    let types = [1u8, 2, 3, 4, 5, 9, 10, 11, 6];
    (1..=1200u64)
        .map(|id| {
            let mut d = record(
                id,
                1 + pick(id, 1, 2),
                types[pick(id, 2, 9) as usize],
                1 + pick(id, 3, 6) as u8,
                day(pick(id, 4, 40) as i64),
            );
            if pick(id, 5, 10) == 0 {
                d.environment = Environment::Live;
            }
            d.pending_build = pick(id, 6, 13) == 0;
            let keys = &mut d.list_keys;
            match Family::of_document_type(d.document_type) {
                Family::Support => {
                    keys.insert("proveedor".into(), format!("NIT{}", pick(id, 7, 4)));
                    keys.insert("centro_costos".into(), "A1".into());
                }
                Family::Pos => {
                    keys.insert("id_caja".into(), format!("CAJA{}", pick(id, 8, 3)));
                    if pick(id, 9, 5) != 0 {
                        keys.insert("id_cajero".into(), format!("{}", pick(id, 10, 2)));
                    }
                }
                Family::Payroll => {
                    let tipo = if pick(id, 11, 4) == 0 {
                        "AJUSTE"
                    } else {
                        "INDIVIDUAL"
                    };
                    keys.insert("tipo".into(), tipo.into());
                }
                Family::Invoices => {
                    let standing = ["reclamada", "aceptada", "acuse_sin_aceptacion"];
                    if let Some(s) = standing.get(pick(id, 12, 5) as usize) {
                        keys.insert(EVENT_STANDING_KEY.into(), (*s).into());
                    }
                }
                _ => {}
            }
            d
        })
        .collect()
}

/// What a list must answer, by filtering every document.
fn expected(docs: &[DocumentRecord], q: &ListQuery) -> (Vec<u64>, u64) {
    let mut hits: Vec<&DocumentRecord> = docs
        .iter()
        .filter(|d| {
            d.company_id == q.company_id
                && d.environment == q.environment
                && Family::of_document_type(d.document_type) == q.family
                && !d.pending_build
                && q.from.is_none_or(|f| d.issue_date >= f)
                && q.to.is_none_or(|t| d.issue_date <= t)
                && (q.states.is_empty() || q.states.contains(&d.state))
                && q.keys.iter().all(|(k, v)| d.list_keys.get(k) == Some(v))
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

fn query(company_id: CompanyId, family: Family) -> ListQuery {
    ListQuery {
        company_id,
        environment: Environment::Test,
        family,
        from: None,
        to: None,
        states: Vec::new(),
        keys: Vec::new(),
        page: 1,
        limit: 20,
    }
}

fn queries() -> Vec<ListQuery> {
    let mut out = vec![query(3, Family::Invoices)];
    for company_id in [1, 2] {
        for family in Family::ALL {
            let base = query(company_id, family);
            out.push(base.clone());
            out.push(ListQuery {
                page: 3,
                limit: 7,
                ..base.clone()
            });
            out.push(ListQuery {
                from: Some(day(5)),
                to: Some(day(17)),
                ..base.clone()
            });
            out.push(ListQuery {
                states: vec![2, 4],
                from: Some(day(10)),
                page: 2,
                limit: 5,
                ..base.clone()
            });
            out.push(ListQuery {
                environment: Environment::Live,
                ..base.clone()
            });
            out.push(ListQuery {
                from: Some(day(20)),
                to: Some(day(3)),
                ..base.clone()
            });
            out.push(ListQuery {
                page: 1000,
                ..base.clone()
            });
        }
        let support = query(company_id, Family::Support);
        out.push(ListQuery {
            keys: vec![("proveedor".into(), "NIT1".into())],
            ..support.clone()
        });
        out.push(ListQuery {
            keys: vec![("proveedor".into(), "NIT3".into())],
            states: vec![1, 2, 3],
            to: Some(day(30)),
            ..support.clone()
        });
        let pos = query(company_id, Family::Pos);
        for keys in [
            vec![("id_caja", "CAJA1")],
            vec![("id_cajero", "1")],
            vec![("id_cajero", "0"), ("id_caja", "CAJA2")],
            vec![("id_caja", "CAJA2"), ("id_caja", "CAJA1")],
        ] {
            out.push(ListQuery {
                keys: keys
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                limit: 4,
                page: 2,
                ..pos.clone()
            });
        }
        out.push(ListQuery {
            keys: vec![("tipo".into(), "AJUSTE".into())],
            ..query(company_id, Family::Payroll)
        });
        for standing in ["reclamada", "aceptada", "acuse_sin_aceptacion"] {
            out.push(ListQuery {
                keys: vec![(EVENT_STANDING_KEY.into(), standing.into())],
                states: vec![state::ACCEPTED],
                ..query(company_id, Family::Invoices)
            });
        }
    }
    out
}

/// Every list of [`queries`] against a plain filter of `docs`.
pub(crate) fn check_lists(s: &SledStore, docs: &[DocumentRecord]) {
    check_all(s, docs)
}

fn check_all(s: &SledStore, docs: &[DocumentRecord]) {
    for q in queries() {
        let page = s.list_documents(&q).unwrap();
        let ids: Vec<u64> = page.items.iter().map(|d| d.id).collect();
        let (want, total) = expected(docs, &q);
        assert_eq!((ids, page.total), (want, total), "{q:?}");
        assert_eq!((page.page, page.limit), (q.page, q.limit));
    }
}

#[test]
fn every_filter_pages_and_counts_as_a_full_filter_would() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let docs = corpus();
    s.write_documents(&docs).unwrap();
    check_all(&s, &docs);
    // Most filters really select something.
    let all = queries();
    let selecting = all
        .iter()
        .filter(|q| !expected(&docs, q).0.is_empty())
        .count();
    // (Company 3, received documents, inverted dates and page 1000 select
    // nothing by design.)
    assert!(selecting * 2 > all.len(), "{selecting} of {}", all.len());
}

#[test]
fn state_date_and_key_changes_move_the_entries_and_counters() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let mut docs = corpus();
    s.write_documents(&docs).unwrap();
    for d in docs.iter_mut().filter(|d| d.id % 3 == 0) {
        d.state = state::ACCEPTED;
        d.pending_build = false;
        if d.id % 2 == 0 {
            d.issue_date = day(45);
        }
        if let Some(caja) = d.list_keys.get_mut("id_caja") {
            *caja = "CAJA9".into();
        }
        if Family::of_document_type(d.document_type) == Family::Invoices {
            // The events sweep: an invoice learns it was claimed.
            d.list_keys
                .insert(EVENT_STANDING_KEY.into(), "reclamada".into());
        }
        s.update_document(d, history()).unwrap();
    }
    check_all(&s, &docs);
    let moved = ListQuery {
        keys: vec![("id_caja".into(), "CAJA9".into())],
        states: vec![state::ACCEPTED],
        ..query(1, Family::Pos)
    };
    let (want, total) = expected(&docs, &moved);
    assert!(total > 0);
    let page = s.list_documents(&moved).unwrap();
    assert_eq!(page.items.iter().map(|d| d.id).collect::<Vec<_>>(), want);
}

pub(crate) fn history_line() -> HistoryEntry {
    history()
}

fn history() -> HistoryEntry {
    HistoryEntry {
        at: Utc::now(),
        actor: "test".into(),
        event: "changed".into(),
        from_state: None,
        to_state: None,
        data: serde_json::Value::Null,
    }
}

#[test]
fn a_key_the_family_does_not_index_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let q = ListQuery {
        keys: vec![("centro_costos".into(), "A1".into())],
        ..query(1, Family::Support)
    };
    assert!(matches!(
        s.list_documents(&q),
        Err(StoreError::UnindexedKey { .. })
    ));
}

#[tokio::test]
async fn issued_documents_are_listed_once_built_with_their_keys() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let c = s.create_company(company()).unwrap();
    let r = s.add_resolution(c.id, resolution(1, 100)).unwrap();
    let mut d = s
        .create_document(NewDocument {
            list_keys: [("tipo".to_string(), "X".to_string())].into(),
            ..new_doc(&r, None)
        })
        .unwrap();
    assert_eq!(d.list_keys["tipo"], "X");
    let all = query(c.id, Family::Invoices);
    assert_eq!(
        s.list_documents(&all).unwrap().total,
        0,
        "half built: not listed"
    );
    d.pending_build = false;
    d.state = state::QUEUED;
    let store = AsyncStore::new(s.clone()).unwrap();
    store
        .commit_document(d.clone(), DocumentFiles::default(), None, history())
        .await
        .unwrap();
    let page = store.list_documents(all.clone()).await.unwrap();
    assert_eq!(page.total, 1);
    assert_eq!(page.items[0].id, d.id);
    let queued = ListQuery {
        states: vec![state::QUEUED],
        from: Some(d.issue_date),
        to: Some(d.issue_date),
        ..all.clone()
    };
    assert_eq!(store.list_documents(queued.clone()).await.unwrap().total, 1);
    d.state = state::ACCEPTED;
    store.update_document(d.clone(), history()).await.unwrap();
    assert_eq!(store.list_documents(queued).await.unwrap().total, 0);
    assert_eq!(store.list_documents(all).await.unwrap().total, 1);
    // The group commit that made the changes durable removed their markers.
    s.flush().unwrap();
    assert_eq!(crate::engine::sled::index::pending_markers(&s), 0);
}

#[test]
fn after_an_unclean_stop_only_the_marked_documents_are_checked_and_fixed() {
    let dir = tempfile::tempdir().unwrap();
    let mut docs = corpus();
    {
        let s = open(dir.path());
        s.write_documents(&docs).unwrap();
        // A crash in the middle of a change: the marker and the record are
        // on disk, the entries and counters of the new state are not.
        let d = docs
            .iter_mut()
            .find(|d| !d.pending_build && d.company_id == 1)
            .unwrap();
        let old = crate::indexes::doc_index::IndexView::of(d);
        d.state = state::REJECTED;
        d.issue_date = day(3);
        s.document_index_pending
            .insert(
                [crate::encoding::codec::id_key(d.id), [0xAB; 8]].concat(),
                crate::encoding::codec::encode(trees::DOCUMENT_INDEX_PENDING, &Some(old)).unwrap(),
            )
            .unwrap();
        s.documents
            .insert(
                crate::encoding::codec::id_key(d.id),
                crate::encoding::codec::encode(trees::DOCUMENTS, &*d).unwrap(),
            )
            .unwrap();
        s.flush().unwrap();
        s.close_uncleanly();
    }
    let s = open(dir.path());
    check_all(&s, &docs);
    assert_eq!(crate::engine::sled::index::pending_markers(&s), 0);
}

#[test]
fn a_data_dir_written_before_the_index_gets_it_built_once_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let docs = corpus();
    {
        let s = open(dir.path());
        s.write_documents(&docs).unwrap();
        // As an older build left it: documents, no index.
        s.document_index.clear().unwrap();
        s.document_index_counts.clear().unwrap();
        s.meta
            .remove(crate::indexes::doc_index::INDEX_BUILT_KEY)
            .unwrap();
        s.flush().unwrap();
    }
    let s = open(dir.path());
    check_all(&s, &docs);
    assert!(s
        .meta
        .get(crate::indexes::doc_index::INDEX_BUILT_KEY)
        .unwrap()
        .is_some());
}

#[test]
fn a_store_closed_while_other_handles_live_reopens_without_repair() {
    let dir = tempfile::tempdir().unwrap();
    {
        let s = open(dir.path());
        s.write_documents(&corpus()).unwrap();
        let still_held = s.clone();
        // Derived data a repair would recompute: its absence after the
        // reopen shows no repair ran.
        s.usage.insert(b"marker-of-no-repair", &[1u8]).unwrap();
        s.close().unwrap();
        // The last handle goes like a killed process: only close() marked.
        still_held.close_uncleanly();
    }
    let s = open(dir.path());
    assert!(s.usage.get(b"marker-of-no-repair").unwrap().is_some());
}

/// The two indexes as builds from before id sets wrote them: an entry per
/// document and set (`dimension ‖ inverted day ‖ inverted id` → () and
/// `state ‖ id` → ()).
fn write_indexes_before_id_sets(s: &SledStore, docs: &[DocumentRecord]) {
    let index = s.db.open_tree(trees::DOCUMENT_INDEX_V1).unwrap();
    let states = s.db.open_tree(trees::DOCUMENTS_BY_STATE_V1).unwrap();
    for d in docs {
        let view = crate::indexes::doc_index::IndexView::of(d);
        for set in view.entries() {
            index
                .insert(
                    [set, (u64::MAX - d.id).to_be_bytes().to_vec()].concat(),
                    &[],
                )
                .unwrap();
        }
        states
            .insert(
                [vec![view.state_set()], d.id.to_be_bytes().to_vec()].concat(),
                &[],
            )
            .unwrap();
    }
}

#[test]
fn a_data_dir_with_the_indexes_from_before_id_sets_is_upgraded_at_open() {
    for case in ["clean", "unclean", "our flags set"] {
        let dir = tempfile::tempdir().unwrap();
        let docs = corpus();
        {
            let s = open(dir.path());
            s.write_documents(&docs).unwrap();
            // As a build from before id sets left a data dir: its trees and
            // flag, none of ours. With our flags set (an older build ran
            // after ours), our sets are stale: built again all the same.
            s.document_index.clear().unwrap();
            s.documents_by_state.clear().unwrap();
            if case != "our flags set" {
                s.meta
                    .remove(crate::indexes::doc_index::INDEX_BUILT_KEY)
                    .unwrap();
                s.meta
                    .remove(crate::engine::sled::repair::STATE_SETS_KEY)
                    .unwrap();
            }
            s.meta.insert(b"document_index_built", &[1u8]).unwrap();
            write_indexes_before_id_sets(&s, &docs);
            s.flush().unwrap();
            if case == "unclean" {
                s.close_uncleanly();
            }
        }
        let s = open(dir.path());
        check_all(&s, &docs);
        for st in 1..=6u8 {
            let want: Vec<u64> = docs
                .iter()
                .filter(|d| d.state == st && !d.pending_build)
                .map(|d| d.id)
                .collect();
            let found = s.documents_in_states(None, &[st]).unwrap();
            assert_eq!(found.iter().map(|d| d.id).collect::<Vec<_>>(), want);
        }
        let half_built: Vec<u64> = docs
            .iter()
            .filter(|d| d.pending_build)
            .map(|d| d.id)
            .collect();
        assert!(!half_built.is_empty());
        let pending = s.pending_builds().unwrap();
        assert_eq!(pending.iter().map(|d| d.id).collect::<Vec<_>>(), half_built);
        // The old trees and flag are gone (sled's files were copied
        // without them).
        let names = s.db.tree_names();
        for old in [trees::DOCUMENT_INDEX_V1, trees::DOCUMENTS_BY_STATE_V1] {
            assert!(!names.iter().any(|n| n == old.as_bytes()), "{old}");
        }
        assert!(s.meta.get(b"document_index_built").unwrap().is_none());
    }
}

/// Before id sets, a document of no indexed keys had 3 sled entries in
/// these two trees (the index's "any state" and its state dimensions, and
/// its state entry); documents issued one after another now share them.
#[test]
fn sequential_documents_take_a_small_fraction_of_an_entry_in_the_two_indexes() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let n = 6_400u64;
    let docs: Vec<DocumentRecord> = (1..=n)
        .map(|id| record(id, 1, 1, state::ACCEPTED, day(id as i64 / 1_000)))
        .collect();
    s.write_documents(&docs).unwrap();
    let memberships: u64 = docs
        .iter()
        .map(|d| crate::indexes::doc_index::IndexView::of(d).entries().len() as u64 + 1)
        .sum();
    let (index, states) = (s.document_index.len(), s.documents_by_state.len());
    let per_document = (index + states) as f64 / n as f64;
    eprintln!(
        "{n} sequential documents: entries per document {:.2} before id sets, \
         {per_document:.4} now (document_index {index}, documents_by_state {states})",
        memberships as f64 / n as f64
    );
    assert_eq!(memberships, 3 * n);
    assert!(per_document < 0.06, "{per_document}");
    check_all(&s, &docs);
}
