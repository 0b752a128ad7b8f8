use std::process::ExitCode;

/// mimalloc instead of glibc malloc: answering a review builds and drops a few
/// hundred small JSON nodes, and with glibc's allocator that was a quarter of
/// the CPU time (see docs/performance.md). The bench
/// (benches/mutate.rs) uses the same allocator, so its figures are this binary's.
/// `.cargo/config.toml` builds it to commit memory on demand.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    scion::cli::main()
}
