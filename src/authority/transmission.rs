//! What one exchange with the authority yields: a [`Transmission`] (the
//! `transmission` object of service-spec §2.4) or a [`TransmitError`] that
//! says whether trying again later makes sense.

use super::soap::response::{ResponseError, SoapFault};
use super::soap::wssec::WsSecError;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The authority's verdict on one document (or one status query).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Transmission {
    pub is_valid: bool,
    /// `00` = processed correctly.
    pub status_code: String,
    pub status_description: String,
    /// Rejections (`Regla: X, Rechazo: …`); empty when valid.
    pub errors: Vec<String>,
    /// Tracking key of an asynchronous send.
    pub zip_key: Option<String>,
    pub retryable: bool,
    /// Notifications (`Regla: X, Notificación: …`): they do not invalidate.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notifications: Vec<String>,
    /// The document's code as the authority read it (`XmlDocumentKey`).
    #[serde(skip)]
    pub document_key: Option<String>,
    /// The authority's ApplicationResponse, base64 (`XmlBase64Bytes`).
    #[serde(skip)]
    pub application_response_b64: Option<String>,
    /// `XmlFileName` of the answer.
    #[serde(skip)]
    pub file_name: Option<String>,
    /// `StatusMessage` of the answer.
    #[serde(skip)]
    pub status_message: Option<String>,
    /// The authority answered rule 90 "Documento procesado anteriormente":
    /// an earlier attempt was accepted, so this one counts as accepted.
    #[serde(skip)]
    pub duplicate: bool,
}

impl Transmission {
    /// Accepted by the authority (including an earlier accepted attempt).
    pub fn accepted(&self) -> bool {
        self.is_valid
    }

    /// As a status query's answer: the authority has the document and
    /// rejected it (protocol.md §4.4). Not "not found" (66, and 67/68 for
    /// a key it cannot place), not in process (98), not pending (empty).
    pub fn known_rejection(&self) -> bool {
        !self.is_valid
            && !self.retryable
            && !self.errors.is_empty()
            && !matches!(self.status_code.as_str(), "" | "66" | "67" | "68" | "98")
    }
}

/// Answer of an asynchronous send (`UploadDocumentResponse`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UploadResponse {
    pub zip_key: Option<String>,
    pub errors: Vec<UploadError>,
}

/// One `XmlParamsResponseTrackId` of an `ErrorMessageList`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UploadError {
    pub document_key: Option<String>,
    pub file_name: Option<String>,
    pub processed_message: String,
    pub sender_code: Option<String>,
    pub success: bool,
}

impl UploadResponse {
    /// The `transmission` object of a queued asynchronous send.
    pub fn to_transmission(&self) -> Transmission {
        let queued = self.zip_key.is_some();
        Transmission {
            is_valid: false,
            status_code: String::new(),
            status_description: if queued {
                "Batch en proceso de validación.".into()
            } else {
                "El lote no fue recibido.".into()
            },
            errors: self
                .errors
                .iter()
                .filter(|e| !e.success)
                .map(|e| e.processed_message.clone())
                .collect(),
            zip_key: self.zip_key.clone(),
            retryable: false,
            ..Transmission::default()
        }
    }
}

/// Result of `GetStatusZip`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StatusZip {
    /// "Batch en proceso de validación."
    Pending,
    /// One verdict per document of the batch.
    Done(Vec<Transmission>),
}

/// Answer of `GetNumberingRange`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NumberingRangeResponse {
    /// `100` = OK.
    pub operation_code: String,
    pub operation_description: String,
    pub ranges: Vec<NumberRange>,
}

/// Answer of `GetStatusEvent`: a `DianResponse` whose `XmlBase64Bytes` is
/// an ApplicationResponse of the authority listing the invoice's events,
/// one `cac:DocumentResponse` each, in signing order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct InvoiceEvents {
    /// [`InvoiceEvents::LISTED`] with events; `67` none yet; `66` unknown
    /// code; `68` not an invoice's CUFE; `89` unreadable track id; `98` in
    /// process; `500` the authority failed.
    pub status_code: String,
    pub status_description: String,
    pub is_valid: bool,
    pub events: Vec<RegisteredEvent>,
}

