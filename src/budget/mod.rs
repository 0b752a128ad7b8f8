//! The budget of the request being answered on this thread: a deadline and
//! a memory allowance, set by the server around each admission job and read
//! by the pure code that could run long or build large structures from one
//! request (the review decoder, the unit, YAML and kubelet codecs, the OSC
//! phases). Outside a budget (`scion mutate`, `render`, tests, benches)
//! nothing is limited and the checks cost a thread-local read.
//!
//! Why a thread-local instead of a parameter: the limits concern the shell
//! (how long the API server waits, how much memory the process may use),
//! not what an answer is; threading them through every codec signature would
//! make each pure function depend on the server. The answer never depends
//! on a budget: a budget only stops the work, with [`Exhausted`], which the
//! server turns into a timeout (504) or a refusal (400) naming the limit.
//!
//! What it buys (issue 27; `docs/security.md` has the figures): a request
//! the server has already answered 504 stops within a few milliseconds
//! instead of keeping a mutation worker busy, and what one request may make
//! of its body (a `BTreeMap` per two-key JSON object is 80 times the object's
//! text) is counted against an allowance before it is built.
//!
//! Memory is counted, not measured: each structure charges an estimate of
//! what it allocates ([`charge`]) where it is built, so the count does not
//! depend on the allocator or on other threads. The estimates are the
//! figures of `serde_json::Value` on 64-bit targets ([`cost`]).

use std::cell::Cell;
use std::fmt;
use std::time::Instant;

/// What a request may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Work stops when this passes.
    pub deadline: Option<Instant>,
    /// Bytes the request's counted structures may take.
    pub memory: usize,
}

/// Why work stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exhausted {
    /// The deadline passed: the answer was given (or is being given) without
    /// this work.
    Time,
    /// The counted structures would take more than the allowance (bytes).
    Memory { allowance: usize },
}

impl fmt::Display for Exhausted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Exhausted::Time => f.write_str("the request timed out while it was being mutated"),
            Exhausted::Memory { allowance } => write!(
                f,
                "the object needs more memory than the request's allowance of {}",
                size(*allowance)
            ),
        }
    }
}

impl std::error::Error for Exhausted {}

/// A byte count for people: `512 KiB`, `32 MiB`.
pub fn size(bytes: usize) -> String {
    const MIB: usize = 1024 * 1024;
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else if bytes >= MIB {
        format!("{:.1} MiB", bytes as f64 / MIB as f64)
    } else {
        format!("{} KiB", bytes.div_ceil(1024))
    }
}

#[derive(Clone, Copy)]
struct State {
    deadline: Option<Instant>,
    allowance: usize,
    left: usize,
}

const UNLIMITED: State = State {
    deadline: None,
    allowance: usize::MAX,
    left: usize::MAX,
};

thread_local! {
    static CURRENT: Cell<State> = const { Cell::new(UNLIMITED) };
}

/// Run `work` under `budget` on this thread (the previous budget, usually
/// none, is restored afterwards, also when `work` panics).
pub fn run<R>(budget: Budget, work: impl FnOnce() -> R) -> R {
    struct Restore(State);
    impl Drop for Restore {
        fn drop(&mut self) {
            CURRENT.with(|c| c.set(self.0));
        }
    }
    let previous = CURRENT.with(|c| {
        c.replace(State {
            deadline: budget.deadline,
            allowance: budget.memory,
            left: budget.memory,
        })
    });
    let _restore = Restore(previous);
    work()
}

/// A future that runs under `budget` whenever it is polled: the budget is
/// installed on the polling thread for each poll and what was counted is
/// carried to the next one, so work split by `.await`s (and moved between
/// threads) counts against one allowance, as in [`run`]. Between polls the
/// thread has its previous budget back.
pub fn scope<F: std::future::Future>(budget: Budget, work: F) -> Scoped<F> {
    Scoped {
        state: State {
            deadline: budget.deadline,
            allowance: budget.memory,
            left: budget.memory,
        },
        work,
    }
}

pin_project_lite::pin_project! {
    /// See [`scope`].
    pub struct Scoped<F> {
        state: State,
        #[pin]
        work: F,
    }
}

impl<F: std::future::Future> std::future::Future for Scoped<F> {
    type Output = F::Output;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<F::Output> {
        struct Carry<'a> {
            previous: State,
            state: &'a mut State,
        }
        impl Drop for Carry<'_> {
            fn drop(&mut self) {
                *self.state = CURRENT.with(|c| c.replace(self.previous));
            }
        }
        let this = self.project();
        let previous = CURRENT.with(|c| c.replace(*this.state));
        let _carry = Carry {
            previous,
            state: this.state,
        };
        this.work.poll(cx)
    }
}

/// Whether the deadline has passed (a clock read when there is one).
pub fn check() -> Result<(), Exhausted> {
    match CURRENT.with(Cell::get).deadline {
        Some(deadline) if Instant::now() >= deadline => Err(Exhausted::Time),
        _ => Ok(()),
    }
}

