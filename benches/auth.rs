#![allow(clippy::expect_used, clippy::unwrap_used)]
//! The per-request cost of a keyed endpoint: key check, rate-limit decision
//! (pure and through the actor), and the whole middleware stack in-process.
//! The network figure (wrk against the real server) is in docs/performance.md.

use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::Actor;
use actix_web::middleware::from_fn;
use actix_web::{test, web, App};
use criterion::{criterion_group, criterion_main, Criterion};
use emisor::config::{Overrides, Settings};
use emisor::http::auth::resolve;
use emisor::http::state::AppState;
use emisor::metrics::Metrics;
use emisor::provisioning::api_keys::{hash_key, parse_shape};
use emisor::provisioning::demo::{demo_company_request, provision_demo_company};
use emisor_actors::rate_limiter::{Check, RateLimiter, RateWindows};
use emisor_actors::supervisor::Restartable;
use emisor_store::{AsyncStore, Keyring, MasterKey, SledStore};
use futures_util::FutureExt;

fn state(dir: &std::path::Path) -> (web::Data<AppState>, String) {
    let mut settings = Settings::load(&Overrides::default()).expect("settings");
    settings.rate_limit.requests_per_minute = u32::MAX;
    let sled =
        SledStore::open(dir, Keyring::new(MasterKey::generate().expect("key"))).expect("store");
    let (_, keys) = provision_demo_company(&sled, &demo_company_request(), "t", "").expect("demo");
    let store = AsyncStore::new(sled.clone()).expect("store threads");
    let settings = Arc::new(settings);
    let actors = emisor::startup::start_actors(&settings, store.clone(), None).expect("actors");
    // The limiter on this thread's arbiter: the round trip measured is the
    // mailbox, not a cross-thread hop (the server's is on its own arbiter).
    let windows = Arc::new(RateWindows::default());
    let limiter = Restartable::start("rate_limiter", {
        let windows = windows.clone();
        move || RateLimiter::over(windows.clone()).start()
    });
    let state = web::Data::new(AppState {
        settings,
        store,
        key_cache: Default::default(),
        rate_limiter: limiter,
        rate_windows: windows,
        shared_counts: Default::default(),
        metrics: Metrics::install().expect("metrics"),
        admin_token_sha256: [0; 32],
        admin_failures: Default::default(),
        tax_sim_url: None,
        registrar: emisor::provisioning::authority_registration::start_demo_registrar(
            &actors.issuing,
            Arc::new(sled),
        ),
        issuing: actors.issuing.clone(),
        scheduler: actors.scheduler.clone(),
        recovery: actors.recovery.clone(),
        buyers: Default::default(),
        operator: emisor::operator::OperatorEvents::new(actors.issuing.clone()),
        reconciliation: emisor::operator::reconciliation::Reconciler::new(
            emisor::operator::OperatorEvents::new(actors.issuing.clone()),
        ),
    });
    std::mem::forget(actors);
    (state, keys.sk_test)
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tmp");
    let system = actix::System::new();
    let (state, key) = system.block_on(async { state(dir.path()) });

    c.bench_function("key_shape_and_sha256", |b| {
        b.iter(|| (parse_shape(&key), hash_key(&key)))
    });
    c.bench_function("resolve_key_cached", |b| {
        // Cached: the future is ready at once, no store call.
        b.iter(|| {
            resolve(&state, &key)
                .now_or_never()
                .expect("ready")
                .expect("key")
        })
    });
    c.bench_function("rate_limit_decision_pure", |b| {
        let mut l = RateLimiter::new();
        let mut n = 0u64;
        b.iter(|| {
            n += 1;
            l.check(Check {
                key_id: n % 64,
                limit: u32::MAX,
                now_unix: 1_800_000_000,
            })
        })
    });
    c.bench_function("rate_limit_actor_round_trip", |b| {
        b.iter_custom(|iters| {
            system.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    let _ = state
                        .rate_limiter
                        .send(Check {
                            key_id: 1,
                            limit: u32::MAX,
                            now_unix: 1_800_000_000,
                        })
                        .await;
                }
                start.elapsed()
            })
        })
    });
    c.bench_function("http_api_keys_test_in_process", |b| {
        let app = system.block_on(test::init_service(
            App::new()
                .app_data(state.clone())
                .wrap(from_fn(emisor::ops::observe::observe))
                .configure(emisor::api::configure),
        ));
        b.iter_custom(|iters| {
            system.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    let req = test::TestRequest::get()
                        .uri("/v1/api/api-keys/test")
                        .insert_header(("X-Api-Key", key.as_str()))
                        .to_request();
                    let res = test::call_service(&app, req).await;
                    assert!(res.status().is_success());
                }
                start.elapsed()
            })
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1));
    targets = bench
}
criterion_main!(benches);
