fn main() {
    tune_malloc();
    std::process::exit(emisor::cli::run());
}

/// Keeps glibc from handing the engine's per-document buffers back to the
/// kernel. By default glibc serves large blocks (from 128 KiB, a threshold
/// that moves with what gets freed) with their own `mmap`, and trims the top
/// of a heap once more than the trim threshold is free there. With the
/// `zip` crate, every document allocated and freed its compressor's ~300 KB
/// state, and the profile showed it returned to the kernel and faulted in,
/// zeroed, again each time: 10–13 % of the cost of issuing one (~520 → ~450
/// µs with these values). `engine::zip_writer` now keeps one compressor per
/// thread, and `benches/engine.rs` shows no difference any more for a
/// 5-line invoice (382 µs either way); the setting stays so that large
/// documents (XML strings past 128 KiB) don't pay for `mmap`/`munmap` per
/// buffer either, whatever glibc's moving threshold has seen so far. The
/// price is up to 64 MiB of free memory per arena kept after a burst.
///
/// Runs first, before any thread (and so any other arena) exists. An
/// operator's `GLIBC_TUNABLES=glibc.malloc.mmap_threshold=…` or
/// `…trim_threshold=…` wins over the value here. `benches/engine.rs` does
/// the same so it measures what the server runs.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn tune_malloc() {
    let tunables = std::env::var("GLIBC_TUNABLES").unwrap_or_default();
    for (param, tunable, value) in [
        (libc::M_MMAP_THRESHOLD, "mmap_threshold", 4 << 20),
        (libc::M_TRIM_THRESHOLD, "trim_threshold", 64 << 20),
    ] {
        if !tunables.contains(tunable) {
            // SAFETY: `mallopt` only sets allocator parameters, and no other
            // thread exists yet. A refusal (returns 0) keeps the default.
            unsafe {
                libc::mallopt(param, value);
            }
        }
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn tune_malloc() {}
