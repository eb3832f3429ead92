//! The simulator driven over real HTTP by [`AuthorityClient`].

use super::intake::REJECT_MODE_ERROR;
use super::package::zip_of;
use super::*;
use crate::authority::operation::Operation;
use crate::authority::soap::response::rule_of;
use crate::authority::transmission::{StatusZip, TransmitError};
use crate::authority::{AuthorityClient, AuthorityClientConfig, WsSigner};
use crate::engine::codes;
use crate::engine::xades;
use crate::fixtures::{self, signing_key, signing_time, NIT, PIN, SOFTWARE, TECH_KEY};
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;

const PAYROLL_SOFTWARE: &str = "soft-nomina";
const PAYROLL_PIN: &str = "67890";
const TEST_SET: &str = "set-1";

/// The sample issuer, with payroll software and a test set too.
fn issuer() -> IssuerRecord {
    let mut issuer = fixtures::issuer(NIT);
    issuer.software.push(SoftwareRecord {
        id: PAYROLL_SOFTWARE.into(),
        pin: PAYROLL_PIN.into(),
    });
    issuer.test_set_ids = vec![TEST_SET.into()];
    issuer
}

/// A signed invoice of the sample issuer and its CUFE (computed with `key`).
fn signed_invoice(number: &str, key: &str) -> (String, String) {
    fixtures::signed_invoice(NIT, number, key)
}

/// A signed payroll document (CUNE with the payroll PIN, or `pin`).
fn signed_payroll(pin: &str) -> (String, String) {
    let with_code = |code: &str| {
        [
            "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>",
            "<NominaIndividual xmlns=\"dian:gov:co:facturaelectronica:NominaIndividual\"",
            " xmlns:ds=\"http://www.w3.org/2000/09/xmldsig#\"",
            " xmlns:ext=\"urn:oasis:names:specification:ubl:schema:xsd:CommonExtensionComponents-2\"",
            " xmlns:xades=\"http://uri.etsi.org/01903/v1.3.2#\"",
            " xmlns:xades141=\"http://uri.etsi.org/01903/v1.4.1#\">",
            "<ext:UBLExtensions><ext:UBLExtension><ext:ExtensionContent></ext:ExtensionContent></ext:UBLExtension></ext:UBLExtensions>",
            "<NumeroSecuenciaXML Consecutivo=\"1\" Numero=\"NOM1\" Prefijo=\"NOM\"></NumeroSecuenciaXML>",
            "<ProveedorXML NIT=\"",
            NIT,
            "\" SoftwareID=\"",
            PAYROLL_SOFTWARE,
            "\"></ProveedorXML>",
            "<CodigoQR>https://catalogo-vpfe-hab.dian.gov.co/document/searchqr?documentkey=",
            code,
            "</CodigoQR>",
            "<InformacionGeneral Ambiente=\"2\" CUNE=\"",
            code,
            "\" FechaGen=\"2024-02-15\" HoraGen=\"07:43:48-05:00\" TipoXML=\"102\"></InformacionGeneral>",
            "<Empleador NIT=\"",
            NIT,
            "\"></Empleador><Trabajador NumeroDocumento=\"1020304050\"></Trabajador>",
            "<DevengadosTotal>3000000.00</DevengadosTotal><DeduccionesTotal>240000.00</DeduccionesTotal>",
            "<ComprobanteTotal>2760000.00</ComprobanteTotal></NominaIndividual>",
        ]
        .concat()
    };
    let code = codes::payroll_code(&codes::PayrollCodeInput {
        number: "NOM1",
        gen_date: "2024-02-15",
        gen_time: "07:43:48-05:00",
        earnings: rust_decimal::Decimal::new(300_000_000, 2),
        deductions: rust_decimal::Decimal::new(24_000_000, 2),
        total: rust_decimal::Decimal::new(276_000_000, 2),
        employer_nit: NIT,
        employee_doc: "1020304050",
        xml_type: "102",
        pin,
        environment: 2,
    });
    let signed = xades::sign(&with_code(&code), &signing_key(), signing_time()).expect("sign");
    (signed, code)
}

fn zip1(xml: &str) -> Vec<u8> {
    zip_of(&[("fv09000000010002400000001.xml", xml.as_bytes())])
}

/// A simulator that knows the sample issuer, and a client of it.
struct Sim {
    server: fixtures::Sim,
    client: AuthorityClient,
}

