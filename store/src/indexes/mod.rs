//! The indexes and derived values kept beside the records: id sets
//! (`id_sets`), hashed lookups (`hashed_index`), the per-company document
//! index (`doc_index`), the per-(type, state) and monthly counts (`counts`),
//! the changes a group commit writes to them (`set_changes`), and the words
//! of customers' names the console searches (`words`).

pub(crate) mod counts;
pub(crate) mod doc_index;
pub(crate) mod hashed_index;
pub(crate) mod id_sets;
pub(crate) mod set_changes;
pub(crate) mod words;
