//! The authority's limits held by every node together (spec §8: at most
//! 10 calls a second and 3 in flight from the whole installation). Each
//! node's transmitter paces its own calls; on a store several nodes share
//! (PostgreSQL) each call also takes, before it goes out, one of the
//! in-flight slots every node shares (an advisory lock held on a
//! connection of its own for the call's duration) and a start in the
//! shared pacing window (a row per start the window allows). Waiting
//! here counts against the call's timeout (so a call may time out while its
//! request is out: see [`Entered`]); a store that cannot be reached
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
/// [`SharedLimits::leave`] once the call's answer came. A call abandoned
/// while its request was out (its own timeout, or its caller's deadline,
/// which counts the wait here) may still be at the authority, which counts
/// it in flight until it answers: its slot stays taken for `hold` more.
pub struct Entered {
    slot: Option<AuthoritySlot>,
    store: AsyncStore,
    hold: Duration,
}

impl Drop for Entered {
    fn drop(&mut self) {
        let Some(slot) = self.slot.take() else {
            return;
        };
        // Outside a runtime (the process stopping) it is freed at once.
        if tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        let (store, hold) = (self.store.clone(), self.hold);
        tracing::warn!(
            hold_ms = u64::try_from(hold.as_millis()).unwrap_or(u64::MAX),
            "a call to the authority was abandoned while out: its shared slot stays taken"
        );
        tokio::spawn(async move {
            tokio::time::sleep(hold).await;
            store.release_authority_slot(slot).await;
        });
    }
}

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
    /// window; the slot is held `hold` more if the call is abandoned.
    pub async fn enter(&self, hold: Duration) -> Entered {
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
        Entered {
            slot: Some(slot),
            store: self.store.clone(),
            hold,
        }
    }

    /// The call's answer came: its slot is free for any node.
    pub async fn leave(&self, mut entered: Entered) {
        if let Some(slot) = entered.slot.take() {
            self.store.release_authority_slot(slot).await;
        }
    }
}
