//! The reconcile flow (§4.3) and the controller loop.

use std::future::Future;
use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::watcher;
use serde_json::{Value, json};

use super::apply::{self, Applied};
use super::operation::{
    self, FINALIZER, FORCE_DELETION_ANNOTATION, Gate, OPERATION_ANNOTATION, OperationType,
};
use super::{Context, Error, REQUEUE_AFTER, status};
use crate::ccm::{self, RenderInput};
use crate::gardener::ControlPlane;
use crate::gardener::{ObjectKind, ShootContext};

/// Labels of the CCM objects the controller watches for drift.
const OWNED_SELECTOR: &str = "app=kubernetes,role=cloud-controller-manager";

/// Run the controller until `shutdown` resolves. Watches ControlPlanes in all
/// namespaces and the CCM Deployments, Services and PodDisruptionBudgets it owns
/// (label-selected, so no other workload is cached). Our own status patches wake
/// the reconciler once more; that pass only reads (drift check) and writes nothing.
pub async fn run(ctx: Arc<Context>, shutdown: impl Future<Output = ()> + Send + Sync + 'static) {
    let client = ctx.client.clone();
    let owned = || watcher::Config::default().labels(OWNED_SELECTOR);
    Controller::new(
        Api::<ControlPlane>::all(client.clone()),
        watcher::Config::default().any_semantic(),
    )
    .owns(Api::<Deployment>::all(client.clone()), owned())
    .owns(Api::<Service>::all(client.clone()), owned())
    .owns(Api::<PodDisruptionBudget>::all(client), owned())
    .with_config(controller::Config::default().concurrency(ctx.concurrency))
    .graceful_shutdown_on(shutdown)
    .run(reconcile, error_policy, ctx)
    .for_each(|result| async move {
        match result {
            Ok((obj, action)) => tracing::debug!(object = %obj, ?action, "reconciled"),
            Err(controller::Error::ObjectNotFound(obj)) => {
                tracing::debug!(object = %obj, "ControlPlane gone")
            }
            Err(e) => tracing::warn!(error = %e, "reconcile failed"),
        }
    })
    .await;
}

/// Requeue with exponential backoff: 1 s doubling per consecutive failure, at
/// most 5 min (the failure was recorded by [`reconcile`]).
pub fn error_policy(cp: Arc<ControlPlane>, err: &Error, ctx: Arc<Context>) -> Action {
    let delay = ctx.current_delay(&key(&cp));
    tracing::warn!(controlplane = %key(&cp), error = %err, ?delay, "reconcile failed, requeueing");
    Action::requeue(delay)
}

fn key(cp: &ControlPlane) -> String {
    format!("{}/{}", cp.namespace(), cp.name())
}

/// Reconcile one ControlPlane, bounded by `ctx.timeout`.
/// A ControlPlane that failed is not retried before its backoff ends unless an
/// operation was requested since (see [`operation::trigger_hash`]).
pub async fn reconcile(cp: Arc<ControlPlane>, ctx: Arc<Context>) -> Result<Action, Error> {
    let key = key(&cp);
    let trigger = operation::trigger_hash(&cp);
    if let Some(wait) = ctx.backoff_pending(&key, trigger) {
        return Ok(Action::requeue(wait));
    }
    let result = match tokio::time::timeout(ctx.timeout, reconcile_inner(&cp, &ctx)).await {
        Ok(result) => result,
        Err(_) => Err(report_timeout(&cp, &ctx).await),
    };
    match &result {
        Ok(_) => ctx.reset_failures(&key),
        Err(_) => {
            ctx.record_failure(&key, trigger);
        }
    }
    result
}

async fn reconcile_inner(cp: &ControlPlane, ctx: &Context) -> Result<Action, Error> {
    let namespace = cp
        .metadata
        .namespace
        .as_deref()
        .ok_or(Error::Malformed("namespace"))?;
    let name = cp
        .metadata
        .name
        .as_deref()
        .ok_or(Error::Malformed("name"))?;
    let api: Api<ControlPlane> = Api::namespaced(ctx.client.clone(), namespace);

    let mut annotation = operation::operation_annotation(cp);
    let mut requested = false;
    match operation::gate(cp, &ctx.provider, &ctx.classes) {
        Gate::NotResponsible | Gate::WaitForState => return Ok(Action::await_change()),
        Gate::Proceed {
            remove_reconcile_annotation,
        } => {
            if remove_reconcile_annotation {
                remove_operation_annotation(&api, name).await?;
                annotation = None;
                requested = true;
            }
        }
    }
    let shoot = ctx.state.shoot(namespace)?;
    if operation::shoot_failed(&shoot) {
        return Ok(Action::await_change());
    }
    let op = operation::operation_type(cp, annotation);
    if operation::should_skip(cp, op) {
        return Ok(Action::await_change());
    }
    let settled = !requested
        && !operation::needs_operation(cp, annotation)
        && operation::has_finalizer(cp)
        && op == OperationType::Reconcile;
    if settled {
        // Nothing requested: only repair drift, silently; errors become a full
        // reconcile so they show up in the status.
        if let Ok(action) = apply_desired(cp, &shoot, ctx).await {
            return Ok(action);
        }
    }
    match op {
        OperationType::Migrate => migrate(&api, cp, ctx).await,
        OperationType::Delete => delete(&api, cp, &shoot, ctx).await,
        OperationType::Restore | OperationType::Create | OperationType::Reconcile => {
            apply_operation(&api, cp, &shoot, ctx, op).await
        }
    }
}

