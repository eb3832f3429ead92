//! The authority port driven through a [`Transmitter`] against the real
//! simulator over HTTP.

use super::*;
use crate::authority::simulator::package::zip_of;
use crate::authority::simulator::{self, IssuerRecord, SimOptions, SimRegistry, SoftwareRecord};
use crate::authority::soap::wssec::test_support;
use crate::authority::transmission::NumberRange;
use crate::engine::codes;
use crate::engine::signing_key::SigningKey;
use crate::engine::xades;
use actix::Actor;
use chrono::{DateTime, FixedOffset};
use emisor_actors::breaker::BreakerState;
use emisor_actors::transmitter::{GetBreakerState, GetStats, Submit, TransmitFailure};
use futures_util::future::join_all;
use openssl::x509::X509;
use std::sync::Arc;
use std::time::Instant;

const SOFTWARE: &str = "soft-1";
const PIN: &str = "12345";
const TECH_KEY: &str = "fc8eac422eba16e22ffd8c6f94b3f40a6e38162c";
const NITS: [&str; 3] = ["900000001", "900000002", "900000003"];

fn issuer(nit: &str) -> IssuerRecord {
    IssuerRecord {
        nit: nit.into(),
        software: vec![SoftwareRecord {
            id: SOFTWARE.into(),
            pin: PIN.into(),
        }],
        ranges: vec![NumberRange {
            resolution_number: "18760000001".into(),
            resolution_date: "2019-01-19".into(),
            prefix: "SETP".into(),
            from_number: 990000000,
            to_number: 995000000,
            valid_date_from: "2019-01-19".into(),
            valid_date_to: "2030-01-19".into(),
            technical_key: Some(TECH_KEY.into()),
        }],
        test_set_ids: Vec::new(),
    }
}

fn signing_key() -> SigningKey {
    let (key, der) = test_support::shared();
    SigningKey::from_parts(key, X509::from_der(&der).expect("cert")).expect("signing key")
}

fn signing_time() -> DateTime<FixedOffset> {
    DateTime::parse_from_rfc3339("2024-02-15T07:43:48.123-05:00").expect("time")
}

const UBL_NS: &str = concat!(
    " xmlns=\"urn:oasis:names:specification:ubl:schema:xsd:Invoice-2\"",
    " xmlns:cac=\"urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2\"",
    " xmlns:cbc=\"urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2\"",
    " xmlns:ds=\"http://www.w3.org/2000/09/xmldsig#\"",
    " xmlns:ext=\"urn:oasis:names:specification:ubl:schema:xsd:CommonExtensionComponents-2\"",
    " xmlns:sts=\"dian:gov:co:facturaelectronica:Structures-2-1\"",
    " xmlns:xades=\"http://uri.etsi.org/01903/v1.3.2#\"",
    " xmlns:xades141=\"http://uri.etsi.org/01903/v1.4.1#\""
);

