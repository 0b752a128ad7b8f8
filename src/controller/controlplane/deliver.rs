//! Writing and deleting ManagedResources the way Gardener's builder does
//! (`pkg/utils/managedresources/builder`), and the shoot access Secret.
//!
//! Apply: the ManagedResource is written only when its spec differs from the
//! desired one (a content change means a new Secret name, so the spec always
//! moves with the content); the Secret first (content-addressed and
//! immutable: an existing one is the same), then the ManagedResource — created,
//! or replaced with its other labels and annotations kept and the reference
//! annotations recomputed — after marking the Secrets it referenced before
//! garbage-collectable. An existing ManagedResource of the same name (the Go
//! extension's) is taken over the same way: no second one appears, GRM's
//! garbage collector deletes the Secret it no longer references, and the
//! objects scion does not render are kept in a Secret of their own
//! ([`takeover`]: decided before any write; refused, writing nothing, when a
//! referenced Secret cannot be read).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;

use super::Planned;
use crate::controller::Error;
use crate::gardener::ManagedResource;
use crate::gardener::managedresource::{
    GARBAGE_COLLECTABLE_LABEL, LocalObjectReference, REFERENCE_ANNOTATION_PREFIX, RESOURCES_APPLIED,
};
use crate::managedresources::takeover;
use crate::render::DesiredObject;

/// Write `planned` unless the live ManagedResource already has its spec, and
/// keep what [`takeover::plan`] keeps of the live one (`rendered`: the keys of
/// every object scion renders for the same cluster). Returns the objects kept
/// (`Kind ns/name`); a take-over the plan refuses is an error and writes
/// nothing. The Secret is encoded only to be written.
pub(super) async fn apply(
    client: &kube::Client,
    planned: &Planned<'_>,
    rendered: &BTreeSet<takeover::ObjectKey>,
) -> Result<Vec<String>, Error> {
    let ns = planned.namespace;
    let name = planned.name;
    let what = format!("ManagedResource {ns}/{name}");
    let api: Api<ManagedResource> = Api::namespaced(client.clone(), ns);
    let mut desired: ManagedResource = serde_json::from_value(planned.managed_resource.clone())
        .map_err(|e| Error::Internal(format!("{what}: {e}")))?;
    let live = api
        .get_opt(name)
        .await
        .map_err(|e| Error::kube(format!("get {what}"), e))?;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), ns);
    let kept = match &live {
        None => Vec::new(),
        Some(live) => {
            let mut referenced = Vec::new();
            let ours = rendered_secret(live);
            for reference in &live.spec.secret_refs {
                // The plan never reads scion's own Secret (what scion no
                // longer renders goes), so it is not fetched: a storm's
                // reconcile read 5 of them, 182 KB for aws with CSI, for
                // nothing. With the decode the bundle's keys replace, this
                // took the controller's CPU in the storm from 8.3 to 3.6 ms
                // per ControlPlane, the fake API server's from 7.2 to 6.0 ms
                // (docs/performance.md).
                if Some(reference.name.as_str()) == ours {
                    continue;
                }
                let secret = secrets
                    .get_opt(&reference.name)
                    .await
                    .map_err(|e| Error::kube(format!("get Secret {ns}/{}", reference.name), e))?;
                let secret = secret
                    .map(serde_json::to_value)
                    .transpose()
                    .map_err(|e| Error::Internal(format!("Secret {}: {e}", reference.name)))?;
                referenced.push((reference.name.clone(), secret));
            }
            let live =
                serde_json::to_value(live).map_err(|e| Error::Internal(format!("{what}: {e}")))?;
            takeover::plan(&live, &referenced, rendered).map_err(Error::TakeOver)?
        }
    };
    let mut to_create = Vec::new();
    if !kept.is_empty() {
        let (kept_name, kept_secret) = takeover::kept_secret(ns, name, &kept)
            .map_err(|e| Error::Internal(format!("encoding the kept objects of {what}: {e}")))?;
        desired.spec.secret_refs.push(LocalObjectReference {
            name: kept_name.clone(),
        });
        desired
            .metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(
                crate::managedresources::reference_annotation("secret", &kept_name),
                kept_name.clone(),
            );
        to_create.push((kept_name, kept_secret));
    }
    let kept_names: Vec<String> = kept
        .iter()
        .map(|o| takeover::describe(&takeover::key(o)))
        .collect();
    if let Some(live) = &live
        && live.spec == desired.spec
        && references(live) == references(&desired)
        && rendered_secret(live) == Some(planned.secret_name.as_str())
    {
        return Ok(kept_names);
    }
    let bundle = planned.bundle()?;
    if bundle.secret_name != planned.secret_name {
        // Unreachable but for a SHA-256 collision of two renders of this
        // ManagedResource (`managedresources::memo`): refused rather than
        // referencing a Secret of other bytes.
        return Err(Error::Internal(format!(
            "{what}: the remembered Secret name {} is not the encoded {}",
            planned.secret_name, bundle.secret_name
        )));
    }
    to_create.insert(0, (bundle.secret_name.clone(), bundle.secret.clone()));
    for (secret_name, secret) in to_create {
        let secret: Secret = serde_json::from_value(secret)
            .map_err(|e| Error::Internal(format!("Secret of {what}: {e}")))?;
        match secrets.create(&PostParams::default(), &secret).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 409 => {}
            Err(e) => {
                return Err(Error::kube(format!("create Secret {ns}/{secret_name}"), e));
            }
        }
    }
    let references = references(&desired);
    let mark = |annotations: &mut BTreeMap<String, String>| {
        annotations.retain(|k, _| !k.starts_with(REFERENCE_ANNOTATION_PREFIX));
        annotations.extend(references.iter().cloned());
        annotations.insert(
            takeover::RENDERED_SECRET_ANNOTATION.to_owned(),
            bundle.secret_name.clone(),
        );
    };
    match live {
        None => {
            mark(
                desired
                    .metadata
                    .annotations
                    .get_or_insert_with(Default::default),
            );
            api.create(&PostParams::default(), &desired)
                .await
                .map_err(|e| Error::kube(format!("create {what}"), e))?;
        }
        Some(mut live) => {
            for old in &live.spec.secret_refs {
                if !desired.spec.secret_refs.iter().any(|r| r.name == old.name) {
                    mark_garbage_collectable(&secrets, ns, &old.name).await?;
                }
            }
            live.spec = desired.spec;
            mark(
                live.metadata
                    .annotations
                    .get_or_insert_with(Default::default),
            );
            api.replace(name, &PostParams::default(), &live)
                .await
                .map_err(|e| Error::kube(format!("update {what}"), e))?;
        }
    }
    if kept_names.is_empty() {
        tracing::info!(managed_resource = %format!("{ns}/{name}"), secret = %bundle.secret_name, "ManagedResource written");
    } else {
        tracing::warn!(managed_resource = %format!("{ns}/{name}"), secret = %bundle.secret_name, kept = %kept_names.join(", "), "ManagedResource written; kept the objects scion does not render");
    }
    Ok(kept_names)
}

