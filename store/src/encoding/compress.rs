//! Stored documents compressed with zstd against a dictionary of their own
//! company: a company's signed XMLs (and its API requests) repeat the same
//! issuer, certificate, structure and signature policy, so the first one of
//! each kind is kept as a raw-content dictionary and every later one
//! compresses to its differences (a signed invoice to a fraction of what
//! it takes without the dictionary: docs/performance.md).
//!
//! A dictionary is written once, durably, before the first frame that uses
//! it, and never changed: a stored frame names its dictionary, and that
//! dictionary must decode it forever.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use sled::{Db, Tree};
use zstd_safe::{CCtx, CDict, DCtx, DDict};

use crate::encoding::trees;
use crate::error::{StoreError, StoreResult};
use crate::model::CompanyId;

/// Level of a frame against a dictionary: the dictionary does the work
/// (level 1 compresses as well as 9 here). Level -1 leaves the literals
/// (the new bytes: codes, signature, dates) as they are: a signed invoice
/// takes a little more room and is compressed several times as fast
/// (figures in docs/performance.md).
const DICT_LEVEL: i32 = -1;
/// Level of a frame with no dictionary yet (a company's first of a kind).
const PLAIN_LEVEL: i32 = 3;
/// A text becomes a dictionary only within these sizes: a tiny one
/// teaches little, a huge one costs memory in every cached dictionary.
const DICT_MIN: usize = 512;
const DICT_MAX: usize = 64 * 1024;
/// Prepared dictionaries kept in memory (each a few hundred KB of tables).
const CACHE_LIMIT: usize = 64;

/// What a dictionary is for: one per company and kind.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Kind {
    /// Signed XML of a document type (its code).
    Xml(u8),
    /// API requests.
    Request,
}

/// `company ‖ kind`: company ids stay far below 2^48.
pub(crate) fn dictionary_id(company: CompanyId, kind: Kind) -> u64 {
    let kind = match kind {
        Kind::Xml(t) => u64::from(t),
        Kind::Request => 0xFFFF,
    };
    (company << 16) | kind
}

struct Prepared {
    compress: CDict<'static>,
    decompress: DDict<'static>,
}

thread_local! {
    static CCTX: RefCell<CCtx<'static>> = RefCell::new(CCtx::create());
    static DCTX: RefCell<DCtx<'static>> = RefCell::new(DCtx::create());
}

/// `text` as one zstd frame: against `dict`, or alone at [`PLAIN_LEVEL`].
pub(crate) fn compress_frame(text: &[u8], dict: Option<&CDict<'static>>) -> Result<Vec<u8>, usize> {
    let mut frame = Vec::with_capacity(zstd_safe::compress_bound(text.len()));
    CCTX.with_borrow_mut(|c| match dict {
        Some(dict) => c.compress_using_cdict(&mut frame, text, dict),
        None => c.compress(&mut frame, text, PLAIN_LEVEL),
    })?;
    Ok(frame)
}

/// A frame of [`compress_frame`], decompressed with the same dictionary.
pub(crate) fn decompress_frame(
    frame: &[u8],
    dict: Option<&DDict<'static>>,
) -> Result<Vec<u8>, usize> {
    // A frame always carries its size (zstd's default).
    let size = zstd_safe::get_frame_content_size(frame)
        .ok()
        .flatten()
        .unwrap_or(0);
    let mut out = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    DCTX.with_borrow_mut(|d| match dict {
        Some(dict) => d.decompress_using_ddict(&mut out, frame, dict),
        None => d.decompress(&mut out, frame),
    })?;
    Ok(out)
}

fn zstd_error(what: &str, code: usize) -> StoreError {
    StoreError::Corrupt {
        tree: trees::DICTIONARIES,
        reason: format!("{what}: {}", zstd_safe::get_error_name(code)),
    }
}

pub(crate) struct Dictionaries {
    db: Db,
    tree: Tree,
    cache: Mutex<HashMap<u64, Arc<Prepared>>>,
}

impl Dictionaries {
    pub(crate) fn new(db: Db, tree: Tree) -> Self {
        Dictionaries {
            db,
            tree,
            cache: Mutex::default(),
        }
    }

    /// `text` compressed: against the company's dictionary of `kind` (its
    /// id returned), or alone while it has none, in which case `text`
    /// becomes that dictionary for the next ones.
    pub(crate) fn compress(
        &self,
        company: CompanyId,
        kind: Kind,
        text: &[u8],
    ) -> StoreResult<(Option<u64>, Vec<u8>)> {
        let id = dictionary_id(company, kind);
        let dict = self.prepared(id)?;
        let frame = compress_frame(text, dict.as_ref().map(|d| &d.compress))
            .map_err(|e| zstd_error("compressing", e))?;
        if dict.is_some() {
            return Ok((Some(id), frame));
        }
        if (DICT_MIN..=DICT_MAX).contains(&text.len()) {
            // First writer wins; the dictionary is on disk before any frame
            // that needs it can be written.
            let won = self
                .tree
                .compare_and_swap(id.to_be_bytes(), None as Option<&[u8]>, Some(text))?
                .is_ok();
            if won {
                // Durable against a power cut too: the file log, synced
                // with every group commit, soon holds frames that need it.
                self.db.flush_durable()?;
            }
        }
        Ok((None, frame))
    }

