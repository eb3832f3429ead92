//! What the authority holds of a stored document, asked with the status
//! query a resend asks first (`GetStatus` by the document's code), as a
//! background caller of the paced transmitter; and a queued document the
//! authority accepted while its answer was lost, recorded as accepted under
//! the transmission job's claim, so that no transmission sends or moves it
//! meanwhile (the reconciliation of `crate::operator::reconciliation`).

use emisor_store::{state, DocumentRecord};

use super::{now_ms, TransmitError};
use crate::authority::port::{AuthorityRequest, AuthorityResponse};
use crate::authority::Transmission;
use crate::issuing::{same_day, Issuing};

/// Who takes a transmission job's claim to reconcile its document.
pub const RECONCILIATION_WORKER: &str = "reconciliation";

/// How long reconciliation holds a job's claim unless it releases it: one
/// status query and the record it writes.
const RECONCILIATION_CLAIM_MS: i64 = 2 * 60 * 1000;

/// What the authority answered about a document's code.
#[derive(Debug, Clone)]
pub enum AuthorityView {
    Accepted(Transmission),
    /// It has the document and rejected it.
    Rejected(Transmission),
    /// It does not know the code (66).
    Unknown(Transmission),
    /// In process, pending, or an answer that settles nothing.
    Unsettled(Transmission),
}

impl AuthorityView {
    fn of(t: Transmission) -> AuthorityView {
        if t.accepted() {
            AuthorityView::Accepted(t)
        } else if same_day::absent(&t) {
            AuthorityView::Unknown(t)
        } else if t.known_rejection() {
            AuthorityView::Rejected(t)
        } else {
            AuthorityView::Unsettled(t)
        }
    }

    /// The authority's answer as it gave it.
    pub fn transmission(&self) -> &Transmission {
        match self {
            AuthorityView::Accepted(t)
            | AuthorityView::Rejected(t)
            | AuthorityView::Unknown(t)
            | AuthorityView::Unsettled(t) => t,
        }
    }
}

/// Why a status query brought no view.
#[derive(Debug, thiserror::Error)]
pub enum AskError {
    #[error("the document has no code")]
    NoCode,
    #[error("the authority could not be asked: {0}")]
    Unreachable(String),
    #[error(transparent)]
    Transmit(#[from] TransmitError),
    #[error(transparent)]
    Store(#[from] emisor_store::StoreError),
}

/// What reconciling a queued document came to.
#[derive(Debug, Clone)]
pub enum Reconciled {
    /// Another worker holds its job's claim (a transmission under way):
    /// left to it, not asked.
    Claimed,
    /// No longer queued once its claim was taken: settled meanwhile.
    Moved,
    /// Never sent yet (waiting its turn): the authority cannot have it.
    NotSent,
    /// Asked: when accepted, now recorded in state 2.
    Asked(Box<AuthorityView>),
}

impl Issuing {
    /// The authority's status of `doc`'s code, asked through the paced
    /// transmitter as a background caller.
    pub async fn authority_view(&self, doc: &DocumentRecord) -> Result<AuthorityView, AskError> {
        let code = doc.code.clone().filter(|c| !c.is_empty());
        let Some(track_id) = code else {
            return Err(AskError::NoCode);
        };
        let target = self.target(doc.company_id, doc.environment).await?;
        match self
            .call(
                doc.company_id,
                target,
                AuthorityRequest::GetStatus { track_id },
            )
            .await
        {
            Ok(AuthorityResponse::Verdict(t)) => Ok(AuthorityView::of(t)),
            Ok(_) => Err(AskError::Unreachable("unexpected answer".into())),
            Err(failure) => Err(AskError::Unreachable(failure.to_string())),
        }
    }

    /// Asks the authority about queued document `doc_id` under its
    /// transmission job's claim; an acceptance is recorded (state 2, the
    /// job dropped, the customer's email queued) as a transmission records
    /// it. A rejection or an unknown code changes nothing here: the job
    /// sends it (asking first when a send may have landed).
    pub async fn reconcile_queued(&self, doc_id: u64) -> Result<Reconciled, AskError> {
        let job = self.store.job_for_document(doc_id).await?;
        if let Some(job) = &job {
            let claimed = self
                .store
                .claim_job(
                    job.id,
                    RECONCILIATION_WORKER,
                    now_ms(),
                    RECONCILIATION_CLAIM_MS,
                )
                .await?;
            if claimed.is_none() {
                return Ok(Reconciled::Claimed);
            }
        }
        let outcome = self.reconcile_claimed(doc_id).await;
        if let Some(job) = &job {
            if let Err(e) = self.store.release_job(job.id, RECONCILIATION_WORKER).await {
                tracing::error!(job_id = job.id, error = %e, "releasing the job's claim");
            }
        }
        outcome
    }

    async fn reconcile_claimed(&self, doc_id: u64) -> Result<Reconciled, AskError> {
        // Read again under the claim: a transmission may have settled it.
        let doc = self.store.document(doc_id).await?;
        let Some(mut doc) = doc.filter(|d| d.state == state::QUEUED && !d.pending_build) else {
            return Ok(Reconciled::Moved);
        };
        if doc.attempts == 0 {
            return Ok(Reconciled::NotSent);
        }
        let view = self.authority_view(&doc).await?;
        if let AuthorityView::Accepted(t) = &view {
            let job = self.store.job_for_document(doc_id).await?;
            self.finish(
                &mut doc,
                job.as_ref(),
                t.clone(),
                state::ACCEPTED,
                RECONCILIATION_WORKER,
                "status_reconciled",
            )
            .await?;
        }
        Ok(Reconciled::Asked(Box::new(view)))
    }
}
