//! The health checks that write `ControlPlane.status.conditions`
//! (`extensions/pkg/controller/healthcheck`): every sync period (30 s) each
//! ControlPlane of this provider gets the condition `ControlPlaneHealthy`
//! from the seed Deployments its components declare (`health.deployments` of
//! each component file, as upstream's `pkg/controller/healthcheck/add.go`
//! lists them) and its ManagedResources; gardenlet turns it into the Shoot's
//! `ControlPlaneHealthy`.
//!
//! | situation | status | reason | message |
//! |---|---|---|---|
//! | being deleted, or migrating (annotation `migrate`, last operation `Migrate`) | – | – | not checked, nothing written |
//! | hibernation enabled | `True` | `HealthCheckSuccessful` | `Shoot is hibernated` |
//! | every check passes | `True` | `HealthCheckSuccessful` | `All health checks successful` |
//! | a check's cache is not current (watch failing), or an Event check cannot read its shoot | `Unknown` | `ConditionCheckError` | `failed to execute 1 health check: <d>.` |
//! | a check fails | `False` | `HealthCheckUnsuccessful` | the detail with a trailing `.`; several: `1) <d>. 2) <d>.` |
//! | only rollouts in flight, within their threshold | `Progressing` | `HealthCheckProgressing` | the details |
//!
//! The decision is the pure [`verdict`] (its doc has the whole table, which
//! checks progress and for how long). The checks, in this order (Gardener
//! runs them in parallel and joins the details in completion order; scion's
//! order is fixed):
//! - each declared Deployment, in component order (`general.NewSeedDeploymentHealthChecker`):
//!   `deployment "<name>" in namespace "<ns>" not found`, or `... is unhealthy:
//!   <reason>` with the first of: observed generation outdated, `Available`
//!   missing or not `True`, `Progressing` not `True`, `ReplicaFailure` not
//!   `False`; `... is rolling out: <reason>` (progressing) while its rollout
//!   is in flight;
//! - each ManagedResource scion writes (`general.CheckManagedResource`):
//!   `Managed Resource "<name>" in namespace "<ns>" not found`, or
//!   `managed resource "<name>" in namespace "<ns>" is unhealthy: <reason>`
//!   (`ResourcesApplied` or `ResourcesHealthy` `False`), or `... is
//!   progressing: <reason>` while gardener-resource-manager has not observed
//!   it or its objects roll out (`ResourcesProgressing`): the shoot's
//!   ManagedResources stand for the shoot-side objects (the CSI node
//!   DaemonSet), as gardenlet's `SystemComponentsHealthy` reads them;
//! - each component's `health.events` (checked right after the Deployments),
//!   while its `when` holds for the shoot and the component's checked
//!   Deployments are healthy: the newest Event about the object in the
//!   shoot, read through the shoot kubeconfig Gardener keeps in the shoot
//!   namespace ([`shoot`]), fails the check while it is a recent `Warning`
//!   (`[<component>] <reason>: <message>`); a shoot that cannot be read makes
//!   it a check that could not run (`Unknown`), as upstream's failed shoot
//!   client or list does.
//!
//! The seed checks read reflector caches (the controller's ControlPlanes, the
//! declared Deployments and the ManagedResources, one cache per name, each
//! selected by `metadata.name`), so they make no read; only an Event check
//! reads, from its shoot (ControlPlanes are evaluated `concurrency` at a
//! time, so a slow shoot does not hold the others). A pass writes only when
//! status, reason, message or codes change (as Gardener's condition builder,
//! which keeps `lastUpdateTime` otherwise), so a steady seed sees no writes.
//! `lastTransitionTime` moves with the status.
//!
//! **Starting.** The loop waits for its own caches (Deployments,
//! ManagedResources) through a signal of its own, set when each reflector
//! sees its first complete list, and for the Cluster state to be synced. It
//! never awaits `Store::wait_until_ready` of the controller's ControlPlane
//! store: kube-runtime's readiness is a `futures` oneshot with **one** waker
//! slot, and the controller's runner already waits on it, so a second waiter
//! either never woke (the loop hung before its first pass, with nothing
//! logged — issue 21's "health check often never starts") or stole the
//! runner's wake-up. It needs no such wait: the reflector swaps a complete
//! list into the store at once, so before that the store is empty and a pass
//! checks nothing.
//!
//! **Failures show.** While a cache is not synced the loop says so every
//! `2 × period` (with the watch error, if any); each watch error is logged
//! when it changes; a ControlPlane without a Cluster is warned about once; a
//! pass that panics is logged and the next one runs. [`HealthMetrics`]:
//! `scion_healthcheck_running`, `scion_healthcheck_last_pass_timestamp_seconds`,
//! `scion_healthcheck_writes_total{result}`, `scion_healthcheck_skipped_total{reason}`.