impl Sim {
    async fn start() -> Sim {
        let opts = SimOptions {
            async_delay: Duration::from_millis(300),
            workers: 1,
            today: fixtures::signing_day,
            ..SimOptions::default()
        };
        let server = fixtures::Sim::start([issuer()], opts).await;
        let client = client_for(server.addr, Duration::from_secs(10));
        Sim { server, client }
    }

    async fn stop(self) {
        self.server.stop().await;
    }
}

impl std::ops::Deref for Sim {
    type Target = fixtures::Sim;

    fn deref(&self) -> &fixtures::Sim {
        &self.server
    }
}

fn client_for(addr: std::net::SocketAddr, timeout: Duration) -> AuthorityClient {
    AuthorityClient::new(
        AuthorityClientConfig::new(service_url(addr)).with_timeout(timeout),
        fixtures::signer(),
    )
}

#[actix_web::test]
async fn accepted_then_duplicate_then_status() {
    let sim = Sim::start().await;
    let (xml, code) = signed_invoice("SETP990000001", TECH_KEY);

    let t = sim
        .client
        .send_bill_sync("z1.zip", &zip1(&xml))
        .await
        .expect("send");
    assert!(t.is_valid, "{t:?}");
    assert_eq!(t.status_code, "00");
    assert_eq!(t.status_description, "Procesado Correctamente.");
    assert!(t.errors.is_empty() && !t.duplicate && !t.retryable);
    assert_eq!(t.document_key.as_deref(), Some(code.as_str()));
    let ar = B64
        .decode(t.application_response_b64.as_deref().expect("AR"))
        .expect("base64");
    let ar = String::from_utf8(ar).expect("utf8");
    assert!(roxmltree::Document::parse(&ar).is_ok());
    assert!(ar.contains(&code) && ar.contains("<cbc:ResponseCode>02</cbc:ResponseCode>"));

    // Sent again: rule 90, which the client reads as already accepted.
    let again = sim
        .client
        .send_bill_sync("z1.zip", &zip1(&xml))
        .await
        .expect("send");
    assert!(again.is_valid && again.duplicate, "{again:?}");
    assert_eq!(again.status_code, "00");
    assert_eq!(again.document_key.as_deref(), Some(code.as_str()));
    // On the wire it is the authority's duplicate answer.
    let raw = sim
        .client
        .call(&crate::authority::soap::envelope::Request::send_bill_sync(
            "z1.zip",
            &zip1(&xml),
        ))
        .await
        .expect("raw");
    let raw = crate::authority::soap::response::parse_dian_response(&raw, Operation::SendBillSync)
        .expect("parse");
    assert!(!raw.is_valid);
    assert_eq!(raw.status_code, "99");
    assert_eq!(
        raw.error_messages,
        vec!["Regla: 90, Rechazo: Documento procesado anteriormente.".to_string()]
    );

    let status = sim.client.get_status(&code).await.expect("status");
    assert!(status.is_valid);
    assert_eq!(status.status_code, "00");
    let unknown = sim.client.get_status("nope").await.expect("status");
    assert!(!unknown.is_valid);
    assert_eq!(unknown.status_code, "66");

    let stats = sim.stats().await;
    assert_eq!(stats["calls"]["SendBillSync"], 3);
    assert_eq!(stats["calls"]["GetStatus"], 2);
    assert_eq!(stats["accepted_count"], 1);
    assert_eq!(stats["accepted"][&code]["received"], 3);
    assert_eq!(stats["accepted"][&code]["number"], "SETP990000001");
    sim.stop().await;
}

