//! sled's flush writes the IO buffer it waits for on its own thread
//! (`vendor/sled`, PATCHES.md item 12) instead of handing it to an IO
//! thread and sleeping until that thread is done.
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

const THREADS: u64 = 4;
const KEYS: u64 = 300;
/// Set in the child process this test starts: the data dir it writes to.
const CHILD_DIR: &str = "SLED_FLUSH_TEST_CHILD_DIR";

fn open(dir: &Path) -> sled::Db {
    // No periodic flusher of sled's: every write is a flush's own.
    sled::Config::new()
        .path(dir)
        .segment_size(64 * 1024)
        .flush_every_ms(None)
        .open()
        .unwrap()
}

fn value(t: u64, i: u64) -> Vec<u8> {
    vec![t as u8; 100 + (i % 7) as usize * 40]
}

/// Threads inserting and flushing at once, as the group commit and sled's
/// own flusher do; then the process aborts, with no close to flush again.
fn write_flush_and_abort(dir: &Path) -> ! {
    let db = open(dir);
    let (done, finished) = mpsc::channel();
    for t in 0..THREADS {
        let (db, done) = (db.clone(), done.clone());
        std::thread::spawn(move || {
            for i in 0..KEYS {
                db.insert(format!("{t}-{i:05}"), value(t, i)).unwrap();
                db.flush().unwrap();
            }
            done.send(t).unwrap();
        });
    }
    for _ in 0..THREADS {
        // A flush that waited for a write nobody makes would hang here.
        finished
            .recv_timeout(Duration::from_secs(60))
            .expect("a flushing thread did not finish");
    }
    let written = db.written_by_flush();
    assert!(
        written >= KEYS,
        "{written} buffers written by flushes for {} flushes",
        THREADS * KEYS
    );
    std::process::abort();
}

/// Every value a flush returned for is there after the process died
/// without closing, and the flushes wrote the buffers themselves.
#[test]
fn flushed_writes_survive_an_abort_and_were_written_by_the_flushes() {
    if let Some(dir) = std::env::var_os(CHILD_DIR) {
        write_flush_and_abort(Path::new(&dir));
    }
    let dir = tempfile::tempdir().unwrap();
    let child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "tests::flush::flushed_writes_survive_an_abort_and_were_written_by_the_flushes",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_DIR, dir.path())
        .output()
        .unwrap();
    // Aborted (SIGABRT), not a failed assertion (exit code 101).
    assert_eq!(
        child.status.code(),
        None,
        "the writing process failed: {}\n{}",
        child.status,
        String::from_utf8_lossy(&child.stderr)
    );
    let db = open(dir.path());
    for t in 0..THREADS {
        for i in 0..KEYS {
            let got = db.get(format!("{t}-{i:05}")).unwrap();
            assert_eq!(got.as_deref(), Some(&value(t, i)[..]), "{t}-{i:05}");
        }
    }
}
