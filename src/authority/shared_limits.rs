//! The authority's limits held by every node together (spec §8: at most
//! 10 calls a second and 3 in flight from the whole installation). Each
//! node's transmitter paces its own calls; on a store several nodes share
//! (PostgreSQL) each call also takes, before it goes out, one of the
//! in-flight slots every node shares (an advisory lock held on a
//! connection of its own for the call's duration) and a start in the
//! shared pacing window (a row per start the window allows). Waiting
//! here counts against the call's timeout; a store that cannot be reached
//! is asked again until it answers or the call times out, and nothing is
//! sent meanwhile.

use std::time::Duration;

use emisor_store::{AsyncStore, AuthoritySlot};

/// How long to wait before asking again for an in-flight slot (the
/// advisory locks do not wake a waiter) or after a store error.
const POLL: Duration = Duration::from_millis(10);

/// The limits every node's calls share.
#[derive(Clone)]
pub struct SharedLimits {
    store: AsyncStore,
    in_flight: u32,
    per_window: u32,
    window: Duration,
}

impl std::fmt::Debug for SharedLimits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedLimits")
            .field("in_flight", &self.in_flight)
            .field("per_window", &self.per_window)
            .field("window", &self.window)
            .finish()
    }
}

/// A call's place in the shared limits: its in-flight slot, freed by
/// [`SharedLimits::leave`].
pub struct Entered(AuthoritySlot);

impl SharedLimits {
    /// The shared limits on `store`, if several nodes may serve from it.
    pub fn on(
        store: &AsyncStore,
        in_flight: u32,
        per_window: u32,
        window: Duration,
    ) -> Option<SharedLimits> {
        store.is_shared().then(|| SharedLimits {
            store: store.clone(),
            in_flight: in_flight.max(1),
            per_window: per_window.max(1),
            window,
        })
    }

    /// Waits for a shared in-flight slot, then for a start in the shared
    /// window.
    pub async fn enter(&self) -> Entered {
        let slot = loop {
            match self.store.try_authority_slot(self.in_flight).await {
                Ok(Some(slot)) => break slot,
                Ok(None) => {}
                Err(e) => tracing::warn!(error = %e, "taking a shared slot for the authority"),
            }
            actix_web::rt::time::sleep(POLL).await;
        };
        loop {
            let wait = match self
                .store
                .take_authority_start(self.per_window, self.window)
                .await
            {
                Ok(Ok(())) => break,
                Ok(Err(wait)) => wait.max(Duration::from_millis(1)),
                Err(e) => {
                    tracing::warn!(error = %e, "pacing a call to the authority");
                    POLL
                }
            };
            actix_web::rt::time::sleep(wait).await;
        }
        Entered(slot)
    }

    /// The call ended: its slot is free for any node.
    pub async fn leave(&self, entered: Entered) {
        self.store.release_authority_slot(entered.0).await;
    }
}
