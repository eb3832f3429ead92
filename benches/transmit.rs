//! Send throughput against the in-process simulator: accepted documents per
//! second of SendBillSync, through `AuthorityClient` directly (16
//! concurrent) and through the `Transmitter` with its pacing raised
//! (10 000/s, 16 in flight), to show what the actor costs.
//!
//! A batch of distinct signed documents is built once; before each timed
//! batch the simulator is reset (untimed) so every document is accepted
//! afresh rather than answered as a duplicate (rule 90).
//!
//! `cargo bench --bench transmit`

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::Actor;
use actix_web::rt::{System, SystemRunner};
use chrono::{DateTime, FixedOffset};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use emisor::authority::port::{
    AuthorityCall, AuthorityPort, AuthorityRequest, AuthorityResponse, AuthorityTarget,
};
use emisor::authority::simulator::{self, IssuerRecord, SimOptions, SimRegistry, SoftwareRecord};
use emisor::authority::{AuthorityClient, AuthorityClientConfig, NumberRange, WsSigner};
use emisor::engine::signing_key::SigningKey;
use emisor::engine::{codes, package, xades};
use emisor_actors::transmitter::{Submit, Transmitter, TransmitterConfig};
use futures_util::stream::{self, StreamExt};
use openssl::asn1::Asn1Time;
use openssl::bn::BigNum;
use openssl::hash::MessageDigest;
use openssl::pkey::{PKey, Private};
use openssl::rsa::Rsa;
use openssl::x509::{X509Builder, X509NameBuilder, X509};

const NIT: &str = "900000001";
const SOFTWARE: &str = "soft-1";
const TECH_KEY: &str = "fc8eac422eba16e22ffd8c6f94b3f40a6e38162c";
/// Documents per timed batch.
const BATCH: usize = 64;
const CONCURRENCY: usize = 16;

fn self_signed() -> (PKey<Private>, X509) {
    let key = PKey::from_rsa(Rsa::generate(2048).unwrap()).unwrap();
    let mut name = X509NameBuilder::new().unwrap();
    name.append_entry_by_text("CN", NIT).unwrap();
    let name = name.build();
    let mut b = X509Builder::new().unwrap();
    b.set_version(2).unwrap();
    b.set_serial_number(&BigNum::from_u32(7).unwrap().to_asn1_integer().unwrap())
        .unwrap();
    b.set_subject_name(&name).unwrap();
    b.set_issuer_name(&name).unwrap();
    b.set_pubkey(&key).unwrap();
    b.set_not_before(&Asn1Time::days_from_now(0).unwrap())
        .unwrap();
    b.set_not_after(&Asn1Time::days_from_now(365).unwrap())
        .unwrap();
    b.sign(&key, MessageDigest::sha256()).unwrap();
    (key, b.build())
}