/// The simulator's day in [`an_invoice_not_dated_the_day_it_is_received_is_refused_with_fad09e`]:
/// the sample's, or the next once this is set.
static A_DAY_LATER: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Annex 1.9: an invoice dated another day than the one it is received
/// is refused with FAD09e, in the authority's answer shape (protocol.md
/// §4.4); an accepted one sent again on a later day is still answered as
/// the duplicate it is.
#[actix_web::test]
async fn an_invoice_not_dated_the_day_it_is_received_is_refused_with_fad09e() {
    use std::sync::atomic::Ordering;
    let next_day = || fixtures::signing_day().succ_opt().expect("a day");
    let opts = SimOptions {
        workers: 1,
        today: || {
            let day = fixtures::signing_day();
            if A_DAY_LATER.load(Ordering::SeqCst) {
                day.succ_opt().expect("a day")
            } else {
                day
            }
        },
        ..SimOptions::default()
    };
    let sim = fixtures::Sim::start([issuer()], opts).await;
    let client = client_for(sim.addr, Duration::from_secs(10));
    let (first, first_code) = signed_invoice("SETP990000001", TECH_KEY);
    let t = client
        .send_bill_sync("z1.zip", &zip1(&first))
        .await
        .expect("send");
    assert!(t.is_valid && !t.duplicate, "{t:?}");

    A_DAY_LATER.store(true, Ordering::SeqCst);
    let again = client
        .send_bill_sync("z1.zip", &zip1(&first))
        .await
        .expect("send");
    assert!(again.is_valid && again.duplicate, "{again:?}");

    let (xml, code) = signed_invoice("SETP990000002", TECH_KEY);
    let raw = client
        .call(&crate::authority::soap::envelope::Request::send_bill_sync(
            "z2.zip",
            &zip1(&xml),
        ))
        .await
        .expect("raw");
    let raw = crate::authority::soap::response::parse_dian_response(&raw, Operation::SendBillSync)
        .expect("parse");
    assert!(!raw.is_valid);
    assert_eq!(raw.status_code, "99");
    assert_eq!(
        raw.status_description,
        "Validación contiene errores en campos mandatorios."
    );
    assert_eq!(raw.xml_document_key.as_deref(), Some(code.as_str()));
    assert_eq!(
        raw.error_messages,
        vec![format!(
            "Regla: FAD09e, Rechazo: La fecha de generación de la factura (2024-02-15) es diferente a la fecha de su recepción ({}).",
            next_day()
        )]
    );
    let stats = sim.stats().await;
    assert_eq!(stats["accepted_count"], 1);
    assert_eq!(stats["accepted"][&first_code]["received"], 2);
    assert_eq!(stats["rejected_count"], 1);
    sim.stop().await;
}

fn first_rule(t: &crate::authority::Transmission) -> String {
    t.errors
        .first()
        .and_then(|e| rule_of(e))
        .unwrap_or("")
        .to_string()
}

#[actix_web::test]
async fn document_rejections_carry_the_authoritys_rules() {
    let sim = Sim::start().await;
    let send = |file: &'static str, zip: Vec<u8>| {
        let client = sim.client.clone();
        async move { client.send_bill_sync(file, &zip).await.expect("send") }
    };

    // Tampered after signing: the XAdES signature no longer verifies.
    let (xml, _) = signed_invoice("SETP990000002", TECH_KEY);
    let tampered = xml.replace("1190.00", "1191.00");
    let t = send("z.zip", zip1(&tampered)).await;
    assert!(!t.is_valid && !t.retryable);
    assert_eq!(t.status_code, "99");
    assert_eq!(first_rule(&t), "ZE02");

    // Signed, but the CUFE was computed with another key.
    let (xml, code) = signed_invoice("SETP990000003", "wrong-key");
    let t = send("z.zip", zip1(&xml)).await;
    assert_eq!(first_rule(&t), "FAD06", "{t:?}");
    assert_eq!(
        t.errors[0],
        "Regla: FAD06, Rechazo: Valor del CUFE no está calculado correctamente."
    );
    assert_eq!(t.document_key.as_deref(), Some(code.as_str()));

    // Number outside the authorized range.
    let (xml, _) = signed_invoice("SETP995000001", TECH_KEY);
    assert_eq!(first_rule(&send("z.zip", zip1(&xml)).await), "FAD05d");

    // ZIP problems: not a ZIP, no .zip name, two documents in a sync send.
    let t = send("z.zip", b"definitely not a zip".to_vec()).await;
    assert!(!t.is_valid && !t.retryable);
    assert_eq!(first_rule(&t), "89");
    let (xml, _) = signed_invoice("SETP990000004", TECH_KEY);
    assert_eq!(first_rule(&send("z.xml", zip1(&xml)).await), "89");
    let two = zip_of(&[("a.xml", xml.as_bytes()), ("b.xml", xml.as_bytes())]);
    assert_eq!(first_rule(&send("z.zip", two).await), "89");

    // Not well-formed XML.
    let t = send("z.zip", zip1("<Invoice><cbc:ID>")).await;
    assert_eq!(first_rule(&t), "ZB01");

    // Nothing was accepted.
    let stats = sim.stats().await;
    assert_eq!(stats["accepted_count"], 0);
    sim.stop().await;
}

