//! Parsing the authority's answers (protocol.md §4.4): `DianResponse`,
//! `UploadDocumentResponse`, the `GetStatusZip` array,
//! `NumberRangeResponseList`, `EventResponse` and SOAP faults.
//!
//! Fields are matched by local name, so any prefix (and the SOAP 1.1 or 1.2
//! envelope) is accepted; unknown elements are ignored.

use crate::authority::operation::Operation;
use crate::authority::transmission::{
    Acquirer, DocumentXml, InvoiceEvents, NumberRange, NumberingRangeResponse, RegisteredEvent,
    StatusZip, Transmission, UploadError, UploadResponse,
};
use roxmltree::{Document, Node};

/// A SOAP fault (1.2 `Code/Value`, `Code/Subcode/Value`, `Reason/Text`, or 1.1
/// `faultcode`, `faultstring`), codes without their prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SoapFault {
    pub code: String,
    pub subcode: Option<String>,
    pub reason: String,
}

impl std::fmt::Display for SoapFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.subcode {
            Some(s) => write!(f, "{}/{}: {}", self.code, s, self.reason),
            None => write!(f, "{}: {}", self.code, self.reason),
        }
    }
}

impl SoapFault {
    /// Receiver (server) faults and faults saying the server is busy or
    /// unavailable may succeed later; sender faults do not.
    pub fn is_retryable(&self) -> bool {
        let code = self.code.to_ascii_lowercase();
        if code == "receiver" || code == "server" {
            return true;
        }
        let reason = self.reason.to_lowercase();
        [
            "busy",
            "ocupad",
            "unavailable",
            "no disponible",
            "timeout",
            "timed out",
            "tiempo de espera",
            "too many",
            "throttl",
        ]
        .iter()
        .any(|w| reason.contains(w))
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ResponseError {
    #[error("not XML: {0}")]
    NotXml(String),
    #[error("not a SOAP envelope")]
    NotSoap,
    #[error("SOAP fault {0}")]
    Fault(SoapFault),
    #[error("missing element {0}")]
    Missing(&'static str),
    #[error("bad value in {0}: {1}")]
    BadValue(&'static str, String),
}

/// One `DianResponse` as serialized by the authority.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DianResponse {
    pub error_messages: Vec<String>,
    pub is_valid: bool,
    pub status_code: String,
    pub status_description: String,
    pub status_message: Option<String>,
    pub xml_base64_bytes: Option<String>,
    pub xml_document_key: Option<String>,
    pub xml_file_name: Option<String>,
}

/// Rule id of an error message `Regla: <id>, Rechazo|Notificación: <text>`.
pub fn rule_of(message: &str) -> Option<&str> {
    let rest = message.trim_start().strip_prefix("Regla:")?;
    let id = rest.split(',').next()?.trim();
    (!id.is_empty()).then_some(id)
}

/// Whether an error message is a notification (does not invalidate).
pub fn is_notification(message: &str) -> bool {
    message.contains("Notificación:") || message.contains("Notificacion:")
}

/// The duplicate rule: "Documento procesado anteriormente".
pub const RULE_DUPLICATE: &str = "90";

impl DianResponse {
    /// The `transmission` object. A rejection whose only rule is 90
    /// ("Documento procesado anteriormente") means an earlier attempt was
    /// accepted: it becomes valid, `00`, with `duplicate` set.
    pub fn into_transmission(self) -> Transmission {
        let (notifications, rejections): (Vec<String>, Vec<String>) = self
            .error_messages
            .into_iter()
            .partition(|m| is_notification(m));
        let duplicate = !self.is_valid
            && !rejections.is_empty()
            && rejections
                .iter()
                .all(|m| rule_of(m) == Some(RULE_DUPLICATE));
        let mut t = Transmission {
            is_valid: self.is_valid,
            status_code: self.status_code,
            status_description: self.status_description,
            errors: rejections,
            zip_key: None,
            retryable: false,
            notifications,
            document_key: self.xml_document_key,
            application_response_b64: self.xml_base64_bytes,
            file_name: self.xml_file_name,
            status_message: self.status_message,
            duplicate,
        };
        if duplicate {
            t.is_valid = true;
            t.status_code = "00".into();
            t.status_description = "Documento procesado anteriormente.".into();
            t.errors.clear();
        } else if t.is_valid {
            // Anything left is informative only.
            let errors = std::mem::take(&mut t.errors);
            t.notifications.extend(errors);
        } else {
            // "En Proceso" and an empty code (batch pending) are worth asking again.
            t.retryable = t.status_code == "98" || t.status_code.is_empty();
            if t.errors.is_empty() && !t.status_description.is_empty() {
                t.errors.push(t.status_description.clone());
            }
        }
        t
    }
}

fn local<'a, 'i>(node: Node<'a, 'i>, name: &str) -> Option<Node<'a, 'i>> {
    node.children()
        .find(|c| c.is_element() && c.tag_name().name() == name)
}

fn elements<'a, 'i: 'a>(node: Node<'a, 'i>) -> impl Iterator<Item = Node<'a, 'i>> + 'a {
    node.children().filter(|c| c.is_element())
}

fn is_nil(node: Node<'_, '_>) -> bool {
    node.attributes()
        .any(|a| a.name() == "nil" && a.value().trim() == "true")
}

/// Trimmed text of a child, `None` when absent, nil or empty.
fn text_of(node: Node<'_, '_>, name: &str) -> Option<String> {
    let c = local(node, name)?;
    if is_nil(c) {
        return None;
    }
    let t = c.text().unwrap_or("").trim();
    (!t.is_empty()).then(|| t.to_string())
}

fn strip_prefix(qname: &str) -> String {
    qname.rsplit(':').next().unwrap_or(qname).trim().to_string()
}

fn parse_fault(fault: Node<'_, '_>) -> SoapFault {
    // SOAP 1.2
    if let Some(code) = local(fault, "Code") {
        let value = text_of(code, "Value")
            .map(|v| strip_prefix(&v))
            .unwrap_or_default();
        let subcode = local(code, "Subcode")
            .and_then(|s| text_of(s, "Value"))
            .map(|v| strip_prefix(&v));
        let reason = local(fault, "Reason")
            .and_then(|r| text_of(r, "Text"))
            .unwrap_or_default();
        return SoapFault {
            code: value,
            subcode,
            reason,
        };
    }
    // SOAP 1.1
    SoapFault {
        code: text_of(fault, "faultcode")
            .map(|v| strip_prefix(&v))
            .unwrap_or_default(),
        subcode: None,
        reason: text_of(fault, "faultstring").unwrap_or_default(),
    }
}

fn parse(xml: &str) -> Result<Document<'_>, ResponseError> {
    Document::parse(xml).map_err(|e| ResponseError::NotXml(e.to_string()))
}

/// The first element of `soap:Body`, or the fault it carries.
pub fn body_payload<'a, 'i>(doc: &'a Document<'i>) -> Result<Node<'a, 'i>, ResponseError> {
    let env = doc.root_element();
    if env.tag_name().name() != "Envelope" {
        return Err(ResponseError::NotSoap);
    }
    let body = local(env, "Body").ok_or(ResponseError::NotSoap)?;
    let first = elements(body)
        .next()
        .ok_or(ResponseError::Missing("Body content"))?;
    if first.tag_name().name() == "Fault" {
        return Err(ResponseError::Fault(parse_fault(first)));
    }
    Ok(first)
}

/// The `<Op>Result` element of `<Op>Response`.
fn result_of<'a, 'i>(doc: &'a Document<'i>, op: Operation) -> Result<Node<'a, 'i>, ResponseError> {
    let payload = body_payload(doc)?;
    let wanted = format!("{}Result", op.name());
    local(payload, &wanted)
        .or_else(|| elements(payload).next())
        .ok_or(ResponseError::Missing("operation result"))
}

fn parse_dian_node(node: Node<'_, '_>) -> Result<DianResponse, ResponseError> {
    let error_messages = local(node, "ErrorMessage")
        .map(|e| {
            elements(e)
                .filter_map(|s| s.text().map(|t| t.trim().to_string()))
                .filter(|t| !t.is_empty())
                .collect()
        })
        .unwrap_or_default();
    let is_valid = match text_of(node, "IsValid").as_deref() {
        Some("true") | Some("1") => true,
        Some("false") | Some("0") | None => false,
        Some(other) => return Err(ResponseError::BadValue("IsValid", other.to_string())),
    };
    Ok(DianResponse {
        error_messages,
        is_valid,
        status_code: text_of(node, "StatusCode").unwrap_or_default(),
        status_description: text_of(node, "StatusDescription").unwrap_or_default(),
        status_message: text_of(node, "StatusMessage"),
        xml_base64_bytes: text_of(node, "XmlBase64Bytes"),
        xml_document_key: text_of(node, "XmlDocumentKey"),
        xml_file_name: text_of(node, "XmlFileName"),
    })
}

/// `DianResponse` of SendBillSync, GetStatus, SendNominaSync, SendEventUpdateStatus.
pub fn parse_dian_response(xml: &str, op: Operation) -> Result<DianResponse, ResponseError> {
    let doc = parse(xml)?;
    parse_dian_node(result_of(&doc, op)?)
}

/// `GetStatusZip`: pending while the only answer says the batch is in process.
pub fn parse_status_zip(xml: &str) -> Result<StatusZip, ResponseError> {
    let doc = parse(xml)?;
    let result = result_of(&doc, Operation::GetStatusZip)?;
    let answers = elements(result)
        .filter(|n| n.tag_name().name() == "DianResponse")
        .map(parse_dian_node)
        .collect::<Result<Vec<_>, _>>()?;
    let pending = answers.is_empty()
        || answers.iter().all(|a| {
            a.status_code.is_empty() && a.status_description.to_lowercase().contains("en proceso")
        });
    if pending {
        return Ok(StatusZip::Pending);
    }
    Ok(StatusZip::Done(
        answers
            .into_iter()
            .map(DianResponse::into_transmission)
            .collect(),
    ))
}

/// `UploadDocumentResponse` of SendBillAsync and SendTestSetAsync.
pub fn parse_upload_response(xml: &str, op: Operation) -> Result<UploadResponse, ResponseError> {
    let doc = parse(xml)?;
    let result = result_of(&doc, op)?;
    let errors = local(result, "ErrorMessageList")
        .map(|list| {
            elements(list)
                .map(|item| UploadError {
                    document_key: text_of(item, "DocumentKey"),
                    file_name: text_of(item, "XmlFileName"),
                    processed_message: text_of(item, "ProcessedMessage").unwrap_or_default(),
                    sender_code: text_of(item, "SenderCode"),
                    success: text_of(item, "Success").as_deref() == Some("true"),
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(UploadResponse {
        zip_key: text_of(result, "ZipKey"),
        errors,
    })
}

fn number(node: Node<'_, '_>, name: &'static str) -> Result<u64, ResponseError> {
    let t = text_of(node, name).ok_or(ResponseError::Missing(name))?;
    t.parse().map_err(|_| ResponseError::BadValue(name, t))
}

/// `NumberRangeResponseList` of GetNumberingRange.
pub fn parse_numbering_range(xml: &str) -> Result<NumberingRangeResponse, ResponseError> {
    let doc = parse(xml)?;
    let result = result_of(&doc, Operation::GetNumberingRange)?;
    let mut ranges = Vec::new();
    if let Some(list) = local(result, "ResponseList") {
        for r in elements(list) {
            ranges.push(NumberRange {
                resolution_number: text_of(r, "ResolutionNumber").unwrap_or_default(),
                resolution_date: text_of(r, "ResolutionDate").unwrap_or_default(),
                prefix: text_of(r, "Prefix").unwrap_or_default(),
                from_number: number(r, "FromNumber")?,
                to_number: number(r, "ToNumber")?,
                valid_date_from: text_of(r, "ValidDateFrom").unwrap_or_default(),
                valid_date_to: text_of(r, "ValidDateTo").unwrap_or_default(),
                technical_key: text_of(r, "TechnicalKey"),
            });
        }
    }
    Ok(NumberingRangeResponse {
        operation_code: text_of(result, "OperationCode").unwrap_or_default(),
        operation_description: text_of(result, "OperationDescription").unwrap_or_default(),
        ranges,
    })
}

/// `EventResponse` of GetXmlByDocumentKey: `Code`, `Message` and the
/// document in `XmlBytesBase64` (the bytes the authority keeps, not
/// zipped: the authority's `GetXmlByDocumentKey` returns its stored file
/// as is).
pub fn parse_xml_by_document_key(xml: &str) -> Result<DocumentXml, ResponseError> {
    use base64::Engine as _;
    let doc = parse(xml)?;
    let result = result_of(&doc, Operation::GetXmlByDocumentKey)?;
    let xml = match local(result, "XmlBytesBase64").filter(|n| !is_nil(*n)) {
        Some(n) => {
            let compact: String = n
                .text()
                .unwrap_or("")
                .chars()
                .filter(|c| !c.is_ascii_whitespace())
                .collect();
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(compact)
                .map_err(|e| ResponseError::BadValue("XmlBytesBase64", e.to_string()))?;
            (!bytes.is_empty()).then_some(bytes)
        }
        None => None,
    };
    Ok(DocumentXml {
        code: text_of(result, "Code").unwrap_or_default(),
        message: text_of(result, "Message").unwrap_or_default(),
        xml,
    })
}

/// `AdquirienteResponse` of GetAcquirer: `Message`, `ReceiverEmail`,
/// `ReceiverName`, `StatusCode` (nil members read as absent).
pub fn parse_acquirer(xml: &str) -> Result<Acquirer, ResponseError> {
    let doc = parse(xml)?;
    let result = result_of(&doc, Operation::GetAcquirer)?;
    Ok(Acquirer {
        status_code: text_of(result, "StatusCode").unwrap_or_default(),
        message: text_of(result, "Message").unwrap_or_default(),
        receiver_name: text_of(result, "ReceiverName"),
        receiver_email: text_of(result, "ReceiverEmail"),
    })
}

/// `GetStatusEvent`: its `DianResponse` and the events listed in the
/// ApplicationResponse of `XmlBase64Bytes` (plain XML, not zipped).
pub fn parse_status_event(xml: &str) -> Result<InvoiceEvents, ResponseError> {
    use base64::Engine as _;
    let answer = parse_dian_response(xml, Operation::GetStatusEvent)?;
    let mut events = Vec::new();
    if let Some(b64) = answer.xml_base64_bytes.as_deref() {
        let compact: String = b64.chars().filter(|c| !c.is_ascii_whitespace()).collect();
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(compact)
            .map_err(|e| ResponseError::BadValue("XmlBase64Bytes", e.to_string()))?;
        let text = String::from_utf8_lossy(&bytes);
        let ar = parse(text.trim_start_matches('\u{feff}'))?;
        for response in
            elements(ar.root_element()).filter(|n| n.tag_name().name() == "DocumentResponse")
        {
            let inner = local(response, "Response");
            let reference = local(response, "DocumentReference");
            let party = |name: &str| {
                local(response, name)
                    .and_then(|p| local(p, "PartyTaxScheme"))
                    .and_then(|p| text_of(p, "CompanyID"))
            };
            let of = |node: Option<Node<'_, '_>>, name: &str| {
                node.and_then(|n| text_of(n, name)).unwrap_or_default()
            };
            events.push(RegisteredEvent {
                code: of(inner, "ResponseCode"),
                description: of(inner, "Description"),
                date: of(inner, "EffectiveDate"),
                time: of(inner, "EffectiveTime"),
                number: of(reference, "ID"),
                cude: of(reference, "UUID"),
                issuer_nit: party("IssuerParty"),
                recipient_nit: party("RecipientParty"),
            });
        }
    }
    Ok(InvoiceEvents {
        status_code: answer.status_code,
        status_description: answer.status_description,
        is_valid: answer.is_valid,
        events,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    macro_rules! fixture {
        ($name:literal) => {
            include_str!(concat!("../fixtures/", $name))
        };
    }

    #[test]
    fn accepted_invoice() {
        let r = parse_dian_response(
            fixture!("send_bill_sync_accepted.xml"),
            Operation::SendBillSync,
        )
        .expect("parse");
        assert!(r.is_valid);
        let t = r.into_transmission();
        assert!(t.is_valid && !t.retryable && !t.duplicate);
        assert_eq!(t.status_code, "00");
        assert_eq!(t.status_description, "Procesado Correctamente.");
        assert!(t.errors.is_empty());
        assert_eq!(t.document_key.as_deref().map(str::len), Some(96));
        assert!(t.application_response_b64.is_some());
        assert_eq!(t.file_name.as_deref(), Some("fv09000000010002400000001"));
    }

    #[test]
    fn accepted_with_notifications_keeps_errors_empty() {
        let t = parse_dian_response(
            fixture!("send_bill_sync_notifications.xml"),
            Operation::SendBillSync,
        )
        .expect("parse")
        .into_transmission();
        assert!(t.is_valid);
        assert!(t.errors.is_empty());
        assert_eq!(t.notifications.len(), 2);
        assert_eq!(rule_of(&t.notifications[0]), Some("FAJ44b"));
    }

    #[test]
    fn business_rejection_is_not_retryable() {
        let t = parse_dian_response(
            fixture!("send_bill_sync_rejected.xml"),
            Operation::SendBillSync,
        )
        .expect("parse")
        .into_transmission();
        assert!(!t.is_valid && !t.retryable && !t.duplicate);
        assert_eq!(t.status_code, "99");
        assert_eq!(t.errors.len(), 2);
        assert_eq!(rule_of(&t.errors[0]), Some("FAD06"));
        assert_eq!(t.notifications.len(), 1);
        assert!(t.known_rejection());
    }

    #[test]
    fn rule_90_counts_as_accepted() {
        let t = parse_dian_response(
            fixture!("send_bill_sync_duplicate.xml"),
            Operation::SendBillSync,
        )
        .expect("parse")
        .into_transmission();
        assert!(t.is_valid && t.duplicate && !t.retryable);
        assert!(!t.known_rejection());
        assert_eq!(t.status_code, "00");
        assert!(t.errors.is_empty());
        assert!(t.document_key.is_some());
    }

    #[test]
    fn get_status_not_found() {
        let t = parse_dian_response(fixture!("get_status_not_found.xml"), Operation::GetStatus)
            .expect("parse")
            .into_transmission();
        assert!(!t.is_valid && !t.retryable);
        assert_eq!(t.status_code, "66");
        assert_eq!(t.errors, vec!["TrackId no encontrado".to_string()]);
        assert!(!t.known_rejection(), "not found: it may be sent");
    }

    #[test]
    fn status_zip_pending_and_done() {
        assert_eq!(
            parse_status_zip(fixture!("get_status_zip_pending.xml")).expect("parse"),
            StatusZip::Pending
        );
        match parse_status_zip(fixture!("get_status_zip_done.xml")).expect("parse") {
            StatusZip::Done(list) => {
                assert_eq!(list.len(), 2);
                assert!(list[0].is_valid);
                assert!(!list[1].is_valid);
                assert_eq!(rule_of(&list[1].errors[0]), Some("FAD05d"));
            }
            StatusZip::Pending => panic!("expected results"),
        }
    }

    #[test]
    fn upload_response() {
        let u = parse_upload_response(
            fixture!("send_test_set_async.xml"),
            Operation::SendTestSetAsync,
        )
        .expect("parse");
        assert_eq!(
            u.zip_key.as_deref(),
            Some("3f0c2a9e-5d1b-4c61-9a77-0b6a1f2d9e10")
        );
        assert!(u.errors.is_empty());
        let u = parse_upload_response(
            fixture!("send_bill_async_errors.xml"),
            Operation::SendBillAsync,
        )
        .expect("parse");
        assert_eq!(u.zip_key, None);
        assert_eq!(u.errors.len(), 1);
        assert!(!u.errors[0].success);
        assert!(u.to_transmission().errors[0].contains("ZIP"));
    }

    #[test]
    fn numbering_ranges() {
        let r = parse_numbering_range(fixture!("get_numbering_range.xml")).expect("parse");
        assert_eq!(r.operation_code, "100");
        assert_eq!(r.ranges.len(), 2);
        assert_eq!(r.ranges[0].prefix, "SETP");
        assert_eq!(r.ranges[0].from_number, 990000000);
        assert_eq!(r.ranges[0].to_number, 995000000);
        assert_eq!(
            r.ranges[0].technical_key.as_deref(),
            Some("fc8eac422eba16e22ffd8c6f94b3f40a6e38162c")
        );
        assert_eq!(r.ranges[1].technical_key, None);
    }

    #[test]
    fn faults() {
        match parse_dian_response(fixture!("fault_busy.xml"), Operation::SendBillSync) {
            Err(ResponseError::Fault(f)) => {
                assert_eq!(f.code, "Receiver");
                assert!(f.is_retryable());
            }
            other => panic!("expected fault, got {other:?}"),
        }
        match parse_dian_response(fixture!("fault_security.xml"), Operation::SendBillSync) {
            Err(ResponseError::Fault(f)) => {
                assert_eq!(f.code, "Sender");
                assert_eq!(f.subcode.as_deref(), Some("InvalidSecurity"));
                assert!(!f.is_retryable());
            }
            other => panic!("expected fault, got {other:?}"),
        }
        match parse_dian_response(fixture!("fault_soap11.xml"), Operation::GetStatus) {
            Err(ResponseError::Fault(f)) => {
                assert_eq!(f.code, "Server");
                assert!(f.is_retryable());
            }
            other => panic!("expected fault, got {other:?}"),
        }
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        for input in [
            "",
            "<html>503</html>",
            "<a:Envelope xmlns:a='urn:x'/>",
            "\u{0}\u{1}<<",
        ] {
            assert!(parse_dian_response(input, Operation::SendBillSync).is_err());
            assert!(parse_status_zip(input).is_err());
            assert!(parse_numbering_range(input).is_err());
            assert!(parse_upload_response(input, Operation::SendBillAsync).is_err());
        }
    }

    #[test]
    fn rules() {
        assert_eq!(
            rule_of("Regla: 90, Rechazo: Documento procesado anteriormente."),
            Some("90")
        );
        assert_eq!(rule_of("Regla: FAJ44b, Notificación: x"), Some("FAJ44b"));
        assert_eq!(rule_of("texto"), None);
    }

    /// The shape public clients of the authority parse
    /// (`GetXmlByDocumentKeyResult` in the service namespace, `Code`,
    /// `Message`, `XmlBytesBase64` in the `EventResponse` contract), and a
    /// not-found answer without a document.
    #[test]
    fn event_response_of_get_xml_by_document_key() {
        let answer = |inner: &str| {
            format!(
                "<s:Envelope xmlns:s=\"http://www.w3.org/2003/05/soap-envelope\"><s:Body>\
                 <GetXmlByDocumentKeyResponse xmlns=\"http://wcf.dian.colombia\">\
                 <GetXmlByDocumentKeyResult xmlns:b=\"http://schemas.datacontract.org/2004/07/EventResponse\" \
                 xmlns:i=\"http://www.w3.org/2001/XMLSchema-instance\">{inner}</GetXmlByDocumentKeyResult>\
                 </GetXmlByDocumentKeyResponse></s:Body></s:Envelope>"
            )
        };
        let found = parse_xml_by_document_key(&answer(
            "<b:Code>100</b:Code><b:Message>Accion completada OK</b:Message>\
             <b:XmlBytesBase64>PEludm9pY2UvPg==</b:XmlBytesBase64>",
        ))
        .expect("parse");
        assert_eq!(found.found(), Some(&b"<Invoice/>"[..]));
        let missing = parse_xml_by_document_key(&answer(
            "<b:Code>404</b:Code><b:Message>Xml con CUFE: 'x' no encontrado.</b:Message>\
             <b:XmlBytesBase64 i:nil=\"true\"/>",
        ))
        .expect("parse");
        assert_eq!((missing.code.as_str(), missing.found()), ("404", None));
        assert!(parse_xml_by_document_key(&answer(
            "<b:Code>100</b:Code><b:XmlBytesBase64>%%%</b:XmlBytesBase64>"
        ))
        .is_err());
    }

    /// The unknown-buyer answer of the authority's testing service (a
    /// public client's real call: StatusCode 404, nil name and email) and a
    /// found one.
    #[test]
    fn adquiriente_response_of_get_acquirer() {
        let answer = |inner: &str| {
            format!(
                "<s:Envelope xmlns:s=\"http://www.w3.org/2003/05/soap-envelope\"><s:Body>\
                 <GetAcquirerResponse xmlns=\"http://wcf.dian.colombia\">\
                 <GetAcquirerResult xmlns:b=\"http://schemas.datacontract.org/2004/07/Gosocket.Dian.Services.Utils.Common\" \
                 xmlns:i=\"http://www.w3.org/2001/XMLSchema-instance\">{inner}</GetAcquirerResult>\
                 </GetAcquirerResponse></s:Body></s:Envelope>"
            )
        };
        let unknown = parse_acquirer(&answer(
            "<b:Message>El adquirente No existe en la base de datos</b:Message>\
             <b:ReceiverEmail i:nil=\"true\"/><b:ReceiverName i:nil=\"true\"/>\
             <b:StatusCode>404</b:StatusCode>",
        ))
        .expect("parse");
        assert_eq!(unknown.status_code, "404");
        assert_eq!(unknown.found(), None);
        let known = parse_acquirer(&answer(
            "<b:Message>Operación exitosa</b:Message>\
             <b:ReceiverEmail>compras@acme.co</b:ReceiverEmail>\
             <b:ReceiverName>ACME S.A.S.</b:ReceiverName><b:StatusCode>0</b:StatusCode>",
        ))
        .expect("parse");
        assert_eq!(
            known.found(),
            Some(("ACME S.A.S.", Some("compras@acme.co")))
        );
        let nameless = Acquirer {
            status_code: "00".into(),
            ..Acquirer::default()
        };
        assert_eq!(nameless.found(), None);
    }

    /// GetStatusEvent's `DianResponse` with the events in the
    /// ApplicationResponse of `XmlBase64Bytes`, as the authority's
    /// `XmlUtilEvents` writes it, and the "no events" answer.
    #[test]
    fn events_of_get_status_event() {
        use base64::Engine as _;
        let ar = "\u{feff}<ApplicationResponse xmlns=\"urn:oasis:names:specification:ubl:schema:xsd:ApplicationResponse-2\" \
             xmlns:cac=\"urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2\" \
             xmlns:cbc=\"urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2\">\
             <cbc:ID>1</cbc:ID><cac:SenderParty/><cac:ReceiverParty/>\
             <cac:DocumentResponse><cac:Response><cbc:ReferenceID>1</cbc:ReferenceID><cbc:ResponseCode>030</cbc:ResponseCode>\
             <cbc:Description>Acuse de recibo</cbc:Description><cbc:EffectiveDate>2026-12-01</cbc:EffectiveDate>\
             <cbc:EffectiveTime>10-00-00-05:00</cbc:EffectiveTime></cac:Response>\
             <cac:DocumentReference><cbc:ID>EV1</cbc:ID><cbc:UUID schemeName=\"CUDE-SHA384\">cude1</cbc:UUID></cac:DocumentReference>\
             <cac:IssuerParty><cac:PartyTaxScheme><cbc:RegistrationName>B</cbc:RegistrationName><cbc:CompanyID>860002964</cbc:CompanyID></cac:PartyTaxScheme></cac:IssuerParty>\
             <cac:RecipientParty><cac:PartyTaxScheme><cbc:CompanyID>900000001</cbc:CompanyID></cac:PartyTaxScheme></cac:RecipientParty>\
             </cac:DocumentResponse></ApplicationResponse>";
        let answer = |code: &str, valid: bool, bytes: &str| {
            format!(
                "<s:Envelope xmlns:s=\"http://www.w3.org/2003/05/soap-envelope\"><s:Body>\
                 <GetStatusEventResponse xmlns=\"http://wcf.dian.colombia\">\
                 <GetStatusEventResult xmlns:b=\"http://schemas.datacontract.org/2004/07/DianResponse\" \
                 xmlns:i=\"http://www.w3.org/2001/XMLSchema-instance\">\
                 <b:ErrorMessage/><b:IsValid>{valid}</b:IsValid><b:StatusCode>{code}</b:StatusCode>\
                 <b:StatusDescription>d</b:StatusDescription><b:StatusMessage i:nil=\"true\"/>\
                 <b:XmlBase64Bytes>{bytes}</b:XmlBase64Bytes><b:XmlBytes i:nil=\"true\"/>\
                 <b:XmlDocumentKey>cufe</b:XmlDocumentKey><b:XmlFileName>f</b:XmlFileName>\
                 </GetStatusEventResult></GetStatusEventResponse></s:Body></s:Envelope>"
            )
        };
        let b64 = base64::engine::general_purpose::STANDARD.encode(ar);
        let listed = parse_status_event(&answer("00", true, &b64)).expect("parse");
        assert_eq!(listed.status_code, InvoiceEvents::LISTED);
        assert_eq!(
            listed.events,
            [RegisteredEvent {
                code: "030".into(),
                description: "Acuse de recibo".into(),
                date: "2026-12-01".into(),
                time: "10-00-00-05:00".into(),
                number: "EV1".into(),
                cude: "cude1".into(),
                issuer_nit: Some("860002964".into()),
                recipient_nit: Some("900000001".into()),
            }]
        );
        let empty_ar = base64::engine::general_purpose::STANDARD
            .encode("<ApplicationResponse><ID>1</ID></ApplicationResponse>");
        let none = parse_status_event(&answer("67", false, &empty_ar)).expect("parse");
        assert_eq!((none.status_code.as_str(), none.events.len()), ("67", 0));
        assert!(parse_status_event(&answer("00", true, "%%%")).is_err());
        assert!(
            parse_status_event(&answer("00", true, "PGE+")).is_err(),
            "not XML"
        );
    }
}
