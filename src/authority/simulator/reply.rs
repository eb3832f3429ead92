//! The simulator's SOAP 1.2 answers, shaped like the authority's
//! (protocol.md §4.4): `wsa:Action` and a `wsse:Security` header with a
//! `wsu:Timestamp`, results in the data-contract namespaces.

use crate::authority::operation::{Operation, WCF_NS};
use crate::authority::soap::response::DianResponse;
use crate::authority::soap::{escape_attr, escape_text, ns};
use crate::authority::transmission::{Acquirer, DocumentXml, NumberingRangeResponse, UploadError};
use chrono::{DateTime, Duration, SecondsFormat, Utc};

const FAULT_ACTION: &str = "http://www.w3.org/2005/08/addressing/soap/fault";

fn envelope(action: &str, body: &str, now: DateTime<Utc>) -> String {
    let created = now.to_rfc3339_opts(SecondsFormat::Millis, true);
    let expires = (now + Duration::minutes(5)).to_rfc3339_opts(SecondsFormat::Millis, true);
    format!(
        concat!(
            "<s:Envelope xmlns:s=\"{soap}\" xmlns:a=\"{wsa}\" xmlns:u=\"{wsu}\">",
            "<s:Header><a:Action s:mustUnderstand=\"1\">{action}</a:Action>",
            "<o:Security s:mustUnderstand=\"1\" xmlns:o=\"{wsse}\">",
            "<u:Timestamp u:Id=\"_0\"><u:Created>{created}</u:Created><u:Expires>{expires}</u:Expires></u:Timestamp>",
            "</o:Security></s:Header>",
            "<s:Body>{body}</s:Body></s:Envelope>"
        ),
        soap = ns::SOAP12,
        wsa = ns::WSA,
        wsu = ns::WSU,
        wsse = ns::WSSE,
        action = escape_text(action),
        created = created,
        expires = expires,
        body = body,
    )
}

fn opt(name: &str, value: Option<&str>, out: &mut String) {
    match value {
        Some(v) => out.push_str(&format!("<b:{name}>{}</b:{name}>", escape_text(v))),
        None => out.push_str(&format!("<b:{name} i:nil=\"true\"/>")),
    }
}

/// The children of one `DianResponse`, prefix `b` (and `c` for strings),
/// in the contract's order.
fn dian_fields(r: &DianResponse, out: &mut String) {
    // The authority's list is null when no document was processed (batch
    // pending, unknown track id) and empty for a document accepted clean.
    if r.error_messages.is_empty() && !r.is_valid {
        out.push_str(&format!(
            "<b:ErrorMessage i:nil=\"true\" xmlns:c=\"{}\"/>",
            ns::ARRAYS
        ));
    } else if r.error_messages.is_empty() {
        out.push_str(&format!("<b:ErrorMessage xmlns:c=\"{}\"/>", ns::ARRAYS));
    } else {
        out.push_str(&format!("<b:ErrorMessage xmlns:c=\"{}\">", ns::ARRAYS));
        for m in &r.error_messages {
            out.push_str(&format!("<c:string>{}</c:string>", escape_text(m)));
        }
        out.push_str("</b:ErrorMessage>");
    }
    out.push_str(&format!("<b:IsValid>{}</b:IsValid>", r.is_valid));
    if r.status_code.is_empty() {
        out.push_str("<b:StatusCode/>");
    } else {
        out.push_str(&format!(
            "<b:StatusCode>{}</b:StatusCode>",
            escape_text(&r.status_code)
        ));
    }
    out.push_str(&format!(
        "<b:StatusDescription>{}</b:StatusDescription>",
        escape_text(&r.status_description)
    ));
    opt("StatusMessage", r.status_message.as_deref(), out);
    opt("XmlBase64Bytes", r.xml_base64_bytes.as_deref(), out);
    out.push_str("<b:XmlBytes i:nil=\"true\"/>");
    opt("XmlDocumentKey", r.xml_document_key.as_deref(), out);
    opt("XmlFileName", r.xml_file_name.as_deref(), out);
}

fn result_open(op: Operation, contract_ns: &str) -> String {
    format!(
        "<{op}Response xmlns=\"{wcf}\"><{op}Result xmlns:b=\"{contract_ns}\" xmlns:i=\"{xsi}\">",
        op = op.name(),
        wcf = WCF_NS,
        xsi = ns::XSI
    )
}

fn result_close(op: Operation) -> String {
    format!("</{op}Result></{op}Response>", op = op.name())
}

/// One `DianResponse` (SendBillSync, GetStatus, SendNominaSync, SendEventUpdateStatus).
pub fn dian_response(op: Operation, r: &DianResponse, now: DateTime<Utc>) -> String {
    let mut body = result_open(op, ns::DIAN_RESPONSE);
    dian_fields(r, &mut body);
    body.push_str(&result_close(op));
    envelope(&op.response_action(), &body, now)
}

