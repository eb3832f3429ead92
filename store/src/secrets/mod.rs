//! Secrets at rest: held in memory (`secret`) and sealed under the master
//! key on their way to the store (`sealing`).

pub mod sealing;
pub mod secret;
