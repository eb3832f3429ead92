//! sled reclaims the log it no longer needs (`vendor/sled`, PATCHES.md
//! item 10): segments left mostly garbage by rewritten pages are cleaned
//! (their few live pages moved) as fast as they appear, not one a round.

#![allow(clippy::unwrap_used, clippy::expect_used)]
use std::time::Duration;

/// New keys never written again among keys rewritten all the time, as a
/// store's records among its indexes: every segment ends up holding a few
/// cold pages amid garbage, and is freed only once the cleaner has moved
/// them. After a pause of two cleaning rounds, writing as much again grows
/// the log by little more than the new live data (~1.2× here); cleaning
/// one segment a round (sled's own rule) it grew by ~2.1×, the garbage of
/// the first pass still there.
#[test]
fn a_log_of_mostly_rewritten_pages_is_reused_instead_of_growing() {
    let dir = tempfile::tempdir().unwrap();
    let db = sled::Config::new()
        .path(dir.path())
        .segment_size(64 * 1024)
        .cache_capacity(1024 * 1024)
        .flush_every_ms(Some(500))
        .open()
        .unwrap();
    let log_len = || std::fs::metadata(dir.path().join("db")).unwrap().len();
    let value = [7u8; 200];
    let mut cold = 0u64;
    let mut pass = || {
        for _ in 0..1000 {
            for _ in 0..10 {
                db.insert(format!("cold-{cold:08}"), &value[..]).unwrap();
                cold += 1;
            }
            for hot in 0..100u32 {
                db.insert(format!("hot-{hot:04}"), &value[..]).unwrap();
            }
        }
        db.flush().unwrap();
    };
    pass();
    // The flusher cleans every 500 ms.
    std::thread::sleep(Duration::from_millis(1200));
    let before = log_len();
    pass();
    let grown = log_len() - before;
    let new_live = 10_000 * (200 + 13);
    assert!(
        grown * 10 < new_live * 16,
        "the log grew {grown} bytes for {new_live} bytes of new data: freed segments not reused"
    );
    // Nothing was lost by the moves.
    for i in (0..cold).step_by(97) {
        assert!(db.get(format!("cold-{i:08}")).unwrap().is_some(), "{i}");
    }
}
