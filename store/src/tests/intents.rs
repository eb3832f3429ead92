//! Documents held out of sled between their two phases (`intents`).
use crate::tests::{commit_built, company, new_doc, open, resolution};
use crate::*;

/// A held document's request body.
fn body(n: u64) -> Vec<u8> {
    format!("{{\"n\":{n}}}").into_bytes()
}

fn held(s: &SledStore, r: &NumberingResolution, n: u64, reference: &str) -> DocumentRecord {
    let mut new = new_doc(r, Some(reference));
    new.request = body(n);
    s.number_document(new, true).unwrap()
}

/// A store in `dir` with a company and its numbering resolution.
fn issuer(dir: &std::path::Path) -> (SledStore, NumberingResolution) {
    let s = open(dir);
    let c = s.create_company(company()).unwrap();
    let r = s.add_resolution(c.id, resolution(1, 100)).unwrap();
    (s, r)
}

#[tokio::test]
async fn a_held_document_is_written_once_by_its_commit() {
    let dir = tempfile::tempdir().unwrap();
    let (id, r) = {
        let (s, r) = issuer(dir.path());
        let mut d = held(&s, &r, 1, "ref-1");
        assert_eq!(d.number, 1);
        // Not in sled until its commit, but its reference and number are
        // taken.
        assert!(s.document(d.id).unwrap().is_none());
        assert!(s.pending_builds().unwrap().is_empty());
        assert_eq!(
            s.document_by_reference(r.company_id, "ref-1").unwrap(),
            Some(d.id)
        );
        assert!(matches!(
            s.number_document(new_doc(&r, Some("ref-1")), true),
            Err(StoreError::DuplicateReference { id }) if id == d.id
        ));
        assert_eq!(s.next_number(&r).unwrap(), 2);
        commit_built(&s, &mut d).await;
        assert_eq!(s.intents.len(), 0);
        let stored = s.document(d.id).unwrap().unwrap();
        assert_eq!(stored.state, state::QUEUED);
        assert!(!stored.pending_build);
        assert_eq!(s.document_request(d.id).unwrap().unwrap(), body(1));
        assert_eq!(s.document_counts().unwrap(), vec![((1, state::QUEUED), 1)]);
        s.close_uncleanly();
        (d.id, r)
    };
    let s = open(dir.path());
    assert!(s.pending_builds().unwrap().is_empty());
    assert_eq!(s.document(id).unwrap().unwrap().state, state::QUEUED);
    assert_eq!(s.document_request(id).unwrap().unwrap(), body(1));
    assert_eq!(s.next_number(&r).unwrap(), 2);
    assert_eq!(s.monthly_usage(r.company_id, 202611).unwrap(), 1);
}

/// Killed between a document's phase one and its commit, after a later
/// document's commit: the number it took is not lost, the next open writes
/// it half-built (start-up rebuilds it), once.
#[tokio::test]
async fn a_held_document_outlived_by_a_later_commit_comes_back_half_built() {
    let dir = tempfile::tempdir().unwrap();
    let (first, r) = {
        let (s, r) = issuer(dir.path());
        let first = held(&s, &r, 1, "ref-1");
        let mut second = held(&s, &r, 2, "ref-2");
        commit_built(&s, &mut second).await;
        s.close_uncleanly();
        (first, r)
    };
    for _ in 0..2 {
        let s = open(dir.path());
        let pending = s.pending_builds().unwrap();
        assert_eq!(pending.len(), 1, "written back once");
        assert_eq!(pending[0].id, first.id);
        assert_eq!(pending[0].number, 1);
        assert!(pending[0].pending_build);
        assert_eq!(s.document_request(first.id).unwrap().unwrap(), body(1));
        assert_eq!(
            s.document_by_reference(r.company_id, "ref-1").unwrap(),
            Some(first.id)
        );
        assert_eq!(s.next_number(&r).unwrap(), 3);
        assert_eq!(s.monthly_usage(r.company_id, 202611).unwrap(), 2);
        s.close_uncleanly();
    }
}

