#![allow(clippy::unwrap_used, clippy::expect_used)]

//! Integration tests: the real server, over HTTP.

mod helpers;

mod admin;
mod auth;
mod clientes;
mod config;
mod errors;
mod facturacion;
mod openapi;
mod ops;
mod rate_limit;
mod restart;
mod simulator;
mod async_flow;
mod flow_helpers;
mod resilience;
mod idempotency;
