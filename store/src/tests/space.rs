//! sled reclaims the log it no longer needs (`vendor/sled`, PATCHES.md
//! item 10): segments left mostly garbage by rewritten pages are cleaned
//! (their few live pages moved) as fast as they appear, not one a round.
use std::path::Path;
use std::time::Duration;

/// A sled of small segments (many to clean), with `cache` bytes of cache
/// and its flusher (which cleans) every `flush_ms`.
fn open_small(dir: &Path, cache: u64, flush_ms: u64) -> sled::Db {
    sled::Config::new()
        .path(dir)
        .segment_size(64 * 1024)
        .cache_capacity(cache)
        .flush_every_ms(Some(flush_ms))
        .open()
        .unwrap()
}

/// 10,000 new keys from `cold` on (each `value(i)`), ten at a time among
/// rewrites of 50 hot keys, then a flush: cold pages amid garbage.
fn cold_among_hot(db: &sled::Db, cold: &mut u64, value: impl Fn(u64) -> Vec<u8>) {
    for _ in 0..1000 {
        for _ in 0..10 {
            db.insert(format!("cold-{:08}", *cold), value(*cold))
                .unwrap();
            *cold += 1;
        }
        for hot in 0..50u32 {
            db.insert(format!("hot-{hot:04}"), &[hot as u8; 150][..])
                .unwrap();
        }
    }
    db.flush().unwrap();
}

/// New keys never written again among keys rewritten all the time, as a
/// store's records among its indexes: every segment ends up holding a few
/// cold pages amid garbage, and is freed only once the cleaner has moved
/// them. After two such passes (the cleaner caught up between), the log
/// stays under 2.1× the live data here, which cleaning one segment a round
/// (sled's own rule) exceeds (docs/performance.md). (The log's length
/// between the passes is no measure: it depends on how far the cleaner got
/// while the first pass ran.)
#[test]
fn a_log_of_mostly_rewritten_pages_is_reused_instead_of_growing() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_small(dir.path(), 1024 * 1024, 500);
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
    // The flusher cleans every 500 ms, and its moves leave more segments
    // to drain: wait until it has had nothing left to move for two rounds
    // (a fixed time is too short on a loaded machine), or 10 s (a debug
    // build's cleaner, half a round's work at most each round, keeps
    // ~800 pages in hand here however long it runs).
    let waiting = std::time::Instant::now();
    let mut quiet_since = waiting;
    while quiet_since.elapsed() < Duration::from_millis(1200)
        && waiting.elapsed() < Duration::from_secs(10)
    {
        if db.cleaning_backlog() > 0 {
            quiet_since = std::time::Instant::now();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    pass();
    let (log, live) = (log_len(), cold * (200 + 13));
    assert!(
        log * 10 < live * 21,
        "the log is {log} bytes for {live} bytes of live data: freed segments not reused"
    );
    // Nothing was lost by the moves.
    for i in (0..cold).step_by(97) {
        assert!(db.get(format!("cold-{i:08}")).unwrap().is_some(), "{i}");
    }
}

/// The cleaner moves pages much faster than sled's IO threads write them
/// out, each IO buffer a fresh segment-sized allocation until written:
/// it waits for the log once four segments are unwritten
/// (`vendor/sled` item 15), so however much it moves it holds about five
/// (a round of it held ~500 in a server once). The peak also counts the
/// foreground writes in flight beside the cleaner's, which a busy machine
/// leaves unwritten longer: the bound is sixteen, far below the unbounded
/// case this guards against.
#[test]
fn the_cleaner_waits_for_its_writes() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_small(dir.path(), 64 * 1024, 100);
    let mut cold = 0u64;
    for _ in 0..3 {
        cold_among_hot(&db, &mut cold, |_| vec![3u8; 300]);
        std::thread::sleep(Duration::from_millis(300));
    }
    let peak = db.cleaner_unwritten_peak();
    assert!(peak > 0, "the cleaner moved nothing");
    assert!(
        peak <= 16 * 64 * 1024,
        "{peak} bytes of log unwritten behind the cleaner"
    );
    for i in (0..cold).step_by(101) {
        assert!(db.get(format!("cold-{i:08}")).unwrap().is_some(), "{i}");
    }
}