impl InvoiceEvents {
    /// `StatusCode` of an answer listing events ("Procesado Correctamente.").
    pub const LISTED: &'static str = "00";
    /// "EL CUFE o Factura consultada no tiene a la fecha eventos asociados."
    pub const NO_EVENTS: &'static str = "67";
    /// "TrackId no existe en los registros de la DIAN."
    pub const UNKNOWN: &'static str = "66";
    /// "TrackId no corresponde a un CUFE."
    pub const NOT_AN_INVOICE: &'static str = "68";
}

/// One event of an invoice as `GetStatusEvent` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RegisteredEvent {
    /// `cac:Response/cbc:ResponseCode`: the authority's event code (030…).
    pub code: String,
    /// `cbc:Description`: the event's name.
    pub description: String,
    /// `cbc:EffectiveDate` (`yyyy-MM-dd`) and `cbc:EffectiveTime` of its
    /// signing, as written (the authority's format is `HH-mm-ss-05:00`).
    pub date: String,
    pub time: String,
    /// `cac:DocumentReference`: the event's number and CUDE.
    pub number: String,
    pub cude: String,
    /// `cac:IssuerParty` and `cac:RecipientParty` company ids (NIT).
    pub issuer_nit: Option<String>,
    pub recipient_nit: Option<String>,
}

/// Answer of `GetAcquirer` (the `AdquirienteResponse` contract): a buyer's
/// name and email as registered with the authority (Res. 000202/2025).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Acquirer {
    /// `404` for an unknown buyer ("El adquirente No existe en la base de
    /// datos", confirmed against the testing service); the success code is
    /// not confirmed by a public trace (peers' mocks use `00` or `0`).
    pub status_code: String,
    pub message: String,
    pub receiver_name: Option<String>,
    pub receiver_email: Option<String>,
}

impl Acquirer {
    /// `StatusCode` of an unknown buyer.
    pub const NOT_FOUND: &'static str = "404";
    /// `StatusCode` the simulator answers a known buyer with.
    pub const FOUND: &'static str = "00";

    /// The buyer's name and email, when the authority knows the buyer: an
    /// answer with a name and any code but 404 (the success code is not
    /// confirmed, so it is not required).
    pub fn found(&self) -> Option<(&str, Option<&str>)> {
        let name = self.receiver_name.as_deref().filter(|n| !n.is_empty())?;
        (self.status_code != Self::NOT_FOUND).then_some((name, self.receiver_email.as_deref()))
    }
}

/// Answer of `GetXmlByDocumentKey` (the `EventResponse` contract).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DocumentXml {
    /// [`DocumentXml::FOUND`]; `404` no accepted document has that code;
    /// `401` the caller's certificate is neither the sender's nor the
    /// receiver's (nor authorized by them); `206` its parties unreadable;
    /// `500` the authority failed.
    pub code: String,
    pub message: String,
    /// The document exactly as the authority received it (`XmlBytesBase64`
    /// decoded), with code 100.
    pub xml: Option<Vec<u8>>,
}

impl DocumentXml {
    /// `Code` of a found document ("Accion completada OK").
    pub const FOUND: &'static str = "100";
    /// `Code` of an unknown document ("Xml con CUFE: '…' no encontrado.").
    pub const NOT_FOUND: &'static str = "404";
    /// `Code` of a caller neither party to the document.
    pub const NOT_AUTHORIZED: &'static str = "401";

    /// The document, when the authority gave it.
    pub fn found(&self) -> Option<&[u8]> {
        self.xml.as_deref().filter(|_| self.code == Self::FOUND)
    }
}

