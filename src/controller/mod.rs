//! The `ControlPlane` reconciler: a thin shell around [`crate::ccm`].
//!
//! It follows Gardener's extension controller contract (finalizer, operation
//! annotation, lastOperation/lastError/observedGeneration) and deploys the CCM
//! objects by server-side apply with an owner reference to the ControlPlane.
//! The shoot context and the credentials Secret come from a [`StateSource`].

mod apply;
mod leader;
pub mod operation;
mod reconcile;
pub mod status;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use apply::{FIELD_MANAGER, contains};
pub use leader::{StopSignal, run_while_leading, run_with_leader_election};
pub use operation::trigger_hash;
pub use operation::{FINALIZER, OPERATION_ANNOTATION, OperationType};
pub use reconcile::{error_policy, reconcile, run};

use crate::ccm::RenderError;
use crate::profile::CcmSpec;
use crate::state::{StateError, StateSource};

/// Gardener's `DefaultReconciliationTimeout`.
pub const RECONCILIATION_TIMEOUT: Duration = Duration::from_secs(180);
/// Gardener's requeue after a successful reconcile that asked for one.
pub const REQUEUE_AFTER: Duration = Duration::from_secs(2);

/// Everything a reconcile needs.
pub struct Context {
    pub client: kube::Client,
    pub state: Arc<dyn StateSource>,
    /// Provider type this instance serves (`spec.type`).
    pub provider: String,
    /// The provider's CCM description.
    pub spec: Arc<CcmSpec>,
    /// Extension classes served (`spec.class`, unset = `shoot`).
    pub classes: Vec<String>,
    /// CCM image override (wins over the per-minor images).
    pub image_override: Option<String>,
    /// Upper bound of one reconcile.
    pub timeout: Duration,
    /// How long to wait in total for the deleted objects to disappear, and how often to look.
    pub delete_wait: Duration,
    pub delete_poll: Duration,
    /// Periodic re-check of a healthy ControlPlane (drift safety net).
    pub resync: Duration,
    /// ControlPlanes reconciled at the same time (`--controlplane-max-concurrent-reconciles`).
    pub concurrency: u16,
    /// Clock for `lastUpdateTime`.
    pub now: fn() -> String,
    backoff: Mutex<HashMap<String, Backoff>>,
}

/// Failure state of one ControlPlane: how often it failed in a row, the trigger
/// it failed with and when it may be tried again.
#[derive(Debug, Clone, Copy)]
struct Backoff {
    failures: u32,
    trigger: u64,
    retry_at: tokio::time::Instant,
}

/// 1 s after the first failure, doubling, at most 5 min.
pub fn backoff_delay(failures: u32) -> Duration {
    let secs = 1u64 << failures.saturating_sub(1).min(9);
    Duration::from_secs(secs.min(300))
}

impl Context {
    /// A context with Gardener's defaults: class `shoot`, 3 min timeout, 2 min
    /// budget for all deletion waits polled every 2 s, 10 min resync.
    pub fn new(
        client: kube::Client,
        state: Arc<dyn StateSource>,
        provider: impl Into<String>,
        spec: Arc<CcmSpec>,
    ) -> Self {
        Self {
            client,
            state,
            provider: provider.into(),
            spec,
            classes: vec!["shoot".to_string()],
            image_override: None,
            timeout: RECONCILIATION_TIMEOUT,
            delete_wait: Duration::from_secs(120),
            delete_poll: Duration::from_secs(2),
            resync: Duration::from_secs(600),
            concurrency: 5,
            now: status::now_rfc3339,
            backoff: Mutex::new(HashMap::new()),
        }
    }

    fn backoff_map(&self) -> std::sync::MutexGuard<'_, HashMap<String, Backoff>> {
        self.backoff.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Record a failure of `key` with `trigger`; returns the delay until the retry.
    fn record_failure(&self, key: &str, trigger: u64) -> Duration {
        let mut map = self.backoff_map();
        let failures = map.get(key).map_or(0, |b| b.failures).saturating_add(1);
        let delay = backoff_delay(failures);
        map.insert(
            key.to_string(),
            Backoff {
                failures,
                trigger,
                retry_at: tokio::time::Instant::now() + delay,
            },
        );
        delay
    }

    /// Time left before `key` may be retried, when it failed with the same
    /// `trigger` (events that cannot change the outcome, such as our own status
    /// patch, do not bypass the backoff; a new operation request does).
    fn backoff_pending(&self, key: &str, trigger: u64) -> Option<Duration> {
        let map = self.backoff_map();
        let b = map.get(key)?;
        let now = tokio::time::Instant::now();
        (b.trigger == trigger && now < b.retry_at).then(|| b.retry_at - now)
    }

    /// The current retry delay of `key` (after at least one failure).
    fn current_delay(&self, key: &str) -> Duration {
        backoff_delay(self.backoff_map().get(key).map_or(1, |b| b.failures))
    }

    fn reset_failures(&self, key: &str) {
        self.backoff_map().remove(key);
    }
}

/// Errors of a reconcile; each names the call or object that failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{action}: {source}")]
    Kube {
        action: String,
        #[source]
        source: kube::Error,
    },
    #[error(transparent)]
    State(#[from] StateError),
    #[error(transparent)]
    Render(#[from] RenderError),
    #[error(
        "{object} still exists after waiting {waited:?} for its deletion (finalizers: {finalizers:?})"
    )]
    DeletionBlocked {
        object: String,
        waited: Duration,
        finalizers: Vec<String>,
    },
    #[error("reconcile did not finish within {0:?}")]
    Timeout(Duration),
    #[error("ControlPlane has no {0}")]
    Malformed(&'static str),
    #[error("leader election: {0}")]
    Leader(String),
    #[error("internal error: {0}")]
    Internal(String),
}

impl Error {
    pub(crate) fn kube(action: String, source: kube::Error) -> Self {
        Self::Kube { action, source }
    }
}