/// The cleaner moves a page that is out of the cache and in one piece as
/// its stored bytes (PATCHES.md item 11): cold leaves, consolidated and
/// evicted by a small cache, are moved that way when the hot pages around
/// them leave their segments mostly garbage, and every value reads back
/// exactly, from the new place and after a reopen.
#[test]
fn cold_pages_are_moved_as_their_bytes_and_read_back_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let open = || open_small(dir.path(), 64 * 1024, 200);
    let value = |i: u64| format!("cold value {i} {}", "x".repeat((i % 50) as usize));
    let db = open();
    let mut cold = 0u64;
    for _ in 0..3 {
        cold_among_hot(&db, &mut cold, |i| value(i).into_bytes());
        // Two cleaning rounds of the flusher.
        std::thread::sleep(Duration::from_millis(500));
    }
    assert!(db.raw_relocations() > 0, "no page was moved as its bytes");
    let check = |db: &sled::Db| {
        for i in 0..cold {
            let got = db.get(format!("cold-{i:08}")).unwrap();
            assert_eq!(got.as_deref(), Some(value(i).as_bytes()), "cold-{i:08}");
        }
    };
    check(&db);
    drop(db);
    check(&open());
}

/// The length of the newest snapshot in `dir` (one entry a page).
fn snapshot_len(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.starts_with("snap.") && !name.ends_with(".generating")
        })
        .map(|e| e.metadata().unwrap().len())
        .max()
        .unwrap()
}

/// A tree written in key order with larger leaves (`Tree::set_leaf_split`,
/// PATCHES.md item 13), as the store's `documents`: the same entries in
/// far fewer pages (sled keeps every page's table entry resident), and
/// updates among old entries, a reopen and a read in order find them as
/// written.
#[test]
fn larger_leaves_hold_the_same_entries_in_fewer_pages() {
    const N: u64 = 3_000;
    let value = |id: u64, round: u8| vec![(id as u8) ^ round; 300];
    let open = |dir: &Path, leaf: Option<usize>| {
        let db = sled::Config::new().path(dir).open().unwrap();
        let tree = db.open_tree("documents").unwrap();
        if let Some(entries) = leaf {
            tree.set_leaf_split(entries);
        }
        (db, tree)
    };
    let fill = |dir: &Path, leaf: Option<usize>| {
        let (db, tree) = open(dir, leaf);
        for id in 0..N {
            tree.insert(id.to_be_bytes(), value(id, 0)).unwrap();
        }
        assert!(db.checkpoint().unwrap().is_some());
        let snapshot = snapshot_len(dir);
        // A record's state changing later: its full leaf is not split.
        for id in (0..N).step_by(7) {
            tree.insert(id.to_be_bytes(), value(id, 1)).unwrap();
        }
        drop((tree, db));
        let (_db, tree) = open(dir, leaf);
        let read: Vec<(u64, Vec<u8>)> = tree
            .iter()
            .map(|kv| {
                let (k, v) = kv.unwrap();
                (
                    u64::from_be_bytes(k.as_ref().try_into().unwrap()),
                    v.to_vec(),
                )
            })
            .collect();
        assert_eq!(read.len() as u64, N);
        for (i, (id, v)) in read.iter().enumerate() {
            assert_eq!(*id, i as u64);
            assert_eq!(*v, value(*id, u8::from(id % 7 == 0)));
        }
        snapshot
    };
    let (small, large) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let with_16 = fill(small.path(), None);
    let with_64 = fill(large.path(), Some(64));
    // One entry a page: ~230 leaves of 13 against ~50 of 61 (4.1 KB
    // against 1.1 KB here, ~0.3 KB of it the tree's other pages).
    assert!(
        with_64 * 3 < with_16,
        "snapshot with 64-entry leaves {with_64} B, with 16 {with_16} B"
    );
}