#[test]
fn a_held_document_whose_build_failed_is_kept_half_built() {
    let dir = tempfile::tempdir().unwrap();
    let id = {
        let (s, r) = issuer(dir.path());
        let d = held(&s, &r, 1, "ref-1");
        s.keep_pending(d.id).unwrap();
        assert_eq!(s.intents.len(), 0);
        let pending = s.pending_builds().unwrap();
        assert_eq!(pending.iter().map(|d| d.id).collect::<Vec<_>>(), [d.id]);
        assert_eq!(s.document_request(d.id).unwrap().unwrap(), body(1));
        // Kept once: a second call finds nothing held.
        s.keep_pending(d.id).unwrap();
        d.id
    };
    let s = open(dir.path());
    let pending = s.pending_builds().unwrap();
    assert_eq!(pending.iter().map(|d| d.id).collect::<Vec<_>>(), [id]);
    assert_eq!(s.document_request(id).unwrap().unwrap(), body(1));
}

/// Killed before anything was flushed: neither the document nor its
/// number was kept, and the number is given again (no gap).
#[test]
fn a_held_document_lost_before_any_flush_leaves_no_gap() {
    let dir = tempfile::tempdir().unwrap();
    let r = {
        let (s, r) = issuer(dir.path());
        s.flush().unwrap();
        held(&s, &r, 1, "ref-1");
        s.close_uncleanly();
        r
    };
    let s = open(dir.path());
    assert!(s.pending_builds().unwrap().is_empty());
    assert_eq!(
        s.document_by_reference(r.company_id, "ref-1").unwrap(),
        None
    );
    assert_eq!(s.next_number(&r).unwrap(), 1);
}

/// The invariant that makes a held document safe: sled never counts its
/// number before the intent that brings it back is durable, while phase
/// one reads the number as taken at once.
#[test]
fn a_held_documents_counter_waits_for_its_intent_to_be_durable() {
    let dir = tempfile::tempdir().unwrap();
    let (s, r) = issuer(dir.path());
    s.flush().unwrap();
    let stored = |s: &SledStore| {
        s.counters
            .get(crate::indexes::counts::counter_key(r.company_id, r.id))
            .unwrap()
            .map(|v| crate::encoding::codec::read_u64(&v).unwrap())
    };
    let before = stored(&s);
    held(&s, &r, 1, "ref-1");
    assert_eq!(s.next_number(&r).unwrap(), 2, "taken at once");
    s.derived.apply_deferred().unwrap();
    assert_eq!(
        stored(&s),
        before,
        "not written before its intent is synced"
    );
    s.files.sync().unwrap();
    s.derived.apply_deferred().unwrap();
    assert_eq!(stored(&s), Some(2));
}

/// A held document asked to be queued comes back queued only when its
/// XML reached the file log (phase two's sync passed: its caller was
/// answered, and a power cut took its record); otherwise, and when its
/// build failed, it comes back as a draft, not transmitted unasked.
#[test]
fn a_held_document_comes_back_queued_only_with_its_xml() {
    let dir = tempfile::tempdir().unwrap();
    let (staged, bare, failed) = {
        let (s, r) = issuer(dir.path());
        let queued = |n: u64, reference: &str| {
            let mut new = new_doc(&r, Some(reference));
            new.request = body(n);
            new.queued = true;
            s.number_document(new, true).unwrap()
        };
        let staged = queued(1, "ref-1");
        let bare = queued(2, "ref-2");
        let failed = queued(3, "ref-3");
        assert_eq!(staged.state, state::QUEUED, "its target until built");
        let files = DocumentFiles {
            xml: "<x/>".into(),
            xml_name: "a.xml".into(),
            zip_name: "a.zip".into(),
            zip: ZipFile::Stored(vec![1]),
        };
        s.stage_files(staged.id, staged.company_id, staged.document_type, &files)
            .unwrap();
        s.keep_pending(failed.id).unwrap();
        s.files.sync().unwrap();
        s.close_uncleanly();
        (staged.id, bare.id, failed.id)
    };
    let s = open(dir.path());
    let pending = s.pending_builds().unwrap();
    let state_of = |id: u64| pending.iter().find(|d| d.id == id).unwrap().state;
    assert_eq!(state_of(staged), state::QUEUED);
    assert_eq!(state_of(bare), state::DRAFT);
    assert_eq!(state_of(failed), state::DRAFT);
}
