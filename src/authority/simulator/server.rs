//! Routes of the simulator and the SOAP endpoint: WS-Security first, then
//! dispatch to the operation.

use super::contingency::{self, ContingencyPeriods};
use super::control;
use super::intake::{self, Intake, DESC_PENDING};
use super::reply;
use super::schema;
use super::state::{BatchStatus, CodeStatus, Mode, SimRegistry, SimState};
use super::wsdl;
use super::SimOptions;
use crate::authority::operation::{Operation, ACTION_PREFIX, WCF_NS};
use crate::authority::soap::response::DianResponse;
use crate::authority::soap::{content_type, ns, wssec};
use crate::authority::transmission::{Acquirer, DocumentXml, NumberingRangeResponse, UploadError};
use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use chrono::{DateTime, Utc};
use rand::Rng;
use roxmltree::{Document, Node};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Path of the SOAP service, as the authority's.
pub const SERVICE_PATH: &str = "/WcfDianCustomerServices.svc";

/// State shared by every worker of one simulator.
pub struct SimShared {
    pub registry: Arc<SimRegistry>,
    pub state: SimState,
    pub opts: SimOptions,
    /// The contingency periods it has declared (T04, rule CTG01).
    pub contingency: ContingencyPeriods,
}

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource(SERVICE_PATH)
            .route(web::post().to(soap))
            .route(web::get().to(service_get)),
    )
    .configure(control::routes)
    .configure(contingency::routes)
    .configure(super::clock::routes);
}

/// What a GET of the service asks for (WCF's metadata queries).
#[derive(Debug, PartialEq, Eq)]
enum Metadata {
    Wsdl(wsdl::Types),
    Xsd(Option<u8>),
    Page,
}

fn metadata_of(query: &str) -> Metadata {
    for p in query.split('&').map(str::to_ascii_lowercase) {
        if p == "singlewsdl" {
            return Metadata::Wsdl(wsdl::Types::Inline);
        }
        if p == "wsdl" || p.starts_with("wsdl=") {
            return Metadata::Wsdl(wsdl::Types::Imported);
        }
        if let Some(name) = p.strip_prefix("xsd=") {
            return Metadata::Xsd(name.strip_prefix("xsd").and_then(|n| n.parse().ok()));
        }
    }
    Metadata::Page
}

async fn service_get(req: HttpRequest) -> HttpResponse {
    let info = req.connection_info();
    let address = format!("{}://{}{}", info.scheme(), info.host(), SERVICE_PATH);
    let xml = |body: String| {
        HttpResponse::Ok()
            .content_type("text/xml; charset=utf-8")
            .body(body)
    };
    match metadata_of(req.query_string()) {
        Metadata::Wsdl(types) => xml(wsdl::wsdl(&address, types)),
        Metadata::Xsd(number) => match number.and_then(schema::document) {
            Some(doc) => xml(doc.standalone(&|n| Some(wsdl::xsd_location(&address, n)))),
            None => HttpResponse::NotFound()
                .content_type("text/plain; charset=utf-8")
                .body("Documento de esquema desconocido.\n"),
        },
        Metadata::Page => HttpResponse::Ok()
            .content_type("text/plain; charset=utf-8")
            .body("WcfDianCustomerServices (simulador). Descripción del servicio: ?wsdl\n"),
    }
}

/// The operation a call is for, for the statistics: the `action` of the
/// content type, else the action URI found near the start of the body.
fn operation_hint(req: &HttpRequest, body: &[u8]) -> String {
    let from_header = req
        .headers()
        .get(actix_web::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|ct| ct.split(';').find_map(|p| p.trim().strip_prefix("action=")))
        .map(|a| a.trim_matches('"').to_string())
        .and_then(|a| Operation::from_action(&a));
    if let Some(op) = from_header {
        return op.name().to_string();
    }
    let head = String::from_utf8_lossy(body.get(..16 * 1024).unwrap_or(body)).into_owned();
    head.find(ACTION_PREFIX)
        .and_then(|i| head.get(i + ACTION_PREFIX.len()..))
        .and_then(|rest| {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric())
                .collect();
            Operation::from_name(&name)
        })
        .map(|op| op.name().to_string())
        .unwrap_or_else(|| "unknown".to_string())
}

