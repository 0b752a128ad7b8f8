//! The `scion` binary: the allocator and the command line. The library
//! forbids `unsafe`; the one call into the allocator's C API is here.

#![deny(unsafe_code)]

use std::process::ExitCode;

/// mimalloc instead of glibc malloc: answering a review builds and drops a few
/// hundred small JSON nodes, and with glibc's allocator that was a quarter of
/// the CPU time (see docs/performance.md). The bench
/// (benches/mutate.rs) uses the same allocator, so its figures are this binary's.
/// `.cargo/config.toml` builds it to commit memory on demand.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Returns the calling thread's free pages to the operating system at once
/// (`mi_collect(true)`); the webhook calls it after a large request
/// (`scion::server::trim`, which says what it buys).
fn trim_thread_memory() {
    // SAFETY: mi_collect takes no pointers and is safe to call from any
    // thread at any time; it only walks the calling thread's own heap.
    #[allow(unsafe_code)]
    unsafe {
        libmimalloc_sys::mi_collect(true)
    }
}

fn main() -> ExitCode {
    scion::server::trim::install(trim_thread_memory);
    scion::cli::main()
}
