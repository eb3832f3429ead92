//! The tax authority side: the SOAP 1.2 client with WS-Security, the parsing
//! of the authority's answers, and an in-process simulator of the authority.
//!
//! * [`operation`] names the web-service operations and their action URIs.
//! * [`soap`] builds signed requests and parses responses (pure code).
//! * [`transmission`] is what a transmission attempt yields: a
//!   [`Transmission`] or a [`TransmitError`] that says whether to retry.
//! * [`client`] sends requests over HTTP with `awc`.
//! * [`simulator`] is an actix-web server that speaks the authority's SOAP
//!   interface, for tests, the demo and `emisor tax-sim`.

pub mod client;
pub mod operation;
pub mod port;
pub mod shared_limits;
pub mod simulator;
pub mod soap;
pub mod transmission;

pub use client::{AuthorityClient, AuthorityClientConfig};
pub use operation::Operation;
pub use soap::wssec::WsSigner;
pub use transmission::{
    Acquirer, InvoiceEvents, NumberRange, NumberingRangeResponse, RegisteredEvent, StatusZip,
    Transmission, TransmitError, UploadResponse,
};
