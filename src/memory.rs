//! Resident memory: no transparent huge pages for this process, and freed
//! memory returned to the system at once.
//!
//! mimalloc commits its arena eagerly and asks for huge pages on it, and
//! every thread allocates from segments of its own: each of the server's
//! threads then touches at least one 2 MiB page, tens of MiB resident before
//! the first request and more under load than with 4 KiB pages
//! (docs/performance.md). The flag is checked at each page fault, so setting
//! it first thing in `main` covers every later fault, arena included.

/// Turns transparent huge pages off for this process (and its children).
/// A kernel without the flag leaves things as they were.
pub fn no_huge_pages() {
    // SAFETY: PR_SET_THP_DISABLE takes plain integer arguments and touches
    // no memory of ours.
    let refused = unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) } != 0;
    if refused {
        eprintln!("note: transparent huge pages could not be turned off for this process");
    }
}

/// mimalloc 3's option number for `purge_delay` (`mi_option_purge_delay` in
/// its `mimalloc.h`; the Rust bindings do not name it).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Freed pages go back to the system at once. mimalloc 3 keeps them for
/// `purge_delay` (1 s) in case they are wanted again: under load, each
/// document allocating and freeing buffers across the server's threads,
/// that holds tens of MiB for no CPU difference measured
/// (docs/performance.md).
pub fn purge_freed_memory_at_once() {
    // SAFETY: sets one integer option; mimalloc reads it on every purge.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The option number is mimalloc's purge delay: its documented
    /// default, 1000 ms, until set (a mimalloc upgrade that renumbers its
    /// options fails here).
    #[test]
    fn purge_delay_option_is_the_purge_delay() {
        // SAFETY: reads one integer option.
        let delay = unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) };
        assert_eq!(delay, 1000);
    }
}