/// A signed invoice of `nit` numbered `SETP<n>`, zipped, and its CUFE.
fn signed_invoice_zip(nit: &str, n: u64) -> (Vec<u8>, String) {
    let number = format!("SETP{n}");
    let with_code = |code: &str| {
        [
            "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>",
            "<Invoice",
            UBL_NS,
            "><ext:UBLExtensions><ext:UBLExtension><ext:ExtensionContent><sts:DianExtensions>",
            "<sts:SoftwareProvider><sts:ProviderID>",
            nit,
            "</sts:ProviderID><sts:SoftwareID>",
            SOFTWARE,
            "</sts:SoftwareID></sts:SoftwareProvider>",
            "</sts:DianExtensions></ext:ExtensionContent></ext:UBLExtension>",
            "<ext:UBLExtension><ext:ExtensionContent></ext:ExtensionContent></ext:UBLExtension>",
            "</ext:UBLExtensions><cbc:UBLVersionID>UBL 2.1</cbc:UBLVersionID>",
            "<cbc:ProfileExecutionID>2</cbc:ProfileExecutionID><cbc:ID>",
            &number,
            "</cbc:ID><cbc:UUID schemeID=\"2\" schemeName=\"CUFE-SHA384\">",
            code,
            "</cbc:UUID><cbc:IssueDate>2024-02-15</cbc:IssueDate><cbc:IssueTime>07:43:48-05:00</cbc:IssueTime>",
            "<cbc:InvoiceTypeCode>01</cbc:InvoiceTypeCode>",
            "<cac:AccountingSupplierParty><cac:Party><cac:PartyTaxScheme><cbc:CompanyID>",
            nit,
            "</cbc:CompanyID></cac:PartyTaxScheme></cac:Party></cac:AccountingSupplierParty>",
            "<cac:AccountingCustomerParty><cac:Party><cac:PartyTaxScheme><cbc:CompanyID>",
            "800000002",
            "</cbc:CompanyID></cac:PartyTaxScheme></cac:Party></cac:AccountingCustomerParty>",
            "<cac:TaxTotal><cbc:TaxAmount currencyID=\"COP\">190.00</cbc:TaxAmount><cac:TaxSubtotal>",
            "<cbc:TaxAmount currencyID=\"COP\">190.00</cbc:TaxAmount><cac:TaxCategory><cac:TaxScheme>",
            "<cbc:ID>01</cbc:ID></cac:TaxScheme></cac:TaxCategory></cac:TaxSubtotal></cac:TaxTotal>",
            "<cac:LegalMonetaryTotal><cbc:LineExtensionAmount currencyID=\"COP\">1000.00</cbc:LineExtensionAmount>",
            "<cbc:PayableAmount currencyID=\"COP\">1190.00</cbc:PayableAmount></cac:LegalMonetaryTotal>",
            "</Invoice>",
        ]
        .concat()
    };
    let input = codes::extract_code_input(&with_code("0")).expect("code input");
    let code = codes::invoice_code(&input.invoice_input(TECH_KEY));
    let signed = xades::sign(&with_code(&code), &signing_key(), signing_time()).expect("sign");
    (zip_of(&[("fv.xml", signed.as_bytes())]), code)
}

struct Sim {
    addr: std::net::SocketAddr,
    handle: actix_web::dev::ServerHandle,
}

impl Sim {
    async fn start() -> Sim {
        Sim::with_workers(1).await
    }

