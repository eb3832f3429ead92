//! HTTP client of the authority's SOAP service (awc).
//!
//! `awc::Client` is not `Send`: build one [`AuthorityClient`] per actix
//! arbiter (or per task) from the `Send` [`AuthorityClientConfig`] and
//! [`WsSigner`], and drive its futures on the actix runtime.

use super::shared_limits::SharedLimits;
use super::soap::content_type;
use super::soap::envelope::Request;
use super::soap::response::{self, ResponseError};
use super::soap::wssec::WsSigner;
use super::transmission::{
    Acquirer, DocumentXml, InvoiceEvents, NumberingRangeResponse, StatusZip, Transmission,
    TransmitError, UploadResponse,
};
use awc::error::SendRequestError;
use awc::http::header::CONTENT_TYPE;
use chrono::Utc;
use std::time::Duration;

/// Where and how to reach the authority.
#[derive(Debug, Clone)]
pub struct AuthorityClientConfig {
    /// Service URL, also written in `wsa:To`
    /// (`…/WcfDianCustomerServices.svc`).
    pub url: String,
    /// Whole-exchange timeout (connect, send, read the answer).
    pub timeout: Duration,
    /// Largest answer read (a `DianResponse` carries a signed
    /// ApplicationResponse; batches carry up to 50).
    pub max_response_bytes: usize,
}

impl AuthorityClientConfig {
    pub fn new(url: impl Into<String>) -> Self {
        AuthorityClientConfig {
            url: url.into(),
            timeout: Duration::from_secs(30),
            max_response_bytes: 32 * 1024 * 1024,
        }
    }

    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
}

/// One method per operation; every method signs a fresh envelope.
#[derive(Clone)]
pub struct AuthorityClient {
    http: awc::Client,
    config: AuthorityClientConfig,
    signer: WsSigner,
    /// The limits every node shares, held from a signed envelope's send to
    /// its answer (on a store several nodes serve from).
    shared: Option<SharedLimits>,
}

impl std::fmt::Debug for AuthorityClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthorityClient")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// How many of its timeouts an abandoned call's shared slot stays taken:
/// the authority's work on a request its caller gave up on has no bound a
/// client can know; three timeouts cover a slow authority without holding
/// the installation's slots for long.
const ABANDONED_HOLD: u32 = 3;

impl AuthorityClient {
    pub fn new(config: AuthorityClientConfig, signer: WsSigner) -> Self {
        let http = awc::Client::builder()
            .disable_redirects()
            .timeout(config.timeout)
            .finish();
        AuthorityClient {
            http,
            config,
            signer,
            shared: None,
        }
    }

    /// Each exchange also holds `shared`: taken once the envelope is
    /// signed, so that the pacing counts the sends as the authority sees
    /// them arrive.
    pub fn sharing(mut self, shared: Option<SharedLimits>) -> Self {
        self.shared = shared;
        self
    }

    pub fn config(&self) -> &AuthorityClientConfig {
        &self.config
    }

    /// Sends one request and returns the body of a 200 answer.
    pub async fn call(&self, request: &Request) -> Result<String, TransmitError> {
        let (status, text) = self.exchange(request).await?;
        success_body(status, text)
    }

    /// Sends one request; the answer's HTTP status and body, whatever the
    /// status.
    async fn exchange(&self, request: &Request) -> Result<(u16, String), TransmitError> {
        let op = request.operation();
        let envelope = request.to_envelope(&self.config.url, &self.signer, Utc::now())?;
        let entered = match &self.shared {
            Some(shared) => Some(shared.enter(self.config.timeout * ABANDONED_HOLD).await),
            None => None,
        };
        let exchange = async {
            let mut resp = self
                .http
                .post(&self.config.url)
                .insert_header((CONTENT_TYPE, content_type(&op.action())))
                .send_body(envelope)
                .await
                .map_err(|e| match e {
                    SendRequestError::Timeout => TransmitError::Timeout(self.config.timeout),
                    SendRequestError::Connect(c) => TransmitError::Connect(c.to_string()),
                    other => TransmitError::Transport(other.to_string()),
                })?;
            let status = resp.status();
            let body = resp
                .body()
                .limit(self.config.max_response_bytes)
                .await
                .map_err(|e| TransmitError::Transport(e.to_string()))?;
            Ok::<_, TransmitError>((status, body))
        };
        let answer = actix_web::rt::time::timeout(self.config.timeout, exchange).await;
        // Timed out, the request may still be at the authority: `entered`
        // is dropped unanswered and keeps its slot a while.
        if let (Some(shared), Some(entered), Ok(_)) = (&self.shared, entered, &answer) {
            shared.leave(entered).await;
        }
        let (status, body) = answer.map_err(|_| TransmitError::Timeout(self.config.timeout))??;
        Ok((status.as_u16(), String::from_utf8_lossy(&body).into_owned()))
    }

    async fn dian(&self, request: Request) -> Result<Transmission, TransmitError> {
        let body = self.call(&request).await?;
        Ok(response::parse_dian_response(&body, request.operation())?.into_transmission())
    }

