//! Several nodes on one PostgreSQL act as one service (docs/operations.md,
//! "Several nodes"): three `emisor serve` processes share a database, a
//! client spreads requests over them, and what the spec promises of one
//! service holds across them. PostgreSQL only (`support::nodes`).

mod adoption;
mod authority;
mod families;
mod once;
mod rate_limit;
mod references;
