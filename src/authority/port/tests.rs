//! The authority port driven through a [`Transmitter`] against the real
//! simulator over HTTP.

use super::*;
use crate::authority::simulator::{self, SimOptions};
use crate::fixtures::{self, issuer, self_signed, signed_zip, Sim, SOFTWARE};
use actix::Actor;
use emisor_actors::breaker::BreakerState;
use emisor_actors::transmitter::{GetBreakerState, GetStats, Submit, TransmitFailure};
use std::time::Instant;

const NITS: [&str; 3] = ["900000001", "900000002", "900000003"];

/// A simulator with `workers` workers that knows the three [`NITS`].
async fn sim_with_workers(workers: usize) -> Sim {
    let opts = SimOptions {
        workers,
        today: fixtures::signing_day,
        ..SimOptions::default()
    };
    Sim::start(NITS.map(issuer), opts).await
}

/// The authority at `sim`, called with `signer`'s certificate.
fn target(sim: &Sim, signer: &WsSigner) -> AuthorityTarget {
    AuthorityTarget {
        url: simulator::service_url(sim.addr),
        signer: signer.clone(),
    }
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
    let sim = sim_with_workers(1).await;
    let tx = Transmitter::new(AuthorityPort::new(Duration::from_secs(10)), config(1.0)).start();
    // Two companies, two certificates.
    let one = target(&sim, &fixtures::signer());
    let (key, der) = self_signed();
    let two = target(&sim, &WsSigner::new(key, der).expect("signer"));

    let (zip, code) = signed_zip(NITS[0], 990000001);
    let t = verdict(submit(&tx, 1, send_bill(&one, zip)).await);
    assert!(t.is_valid && !t.duplicate, "{t:?}");
    assert_eq!(t.document_key.as_deref(), Some(code.as_str()));
    let (zip, _) = signed_zip(NITS[1], 990000001);
    assert!(verdict(submit(&tx, 2, send_bill(&two, zip)).await).is_valid);

    // A business rejection is an answer, not a failure.
    let (zip, _) = signed_zip(NITS[0], 995000001);
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
    let sim = sim_with_workers(1).await;
    // Pauses of 60 ms, 120 ms, 300 ms.
    let tx = Transmitter::new(AuthorityPort::new(Duration::from_secs(10)), config(0.001)).start();
    let target = target(&sim, &fixtures::signer());
    let zips: Vec<_> = (0..8)
        .map(|i| signed_zip(NITS[0], 990000100 + i).0)
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