    async fn upload(&self, request: Request) -> Result<UploadResponse, TransmitError> {
        let body = self.call(&request).await?;
        Ok(response::parse_upload_response(&body, request.operation())?)
    }

    /// SendBillSync: one document, verdict in the answer.
    pub async fn send_bill_sync(
        &self,
        file_name: &str,
        zip: &[u8],
    ) -> Result<Transmission, TransmitError> {
        self.dian(Request::send_bill_sync(file_name, zip)).await
    }

    /// SendBillAsync: queued; poll [`Self::get_status_zip`] with the ZipKey.
    pub async fn send_bill_async(
        &self,
        file_name: &str,
        zip: &[u8],
    ) -> Result<UploadResponse, TransmitError> {
        self.upload(Request::send_bill_async(file_name, zip)).await
    }

    /// SendTestSetAsync: a habilitación test set.
    pub async fn send_test_set_async(
        &self,
        file_name: &str,
        zip: &[u8],
        test_set_id: &str,
    ) -> Result<UploadResponse, TransmitError> {
        self.upload(Request::send_test_set_async(file_name, zip, test_set_id))
            .await
    }

    /// SendNominaSync: one payroll document.
    pub async fn send_nomina_sync(&self, zip: &[u8]) -> Result<Transmission, TransmitError> {
        self.dian(Request::send_nomina_sync(zip)).await
    }

    /// SendEventUpdateStatus: one ApplicationResponse (event).
    pub async fn send_event_update_status(
        &self,
        zip: &[u8],
    ) -> Result<Transmission, TransmitError> {
        self.dian(Request::send_event_update_status(zip)).await
    }

    /// GetStatus of a document code (CUFE/CUDE/CUDS/CUNE).
    pub async fn get_status(&self, track_id: &str) -> Result<Transmission, TransmitError> {
        self.dian(Request::get_status(track_id)).await
    }

    /// GetXmlByDocumentKey: the signed document the authority accepted
    /// under `track_id` (a CUFE…), as it received it.
    pub async fn get_xml_by_document_key(
        &self,
        track_id: &str,
    ) -> Result<DocumentXml, TransmitError> {
        let body = self
            .call(&Request::get_xml_by_document_key(track_id))
            .await?;
        Ok(response::parse_xml_by_document_key(&body)?)
    }

    /// GetAcquirer: the buyer's registered name and email. The authority
    /// answers an unknown buyer with HTTP 404 and a valid SOAP answer
    /// (StatusCode 404): that is an answer, not a transport error.
    pub async fn get_acquirer(
        &self,
        identification_type: &str,
        identification_number: &str,
    ) -> Result<Acquirer, TransmitError> {
        let request = Request::get_acquirer(identification_type, identification_number);
        let (status, text) = self.exchange(&request).await?;
        if status == 404 {
            if let Ok(answer) = response::parse_acquirer(&text) {
                return Ok(answer);
            }
        }
        Ok(response::parse_acquirer(&success_body(status, text)?)?)
    }

    /// GetStatusEvent: the events registered on the invoice of `cufe`.
    pub async fn get_status_event(&self, cufe: &str) -> Result<InvoiceEvents, TransmitError> {
        let body = self.call(&Request::get_status_event(cufe)).await?;
        Ok(response::parse_status_event(&body)?)
    }

    /// GetStatusZip of an asynchronous batch.
    pub async fn get_status_zip(&self, zip_key: &str) -> Result<StatusZip, TransmitError> {
        let body = self.call(&Request::get_status_zip(zip_key)).await?;
        let mut status = response::parse_status_zip(&body)?;
        if let StatusZip::Done(list) = &mut status {
            for t in list {
                t.zip_key = Some(zip_key.to_string());
            }
        }
        Ok(status)
    }

    /// GetNumberingRange of an issuer (`account_code`) for a provider
    /// (`account_code_t`) and software.
    pub async fn get_numbering_range(
        &self,
        account_code: &str,
        account_code_t: &str,
        software_code: &str,
    ) -> Result<NumberingRangeResponse, TransmitError> {
        let req = Request::get_numbering_range(account_code, account_code_t, software_code);
        let body = self.call(&req).await?;
        Ok(response::parse_numbering_range(&body)?)
    }
}

/// The body of a 2xx answer; otherwise the fault it carries, or the status
/// and the start of the body.
fn success_body(status: u16, text: String) -> Result<String, TransmitError> {
    if (200..300).contains(&status) {
        return Ok(text);
    }
    if status != 503 {
        if let Ok(doc) = roxmltree::Document::parse(&text) {
            if let Err(ResponseError::Fault(f)) = response::body_payload(&doc) {
                return Err(TransmitError::Fault(f));
            }
        }
    }
    let mut snippet = text;
    if snippet.len() > 512 {
        let mut cut = 512;
        while !snippet.is_char_boundary(cut) {
            cut -= 1;
        }
        snippet.truncate(cut);
    }
    Err(TransmitError::Http {
        status,
        body: snippet,
    })
}
