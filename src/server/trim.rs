//! Giving a large request's memory back to the operating system.
//!
//! The allocator is the binary's choice (`src/main.rs`: mimalloc), so the
//! library cannot call it; the binary installs a hook with [`install`] and the
//! webhook calls it on the worker thread after a job whose body was at least
//! [`TRIM_AFTER_BODY_BYTES`].
//!
//! What it buys: mimalloc keeps the pages a thread freed until that thread
//! allocates again, and the mutation jobs run on whichever blocking-pool
//! thread is idle, so every heavy request left its ~8–10× body size resident
//! on another idle thread. `scripts/attack.sh flags` (four arrangements of
//! 50,000 flags, three requests each, 0.85–1.8 MB bodies): peak RSS 75.7 MiB
//! without the hook, 41.9 MiB with it. Requests under the threshold never
//! call it, so the answer to an ordinary 10 KB review costs exactly what it
//! did (`scripts/load.sh throughput` unchanged); returning the memory of
//! every request instead (mimalloc's `purge_delay=0`) cost 5–8 % of that
//! throughput.

use std::sync::OnceLock;

/// Jobs with a body at least this large trim after they finish: eight times
/// an ordinary control-plane review, far below what makes trimming cost
/// noticeable next to the job itself (a 256 KB review takes milliseconds).
pub const TRIM_AFTER_BODY_BYTES: usize = 256 * 1024;

static HOOK: OnceLock<fn()> = OnceLock::new();

/// Installs the function that returns the calling thread's free memory to
/// the operating system. The first installation wins; later ones are
/// ignored (the allocator cannot change in a running process).
pub fn install(hook: fn()) {
    let _ = HOOK.set(hook);
}

/// Called by the worker thread after a job over `body_bytes`.
pub(crate) fn after_job(body_bytes: usize) {
    if body_bytes >= TRIM_AFTER_BODY_BYTES
        && let Some(hook) = HOOK.get()
    {
        hook();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    static CALLS: AtomicUsize = AtomicUsize::new(0);

    fn count() {
        CALLS.fetch_add(1, Ordering::SeqCst);
    }

    #[test]
    fn only_large_jobs_trim() {
        install(count);
        let before = CALLS.load(Ordering::SeqCst);
        after_job(10 * 1024);
        after_job(TRIM_AFTER_BODY_BYTES - 1);
        assert_eq!(CALLS.load(Ordering::SeqCst), before);
        after_job(TRIM_AFTER_BODY_BYTES);
        after_job(7 * 1024 * 1024);
        assert_eq!(CALLS.load(Ordering::SeqCst), before + 2);
    }
}
