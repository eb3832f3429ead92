//! Test failpoints, named by environment variables outside the `EMISOR_`
//! configuration (like the power-cut shim's `POWERCUT_*`) and read once:
//!
//! * `FAILPOINT_KILL_AT=redated`: the process kills itself (SIGKILL, as
//!   `kill -9`) once a re-dating is committed, before its send.
//! * `FAILPOINT_BUILD=fail`: a new document's build fails once its number
//!   is taken, and it is kept half-built (as a build that failed or
//!   panicked is), for the next start to build.
//! * `FAILPOINT_REQUEST_FORMAT=as_sent`: documents store their request in
//!   the earlier format, the caller's JSON alone ([`super::stored`]), so
//!   that a test makes a data dir of that format.

use std::sync::OnceLock;

struct Failpoints {
    kill_at: Option<String>,
    build_fails: bool,
    request_as_sent: bool,
}

fn failpoints() -> &'static Failpoints {
    static FAILPOINTS: OnceLock<Failpoints> = OnceLock::new();
    FAILPOINTS.get_or_init(|| Failpoints {
        kill_at: std::env::var("FAILPOINT_KILL_AT").ok(),
        build_fails: std::env::var_os("FAILPOINT_BUILD").is_some_and(|f| f == "fail"),
        request_as_sent: std::env::var_os("FAILPOINT_REQUEST_FORMAT")
            .is_some_and(|f| f == "as_sent"),
    })
}

/// Kills the process at `point` when `FAILPOINT_KILL_AT` names it.
pub fn stop_here(point: &str) {
    if failpoints().kill_at.as_deref() == Some(point) {
        tracing::warn!(point, "FAILPOINT_KILL_AT: killing the process");
        // SAFETY: kill(2) on our own pid has no memory effects.
        unsafe {
            libc::kill(libc::getpid(), libc::SIGKILL);
        }
    }
}

/// Whether new documents' builds fail.
pub fn build_fails() -> bool {
    failpoints().build_fails
}

/// Whether requests are stored in the earlier format.
pub fn request_as_sent() -> bool {
    failpoints().request_as_sent
}
