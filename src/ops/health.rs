//! `/healthz` (the process answers) and `/readyz` (the store takes a write
//! and every actor answers a ping within a deadline). Every actor runs under
//! a `Restartable`, so each one is reported with its restart count; asking
//! also replaces a dead actor. `/metrics` refreshes the same figures.

use std::time::Duration;

use actix_web::{get, web, HttpResponse};
use emisor_actors::supervisor::ActorHealth;
use serde::Serialize;
use utoipa::ToSchema;

use crate::http::envelope;
use crate::http::state::AppState;

const ACTOR_DEADLINE: Duration = Duration::from_secs(1);

#[derive(Serialize, ToSchema)]
pub struct Health {
    pub status: &'static str,
}

/// Liveness: the process is up.
#[utoipa::path(get, path = "/healthz", tag = "operations",
    responses((status = 200, description = "process up")))]
#[get("/healthz")]
pub async fn healthz() -> HttpResponse {
    envelope::ok("ok", Health { status: "ok" })
}

#[derive(Serialize, ToSchema)]
pub struct ActorStatus {
    pub name: String,
    pub alive: bool,
    pub restarts: u64,
}

#[derive(Serialize, ToSchema)]
pub struct BreakerStatus {
    /// `CLOSED`, `OPEN` or `HALF_OPEN`.
    pub state: String,
    #[schema(value_type = Object)]
    pub detail: serde_json::Value,
}

#[derive(Serialize, ToSchema)]
pub struct Readiness {
    pub ready: bool,
    pub store: String,
    pub actors: Vec<ActorStatus>,
    /// The circuit breaker towards the authority (spec 3.2). An open breaker
    /// does not make the service unready: documents wait in state 5.
    pub breaker: Option<BreakerStatus>,
}

/// The breaker's state, also published as a metric (0 closed, 1 half-open, 2 open).
pub async fn breaker(state: &AppState) -> Option<BreakerStatus> {
    use emisor_actors::breaker::BreakerState;
    let report = tokio::time::timeout(
        ACTOR_DEADLINE,
        state
            .issuing
            .transmitter
            .addr()
            .send(emisor_actors::transmitter::GetBreakerState),
    )
    .await
    .ok()?
    .ok()?;
    let value = match report.snapshot.state {
        BreakerState::Closed => 0.0,
        BreakerState::HalfOpen => 1.0,
        BreakerState::Open => 2.0,
    };
    ::metrics::gauge!(crate::metrics::BREAKER_STATE).set(value);
    let detail = serde_json::to_value(&report).unwrap_or_default();
    Some(BreakerStatus {
        state: detail
            .get("state")
            .and_then(|s| s.as_str())
            .unwrap_or("UNKNOWN")
            .to_string(),
        detail,
    })
}

/// Publishes one actor's health as metrics and returns it for the body.
fn record(h: ActorHealth) -> ActorStatus {
    ::metrics::gauge!(crate::metrics::ACTOR_UP, "actor" => h.name).set(if h.alive {
        1.0
    } else {
        0.0
    });
    ::metrics::counter!(crate::metrics::ACTOR_RESTARTS, "actor" => h.name).absolute(h.restarts);
    ActorStatus {
        name: h.name.to_string(),
        alive: h.alive,
        restarts: h.restarts,
    }
}

/// The signer pool's threads replace themselves; its counters come through
/// the document builder, which owns the pool. Alive means every worker is.
async fn signer_pool(state: &AppState) -> ActorHealth {
    let pool = tokio::time::timeout(
        ACTOR_DEADLINE,
        state
            .issuing
            .builder
            .send(emisor_actors::document_builder::PoolStatus),
    )
    .await
    .ok()
    .and_then(Result::ok);
    ActorHealth {
        name: "signer_pool",
        alive: pool.is_some_and(|p| p.is_healthy()),
        restarts: pool.map_or(0, |p| p.restarts),
    }
}

/// Every actor's health, published as metrics.
async fn actors(state: &AppState) -> Vec<ActorStatus> {
    let i = &state.issuing;
    vec![
        record(state.rate_limiter.health(ACTOR_DEADLINE).await),
        record(i.idempotency.health(ACTOR_DEADLINE).await),
        record(i.builder.health(ACTOR_DEADLINE).await),
        record(signer_pool(state).await),
        record(i.transmitter.health(ACTOR_DEADLINE).await),
        record(state.scheduler.health(ACTOR_DEADLINE).await),
        record(state.recovery.health(ACTOR_DEADLINE).await),
        record(i.webhooks.health(ACTOR_DEADLINE).await),
        record(i.hub.health(ACTOR_DEADLINE).await),
        record(i.mail.mailer.health(ACTOR_DEADLINE).await),
        record(mail_scheduler(state).await),
    ]
}

/// The email jobs' scheduler (a second retry scheduler, named apart).
async fn mail_scheduler(state: &AppState) -> ActorHealth {
    match state.issuing.mail.scheduler.get() {
        Some(s) => ActorHealth {
            name: "mail_scheduler",
            ..s.health(ACTOR_DEADLINE).await
        },
        None => ActorHealth {
            name: "mail_scheduler",
            alive: false,
            restarts: 0,
        },
    }
}

/// Readiness: store writable and every actor alive. 503 otherwise.
#[utoipa::path(get, path = "/readyz", tag = "operations",
    responses((status = 200, description = "ready"), (status = 503, description = "not ready")))]
#[get("/readyz")]
pub async fn readyz(state: web::Data<AppState>) -> HttpResponse {
    let store_status = match state.store.check_writable().await {
        Ok(()) => "ok".to_string(),
        Err(e) => format!("error: {e}"),
    };
    let actors = actors(&state).await;
    let breaker = breaker(&state).await;
    let ready = store_status == "ok" && actors.iter().all(|a| a.alive);
    let body = Readiness {
        ready,
        store: store_status,
        actors,
        breaker,
    };
    if ready {
        envelope::ok("ready", body)
    } else {
        envelope::with_status(
            actix_web::http::StatusCode::SERVICE_UNAVAILABLE,
            "not ready",
            body,
        )
    }
}

/// Prometheus exposition.
#[utoipa::path(get, path = "/metrics", tag = "operations",
    responses((status = 200, description = "Prometheus text format", content_type = "text/plain")))]
#[get("/metrics")]
pub async fn metrics(state: web::Data<AppState>) -> HttpResponse {
    breaker(&state).await;
    actors(&state).await;
    let counts = state.store.document_counts().await.unwrap_or_default();
    let text = state.metrics.render(counts);
    HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4")
        .body(text)
}
