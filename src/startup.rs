//! Wiring: settings → store → bootstrap → actors → HTTP server. Tests start
//! the real binary, so this is also what they exercise.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use actix::{Actor, Arbiter};
use actix_web::middleware::from_fn;
use actix_web::{web, App, HttpResponse, HttpServer};
use anyhow::Context;
use emisor_actors::rate_limiter::RateLimiter;
use emisor_actors::supervisor::Restartable;
use emisor_store::{SledStore, Store};
use sha2::{Digest, Sha256};
use utoipa::OpenApi;
use utoipa_swagger_ui::SwaggerUi;

use crate::api::error::ApiError;
use crate::api::openapi::ApiDoc;
use crate::config::Settings;
use crate::ops::metrics::Metrics;
use crate::provisioning::demo::{
    demo_company_request, provision_demo_company, write_demo_keys, write_private,
};
use crate::state::AppState;

const ADMIN_TOKEN_SETTING: &str = "admin_token_sha256";

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

/// `emisor tax-sim`: the authority simulator alone.
pub fn tax_sim_blocking(bind: &str) -> anyhow::Result<()> {
    init_tracing();
    anyhow::bail!("the authority simulator is not part of this build yet (asked to bind {bind})")
}

/// The admin token: configured, or generated once and remembered by hash.
/// Returns the hash and, when generated now, the token to show once.
fn admin_token(
    settings: &Settings,
    store: &dyn Store,
) -> anyhow::Result<([u8; 32], Option<String>)> {
    if !settings.admin.token.is_empty() {
        return Ok((Sha256::digest(settings.admin.token.as_bytes()).into(), None));
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
fn bootstrap(
    settings: &Settings,
    store: &dyn Store,
    new_admin_token: Option<&str>,
    tax_sim_url: &str,
) -> anyhow::Result<()> {
    let dir = settings.data_dir();
    if settings.demo.bootstrap && store.is_empty()? {
        let token = new_admin_token.unwrap_or(settings.admin.token.as_str());
        let (_, keys) = provision_demo_company(store, &demo_company_request(), token, tax_sim_url)?;
        let path = dir.join("demo-keys.json");
        write_demo_keys(&path, &keys)?;
        println!(
            "demo company provisioned (id_empresa {}, NIT {})",
            keys.id_empresa, keys.nit
        );
        println!("  sk_test:     {}", keys.sk_test);
        println!("  sk_live:     {}", keys.sk_live);
        println!("  admin token: {}", keys.admin_token);
        println!(
            "  saved to {} (mode 0600); these keys are not shown again",
            path.display()
        );
    } else if let Some(token) = new_admin_token {
        let path = dir.join("admin-token");
        write_private(&path, token.as_bytes())
            .with_context(|| format!("writing {}", path.display()))?;
        println!(
            "admin token: {token} (saved to {}, mode 0600)",
            path.display()
        );
    }
    Ok(())
}

fn write_listening(dir: &Path, addr: SocketAddr) -> anyhow::Result<()> {
    let url = format!("http://{addr}");
    println!("listening on {url}");
    let path = dir.join("listening");
    std::fs::write(&path, &url).with_context(|| format!("writing {}", path.display()))
}

pub async fn serve(settings: Settings) -> anyhow::Result<()> {
    let settings = Arc::new(settings);
    let dir = settings.data_dir().to_path_buf();
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("creating data dir {}", dir.display()))?;
    let store: Arc<dyn Store> = Arc::new(
        SledStore::open(&dir).with_context(|| format!("opening the store in {}", dir.display()))?,
    );

    let tax_sim_url: Option<String> = None;
    let (admin_hash, new_token) = admin_token(&settings, store.as_ref())?;
    bootstrap(
        &settings,
        store.as_ref(),
        new_token.as_deref(),
        tax_sim_url.as_deref().unwrap_or(""),
    )?;

    let metrics = Metrics::install().map_err(|e| anyhow::anyhow!("metrics: {e}"))?;
    // Each actor gets its own arbiter (thread) so a slow one never stalls
    // the HTTP workers or the others.
    let limiter_arbiter = Arbiter::new();
    let limiter_handle = limiter_arbiter.handle();
    let rate_limiter = Restartable::start("rate_limiter", move || {
        RateLimiter::start_in_arbiter(&limiter_handle, |_| RateLimiter::new())
    });

    let state = web::Data::new(AppState {
        settings: settings.clone(),
        store: store.clone(),
        key_cache: Default::default(),
        rate_limiter,
        metrics,
        admin_token_sha256: admin_hash,
        tax_sim_url,
    });

    let openapi = ApiDoc::openapi();
    let workers = match settings.server.workers {
        0 => std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2),
        n => n,
    };
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
            .service(
                SwaggerUi::new("/v1/api/docs/{_:.*}").url("/v1/api/openapi.json", openapi.clone()),
            )
            .route(
                "/v1/api/docs",
                web::get().to(|| async {
                    HttpResponse::PermanentRedirect()
                        .insert_header(("Location", "/v1/api/docs/"))
                        .finish()
                }),
            )
            .configure(crate::admin::configure)
            .configure(crate::api::configure)
            .default_service(web::to(|| async {
                Err::<HttpResponse, _>(ApiError::NotFound("route".into()))
            }))
    })
    .workers(workers)
    .shutdown_timeout(settings.server.shutdown_timeout_s)
    .bind(&settings.server.bind)
    .with_context(|| format!("binding {}", settings.server.bind))?;

    let addr = server
        .addrs()
        .first()
        .copied()
        .ok_or_else(|| anyhow::anyhow!("bound to no address"))?;
    write_listening(&dir, addr)?;
    // actix-web stops on SIGINT/SIGTERM, finishing in-flight requests first.
    server.run().await.context("HTTP server")?;
    store.flush()?;
    limiter_arbiter.stop();
    tracing::info!("stopped cleanly");
    Ok(())
}
