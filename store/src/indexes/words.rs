//! The words of a customer's name as the console's search matches them
//! (`engine/sled/search.rs`): case and accents folded (`Peña` is `pena`,
//! `ÉXITO` is `exito`), split at anything that is not a letter or digit.
//! A customer is kept under each word of its name, in order, so a word's
//! prefix is one range of the tree: `company ‖ word ‖ 0 ‖ customer id`.

use unicode_normalization::char::is_combining_mark;
use unicode_normalization::UnicodeNormalization;

use crate::model::CompanyId;

/// Longest word kept; a longer one is kept (and matched) by this prefix.
const MAX_WORD: usize = 64;

/// Words a name is kept under at most (the first ones).
const MAX_WORDS: usize = 16;

/// `text`'s words, folded: lower case, accents dropped, at most
/// [`MAX_WORD`] bytes each.
pub(crate) fn words(text: &str) -> Vec<String> {
    let folded: String = text
        .nfd()
        .filter(|c| !is_combining_mark(*c))
        .flat_map(char::to_lowercase)
        .collect();
    folded
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| {
            let mut end = w.len().min(MAX_WORD);
            while !w.is_char_boundary(end) {
                end -= 1;
            }
            w[..end].to_string()
        })
        .collect()
}

/// The distinct words a customer named `name` is kept under.
pub(crate) fn name_words(name: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in words(name) {
        if !out.contains(&w) {
            out.push(w);
        }
        if out.len() == MAX_WORDS {
            break;
        }
    }
    out
}

/// `company ‖ prefix`: the range of the words starting with `prefix`.
pub(crate) fn prefix_key(company: CompanyId, prefix: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(8 + prefix.len());
    k.extend_from_slice(&company.to_be_bytes());
    k.extend_from_slice(prefix.as_bytes());
    k
}

/// `company ‖ word ‖ 0 ‖ customer`.
pub(crate) fn word_key(company: CompanyId, word: &str, customer: u64) -> Vec<u8> {
    let mut k = prefix_key(company, word);
    k.push(0);
    k.extend_from_slice(&customer.to_be_bytes());
    k
}

/// The customer id at the end of a [`word_key`].
pub(crate) fn customer_of(key: &[u8]) -> Option<u64> {
    let at = key.len().checked_sub(8)?;
    crate::encoding::codec::read_u64(&key[at..])
}

/// Whether every word of `query` starts a word of `name`.
pub(crate) fn name_matches(name: &str, query: &[String]) -> bool {
    let name = words(name);
    query
        .iter()
        .all(|q| name.iter().any(|w| w.starts_with(q.as_str())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_and_accents_are_folded_and_punctuation_splits() {
        assert_eq!(
            words("Panadería PEÑA-Ñoño S.A.S."),
            ["panaderia", "pena", "nono", "s", "a", "s"]
        );
        assert_eq!(name_words("Éxito éxito ÉXITO"), ["exito"]);
        assert!(name_matches(
            "Comercializadora Andina Ltda",
            &words("and COM")
        ));
        assert!(!name_matches(
            "Comercializadora Andina Ltda",
            &words("andes")
        ));
    }

    #[test]
    fn a_word_key_is_found_by_its_prefixes_and_gives_its_customer_back() {
        let k = word_key(3, "andina", 77);
        assert!(k.starts_with(&prefix_key(3, "and")));
        assert!(!k.starts_with(&prefix_key(4, "and")));
        assert_eq!(customer_of(&k), Some(77));
        let long = "x".repeat(100);
        assert_eq!(words(&long)[0].len(), MAX_WORD);
    }
}
