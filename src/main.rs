// The binary only calls the library; the package's dependencies are the
// library's, and the lint is checked there (`cargo clippy --lib`).
#![allow(unused_crate_dependencies)]

/// mimalloc instead of glibc malloc: a document's path allocates and frees
/// many short-lived buffers across threads (request JSON, XML strings, the
/// response), and glibc's arenas spent a large share of the HTTP workers'
/// time in `malloc`/`free`/`malloc_consolidate`. mimalloc serves more
/// documents a second (docs/performance.md).
/// `benches/engine.rs` uses the same allocator, so it measures what the
/// server runs.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    emisor::memory::no_huge_pages();
    emisor::memory::purge_freed_memory_at_once();
    std::process::exit(emisor::cli::run());
}
