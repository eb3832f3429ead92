//! The engines behind the store traits, one folder each: sled, the
//! embedded one (`sled/`), and PostgreSQL (`postgres/`), opened by
//! `crate::open` for their `Engine` variant.

pub(crate) mod postgres;
pub(crate) mod sled;
