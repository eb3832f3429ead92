//! What every handler can reach: settings, the store, the actors, metrics.

use std::sync::Arc;

use dashmap::DashMap;
use emisor_actors::rate_limiter::RateLimiter;
use emisor_actors::supervisor::Restartable;
use emisor_store::AsyncStore;

use crate::api::auth::AuthContext;
use crate::authority::simulator::SimRegistry;
use crate::config::Settings;
use crate::issuing::Issuing;
use crate::ops::metrics::Metrics;
use crate::provisioning::authority_registration::register_company;

pub struct AppState {
    pub settings: Arc<Settings>,
    pub store: AsyncStore,
    /// Authenticated keys by SHA-256 hex, so the hot path skips the store.
    /// Revocation and company changes through the admin API clear entries.
    pub key_cache: DashMap<String, AuthContext>,
    pub rate_limiter: Arc<Restartable<RateLimiter>>,
    pub metrics: Metrics,
    /// SHA-256 of the admin bearer token.
    pub admin_token_sha256: [u8; 32],
    /// Base URL of the authority simulator when it runs in-process.
    pub tax_sim_url: Option<String>,
    /// The in-process simulator's issuer registry, kept in step with the store.
    pub sim_registry: Option<Arc<SimRegistry>>,
    /// Issuing: engine pool, transmitter, scheduler, hub.
    pub issuing: Arc<Issuing>,
    /// Scheduling actors, for `/readyz`.
    pub scheduler: Arc<Restartable<emisor_actors::retry_scheduler::RetryScheduler>>,
    pub recovery: Arc<Restartable<emisor_actors::recovery_ticker::RecoveryTicker>>,
}

impl AppState {
    /// Tells the in-process simulator what changed for a company (software,
    /// resolutions), as the real authority learns it on registration.
    pub async fn sync_authority(&self, company: emisor_store::CompanyId) {
        if let Some(registry) = self.sim_registry.clone() {
            let done = self
                .store
                .blocking(move |s| register_company(&registry, s, company))
                .await;
            if let Err(e) = done
                .map_err(|e| e.to_string())
                .and_then(|r| r.map_err(|e| e.to_string()))
            {
                tracing::warn!(company, error = %e, "could not register the company with the simulator");
            }
        }
    }

    /// Drops cached authentications (after a revoke or a company change).
    pub fn forget_keys(&self) {
        self.key_cache.clear();
    }
}
