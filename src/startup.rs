//! Wiring: settings → store → bootstrap → actors → HTTP server. Tests start
//! the real binary, so this is also what they exercise.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use actix::{Actor, Arbiter};
use actix::{ActorFutureExt, AsyncContext};
use actix_web::middleware::from_fn;
use actix_web::{web, App, HttpResponse, HttpServer};
use anyhow::Context;
use emisor_actors::rate_limiter::{RateLimiter, RateWindows};
use emisor_actors::supervisor::Restartable;
use emisor_store::{AsyncStore, Store};
use secrecy::ExposeSecret;
use sha2::{Digest, Sha256};
use utoipa::OpenApi;
use utoipa_swagger_ui::{Config as SwaggerConfig, SwaggerUi};

use crate::authority::simulator::{self, SimOptions, SimRegistry};
use crate::config::Settings;
use crate::http::error::ApiError;
use crate::http::state::AppState;
use crate::metrics::Metrics;
use crate::openapi::ApiDoc;
use crate::provisioning::authority_registration::{demo_companies, start_demo_registrar};
use crate::provisioning::demo::{
    demo_company_request, provision_demo_company, refresh_demo_sim_url, write_demo_keys,
    write_private,
};
use crate::security::master_key::open_store;
use std::time::{Duration, Instant};

use emisor_actors::document_builder::{BuildQueue, DocumentBuilder};
use emisor_actors::idempotency::{ClaimTable, IdempotencyConfig, IdempotencyLock};
use emisor_actors::recovery_ticker::RecoveryTicker;
use emisor_actors::retry_scheduler::RetryScheduler;
use emisor_actors::signer_pool::SignerPool;
use emisor_actors::webhook_sender::WebhookSender;
use emisor_actors::ws_hub::{CloseAll, WsHub};

use crate::authority::port::{start_transmitter, transmitter_config};
use crate::authority::shared_limits::SharedLimits;
use crate::issuing::duplicates::remembered_payloads;
use crate::issuing::mail::deliver::MailRunner;
use crate::issuing::mail::MailService;
use crate::issuing::transmit::{JobRunner, Recovery};
use crate::issuing::worker::{EnginePipeline, SigningKeyCache};
use crate::issuing::Issuing;

const ADMIN_TOKEN_SETTING: &str = "admin_token_sha256";

/// Prints a line for the operator. A closed stdout (a supervisor that stopped
/// reading) must not take the server down, so write errors are ignored.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, $($arg)*);
        let _ = out.flush();
    }};
}

pub fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    use std::io::IsTerminal;
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .with_target(true)
        .try_init();
}

/// `emisor serve`: runs until SIGINT/SIGTERM, then drains in-flight requests.
pub fn serve_blocking(settings: Settings) -> anyhow::Result<()> {
    init_tracing();
    actix_web::rt::System::new().block_on(serve(settings))
}

/// `emisor tax-sim`: the authority simulator alone. Issuers are registered
/// over HTTP (`PUT /__sim/issuers`); it stops on SIGINT/SIGTERM.
pub fn tax_sim_blocking(bind: &str) -> anyhow::Result<()> {
    init_tracing();
    actix_web::rt::System::new().block_on(async {
        let registry = Arc::new(SimRegistry::new());
        let (addr, handle) = simulator::start(bind, registry, SimOptions::default())
            .await
            .with_context(|| format!("starting the simulator on {bind}"))?;
        say!("tax authority simulator listening on http://{addr}");
        say!("  SOAP service: {}", simulator::service_url(addr));
        wait_for_signal().await;
        handle.stop(true).await;
        Ok(())
    })
}

async fn wait_for_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// Starts the in-process simulator. It always runs: demo companies use it
/// whatever `[authority]` says, and it costs an idle listener otherwise.
/// Demo companies register with it over HTTP, like with a separate one.
async fn start_simulator(
    settings: &Settings,
) -> anyhow::Result<Option<(String, actix_web::dev::ServerHandle)>> {
    let registry = Arc::new(SimRegistry::new());
    let opts = SimOptions {
        async_delay: std::time::Duration::from_secs_f64(
            settings.authority.sim_async_delay_s.max(0.0),
        ),
        test_controls: settings.testing.shared_clock,
        ..SimOptions::default()
    };
    let (addr, handle) = simulator::start(&settings.authority.sim_bind, registry, opts)
        .await
        .with_context(|| format!("starting the simulator on {}", settings.authority.sim_bind))?;
    Ok(Some((format!("http://{addr}"), handle)))
}