#[actix_web::test]
async fn payroll_is_checked_with_its_own_pin() {
    let sim = Sim::start().await;
    let (xml, code) = signed_payroll(PAYROLL_PIN);
    let t = sim
        .client
        .send_nomina_sync(&zip1(&xml))
        .await
        .expect("send");
    assert!(t.is_valid, "{t:?}");
    assert_eq!(t.document_key.as_deref(), Some(code.as_str()));
    let (xml, _) = signed_payroll(PIN);
    let t = sim
        .client
        .send_nomina_sync(&zip1(&xml))
        .await
        .expect("send");
    assert_eq!(first_rule(&t), "NIE024");
    sim.stop().await;
}

#[actix_web::test]
async fn bad_ws_security_is_a_soap_fault() {
    let sim = Sim::start().await;
    // The token is our certificate but another key signed.
    let (other, _) = fixtures::self_signed();
    let (_, der) = fixtures::shared();
    let forged = AuthorityClient::new(
        AuthorityClientConfig::new(service_url(sim.addr)),
        WsSigner::new(other, der).expect("signer"),
    );
    match forged.get_status("x").await {
        Err(TransmitError::Fault(f)) => {
            assert_eq!(f.code, "Sender");
            assert_eq!(f.subcode.as_deref(), Some("FailedCheck"));
        }
        other => panic!("expected a fault, got {other:?}"),
    }
    // No security header at all.
    let unsigned = format!(
        "<s:Envelope xmlns:s=\"{}\"><s:Body><GetStatus xmlns=\"http://wcf.dian.colombia\"><trackId>x</trackId></GetStatus></s:Body></s:Envelope>",
        crate::authority::soap::ns::SOAP12
    );
    let mut resp = awc::Client::default()
        .post(sim.url(SERVICE_PATH))
        .insert_header(("content-type", "application/soap+xml; charset=utf-8"))
        .send_body(unsigned)
        .await
        .expect("post");
    assert_eq!(resp.status().as_u16(), 500);
    let body = resp.body().await.expect("body");
    let body = String::from_utf8_lossy(&body);
    assert!(body.contains("InvalidSecurity"), "{body}");
    sim.stop().await;
}

#[actix_web::test]
async fn modes_down_slow_reject_flaky() {
    let sim = Sim::start().await;

    sim.mode(serde_json::json!({"mode": "down"})).await;
    match sim.client.get_status("x").await {
        Err(e @ TransmitError::Http { status: 503, .. }) => assert!(e.is_retryable()),
        other => panic!("expected 503, got {other:?}"),
    }

    sim.mode(serde_json::json!({"mode": "slow", "latency_ms": 1500}))
        .await;
    let impatient = client_for(sim.addr, Duration::from_millis(300));
    match impatient.get_status("x").await {
        Err(e @ TransmitError::Timeout(_)) => assert!(e.is_retryable()),
        other => panic!("expected a timeout, got {other:?}"),
    }

    sim.mode(serde_json::json!({"mode": "reject"})).await;
    let (xml, _) = signed_invoice("SETP990000010", TECH_KEY);
    let t = sim
        .client
        .send_bill_sync("z.zip", &zip1(&xml))
        .await
        .expect("send");
    assert!(!t.is_valid && !t.retryable);
    assert_eq!(t.errors, vec![REJECT_MODE_ERROR.to_string()]);

    sim.mode(serde_json::json!({"mode": "flaky", "fail_ratio": 1.0}))
        .await;
    assert!(matches!(
        sim.client.get_status("x").await,
        Err(TransmitError::Http { status: 503, .. })
    ));
    sim.mode(serde_json::json!({"mode": "flaky", "fail_ratio": 0.0}))
        .await;
    assert!(sim.client.get_status("x").await.is_ok());

    let bad = awc::Client::default()
        .post(sim.url("/__sim/mode"))
        .send_json(&serde_json::json!({"mode": "flaky", "fail_ratio": 2.0}))
        .await
        .expect("mode");
    assert_eq!(bad.status().as_u16(), 400);

    sim.mode(serde_json::json!({"mode": "up"})).await;
    let t = sim
        .client
        .send_bill_sync("z.zip", &zip1(&xml))
        .await
        .expect("send");
    assert!(
        t.is_valid && !t.duplicate,
        "rejected in mode reject, accepted now: {t:?}"
    );

    let stats = sim.stats().await;
    assert_eq!(stats["refused"], 2);
    assert_eq!(stats["calls"]["GetStatus"], 4);
    sim.stop().await;
}

