//! The generic reconciler: one state machine for every extension kind, the
//! patches it makes on the object, backoff, and the kube-runtime `Controller`
//! that drives it.
//!
//! kube-runtime's helpers and where scion does not use them:
//! - `Controller` (with its reflector store, which the health checks read) runs
//!   the loop, with `--controlplane-max-concurrent-reconciles` (default 5, Gardener's chart)
//!   and graceful shutdown.
//! - `finalizer()` is not used: it adds the finalizer and returns, relying on
//!   the next watch event to run `Apply`. Gardener's contract removes the
//!   `reconcile` annotation *before* that (so the next event no longer carries
//!   the request), has four operations instead of Apply/Cleanup, and Migrate
//!   removes every finalizer, not only ours. The same guarded JSON patches
//!   (`test` then `add`/`remove`) are made here instead.
//! - Predicates (`predicate_filter`) are not used for the operation annotation:
//!   they filter events by comparing with the previous object, while
//!   Gardener's default predicate looks at the object alone ("is anything
//!   requested?"). [`Step::plan`] decides that per reconcile, before any API
//!   call, so an unrequested pass costs nothing.

use std::collections::HashMap;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures::StreamExt;
use kube::api::{Api, Patch, PatchParams};
use kube::core::PartialObjectMeta;
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use serde_json::{Value, json};

use super::metrics::ControllerMetrics;
use super::operation::{
    self, FORCE_DELETION_ANNOTATION, Gate, OPERATION_ANNOTATION, OperationType,
};
use super::{Actuator, Extension, Outcome, status};
use crate::controller::{Error, RECONCILIATION_TIMEOUT};
use crate::gardener::api_error::{WatchErrors, describe_watch};
use crate::gardener::{Cluster, ShootContext};
use crate::state::{StateError, StateSource};

/// How long recording a timeout in the status may take.
const STATUS_AFTER_TIMEOUT: Duration = Duration::from_secs(10);

/// The next look at an object whose Cluster is not known while the Cluster
/// list is still being read (a start).
const UNSYNCED_RETRY: Duration = Duration::from_secs(1);

/// The reconciler of the extension kind `K` with the actuator `A`.
pub struct Reconciler<K, A> {
    pub client: kube::Client,
    pub state: Arc<dyn StateSource>,
    /// Provider type this instance serves (`spec.type`).
    pub provider: String,
    /// Extension classes served (`spec.class`, unset = `shoot`).
    pub classes: Vec<String>,
    /// `--ignore-operation-annotation`: render on every change of the object
    /// or its Cluster instead of only when gardenlet asks.
    pub ignore_operation_annotation: bool,
    /// Objects reconciled at the same time
    /// (`--controlplane-max-concurrent-reconciles`; Gardener's chart: 5).
    pub concurrency: u16,
    /// Upper bound of one reconcile.
    pub timeout: Duration,
    /// Periodic look at a settled object (costs no API call unless something
    /// is requested).
    pub resync: Duration,
    /// Clock for `lastUpdateTime`.
    pub now: fn() -> String,
    /// controller-runtime's controller families; `None` records nothing.
    pub metrics: Option<ControllerMetrics>,
    pub actuator: A,
    memory: Mutex<MemoryTable>,
    kind: PhantomData<fn() -> K>,
}

/// What the reconciler remembers of one object between passes (as
/// controller-runtime's queue does): that it looked at it (a later look is
/// an UPDATE, not a CREATE, for Gardener's predicates), failures, a pending
/// requeue, and the last successful operation.
#[derive(Debug, Clone, Copy, Default)]
struct Memory {
    /// The last look (for pruning).
    seen: Option<tokio::time::Instant>,
    failures: u32,
    /// The trigger it failed with, and when it may be tried again.
    failed_trigger: u64,
    retry_at: Option<tokio::time::Instant>,
    /// The actuator asked to be called again (hibernation in progress).
    requeue_pending: bool,
    /// Trigger of the last successful operation.
    done: Option<u64>,
    /// Trigger and Cluster version of the last successful operation.
    rendered: Option<u64>,
}

