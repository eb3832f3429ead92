//! The authority as the transmitter's [`Port`]: every call to the tax
//! authority goes through one [`Transmitter`] so that pacing (≤ 10 calls/s,
//! 3 in flight, fair across companies) and the circuit breaker hold for
//! the whole service.
//!
//! A call carries its [`AuthorityTarget`] (the service URL and the
//! company's [`WsSigner`]): companies sign with their own certificates, and
//! test (`sk_test_`) and production (`sk_live_`) keys go to different URLs.
//! The port keeps one [`AuthorityClient`] (one awc connection pool) per URL
//! and certificate, built inside the transmitter's arbiter since awc is not
//! `Send`.

use std::cell::RefCell;
use std::collections::HashMap;
use std::time::Duration;

use actix::{Addr, ArbiterHandle};
use emisor_actors::breaker::BreakerConfig;
use emisor_actors::transmitter::{Port, Transmitter, TransmitterConfig};
use futures_util::future::LocalBoxFuture;

use super::client::{AuthorityClient, AuthorityClientConfig};
use super::shared_limits::SharedLimits;
use super::soap::wssec::WsSigner;
use super::transmission::{
    Acquirer, DocumentXml, InvoiceEvents, NumberingRangeResponse, StatusZip, Transmission,
    TransmitError, UploadResponse,
};
use crate::config::Settings;

/// The transmitter in front of the authority.
pub type AuthorityTransmitter = Transmitter<AuthorityPort>;

/// Where a call goes and whose credentials sign it.
#[derive(Clone, Debug)]
pub struct AuthorityTarget {
    /// The SOAP service URL (`…/WcfDianCustomerServices.svc`).
    pub url: String,
    /// The company's WS-Security credentials.
    pub signer: WsSigner,
}

/// One operation of the authority's web service.
#[derive(Clone, Debug)]
pub enum AuthorityRequest {
    SendBillSync {
        zip_name: String,
        zip: Vec<u8>,
    },
    SendBillAsync {
        zip_name: String,
        zip: Vec<u8>,
    },
    SendTestSetAsync {
        zip_name: String,
        zip: Vec<u8>,
        test_set_id: String,
    },
    /// Status of a document code (CUFE/CUDE/CUDS/CUNE).
    GetStatus {
        track_id: String,
    },
    /// Status of an asynchronous batch.
    GetStatusZip {
        zip_key: String,
    },
    SendNominaSync {
        zip: Vec<u8>,
    },
    SendEventUpdateStatus {
        zip: Vec<u8>,
    },
    GetNumberingRange {
        account_code: String,
        account_code_t: String,
        software_code: String,
    },
    /// The signed XML of an accepted document code.
    GetXmlByDocumentKey {
        track_id: String,
    },
    /// The events registered on an invoice.
    GetStatusEvent {
        cufe: String,
    },
    /// A buyer's registered name and email.
    GetAcquirer {
        identification_type: String,
        identification_number: String,
    },
}

/// What the transmitter is asked to send.
#[derive(Clone, Debug)]
pub struct AuthorityCall {
    pub target: AuthorityTarget,
    pub request: AuthorityRequest,
}

/// The authority's answer, by operation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AuthorityResponse {
    /// SendBillSync, SendNominaSync, SendEventUpdateStatus, GetStatus.
    Verdict(Transmission),
    /// SendBillAsync, SendTestSetAsync.
    Upload(UploadResponse),
    StatusZip(StatusZip),
    NumberingRange(NumberingRangeResponse),
    DocumentXml(DocumentXml),
    Acquirer(Acquirer),
    InvoiceEvents(InvoiceEvents),
}

impl AuthorityResponse {
    /// The `transmission` object of a verdict or of a queued upload.
    pub fn into_transmission(self) -> Option<Transmission> {
        match self {
            AuthorityResponse::Verdict(t) => Some(t),
            AuthorityResponse::Upload(u) => Some(u.to_transmission()),
            AuthorityResponse::StatusZip(_)
            | AuthorityResponse::NumberingRange(_)
            | AuthorityResponse::DocumentXml(_)
            | AuthorityResponse::Acquirer(_)
            | AuthorityResponse::InvoiceEvents(_) => None,
        }
    }
}

/// Clients kept before the cache is emptied (certificate rotations and
/// URL changes would otherwise accumulate).
const MAX_CLIENTS: usize = 256;

/// [`Port`] over [`AuthorityClient`].
#[derive(Debug)]
pub struct AuthorityPort {
    timeout: Duration,
    /// The limits every node shares, on a store several nodes serve from.
    shared: Option<SharedLimits>,
    /// URL → certificate (DER) → client.
    clients: RefCell<HashMap<String, HashMap<Vec<u8>, AuthorityClient>>>,
}

impl AuthorityPort {
    /// `timeout` bounds each exchange (the client's own timeout).
    pub fn new(timeout: Duration) -> Self {
        AuthorityPort {
            timeout,
            shared: None,
            clients: RefCell::new(HashMap::new()),
        }
    }

    /// Each call also holds the limits every node shares.
    pub fn sharing(mut self, shared: Option<SharedLimits>) -> Self {
        self.shared = shared;
        self
    }

