//! The health checks that write `ControlPlane.status.conditions`
//! (`extensions/pkg/controller/healthcheck`): every sync period (30 s) each
//! ControlPlane of this provider gets the condition `ControlPlaneHealthy`
//! from its CCM Deployment and its ManagedResources; gardenlet turns it into
//! the Shoot's `ControlPlaneHealthy`.
//!
//! | situation | status | reason | message |
//! |---|---|---|---|
//! | being deleted, or migrating (annotation `migrate`, last operation `Migrate`) | – | – | not checked, nothing written |
//! | hibernation enabled | `True` | `HealthCheckSuccessful` | `Shoot is hibernated` |
//! | every check passes | `True` | `HealthCheckSuccessful` | `All health checks successful` |
//! | a check fails | `False` | `HealthCheckUnsuccessful` | the detail with a trailing `.`; several: `1) <d>. 2) <d>.` |
//!
//! The checks, in this order (Gardener runs them in parallel and joins the
//! details in completion order; scion's order is fixed):
//! - Deployment `cloud-controller-manager` (`general.NewSeedDeploymentHealthChecker`):
//!   `deployment "<name>" in namespace "<ns>" not found`, or `... is unhealthy:
//!   <reason>` with the first of: observed generation outdated, `Available`
//!   missing or not `True`, `Progressing` not `True`, `ReplicaFailure` not `False`;
//! - each ManagedResource scion writes (`general.CheckManagedResource`):
//!   `Managed Resource "<name>" in namespace "<ns>" not found`, or
//!   `managed resource "<name>" in namespace "<ns>" is unhealthy: <reason>`.
//!
//! The checks read reflector caches (the controller's ControlPlanes, the CCM
//! Deployments, the three ManagedResources by name), so a pass makes no read
//! at all; it writes only when status, reason, message or codes change (as
//! Gardener's condition builder, which keeps `lastUpdateTime` otherwise), so a
//! steady seed sees no writes. `lastTransitionTime` moves with the status.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};

use crate::gardener::api_error::WatchErrors;
use serde_json::{Value, json};

use super::extension::Extension;
use super::extension::operation;
use crate::gardener::managedresource::Condition;
use crate::gardener::{ControlPlane, ManagedResource, ShootContext};
use crate::state::StateSource;

/// The condition type.
pub const CONDITION_TYPE: &str = "ControlPlaneHealthy";
pub const REASON_SUCCESSFUL: &str = "HealthCheckSuccessful";
pub const REASON_UNSUCCESSFUL: &str = "HealthCheckUnsuccessful";
/// Gardener's default sync period.
pub const DEFAULT_SYNC_PERIOD: Duration = Duration::from_secs(30);
/// The labels of the CCM Deployments the Deployment cache holds.
pub const CCM_SELECTOR: &str = "app=kubernetes,role=cloud-controller-manager";

/// What the health checks look at and how often.
pub struct HealthChecks {
    pub client: kube::Client,
    pub state: Arc<dyn StateSource>,
    pub provider: String,
    pub classes: Vec<String>,
    pub period: Duration,
    /// Deployments checked, in order.
    pub deployments: Vec<String>,
    /// ManagedResources checked, in order.
    pub managed_resources: Vec<String>,
    pub now: fn() -> String,
    /// Conditions written at once (`--healthcheck-max-concurrent-reconciles`, 5).
    pub concurrency: usize,
}

/// The caches the checks read.
#[derive(Clone)]
pub struct Caches {
    pub controlplanes: Store<ControlPlane>,
    pub deployments: Store<Deployment>,
    /// One cache per ManagedResource name.
    pub managed_resources: Vec<(String, Store<ManagedResource>)>,
}

