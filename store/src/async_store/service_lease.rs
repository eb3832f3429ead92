//! The once-per-service tasks' leases as async code sees them
//! (docs/operations.md, "Several nodes"): every node asks on each of a
//! task's ticks, and only the holder runs it. On sled a data dir has one
//! process, which holds every lease.

use crate::async_store::{AsyncStore, Engine};

pub use crate::engine::postgres::service_lease::{Holding, ServiceTask};

impl AsyncStore {
    /// Whether `task` runs on this node now: its lease taken (if no node
    /// holds it) or kept. A database that cannot be asked means "not
    /// held": the task waits for a tick on which the lease is certain.
    pub async fn hold_service_task(&self, task: ServiceTask) -> Holding {
        let Engine::Postgres(pg) = &self.engine else {
            return Holding::Kept;
        };
        let pg = pg.clone();
        let holding = self
            .pool
            .run(move || pg.hold_service_task(task))
            .await
            .unwrap_or_else(|e| {
                tracing::warn!(task = %task, error = %e, "the task's lease could not be asked");
                Holding::Not
            });
        if holding == Holding::Taken {
            tracing::info!(task = %task, "this node now runs the once-per-service task");
        }
        holding
    }
}