    fn client(&self, target: &AuthorityTarget) -> AuthorityClient {
        let mut clients = self.clients.borrow_mut();
        let cert = target.signer.cert_der();
        if let Some(client) = clients
            .get(&target.url)
            .and_then(|by_cert| by_cert.get(cert))
        {
            return client.clone();
        }
        if clients.values().map(HashMap::len).sum::<usize>() >= MAX_CLIENTS {
            clients.clear();
        }
        let client = AuthorityClient::new(
            AuthorityClientConfig::new(target.url.clone()).with_timeout(self.timeout),
            target.signer.clone(),
        )
        .sharing(self.shared.clone());
        clients
            .entry(target.url.clone())
            .or_default()
            .insert(cert.to_vec(), client.clone());
        client
    }
}

impl Port for AuthorityPort {
    type Request = AuthorityCall;
    type Response = AuthorityResponse;
    type Error = TransmitError;

    fn call(
        &self,
        call: AuthorityCall,
    ) -> LocalBoxFuture<'static, Result<AuthorityResponse, TransmitError>> {
        let client = self.client(&call.target);
        Box::pin(async move {
            use AuthorityRequest as R;
            use AuthorityResponse::{NumberingRange, Upload, Verdict};
            Ok(match call.request {
                R::SendBillSync { zip_name, zip } => {
                    Verdict(client.send_bill_sync(&zip_name, &zip).await?)
                }
                R::SendBillAsync { zip_name, zip } => {
                    Upload(client.send_bill_async(&zip_name, &zip).await?)
                }
                R::SendTestSetAsync {
                    zip_name,
                    zip,
                    test_set_id,
                } => Upload(
                    client
                        .send_test_set_async(&zip_name, &zip, &test_set_id)
                        .await?,
                ),
                R::GetStatus { track_id } => Verdict(client.get_status(&track_id).await?),
                R::GetStatusZip { zip_key } => {
                    AuthorityResponse::StatusZip(client.get_status_zip(&zip_key).await?)
                }
                R::SendNominaSync { zip } => Verdict(client.send_nomina_sync(&zip).await?),
                R::SendEventUpdateStatus { zip } => {
                    Verdict(client.send_event_update_status(&zip).await?)
                }
                R::GetNumberingRange {
                    account_code,
                    account_code_t,
                    software_code,
                } => NumberingRange(
                    client
                        .get_numbering_range(&account_code, &account_code_t, &software_code)
                        .await?,
                ),
                R::GetXmlByDocumentKey { track_id } => {
                    AuthorityResponse::DocumentXml(client.get_xml_by_document_key(&track_id).await?)
                }
                R::GetStatusEvent { cufe } => {
                    AuthorityResponse::InvoiceEvents(client.get_status_event(&cufe).await?)
                }
                R::GetAcquirer {
                    identification_type,
                    identification_number,
                } => AuthorityResponse::Acquirer(
                    client
                        .get_acquirer(&identification_type, &identification_number)
                        .await?,
                ),
            })
        })
    }

    fn is_retryable(error: &TransmitError) -> bool {
        error.is_retryable()
    }

    fn timed_out(after: Duration) -> TransmitError {
        TransmitError::Timeout(after)
    }
}

/// Margin added to the 1-second pacing window: a call's arrival at the
/// authority lags its start by a variable transit time (a first call also
/// opens its connection), so starts exactly 1 s apart could land 11 in one
/// second on the authority's side.
pub const RATE_WINDOW_MARGIN: Duration = Duration::from_millis(50);

/// The transmitter settings of `settings` (`[authority]` pacing and
/// timeout, `[resilience]` breaker values and time scale).
pub fn transmitter_config(settings: &Settings) -> TransmitterConfig {
    let r = &settings.resilience;
    let secs = |s: f64| Duration::try_from_secs_f64(s).unwrap_or(Duration::from_secs(60));
    let call_timeout = Duration::from_millis(settings.authority.timeout_ms);
    // The breaker's probe timeout is a safety net (a probe always ends
    // within `call_timeout`); once scaled it must not be shorter than a
    // call, or a second probe would go out beside a slow first one.
    let probe_timeout = Duration::try_from_secs_f64(call_timeout.as_secs_f64() / r.time_scale)
        .unwrap_or(Duration::ZERO)
        .max(BreakerConfig::default().probe_timeout);
    TransmitterConfig {
        max_per_second: settings.authority.max_requests_per_second,
        rate_window: Duration::from_secs(1) + RATE_WINDOW_MARGIN,
        max_in_flight: settings.authority.max_in_flight,
        call_timeout,
        breaker: BreakerConfig {
            failure_threshold: r.breaker_failures,
            success_threshold: r.breaker_successes,
            pauses: r.breaker_pause_s.iter().copied().map(secs).collect(),
            probe_timeout,
            time_scale: r.time_scale,
        },
    }
}

/// Starts the authority transmitter on `arbiter`; its clients time out
/// after `config.call_timeout`, and their calls also hold `shared`, the
/// limits every node shares (on a store several nodes serve from).
pub fn start_transmitter(
    arbiter: &ArbiterHandle,
    config: TransmitterConfig,
    shared: Option<SharedLimits>,
) -> Addr<AuthorityTransmitter> {
    let timeout = config.call_timeout;
    Transmitter::start_in(arbiter, config, move || {
        AuthorityPort::new(timeout).sharing(shared.clone())
    })
}

#[cfg(test)]
mod tests;
