//! `/readyz`: named checks other parts register, plus the drain flag; and
//! `/healthz`: alive unless a part reported that it cannot go on (the leader
//! work: [`Readiness::fail_liveness`]), so the kubelet restarts the pod, as
//! controller-runtime's manager exits in that case.
//!
//! A check may carry a note that says what a ready part serves from when it
//! is degraded without being unready (the Cluster watch failing while the
//! webhook answers from the Clusters it holds): `[+]state-synced ok: …`.
//! Only the status code decides readiness; the note is for the operator.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

/// A readiness check: true when that part is ready.
pub type Check = Arc<dyn Fn() -> bool + Send + Sync>;

/// A note a check adds to its line, `None` when there is nothing to say.
pub type Note = Arc<dyn Fn() -> Option<String> + Send + Sync>;

#[derive(Default)]
struct Inner {
    draining: AtomicBool,
    checks: RwLock<Vec<(String, Check)>>,
    notes: RwLock<Vec<(String, Note)>>,
    /// `(name, reason)` of the parts that cannot go on.
    liveness_failures: RwLock<Vec<(String, String)>>,
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
    /// `(name, note)` of the checks that have something to say.
    pub notes: Vec<(String, String)>,
}

impl ReadinessReport {
    pub fn ready(&self) -> bool {
        self.checks.iter().all(|(_, ok)| *ok)
    }

    /// Kubernetes-style body: one `[+]name ok` / `[-]name failed` line per
    /// check, `: note` after it when the check has a note.
    pub fn render(&self) -> String {
        let checks = self.checks.iter().map(|(name, ok)| {
            let note = self
                .notes
                .iter()
                .find(|(n, _)| n == name)
                .map_or("", |(_, note)| note.as_str());
            let result = if *ok { Ok(note) } else { Err(note) };
            (name.as_str(), result)
        });
        render_checks("readyz", checks)
    }
}

/// The liveness of the process at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LivenessReport {
    /// `(name, reason)` of each part that cannot go on.
    pub failures: Vec<(String, String)>,
}

impl LivenessReport {
    pub fn alive(&self) -> bool {
        self.failures.is_empty()
    }

    /// `[+]ping ok` and one `[-]name failed: reason` line per failure.
    pub fn render(&self) -> String {
        let ping = std::iter::once(("ping", Ok("")));
        let failed = self
            .failures
            .iter()
            .map(|(n, r)| (n.as_str(), Err(r.as_str())));
        render_checks("healthz", ping.chain(failed))
    }
}

/// The body of a probe endpoint: a line per check, then the verdict.
fn render_checks<'a>(
    endpoint: &str,
    checks: impl Iterator<Item = (&'a str, Result<&'a str, &'a str>)>,
) -> String {
    let mut out = String::new();
    let mut passed = true;
    for (name, result) in checks {
        match result {
            Ok(note) => {
                out.push_str("[+]");
                out.push_str(name);
                out.push_str(" ok");
                if !note.is_empty() {
                    out.push_str(": ");
                    out.push_str(note);
                }
                out.push('\n');
            }
            Err(reason) => {
                passed = false;
                out.push_str("[-]");
                out.push_str(name);
                out.push_str(" failed");
                if !reason.is_empty() {
                    out.push_str(": ");
                    out.push_str(reason);
                }
                out.push('\n');
            }
        }
    }
    out.push_str(endpoint);
    out.push_str(if passed {
        " check passed\n"
    } else {
        " check failed\n"
    });
    out
}

/// Put `(name, value)` at the end of `list`, replacing an entry of that name.
fn replace_named<T>(list: &RwLock<Vec<(String, T)>>, name: String, value: T) {
    let mut list = list.write().unwrap_or_else(PoisonError::into_inner);
    list.retain(|(n, _)| *n != name);
    list.push((name, value));
}

impl Readiness {
    pub fn new() -> Self {
        Self::default()
    }

    /// Register a named check, e.g. `("state-synced", Arc::new(move || synced.load(..)))`.
    /// A second check with the same name replaces the first.
    pub fn add_check(&self, name: impl Into<String>, check: Check) {
        replace_named(&self.inner.checks, name.into(), check);
    }

    /// Add a note to the line of check `name` (see the module doc). A
    /// second note for the same name replaces the first.
    pub fn add_note(&self, name: impl Into<String>, note: Note) {
        replace_named(&self.inner.notes, name.into(), note);
    }

    /// From now on `/healthz` fails, naming `name` and `reason`: that part
    /// of the process cannot go on and the pod must be restarted.
    pub fn fail_liveness(&self, name: impl Into<String>, reason: impl Into<String>) {
        let (name, reason) = (name.into(), reason.into());
        tracing::error!(check = %name, %reason, "liveness now fails: the pod is to be restarted");
        replace_named(&self.inner.liveness_failures, name, reason);
    }

    /// Whether the process can go on.
    pub fn liveness(&self) -> LivenessReport {
        LivenessReport {
            failures: self
                .inner
                .liveness_failures
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .clone(),
        }
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
        let notes = self
            .inner
            .notes
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .into_iter()
            .filter_map(|(name, note)| Some((name, note()?)))
            .collect();
        ReadinessReport { checks, notes }
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

    #[test]
    fn a_note_says_what_a_ready_check_serves_from() {
        let readiness = Readiness::new();
        readiness.add_check("state-synced", Arc::new(|| true));
        let degraded = Arc::new(AtomicBool::new(false));
        let flag = degraded.clone();
        readiness.add_note(
            "state-synced",
            Arc::new(move || {
                flag.load(Ordering::SeqCst)
                    .then(|| "the watch fails; answering from the last list".to_owned())
            }),
        );
        assert_eq!(
            readiness.report().render(),
            "[+]not-draining ok\n[+]state-synced ok\nreadyz check passed\n"
        );
        degraded.store(true, Ordering::SeqCst);
        let report = readiness.report();
        assert!(report.ready());
        assert_eq!(
            report.render(),
            "[+]not-draining ok\n[+]state-synced ok: the watch fails; answering from the last list\nreadyz check passed\n"
        );
    }

    #[test]
    fn liveness_fails_once_a_part_reports_it_cannot_go_on() {
        let readiness = Readiness::new();
        let alive = readiness.liveness();
        assert!(alive.alive());
        assert_eq!(alive.render(), "[+]ping ok\nhealthz check passed\n");
        readiness.fail_liveness("leader-election", "the leader work ended");
        let dead = readiness.clone().liveness();
        assert!(!dead.alive());
        assert_eq!(
            dead.render(),
            "[+]ping ok\n[-]leader-election failed: the leader work ended\nhealthz check failed\n"
        );
        // Readiness is another matter: the webhook still answers meanwhile.
        assert!(readiness.report().ready());
    }
}
