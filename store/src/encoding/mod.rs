//! How values are stored: the versioned value format (`codec`), zstd frames
//! and the per-company dictionaries (`compress`), a document record's value
//! with its parts (`record_parts`), and the names of sled's trees (`trees`).

pub mod codec;
pub(crate) mod compress;
pub(crate) mod record_parts;
pub mod trees;
