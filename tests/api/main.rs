#![allow(clippy::unwrap_used, clippy::expect_used)]

//! Integration tests: the real server, over HTTP.

mod support;

mod admin;
mod async_flow;
mod auth;
mod backup;
mod clean_close;
mod clientes;
mod config;
mod crash;
mod documentos_soporte;
mod email;
mod errors;
mod event_rules;
mod eventos;
mod export;
mod facturacion;
mod facturacion_es;
mod hostile;
mod hostile_tenancy;
mod idempotency;
mod issuers;
mod lists;
mod nomina;
mod numbering;
mod openapi;
mod operator;
mod ops;
mod pdf;
mod pos;
mod power_cut;
mod rate_limit;
mod registry;
mod resilience;
mod restart;
mod same_day;
mod secrets;
mod shutdown;
mod simulator;
mod test_set;
mod uploads;
mod webhooks;
mod ws_rooms;
mod zeep_client;
