//! An in-process simulator of the authority (decisions.md §1–2): the real
//! SOAP 1.2 interface with WS-Security, the authority's checks on received
//! documents, and a control surface under `/__sim/` for tests and demos.
//!
//! * [`start`] binds and runs it; [`SimOptions`] tunes it.
//! * [`SimRegistry`] holds the issuers it knows, filled over HTTP with
//!   `PUT /__sim/issuers` (demo companies register themselves).
//! * [`DocumentChecks`] are the cryptographic checks of a document;
//!   [`EngineChecks`] (the default) uses the engine's XAdES and codes.
//! * [`test_set`] holds the testing environment's test sets and their
//!   numbering rules; [`contingency`] the declared contingency periods
//!   (`/__sim/contingency`, rule CTG01).

pub mod app_response;
pub mod checks;
pub mod clock;
pub mod conformance;
pub mod contingency;
pub mod control;
pub mod copies;
pub mod document;
pub mod event_rules;
pub mod events;
pub mod intake;
pub mod package;
pub mod reply;
pub mod same_day;
pub mod schema;
pub mod server;
pub mod state;
pub mod test_set;
pub mod wsdl;

#[cfg(test)]
mod tests;

#[cfg(test)]
mod schema_tests;

#[cfg(test)]
mod conformance_tests;

#[cfg(test)]
mod event_conformance_tests;

pub use checks::{DocumentChecks, EngineChecks};
pub use server::SERVICE_PATH;
pub use state::{
    AcquirerRecord, IssuerRecord, Mode, ModeSettings, SimRegistry, SoftwareRecord, Stats,
};

use actix_web::dev::ServerHandle;
use actix_web::{web, App, HttpServer};
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// How the simulator behaves.
#[derive(Clone)]
pub struct SimOptions {
    /// Time before a `GetStatusZip` of an asynchronous batch has results.
    pub async_delay: Duration,
    /// actix-web workers.
    pub workers: usize,
    /// Largest SOAP request accepted.
    pub max_body_bytes: usize,
    /// Signature and code checks of received documents.
    pub checks: Arc<dyn DocumentChecks>,
    /// Serves the test controls that reach beyond one document: its clock
    /// (`/__sim/clock`) and the issuers' list with PINs and keys
    /// (`GET /__sim/issuers`). A separate `emisor tax-sim` always does; the
    /// in-process one only under `[testing] shared_clock`.
    pub test_controls: bool,
    /// The Colombian day of a reception, by which the send-day rule of
    /// annex 1.9 judges a document's date ([`same_day`]): its clock's
    /// ([`clock_today`]), or a fixed day for tests whose documents carry
    /// fixed dates.
    pub today: fn() -> chrono::NaiveDate,
    /// Bytes of accepted documents kept for `GetXmlByDocumentKey`
    /// (compressed; the oldest are forgotten first).
    pub kept_documents_bytes: usize,
}

/// Today in Colombia on the simulator's clock (`crate::clock::simulator`).
pub fn clock_today() -> chrono::NaiveDate {
    crate::clock::simulator::colombia_now().date_naive()
}

impl Default for SimOptions {
    fn default() -> Self {
        SimOptions {
            async_delay: Duration::from_secs(2),
            workers: 2,
            max_body_bytes: 32 * 1024 * 1024,
            checks: Arc::new(EngineChecks),
            test_controls: true,
            today: clock_today,
            kept_documents_bytes: copies::DEFAULT_BUDGET_BYTES,
        }
    }
}

impl std::fmt::Debug for SimOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimOptions")
            .field("async_delay", &self.async_delay)
            .field("workers", &self.workers)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("test_controls", &self.test_controls)
            .field("kept_documents_bytes", &self.kept_documents_bytes)
            .finish_non_exhaustive()
    }
}

/// The SOAP service URL of a simulator listening on `addr`.
pub fn service_url(addr: SocketAddr) -> String {
    format!("http://{addr}{SERVICE_PATH}")
}

/// Binds `bind` (`127.0.0.1:0` picks a free port) and runs the simulator
/// on the current Tokio runtime. Returns the bound address and a handle to
/// stop it (`handle.stop(true).await`).
pub async fn start(
    bind: &str,
    registry: Arc<SimRegistry>,
    opts: SimOptions,
) -> io::Result<(SocketAddr, ServerHandle)> {
    let max_body = opts.max_body_bytes;
    let workers = opts.workers.max(1);
    let shared = web::Data::new(server::SimShared {
        registry,
        state: state::SimState::with_copy_budget(opts.kept_documents_bytes),
        opts,
        contingency: contingency::ContingencyPeriods::default(),
    });
    let server = HttpServer::new(move || {
        App::new()
            .app_data(shared.clone())
            .app_data(web::PayloadConfig::new(max_body))
            .app_data(web::JsonConfig::default().limit(1024 * 1024))
            .configure(server::routes)
    })
    .workers(workers)
    .disable_signals()
    .shutdown_timeout(1)
    .bind(bind)?;
    let addr = server
        .addrs()
        .first()
        .copied()
        .ok_or_else(|| io::Error::other("the simulator bound no address"))?;
    let server = server.run();
    let handle = server.handle();
    tokio::spawn(server);
    tracing::info!(%addr, "tax authority simulator listening");
    Ok((addr, handle))
}
