//! Documents found by code (CUFE, CUDE…) and by a company's external
//! reference, through two hashed indexes (`hashed_index`): a bounded
//! number of sled entries however many documents there are. A candidate
//! counts only once its record is read and holds the key.
//!
//! Both indexes are written before what makes them true (the code before
//! the built record, in `complete_staged`) or repaired after it (the
//! reference, see `repair`), so a stored record is always found; an entry
//! whose record never landed is a candidate that fails the check.
//!
//! Data dirs from before these indexes had one sled entry per document in
//! [`trees::LEGACY_DOCUMENTS_BY_CODE`] and [`trees::LEGACY_DOCUMENT_REFS`]:
//! the first open builds the hashed ones from every record and drops those.

use serde::Deserialize;

use crate::encoding::codec::{decode, id_key, scoped_text_key};
use crate::encoding::trees;
use crate::engine::sled::SledStore;
use crate::error::StoreResult;
use crate::model::{CompanyId, DocumentRecord};

/// Set in `META` once the hashed indexes hold every record's keys.
pub(crate) const HASHED_INDEXES_KEY: &[u8] = b"hashed_code_reference_indexes";

/// The keys of a record the indexes need (read without decoding all of it).
#[derive(Deserialize)]
struct Keys {
    id: u64,
    company_id: CompanyId,
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    external_reference: Option<String>,
}

impl Keys {
    fn reference_key(&self) -> Option<Vec<u8>> {
        let r = self.external_reference.as_deref()?;
        Some(scoped_text_key(self.company_id, r))
    }

    fn code(&self) -> Option<&str> {
        self.code.as_deref().filter(|c| !c.is_empty())
    }
}

impl SledStore {
    fn keys_of(&self, id: u64) -> StoreResult<Option<Keys>> {
        self.documents
            .get(id_key(id))?
            .map(|v| decode(trees::DOCUMENTS, &v))
            .transpose()
    }

    /// Indexes a document's code; before its record is written, so a
    /// stored code is always in the index.
    pub(crate) fn index_code_unflushed(&self, id: u64, code: Option<&str>) -> StoreResult<()> {
        if let Some(code) = code.filter(|c| !c.is_empty()) {
            self.documents_by_code.add(code.as_bytes(), id)?;
        }
        Ok(())
    }

    /// A record's code, number and reference indexed (imports:
    /// `write_documents`).
    pub(crate) fn index_lookup_keys(&self, doc: &DocumentRecord) -> StoreResult<()> {
        self.index_code_unflushed(doc.id, doc.code.as_deref())?;
        self.index_number_unflushed(doc)?;
        if let Some(r) = doc.external_reference.as_deref() {
            self.index_reference(doc.company_id, r, doc.id)?;
        }
        Ok(())
    }

    /// The document whose code this is (the last indexed, should two hold
    /// it, as the old index kept the last written).
    pub(crate) fn find_by_code(&self, code: &str) -> StoreResult<Option<u64>> {
        for id in self
            .documents_by_code
            .candidates(code.as_bytes())?
            .into_iter()
            .rev()
        {
            if self.keys_of(id)?.is_some_and(|k| k.code() == Some(code)) {
                return Ok(Some(id));
            }
        }
        Ok(None)
    }

    /// Indexes a new document's reference (one pass: see `HashedIndex::add`).
    pub(crate) fn add_reference(
        &self,
        company: CompanyId,
        reference: &str,
        id: u64,
    ) -> StoreResult<()> {
        self.document_refs
            .add(&scoped_text_key(company, reference), id)
    }

    /// Indexes a document's reference; true when it was not indexed yet.
    pub(crate) fn index_reference(
        &self,
        company: CompanyId,
        reference: &str,
        id: u64,
    ) -> StoreResult<bool> {
        self.document_refs
            .insert(&scoped_text_key(company, reference), id)
    }

    /// The document holding `reference` in `company` (the first, should two
    /// hold it), half built or not: the record is the truth, a hash match
    /// alone never is.
    pub(crate) fn find_by_reference(
        &self,
        company: CompanyId,
        reference: &str,
    ) -> StoreResult<Option<u64>> {
        // A document between its two phases holds its reference too.
        if let Some(id) = self.intents.holder(company, reference) {
            return Ok(Some(id));
        }
        let key = scoped_text_key(company, reference);
        for id in self.document_refs.candidates(&key)? {
            if self
                .keys_of(id)?
                .is_some_and(|k| k.reference_key().as_deref() == Some(&key[..]))
            {
                return Ok(Some(id));
            }
        }
        Ok(None)
    }