/// One authorized numbering range (`NumberRangeResponse`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NumberRange {
    pub resolution_number: String,
    #[serde(default)]
    pub resolution_date: String,
    #[serde(default)]
    pub prefix: String,
    pub from_number: u64,
    pub to_number: u64,
    #[serde(default)]
    pub valid_date_from: String,
    #[serde(default)]
    pub valid_date_to: String,
    #[serde(default)]
    pub technical_key: Option<String>,
}

/// Why an exchange produced no verdict.
#[derive(Debug, thiserror::Error)]
pub enum TransmitError {
    #[error("the authority did not answer within {0:?}")]
    Timeout(Duration),
    #[error("cannot connect to the authority: {0}")]
    Connect(String),
    #[error("the authority answered HTTP {status}")]
    Http { status: u16, body: String },
    #[error("the authority answered a SOAP fault: {0}")]
    Fault(SoapFault),
    #[error("unreadable answer from the authority: {0}")]
    Response(ResponseError),
    #[error("cannot sign the request: {0}")]
    Signing(#[from] WsSecError),
    #[error("transport error: {0}")]
    Transport(String),
}

impl From<ResponseError> for TransmitError {
    fn from(e: ResponseError) -> Self {
        match e {
            ResponseError::Fault(f) => TransmitError::Fault(f),
            other => TransmitError::Response(other),
        }
    }
}

impl TransmitError {
    /// Whether a later attempt may succeed: the authority was unreachable,
    /// slow, overloaded or answered garbage. Retrying a document is safe: an
    /// attempt that did land is answered with rule 90 and counts as accepted.
    /// Not retryable: a fault about the request itself, HTTP 4xx, a local
    /// signing problem.
    pub fn is_retryable(&self) -> bool {
        match self {
            TransmitError::Timeout(_) | TransmitError::Connect(_) | TransmitError::Transport(_) => {
                true
            }
            TransmitError::Http { status, .. } => {
                *status >= 500 || *status == 408 || *status == 429
            }
            TransmitError::Fault(f) => f.is_retryable(),
            TransmitError::Response(_) => true,
            TransmitError::Signing(_) => false,
        }
    }

    /// The `transmission` object describing this failure.
    pub fn to_transmission(&self) -> Transmission {
        Transmission {
            is_valid: false,
            status_code: String::new(),
            status_description: self.to_string(),
            errors: vec![self.to_string()],
            retryable: self.is_retryable(),
            ..Transmission::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serializes_with_the_spec_names() {
        let t = Transmission {
            is_valid: true,
            status_code: "00".into(),
            status_description: "Procesado Correctamente.".into(),
            document_key: Some("abc".into()),
            ..Transmission::default()
        };
        let v = serde_json::to_value(&t).expect("json");
        assert_eq!(
            v,
            serde_json::json!({"isValid": true, "statusCode": "00",
                "statusDescription": "Procesado Correctamente.", "errors": [],
                "zipKey": null, "retryable": false})
        );
    }

    #[test]
    fn classifies_failures() {
        assert!(TransmitError::Timeout(Duration::from_secs(3)).is_retryable());
        assert!(TransmitError::Connect("refused".into()).is_retryable());
        assert!(TransmitError::Http {
            status: 503,
            body: String::new()
        }
        .is_retryable());
        assert!(TransmitError::Http {
            status: 500,
            body: String::new()
        }
        .is_retryable());
        assert!(!TransmitError::Http {
            status: 404,
            body: String::new()
        }
        .is_retryable());
        assert!(!TransmitError::Signing(WsSecError::NotRsa).is_retryable());
        let busy = SoapFault {
            code: "Receiver".into(),
            subcode: None,
            reason: "Server too busy".into(),
        };
        assert!(TransmitError::Fault(busy).is_retryable());
        let sender = SoapFault {
            code: "Sender".into(),
            subcode: None,
            reason: "bad request".into(),
        };
        assert!(!TransmitError::Fault(sender).is_retryable());
        let t = TransmitError::Timeout(Duration::from_secs(1)).to_transmission();
        assert!(t.retryable && !t.is_valid && !t.errors.is_empty());
    }
}
