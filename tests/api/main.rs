#![allow(clippy::unwrap_used, clippy::expect_used)]

//! Integration tests: the real server, over HTTP.

mod helpers;

mod admin;
mod async_flow;
mod auth;
mod clientes;
mod config;
mod crash;
mod errors;
mod external_sim;
mod facturacion;
mod flow_helpers;
mod hostile;
mod idempotency;
mod issuers;
mod nomina;
mod numbering;
mod openapi;
mod ops;
mod pdf;
mod rate_limit;
mod resilience;
mod restart;
mod secrets;
mod shutdown;
mod simulator;
mod test_set;
mod webhooks;
mod ws_rooms;
mod zeep_client;