impl Caches {
    /// Start the Deployment and ManagedResource reflectors (label- and
    /// name-selected, stripped of what the checks do not read); the returned
    /// future drives them until `shutdown`.
    pub fn start(
        client: &kube::Client,
        controlplanes: Store<ControlPlane>,
        managed_resources: &[String],
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> (Caches, impl Future<Output = ()> + Send + 'static) {
        let (deployments, writer) = reflector::store();
        let deployment_stream = watcher(
            Api::<Deployment>::all(client.clone()),
            watcher::Config::default()
                .labels(CCM_SELECTOR)
                .any_semantic(),
        )
        .default_backoff()
        .modify(|d: &mut Deployment| {
            d.metadata.managed_fields = None;
            d.metadata.annotations = None;
            if let Some(spec) = d.spec.as_mut() {
                spec.template = Default::default();
            }
        })
        .reflect(writer)
        .for_each({
            let mut errors = WatchErrors::new("cloud-controller-manager Deployments");
            move |item| {
                errors.observe(&item);
                futures::future::ready(())
            }
        });
        let mut streams: Vec<std::pin::Pin<Box<dyn Future<Output = ()> + Send>>> =
            vec![Box::pin(deployment_stream)];
        let mut mr_stores = Vec::new();
        for name in managed_resources {
            let (store, writer) = reflector::store();
            let stream = watcher(
                Api::<ManagedResource>::all(client.clone()),
                watcher::Config::default()
                    .fields(&format!("metadata.name={name}"))
                    .any_semantic(),
            )
            .default_backoff()
            .modify(|mr: &mut ManagedResource| {
                mr.metadata.managed_fields = None;
                mr.metadata.annotations = None;
                if let Some(status) = mr.status.as_mut() {
                    status.resources = None;
                }
            })
            .reflect(writer)
            .for_each({
                let mut errors = WatchErrors::new("ManagedResources");
                move |item| {
                    errors.observe(&item);
                    futures::future::ready(())
                }
            });
            streams.push(Box::pin(stream));
            mr_stores.push((name.clone(), store));
        }
        let driver = async move {
            tokio::select! {
                _ = futures::future::join_all(streams) => {}
                () = shutdown => {}
            }
        };
        (
            Caches {
                controlplanes,
                deployments,
                managed_resources: mr_stores,
            },
            driver,
        )
    }

    async fn ready(&self) -> bool {
        let all = async {
            self.controlplanes.wait_until_ready().await.ok()?;
            self.deployments.wait_until_ready().await.ok()?;
            for (_, store) in &self.managed_resources {
                store.wait_until_ready().await.ok()?;
            }
            Some(())
        };
        all.await.is_some()
    }
}

/// Gardener's `health.CheckDeployment` reason, `None` when healthy.
fn deployment_problem(d: &Deployment) -> Option<String> {
    let generation = d.metadata.generation.unwrap_or_default();
    let status = d.status.clone().unwrap_or_default();
    let observed = status.observed_generation.unwrap_or_default();
    if observed < generation {
        return Some(format!(
            "observed generation outdated ({observed}/{generation})"
        ));
    }
    let conditions = status.conditions.unwrap_or_default();
    let find = |t: &str| conditions.iter().find(|c| c.type_ == t);
    let state = |t: &str, expected: &str| {
        find(t).filter(|c| c.status != expected).map(|c| {
            format!(
                "condition {t:?} has invalid status {} (expected {expected}) due to {}: {}",
                c.status,
                c.reason.clone().unwrap_or_default(),
                c.message.clone().unwrap_or_default()
            )
        })
    };
    if find("Available").is_none() {
        return Some("condition \"Available\" is missing".into());
    }
    state("Available", "True")
        .or_else(|| state("Progressing", "True"))
        .or_else(|| state("ReplicaFailure", "False"))
}

/// The detail of the Deployment check, `None` when healthy.
pub fn check_deployment(namespace: &str, name: &str, live: Option<&Deployment>) -> Option<String> {
    match live {
        None => Some(format!(
            "deployment {name:?} in namespace {namespace:?} not found"
        )),
        Some(d) => deployment_problem(d).map(|reason| {
            format!("deployment {name:?} in namespace {namespace:?} is unhealthy: {reason}")
        }),
    }
}

/// The detail of the ManagedResource check, `None` when healthy.
pub fn check_managed_resource(
    namespace: &str,
    name: &str,
    live: Option<&ManagedResource>,
) -> Option<String> {
    match live {
        None => Some(format!(
            "Managed Resource {name:?} in namespace {namespace:?} not found"
        )),
        Some(mr) => mr.check_healthy().err().map(|reason| {
            format!("managed resource {name:?} in namespace {namespace:?} is unhealthy: {reason}")
        }),
    }
}

/// Status, reason and message from the failed checks' details (Gardener's
/// message utilities: a single detail with a trailing dot; several numbered).
pub fn outcome(hibernated: bool, details: &[String]) -> (&'static str, &'static str, String) {
    if hibernated {
        return ("True", REASON_SUCCESSFUL, "Shoot is hibernated".into());
    }
    let dot = |d: &String| {
        if d.ends_with('.') {
            d.clone()
        } else {
            format!("{d}.")
        }
    };
    match details {
        [] => (
            "True",
            REASON_SUCCESSFUL,
            "All health checks successful".into(),
        ),
        [one] => ("False", REASON_UNSUCCESSFUL, dot(one)),
        many => {
            let text: Vec<String> = many
                .iter()
                .enumerate()
                .map(|(i, d)| format!("{}) {}", i + 1, dot(d)))
                .collect();
            ("False", REASON_UNSUCCESSFUL, text.join(" "))
        }
    }
}

/// Gardener's condition builder: the old condition's `lastTransitionTime`
/// unless the status changes, its `lastUpdateTime` unless reason, message or
/// codes change. `None` when nothing changed (nothing to write).
pub fn build(
    old: Option<&Condition>,
    (status, reason, message): (&str, &str, String),
    now: &str,
) -> Option<Condition> {
    let mut c = old.cloned().unwrap_or_default();
    if c.last_transition_time.is_empty() {
        c.last_transition_time = now.to_string();
    }
    if c.last_update_time.is_empty() {
        c.last_update_time = now.to_string();
    }
    c.type_ = CONDITION_TYPE.to_string();
    if old.is_some_and(|o| o.status != status) {
        c.last_transition_time = now.to_string();
    }
    if old.is_some_and(|o| o.reason != reason || o.message != message || !o.codes.is_empty()) {
        c.last_update_time = now.to_string();
    }
    c.status = status.to_string();
    c.reason = reason.to_string();
    c.message = message;
    c.codes = Vec::new();
    (old != Some(&c)).then_some(c)
}

impl HealthChecks {
    /// The condition `cp` should have now, given the caches; `None` when the
    /// object is not checked (not ours, deleted, migrating) or nothing changed.
    pub fn evaluate(
        &self,
        cp: &ControlPlane,
        shoot: &ShootContext,
        caches: &Caches,
    ) -> Option<Condition> {
        if cp.spec.type_ != self.provider
            || !self.classes.iter().any(|c| c == cp.class())
            || cp.metadata.deletion_timestamp.is_some()
            || operation::operation_annotation(cp) == Some("migrate")
            || cp.last_operation().is_some_and(|l| l.type_ == "Migrate")
        {
            return None;
        }
        let namespace = cp.namespace();
        let mut details = Vec::new();
        if !shoot.hibernation_enabled() {
            for name in &self.deployments {
                let live = caches
                    .deployments
                    .get(&ObjectRef::new(name).within(namespace));
                details.extend(check_deployment(namespace, name, live.as_deref()));
            }
            for (name, store) in &caches.managed_resources {
                let live = store.get(&ObjectRef::new(name).within(namespace));
                details.extend(check_managed_resource(namespace, name, live.as_deref()));
            }
        }
        let old: Option<Condition> = cp
            .conditions()
            .iter()
            .find(|c| c.get("type").and_then(Value::as_str) == Some(CONDITION_TYPE))
            .and_then(|c| serde_json::from_value(c.clone()).ok());
        build(
            old.as_ref(),
            outcome(shoot.hibernation_enabled(), &details),
            &(self.now)(),
        )
    }

