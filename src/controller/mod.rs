//! The controllers scion runs on the leader: the generic extension reconciler
//! with the `ControlPlane` actuator (the CCM, delivered through
//! ManagedResources), the health checks that write `ControlPlaneHealthy`, and
//! the heartbeat Lease.
//!
//! | folder/file | what |
//! |---|---|
//! | [`extension`] | Gardener's extension contract for any kind: the reconciler, the [`extension::Actuator`] trait, status, error codes |
//! | [`controlplane`] | the ControlPlane actuator: secrets manager, render, ManagedResources, delete/migrate/restore |
//! | [`health`] | the health-check loop: `ControlPlaneHealthy` from the CCM Deployment and the ManagedResources |
//! | [`heartbeat`] | the `gardener-extension-heartbeat` Lease |
//! | [`leader`] | leader election over a Lease (client-go's algorithm; the pure [`leader::plan`]) |

pub mod controlplane;
pub mod extension;
pub mod health;
pub mod heartbeat;
pub mod leader;

use std::time::Duration;

pub use controlplane::ControlPlaneActuator;
pub use extension::operation::{OPERATION_ANNOTATION, OperationType, trigger_hash};
pub use extension::{Actuator, Extension, Outcome, Reconciler, error_policy, reconcile};
pub use leader::{
    LeaderElection, LeaderStatus, LeaseTiming, StopSignal, run_while_leading,
    run_with_leader_election,
};

use crate::gardener::ControlPlane;
use crate::render::RenderError;
use crate::secrets::SecretsError;
use crate::state::StateError;

/// The finalizer scion puts on ControlPlanes.
pub const FINALIZER: &str = <ControlPlane as Extension>::FINALIZER;
/// Field manager of scion's writes.
pub const FIELD_MANAGER: &str = "scion";
/// Gardener's `DefaultReconciliationTimeout`.
pub const RECONCILIATION_TIMEOUT: Duration = Duration::from_secs(180);
/// Gardener's requeue after a successful reconcile that asked for one.
pub const REQUEUE_AFTER: Duration = Duration::from_secs(2);

/// The ControlPlane reconciler: the generic reconciler with the ControlPlane actuator.
pub type ControlPlaneReconciler = Reconciler<ControlPlane, ControlPlaneActuator>;

/// Errors of a reconcile; each names the call or object that failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{action}: {source}")]
    Kube {
        action: String,
        #[source]
        source: crate::gardener::ApiError,
    },
    #[error(transparent)]
    State(#[from] StateError),
    #[error(transparent)]
    Render(#[from] RenderError),
    #[error(transparent)]
    Secrets(#[from] SecretsError),
    /// Waiting for a ManagedResource to be deleted ran out of time; the text is
    /// Gardener's and may carry the GRM condition's message.
    #[error("{0}")]
    DeletionTimeout(String),
    #[error("reconcile did not finish within {}", crate::gardener::duration::text(*.0))]
    Timeout(Duration),
    /// The object itself answered 404 to one of the reconciler's patches: it
    /// is gone (its last finalizer was released), which ends the operation
    /// without a failure.
    #[error("{0}: the object is gone")]
    Gone(String),
    #[error("ControlPlane has no {0}")]
    Malformed(&'static str),
    #[error("leader election: {0}")]
    Leader(String),
    #[error("internal error: {0}")]
    Internal(String),
}

impl Error {
    pub(crate) fn kube(action: String, source: kube::Error) -> Self {
        Self::Kube {
            action,
            source: source.into(),
        }
    }

    /// Gardener's `lastError.codes` of this error: `ERR_CONFIGURATION_PROBLEM`
    /// for a ManagedResource deletion that failed on an invalid object, as
    /// Gardener's ControlPlane actuators report it; none otherwise.
    pub fn codes(&self) -> Vec<&'static str> {
        match self {
            Error::DeletionTimeout(text) if extension::codes::is_configuration_problem(text) => {
                vec![extension::codes::CONFIGURATION_PROBLEM]
            }
            _ => Vec::new(),
        }
    }
}
