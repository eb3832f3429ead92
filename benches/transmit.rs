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

use std::time::{Duration, Instant};

use actix::Actor;
use actix_web::rt::{System, SystemRunner};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use emisor::authority::port::{
    AuthorityCall, AuthorityPort, AuthorityRequest, AuthorityResponse, AuthorityTarget,
};
use emisor::authority::simulator::{self, SimOptions};
use emisor::authority::{AuthorityClient, AuthorityClientConfig};
use emisor::fixtures::{self, issuer, signed_zip, Sim, NIT};
use emisor_actors::transmitter::{Submit, Transmitter, TransmitterConfig};
use futures_util::stream::{self, StreamExt};

/// Documents per timed batch.
const BATCH: usize = 64;
const CONCURRENCY: usize = 16;

struct Bench {
    system: SystemRunner,
    sim: Sim,
    target: AuthorityTarget,
    zips: Vec<Vec<u8>>,
}

impl Bench {
    fn reset_sim(&self) {
        self.system.block_on(self.sim.reset());
    }
}

fn setup() -> Bench {
    let zips: Vec<_> = (0..BATCH as u64)
        .map(|i| signed_zip(NIT, 990_001_000 + i).0)
        .collect();
    let system = System::new();
    // The sample documents' day is the simulator's today (annex 1.9).
    let opts = SimOptions {
        today: fixtures::signing_day,
        ..SimOptions::default()
    };
    let sim = system.block_on(Sim::start([issuer(NIT)], opts));
    let target = AuthorityTarget {
        url: simulator::service_url(sim.addr),
        signer: fixtures::signer(),
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