/// The `GetStatusZip` array.
pub fn status_zip(list: &[DianResponse], now: DateTime<Utc>) -> String {
    let op = Operation::GetStatusZip;
    let mut body = result_open(op, ns::DIAN_RESPONSE);
    for r in list {
        body.push_str("<b:DianResponse>");
        dian_fields(r, &mut body);
        body.push_str("</b:DianResponse>");
    }
    body.push_str(&result_close(op));
    envelope(&op.response_action(), &body, now)
}

/// `UploadDocumentResponse` (SendBillAsync, SendTestSetAsync).
pub fn upload_response(
    op: Operation,
    zip_key: Option<&str>,
    errors: &[UploadError],
    now: DateTime<Utc>,
) -> String {
    let mut body = result_open(op, ns::UPLOAD_RESPONSE);
    if errors.is_empty() {
        body.push_str(&format!(
            "<b:ErrorMessageList i:nil=\"true\" xmlns:c=\"{}\"/>",
            ns::TRACK_ID
        ));
    } else {
        body.push_str(&format!(
            "<b:ErrorMessageList xmlns:c=\"{}\">",
            ns::TRACK_ID
        ));
        for e in errors {
            let item = |name: &str, v: Option<&str>| match v {
                Some(v) => format!("<c:{name}>{}</c:{name}>", escape_text(v)),
                None => format!("<c:{name} i:nil=\"true\"/>"),
            };
            body.push_str("<c:XmlParamsResponseTrackId>");
            body.push_str(&item("DocumentKey", e.document_key.as_deref()));
            body.push_str(&item("ProcessedMessage", Some(&e.processed_message)));
            body.push_str(&item("SenderCode", e.sender_code.as_deref()));
            body.push_str(&format!("<c:Success>{}</c:Success>", e.success));
            body.push_str(&item("XmlFileName", e.file_name.as_deref()));
            body.push_str("</c:XmlParamsResponseTrackId>");
        }
        body.push_str("</b:ErrorMessageList>");
    }
    opt("ZipKey", zip_key, &mut body);
    body.push_str(&result_close(op));
    envelope(&op.response_action(), &body, now)
}

/// `NumberRangeResponseList` (GetNumberingRange).
pub fn numbering_range(r: &NumberingRangeResponse, now: DateTime<Utc>) -> String {
    let op = Operation::GetNumberingRange;
    let mut body = result_open(op, ns::NUMBER_RANGE_LIST);
    body.push_str(&format!(
        "<b:OperationCode>{}</b:OperationCode>",
        escape_text(&r.operation_code)
    ));
    body.push_str(&format!(
        "<b:OperationDescription>{}</b:OperationDescription>",
        escape_text(&r.operation_description)
    ));
    body.push_str(&format!(
        "<b:ResponseList xmlns:c=\"{}\">",
        ns::NUMBER_RANGE
    ));
    for x in &r.ranges {
        let f = |name: &str, v: &str| format!("<c:{name}>{}</c:{name}>", escape_text(v));
        body.push_str("<c:NumberRangeResponse>");
        body.push_str(&f("ResolutionNumber", &x.resolution_number));
        body.push_str(&f("ResolutionDate", &x.resolution_date));
        body.push_str(&f("Prefix", &x.prefix));
        body.push_str(&f("FromNumber", &x.from_number.to_string()));
        body.push_str(&f("ToNumber", &x.to_number.to_string()));
        body.push_str(&f("ValidDateFrom", &x.valid_date_from));
        body.push_str(&f("ValidDateTo", &x.valid_date_to));
        match &x.technical_key {
            Some(k) => body.push_str(&f("TechnicalKey", k)),
            None => body.push_str("<c:TechnicalKey i:nil=\"true\"/>"),
        }
        body.push_str("</c:NumberRangeResponse>");
    }
    body.push_str("</b:ResponseList>");
    body.push_str(&result_close(op));
    envelope(&op.response_action(), &body, now)
}

/// `EventResponse` (GetXmlByDocumentKey): `Code`, `Message` and the
/// document in base64, in the contract's order.
pub fn event_response(r: &DocumentXml, now: DateTime<Utc>) -> String {
    use base64::Engine as _;
    let op = Operation::GetXmlByDocumentKey;
    let mut body = result_open(op, ns::EVENT_RESPONSE);
    opt("Code", Some(&r.code), &mut body);
    opt("Message", Some(&r.message), &mut body);
    let xml = r
        .xml
        .as_deref()
        .map(|x| base64::engine::general_purpose::STANDARD.encode(x));
    opt("XmlBytesBase64", xml.as_deref(), &mut body);
    body.push_str(&result_close(op));
    envelope(&op.response_action(), &body, now)
}