/// Count `bytes` against the allowance.
pub fn charge(bytes: usize) -> Result<(), Exhausted> {
    CURRENT.with(|c| {
        let mut state = c.get();
        if state.left == usize::MAX {
            return Ok(());
        }
        match state.left.checked_sub(bytes) {
            Some(left) => {
                state.left = left;
                c.set(state);
                Ok(())
            }
            None => Err(Exhausted::Memory {
                allowance: state.allowance,
            }),
        }
    })
}

/// Give back what a structure charged once it is dropped.
pub fn refund(bytes: usize) {
    CURRENT.with(|c| {
        let mut state = c.get();
        if state.left != usize::MAX {
            state.left = state.left.saturating_add(bytes).min(state.allowance);
            c.set(state);
        }
    });
}

/// Bytes counted so far in this budget.
pub fn used() -> usize {
    let state = CURRENT.with(Cell::get);
    if state.left == usize::MAX {
        0
    } else {
        state.allowance - state.left
    }
}

/// Checks the deadline every [`Ticker::EVERY`] steps of a loop and charges
/// what the loop builds in batches, so a loop over millions of small items
/// pays a clock read and a thread-local update per batch, not per item.
#[derive(Debug)]
pub struct Ticker {
    steps: u32,
    pending: usize,
}

impl Default for Ticker {
    fn default() -> Self {
        Ticker::new()
    }
}

impl Ticker {
    /// Steps between two deadline checks.
    pub const EVERY: u32 = 4096;
    /// Bytes gathered before they are charged.
    const BATCH: usize = 64 * 1024;

    pub const fn new() -> Self {
        Ticker {
            steps: 0,
            pending: 0,
        }
    }

    /// One step of the loop.
    #[inline]
    pub fn tick(&mut self) -> Result<(), Exhausted> {
        self.steps += 1;
        if self.steps >= Self::EVERY {
            self.steps = 0;
            self.flush()?;
            check()?;
        }
        Ok(())
    }

    /// One step that builds about `bytes`.
    #[inline]
    pub fn step(&mut self, bytes: usize) -> Result<(), Exhausted> {
        self.pending += bytes;
        if self.pending >= Self::BATCH {
            self.flush()?;
        }
        self.tick()
    }

    /// Charge what was gathered.
    pub fn flush(&mut self) -> Result<(), Exhausted> {
        let pending = std::mem::take(&mut self.pending);
        charge(pending)
    }
}

/// Estimated heap bytes of the `serde_json::Value` parts, on 64-bit targets.
pub mod cost {
    /// A map's first entry: one B-tree leaf (11 keys of 24 bytes, 11 values
    /// of 32, links), 640 bytes with the allocator's rounding.
    pub const MAP: usize = 640;
    /// Each further entry of a map: its share of the leaves (80 % filled).
    pub const ENTRY: usize = 72;
    /// An array element, with the vector's doubling.
    pub const ELEMENT: usize = 48;
    /// A string's bytes beyond its length (allocator rounding).
    pub const STRING: usize = 8;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn nothing_is_limited_outside_a_budget() {
        assert_eq!(charge(usize::MAX / 2), Ok(()));
        assert_eq!(check(), Ok(()));
        assert_eq!(used(), 0);
    }

    #[test]
    fn memory_is_counted_against_the_allowance_and_restored_after() {
        let budget = Budget {
            deadline: None,
            memory: 1000,
        };
        run(budget, || {
            assert_eq!(charge(600), Ok(()));
            assert_eq!(used(), 600);
            assert_eq!(charge(500), Err(Exhausted::Memory { allowance: 1000 }));
            refund(100);
            assert_eq!(charge(500), Ok(()));
            let mut ticker = Ticker::new();
            let mut refused = None;
            for i in 0..100_000 {
                if let Err(e) = ticker.step(1) {
                    refused = Some((i, e));
                    break;
                }
            }
            let (at, e) = refused.expect("the ticker charges in batches");
            assert_eq!(e, Exhausted::Memory { allowance: 1000 });
            assert!(at < 2 * Ticker::BATCH, "{at}");
        });
        assert_eq!(charge(1 << 40), Ok(()), "the budget ended with the run");
    }

    #[test]
    fn a_passed_deadline_stops_a_loop_within_one_batch_of_steps() {
        let budget = Budget {
            deadline: Some(Instant::now() - Duration::from_millis(1)),
            memory: usize::MAX - 1,
        };
        run(budget, || {
            assert_eq!(check(), Err(Exhausted::Time));
            let mut ticker = Ticker::new();
            let stopped = (0..100_000).position(|_| ticker.tick().is_err());
            assert_eq!(stopped, Some(Ticker::EVERY as usize - 1));
        });
        assert_eq!(check(), Ok(()));
    }

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(size(32 * 1024 * 1024), "32 MiB");
        assert_eq!(size(1536 * 1024), "1.5 MiB");
        assert_eq!(size(1000), "1 KiB");
    }
}