fn unavailable() -> HttpResponse {
    HttpResponse::ServiceUnavailable()
        .content_type("text/html; charset=utf-8")
        .body("<html><body><h1>503 Service Unavailable</h1></body></html>")
}

async fn soap(req: HttpRequest, body: web::Bytes, shared: web::Data<SimShared>) -> HttpResponse {
    let op_name = operation_hint(&req, &body);
    let _in_flight = shared.state.arrive(&op_name, Instant::now());
    let mode = shared.state.mode();
    match mode.mode {
        Mode::Down => {
            shared.state.refused();
            return unavailable();
        }
        Mode::Flaky if rand::thread_rng().gen::<f64>() < mode.fail_ratio => {
            shared.state.refused();
            return unavailable();
        }
        _ => {}
    }
    let content_type_header = req
        .headers()
        .get(actix_web::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let reject_all = mode.mode == Mode::Reject;
    let worker = shared.clone();
    let reply =
        web::block(move || handle(&worker, &content_type_header, &body, reject_all, Utc::now()))
            .await;
    let reply = reply.unwrap_or_else(|_| {
        Reply::fault("Receiver", None, "Error interno del simulador.", Utc::now())
    });
    // Slow answers late but has already processed the document, like an
    // authority whose answer is lost: a client that times out must ask for
    // the status before sending again. Reject takes `latency_ms` too, when
    // given, so a rejection can be lost the same way.
    if matches!(mode.mode, Mode::Slow | Mode::Reject) {
        actix_web::rt::time::sleep(Duration::from_millis(mode.latency_ms)).await;
    }
    // Processed and recorded, the answer lost on its way back: the client
    // cannot tell whether the document arrived.
    if mode.mode == Mode::Lose {
        return HttpResponse::BadGateway()
            .content_type("text/html; charset=utf-8")
            .body("<html><body><h1>502 Bad Gateway</h1></body></html>");
    }
    HttpResponse::build(reply.status)
        .content_type(reply.content_type)
        .body(reply.body)
}

/// One answer of the SOAP endpoint.
struct Reply {
    status: StatusCode,
    content_type: String,
    body: String,
}

impl Reply {
    fn ok(op: Operation, body: String) -> Reply {
        Reply {
            status: StatusCode::OK,
            content_type: content_type(&op.response_action()),
            body,
        }
    }

    /// SOAP faults travel with HTTP 500, as the authority's WCF service sends them.
    fn fault(code: &str, subcode: Option<&str>, reason: &str, now: DateTime<Utc>) -> Reply {
        Reply {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            content_type: "application/soap+xml; charset=utf-8".into(),
            body: reply::fault(code, subcode, reason, now),
        }
    }
}

fn param(op_node: Node<'_, '_>, name: &str) -> Option<String> {
    op_node
        .children()
        .find(|c| c.is_element() && c.tag_name().name() == name)
        .and_then(|c| c.text())
        .map(|t| t.trim().to_string())
}

fn handle(
    shared: &SimShared,
    content_type_header: &str,
    body: &[u8],
    reject_all: bool,
    now: DateTime<Utc>,
) -> Reply {
    if content_type_header
        .to_ascii_lowercase()
        .starts_with("text/xml")
    {
        return Reply {
            status: StatusCode::UNSUPPORTED_MEDIA_TYPE,
            content_type: "text/plain; charset=utf-8".into(),
            body: "Se esperaba SOAP 1.2 (application/soap+xml).".into(),
        };
    }
    let Ok(text) = std::str::from_utf8(body) else {
        return Reply::fault("Sender", None, "El mensaje no está en UTF-8.", now);
    };
    let doc = match Document::parse(text.trim_start_matches('\u{feff}')) {
        Ok(d) => d,
        Err(e) => return Reply::fault("Sender", None, &format!("XML mal formado: {e}"), now),
    };
    let envelope = doc.root_element();
    if !envelope.has_tag_name((ns::SOAP12, "Envelope")) {
        return Reply::fault(
            "VersionMismatch",
            None,
            "Se esperaba un sobre SOAP 1.2.",
            now,
        );
    }
    let caller = match wssec::verify_request(&doc, now) {
        Ok(verified) => auth_code(&verified.cert_der),
        Err(e) => {
            let subcode = match e {
                wssec::WsSecError::Missing(_) | wssec::WsSecError::Unsupported(_) => {
                    "InvalidSecurity"
                }
                _ => "FailedCheck",
            };
            return Reply::fault(
                "Sender",
                Some(subcode),
                &format!("Error al verificar la seguridad del mensaje: {e}"),
                now,
            );
        }
    };
    let op_node = envelope
        .children()
        .find(|c| c.has_tag_name((ns::SOAP12, "Body")))
        .and_then(|b| b.children().find(|c| c.is_element()));
    let op = op_node.and_then(|n| {
        (n.tag_name().namespace() == Some(WCF_NS))
            .then(|| Operation::from_name(n.tag_name().name()))
            .flatten()
    });
    let (Some(op), Some(op_node)) = (op, op_node) else {
        return Reply::fault(
            "Sender",
            None,
            "Operación no soportada (ActionNotSupported).",
            now,
        );
    };
    let action = envelope
        .descendants()
        .find(|n| n.has_tag_name((ns::WSA, "Action")))
        .and_then(|n| n.text())
        .map(str::trim);
    if action.is_some_and(|a| a != op.action()) {
        return Reply::fault(
            "Sender",
            None,
            "wsa:Action no corresponde a la operación del cuerpo.",
            now,
        );
    }
    dispatch(shared, op, op_node, reject_all, &caller, now)
}

/// The NIT the authority reads from the caller's certificate (its
/// `AuthCode`): the digits of the first subject attribute it looks for, in
/// its order (`CertificateClaimsAuthenticationManager`): the Colombian
/// CAs' NIT attribute (1.3.6.1.4.1.23267.2.3), `serialNumber`, `SN`,
/// 1.3.6.1.4.1.31136.1.1.20.2, `organizationIdentifier`. Empty when none.
fn auth_code(cert_der: &[u8]) -> String {
    use openssl::nid::Nid;
    let Ok(cert) = openssl::x509::X509::from_der(cert_der) else {
        return String::new();
    };
    let subject = cert.subject_name();
    let value_of = |wanted: &dyn Fn(&openssl::asn1::Asn1ObjectRef) -> bool| {
        subject
            .entries()
            .find(|e| wanted(e.object()))
            .map(|e| String::from_utf8_lossy(e.data().as_slice()).into_owned())
    };
    let by_oid = |oid: &'static str| move |o: &openssl::asn1::Asn1ObjectRef| o.to_string() == oid;
    let by_nid = |nid: Nid| move |o: &openssl::asn1::Asn1ObjectRef| o.nid() == nid;
    let found = value_of(&by_oid("1.3.6.1.4.1.23267.2.3"))
        .or_else(|| value_of(&by_nid(Nid::SERIALNUMBER)))
        .or_else(|| value_of(&by_nid(Nid::SURNAME)))
        .or_else(|| value_of(&by_oid("1.3.6.1.4.1.31136.1.1.20.2")))
        .or_else(|| value_of(&by_oid("2.5.4.97")));
    found
        .unwrap_or_default()
        .chars()
        .filter(char::is_ascii_digit)
        .collect()
}

/// GetXmlByDocumentKey as the authority answers it
/// (`DianPAServices.GetXmlByDocumentKey`): 89 for a track id it cannot
/// read, 404 for a code it has no accepted document of, 401 when the
/// caller's NIT is neither the sender's nor the receiver's (the simulator
/// knows no provider authorizations), else 100 and the document.
fn document_copy(shared: &SimShared, track_id: &str, caller: &str) -> DocumentXml {
    let answer = |code: &str, message: String| DocumentXml {
        code: code.into(),
        message,
        xml: None,
    };
    if track_id.is_empty() {
        return answer("89", "TrackId es nulo o vacío.".into());
    }
    if track_id.len() < 20 {
        return answer("89", "TrackId inválido (Length).".into());
    }
    let key = track_id.to_ascii_lowercase();
    let Some((xml, parties)) = shared.state.copies.get(&key) else {
        return answer(
            DocumentXml::NOT_FOUND,
            format!("Xml con CUFE: '{key}' no encontrado."),
        );
    };
    let receiver = parties.receiver.unwrap_or_default();
    let party = |nit: &str| !nit.is_empty() && caller.contains(nit);
    if caller.is_empty() || !(party(&parties.sender) || party(&receiver)) {
        return answer(
            DocumentXml::NOT_AUTHORIZED,
            format!(
                "NIT: {caller} del certificado no autorizado para consultar xmls de emisor con NIT: {} y receptor con NIT: {receiver}",
                parties.sender
            ),
        );
    }
    DocumentXml {
        code: DocumentXml::FOUND.into(),
        message: "Accion completada OK".into(),
        xml: Some(xml),
    }
}

fn pending() -> DianResponse {
    DianResponse {
        status_description: DESC_PENDING.into(),
        ..DianResponse::default()
    }
}

fn not_found(track_id: &str) -> DianResponse {
    DianResponse {
        status_code: "66".into(),
        status_description: "TrackId no encontrado".into(),
        xml_document_key: Some(track_id.to_string()),
        ..DianResponse::default()
    }
}

fn dispatch(
    shared: &SimShared,
    op: Operation,
    node: Node<'_, '_>,
    reject_all: bool,
    caller: &str,
    now: DateTime<Utc>,
) -> Reply {
    let p = |name: &str| param(node, name);
    let mut status = StatusCode::OK;
    let intake = Intake {
        registry: &shared.registry,
        state: &shared.state,
        checks: shared.opts.checks.as_ref(),
        op,
        reject_all,
        now,
        today: (shared.opts.today)(),
        contingency: &shared.contingency,
    };
    let body = match op {
        Operation::SendBillSync | Operation::SendNominaSync | Operation::SendEventUpdateStatus => {
            let verdict =
                intake.receive_sync(p("fileName").as_deref(), p("contentFile").as_deref());
            reply::dian_response(op, &verdict, now)
        }
        Operation::SendBillAsync | Operation::SendTestSetAsync => {
            let file_name = p("fileName");
            let refuse = |message: String| {
                let error = UploadError {
                    file_name: file_name.clone(),
                    processed_message: message,
                    success: false,
                    ..UploadError::default()
                };
                reply::upload_response(op, None, &[error], now)
            };
            let test_set = p("testSetId").unwrap_or_default();
            if op == Operation::SendTestSetAsync && !shared.registry.has_test_set(&test_set) {
                refuse(format!(
                    "Set de pruebas con identificador {test_set} no existe."
                ))
            } else {
                match intake.unzip(file_name.as_deref(), p("contentFile").as_deref()) {
                    Err(message) => refuse(message),
                    Ok(entries) => {
                        let results = entries.iter().map(|e| intake.receive_document(e)).collect();
                        let zip_key = uuid::Uuid::new_v4().to_string();
                        shared.state.put_batch(
                            &zip_key,
                            Instant::now() + shared.opts.async_delay,
                            results,
                        );
                        reply::upload_response(op, Some(&zip_key), &[], now)
                    }
                }
            }
        }
        Operation::GetStatus => {
            let track = p("trackId").unwrap_or_default();
            let verdict = match shared.state.code_status(&track) {
                CodeStatus::Accepted(doc) => intake::accepted(&doc, &track),
                CodeStatus::Rejected(errors) => intake::rejected(errors, Some(&track), None),
                CodeStatus::Unknown => not_found(&track),
            };
            reply::dian_response(op, &verdict, now)
        }
        Operation::GetStatusZip => {
            let key = p("trackId").unwrap_or_default();
            let list = match shared.state.batch(&key, Instant::now()) {
                BatchStatus::Unknown => vec![not_found(&key)],
                BatchStatus::Pending => vec![pending()],
                BatchStatus::Ready(list) => list,
            };
            reply::status_zip(&list, now)
        }
        Operation::GetNumberingRange => {
            let nit = p("accountCode").unwrap_or_default();
            let software = p("softwareCode").unwrap_or_default();
            let issuer = shared
                .registry
                .issuer(&nit)
                .filter(|i| i.software.iter().any(|s| s.id == software));
            let answer = match issuer {
                Some(i) => NumberingRangeResponse {
                    operation_code: "100".into(),
                    operation_description: "Acción completada OK.".into(),
                    ranges: i.ranges,
                },
                None => NumberingRangeResponse {
                    operation_code: "301".into(),
                    operation_description:
                        "No se encontraron rangos de numeración para el NIT y software indicados."
                            .into(),
                    ranges: Vec::new(),
                },
            };
            reply::numbering_range(&answer, now)
        }
        Operation::GetXmlByDocumentKey => {
            let track = p("trackId").unwrap_or_default();
            reply::event_response(&document_copy(shared, &track, caller), now)
        }
        Operation::GetStatusEvent => {
            let track = p("trackId").unwrap_or_default();
            reply::dian_response(op, &status_event(shared, &track, now), now)
        }
        Operation::GetAcquirer => {
            let answer = acquirer(
                shared,
                &p("identificationType").unwrap_or_default(),
                &p("identificationNumber").unwrap_or_default(),
            );
            if answer.status_code == Acquirer::NOT_FOUND {
                status = StatusCode::NOT_FOUND;
            }
            reply::acquirer_response(&answer, now)
        }
    };
    let mut reply = Reply::ok(op, body);
    reply.status = status;
    reply
}

/// GetStatusEvent as the authority answers it
/// (`DianPAServices.GetStatusEvent`): 89 for a track id it cannot read, 66
/// for a code it has not accepted, 68 for an accepted document that is not
/// an invoice, 67 for an invoice without events (its ApplicationResponse
/// lists none), else 00 and the events any company registered on it.
fn status_event(shared: &SimShared, track_id: &str, now: DateTime<Utc>) -> DianResponse {
    use super::events::InvoiceEventsLookup;
    use base64::Engine as _;
    let answer = |code: &str, description: &str| DianResponse {
        status_code: code.into(),
        status_description: description.into(),
        ..DianResponse::default()
    };
    if track_id.is_empty() {
        return answer("89", "TrackId es nulo o vacío.");
    }
    if track_id.len() < 20 {
        return answer("89", "TrackId inválido (Length).");
    }
    let key = track_id.to_ascii_lowercase();
    let doc = match shared.state.code_status(&key) {
        CodeStatus::Accepted(doc) => doc,
        _ => match shared.state.code_status(track_id) {
            CodeStatus::Accepted(doc) => doc,
            _ => return answer("66", "TrackId no existe en los registros de la DIAN."),
        },
    };
    let events = match shared.state.events.listing(&key) {
        InvoiceEventsLookup::NotAnInvoice => {
            return answer("68", "TrackId no corresponde a un CUFE.")
        }
        InvoiceEventsLookup::Events(events) => events,
    };
    let colombia = chrono::FixedOffset::west_opt(5 * 3600)
        .map(|tz| now.with_timezone(&tz))
        .unwrap_or_else(|| now.fixed_offset());
    let response_id = uuid::Uuid::new_v4().simple().to_string();
    let ar = super::app_response::events(&doc.issuer_nit, &events, &response_id, colombia);
    let mut verdict = intake::accepted(&doc, &key);
    verdict.xml_base64_bytes = Some(base64::engine::general_purpose::STANDARD.encode(ar));
    if events.is_empty() {
        verdict.is_valid = false;
        verdict.status_code = "67".into();
        verdict.status_description =
            "EL CUFE o Factura consultada no tiene a la fecha eventos asociados.".into();
        verdict.status_message = None;
    }
    verdict
}

/// GetAcquirer: the buyers set through the control API and the registered
/// issuers (by NIT). The authority answers an unknown buyer with HTTP 404,
/// StatusCode 404 and a nil name and email (a public client's call to its
/// testing service); its success code is not confirmed, `00` here.
fn acquirer(shared: &SimShared, identification_type: &str, number: &str) -> Acquirer {
    match shared.registry.acquirer(identification_type, number) {
        Some(buyer) => Acquirer {
            status_code: Acquirer::FOUND.into(),
            message: "Operación exitosa".into(),
            receiver_name: Some(buyer.name),
            receiver_email: buyer.email,
        },
        None => Acquirer {
            status_code: Acquirer::NOT_FOUND.into(),
            message: "El adquirente No existe en la base de datos".into(),
            receiver_name: None,
            receiver_email: None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_queries_as_wcf_names_them() {
        use wsdl::Types::{Imported, Inline};
        assert_eq!(metadata_of("wsdl"), Metadata::Wsdl(Imported));
        assert_eq!(metadata_of("WSDL"), Metadata::Wsdl(Imported));
        assert_eq!(metadata_of("wsdl=wsdl0"), Metadata::Wsdl(Imported));
        assert_eq!(metadata_of("singleWsdl"), Metadata::Wsdl(Inline));
        assert_eq!(metadata_of("xsd=xsd3"), Metadata::Xsd(Some(3)));
        assert_eq!(metadata_of("xsd=other"), Metadata::Xsd(None));
        assert_eq!(metadata_of(""), Metadata::Page);
    }
}