/// `AdquirienteResponse` (GetAcquirer): `Message`, `ReceiverEmail`,
/// `ReceiverName`, `StatusCode`, in the contract's order.
pub fn acquirer_response(r: &Acquirer, now: DateTime<Utc>) -> String {
    let op = Operation::GetAcquirer;
    let mut body = result_open(op, ns::ACQUIRER_RESPONSE);
    opt("Message", Some(&r.message), &mut body);
    opt("ReceiverEmail", r.receiver_email.as_deref(), &mut body);
    opt("ReceiverName", r.receiver_name.as_deref(), &mut body);
    opt("StatusCode", Some(&r.status_code), &mut body);
    body.push_str(&result_close(op));
    envelope(&op.response_action(), &body, now)
}

/// A SOAP 1.2 fault; `code` is `Sender` or `Receiver`, `subcode` a
/// qualified name in the WS-Security namespace (`InvalidSecurity`,
/// `FailedCheck`…) when given.
pub fn fault(code: &str, subcode: Option<&str>, reason: &str, now: DateTime<Utc>) -> String {
    let sub = subcode
        .map(|s| {
            format!(
                "<s:Subcode><s:Value xmlns:wsse=\"{}\">wsse:{}</s:Value></s:Subcode>",
                escape_attr(ns::WSSE),
                escape_text(s)
            )
        })
        .unwrap_or_default();
    let body = format!(
        "<s:Fault><s:Code><s:Value>s:{}</s:Value>{sub}</s:Code><s:Reason><s:Text xml:lang=\"es-CO\">{}</s:Text></s:Reason></s:Fault>",
        escape_text(code),
        escape_text(reason)
    );
    envelope(FAULT_ACTION, &body, now)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authority::soap::response::{
        parse_dian_response, parse_numbering_range, parse_status_zip, parse_upload_response,
        ResponseError,
    };
    use crate::authority::transmission::{NumberRange, StatusZip};

    fn sample() -> DianResponse {
        DianResponse {
            error_messages: vec!["Regla: FAD06, Rechazo: a & b".into()],
            is_valid: false,
            status_code: "99".into(),
            status_description: "Validación contiene errores en campos mandatorios.".into(),
            status_message: None,
            xml_base64_bytes: None,
            xml_document_key: Some("k".into()),
            xml_file_name: Some("fv1".into()),
        }
    }

    #[test]
    fn answers_parse_back() {
        let now = Utc::now();
        let xml = dian_response(Operation::SendBillSync, &sample(), now);
        assert_eq!(
            parse_dian_response(&xml, Operation::SendBillSync).expect("parse"),
            sample()
        );
        let pending = DianResponse {
            status_description: "Batch en proceso de validación.".into(),
            ..DianResponse::default()
        };
        assert_eq!(
            parse_status_zip(&status_zip(&[pending], now)).expect("zip"),
            StatusZip::Pending
        );
        let up = upload_response(Operation::SendBillAsync, Some("zk"), &[], now);
        assert_eq!(
            parse_upload_response(&up, Operation::SendBillAsync)
                .expect("up")
                .zip_key
                .as_deref(),
            Some("zk")
        );
        let nr = NumberingRangeResponse {
            operation_code: "100".into(),
            operation_description: "Acción completada OK.".into(),
            ranges: vec![NumberRange {
                resolution_number: "1".into(),
                prefix: "SETP".into(),
                from_number: 1,
                to_number: 9,
                technical_key: None,
                ..NumberRange::default()
            }],
        };
        assert_eq!(
            parse_numbering_range(&numbering_range(&nr, now)).expect("nr"),
            nr
        );
        match parse_dian_response(
            &fault("Sender", Some("InvalidSecurity"), "x", now),
            Operation::GetStatus,
        ) {
            Err(ResponseError::Fault(f)) => {
                assert_eq!(
                    (f.code.as_str(), f.subcode.as_deref()),
                    ("Sender", Some("InvalidSecurity"))
                )
            }
            other => panic!("expected a fault, got {other:?}"),
        }
    }

    #[test]
    fn header_has_a_timestamp() {
        let xml = dian_response(Operation::GetStatus, &sample(), Utc::now());
        let doc = roxmltree::Document::parse(&xml).expect("xml");
        assert!(doc
            .descendants()
            .any(|n| n.has_tag_name((ns::WSU, "Timestamp"))));
        assert!(doc
            .descendants()
            .any(|n| n.has_tag_name((ns::WSA, "Action"))
                && n.text() == Some(Operation::GetStatus.response_action().as_str())));
    }
}
