//! The secrets manager's I/O: list the Secrets of the identity, create what
//! [`crate::secrets::plan`] decides, delete the stale ones — never one the
//! running CCM still mounts, so a renewed certificate replaces the old one
//! without a gap.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DeleteParams, ListParams, PostParams};

use super::ControlPlaneActuator;
use crate::controller::Error;
use crate::gardener::ShootContext;
use crate::secrets::{self, CaRotation, Plan, Request};

/// The label selector of the secrets manager's Secrets (provider filled in).
pub const IDENTITY_SELECTOR: &str = "managed-by=secrets-manager,manager-identity=";

fn selector(provider: &str) -> String {
    format!("{IDENTITY_SELECTOR}{}", secrets::identity(provider))
}

async fn list(actuator: &ControlPlaneActuator, namespace: &str) -> Result<Vec<Secret>, Error> {
    let api: Api<Secret> = Api::namespaced(actuator.client.clone(), namespace);
    let list = api
        .list(&ListParams::default().labels(&selector(&actuator.provider)))
        .await
        .map_err(|e| {
            Error::kube(
                format!("list the secrets manager's Secrets in {namespace}"),
                e,
            )
        })?;
    Ok(list.items)
}

/// The shoot's CA rotation as the secrets manager reads it.
fn rotation(shoot: &ShootContext) -> CaRotation {
    let ca = shoot.ca_rotation();
    CaRotation {
        last_initiation: ca
            .last_initiation_time
            .as_deref()
            .and_then(secrets::unix_seconds),
        completing: ca.phase.as_deref() == Some("Completing"),
    }
}

/// Plan the CA, bundle and serving certificate against the Secrets in the
/// namespace, writing nothing. What is missing is generated, to be created
/// ([`ensure`]).
pub(super) async fn plan(
    actuator: &ControlPlaneActuator,
    namespace: &str,
    shoot: &ShootContext,
) -> Result<Plan, Error> {
    planned(actuator, namespace, shoot, secrets::plan).await
}

/// [`plan`] for a reader that creates nothing (`scion check`): what is
/// missing is a placeholder ([`secrets::plan_offline`]), so no keys are
/// generated for nothing and the same namespace gives the same answer.
pub(super) async fn plan_offline(
    actuator: &ControlPlaneActuator,
    namespace: &str,
    shoot: &ShootContext,
) -> Result<Plan, Error> {
    planned(actuator, namespace, shoot, secrets::plan_offline).await
}

async fn planned(
    actuator: &ControlPlaneActuator,
    namespace: &str,
    shoot: &ShootContext,
    plan: fn(&Request<'_>) -> Result<Plan, secrets::SecretsError>,
) -> Result<Plan, Error> {
    let existing = list(actuator, namespace).await?;
    Ok(plan(&Request {
        provider: &actuator.provider,
        namespace,
        now: (actuator.now_unix)(),
        rotation: rotation(shoot),
        existing: &existing,
        certificates: &actuator.spec.certificates(),
    })?)
}

/// Plan the CA, bundle and serving certificate and create what is missing.
pub(super) async fn ensure(
    actuator: &ControlPlaneActuator,
    namespace: &str,
    shoot: &ShootContext,
) -> Result<Plan, Error> {
    let plan = plan(actuator, namespace, shoot).await?;
    let api: Api<Secret> = Api::namespaced(actuator.client.clone(), namespace);
    for object in &plan.create {
        let secret: Secret = serde_json::from_value(object.clone())
            .map_err(|e| Error::Internal(format!("generated Secret: {e}")))?;
        let name = secret.metadata.name.clone().unwrap_or_default();
        match api.create(&PostParams::default(), &secret).await {
            Ok(_) => tracing::info!(secret = %format!("{namespace}/{name}"), "generated secret"),
            // Content-addressed and immutable: the same name is the same Secret.
            Err(kube::Error::Api(s)) if s.code == 409 => {}
            Err(e) => return Err(Error::kube(format!("create Secret {namespace}/{name}"), e)),
        }
    }
    Ok(plan)
}

/// `Cleanup`: delete the stale Secrets, except those a live Deployment that
/// mounts a serving certificate (`mounting`: the CCM's, a webhook's) still
/// mounts (GRM rolls it to the new certificate; the next operation deletes
/// the old one).
pub(super) async fn cleanup(
    actuator: &ControlPlaneActuator,
    namespace: &str,
    plan: &Plan,
    mounting: &[String],
) -> Result<(), Error> {
    if plan.stale.is_empty() {
        return Ok(());
    }
    let mut mounted = Vec::new();
    for deployment in mounting {
        mounted.extend(mounted_secrets(actuator, namespace, deployment).await?);
    }
    for name in plan.stale.iter().filter(|n| !mounted.contains(n)) {
        delete(actuator, namespace, name).await?;
    }
    Ok(())
}

/// Every Secret of the identity (on deletion and migration).
pub(super) async fn delete_all(
    actuator: &ControlPlaneActuator,
    namespace: &str,
) -> Result<(), Error> {
    for secret in list(actuator, namespace).await? {
        if let Some(name) = &secret.metadata.name {
            delete(actuator, namespace, name).await?;
        }
    }
    Ok(())
}

async fn delete(actuator: &ControlPlaneActuator, namespace: &str, name: &str) -> Result<(), Error> {
    let api: Api<Secret> = Api::namespaced(actuator.client.clone(), namespace);
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => {
            tracing::info!(secret = %format!("{namespace}/{name}"), "deleted stale secret");
            Ok(())
        }
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(Error::kube(format!("delete Secret {namespace}/{name}"), e)),
    }
}

/// The seed Deployments of a render whose pod templates mount one of the
/// serving certificates: those whose live copies `cleanup` asks.
pub(super) fn mounting(rendered: &crate::render::Rendered, plan: &Plan) -> Vec<String> {
    let certificates: Vec<&String> = plan.certificates.secrets.values().collect();
    rendered
        .seed
        .iter()
        .filter(|o| o.kind == "Deployment")
        .filter(|o| {
            o.object
                .pointer("/spec/template/spec/volumes")
                .and_then(serde_json::Value::as_array)
                .is_some_and(|volumes| {
                    volumes.iter().any(|v| {
                        v.pointer("/secret/secretName")
                            .and_then(serde_json::Value::as_str)
                            .is_some_and(|s| certificates.iter().any(|c| c.as_str() == s))
                    })
                })
        })
        .map(|o| o.name.clone())
        .collect()
}

/// The Secret volumes of a live Deployment's pod template.
async fn mounted_secrets(
    actuator: &ControlPlaneActuator,
    namespace: &str,
    name: &str,
) -> Result<Vec<String>, Error> {
    let live = Api::<Deployment>::namespaced(actuator.client.clone(), namespace)
        .get_opt(name)
        .await
        .map_err(|e| Error::kube(format!("get Deployment {namespace}/{name}"), e))?;
    Ok(live
        .and_then(|d| d.spec)
        .and_then(|s| s.template.spec)
        .and_then(|s| s.volumes)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|v| v.secret.and_then(|s| s.secret_name))
        .collect())
}