    /// The text of a frame written by [`compress`](Self::compress).
    pub(crate) fn decompress(&self, dictionary: Option<u64>, frame: &[u8]) -> StoreResult<Vec<u8>> {
        let dict = match dictionary {
            None => None,
            Some(id) => Some(self.prepared(id)?.ok_or(StoreError::Corrupt {
                tree: trees::DICTIONARIES,
                reason: format!("dictionary {id:#x} is missing"),
            })?),
        };
        decompress_frame(frame, dict.as_ref().map(|d| &d.decompress))
            .map_err(|e| zstd_error("decompressing", e))
    }

    fn prepared(&self, id: u64) -> StoreResult<Option<Arc<Prepared>>> {
        let lock = || self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(p) = lock().get(&id) {
            return Ok(Some(p.clone()));
        }
        let Some(raw) = self.tree.get(id.to_be_bytes())? else {
            return Ok(None);
        };
        let prepared = Arc::new(Prepared {
            compress: CDict::try_create(&raw, DICT_LEVEL)
                .ok_or_else(|| zstd_error("loading a dictionary", 0))?,
            decompress: DDict::try_create(&raw)
                .ok_or_else(|| zstd_error("loading a dictionary", 0))?,
        });
        let mut cache = lock();
        if cache.len() >= CACHE_LIMIT {
            // Companies are few; when they are not, any one may go.
            if let Some(k) = cache.keys().next().copied() {
                cache.remove(&k);
            }
        }
        cache.insert(id, prepared.clone());
        Ok(Some(prepared))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dictionaries() -> (tempfile::TempDir, Dictionaries) {
        let dir = tempfile::tempdir().unwrap();
        let db = sled::open(dir.path()).unwrap();
        let tree = db.open_tree(trees::DICTIONARIES).unwrap();
        (dir, Dictionaries::new(db, tree))
    }

    /// Documents that share most of their text (as a company's do) but
    /// little within one: what a dictionary is for.
    fn invoice(n: u32) -> Vec<u8> {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let lines: String = (0..40)
            .map(|i| {
                x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                format!("<cac:InvoiceLine><cbc:ID>{i}</cbc:ID><cbc:Note>{x:016x} de {n}</cbc:Note></cac:InvoiceLine>")
            })
            .collect();
        format!("<Invoice><cbc:ID>SETP{n}</cbc:ID>{lines}</Invoice>").into_bytes()
    }

    #[test]
    fn the_first_text_of_a_kind_becomes_the_dictionary_of_the_next() {
        let (_dir, d) = dictionaries();
        let (first_dict, first) = d.compress(7, Kind::Xml(1), &invoice(1)).unwrap();
        assert_eq!(first_dict, None);
        let (second_dict, second) = d.compress(7, Kind::Xml(1), &invoice(2)).unwrap();
        assert_eq!(second_dict, Some(dictionary_id(7, Kind::Xml(1))));
        assert!(
            second.len() * 4 < first.len(),
            "{} vs {}",
            second.len(),
            first.len()
        );
        assert_eq!(d.decompress(first_dict, &first).unwrap(), invoice(1));
        assert_eq!(d.decompress(second_dict, &second).unwrap(), invoice(2));
        // Another company or kind has a dictionary of its own.
        assert_eq!(d.compress(8, Kind::Xml(1), &invoice(3)).unwrap().0, None);
        assert_eq!(d.compress(7, Kind::Request, &invoice(3)).unwrap().0, None);
    }

    #[test]
    fn a_frame_decodes_after_a_reopen_and_a_missing_dictionary_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let stored = {
            let db = sled::open(dir.path()).unwrap();
            let d = Dictionaries::new(db.clone(), db.open_tree(trees::DICTIONARIES).unwrap());
            d.compress(1, Kind::Request, &invoice(1)).unwrap();
            d.compress(1, Kind::Request, &invoice(2)).unwrap()
        };
        let db = crate::tests::db::open(dir.path());
        let d = Dictionaries::new(db.clone(), db.open_tree(trees::DICTIONARIES).unwrap());
        assert_eq!(d.decompress(stored.0, &stored.1).unwrap(), invoice(2));
        let err = d.decompress(Some(dictionary_id(2, Kind::Request)), &stored.1);
        assert!(matches!(err, Err(StoreError::Corrupt { .. })), "{err:?}");
        assert!(d.decompress(None, b"not zstd").is_err());
    }
}
