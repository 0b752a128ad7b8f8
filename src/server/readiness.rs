//! `/readyz`: named checks other parts register, plus the drain flag.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

/// A readiness check: true when that part is ready.
pub type Check = Arc<dyn Fn() -> bool + Send + Sync>;

#[derive(Default)]
struct Inner {
    draining: AtomicBool,
    checks: RwLock<Vec<(String, Check)>>,
}

/// Whether the process should receive traffic. Cheap to clone; all clones
/// share the same checks.
#[derive(Clone, Default)]
pub struct Readiness {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Readiness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Readiness")
            .field("draining", &self.is_draining())
            .field("checks", &self.check_names())
            .finish()
    }
}

/// The state of every check at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadinessReport {
    /// `(name, passed)` in registration order, `draining` first.
    pub checks: Vec<(String, bool)>,
}

impl ReadinessReport {
    pub fn ready(&self) -> bool {
        self.checks.iter().all(|(_, ok)| *ok)
    }

    /// Kubernetes-style body: one `[+]name ok` / `[-]name failed` line per check.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for (name, ok) in &self.checks {
            out.push_str(if *ok { "[+]" } else { "[-]" });
            out.push_str(name);
            out.push_str(if *ok { " ok\n" } else { " failed\n" });
        }
        out.push_str(if self.ready() {
            "readyz check passed\n"
        } else {
            "readyz check failed\n"
        });
        out
    }
}

impl Readiness {
    pub fn new() -> Self {
        Self::default()
    }

    /// Register a named check, e.g. `("state-synced", Arc::new(move || synced.load(..)))`.
    /// A second check with the same name replaces the first.
    pub fn add_check(&self, name: impl Into<String>, check: Check) {
        let name = name.into();
        let mut checks = self
            .inner
            .checks
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        checks.retain(|(n, _)| *n != name);
        checks.push((name, check));
    }

    /// From now on the process is not ready (shutdown has begun).
    pub fn set_draining(&self) {
        self.inner.draining.store(true, Ordering::SeqCst);
    }

    pub fn is_draining(&self) -> bool {
        self.inner.draining.load(Ordering::SeqCst)
    }

    fn check_names(&self) -> Vec<String> {
        self.inner
            .checks
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(n, _)| n.clone())
            .collect()
    }

    /// Evaluate every check now.
    pub fn report(&self) -> ReadinessReport {
        let mut checks = vec![("not-draining".to_string(), !self.is_draining())];
        let registered = self
            .inner
            .checks
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        checks.extend(registered.into_iter().map(|(name, check)| {
            let ok = check();
            (name, ok)
        }));
        ReadinessReport { checks }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    #[test]
    fn a_failing_check_or_draining_makes_it_unready() {
        let readiness = Readiness::new();
        assert!(readiness.report().ready());
        let synced = Arc::new(AtomicBool::new(false));
        let flag = synced.clone();
        readiness.add_check(
            "state-synced",
            Arc::new(move || flag.load(Ordering::SeqCst)),
        );
        let report = readiness.report();
        assert!(!report.ready());
        assert!(report.render().contains("[-]state-synced failed"));
        synced.store(true, Ordering::SeqCst);
        assert!(readiness.report().ready());
        readiness.clone().set_draining();
        let report = readiness.report();
        assert!(!report.ready());
        assert!(report.render().starts_with("[-]not-draining failed\n"));
    }
}