fn issuer() -> IssuerRecord {
    IssuerRecord {
        nit: NIT.into(),
        software: vec![SoftwareRecord {
            id: SOFTWARE.into(),
            pin: "12345".into(),
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

/// Invoice `SETP<n>`, signed and zipped.
fn signed_zip(n: u64, key: &SigningKey, at: DateTime<FixedOffset>) -> Vec<u8> {
    let number = format!("SETP{n}");
    let with_code = |code: &str| {
        [
            "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>",
            "<Invoice",
            UBL_NS,
            "><ext:UBLExtensions><ext:UBLExtension><ext:ExtensionContent><sts:DianExtensions>",
            "<sts:SoftwareProvider><sts:ProviderID>",
            NIT,
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
            NIT,
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
    let input = codes::extract_code_input(&with_code("0")).unwrap();
    let code = codes::invoice_code(&input.invoice_input(TECH_KEY));
    let signed = xades::sign(&with_code(&code), key, at).unwrap();
    package::zip_single(&format!("fv{n}.xml"), signed.as_bytes(), at).unwrap()
}

struct Bench {
    system: SystemRunner,
    sim: std::net::SocketAddr,
    target: AuthorityTarget,
    zips: Vec<Vec<u8>>,
}

impl Bench {
    fn reset_sim(&self) {
        let url = format!("http://{}/__sim/reset", self.sim);
        self.system.block_on(async move {
            let resp = awc::Client::default().post(url).send().await.unwrap();
            assert!(resp.status().is_success());
        });
    }
}

fn setup() -> Bench {
    let (key, cert) = self_signed();
    let at = DateTime::parse_from_rfc3339("2024-02-15T07:43:48.123-05:00").unwrap();
    let signing = SigningKey::from_parts(key.clone(), cert.clone()).unwrap();
    let zips: Vec<_> = (0..BATCH as u64)
        .map(|i| signed_zip(990_001_000 + i, &signing, at))
        .collect();
    let system = System::new();
    let registry = Arc::new(SimRegistry::new());
    registry.register(issuer());
    let (sim, _handle) = system
        .block_on(simulator::start(
            "127.0.0.1:0",
            registry,
            SimOptions::default(),
        ))
        .unwrap();
    let target = AuthorityTarget {
        url: simulator::service_url(sim),
        signer: WsSigner::new(key, cert.to_der().unwrap()).unwrap(),
    };
    Bench {
        system,
        sim,
        target,
        zips,
    }
}

fn accepted(t: &emisor::authority::Transmission) -> bool {
    t.is_valid && !t.duplicate
}

fn send_throughput(c: &mut Criterion) {
    let bench = setup();
    let client = bench.system.block_on(async {
        AuthorityClient::new(
            AuthorityClientConfig::new(bench.target.url.clone())
                .with_timeout(Duration::from_secs(30)),
            bench.target.signer.clone(),
        )
    });
    let transmitter = bench.system.block_on(async {
        Transmitter::new(
            AuthorityPort::new(Duration::from_secs(30)),
            TransmitterConfig {
                max_per_second: 10_000,
                max_in_flight: CONCURRENCY as u32,
                call_timeout: Duration::from_secs(30),
                ..TransmitterConfig::default()
            },
        )
        .start()
    });

    let mut group = c.benchmark_group("send_bill_sync");
    group.throughput(Throughput::Elements(BATCH as u64));
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));

    group.bench_function("client_direct_16_concurrent", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                bench.reset_sim();
                total += bench.system.block_on(async {
                    let t = Instant::now();
                    let ok = stream::iter(bench.zips.iter())
                        .map(|zip| client.send_bill_sync("z.zip", zip))
                        .buffer_unordered(CONCURRENCY)
                        .filter(|r| std::future::ready(r.as_ref().is_ok_and(accepted)))
                        .count()
                        .await;
                    let elapsed = t.elapsed();
                    assert_eq!(ok, BATCH, "every document accepted");
                    elapsed
                });
            }
            total
        });
    });

    group.bench_function("transmitter_16_in_flight", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                bench.reset_sim();
                let calls: Vec<_> = bench
                    .zips
                    .iter()
                    .map(|zip| AuthorityCall {
                        target: bench.target.clone(),
                        request: AuthorityRequest::SendBillSync {
                            zip_name: "z.zip".into(),
                            zip: zip.clone(),
                        },
                    })
                    .collect();
                total += bench.system.block_on(async {
                    let t = Instant::now();
                    // Four companies, served round-robin.
                    let sends = calls
                        .into_iter()
                        .enumerate()
                        .map(|(i, call)| transmitter.send(Submit::new(i as u64 % 4, call)));
                    let results = futures_util::future::join_all(sends).await;
                    let elapsed = t.elapsed();
                    let ok = results
                        .into_iter()
                        .filter(
                            |r| matches!(r, Ok(Ok(AuthorityResponse::Verdict(t))) if accepted(t)),
                        )
                        .count();
                    assert_eq!(ok, BATCH, "every document accepted");
                    elapsed
                });
            }
            total
        });
    });
    group.finish();
}

criterion_group!(benches, send_throughput);
criterion_main!(benches);