/// The Secret scion last wrote into `mr` ([`takeover::RENDERED_SECRET_ANNOTATION`]).
fn rendered_secret(mr: &ManagedResource) -> Option<&str> {
    mr.metadata
        .annotations
        .as_ref()?
        .get(takeover::RENDERED_SECRET_ANNOTATION)
        .map(String::as_str)
}

fn references(mr: &ManagedResource) -> Vec<(String, String)> {
    mr.metadata
        .annotations
        .iter()
        .flatten()
        .filter(|(k, _)| k.starts_with(REFERENCE_ANNOTATION_PREFIX))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Label an old Secret garbage-collectable unless it already is (a missing one is fine).
async fn mark_garbage_collectable(
    secrets: &Api<Secret>,
    ns: &str,
    name: &str,
) -> Result<(), Error> {
    let Some(secret) = secrets
        .get_opt(name)
        .await
        .map_err(|e| Error::kube(format!("get Secret {ns}/{name}"), e))?
    else {
        return Ok(());
    };
    let labelled = secret
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(GARBAGE_COLLECTABLE_LABEL))
        .is_some_and(|v| v == "true");
    if !labelled {
        let body = json!({"metadata": {"labels": {GARBAGE_COLLECTABLE_LABEL: "true"}}});
        secrets
            .patch(name, &PatchParams::default(), &Patch::Merge(&body))
            .await
            .map_err(|e| Error::kube(format!("label Secret {ns}/{name} garbage-collectable"), e))?;
    }
    Ok(())
}

/// The shoot access Secret: created when missing, its labels and annotations
/// merged in when they are not all there; `data` is the token requestor's.
pub(super) async fn ensure_access_secret(
    client: &kube::Client,
    desired: &DesiredObject,
) -> Result<(), Error> {
    let ns = desired.namespace.as_str();
    let name = desired.name.as_str();
    let api: Api<Secret> = Api::namespaced(client.clone(), ns);
    let live = api
        .get_opt(name)
        .await
        .map_err(|e| Error::kube(format!("get Secret {ns}/{name}"), e))?;
    match live {
        None => {
            let secret: Secret = serde_json::from_value(desired.object.clone())
                .map_err(|e| Error::Internal(format!("Secret {ns}/{name}: {e}")))?;
            api.create(&PostParams::default(), &secret)
                .await
                .map_err(|e| Error::kube(format!("create Secret {ns}/{name}"), e))?;
        }
        Some(live) => {
            let has_all =
                |field: &str, have: &Option<std::collections::BTreeMap<String, String>>| {
                    desired.object["metadata"][field]
                        .as_object()
                        .into_iter()
                        .flatten()
                        .all(|(k, v)| {
                            have.as_ref().and_then(|m| m.get(k)).map(String::as_str) == v.as_str()
                        })
                };
            if !has_all("labels", &live.metadata.labels)
                || !has_all("annotations", &live.metadata.annotations)
            {
                let body = json!({"metadata": {
                    "labels": desired.object["metadata"]["labels"],
                    "annotations": desired.object["metadata"]["annotations"],
                }});
                api.patch(name, &PatchParams::default(), &Patch::Merge(&body))
                    .await
                    .map_err(|e| Error::kube(format!("patch Secret {ns}/{name}"), e))?;
            }
        }
    }
    Ok(())
}