/// The memory of every object looked at, pruned of those not looked at for
/// [`Reconciler::forget_after`] (deleted objects: a live one is looked at at
/// least every resync), so it holds at most the live objects and those gone
/// recently.
#[derive(Debug, Default)]
struct MemoryTable {
    objects: HashMap<String, Memory>,
    pruned_at: Option<tokio::time::Instant>,
}

/// 1 s after the first failure, doubling, at most 5 min.
pub fn backoff_delay(failures: u32) -> Duration {
    let secs = 1u64 << failures.saturating_sub(1).min(9);
    Duration::from_secs(secs.min(300))
}

impl<K: Extension, A: Actuator<K>> Reconciler<K, A> {
    /// A reconciler with Gardener's defaults: class `shoot`, operation
    /// annotation honoured, 3 min bound, 10 min resync.
    pub fn new(
        client: kube::Client,
        state: Arc<dyn StateSource>,
        provider: impl Into<String>,
        actuator: A,
    ) -> Self {
        Reconciler {
            client,
            state,
            provider: provider.into(),
            classes: vec!["shoot".to_string()],
            ignore_operation_annotation: false,
            concurrency: 5,
            timeout: RECONCILIATION_TIMEOUT,
            resync: Duration::from_secs(600),
            now: status::now_rfc3339,
            metrics: None,
            actuator,
            memory: Mutex::new(MemoryTable::default()),
            kind: PhantomData,
        }
    }

    fn memory(&self) -> MutexGuard<'_, MemoryTable> {
        self.memory.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// How long an object not looked at is remembered: two resyncs and a
    /// reconcile bound.
    fn forget_after(&self) -> Duration {
        self.resync * 2 + self.timeout
    }

    /// Note a look at `key`; the memory from before it (`None`: first look).
    /// Prunes objects not looked at for [`Self::forget_after`], at most once
    /// per resync.
    fn observe(&self, key: &str) -> Option<Memory> {
        let now = tokio::time::Instant::now();
        let forget_after = self.forget_after();
        let mut table = self.memory();
        if table
            .pruned_at
            .is_none_or(|at| now.duration_since(at) >= self.resync)
        {
            table
                .objects
                .retain(|_, m| m.seen.is_none_or(|s| now.duration_since(s) < forget_after));
            table.pruned_at = Some(now);
        }
        let prior = table.objects.get(key).copied();
        table.objects.entry(key.to_string()).or_default().seen = Some(now);
        prior
    }

    /// How many objects the reconciler remembers (bounded by pruning).
    pub fn remembered(&self) -> usize {
        self.memory().objects.len()
    }

    /// Record a failure of `key` with `trigger`; returns the delay until the retry.
    fn record_failure(&self, key: &str, trigger: u64) -> Duration {
        let mut map = self.memory();
        let m = map.objects.entry(key.to_string()).or_default();
        m.failures = m.failures.saturating_add(1);
        let delay = backoff_delay(m.failures);
        m.failed_trigger = trigger;
        m.retry_at = Some(tokio::time::Instant::now() + delay);
        delay
    }

    /// Time left before `key` may be retried, when it failed with the same
    /// `trigger` (events that cannot change the outcome, such as our own status
    /// patch, do not bypass the backoff; a new request does).
    fn backoff_pending(&self, key: &str, trigger: u64) -> Option<Duration> {
        let map = self.memory();
        let m = map.objects.get(key)?;
        let now = tokio::time::Instant::now();
        let retry_at = m.retry_at?;
        (m.failed_trigger == trigger && now < retry_at).then(|| retry_at - now)
    }

    /// The current retry delay of `key` (after at least one failure).
    fn current_delay(&self, key: &str) -> Duration {
        backoff_delay(
            self.memory()
                .objects
                .get(key)
                .map_or(1, |m| m.failures.max(1)),
        )
    }

