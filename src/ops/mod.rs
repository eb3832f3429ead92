//! Operations: health, readiness, metrics and the per-request observation.

pub mod health;
pub mod observe;