    /// One pass over every cached ControlPlane; returns how many were written.
    pub async fn pass(&self, caches: &Caches) -> usize {
        let due: Vec<_> = caches
            .controlplanes
            .state()
            .into_iter()
            .filter_map(|cp| {
                let shoot = self.state.shoot(cp.namespace()).ok()?;
                let condition = self.evaluate(&cp, &shoot, caches)?;
                Some((cp, condition))
            })
            .collect();
        let results: Vec<_> = futures::StreamExt::collect(futures::StreamExt::buffer_unordered(
            futures::stream::iter(due.into_iter().map(|(cp, condition)| async move {
                let result = self.write(&cp, condition).await;
                (cp, result)
            })),
            self.concurrency.max(1),
        ))
        .await;
        let mut written = 0;
        for (cp, result) in results {
            match result {
                Ok(()) => written += 1,
                Err(e) => {
                    tracing::warn!(controlplane = %format!("{}/{}", cp.namespace(), cp.name()), error = %crate::gardener::api_error::describe(&e), "could not write the health condition")
                }
            }
        }
        written
    }

    /// Merge-patch the conditions (ours replaced, the others kept), guarded by
    /// the resource version the check saw.
    async fn write(&self, cp: &ControlPlane, condition: Condition) -> Result<(), kube::Error> {
        let mut conditions: Vec<Value> = cp
            .conditions()
            .iter()
            .filter(|c| c.get("type").and_then(Value::as_str) != Some(CONDITION_TYPE))
            .cloned()
            .collect();
        conditions.push(serde_json::to_value(&condition).unwrap_or(Value::Null));
        let body = json!({
            "metadata": {"resourceVersion": cp.metadata.resource_version},
            "status": {"conditions": conditions},
        });
        Api::<ControlPlane>::namespaced(self.client.clone(), cp.namespace())
            .patch_status(cp.name(), &PatchParams::default(), &Patch::Merge(&body))
            .await?;
        Ok(())
    }

    /// Check every `period` until `shutdown` (once the caches are ready).
    pub async fn run(self: Arc<Self>, caches: Caches, shutdown: impl Future<Output = ()> + Send) {
        tokio::pin!(shutdown);
        tokio::select! {
            ready = caches.ready() => if !ready { return },
            () = &mut shutdown => return,
        }
        let mut tick = tokio::time::interval(self.period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => {
                    let written = self.pass(&caches).await;
                    tracing::debug!(written, "health checks done");
                }
                () = &mut shutdown => return,
            }
        }
    }
}
