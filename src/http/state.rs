//! What every handler can reach: settings, the store, the actors, metrics.

use std::sync::Arc;

use dashmap::DashMap;
use emisor_actors::rate_limiter::{RateLimiter, RateWindows};
use emisor_actors::supervisor::Restartable;
use emisor_store::AsyncStore;

use super::caller::AuthContext;
use crate::config::Settings;
use crate::issuing::Issuing;
use crate::metrics::Metrics;
use crate::provisioning::issuer_registrar::IssuerRegistrar;

pub struct AppState {
    pub settings: Arc<Settings>,
    pub store: AsyncStore,
    /// Authenticated keys by SHA-256 hex, with when each was read, so the
    /// hot path skips the store. Revocation and company changes through the
    /// admin API clear entries (on every node: `crate::fanout`).
    pub key_cache: DashMap<String, (AuthContext, std::time::Instant)>,
    /// The rate limiter's actor (liveness) and the windows it owns, which
    /// the middleware checks directly.
    pub rate_limiter: Arc<Restartable<RateLimiter>>,
    pub rate_windows: Arc<RateWindows>,
    /// What this node holds of each key's count when several nodes share
    /// the store (`super::shared_counts`).
    pub shared_counts: Arc<super::shared_counts::SharedCounts>,
    pub metrics: Metrics,
    /// SHA-256 of the admin bearer token.
    pub admin_token_sha256: [u8; 32],
    /// Wrong admin tokens by address (429 once an address used its budget).
    pub admin_failures: super::token_failures::TokenFailures,
    /// Base URL of the authority simulator when it runs in-process.
    pub tax_sim_url: Option<String>,
    /// Tells the simulator a demo company uses what the company is.
    pub registrar: IssuerRegistrar,
    /// Issuing: engine pool, transmitter, scheduler, hub.
    pub issuing: Arc<Issuing>,
    /// Scheduling actors, for `/readyz`.
    pub scheduler: Arc<Restartable<emisor_actors::retry_scheduler::RetryScheduler>>,
    pub recovery: Arc<Restartable<emisor_actors::recovery_ticker::RecoveryTicker>>,
    /// Buyers looked up at the authority (`GetAcquirer`), cached.
    pub buyers: crate::issuing::buyers::BuyerDirectory,
    /// Operator events (`operador:*`), for the parts that send them.
    pub operator: crate::operator::OperatorEvents,
    /// The reconciliation with the authority (its report, a pass now).
    pub reconciliation: std::sync::Arc<crate::operator::reconciliation::Reconciler>,
}

impl AppState {
    /// Tells a demo company's simulator what changed (software,
    /// resolutions), as the real authority learns it on registration; waits
    /// for the first try, and the registrar keeps trying if it failed.
    pub async fn sync_authority(&self, company: emisor_store::CompanyId) {
        self.registrar.register(vec![company]).await;
    }

    /// Drops cached authentications (after a revoke or a company change).
    pub fn forget_keys(&self) {
        self.key_cache.clear();
    }
}