    fn succeeded(&self, key: &str, trigger: u64, rendered: u64, outcome: Outcome) {
        let mut map = self.memory();
        let m = map.objects.entry(key.to_string()).or_default();
        m.failures = 0;
        m.retry_at = None;
        m.done = Some(trigger);
        m.rendered = Some(rendered);
        m.requeue_pending = matches!(outcome, Outcome::RequeueAfter(_));
    }

    fn forget(&self, key: &str) {
        self.memory().objects.remove(key);
    }
}

fn key<K: Extension>(obj: &K) -> String {
    let meta = obj.meta();
    format!(
        "{}/{}",
        meta.namespace.as_deref().unwrap_or_default(),
        meta.name.as_deref().unwrap_or_default()
    )
}

/// What one reconcile does, decided from the object, the shoot and the
/// reconciler's memory before any API call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Not this instance's (type, class), `wait-for-state`, a failed shoot, or
    /// a successfully migrated object: nothing.
    Skip,
    /// Failed with the same trigger less than a backoff ago: look again then.
    Backoff(Duration),
    /// Nothing requested: nothing at all (no API call).
    Settled,
    /// An operation, after removing the `reconcile` annotation when it is set.
    Operate {
        op: OperationType,
        remove_annotation: bool,
    },
}

impl Step {
    /// The decision, in Gardener's order (the doc of [`reconcile`] is the spec).
    fn plan<K: Extension, A: Actuator<K>>(
        obj: &K,
        shoot: &ShootContext,
        ctx: &Reconciler<K, A>,
    ) -> Step {
        let remove_annotation = match operation::gate(obj, &ctx.provider, &ctx.classes) {
            Gate::NotResponsible | Gate::WaitForState => return Step::Skip,
            Gate::Proceed {
                remove_reconcile_annotation,
            } => remove_reconcile_annotation,
        };
        if operation::shoot_failed(shoot) {
            return Step::Skip;
        }
        let annotation = operation::operation_annotation(obj).filter(|a| *a != "reconcile");
        let op = operation::operation_type(obj, annotation);
        if operation::should_skip(obj, op) {
            return Step::Skip;
        }
        let key = key(obj);
        let prior = ctx.observe(&key);
        let trigger = operation::trigger_hash(obj);
        if let Some(wait) = ctx.backoff_pending(&key, trigger) {
            return Step::Backoff(wait);
        }
        let memory = prior.unwrap_or_default();
        let seen = operation::Seen {
            first: prior.is_none(),
            failed: memory.failures > 0,
            requeue: memory.requeue_pending,
            done: memory.done,
            rendered_unchanged: memory.rendered == Some(rendered_hash(obj, shoot)),
        };
        let requested = remove_annotation
            || operation::requested(obj, annotation, seen, ctx.ignore_operation_annotation);
        if requested {
            Step::Operate {
                op,
                remove_annotation,
            }
        } else {
            Step::Settled
        }
    }
}

/// What an operation was rendered for: the object's trigger and the Cluster's
/// resource version (ignore-operation-annotation mode renders when either moves).
fn rendered_hash<K: Extension>(obj: &K, shoot: &ShootContext) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (
        operation::trigger_hash(obj),
        shoot.resource_version.as_deref(),
    )
        .hash(&mut h);
    h.finish()
}