/// A rejection whose answer was lost (mode reject with a latency): the
/// simulator already judged the document, and `GetStatus` says so.
#[actix_web::test]
async fn a_lost_rejection_is_answered_by_get_status() {
    let sim = Sim::start().await;
    sim.mode(serde_json::json!({"mode": "reject", "latency_ms": 1500}))
        .await;
    let (xml, code) = signed_invoice("SETP990000011", TECH_KEY);
    let impatient = client_for(sim.addr, Duration::from_millis(300));
    match impatient.send_bill_sync("z.zip", &zip1(&xml)).await {
        Err(e @ TransmitError::Timeout(_)) => assert!(e.is_retryable()),
        other => panic!("expected a timeout, got {other:?}"),
    }
    sim.mode(serde_json::json!({"mode": "up"})).await;
    let t = sim.client.get_status(&code).await.expect("status");
    assert!(t.known_rejection(), "{t:?}");
    assert_eq!(t.status_code, "99");
    assert_eq!(t.errors, vec![REJECT_MODE_ERROR.to_string()]);
    let t = sim.client.get_status("unknown").await.expect("status");
    assert!(!t.known_rejection() && t.status_code == "66", "{t:?}");
    sim.stop().await;
}

#[actix_web::test]
async fn connection_refused_is_retryable() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port");
    let client = client_for(port, Duration::from_secs(5));
    match client.get_status("x").await {
        Err(e @ (TransmitError::Connect(_) | TransmitError::Transport(_))) => {
            assert!(e.is_retryable())
        }
        other => panic!("expected a connection error, got {other:?}"),
    }
}

#[actix_web::test]
async fn wsdl_is_served_with_its_own_address() {
    let sim = Sim::start().await;
    let mut resp = awc::Client::default()
        .get(format!("{}?wsdl", sim.url(SERVICE_PATH)))
        .send()
        .await
        .expect("get");
    assert!(resp.status().is_success());
    let body = resp.body().await.expect("body");
    let text = String::from_utf8_lossy(&body);
    let doc = roxmltree::Document::parse(&text).expect("xml");
    let location = doc
        .descendants()
        .find(|n| n.has_tag_name(("http://schemas.xmlsoap.org/wsdl/soap12/", "address")))
        .and_then(|n| n.attribute("location"));
    assert_eq!(location, Some(service_url(sim.addr).as_str()));
    sim.stop().await;
}

#[actix_web::test]
async fn async_batches_and_test_sets() {
    let sim = Sim::start().await;
    let (xml, code) = signed_invoice("SETP990000020", TECH_KEY);
    let up = sim
        .client
        .send_bill_async("z.zip", &zip1(&xml))
        .await
        .expect("send");
    let key = up.zip_key.clone().expect("zip key");
    assert!(up.errors.is_empty());
    assert_eq!(
        sim.client.get_status_zip(&key).await.expect("status"),
        StatusZip::Pending
    );
    actix_web::rt::time::sleep(Duration::from_millis(400)).await;
    match sim.client.get_status_zip(&key).await.expect("status") {
        StatusZip::Done(list) => {
            assert_eq!(list.len(), 1);
            assert!(list[0].is_valid);
            assert_eq!(list[0].document_key.as_deref(), Some(code.as_str()));
            assert_eq!(list[0].zip_key.as_deref(), Some(key.as_str()));
        }
        StatusZip::Pending => panic!("still pending"),
    }
    match sim.client.get_status_zip("unknown").await.expect("status") {
        StatusZip::Done(list) => assert_eq!(list[0].status_code, "66"),
        StatusZip::Pending => panic!("unknown key reported pending"),
    }

    let (xml, _) = signed_invoice("SETP990000021", TECH_KEY);
    let up = sim
        .client
        .send_test_set_async("z.zip", &zip1(&xml), TEST_SET)
        .await
        .expect("send");
    assert!(up.zip_key.is_some());
    let up = sim
        .client
        .send_test_set_async("z.zip", &zip1(&xml), "no-such-set")
        .await
        .expect("send");
    assert!(up.zip_key.is_none() && !up.errors.is_empty());
    let up = sim
        .client
        .send_bill_async("z.zip", b"garbage")
        .await
        .expect("send");
    assert!(up.zip_key.is_none());
    assert_eq!(rule_of(&up.errors[0].processed_message), Some("89"));
    sim.stop().await;
}

