//! tests (to be written)