/// Reconcile one object, bounded by `ctx.timeout`.
///
/// The steps, first match wins:
/// 1. other type or class, `gardener.cloud/operation: wait-for-state`, a shoot
///    whose last operation `Failed`, or an object whose last operation is a
///    successful `Migrate` (until `migrate` or `restore` is requested): nothing;
/// 2. failed less than a backoff (1 s doubling to 5 min) ago and nothing new
///    requested since: look again when the backoff ends;
/// 3. nothing requested by Gardener's predicates ([`operation::requested`]:
///    the operation annotation, a deletion, a last operation not `Succeeded`
///    on the first look, a failure or requeue pending; with
///    `--ignore-operation-annotation` every change of the object or its
///    Cluster): nothing, not even a read. A spec change without the
///    annotation waits for gardenlet, and a new scion version renders
///    nothing until gardenlet asks;
/// 4. otherwise the `reconcile` annotation is removed, and the operation runs:
///    - `Migrate`: Processing, `Actuator::migrate`, Succeeded, then every
///      finalizer and the annotation go (one merge patch);
///    - `Delete` (only with our finalizer): Processing, `Actuator::delete`
///      (forced when the shoot is annotated `confirmation.gardener.cloud/force-deletion`),
///      Succeeded, our finalizer goes;
///    - `Restore`: finalizer, Processing, `Actuator::restore`, Succeeded, then
///      the `restore` annotation goes unless a requeue is pending;
///    - `Create`/`Reconcile`: finalizer, Processing, `Actuator::reconcile`, Succeeded.
///
///    An actuator error is written as `Error` with `lastError` (and its codes)
///    and retried with backoff; a reconcile that runs out of time is recorded
///    the same way. A 404 of the object itself on one of these patches means
///    it is gone (its last finalizer released, say by the previous pass of a
///    deletion, whose cache entry this one still saw): the operation ends,
///    without a failure or a log above debug. A requested requeue (`Outcome::RequeueAfter`) runs the
///    operation again after 2 s even though nothing new is requested.
///
/// With `ctx.metrics`, every call is counted and timed in controller-runtime's
/// families (see [`super::metrics`]).
pub async fn reconcile<K: Extension, A: Actuator<K>>(
    obj: Arc<K>,
    ctx: Arc<Reconciler<K, A>>,
) -> Result<Action, Error> {
    let Some(metrics) = ctx.metrics.clone() else {
        return reconcile_once(obj, ctx).await;
    };
    let work = metrics.begin(K::CONTROLLER);
    let result = reconcile_once(obj, ctx).await;
    work.finish(&result);
    result
}

/// One reconcile as [`reconcile`] documents it, without the metrics.
async fn reconcile_once<K: Extension, A: Actuator<K>>(
    obj: Arc<K>,
    ctx: Arc<Reconciler<K, A>>,
) -> Result<Action, Error> {
    let key = key(obj.as_ref());
    let namespace = obj
        .meta()
        .namespace
        .clone()
        .ok_or(Error::Malformed("namespace"))?;
    if obj.extension_type() != ctx.provider
        || !ctx.classes.iter().any(|c| c == obj.extension_class())
    {
        return Ok(Action::await_change());
    }
    // A live read when the cache lacks the Cluster (state::kube); if even
    // that finds none while the Cluster list has not arrived yet (a start
    // races the state's reflector), nothing is wrong: look again shortly.
    let shoot = match ctx.state.lookup_shoot(&namespace).await {
        Err(StateError::ClusterNotFound { .. }) if !ctx.state.is_synced() => {
            tracing::debug!(object = %key, "the Cluster list is not synced yet; requeueing");
            return Ok(Action::requeue(UNSYNCED_RETRY));
        }
        shoot => shoot?,
    };
    match Step::plan(obj.as_ref(), &shoot, &ctx) {
        Step::Skip => Ok(Action::await_change()),
        Step::Backoff(wait) => Ok(Action::requeue(wait)),
        Step::Settled => Ok(Action::requeue(ctx.resync)),
        Step::Operate {
            op,
            remove_annotation,
        } => {
            let trigger = operation::trigger_hash(obj.as_ref());
            let rendered = rendered_hash(obj.as_ref(), &shoot);
            let run = operate(obj.as_ref(), &shoot, &ctx, op, remove_annotation);
            let result = match tokio::time::timeout(ctx.timeout, run).await {
                Ok(result) => result,
                Err(_) => {
                    if let Some(metrics) = &ctx.metrics {
                        metrics.timed_out(K::CONTROLLER);
                    }
                    Err(report_timeout(obj.as_ref(), &ctx, op).await)
                }
            };
            match result {
                Ok((outcome, action)) => {
                    ctx.succeeded(&key, trigger, rendered, outcome);
                    Ok(action)
                }
                Err(Error::Gone(what)) => {
                    tracing::debug!(object = %key, call = %what, "object gone; nothing left to do");
                    ctx.forget(&key);
                    Ok(Action::await_change())
                }
                Err(e) => {
                    ctx.record_failure(&key, trigger);
                    Err(e)
                }
            }
        }
    }
}