use std::collections::BTreeSet;
use std::future::Future;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::{FutureExt as _, StreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use serde_json::{Value, json};
use tokio::sync::watch;

use super::extension::Extension;
use super::extension::operation;
use crate::gardener::managedresource::Condition;
use crate::gardener::{ControlPlane, ManagedResource, ShootContext};
use crate::profile::component::{HealthDeployment, HealthEvents};
use crate::profile::{Facts, FeatureGates};
use crate::state::StateSource;

pub mod shoot;
pub mod verdict;
use verdict::{Check, Verdict};

/// The condition type.
pub const CONDITION_TYPE: &str = "ControlPlaneHealthy";
pub use verdict::{REASON_CHECK_ERROR, REASON_PROGRESSING, REASON_SUCCESSFUL, REASON_UNSUCCESSFUL};
/// Gardener's default sync period.
pub const DEFAULT_SYNC_PERIOD: Duration = Duration::from_secs(30);

/// What the health checks look at and how often.
pub struct HealthChecks {
    pub client: kube::Client,
    pub state: Arc<dyn StateSource>,
    pub provider: String,
    pub classes: Vec<String>,
    pub period: Duration,
    /// Deployments checked, in order (the components' `health.deployments`;
    /// one with a condition only for the shoots it holds for).
    pub deployments: Vec<HealthDeployment>,
    /// The provider's extension feature gates with their values, which the
    /// Deployments' conditions may ask about (`extensionFeatureGate`).
    pub feature_gates: FeatureGates,
    /// ManagedResources checked, in order.
    pub managed_resources: Vec<String>,
    /// The Event checks in the shoots (the components' `health.events`).
    pub events: Vec<HealthEvents>,
    /// The Secrets holding the shoot kubeconfig, in the order tried
    /// ([`shoot::kubeconfig_secrets`]).
    pub shoot_secrets: &'static [&'static str],
    pub now: fn() -> String,
    /// Conditions written at once (`--healthcheck-max-concurrent-reconciles`, 5).
    pub concurrency: usize,
    /// The loop's families; `None` records nothing.
    pub metrics: Option<HealthMetrics>,
    /// Namespaces whose ControlPlane had no Cluster (warned about once).
    pub warned: Mutex<BTreeSet<String>>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ResultLabel {
    result: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ReasonLabel {
    reason: &'static str,
}

/// What the health-check loop reports on `/metrics`, so that a loop that
/// does not run, or stopped, shows (alert on
/// `time() - max(scion_healthcheck_last_pass_timestamp_seconds) > 3 * period`:
/// `max` picks the leader's).
#[derive(Clone, Default)]
pub struct HealthMetrics {
    running: Gauge,
    last_pass: Gauge<f64, AtomicU64>,
    writes: Family<ResultLabel, Counter>,
    skipped: Family<ReasonLabel, Counter>,
}

/// `result` of `scion_healthcheck_writes_total`.
const WRITE_RESULTS: [&str; 4] = ["written", "gone", "conflict", "error"];

impl HealthMetrics {
    /// The families, registered in `registry` (every series at zero).
    pub fn register(registry: &mut Registry) -> Self {
        let m = HealthMetrics::default();
        registry.register(
            "scion_healthcheck_running",
            "1 while this replica runs the ControlPlaneHealthy loop (the leader), else 0",
            m.running.clone(),
        );
        registry.register(
            "scion_healthcheck_last_pass_timestamp_seconds",
            "When the last ControlPlaneHealthy pass over every ControlPlane finished (Unix seconds; 0: never)",
            m.last_pass.clone(),
        );
        registry.register(
            "scion_healthcheck_writes",
            "ControlPlaneHealthy condition writes by result: written, gone (the ControlPlane was deleted), conflict (a newer version; the next pass writes), error",
            m.writes.clone(),
        );
        registry.register(
            "scion_healthcheck_skipped",
            "ControlPlanes a pass could not check, by reason (no_cluster: no Cluster for its namespace)",
            m.skipped.clone(),
        );
        for result in WRITE_RESULTS {
            let _ = m.writes.get_or_create(&ResultLabel { result });
        }
        let _ = m.skipped.get_or_create(&ReasonLabel {
            reason: "no_cluster",
        });
        m
    }

    fn wrote(&self, result: &'static str) {
        self.writes.get_or_create(&ResultLabel { result }).inc();
    }
}

/// The caches the checks read.
#[derive(Clone)]
pub struct Caches {
    /// The controller's ControlPlane store (never awaited: see the module doc).
    pub controlplanes: Store<ControlPlane>,
    /// The Deployment caches: one per declared name (each holds only
    /// Deployments of that name), or one holding them all (filled by hand).
    pub deployments: Vec<(String, Store<Deployment>)>,
    /// One cache per ManagedResource name.
    pub managed_resources: Vec<(String, Store<ManagedResource>)>,
    /// Per cache of the loop's own (Deployments, each ManagedResource): its
    /// name and whether its first list arrived, with the last watch error.
    pub synced: Vec<(String, watch::Receiver<CacheState>)>,
}

/// Where one of the loop's caches stands.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CacheState {
    /// The first complete list arrived.
    pub synced: bool,
    /// The last watch error, until the next successful event.
    pub error: Option<String>,
}

/// Drive a reflector stream: record its first complete list and its errors
/// in `state`, logging each new error once.
async fn drive<K>(
    name: String,
    stream: impl futures::Stream<Item = Result<watcher::Event<K>, watcher::Error>>,
    state: watch::Sender<CacheState>,
) {
    futures::pin_mut!(stream);
    while let Some(event) = stream.next().await {
        match event {
            Ok(watcher::Event::InitDone) => state.send_modify(|s| {
                s.synced = true;
                s.error = None;
            }),
            // a (re)list starts: sent before every retry of a list that
            // keeps failing, so no sign that the watch works again
            Ok(watcher::Event::Init) => {}
            Ok(_) => {
                if state.borrow().error.is_some() {
                    state.send_modify(|s| s.error = None);
                }
            }
            Err(e) => {
                let text = crate::gardener::api_error::describe_watch(&e);
                if state.borrow().error.as_deref() != Some(text.as_str()) {
                    tracing::warn!(cache = %name, error = %text, "health-check cache: watch failed, retrying with backoff");
                    state.send_modify(|s| s.error = Some(text));
                }
            }
        }
    }
}

impl Caches {
    /// Start the Deployment and ManagedResource reflectors (label- and
    /// name-selected, stripped of what the checks do not read); the returned
    /// future drives them until `shutdown`.
    pub fn start(
        client: &kube::Client,
        controlplanes: Store<ControlPlane>,
        deployments: &[String],
        managed_resources: &[String],
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> (Caches, impl Future<Output = ()> + Send + 'static) {
        let mut synced = Vec::new();
        let mut signal = |name: String| {
            let (tx, rx) = watch::channel(CacheState::default());
            synced.push((name.clone(), rx));
            (name, tx)
        };
        let mut streams: Vec<std::pin::Pin<Box<dyn Future<Output = ()> + Send>>> = Vec::new();
        let mut deployment_stores = Vec::new();
        for deployment in deployments {
            let (store, writer) = reflector::store();
            let (name, tx) = signal(format!("deployments {deployment}"));
            let stream = watcher(
                Api::<Deployment>::all(client.clone()),
                watcher::Config::default()
                    .fields(&format!("metadata.name={deployment}"))
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
            .reflect(writer);
            streams.push(Box::pin(drive(name, stream, tx)));
            deployment_stores.push((deployment.clone(), store));
        }
        let mut mr_stores = Vec::new();
        for mr in managed_resources {
            let (store, writer) = reflector::store();
            let (name, tx) = signal(format!("managedresources {mr}"));
            let stream = watcher(
                Api::<ManagedResource>::all(client.clone()),
                watcher::Config::default()
                    .fields(&format!("metadata.name={mr}"))
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
            .reflect(writer);
            streams.push(Box::pin(drive(name, stream, tx)));
            mr_stores.push((mr.clone(), store));
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
                deployments: deployment_stores,
                managed_resources: mr_stores,
                synced,
            },
            driver,
        )
    }

    /// Caches filled by hand (tests, tools): every one counts as synced.
    pub fn synced(
        controlplanes: Store<ControlPlane>,
        deployments: Store<Deployment>,
        managed_resources: Vec<(String, Store<ManagedResource>)>,
    ) -> Caches {
        let done = || {
            watch::channel(CacheState {
                synced: true,
                error: None,
            })
            .1
        };
        let mut synced = vec![("deployments".to_string(), done())];
        synced.extend(
            managed_resources
                .iter()
                .map(|(n, _)| (format!("managedresources {n}"), done())),
        );
        Caches {
            controlplanes,
            deployments: vec![("deployments".to_string(), deployments)],
            managed_resources,
            synced,
        }
    }

    /// The cached Deployment `namespace/name`, from whichever cache holds it.
    pub fn deployment(&self, namespace: &str, name: &str) -> Option<Arc<Deployment>> {
        let key = ObjectRef::new(name).within(namespace);
        self.deployments.iter().find_map(|(_, s)| s.get(&key))
    }

    /// Why the cache `name` (`deployments <name>`, `managedresources
    /// <name>`) cannot be trusted now: not synced, or its watch failing (the
    /// check "could not run", upstream's failed GET); `None` when it is
    /// current or not one of the loop's own.
    pub fn not_current(&self, name: &str) -> Option<String> {
        let (_, rx) = self.synced.iter().find(|(n, _)| n == name)?;
        let state = rx.borrow();
        match (&state.error, state.synced) {
            (Some(e), _) => Some(format!("its cache is not current: {e}")),
            (None, false) => Some("its cache has not been listed yet".to_string()),
            (None, true) => None,
        }
    }

    /// The caches not synced yet, with their last error.
    pub fn pending(&self) -> Vec<String> {
        self.synced
            .iter()
            .filter(|(_, rx)| !rx.borrow().synced)
            .map(|(name, rx)| match &rx.borrow().error {
                Some(e) => format!("{name} ({e})"),
                None => name.clone(),
            })
            .collect()
    }

    /// Wait until every cache of the loop's own has its first list; `false`
    /// when a cache's driver is gone first.
    async fn ready(&self) -> bool {
        for (_, rx) in &self.synced {
            let mut rx = rx.clone();
            if rx.wait_for(|s| s.synced).await.is_err() {
                return false;
            }
        }
        true
    }
}

/// Gardener's condition builder: the old condition's `lastTransitionTime`
/// unless the status changes, its `lastUpdateTime` unless reason, message or
/// codes change. `None` when nothing changed (nothing to write).
pub fn build(old: Option<&Condition>, verdict: Verdict, now: &str) -> Option<Condition> {
    let mut c = old.cloned().unwrap_or_default();
    if c.last_transition_time.is_empty() {
        c.last_transition_time = now.to_string();
    }
    if c.last_update_time.is_empty() {
        c.last_update_time = now.to_string();
    }
    c.type_ = CONDITION_TYPE.to_string();
    if old.is_some_and(|o| o.status != verdict.status) {
        c.last_transition_time = now.to_string();
    }
    if old.is_some_and(|o| {
        o.reason != verdict.reason || o.message != verdict.message || o.codes != verdict.codes
    }) {
        c.last_update_time = now.to_string();
    }
    c.status = verdict.status.to_string();
    c.reason = verdict.reason.to_string();
    c.message = verdict.message;
    c.codes = verdict.codes;
    (old != Some(&c)).then_some(c)
}

impl HealthChecks {
    /// The condition `cp` should have now, given the caches and (for the
    /// Event checks that apply) its shoot; `None` when the object is not
    /// checked (not ours, deleted, migrating) or nothing changed.
    pub async fn evaluate(
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
        let mut checks = Vec::new();
        if !shoot.hibernation_enabled() {
            let (deployments, events, managed_resources) =
                self.seed_checks(namespace, shoot, caches);
            checks = deployments;
            for planned in events {
                checks.push(match planned {
                    Planned::Done(check) => check,
                    Planned::Read(spec) => self.event_check(namespace, spec).await,
                });
            }
            checks.extend(managed_resources);
        }
        let old: Option<Condition> = cp
            .conditions()
            .iter()
            .find(|c| c.get("type").and_then(Value::as_str) == Some(CONDITION_TYPE))
            .and_then(|c| serde_json::from_value(c.clone()).ok());
        let now = (self.now)();
        let now_unix = crate::secrets::unix_seconds(&now).unwrap_or_default();
        build(
            old.as_ref(),
            verdict::decide(shoot.hibernation_enabled(), &checks, old.as_ref(), now_unix),
            &now,
        )
    }

    /// The checks decided from the caches alone: the Deployments', the Event
    /// checks (each decided, or to be read from the shoot) and the
    /// ManagedResources', in that order.
    fn seed_checks<'s>(
        &'s self,
        namespace: &str,
        shoot: &ShootContext,
        caches: &Caches,
    ) -> (Vec<Check>, Vec<Planned<'s>>, Vec<Check>) {
        let facts = Facts {
            feature_gates: Some(&self.feature_gates),
            ..Facts::of_shoot(shoot)
        };
        let mut checks = Vec::new();
        // the Deployments checked for this shoot, with their results
        let mut checked: Vec<(&str, usize)> = Vec::new();
        for HealthDeployment { name, when } in &self.deployments {
            match when.as_ref().map(|c| c.eval(&facts)) {
                None | Some(Ok(true)) => {}
                Some(Ok(false)) => continue,
                Some(Err(e)) => {
                    checks.push(Check::Failed {
                        detail: format!(
                            "deployment {name:?} in namespace {namespace:?}: whether it is checked: {e}"
                        ),
                    });
                    continue;
                }
            }
            checked.push((name, checks.len()));
            checks.push(match caches.not_current(&format!("deployments {name}")) {
                Some(why) => Check::Failed {
                    detail: format!("deployment {name:?} in namespace {namespace:?}: {why}"),
                },
                None => {
                    let live = caches.deployment(namespace, name);
                    verdict::deployment(namespace, name, live.as_deref())
                }
            });
        }
        let mut events = Vec::new();
        for spec in &self.events {
            // upstream wraps the Deployment check: a Deployment that does
            // not pass is reported alone
            let healthy = |d: &String| {
                checked
                    .iter()
                    .find(|(n, _)| n == d)
                    .is_none_or(|(_, i)| checks[*i] == Check::Healthy)
            };
            if !spec.after.iter().all(healthy) {
                continue;
            }
            match spec.when.as_ref().map(|c| c.eval(&facts)) {
                None | Some(Ok(true)) => events.push(Planned::Read(spec)),
                Some(Ok(false)) => {}
                Some(Err(e)) => events.push(Planned::Done(Check::Failed {
                    detail: format!("{}: whether they are checked: {e}", event_target(spec)),
                })),
            }
        }
        let mut managed_resources = Vec::new();
        for (name, store) in &caches.managed_resources {
            managed_resources.push(
                match caches.not_current(&format!("managedresources {name}")) {
                    Some(why) => Check::Failed {
                        detail: format!(
                            "Managed Resource {name:?} in namespace {namespace:?}: {why}"
                        ),
                    },
                    None => {
                        let live = store.get(&ObjectRef::new(name).within(namespace));
                        verdict::managed_resource(namespace, name, live.as_deref())
                    }
                },
            );
        }
        (checks, events, managed_resources)
    }

    /// The Event check `spec` for the shoot of `namespace`: its Events read
    /// now ([`shoot::newest_event`]), decided at the current time.
    async fn event_check(&self, namespace: &str, spec: &HealthEvents) -> Check {
        match shoot::newest_event(&self.client, namespace, self.shoot_secrets, spec).await {
            Ok(newest) => {
                verdict::recent_warning(spec, newest.as_ref(), k8s_openapi::jiff::Timestamp::now())
            }
            Err(why) => Check::Failed {
                detail: format!("{}: {why}", event_target(spec)),
            },
        }
    }

    /// One pass over every cached ControlPlane; returns how many were written.
    /// ControlPlanes are evaluated, and conditions written, `concurrency` at a
    /// time.
    pub async fn pass(&self, caches: &Caches) -> usize {
        let mut found = Vec::new();
        for cp in caches.controlplanes.state() {
            match self.state.shoot(cp.namespace()) {
                Ok(shoot) => found.push((cp, shoot)),
                Err(e) => self.skipped_without_cluster(&cp, &e),
            }
        }
        let evaluated: Vec<_> = futures::StreamExt::collect(futures::StreamExt::buffer_unordered(
            futures::stream::iter(found.into_iter().map(|(cp, shoot)| async move {
                let condition = self.evaluate(&cp, &shoot, caches).await;
                condition.map(|c| (cp, c))
            })),
            self.concurrency.max(1),
        ))
        .await;
        let due: Vec<_> = evaluated.into_iter().flatten().collect();
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
            let key = format!("{}/{}", cp.namespace(), cp.name());
            let result = match result {
                Ok(()) => {
                    written += 1;
                    "written"
                }
                Err(kube::Error::Api(e)) if e.code == 404 => {
                    tracing::debug!(controlplane = %key, "ControlPlane gone before its health condition was written");
                    "gone"
                }
                Err(kube::Error::Api(e)) if e.code == 409 => {
                    tracing::debug!(controlplane = %key, "ControlPlane changed since the check; the next pass writes");
                    "conflict"
                }
                Err(e) => {
                    tracing::warn!(controlplane = %key, error = %crate::gardener::api_error::describe(&e), "could not write the health condition");
                    "error"
                }
            };
            if let Some(m) = &self.metrics {
                m.wrote(result);
            }
        }
        written
    }

    /// Count a ControlPlane without a shoot context, warning once per namespace.
    fn skipped_without_cluster(&self, cp: &ControlPlane, error: &impl std::fmt::Display) {
        if let Some(m) = &self.metrics {
            m.skipped
                .get_or_create(&ReasonLabel {
                    reason: "no_cluster",
                })
                .inc();
        }
        let first = self
            .warned
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(cp.namespace().to_string());
        if first {
            tracing::warn!(controlplane = %format!("{}/{}", cp.namespace(), cp.name()), error = %error, "ControlPlane not health-checked: no shoot context");
        }
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
            .patch_status(
                cp.name(),
                &PatchParams {
                    field_manager: Some(super::FIELD_MANAGER.to_owned()),
                    ..PatchParams::default()
                },
                &Patch::Merge(&body),
            )
            .await?;
        Ok(())
    }

    /// Wait for the loop's caches and the shoot state, saying every
    /// `2 × period` what is still missing; `Some` when the loop must end
    /// instead (shutdown, or a cache's driver ended first).
    async fn wait_for_caches(
        &self,
        caches: &Caches,
        shutdown: &mut (impl Future<Output = ()> + Unpin),
    ) -> Option<LoopEnd> {
        let nag = self.period * 2;
        let ready = async {
            if !caches.ready().await {
                return false;
            }
            while !self.state.is_synced() {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            true
        };
        tokio::pin!(ready);
        loop {
            tokio::select! {
                ok = &mut ready => return (!ok).then(|| LoopEnd::CachesGone(caches.pending())),
                () = &mut *shutdown => return Some(LoopEnd::Shutdown),
                () = tokio::time::sleep(nag) => {
                    let mut pending = caches.pending();
                    if !self.state.is_synced() {
                        pending.push("clusters".into());
                    }
                    tracing::warn!(waiting_for = %pending.join(", "), after = %format!("{}s", nag.as_secs()), "health checks not started: caches not synced");
                }
            }
        }
    }

    /// Check every `period` until `shutdown`, once the caches are ready (see
    /// the module doc); returns why it ended. A pass that panics is logged and
    /// the next one runs.
    pub async fn run(
        self: Arc<Self>,
        caches: Caches,
        shutdown: impl Future<Output = ()> + Send,
    ) -> LoopEnd {
        tokio::pin!(shutdown);
        if let Some(m) = &self.metrics {
            m.running.set(1);
        }
        let end = self.run_inner(&caches, &mut shutdown).await;
        if let Some(m) = &self.metrics {
            m.running.set(0);
        }
        end
    }

    async fn run_inner(
        &self,
        caches: &Caches,
        shutdown: &mut (impl Future<Output = ()> + Unpin),
    ) -> LoopEnd {
        if let Some(end) = self.wait_for_caches(caches, shutdown).await {
            return end;
        }
        tracing::info!(
            controlplanes = caches.controlplanes.state().len(),
            period = %format!("{}s", self.period.as_secs()),
            "health checks running"
        );
        let mut tick = tokio::time::interval(self.period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => {
                    match std::panic::AssertUnwindSafe(self.pass(caches)).catch_unwind().await {
                        Ok(written) => {
                            tracing::debug!(written, "health checks done");
                            if let Some(m) = &self.metrics {
                                m.last_pass.set(unix_now());
                            }
                        }
                        Err(panic) => {
                            let text = panic
                                .downcast_ref::<&str>()
                                .map(|s| s.to_string())
                                .or_else(|| panic.downcast_ref::<String>().cloned())
                                .unwrap_or_default();
                            tracing::error!(panic = %text, "health-check pass panicked; the next pass runs in one period");
                        }
                    }
                }
                () = &mut *shutdown => return LoopEnd::Shutdown,
            }
        }
    }
}

/// Start the health checks over the controller's ControlPlane `store`: the
/// caches' driver and the loop, as two named tasks, each stopping when its
/// `stop()` resolves; a loop that ends before is logged as an error (and,
/// as a task that ended, stops the leader's work).
pub fn start<S>(
    checks: Arc<HealthChecks>,
    client: &kube::Client,
    store: Store<ControlPlane>,
    stop: impl Fn() -> S,
) -> Vec<(&'static str, tokio::task::JoinHandle<()>)>
where
    S: Future<Output = ()> + Send + 'static,
{
    tracing::info!(period = %crate::gardener::duration::text(checks.period), "starting the health checks");
    let names: Vec<String> = checks.deployments.iter().map(|d| d.name.clone()).collect();
    let (caches, driver) = Caches::start(client, store, &names, &checks.managed_resources, stop());
    let loop_stop = stop();
    vec![
        ("the health-check caches", tokio::spawn(driver)),
        (
            "the health checks",
            tokio::spawn(async move {
                match checks.run(caches, loop_stop).await {
                    LoopEnd::Shutdown => {}
                    LoopEnd::CachesGone(pending) => tracing::error!(
                        caches = %pending.join(", "),
                        "health checks stopped: a cache ended before its first list; ControlPlaneHealthy is no longer written"
                    ),
                }
            }),
        ),
    ]
}

/// An Event check as the caches leave it: decided, or to be read.
enum Planned<'s> {
    Done(Check),
    Read(&'s HealthEvents),
}

/// What an Event check reads, for its messages.
fn event_target(spec: &HealthEvents) -> String {
    format!(
        "the Events of {} {}/{} in the shoot",
        spec.kind, spec.namespace, spec.name
    )
}

/// Why the health-check loop ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoopEnd {
    /// Shutdown or leadership lost: expected.
    Shutdown,
    /// A cache's driver ended before its first list (these were pending).
    CachesGone(Vec<String>),
}

fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}
