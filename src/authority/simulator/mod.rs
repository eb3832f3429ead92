//! The authority simulator (to be written).