#[actix_web::test]
async fn numbering_ranges_and_registry_over_http() {
    let sim = Sim::start().await;
    let r = sim
        .client
        .get_numbering_range(NIT, NIT, SOFTWARE)
        .await
        .expect("ranges");
    assert_eq!(r.operation_code, "100");
    assert_eq!(r.ranges, issuer().ranges);
    let none = sim
        .client
        .get_numbering_range("123", NIT, SOFTWARE)
        .await
        .expect("ranges");
    assert_ne!(none.operation_code, "100");
    assert!(none.ranges.is_empty());

    // A second issuer registered over HTTP can send right away.
    let mut other = issuer();
    other.nit = "901234567".into();
    let resp = awc::Client::default()
        .put(sim.url("/__sim/issuers"))
        .send_json(&other)
        .await
        .expect("put");
    assert!(resp.status().is_success());
    let r = sim
        .client
        .get_numbering_range("901234567", NIT, SOFTWARE)
        .await
        .expect("ranges");
    assert_eq!(r.operation_code, "100");
    sim.stop().await;
}

#[actix_web::test]
async fn stats_report_concurrency_and_rate() {
    let sim = Sim::start().await;
    sim.mode(serde_json::json!({"mode": "slow", "latency_ms": 300}))
        .await;
    let calls = (0..3).map(|_| sim.client.get_status("x"));
    let results = futures_util::future::join_all(calls).await;
    assert!(results.iter().all(Result::is_ok));
    let stats = sim.stats().await;
    assert_eq!(stats["max_in_flight"], 3);
    assert!(stats["max_per_second"].as_u64().unwrap_or(0) >= 3);
    assert_eq!(stats["in_flight"], 0);

    sim.reset().await;
    assert_eq!(sim.stats().await["total_calls"], 0);
    sim.stop().await;
}

/// A client whose WS-Security certificate names `nit` (subject serialNumber).
fn client_of(addr: std::net::SocketAddr, nit: &str) -> AuthorityClient {
    let (p12, password) =
        crate::engine::signing_key::generate_self_signed("Parte", nit, 2).expect("p12");
    let key = crate::engine::signing_key::SigningKey::from_pkcs12(&p12, &password).expect("key");
    let signer =
        WsSigner::new(key.private_key().clone(), key.certificate_der().to_vec()).expect("signer");
    AuthorityClient::new(AuthorityClientConfig::new(service_url(addr)), signer)
}

#[actix_web::test]
async fn an_accepted_document_comes_back_as_received_to_its_parties_only() {
    use crate::authority::transmission::DocumentXml;
    let sim = Sim::start().await;
    let (xml, code) = signed_invoice("SETP990000002", TECH_KEY);
    let t = sim
        .client
        .send_bill_sync("z2.zip", &zip1(&xml))
        .await
        .expect("send");
    assert!(t.is_valid, "{t:?}");

    // Its vendor and its buyer get the file exactly as sent (the code in
    // any case, as the authority lower-cases it).
    for nit in [NIT, fixtures::CUSTOMER] {
        let got = client_of(sim.addr, nit)
            .get_xml_by_document_key(&code.to_ascii_uppercase())
            .await
            .expect("answer");
        assert_eq!(got.code, DocumentXml::FOUND, "{got:?}");
        assert_eq!(got.message, "Accion completada OK");
        assert_eq!(got.found(), Some(xml.as_bytes()));
    }
    // Anyone else, or a certificate naming no NIT: 401, no document.
    for client in [client_of(sim.addr, "900999999"), sim.client.clone()] {
        let got = client.get_xml_by_document_key(&code).await.expect("answer");
        assert_eq!(got.code, DocumentXml::NOT_AUTHORIZED, "{got:?}");
        assert!(got.message.contains("no autorizado"), "{got:?}");
        assert_eq!(got.found(), None);
    }
    let buyer = client_of(sim.addr, fixtures::CUSTOMER);
    let unknown = buyer
        .get_xml_by_document_key(&"ab".repeat(48))
        .await
        .expect("answer");
    assert_eq!(unknown.code, DocumentXml::NOT_FOUND, "{unknown:?}");
    assert!(unknown.message.contains("no encontrado"), "{unknown:?}");
    let short = buyer.get_xml_by_document_key("abc").await.expect("answer");
    assert_eq!(short.code, "89", "{short:?}");
    // A rejected document is not served.
    let (bad, bad_code) = signed_invoice("SETP990000003", "not-the-key");
    let t = sim
        .client
        .send_bill_sync("z3.zip", &zip1(&bad))
        .await
        .expect("send");
    assert!(!t.is_valid);
    let got = buyer
        .get_xml_by_document_key(&bad_code)
        .await
        .expect("answer");
    assert_eq!(got.code, DocumentXml::NOT_FOUND, "{got:?}");
    sim.stop().await;
}