    /// Once per data dir: the per-document trees the hashed indexes replace
    /// dropped, and both built from every record (the records are the
    /// truth: the old trees are not read). Until the mark is written an
    /// interrupted build is started over.
    pub(crate) fn build_hashed_indexes_once(&self) -> StoreResult<Option<u64>> {
        if self.meta.get(HASHED_INDEXES_KEY)?.is_some() {
            return Ok(None);
        }
        // Each old tree is emptied before it is dropped: sled's drop holds
        // every page it frees until it returns, a clear lets them go as it
        // goes (an upgrade's peak about halved: docs/performance.md).
        let names = self.db.tree_names();
        for legacy in [trees::LEGACY_DOCUMENTS_BY_CODE, trees::LEGACY_DOCUMENT_REFS] {
            if names.iter().any(|n| n == legacy.as_bytes()) {
                self.db.open_tree(legacy)?.clear()?;
                self.db.drop_tree(legacy)?;
            }
        }
        let (mut codes, mut refs) = (
            self.documents_by_code.rebuild(),
            self.document_refs.rebuild(),
        );
        let mut documents = 0;
        for item in self.documents.iter() {
            let (_, v) = item?;
            let keys: Keys = decode(trees::DOCUMENTS, &v)?;
            if let Some(code) = keys.code() {
                codes.add(code.as_bytes(), keys.id);
            }
            if let Some(key) = keys.reference_key() {
                refs.add(&key, keys.id);
            }
            documents += 1;
        }
        codes.write()?;
        refs.write()?;
        self.meta.insert(HASHED_INDEXES_KEY, &[1u8])?;
        self.flush_now()?;
        Ok(Some(documents))
    }
}

#[cfg(test)]
mod tests {
    use crate::encoding::codec::{id_key, scoped_text_key};
    use crate::tests::{commit_built, company, new_doc, open, resolution};
    use crate::*;

    use super::HASHED_INDEXES_KEY;

    /// Phase two as issuing runs it: the record built with `code`.
    async fn built(s: &SledStore, mut d: DocumentRecord, code: &str) -> DocumentRecord {
        d.code = Some(code.into());
        commit_built(s, &mut d).await;
        d
    }

