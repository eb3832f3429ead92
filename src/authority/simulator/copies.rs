//! The documents the simulator accepted, as it received them, for
//! `GetXmlByDocumentKey`. The authority keeps every document for good; the
//! simulator keeps them DEFLATE-compressed within a byte budget and forgets
//! the oldest first once the budget is spent (a forgotten copy answers as an
//! unknown code), so that a long run, or a load test of millions of
//! documents, holds a bounded amount of memory.

use std::collections::{HashMap, VecDeque};
use std::io::{Read, Write};
use std::sync::{Mutex, PoisonError};

use flate2::read::DeflateDecoder;
use flate2::write::DeflateEncoder;
use flate2::Compression;

/// Default budget: about 4,000 signed invoices (~12 KB each, ~4 KB
/// compressed; most of the rest is the certificate and the signature,
/// which do not compress).
pub const DEFAULT_BUDGET_BYTES: usize = 16 * 1024 * 1024;

/// The parties of a kept document: who may ask for it back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parties {
    pub sender: String,
    pub receiver: Option<String>,
}

#[derive(Debug)]
struct Kept {
    deflated: Vec<u8>,
    parties: Parties,
}

#[derive(Debug, Default)]
struct Inner {
    by_code: HashMap<String, Kept>,
    /// Codes, oldest first.
    order: VecDeque<String>,
    bytes: usize,
}

/// Accepted documents by code, within a byte budget.
#[derive(Debug)]
pub struct DocumentCopies {
    budget: usize,
    inner: Mutex<Inner>,
}

impl Default for DocumentCopies {
    fn default() -> Self {
        DocumentCopies::new(DEFAULT_BUDGET_BYTES)
    }
}

impl DocumentCopies {
    pub fn new(budget: usize) -> Self {
        DocumentCopies {
            budget,
            inner: Mutex::new(Inner::default()),
        }
    }

    /// Keeps `xml` (the document as received) under `code`; the oldest
    /// copies go to make room. A document larger than the whole budget is
    /// not kept.
    pub fn keep(&self, code: &str, xml: &[u8], parties: Parties) {
        let mut encoder = DeflateEncoder::new(Vec::new(), Compression::fast());
        if encoder.write_all(xml).is_err() {
            return;
        }
        let Ok(deflated) = encoder.finish() else {
            return;
        };
        let size = deflated.len() + code.len();
        if size > self.budget {
            return;
        }
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(old) = inner.by_code.remove(code) {
            inner.bytes -= old.deflated.len() + code.len();
            inner.order.retain(|c| c != code);
        }
        while inner.bytes + size > self.budget {
            let Some(oldest) = inner.order.pop_front() else {
                break;
            };
            if let Some(gone) = inner.by_code.remove(&oldest) {
                inner.bytes -= gone.deflated.len() + oldest.len();
            }
        }
        inner.bytes += size;
        inner.order.push_back(code.to_string());
        inner
            .by_code
            .insert(code.to_string(), Kept { deflated, parties });
    }

    /// The document kept under `code` and its parties.
    pub fn get(&self, code: &str) -> Option<(Vec<u8>, Parties)> {
        let (deflated, parties) = {
            let inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
            let kept = inner.by_code.get(code)?;
            (kept.deflated.clone(), kept.parties.clone())
        };
        let mut xml = Vec::with_capacity(deflated.len() * 3);
        DeflateDecoder::new(deflated.as_slice())
            .read_to_end(&mut xml)
            .ok()?;
        Some((xml, parties))
    }

    /// Bytes held (compressed copies and their codes).
    pub fn bytes(&self) -> usize {
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .bytes
    }

    pub fn clear(&self) {
        *self.inner.lock().unwrap_or_else(PoisonError::into_inner) = Inner::default();
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn parties() -> Parties {
        Parties {
            sender: "900".into(),
            receiver: Some("800".into()),
        }
    }

    #[test]
    fn copies_come_back_as_kept_and_the_oldest_go_past_the_budget() {
        let doc = |i: usize| format!("<Invoice>{}</Invoice>", "x".repeat(i)).into_bytes();
        let copies = DocumentCopies::new(4096);
        copies.keep("a", &doc(10), parties());
        assert_eq!(copies.get("a"), Some((doc(10), parties())));
        assert_eq!(copies.get("b"), None);
        // Pseudo-random bytes do not compress: each copy takes ~1 KB.
        let noise = |seed: u64, len: usize| -> Vec<u8> {
            let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
            (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect()
        };
        for (i, code) in ["b", "c", "d", "e", "f"].iter().enumerate() {
            copies.keep(code, &noise(i as u64, 1000), parties());
            assert!(copies.bytes() <= 4096, "{}", copies.bytes());
        }
        assert_eq!(copies.get("a"), None, "the oldest went first");
        assert_eq!(copies.get("f").map(|(x, _)| x), Some(noise(4, 1000)));
        // Larger than the whole budget: not kept, nothing else lost.
        copies.keep("huge", &noise(9, 8000), parties());
        assert_eq!(copies.get("huge"), None);
        assert!(copies.get("f").is_some());
    }
}