/// GetAcquirer over SOAP: a registered issuer by its NIT (type 31), a buyer
/// set through `PUT /__sim/acquirers`, and an unknown buyer, answered with
/// HTTP 404 and a SOAP body that the client reads as an answer.
#[actix_web::test]
async fn buyers_are_looked_up_by_identification() {
    let sim = Sim::start().await;
    let mut named = issuer();
    named.nit = "901234567".into();
    named.name = Some("Compradora S.A.S.".into());
    named.email = Some("facturas@compradora.co".into());
    let resp = awc::Client::default()
        .put(sim.url("/__sim/issuers"))
        .send_json(&named)
        .await
        .expect("put");
    assert!(resp.status().is_success());
    let got = sim
        .client
        .get_acquirer("31", "901234567")
        .await
        .expect("answer");
    assert_eq!(got.status_code, "00");
    assert_eq!(
        got.found(),
        Some(("Compradora S.A.S.", Some("facturas@compradora.co")))
    );
    // An issuer registered without a name answers with its NIT.
    let got = sim.client.get_acquirer("31", NIT).await.expect("answer");
    assert_eq!(got.found(), Some((NIT, None)));
    // A NIT is a NIT: the same number as a cédula is another buyer.
    let got = sim
        .client
        .get_acquirer("13", "901234567")
        .await
        .expect("answer");
    assert_eq!(got.found(), None);

    let resp = awc::Client::default()
        .put(sim.url("/__sim/acquirers"))
        .send_json(
            &serde_json::json!([{"identificationType": "13", "identificationNumber": "1020304050",
            "name": "Ana Pérez", "email": "ana@example.co"}]),
        )
        .await
        .expect("put");
    assert!(resp.status().is_success());
    let got = sim
        .client
        .get_acquirer("13", "1020304050")
        .await
        .expect("answer");
    assert_eq!(got.found(), Some(("Ana Pérez", Some("ana@example.co"))));
    let bad = awc::Client::default()
        .put(sim.url("/__sim/acquirers"))
        .send_json(&serde_json::json!({"identificationType": "13", "identificationNumber": "1", "name": ""}))
        .await
        .expect("put");
    assert_eq!(bad.status(), 400);

    // Unknown: the raw answer is HTTP 404 with the SOAP body.
    let unknown = sim
        .client
        .get_acquirer("13", "6382356")
        .await
        .expect("an answer, not a transport error");
    assert_eq!(unknown.status_code, "404");
    assert_eq!(
        unknown.message,
        "El adquirente No existe en la base de datos"
    );
    assert_eq!(unknown.found(), None);
    let raw = sim
        .client
        .call(&crate::authority::soap::envelope::Request::get_acquirer(
            "13", "6382356",
        ))
        .await;
    assert!(
        matches!(raw, Err(TransmitError::Http { status: 404, .. })),
        "{raw:?}"
    );
    let stats = sim.stats().await;
    assert_eq!(stats["calls"]["GetAcquirer"], 6);
    sim.stop().await;
}

/// A 404 that is not the authority's answer (a wrong service URL) is a
/// transport error, never an unknown buyer.
#[actix_web::test]
async fn a_404_without_a_soap_answer_is_no_answer() {
    let sim = Sim::start().await;
    let wrong = AuthorityClient::new(
        AuthorityClientConfig::new(format!("http://{}/no-such-service.svc", sim.addr)),
        fixtures::signer(),
    );
    let got = wrong.get_acquirer("13", "6382356").await;
    assert!(
        matches!(got, Err(TransmitError::Http { status: 404, .. })),
        "{got:?}"
    );
    sim.stop().await;
}