/// The admin token: configured, or generated once and remembered by hash.
/// Returns the hash and, when generated now, the token to show once.
fn admin_token(
    settings: &Settings,
    store: &dyn Store,
) -> anyhow::Result<([u8; 32], Option<String>)> {
    let configured = settings.admin.token.expose_secret();
    if !configured.is_empty() {
        return Ok((Sha256::digest(configured.as_bytes()).into(), None));
    }
    if let Some(hex_hash) = store.setting(ADMIN_TOKEN_SETTING)? {
        let bytes = hex::decode(hex_hash.trim()).context("stored admin token hash")?;
        let hash: [u8; 32] = bytes
            .try_into()
            .map_err(|_| anyhow::anyhow!("stored admin token hash has the wrong length"))?;
        return Ok((hash, None));
    }
    let token = format!(
        "adm_{}",
        crate::provisioning::api_keys::generate_secret(emisor_store::Environment::Test)
            .trim_start_matches("sk_test_")
    );
    let hash: [u8; 32] = Sha256::digest(token.as_bytes()).into();
    store.put_setting(ADMIN_TOKEN_SETTING, &hex::encode(hash))?;
    Ok((hash, Some(token)))
}

/// First start: the demo company (decisions.md §1), keys printed once.
/// Later starts: `demo-keys.json` names the simulator's new address.
fn bootstrap(
    settings: &Settings,
    store: &dyn Store,
    new_admin_token: Option<&str>,
    tax_sim_url: &str,
) -> anyhow::Result<()> {
    let dir = settings.data_dir();
    if settings.demo.bootstrap && store.is_empty()? {
        let token = new_admin_token.unwrap_or(settings.admin.token.expose_secret());
        let (_, keys) = provision_demo_company(store, &demo_company_request(), token, tax_sim_url)?;
        let path = dir.join("demo-keys.json");
        write_demo_keys(&path, &keys)?;
        say!(
            "demo company provisioned (id_empresa {}, NIT {})",
            keys.id_empresa,
            keys.nit
        );
        say!("  sk_test:     {}", keys.sk_test);
        say!("  sk_live:     {}", keys.sk_live);
        say!("  admin token: {}", keys.admin_token);
        say!(
            "  saved to {} (mode 0600); these keys are not shown again",
            path.display()
        );
        return Ok(());
    }
    if !tax_sim_url.is_empty() {
        let path = dir.join("demo-keys.json");
        // A stale URL only misleads a reader of the file: not worth failing over.
        if let Err(e) = refresh_demo_sim_url(&path, tax_sim_url) {
            tracing::warn!(error = %e, "could not update tax_sim_url in demo-keys.json");
        }
    }
    if let Some(token) = new_admin_token {
        let path = dir.join("admin-token");
        write_private(&path, token.as_bytes())
            .with_context(|| format!("writing {}", path.display()))?;
        say!(
            "admin token: {token} (saved to {}, mode 0600)",
            path.display()
        );
    }
    Ok(())
}

fn write_listening(dir: &Path, addr: SocketAddr) -> anyhow::Result<()> {
    let url = format!("http://{addr}");
    say!("listening on {url}");
    let path = dir.join("listening");
    std::fs::write(&path, &url).with_context(|| format!("writing {}", path.display()))
}

/// The running actors and the arbiters (threads) they live on.
pub struct Actors {
    pub rate_limiter: Arc<Restartable<RateLimiter>>,
    pub rate_windows: Arc<RateWindows>,
    pub issuing: Arc<Issuing>,
    pub scheduler: Arc<Restartable<RetryScheduler>>,
    pub recovery: Arc<Restartable<RecoveryTicker>>,
    pub arbiters: Vec<Arbiter>,
}