/// Run one operation (step 4 of [`reconcile`]).
async fn operate<K: Extension, A: Actuator<K>>(
    obj: &K,
    shoot: &ShootContext,
    ctx: &Reconciler<K, A>,
    op: OperationType,
    remove_annotation: bool,
) -> Result<(Outcome, Action), Error> {
    let api: Api<K> = Api::namespaced(
        ctx.client.clone(),
        obj.meta().namespace.as_deref().unwrap_or_default(),
    );
    let name = obj.meta().name.clone().ok_or(Error::Malformed("name"))?;
    if remove_annotation {
        remove_operation_annotation(&api, &name).await?;
    }
    let generation = obj.meta().generation;
    let now = || (ctx.now)();
    let processing = || status::processing(K::KIND, op, &now());
    let succeeded = || status::succeeded(K::KIND, op, generation, &now());
    let failed = |e: Error| async {
        let body = status::error(K::KIND, op, generation, &e.to_string(), &e.codes(), &now());
        match patch_status(&api, &name, &body).await {
            Ok(()) => e,
            Err(gone @ Error::Gone(_)) => gone,
            Err(p) => {
                tracing::warn!(object = %key(obj), error = %p, "could not write the error status");
                e
            }
        }
    };
    match op {
        OperationType::Migrate => {
            patch_status(&api, &name, &processing()).await?;
            if let Err(e) = ctx.actuator.migrate(obj, shoot).await {
                return Err(failed(e).await);
            }
            patch_status(&api, &name, &succeeded()).await?;
            let body = json!({"metadata": {"finalizers": null, "annotations": {OPERATION_ANNOTATION: null}}});
            api.patch(&name, &patch_params(), &Patch::Merge(&body))
                .await
                .map_err(|e| {
                    object_error(format!("remove finalizers of {} {}", K::KIND, key(obj)), e)
                })?;
            Ok((Outcome::Done, Action::await_change()))
        }
        OperationType::Delete => {
            if !operation::has_finalizer(obj) {
                return Ok((Outcome::Done, Action::await_change()));
            }
            patch_status(&api, &name, &processing()).await?;
            let force = shoot.annotation_is_true(FORCE_DELETION_ANNOTATION);
            if let Err(e) = ctx.actuator.delete(obj, shoot, force).await {
                return Err(failed(e).await);
            }
            patch_status(&api, &name, &succeeded()).await?;
            remove_finalizer(&api, obj).await?;
            Ok((Outcome::Done, Action::await_change()))
        }
        OperationType::Restore | OperationType::Create | OperationType::Reconcile => {
            if !operation::has_finalizer(obj) {
                add_finalizer(&api, obj).await?;
            }
            patch_status(&api, &name, &processing()).await?;
            let outcome = match op {
                OperationType::Restore => ctx.actuator.restore(obj, shoot).await,
                _ => ctx.actuator.reconcile(obj, shoot).await,
            };
            let outcome = match outcome {
                Ok(outcome) => outcome,
                Err(e) => return Err(failed(e).await),
            };
            patch_status(&api, &name, &succeeded()).await?;
            match outcome {
                Outcome::RequeueAfter(after) => Ok((outcome, Action::requeue(after))),
                Outcome::Done => {
                    if op == OperationType::Restore {
                        remove_operation_annotation(&api, &name).await?;
                    }
                    Ok((outcome, Action::requeue(ctx.resync)))
                }
            }
        }
    }
}

