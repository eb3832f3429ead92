//! Job claims with leases and a backup's consistent point, on sled.

use super::{company, open};
use crate::*;

#[test]
fn a_job_claimed_by_one_worker_is_refused_to_another_until_its_lease_ends() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    assert_eq!(store.job_lease(7).unwrap(), None);
    let lease = store.claim_job(7, "a", 1_000, 500).unwrap().unwrap();
    assert_eq!(
        lease,
        JobLease {
            job_id: 7,
            worker: "a".into(),
            expires_at_ms: 1_500
        }
    );
    // Before expiry: another worker is refused, the holder renews.
    assert_eq!(store.claim_job(7, "b", 1_200, 500).unwrap(), None);
    assert_eq!(store.renew_job_lease(7, "b", 1_200, 500).unwrap(), None);
    let renewed = store.renew_job_lease(7, "a", 1_400, 500).unwrap().unwrap();
    assert_eq!(renewed.expires_at_ms, 1_900);
    assert_eq!(store.claim_job(7, "b", 1_800, 500).unwrap(), None);
    // Other jobs are not held by it.
    assert!(store.claim_job(8, "b", 1_800, 500).unwrap().is_some());
    // After expiry: another worker takes it, and the old holder can
    // neither renew nor release it.
    let taken = store.claim_job(7, "b", 1_900, 500).unwrap().unwrap();
    assert_eq!(taken.worker, "b");
    assert_eq!(store.renew_job_lease(7, "a", 1_950, 500).unwrap(), None);
    assert!(!store.release_job(7, "a").unwrap());
    // Released: free for anyone at once.
    assert!(store.release_job(7, "b").unwrap());
    assert_eq!(store.job_lease(7).unwrap(), None);
    assert!(store.claim_job(7, "a", 1_960, 500).unwrap().is_some());
}

#[test]
fn a_lease_survives_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = open(dir.path());
        store.claim_job(3, "a", 0, 10_000).unwrap().unwrap();
        store.close().unwrap();
    }
    let store = open(dir.path());
    assert_eq!(store.job_lease(3).unwrap().unwrap().worker, "a");
    assert_eq!(store.claim_job(3, "b", 5_000, 1).unwrap(), None);
}

#[test]
fn a_checkpoint_copy_opens_as_a_store_with_what_was_written_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let created = store.create_company(company()).unwrap();
    store.put_setting("k", "v").unwrap();
    store.claim_job(1, "a", 0, 10).unwrap().unwrap();
    let to = dir.path().join("copy");
    let copy = store.checkpoint_to(&to, &mut || {}).unwrap();
    assert!(copy.collections > 3, "{copy:?}");
    assert!(copy.entries >= 3, "{copy:?}");
    // Written after the point: not in the copy.
    store.put_setting("k", "after").unwrap();
    let again = tempfile::tempdir().unwrap();
    assert!(
        store.checkpoint_to(again.path(), &mut || {}).is_err(),
        "the target exists"
    );
    drop(store);

    let copied = open(&to);
    assert_eq!(
        copied.company(created.id).unwrap().unwrap().nit,
        created.nit
    );
    assert_eq!(copied.setting("k").unwrap().as_deref(), Some("v"));
    assert_eq!(copied.job_lease(1).unwrap().unwrap().worker, "a");
}

#[tokio::test]
async fn a_paused_flusher_holds_a_commit_until_the_pause_goes() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let pause = store.pause_flusher();
    let writer = store.clone();
    let committed = store.flusher.commit(move || {
        writer
            .meta
            .insert("paused-write", &[1u8])
            .map_err(Into::into)
    });
    // The flusher has the commit (or will have it) but runs nothing.
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert_eq!(store.meta.get("paused-write").unwrap(), None);
    drop(pause);
    committed.await.unwrap();
    assert!(store.meta.get("paused-write").unwrap().is_some());
}

/// Group commits go on while the trees are copied: the copy holds exactly
/// what the store held at the point, changes made during the copy included
/// and none made after it.
#[tokio::test]
async fn a_checkpoint_taken_while_commits_go_on_holds_exactly_the_point() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    for i in 0u32..5_000 {
        store
            .meta
            .insert(format!("k{i:06}"), &i.to_be_bytes())
            .unwrap();
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (writer, stopped) = (store.clone(), stop.clone());
    let writing = tokio::spawn(async move {
        let mut n = 0u32;
        while !stopped.load(std::sync::atomic::Ordering::Relaxed) {
            let w = writer.clone();
            writer
                .flusher
                .commit(move || {
                    // A change, a removal and a new key each round.
                    w.meta
                        .insert(format!("k{:06}", n % 5_000), &(n + 1).to_be_bytes())?;
                    w.meta.remove(format!("k{:06}", (n * 7) % 5_000))?;
                    w.meta.insert(format!("new{n:08}"), &n.to_be_bytes())?;
                    Ok(())
                })
                .await
                .unwrap();
            n += 1;
        }
        n
    });
    tokio::task::yield_now().await;
    let (source, to) = (store.clone(), dir.path().join("copy"));
    let (copy, at_point) = tokio::task::spawn_blocking(move || {
        let mut seen = Vec::new();
        let copy = source
            .checkpoint_to(&to, &mut || {
                seen = source.meta.iter().map(|kv| kv.unwrap()).collect();
            })
            .unwrap();
        (copy, seen)
    })
    .await
    .unwrap();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let rounds = writing.await.unwrap();
    assert!(rounds > 0);
    assert!(copy.paused < std::time::Duration::from_secs(5), "{copy:?}");
    drop(store);
    let copied = sled::open(dir.path().join("copy").join("sled")).unwrap();
    let meta: Vec<_> = copied
        .open_tree(crate::trees::META)
        .unwrap()
        .iter()
        .map(|kv| kv.unwrap())
        .collect();
    assert_eq!(meta.len(), at_point.len(), "rounds {rounds}");
    assert!(
        meta == at_point,
        "the copy differs from the store at the point"
    );
}
