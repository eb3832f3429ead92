//! emisor: issues Colombian electronic tax documents and transmits them to the
//! tax authority. The library holds everything; `main.rs` only calls `cli::run`.
//!
//! Layout: `api` (customer REST API under /v1/api, one folder per route
//! family), `admin` (the /admin API and CLI), `ops` (health, metrics,
//! request observation), `http` (the floor under them: state, auth,
//! envelope, errors, extractors), `provisioning` (companies and
//! credentials), `issuing` (the one issuing path), `engine` (pure document
//! code: UBL, codes, XAdES, ZIP), `render` (a document's PDF, pure),
//! `operator` (the operator's events and the companies' warnings), `fanout`
//! (the hub's events and key changes told to every node on one database), `backup`
//! (backups, their verification and restore),
//! `authority` (SOAP client and simulator), `metrics` (Prometheus names and
//! recorder), `security` (file modes and the master key that seals the
//! store's secrets), `startup` (wiring), `fixtures` (sample data for the
//! tests and benchmarks only).
//! Actors live in the `emisor-actors` crate, persistence in `emisor-store`.

// No index or slice that input decides may panic: `get` and iterators, or
// an `allow` that says why the index is in range (tests may index).
#![deny(clippy::indexing_slicing)]

pub mod admin;
pub mod api;
pub mod authority;
pub mod backup;
pub mod cli;
pub mod clock;
pub mod config;
pub mod console;
pub mod engine;
pub mod fanout;
pub mod fixtures;
pub mod http;
pub mod issuing;
pub mod memory;
pub mod metrics;
pub mod openapi;
pub mod operator;
pub mod ops;
pub mod provisioning;
pub mod render;
pub mod security;
pub mod startup;
#[cfg(test)]
pub(crate) mod testing;

// The binary's allocator (`main.rs`): a dependency of the package that the
// library itself does not call, named here so that `unused_crate_dependencies`
// stays meaningful for the library.
use mimalloc as _;