/// Render and ensure every object; the action says when to look again.
async fn apply_desired(
    cp: &ControlPlane,
    shoot: &ShootContext,
    ctx: &Context,
) -> Result<Action, Error> {
    let namespace = cp.namespace();
    let secret_ns = cp.spec.secret_ref.namespace.as_deref().unwrap_or(namespace);
    let credentials = ctx
        .state
        .object(ObjectKind::Secret, secret_ns, &cp.spec.secret_ref.name)
        .await?;
    let kube_apiserver_replicas = if shoot.hibernation_enabled() {
        Api::<Deployment>::namespaced(ctx.client.clone(), namespace)
            .get_opt("kube-apiserver")
            .await
            .map_err(|e| Error::kube(format!("get Deployment {namespace}/kube-apiserver"), e))?
            .and_then(|d| d.spec.and_then(|s| s.replicas))
    } else {
        None
    };
    let rendered = ccm::render(
        &RenderInput {
            cp,
            shoot,
            credentials: credentials.as_ref(),
            kube_apiserver_replicas,
            image_override: ctx.image_override.as_deref(),
        },
        &ctx.spec,
    )?;
    let mut written = 0;
    for obj in &rendered.objects {
        if apply::ensure(&ctx.client, obj).await? == Applied::Written {
            written += 1;
        }
    }
    tracing::debug!(controlplane = %key(cp), written, "desired state ensured");
    Ok(if rendered.requeue {
        Action::requeue(REQUEUE_AFTER)
    } else {
        Action::requeue(ctx.resync)
    })
}

async fn apply_operation(
    api: &Api<ControlPlane>,
    cp: &ControlPlane,
    shoot: &ShootContext,
    ctx: &Context,
    op: OperationType,
) -> Result<Action, Error> {
    let name = cp.name();
    if !operation::has_finalizer(cp) {
        add_finalizer(api, cp).await?;
    }
    patch_status(api, name, &status::processing(op, &(ctx.now)())).await?;
    match apply_desired(cp, shoot, ctx).await {
        Ok(action) => {
            patch_status(
                api,
                name,
                &status::succeeded(op, cp.metadata.generation, &(ctx.now)()),
            )
            .await?;
            if op == OperationType::Restore && action != Action::requeue(REQUEUE_AFTER) {
                remove_operation_annotation(api, name).await?;
            }
            Ok(action)
        }
        Err(e) => Err(report_error(api, cp, ctx, op, e).await),
    }
}

async fn delete(
    api: &Api<ControlPlane>,
    cp: &ControlPlane,
    shoot: &ShootContext,
    ctx: &Context,
) -> Result<Action, Error> {
    let op = OperationType::Delete;
    if !operation::has_finalizer(cp) {
        return Ok(Action::await_change());
    }
    let name = cp.name();
    patch_status(api, name, &status::processing(op, &(ctx.now)())).await?;
    let wait = if shoot.annotation_is_true(FORCE_DELETION_ANNOTATION) {
        None
    } else {
        Some((ctx.delete_wait, ctx.delete_poll))
    };
    let objects = ccm::deletion_order(cp, &ctx.spec);
    if let Err(e) = apply::delete_in_order(&ctx.client, &objects, wait).await {
        return Err(report_error(api, cp, ctx, op, e).await);
    }
    patch_status(
        api,
        name,
        &status::succeeded(op, cp.metadata.generation, &(ctx.now)()),
    )
    .await?;
    remove_finalizer(api, cp).await?;
    Ok(Action::await_change())
}

/// Migrate keeps the CCM objects (the shoot's own leader election keeps two CCMs
/// apart) and drops every finalizer and the operation annotation.
async fn migrate(
    api: &Api<ControlPlane>,
    cp: &ControlPlane,
    ctx: &Context,
) -> Result<Action, Error> {
    let op = OperationType::Migrate;
    let name = cp.name();
    patch_status(api, name, &status::processing(op, &(ctx.now)())).await?;
    patch_status(
        api,
        name,
        &status::succeeded(op, cp.metadata.generation, &(ctx.now)()),
    )
    .await?;
    let body =
        json!({"metadata": {"finalizers": null, "annotations": {OPERATION_ANNOTATION: null}}});
    api.patch(name, &PatchParams::default(), &Patch::Merge(&body))
        .await
        .map_err(|e| Error::kube(format!("remove finalizers of ControlPlane {}", key(cp)), e))?;
    Ok(Action::await_change())
}