/// Delete a Secret; a missing one is fine.
pub(super) async fn delete_secret(
    client: &kube::Client,
    ns: &str,
    name: &str,
) -> Result<(), Error> {
    match Api::<Secret>::namespaced(client.clone(), ns)
        .delete(name, &DeleteParams::default())
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(Error::kube(format!("delete Secret {ns}/{name}"), e)),
    }
}

/// `SetKeepObjects(true)`: a merge patch; a missing ManagedResource is fine.
pub(super) async fn keep_objects(client: &kube::Client, ns: &str, name: &str) -> Result<(), Error> {
    let body = json!({"spec": {"keepObjects": true}});
    match Api::<ManagedResource>::namespaced(client.clone(), ns)
        .patch(name, &PatchParams::default(), &Patch::Merge(&body))
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(Error::kube(
            format!("could not update managed resource '{ns}/{name}'"),
            e,
        )),
    }
}

/// Deleting ManagedResources of one namespace and waiting for GRM.
pub(super) struct ManagedResources<'a> {
    client: &'a kube::Client,
    ns: &'a str,
    /// `None`: force deletion, no waits.
    wait: Option<(Duration, Duration)>,
}

impl<'a> ManagedResources<'a> {
    pub fn new(client: &'a kube::Client, ns: &'a str, wait: Option<(Duration, Duration)>) -> Self {
        ManagedResources { client, ns, wait }
    }

    fn api(&self) -> Api<ManagedResource> {
        Api::namespaced(self.client.clone(), self.ns)
    }

    /// `managedresources.Delete`: the ManagedResource, the Secret of its name
    /// (the unhashed name of older Gardener versions) and every Secret it references.
    pub async fn delete(&self, name: &str) -> Result<(), Error> {
        let ns = self.ns;
        let live = self
            .api()
            .get_opt(name)
            .await
            .map_err(|e| Error::kube(format!("get ManagedResource {ns}/{name}"), e))?;
        let mut secrets = vec![name.to_string()];
        if let Some(live) = &live {
            match self.api().delete(name, &DeleteParams::default()).await {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => {
                    return Err(Error::kube(
                        format!("delete ManagedResource {ns}/{name}"),
                        e,
                    ));
                }
            }
            secrets.extend(live.spec.secret_refs.iter().map(|r| r.name.clone()));
        }
        for secret in secrets {
            delete_secret(self.client, ns, &secret).await?;
        }
        Ok(())
    }

    /// `WaitUntilDeleted`: poll until the ManagedResource is gone (GRM removed
    /// its finalizer after deleting the objects); skipped for force deletion.
    pub async fn wait_deleted(&self, name: &str) -> Result<(), Error> {
        let Some((budget, interval)) = self.wait else {
            return Ok(());
        };
        let ns = self.ns;
        let deadline = tokio::time::Instant::now() + budget;
        loop {
            let live = self
                .api()
                .get_opt(name)
                .await
                .map_err(|e| Error::kube(format!("get ManagedResource {ns}/{name}"), e))?;
            let Some(live) = live else { return Ok(()) };
            if tokio::time::Instant::now() + interval > deadline {
                let err = format!(
                    "retry failed with context deadline exceeded, last error: resource {ns}/{name} still exists"
                );
                return Err(Error::DeletionTimeout(deletion_message(&live, err)));
            }
            tokio::time::sleep(interval).await;
        }
    }
}

/// The wait error, with GRM's message when `ResourcesApplied` says why the
/// deletion is stuck (reasons `DeletionFailed`, `DeletionPending`).
fn deletion_message(live: &ManagedResource, err: String) -> String {
    match live.condition(RESOURCES_APPLIED) {
        Some(c)
            if c.status != "True"
                && matches!(c.reason.as_str(), "DeletionFailed" | "DeletionPending") =>
        {
            format!(
                "error while waiting for all resources to be deleted: {err}:\n{}",
                c.message
            )
        }
        _ => err,
    }
}
