//! The engines behind the store traits, one folder each. sled is the
//! embedded one (`sled/`); a second engine is a sibling folder implementing
//! the same traits, opened by `crate::open` for its `Engine` variant.

pub(crate) mod sled;