/// Requeue with exponential backoff: 1 s doubling per consecutive failure, at
/// most 5 min (the failure was recorded by [`reconcile`]).
pub fn error_policy<K: Extension, A: Actuator<K>>(
    obj: Arc<K>,
    err: &Error,
    ctx: Arc<Reconciler<K, A>>,
) -> Action {
    let delay = ctx.current_delay(&key(obj.as_ref()));
    tracing::warn!(object = %key(obj.as_ref()), error = %err, retry_in = %crate::gardener::duration::text(delay), "reconcile failed, requeueing");
    Action::requeue(delay)
}

/// Run the controller until `shutdown` resolves: watch `K` in all namespaces
/// (and, with `--ignore-operation-annotation`, the Clusters' metadata, mapped
/// to the objects of their namespace). `on_store` receives the controller's
/// reflector store before it starts (the health checks read it).
pub async fn run<K: Extension, A: Actuator<K>>(
    ctx: Arc<Reconciler<K, A>>,
    on_store: impl FnOnce(Store<K>),
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    if let Some(metrics) = &ctx.metrics {
        metrics.started(K::CONTROLLER, ctx.concurrency);
    }
    // A term of leadership starts from nothing, as a Go extension's new
    // leader (a new process) does: every object's first look is a CREATE
    // for Gardener's predicates. What an earlier term of this process saw
    // may be stale: another replica led meanwhile, or this one's operation
    // was cut off when its leadership ended (lastOperation `Processing`).
    ctx.memory().objects.clear();
    let client = ctx.client.clone();
    let mut controller = Controller::new(
        Api::<K>::all(client.clone()),
        watcher::Config::default().any_semantic(),
    );
    let store = controller.store();
    on_store(store.clone());
    if ctx.ignore_operation_annotation {
        controller = controller.watches(
            Api::<PartialObjectMeta<Cluster>>::all(client),
            watcher::Config::default().any_semantic(),
            move |cluster: PartialObjectMeta<Cluster>| {
                let namespace = cluster.metadata.name.unwrap_or_default();
                store
                    .state()
                    .into_iter()
                    .filter(|o| o.meta().namespace.as_deref() == Some(namespace.as_str()))
                    .map(|o| ObjectRef::from_obj(o.as_ref()))
                    .collect::<Vec<_>>()
            },
        );
    }
    controller
        .with_config(controller::Config::default().concurrency(ctx.concurrency))
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy, ctx)
        .for_each({
            let mut errors = WatchErrors::new(K::CONTROLLER);
            move |result| {
                match result {
                    Ok((obj, _action)) => {
                        errors.ok();
                        tracing::debug!(object = %obj, "reconciled")
                    }
                    Err(controller::Error::ObjectNotFound(obj)) => {
                        tracing::debug!(object = %obj, "object gone")
                    }
                    // Logged once by `error_policy`, with the retry delay.
                    Err(controller::Error::ReconcilerFailed(..)) => {}
                    Err(controller::Error::QueueError(e)) => {
                        errors.failed(describe_watch(&e));
                    }
                    Err(e) => tracing::warn!(error = %e, "controller failed"),
                }
                futures::future::ready(())
            }
        })
        .await;
}

/// After a timeout, record it in the status (best effort, bounded by
/// [`STATUS_AFTER_TIMEOUT`] or the reconciliation timeout, whichever is shorter).
async fn report_timeout<K: Extension, A: Actuator<K>>(
    obj: &K,
    ctx: &Reconciler<K, A>,
    op: OperationType,
) -> Error {
    let err = Error::Timeout(ctx.timeout);
    let (Some(namespace), Some(name)) =
        (obj.meta().namespace.as_deref(), obj.meta().name.as_deref())
    else {
        return err;
    };
    let api: Api<K> = Api::namespaced(ctx.client.clone(), namespace);
    let body = status::error(
        K::KIND,
        op,
        obj.meta().generation,
        &err.to_string(),
        &[],
        &(ctx.now)(),
    );
    let bound = STATUS_AFTER_TIMEOUT.min(ctx.timeout);
    match tokio::time::timeout(bound, patch_status(&api, name, &body)).await {
        Ok(Ok(())) => {}
        Ok(Err(gone @ Error::Gone(_))) => return gone,
        Ok(Err(e)) => {
            tracing::warn!(object = %key(obj), error = %e, "could not record the timeout")
        }
        Err(_) => tracing::warn!(object = %key(obj), "could not record the timeout in time"),
    }
    err
}

