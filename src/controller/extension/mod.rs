//! Gardener's extension contract, once, for every extension kind: the
//! generic reconciler (`extensions/pkg/controller/<kind>/reconciler.go` plus
//! the operation-annotation wrapper and predicates) that owns the operation
//! annotation, `lastOperation`/`lastError` with codes, `observedGeneration`,
//! the finalizer, migrate/restore, backoff and the reconcile bound, and calls
//! an [`Actuator`] for the work of one kind.
//!
//! A new kind (Worker, Infrastructure, ...) implements [`Extension`] for its
//! resource and [`Actuator`] for its work; nothing here is copied.
//!
//! | file | what |
//! |---|---|
//! | [`mod@self`] | the [`Extension`] and [`Actuator`] traits, [`Outcome`] |
//! | `operation.rs` | pure decisions: responsibility, operation type, whether anything was requested |
//! | `status.rs` | the status bodies (Processing, Succeeded, Error with codes) |
//! | `codes.rs` | Gardener's error codes of an error text |
//! | `reconciler.rs` | the state machine, backoff, finalizer and annotation patches, the kube-runtime `Controller` |
//! | `metrics.rs` | controller-runtime's controller metric families (`controller_runtime_reconcile_*`, `workqueue_*`) |

pub mod codes;
pub mod metrics;
pub mod operation;
mod reconciler;
pub mod status;

use std::future::Future;
use std::time::Duration;

use kube::core::NamespaceResourceScope;
use serde::Serialize;
use serde::de::DeserializeOwned;

pub use reconciler::{Reconciler, backoff_delay, error_policy, reconcile, run};

use super::Error;
use crate::gardener::{ControlPlane, LastOperation, ShootContext};

/// An extension resource of `extensions.gardener.cloud` with Gardener's
/// `DefaultStatus`.
pub trait Extension:
    kube::Resource<DynamicType = (), Scope = NamespaceResourceScope>
    + Clone
    + std::fmt::Debug
    + DeserializeOwned
    + Serialize
    + Send
    + Sync
    + 'static
{
    /// The kind as the status texts write it (`ControlPlane`).
    const KIND: &'static str;
    /// The finalizer the reconciler puts on objects it handles.
    const FINALIZER: &'static str;
    /// The controller name Gardener registers for the kind (the `controller`
    /// label of controller-runtime's metrics, `controlplane`).
    const CONTROLLER: &'static str;
    /// `spec.type`.
    fn extension_type(&self) -> &str;
    /// `spec.class`; unset counts as `shoot`.
    fn extension_class(&self) -> &str;
    /// `status.lastOperation`.
    fn last_operation(&self) -> Option<&LastOperation>;
    /// `status.observedGeneration`.
    fn observed_generation(&self) -> Option<i64>;
    /// `status.conditions`, raw.
    fn conditions(&self) -> &[serde_json::Value];
}

impl Extension for ControlPlane {
    const KIND: &'static str = "ControlPlane";
    const FINALIZER: &'static str = "extensions.gardener.cloud/controlplane";
    /// `extensions/pkg/controller/controlplane`'s `ControllerName`.
    const CONTROLLER: &'static str = "controlplane";
    fn extension_type(&self) -> &str {
        &self.spec.type_
    }
    fn extension_class(&self) -> &str {
        self.class()
    }
    fn last_operation(&self) -> Option<&LastOperation> {
        self.status.as_ref()?.last_operation.as_ref()
    }
    fn observed_generation(&self) -> Option<i64> {
        self.status.as_ref()?.observed_generation
    }
    fn conditions(&self) -> &[serde_json::Value] {
        self.status
            .as_ref()
            .and_then(|s| s.conditions.as_deref())
            .unwrap_or_default()
    }
}

/// What an actuator asks for after succeeding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Done until something is requested again.
    Done,
    /// Succeeded for now, but look again after this long and act even though
    /// nothing was requested (Gardener's `requeue`: hibernation waiting for
    /// kube-apiserver to go down).
    RequeueAfter(Duration),
}

/// The work of one extension kind. Each method is called with the object and
/// the shoot context after the reconciler has written `Processing`; its result
/// becomes `Succeeded` or `Error`. Every method must be idempotent: a failed
/// or cut-off call is retried from the start.
pub trait Actuator<K: Extension>: Send + Sync + 'static {
    /// Create or update everything the object asks for (also on Create).
    fn reconcile(
        &self,
        obj: &K,
        shoot: &ShootContext,
    ) -> impl Future<Output = Result<Outcome, Error>> + Send;
    /// Remove everything and wait until it is gone; `force` skips the waits
    /// (shoot annotation `confirmation.gardener.cloud/force-deletion`).
    fn delete(
        &self,
        obj: &K,
        shoot: &ShootContext,
        force: bool,
    ) -> impl Future<Output = Result<(), Error>> + Send;
    /// Give the object up to another seed: keep what lives in the shoot,
    /// remove what lives here.
    fn migrate(
        &self,
        obj: &K,
        shoot: &ShootContext,
    ) -> impl Future<Output = Result<(), Error>> + Send;
    /// Take the object over from another seed (after gardenlet restored its
    /// persisted state).
    fn restore(
        &self,
        obj: &K,
        shoot: &ShootContext,
    ) -> impl Future<Output = Result<Outcome, Error>> + Send;
    /// What the succeeded status should say besides Gardener's text after a
    /// reconcile or restore of `obj` (the objects a ManagedResource take-over
    /// kept); none by default.
    fn take_note(&self, _obj: &K) -> Option<String> {
        None
    }
}