    async fn with_workers(workers: usize) -> Sim {
        let registry = Arc::new(SimRegistry::new());
        for nit in NITS {
            registry.register(issuer(nit));
        }
        let opts = SimOptions {
            workers,
            ..SimOptions::default()
        };
        let (addr, handle) = simulator::start("127.0.0.1:0", registry, opts)
            .await
            .expect("start");
        Sim { addr, handle }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    async fn mode(&self, body: serde_json::Value) {
        let resp = awc::Client::default()
            .post(self.url("/__sim/mode"))
            .send_json(&body)
            .await
            .expect("mode");
        assert!(resp.status().is_success());
    }

    async fn stats(&self) -> serde_json::Value {
        awc::Client::default()
            .get(self.url("/__sim/stats"))
            .send()
            .await
            .expect("stats")
            .json::<serde_json::Value>()
            .await
            .expect("json")
    }

    /// Company `i`'s target: its own certificate for company 1.
    fn target(&self, signer: &WsSigner) -> AuthorityTarget {
        AuthorityTarget {
            url: simulator::service_url(self.addr),
            signer: signer.clone(),
        }
    }

    async fn stop(self) {
        self.handle.stop(false).await;
    }
}

fn shared_signer() -> WsSigner {
    let (key, der) = test_support::shared();
    WsSigner::new(key, der).expect("signer")
}

fn config(time_scale: f64) -> TransmitterConfig {
    TransmitterConfig {
        call_timeout: Duration::from_secs(10),
        breaker: BreakerConfig {
            time_scale,
            ..BreakerConfig::default()
        },
        ..TransmitterConfig::default()
    }
}

fn send_bill(target: &AuthorityTarget, zip: Vec<u8>) -> AuthorityCall {
    AuthorityCall {
        target: target.clone(),
        request: AuthorityRequest::SendBillSync {
            zip_name: "z.zip".into(),
            zip,
        },
    }
}

async fn submit(
    tx: &Addr<AuthorityTransmitter>,
    company: u64,
    call: AuthorityCall,
) -> Result<AuthorityResponse, TransmitFailure<TransmitError>> {
    tx.send(Submit::new(company, call)).await.expect("mailbox")
}

fn verdict(r: Result<AuthorityResponse, TransmitFailure<TransmitError>>) -> Transmission {
    match r {
        Ok(AuthorityResponse::Verdict(t)) => t,
        other => panic!("expected a verdict, got {other:?}"),
    }
}

#[actix_web::test]
async fn documents_are_accepted_through_the_transmitter() {
    let sim = Sim::start().await;
    let tx = Transmitter::new(AuthorityPort::new(Duration::from_secs(10)), config(1.0)).start();
    // Two companies, two certificates.
    let one = sim.target(&shared_signer());
    let (key, der) = test_support::self_signed();
    let two = sim.target(&WsSigner::new(key, der).expect("signer"));

    let (zip, code) = signed_invoice_zip(NITS[0], 990000001);
    let t = verdict(submit(&tx, 1, send_bill(&one, zip)).await);
    assert!(t.is_valid && !t.duplicate, "{t:?}");
    assert_eq!(t.document_key.as_deref(), Some(code.as_str()));
    let (zip, _) = signed_invoice_zip(NITS[1], 990000001);
    assert!(verdict(submit(&tx, 2, send_bill(&two, zip)).await).is_valid);

    // A business rejection is an answer, not a failure.
    let (zip, _) = signed_invoice_zip(NITS[0], 995000001);
    let t = verdict(submit(&tx, 1, send_bill(&one, zip)).await);
    assert!(!t.is_valid && !t.retryable && !t.errors.is_empty());

    let status = AuthorityCall {
        target: two.clone(),
        request: AuthorityRequest::GetStatus { track_id: code },
    };
    assert!(verdict(submit(&tx, 2, status).await).is_valid);
    let ranges = AuthorityCall {
        target: one.clone(),
        request: AuthorityRequest::GetNumberingRange {
            account_code: NITS[0].into(),
            account_code_t: NITS[0].into(),
            software_code: SOFTWARE.into(),
        },
    };
    match submit(&tx, 1, ranges).await {
        Ok(AuthorityResponse::NumberingRange(r)) => assert_eq!(r.operation_code, "100"),
        other => panic!("{other:?}"),
    }
    let stats = tx.send(GetStats).await.expect("mailbox");
    assert_eq!((stats.sent, stats.failed), (5, 0));
    let report = tx.send(GetBreakerState).await.expect("mailbox");
    assert_eq!(report.snapshot.state, BreakerState::Closed);
    sim.stop().await;
}

#[actix_web::test]
async fn the_breaker_opens_on_a_down_authority_and_closes_when_it_is_back() {
    let sim = Sim::start().await;
    // Pauses of 60 ms, 120 ms, 300 ms.
    let tx = Transmitter::new(AuthorityPort::new(Duration::from_secs(10)), config(0.001)).start();
    let target = sim.target(&shared_signer());
    let zips: Vec<_> = (0..8)
        .map(|i| signed_invoice_zip(NITS[0], 990000100 + i).0)
        .collect();

    sim.mode(serde_json::json!({"mode": "down"})).await;
    for zip in &zips[..5] {
        match submit(&tx, 1, send_bill(&target, zip.clone())).await {
            Err(TransmitFailure::Failed {
                error: TransmitError::Http { status: 503, .. },
                retryable: true,
            }) => {}
            other => panic!("expected a retryable 503, got {other:?}"),
        }
    }
    let t = Instant::now();
    let sixth = submit(&tx, 1, send_bill(&target, zips[5].clone())).await;
    assert!(
        matches!(sixth, Err(TransmitFailure::BreakerOpen { .. })),
        "{sixth:?}"
    );
    assert!(t.elapsed() < Duration::from_millis(20));
    assert_eq!(sim.stats().await["calls"]["SendBillSync"], 5);
    let report = tx.send(GetBreakerState).await.expect("mailbox");
    assert_eq!(report.snapshot.state, BreakerState::Open);

    sim.mode(serde_json::json!({"mode": "up"})).await;
    actix_web::rt::time::sleep(Duration::from_millis(80)).await;
    let report = tx.send(GetBreakerState).await.expect("mailbox");
    assert_eq!(report.snapshot.state, BreakerState::HalfOpen);
    for zip in &zips[5..7] {
        assert!(verdict(submit(&tx, 1, send_bill(&target, zip.clone())).await).is_valid);
    }
    let report = tx.send(GetBreakerState).await.expect("mailbox");
    assert_eq!(report.snapshot.state, BreakerState::Closed);
    assert!(verdict(submit(&tx, 1, send_bill(&target, zips[7].clone())).await).is_valid);
    assert_eq!(sim.stats().await["accepted_count"], 3);
    sim.stop().await;
}

#[actix_web::test]
async fn pacing_holds_at_the_authority() {
    // The simulator stamps a call's arrival after reading it, on a worker
    // that may be busy verifying a document (slow in debug builds): status
    // queries and two workers keep that lag small, so what is measured is
    // the transmitter's pacing.
    let sim = Sim::with_workers(2).await;
    let tx = Transmitter::new(
        AuthorityPort::new(Duration::from_secs(10)),
        TransmitterConfig {
            rate_window: Duration::from_secs(1) + RATE_WINDOW_MARGIN,
            ..config(1.0)
        },
    )
    .start();
    // 3 in flight at 150 ms each would be 20/s: both limits bind.
    sim.mode(serde_json::json!({"mode": "slow", "latency_ms": 150}))
        .await;
    let (key, der) = test_support::self_signed();
    let signers = [
        shared_signer(),
        WsSigner::new(key, der).expect("signer"),
        shared_signer(),
    ];
    let calls: Vec<_> = (0..40u64)
        .map(|i| {
            let c = usize::try_from(i % 3).expect("small");
            let status = AuthorityRequest::GetStatus {
                track_id: format!("code-{i}"),
            };
            let call = AuthorityCall {
                target: sim.target(&signers[c]),
                request: status,
            };
            (c as u64 + 1, call)
        })
        .collect();
    let t = Instant::now();
    let results = join_all(
        calls
            .into_iter()
            .map(|(company, call)| submit(&tx, company, call)),
    )
    .await;
    let elapsed = t.elapsed();
    // Unknown codes: answered "not found" (66).
    assert!(results.into_iter().all(|r| verdict(r).status_code == "66"));

    let stats = sim.stats().await;
    assert_eq!(stats["calls"]["GetStatus"], 40);
    let in_flight = stats["max_in_flight"].as_u64().expect("max_in_flight");
    let per_second = stats["max_per_second"].as_u64().expect("max_per_second");
    assert!(in_flight <= 3, "{in_flight} in flight");
    assert!(per_second <= 10, "{per_second} per second");
    assert_eq!(in_flight, 3, "the test should reach the concurrency limit");
    assert!(per_second >= 9, "the test should reach the rate limit");
    // 40 calls at 10/s: about 4 s.
    assert!(elapsed < Duration::from_secs(6), "{elapsed:?}");
    sim.stop().await;
}

#[test]
fn settings_become_a_transmitter_config() {
    let mut settings = Settings::load(&crate::config::Overrides::default()).expect("settings");
    settings.resilience.time_scale = 0.5;
    let c = transmitter_config(&settings);
    assert_eq!(c.max_per_second, settings.authority.max_requests_per_second);
    assert_eq!(c.max_in_flight, settings.authority.max_in_flight);
    assert!(c.rate_window > Duration::from_secs(1));
    assert_eq!(
        c.breaker.failure_threshold,
        settings.resilience.breaker_failures
    );
    assert_eq!(
        c.breaker.pauses.len(),
        settings.resilience.breaker_pause_s.len()
    );
    assert_eq!(c.breaker.time_scale, 0.5);
    assert!(c.breaker.scaled(c.breaker.probe_timeout) >= c.call_timeout);
}
