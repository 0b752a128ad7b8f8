//! Log lines an attacker can trigger at will (rejected client certificates,
//! requests refused at the in-flight cap) are throttled: at most one line
//! per period, carrying how many were held back since the last one.

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// At most one admitted event per period.
#[derive(Debug)]
pub(crate) struct LogThrottle {
    period: Duration,
    state: Mutex<(Option<Instant>, u64)>,
}

impl LogThrottle {
    pub(crate) const fn new(period: Duration) -> Self {
        LogThrottle {
            period,
            state: Mutex::new((None, 0)),
        }
    }

    /// `Some(held_back)` when a line may be written now (`held_back` events
    /// were not logged since the last line); `None` to stay silent.
    pub(crate) fn admit(&self) -> Option<u64> {
        self.admit_at(Instant::now())
    }

    fn admit_at(&self, now: Instant) -> Option<u64> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let (last, held_back) = &mut *state;
        if last.is_some_and(|at| now.duration_since(at) < self.period) {
            *held_back += 1;
            return None;
        }
        *last = Some(now);
        Some(std::mem::take(held_back))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_period_counting_the_rest() {
        let throttle = LogThrottle::new(Duration::from_secs(10));
        let t0 = Instant::now();
        assert_eq!(throttle.admit_at(t0), Some(0));
        for i in 1..=5 {
            assert_eq!(throttle.admit_at(t0 + Duration::from_secs(i)), None);
        }
        assert_eq!(throttle.admit_at(t0 + Duration::from_secs(10)), Some(5));
        assert_eq!(throttle.admit_at(t0 + Duration::from_secs(11)), None);
        assert_eq!(throttle.admit_at(t0 + Duration::from_secs(30)), Some(1));
    }
}