/// Every patch of the object is scion's (field manager `scion`), so the
/// object's `managedFields` tell its writers apart (`scion check` warns when
/// another manager writes the conditions of a ControlPlane scion reconciles).
fn patch_params() -> PatchParams {
    PatchParams {
        field_manager: Some(crate::controller::FIELD_MANAGER.to_owned()),
        ..PatchParams::default()
    }
}

/// The error of a patch of the object itself: [`Error::Gone`] on a 404.
fn object_error(action: String, e: kube::Error) -> Error {
    match &e {
        kube::Error::Api(status) if status.code == 404 => Error::Gone(action),
        _ => Error::kube(action, e),
    }
}

async fn patch_status<K: Extension>(api: &Api<K>, name: &str, body: &Value) -> Result<(), Error> {
    api.patch_status(name, &patch_params(), &Patch::Merge(body))
        .await
        .map_err(|e| object_error(format!("patch status of {} {name}", K::KIND), e))?;
    Ok(())
}

async fn remove_operation_annotation<K: Extension>(api: &Api<K>, name: &str) -> Result<(), Error> {
    let body = json!({"metadata": {"annotations": {OPERATION_ANNOTATION: null}}});
    api.patch(name, &patch_params(), &Patch::Merge(&body))
        .await
        .map_err(|e| {
            object_error(
                format!("remove operation annotation of {} {name}", K::KIND),
                e,
            )
        })?;
    Ok(())
}

/// Add the finalizer with a JSON patch guarded by a `test` op (Kubernetes does
/// not deduplicate finalizers).
async fn add_finalizer<K: Extension>(api: &Api<K>, obj: &K) -> Result<(), Error> {
    let ops = match &obj.meta().finalizers {
        None => json!([
            {"op": "test", "path": "/metadata/finalizers", "value": null},
            {"op": "add", "path": "/metadata/finalizers", "value": [K::FINALIZER]},
        ]),
        Some(current) => json!([
            {"op": "test", "path": "/metadata/finalizers", "value": current},
            {"op": "add", "path": "/metadata/finalizers/-", "value": K::FINALIZER},
        ]),
    };
    json_patch(api, obj, ops, "add finalizer to").await
}

async fn remove_finalizer<K: Extension>(api: &Api<K>, obj: &K) -> Result<(), Error> {
    let finalizers = obj.meta().finalizers.as_deref().unwrap_or_default();
    let Some(index) = finalizers.iter().position(|f| f == K::FINALIZER) else {
        return Ok(());
    };
    let path = format!("/metadata/finalizers/{index}");
    let ops = json!([
        {"op": "test", "path": path, "value": K::FINALIZER},
        {"op": "remove", "path": path},
    ]);
    json_patch(api, obj, ops, "remove finalizer from").await
}

async fn json_patch<K: Extension>(
    api: &Api<K>,
    obj: &K,
    ops: Value,
    what: &str,
) -> Result<(), Error> {
    let patch: json_patch::Patch = serde_json::from_value(ops)
        .map_err(|e| Error::Internal(format!("invalid JSON patch: {e}")))?;
    let name = obj.meta().name.as_deref().unwrap_or_default();
    api.patch::<K>(name, &patch_params(), &Patch::Json(patch))
        .await
        .map_err(|e| object_error(format!("{what} {} {}", K::KIND, key(obj)), e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::backoff_delay;
    use std::time::Duration;

    #[test]
    fn backoff_doubles_to_five_minutes() {
        let delays: Vec<u64> = (1..=11).map(|f| backoff_delay(f).as_secs()).collect();
        assert_eq!(delays, [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300]);
        assert_eq!(backoff_delay(0), Duration::from_secs(1));
    }
}