/// After a timeout, record it in the status when an operation was under way
/// (best effort, bounded by [`STATUS_AFTER_TIMEOUT`] or the reconciliation
/// timeout, whichever is shorter).
async fn report_timeout(cp: &ControlPlane, ctx: &Context) -> Error {
    let err = Error::Timeout(ctx.timeout);
    let (Some(namespace), Some(name)) = (
        cp.metadata.namespace.as_deref(),
        cp.metadata.name.as_deref(),
    ) else {
        return err;
    };
    let annotation = operation::operation_annotation(cp).filter(|a| *a != "reconcile");
    let op = operation::operation_type(cp, annotation);
    let api: Api<ControlPlane> = Api::namespaced(ctx.client.clone(), namespace);
    let body = status::error(op, cp.metadata.generation, &err.to_string(), &(ctx.now)());
    let bound = STATUS_AFTER_TIMEOUT.min(ctx.timeout);
    match tokio::time::timeout(bound, patch_status(&api, name, &body)).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            tracing::warn!(controlplane = %key(cp), error = %e, "could not record the timeout")
        }
        Err(_) => tracing::warn!(controlplane = %key(cp), "could not record the timeout in time"),
    }
    err
}

/// How long recording a timeout in the status may take.
const STATUS_AFTER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Write the Error status (best effort, as Gardener does) and hand back the cause.
async fn report_error(
    api: &Api<ControlPlane>,
    cp: &ControlPlane,
    ctx: &Context,
    op: OperationType,
    err: Error,
) -> Error {
    let body = status::error(op, cp.metadata.generation, &err.to_string(), &(ctx.now)());
    if let Err(e) = patch_status(api, cp.name(), &body).await {
        tracing::warn!(controlplane = %key(cp), error = %e, "could not write the error status");
    }
    err
}

async fn patch_status(api: &Api<ControlPlane>, name: &str, body: &Value) -> Result<(), Error> {
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(body))
        .await
        .map_err(|e| Error::kube(format!("patch status of ControlPlane {name}"), e))?;
    Ok(())
}

async fn remove_operation_annotation(api: &Api<ControlPlane>, name: &str) -> Result<(), Error> {
    let body = json!({"metadata": {"annotations": {OPERATION_ANNOTATION: null}}});
    api.patch(name, &PatchParams::default(), &Patch::Merge(&body))
        .await
        .map_err(|e| {
            Error::kube(
                format!("remove operation annotation of ControlPlane {name}"),
                e,
            )
        })?;
    Ok(())
}

/// Add the finalizer with a JSON patch guarded by a `test` op (Kubernetes does
/// not deduplicate finalizers).
async fn add_finalizer(api: &Api<ControlPlane>, cp: &ControlPlane) -> Result<(), Error> {
    let ops = match &cp.metadata.finalizers {
        None => json!([
            {"op": "test", "path": "/metadata/finalizers", "value": null},
            {"op": "add", "path": "/metadata/finalizers", "value": [FINALIZER]},
        ]),
        Some(current) => json!([
            {"op": "test", "path": "/metadata/finalizers", "value": current},
            {"op": "add", "path": "/metadata/finalizers/-", "value": FINALIZER},
        ]),
    };
    json_patch_cp(api, cp, ops, "add finalizer to").await
}

async fn remove_finalizer(api: &Api<ControlPlane>, cp: &ControlPlane) -> Result<(), Error> {
    let finalizers = cp.metadata.finalizers.as_deref().unwrap_or_default();
    let Some(index) = finalizers.iter().position(|f| f == FINALIZER) else {
        return Ok(());
    };
    let path = format!("/metadata/finalizers/{index}");
    let ops = json!([
        {"op": "test", "path": path, "value": FINALIZER},
        {"op": "remove", "path": path},
    ]);
    json_patch_cp(api, cp, ops, "remove finalizer from").await
}

async fn json_patch_cp(
    api: &Api<ControlPlane>,
    cp: &ControlPlane,
    ops: Value,
    what: &str,
) -> Result<(), Error> {
    let patch: json_patch::Patch = serde_json::from_value(ops)
        .map_err(|e| Error::Internal(format!("invalid JSON patch: {e}")))?;
    api.patch::<ControlPlane>(cp.name(), &PatchParams::default(), &Patch::Json(patch))
        .await
        .map_err(|e| Error::kube(format!("{what} ControlPlane {}", key(cp)), e))?;
    Ok(())
}