    #[test]
    fn a_reference_colliding_in_full_is_not_refused() {
        // Same bucket and fingerprint for company 1 (found by search).
        let (a, b) = ("ref-129399", "ref-137405");
        let dir = tempfile::tempdir().unwrap();
        let s = open(dir.path());
        let c = s.create_company(company()).unwrap();
        assert_eq!(c.id, 1);
        let r = s.add_resolution(c.id, resolution(1, 100)).unwrap();
        let first = s.create_document(new_doc(&r, Some(a))).unwrap();
        assert_eq!(
            s.document_refs
                .candidates(&scoped_text_key(c.id, b))
                .unwrap(),
            vec![first.id],
            "the two references collide in full"
        );
        // The first is still half built: its record holds the reference.
        let second = s.create_document(new_doc(&r, Some(b))).unwrap();
        assert_eq!(s.document_by_reference(c.id, a).unwrap(), Some(first.id));
        assert_eq!(s.document_by_reference(c.id, b).unwrap(), Some(second.id));
        for (reference, holder) in [(a, first.id), (b, second.id)] {
            match s.create_document(new_doc(&r, Some(reference))) {
                Err(StoreError::DuplicateReference { id }) => assert_eq!(id, holder),
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(s.document_by_reference(c.id, "ref-x").unwrap(), None);
        // Another company's reference is its own.
        let other = s
            .create_company(NewCompany {
                nit: "900000002".into(),
                ..company()
            })
            .unwrap();
        assert_eq!(s.document_by_reference(other.id, a).unwrap(), None);
    }

    #[tokio::test]
    async fn a_code_colliding_in_full_finds_its_own_document() {
        // Same bucket and fingerprint (found by search).
        let (a, b) = ("code-8365", "code-50710");
        let dir = tempfile::tempdir().unwrap();
        let s = open(dir.path());
        let c = s.create_company(company()).unwrap();
        let r = s.add_resolution(c.id, resolution(1, 100)).unwrap();
        let first = built(&s, s.create_document(new_doc(&r, None)).unwrap(), a).await;
        let second = built(&s, s.create_document(new_doc(&r, None)).unwrap(), b).await;
        assert_eq!(
            s.documents_by_code.candidates(b.as_bytes()).unwrap(),
            vec![first.id, second.id],
            "the two codes collide in full"
        );
        assert_eq!(s.document_by_code(a).unwrap(), Some(first.id));
        assert_eq!(s.document_by_code(b).unwrap(), Some(second.id));
        assert_eq!(s.document_by_code("code-0").unwrap(), None);
    }

    #[tokio::test]
    async fn a_data_dir_with_the_twelve_byte_hashed_indexes_is_upgraded() {
        let dir = tempfile::tempdir().unwrap();
        let (company_id, a) = {
            let s = open(dir.path());
            let co = s.create_company(company()).unwrap();
            let r = s.add_resolution(co.id, resolution(1, 100)).unwrap();
            let a = s.create_document(new_doc(&r, Some("ref-a"))).unwrap();
            let a = built(&s, a, "code-a").await;
            // What a data dir from before compact buckets holds: entries under
            // the old names (the mark set), nothing under the new ones.
            for old in [
                trees::HASHED_V1_DOCUMENT_REFS,
                trees::HASHED_V1_DOCUMENTS_BY_CODE,
            ] {
                let mut entry = vec![0u8; 4];
                entry.extend_from_slice(&id_key(a.id));
                s.db.open_tree(old).unwrap().insert([0, 1], entry).unwrap();
            }
            s.documents_by_code.clear().unwrap();
            s.document_refs.clear().unwrap();
            assert!(s.meta.get(HASHED_INDEXES_KEY).unwrap().is_some());
            s.close().unwrap();
            (co.id, a.id)
        };
        let s = open(dir.path());
        assert_eq!(s.document_by_code("code-a").unwrap(), Some(a));
        assert_eq!(
            s.document_by_reference(company_id, "ref-a").unwrap(),
            Some(a)
        );
        let names: Vec<Vec<u8>> = s.db.tree_names().iter().map(|n| n.to_vec()).collect();
        for old in [
            trees::HASHED_V1_DOCUMENT_REFS,
            trees::HASHED_V1_DOCUMENTS_BY_CODE,
        ] {
            assert!(!names.contains(&old.as_bytes().to_vec()), "{old} dropped");
        }
    }

    #[tokio::test]
    async fn a_data_dir_with_the_old_indexes_is_upgraded() {
        let dir = tempfile::tempdir().unwrap();
        let (company_id, a, b, c) = {
            let s = open(dir.path());
            let co = s.create_company(company()).unwrap();
            let r = s.add_resolution(co.id, resolution(1, 100)).unwrap();
            let a = s.create_document(new_doc(&r, Some("ref-a"))).unwrap();
            let a = built(&s, a, "code-a").await;
            let b = s.create_document(new_doc(&r, None)).unwrap();
            // Built before the code index existed: in no index at all.
            let b = built(&s, b, "code-b").await;
            let c = s.create_document(new_doc(&r, Some("ref-c"))).unwrap();
            // What an older build left: one entry per document in the old
            // trees, nothing in the hashed ones, no mark.
            let old_refs = s.db.open_tree(trees::LEGACY_DOCUMENT_REFS).unwrap();
            old_refs
                .insert(scoped_text_key(co.id, "ref-a"), &id_key(a.id))
                .unwrap();
            old_refs
                .insert(scoped_text_key(co.id, "ref-c"), &id_key(c.id))
                .unwrap();
            let old_codes = s.db.open_tree(trees::LEGACY_DOCUMENTS_BY_CODE).unwrap();
            old_codes.insert("code-a", &id_key(a.id)).unwrap();
            s.documents_by_code.clear().unwrap();
            s.document_refs.clear().unwrap();
            s.meta.remove(HASHED_INDEXES_KEY).unwrap();
            assert_eq!(s.document_by_code("code-a").unwrap(), None);
            s.close().unwrap();
            (co.id, a.id, b.id, c.id)
        };
        let s = open(dir.path());
        assert_eq!(s.document_by_code("code-a").unwrap(), Some(a));
        assert_eq!(s.document_by_code("code-b").unwrap(), Some(b));
        assert_eq!(
            s.document_by_reference(company_id, "ref-a").unwrap(),
            Some(a)
        );
        assert_eq!(
            s.document_by_reference(company_id, "ref-c").unwrap(),
            Some(c)
        );
        let r = s.resolutions(company_id).unwrap().remove(0);
        assert!(matches!(
            s.create_document(new_doc(&r, Some("ref-c"))),
            Err(StoreError::DuplicateReference { id }) if id == c
        ));
        let names: Vec<Vec<u8>> = s.db.tree_names().iter().map(|n| n.to_vec()).collect();
        for legacy in [trees::LEGACY_DOCUMENT_REFS, trees::LEGACY_DOCUMENTS_BY_CODE] {
            assert!(
                !names.contains(&legacy.as_bytes().to_vec()),
                "{legacy} dropped"
            );
        }
        assert!(s.meta.get(HASHED_INDEXES_KEY).unwrap().is_some());
    }
}
