//! Keeping the secrets at rest to the service: file modes of the data dir
//! (`permissions`) and the master key the store seals its secrets under
//! (`master_key`).

pub mod master_key;
pub mod permissions;