/// Starts every actor, each concern on its own arbiter so a busy one never
/// stalls the HTTP workers or the others.
pub fn start_actors(
    settings: &Arc<Settings>,
    store: AsyncStore,
    sim_url: Option<String>,
) -> anyhow::Result<Actors> {
    let limiter_arbiter = Arbiter::new();
    let h = limiter_arbiter.handle();
    let rate_windows = Arc::new(RateWindows::default());
    let rate_limiter = Restartable::start("rate_limiter", {
        let windows = rate_windows.clone();
        move || {
            let windows = windows.clone();
            RateLimiter::start_in_arbiter(&h, move |_| RateLimiter::over(windows))
        }
    });

    let transmit_arbiter = Arbiter::new();
    let h = transmit_arbiter.handle();
    let config = transmitter_config(settings);
    let shared_limits = SharedLimits::on(
        &store,
        config.max_in_flight,
        config.max_per_second,
        config.rate_window,
    );
    let transmitter = Restartable::start("transmitter", move || {
        start_transmitter(&h, config.clone(), shared_limits.clone())
    });

    // RSA work runs on the pool's threads, one per core.
    let pool = SignerPool::with_default_size(1024).context("starting the signer pool")?;
    let mail_pool = pool.clone();
    let builds = BuildQueue::new(Arc::new(EnginePipeline), pool);
    let builder_arbiter = Arbiter::new();
    let h = builder_arbiter.handle();
    let builder = Restartable::start("document_builder", {
        let builds = builds.clone();
        move || {
            let builds = builds.clone();
            DocumentBuilder::start_in_arbiter(&h, move |_| DocumentBuilder::new(builds))
        }
    });

    let misc_arbiter = Arbiter::new();
    let h = misc_arbiter.handle();
    let idem_config = IdempotencyConfig {
        duplicate_window: Duration::from_secs_f64(settings.resilience.duplicate_window_s.max(0.0)),
        time_scale: settings.resilience.time_scale,
    };
    store.set_duplicate_window(idem_config.window());
    // Claims wait until the window is read back (on the actor's first
    // start; a restarted actor keeps the table).
    let claims = ClaimTable::loading(&idem_config);
    let idem_store = store.clone();
    let idempotency = Restartable::start("idempotency_lock", {
        let claims = claims.clone();
        move || {
            let window = idem_config.window();
            let store = idem_store.clone();
            let claims = claims.clone();
            IdempotencyLock::start_in_arbiter(&h, move |ctx| {
                if !claims.is_ready() {
                    ctx.wait(
                        actix::fut::wrap_future(async move {
                            remembered_payloads(&store, window).await
                        })
                        .map(|recent, lock: &mut IdempotencyLock, _| {
                            lock.table().remember(recent, Instant::now())
                        }),
                    );
                }
                IdempotencyLock::over(claims)
            })
        }
    });
    let h = misc_arbiter.handle();
    let hub = Restartable::start("ws_hub", move || {
        WsHub::start_in_arbiter(&h, |_| WsHub::new())
    });
    let h = misc_arbiter.handle();
    let webhooks = Restartable::start("webhook_sender", move || {
        WebhookSender::start_in_arbiter(&h, |_| WebhookSender::new(Duration::from_secs(10)))
    });

    let mail_arbiter = Arbiter::new();
    let mail = MailService::start(settings, mail_arbiter.handle(), mail_pool);
    let uploads =
        crate::issuing::xml_pool::XmlPool::start(settings.uploads.workers, settings.uploads.queue)
            .context("starting the upload pool")?;

    let issuing = Arc::new(Issuing {
        settings: settings.clone(),
        store,
        translators: crate::api::translators(),
        keys: SigningKeyCache::new(),
        builder,
        builds,
        transmitter,
        idempotency,
        claims,
        hub,
        webhooks,
        scheduler: std::sync::OnceLock::new(),
        sim_url,
        mail,
        uploads,
    });

    let scheduler_arbiter = Arbiter::new();
    let runner = Arc::new(JobRunner(issuing.clone()));
    let tick = settings
        .resilience
        .scaled(1.0)
        .clamp(Duration::from_millis(10), Duration::from_secs(1));
    // Up to 32 documents wait on the transmitter at once; it paces them.
    let scheduler = RetryScheduler::supervised(scheduler_arbiter.handle(), runner, 32, tick);
    let _ = issuing.scheduler.set(scheduler.clone());
    // Emails on a scheduler of their own: a slow SMTP server never holds
    // a slot a transmission needs.
    let mail_runner = Arc::new(MailRunner(issuing.clone()));
    let mail_scheduler = RetryScheduler::supervised(mail_arbiter.handle(), mail_runner, 4, tick);
    let _ = issuing.mail.scheduler.set(mail_scheduler);
    let recovery_impl = Arc::new(Recovery(issuing.clone()));
    let interval = settings
        .resilience
        .scaled(settings.resilience.recovery_interval_s);
    let recovery = RecoveryTicker::supervised(
        scheduler_arbiter.handle(),
        recovery_impl,
        interval.max(Duration::from_millis(10)),
    );

    Ok(Actors {
        rate_limiter,
        rate_windows,
        issuing,
        scheduler,
        recovery,
        arbiters: vec![
            limiter_arbiter,
            transmit_arbiter,
            builder_arbiter,
            misc_arbiter,
            scheduler_arbiter,
            mail_arbiter,
        ],
    })
}

