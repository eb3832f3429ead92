//! Where a company's documents go (the authority's services or the
//! simulator), with which WS-Security credentials, and one call through
//! the paced transmitter and its circuit breaker.

use chrono::Utc;
use emisor_actors::transmitter::{Submit, TransmitFailure};
use emisor_store::{Company, DocumentRecord, Environment};

use super::TransmitError;
use crate::authority::port::{AuthorityCall, AuthorityRequest, AuthorityResponse, AuthorityTarget};
use crate::authority::simulator;
use crate::authority::WsSigner;
use crate::issuing::Issuing;

/// The authority's production service, for real companies with `sk_live_` keys.
pub const PRODUCTION_URL: &str = "https://vpfe.dian.gov.co/WcfDianCustomerServices.svc";
/// The authority's test service.
pub const HABILITACION_URL: &str = "https://vpfe-hab.dian.gov.co/WcfDianCustomerServices.svc";

impl Issuing {
    /// Where this company's documents go in this environment. A configured
    /// URL wins; otherwise sandbox keys use the in-process simulator, and
    /// production keys the authority's production service — except for demo
    /// companies, which never leave the simulator (decisions.md §5).
    pub fn authority_url(&self, company: &Company, env: Environment) -> String {
        let sim = self
            .sim_url
            .as_deref()
            .map(|base| format!("{base}{}", simulator::SERVICE_PATH));
        let a = &self.settings.authority;
        let url = match env {
            Environment::Test => Some(&a.url).filter(|u| !u.is_empty()).cloned(),
            Environment::Live if company.demo => [&a.url_production, &a.url]
                .into_iter()
                .find(|u| !u.is_empty())
                .cloned(),
            Environment::Live => Some(&a.url_production).filter(|u| !u.is_empty()).cloned(),
        };
        match (url, env) {
            (Some(u), _) => u,
            (None, Environment::Live) if !company.demo => PRODUCTION_URL.to_string(),
            (None, _) => sim.unwrap_or_else(|| HABILITACION_URL.to_string()),
        }
    }

    /// URL and WS-Security credentials of a company.
    pub async fn target(
        &self,
        company_id: u64,
        env: Environment,
    ) -> Result<AuthorityTarget, TransmitError> {
        let company = self
            .store
            .company(company_id)
            .await?
            .ok_or_else(|| TransmitError::Credentials("company not found".into()))?;
        let cert = self
            .store
            .certificate(company_id)
            .await?
            .ok_or_else(|| TransmitError::Credentials("no certificate".into()))?;
        let key = self
            .keys
            .get_or_load(company_id, &cert.serial, || {
                crate::engine::signing_key::SigningKey::from_pkcs12(
                    cert.pkcs12_der.expose(),
                    cert.password.expose(),
                )
            })
            .map_err(|e| TransmitError::Credentials(e.to_string()))?;
        let signer = WsSigner::new(key.private_key().clone(), key.certificate_der().to_vec())
            .map_err(|e| TransmitError::Credentials(e.to_string()))?;
        Ok(AuthorityTarget {
            url: self.authority_url(&company, env),
            signer,
        })
    }

    /// Sends one call through the paced transmitter.
    pub(super) async fn call(
        &self,
        company: u64,
        target: AuthorityTarget,
        request: AuthorityRequest,
    ) -> Result<AuthorityResponse, TransmitFailure<crate::authority::TransmitError>> {
        self.call_as(company, target, request, false).await
    }

    /// [`Self::call`]; `urgent` goes ahead of the background backlog.
    pub(super) async fn call_as(
        &self,
        company: u64,
        target: AuthorityTarget,
        request: AuthorityRequest,
        urgent: bool,
    ) -> Result<AuthorityResponse, TransmitFailure<crate::authority::TransmitError>> {
        let call = AuthorityCall { target, request };
        let submit = if urgent {
            Submit::urgent(company, call)
        } else {
            Submit::new(company, call)
        };
        match self.transmitter.send(submit).await {
            Ok(outcome) => outcome,
            Err(_) => Err(TransmitFailure::Stopped),
        }
    }

    /// One call of any operation, through the paced transmitter.
    pub async fn call_authority(
        &self,
        company: u64,
        target: AuthorityTarget,
        request: AuthorityRequest,
    ) -> Result<AuthorityResponse, TransmitFailure<crate::authority::TransmitError>> {
        self.call(company, target, request).await
    }

    /// One call nobody waits for, in the transmitter's background lane:
    /// it starts only when no transmission or sale waits, and leaves them room.
    pub async fn call_in_background(
        &self,
        company: u64,
        target: AuthorityTarget,
        request: AuthorityRequest,
    ) -> Result<AuthorityResponse, TransmitFailure<crate::authority::TransmitError>> {
        let call = AuthorityCall { target, request };
        match self
            .transmitter
            .send(Submit::background(company, call))
            .await
        {
            Ok(outcome) => outcome,
            Err(_) => Err(TransmitFailure::Stopped),
        }
    }

    /// Is the breaker letting calls through (closed or half-open)?
    pub async fn authority_available(&self) -> bool {
        use emisor_actors::breaker::BreakerState;
        use emisor_actors::transmitter::GetBreakerState;
        match self.transmitter.addr().send(GetBreakerState).await {
            Ok(report) => {
                report.snapshot.state != BreakerState::Open
                    || report.next_probe_at.is_some_and(|t| t <= Utc::now())
            }
            Err(_) => false,
        }
    }

    /// Recovery's probe: one status query for a waiting document, through
    /// the breaker. Any answer means the authority is reachable again; a
    /// failure leaves everything as it is (no re-queue, no new events).
    pub(super) async fn authority_answers(&self, waiting: &[DocumentRecord]) -> bool {
        let mut probe = None;
        for d in waiting {
            let Some(code) = d.code.clone() else { continue };
            if let Ok(target) = self.target(d.company_id, d.environment).await {
                probe = Some((d.company_id, target, code));
                break;
            }
        }
        let Some((company, target, track_id)) = probe else {
            return false;
        };
        self.call(company, target, AuthorityRequest::GetStatus { track_id })
            .await
            .is_ok()
    }
}
