//! Job claims with leases on sled: one entry a claimed job in
//! `trees::JOB_LEASES`, changed by compare-and-swap so two claims at once
//! cannot both win, and flushed before the answer.

use crate::encoding::codec::{decode, encode, id_key};
use crate::encoding::trees;
use crate::engine::sled::SledStore;
use crate::error::StoreResult;
use crate::model::JobLease;
use crate::traits::JobLeases;

/// What a change makes of the lease found (`None`: leave it as it is and
/// answer `None`).
type Change<'a> = &'a dyn Fn(Option<&JobLease>) -> Option<Option<JobLease>>;

impl SledStore {
    /// Applies `change` to `job`'s lease atomically, retrying when another
    /// writer changed it meanwhile; answers the lease written (or removed).
    fn change_lease(&self, job: u64, change: Change<'_>) -> StoreResult<Option<Option<JobLease>>> {
        let tree = self.db.open_tree(trees::JOB_LEASES)?;
        let key = id_key(job);
        loop {
            let current = tree.get(key)?;
            let lease: Option<JobLease> = match &current {
                Some(v) => Some(decode(trees::JOB_LEASES, v)?),
                None => None,
            };
            let Some(next) = change(lease.as_ref()) else {
                return Ok(None);
            };
            let value = match &next {
                Some(l) => Some(encode(trees::JOB_LEASES, l)?),
                None => None,
            };
            if tree.compare_and_swap(key, current, value)?.is_ok() {
                self.flush_now()?;
                return Ok(Some(next));
            }
        }
    }
}

impl JobLeases for SledStore {
    fn claim_job(
        &self,
        job: u64,
        worker: &str,
        now_ms: i64,
        for_ms: i64,
    ) -> StoreResult<Option<JobLease>> {
        let claimed = self.change_lease(job, &|lease| match lease {
            Some(l) if l.worker != worker && l.expires_at_ms > now_ms => None,
            _ => Some(Some(JobLease {
                job_id: job,
                worker: worker.to_string(),
                expires_at_ms: now_ms.saturating_add(for_ms),
            })),
        })?;
        Ok(claimed.flatten())
    }

    fn renew_job_lease(
        &self,
        job: u64,
        worker: &str,
        now_ms: i64,
        for_ms: i64,
    ) -> StoreResult<Option<JobLease>> {
        let renewed = self.change_lease(job, &|lease| match lease {
            Some(l) if l.worker == worker && l.expires_at_ms > now_ms => Some(Some(JobLease {
                expires_at_ms: now_ms.saturating_add(for_ms),
                ..l.clone()
            })),
            _ => None,
        })?;
        Ok(renewed.flatten())
    }

    fn release_job(&self, job: u64, worker: &str) -> StoreResult<bool> {
        let released = self.change_lease(job, &|lease| match lease {
            Some(l) if l.worker == worker => Some(None),
            _ => None,
        })?;
        Ok(released.is_some())
    }

    fn job_lease(&self, job: u64) -> StoreResult<Option<JobLease>> {
        let tree = self.db.open_tree(trees::JOB_LEASES)?;
        match tree.get(id_key(job))? {
            Some(v) => Ok(Some(decode(trees::JOB_LEASES, &v)?)),
            None => Ok(None),
        }
    }
}
