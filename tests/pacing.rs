#![allow(clippy::expect_used)]

//! The transmitter's pacing as the authority simulator sees it, over HTTP.
//! A test binary of its own: `cargo test` runs test binaries one after the
//! other, so no other test competes for the two cores while the simulator
//! stamps arrivals (the lib's tests run two at a time, and a busy core
//! delays a stamp by more than the pacing margin).

use std::time::{Duration, Instant};

use actix::Actor;
use emisor::authority::port::{
    AuthorityCall, AuthorityPort, AuthorityRequest, AuthorityResponse, AuthorityTarget,
    AuthorityTransmitter, RATE_WINDOW_MARGIN,
};
use emisor::authority::simulator::{self, SimOptions};
use emisor::authority::soap::wssec::WsSigner;
use emisor::authority::transmission::{Transmission, TransmitError};
use emisor::fixtures::{self, issuer, self_signed, Sim};
use emisor_actors::transmitter::{Submit, TransmitFailure, Transmitter, TransmitterConfig};
use futures_util::future::join_all;

const NITS: [&str; 3] = ["900000001", "900000002", "900000003"];

async fn submit(
    tx: &actix::Addr<AuthorityTransmitter>,
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
#[cfg_attr(not(feature = "soak"), ignore = "soak")]
async fn pacing_holds_at_the_authority() {
    // The simulator stamps a call's arrival after reading it, on a worker
    // that may be busy verifying a document (slow in debug builds): status
    // queries and two workers keep that lag small, so what is measured is
    // the transmitter's pacing.
    let opts = SimOptions {
        workers: 2,
        ..SimOptions::default()
    };
    let sim = Sim::start(NITS.map(issuer), opts).await;
    let tx = Transmitter::new(
        AuthorityPort::new(Duration::from_secs(10)),
        TransmitterConfig {
            call_timeout: Duration::from_secs(10),
            rate_window: Duration::from_secs(1) + RATE_WINDOW_MARGIN,
            ..TransmitterConfig::default()
        },
    )
    .start();
    // 3 in flight at 150 ms each would be 20/s: both limits bind.
    sim.mode(serde_json::json!({"mode": "slow", "latency_ms": 150}))
        .await;
    let (key, der) = self_signed();
    let signers = [
        fixtures::signer(),
        WsSigner::new(key, der).expect("signer"),
        fixtures::signer(),
    ];
    let calls: Vec<_> = (0..40u64)
        .map(|i| {
            let c = usize::try_from(i % 3).expect("small");
            let status = AuthorityRequest::GetStatus {
                track_id: format!("code-{i}"),
            };
            let call = AuthorityCall {
                target: AuthorityTarget {
                    url: simulator::service_url(sim.addr),
                    signer: signers[c].clone(),
                },
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
