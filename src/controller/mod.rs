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
pub use leader::run_with_leader_election;
pub use operation::{FINALIZER, OPERATION_ANNOTATION, OperationType};
pub use reconcile::{error_policy, reconcile, run};

use crate::ccm::{CcmSpec, RenderError};
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
    /// How long to wait for each deleted object to disappear, and how often to look.
    pub delete_wait: Duration,
    pub delete_poll: Duration,
    /// Periodic re-check of a healthy ControlPlane (drift safety net).
    pub resync: Duration,
    /// Clock for `lastUpdateTime`.
    pub now: fn() -> String,
    failures: Mutex<HashMap<String, u32>>,
}

impl Context {
    /// A context with Gardener's defaults: class `shoot`, 3 min timeout, 2 min
    /// deletion waits polled every 2 s, 10 min resync.
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
            now: status::now_rfc3339,
            failures: Mutex::new(HashMap::new()),
        }
    }

    /// Consecutive failures of `key` after one more; used for the backoff.
    fn record_failure(&self, key: &str) -> u32 {
        let mut map = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        let n = map.entry(key.to_string()).or_insert(0);
        *n = n.saturating_add(1);
        *n
    }

    fn reset_failures(&self, key: &str) {
        self.failures
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(key);
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
}

impl Error {
    pub(crate) fn kube(action: String, source: kube::Error) -> Self {
        Self::Kube { action, source }
    }
}