pub async fn serve(settings: Settings) -> anyhow::Result<()> {
    let settings = Arc::new(settings);
    if settings.testing.shared_clock {
        crate::clock::share_with_simulator(settings.testing.clock_offset_s);
    }
    let dir = settings.data_dir().to_path_buf();
    // Start-up's synchronous steps below use the store directly, before
    // the server takes any request; everything after holds the async handle.
    let opened = open_store(&settings)?;
    for notice in &opened.notices {
        tracing::warn!("{notice}");
        say!("{notice}");
    }
    let opened_store = opened.store;

    let sim = start_simulator(&settings).await?;
    let tax_sim_url = sim.as_ref().map(|(url, _)| url.clone());
    // Alone: nodes starting at once on an empty database make one admin
    // token and one demo company (docs/operations.md, "Several nodes").
    let admin_hash = opened_store
        .at_start_alone(|store| -> anyhow::Result<_> {
            let (hash, new_token) = admin_token(&settings, store)?;
            let sim_url = tax_sim_url.as_deref().unwrap_or("");
            bootstrap(&settings, store, new_token.as_deref(), sim_url)?;
            Ok(hash)
        })
        .context("taking the start-up lock")??;
    let store = opened_store
        .start_async()
        .context("starting the store threads")?;

    let metrics = Metrics::install().map_err(|e| anyhow::anyhow!("metrics: {e}"))?;
    let actors = start_actors(&settings, store.clone(), tax_sim_url.clone())?;
    let rate_limiter = actors.rate_limiter.clone();
    let registrar = start_demo_registrar(&actors.issuing, opened_store.shared());
    // Before anything is sent: a simulator knows nobody after its own start.
    registrar
        .register(demo_companies(opened_store.store())?)
        .await;
    let node_lease = crate::issuing::adopt::join(&actors.issuing)?;
    crate::issuing::resume::resume(&actors.issuing).await?;
    crate::issuing::adopt::start(&actors.issuing, node_lease.as_ref());
    crate::issuing::invoice_events::copy_check::at_start(&actors.issuing).await;
    let operator = crate::operator::OperatorEvents::new(actors.issuing.clone());
    crate::operator::warnings::start(operator.clone());
    crate::issuing::invoice_events::sweep::start(actors.issuing.clone());
    let reconciliation = crate::operator::reconciliation::Reconciler::new(operator.clone());
    crate::operator::reconciliation::start(reconciliation.clone());
    let operator_events = operator.clone();

    let state = web::Data::new(AppState {
        settings: settings.clone(),
        store: store.clone(),
        key_cache: Default::default(),
        rate_limiter,
        rate_windows: actors.rate_windows.clone(),
        shared_counts: Default::default(),
        metrics,
        admin_token_sha256: admin_hash,
        admin_failures: Default::default(),
        tax_sim_url,
        registrar,
        issuing: actors.issuing.clone(),
        scheduler: actors.scheduler.clone(),
        recovery: actors.recovery.clone(),
        buyers: Default::default(),
        operator,
        reconciliation,
    });
    crate::http::shared_counts::start(&store, state.shared_counts.clone());
    // The other nodes' events and key changes (PostgreSQL).
    crate::fanout::start(&store, actors.issuing.hub.clone(), {
        let state = state.clone();
        move || state.forget_keys()
    })?;

    // Serialized once and shared: SwaggerUi's own route keeps a clone of
    // the whole document per worker (several MB each, resident for the life of
    // the process) and serializes it again on every request.
    let openapi_json = web::Bytes::from(
        serde_json::to_vec(&ApiDoc::openapi()).context("serializing the OpenAPI document")?,
    );
    let workers = match settings.server.workers {
        0 => std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2),
        n => n,
    };
    let console = crate::console::Console::new(&settings.console, &store);
    let server = HttpServer::new(move || {
        App::new()
            .app_data(state.clone())
            .app_data(
                web::PathConfig::default()
                    .error_handler(|e, _| ApiError::NotFound(format!("resource ({e})")).into()),
            )
            .wrap(from_fn(crate::ops::observe::observe))
            .service(crate::ops::health::healthz)
            .service(crate::ops::health::readyz)
            .service(crate::ops::health::metrics)
            .route("/v1/api/openapi.json", {
                let json = openapi_json.clone();
                web::get().to(move || {
                    let json = json.clone();
                    async move {
                        HttpResponse::Ok()
                            .content_type("application/json")
                            .body(json)
                    }
                })
            })
            .route(
                "/v1/api/docs",
                web::get().to(|| async {
                    HttpResponse::PermanentRedirect()
                        .insert_header(("Location", "/v1/api/docs/"))
                        .finish()
                }),
            )
            // Under a plain prefix: the UI's pattern is a regex, which every
            // other request tried (and failed) on its way to its route.
            .service(web::scope("/v1/api/docs").service(
                SwaggerUi::new("/{_:.*}").config(SwaggerConfig::from("/v1/api/openapi.json")),
            ))
            .configure(crate::admin::configure)
            .configure(crate::api::configure)
            .configure(|cfg| crate::console::configure(cfg, console.clone()))
            .default_service(web::to(|| async {
                Err::<HttpResponse, _>(ApiError::NotFound("route".into()))
            }))
    })
    .workers(workers)
    .shutdown_timeout(settings.server.shutdown_timeout_s)
    // Our own signal handling below: the sockets are let go first.
    .disable_signals()
    .bind(&settings.server.bind)
    .with_context(|| format!("binding {}", settings.server.bind))?;

    let addr = server
        .addrs()
        .first()
        .copied()
        .ok_or_else(|| anyhow::anyhow!("bound to no address"))?;
    write_listening(&dir, addr)?;
    actix_web::rt::spawn(crate::backup::schedule::run(
        store.clone(),
        settings.clone(),
        operator_events,
    ));
    let running = server.run();
    let handle = running.handle();
    let issuing = actors.issuing.clone();
    actix_web::rt::spawn(async move {
        wait_for_signal().await;
        // WebSockets never finish on their own: they would hold the
        // graceful stop for the whole shutdown timeout.
        let _ = issuing.hub.addr().send(CloseAll).await;
        // Then in-flight requests finish before the workers stop.
        handle.stop(true).await;
    });
    running.await.context("HTTP server")?;
    if let Some((_, handle)) = sim {
        handle.stop(true).await;
    }
    for arbiter in &actors.arbiters {
        arbiter.stop();
    }
    drop(node_lease);
    // Actors and store threads still hold the store: it is closed here,
    // not when the last handle goes (which the process exit never waits for).
    opened_store.close()?;
    tracing::info!("stopped cleanly");
    Ok(())
}
