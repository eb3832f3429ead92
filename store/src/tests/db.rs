//! Tests that reopen a sled directory they just closed.

use std::path::Path;
use std::time::{Duration, Instant};

/// Opens sled at `dir`, waiting while the instance just dropped still holds
/// its file lock: sled's background flusher keeps the database alive until
/// its next tick (up to half a second), and a test under load can meet it.
pub(crate) fn open_when_released(config: sled::Config) -> sled::Db {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match config.open() {
            Ok(db) => return db,
            Err(sled::Error::Io(e))
                if e.to_string().contains("lock") && Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => panic!("opening sled: {e}"),
        }
    }
}

/// [`open_when_released`] with sled's defaults.
pub(crate) fn open(dir: &Path) -> sled::Db {
    open_when_released(sled::Config::new().path(dir))
}
