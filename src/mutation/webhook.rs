//! The shell around the pure engine: the [`Mutator`] the HTTPS server calls.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;

use super::context::Objects;
use super::dispatch::{Skip, dispatch};
use super::engine::{Engine, Mutation, Need};
use crate::admission::{AdmissionRequest, Denial, Mutator, Operation, ReviewError, Verdict};
use crate::profile::osc::NamespaceRef;
use crate::state::StateSource;

/// Mutates control-plane objects with an [`Engine`], reading the shoot context
/// and the needed Secrets/ConfigMaps from a [`StateSource`].
#[derive(Clone)]
pub struct WebhookMutator {
    engine: Engine,
    state: Arc<dyn StateSource>,
}

impl WebhookMutator {
    pub fn new(engine: Engine, state: Arc<dyn StateSource>) -> Self {
        WebhookMutator { engine, state }
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    pub fn state(&self) -> &dyn StateSource {
        self.state.as_ref()
    }

    async fn decide(&self, request: &AdmissionRequest) -> Result<Verdict, Denial> {
        let Outcome::Mutated(m) =
            mutate_request(&self.engine, self.state.as_ref(), request).await?
        else {
            return Ok(Verdict::Unchanged);
        };
        let patch = m.patch();
        if patch.0.is_empty() {
            Ok(Verdict::Unchanged)
        } else {
            Ok(Verdict::Patched(patch))
        }
    }
}

/// What happened to a request.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome<'a> {
    /// Passed unchanged without running rules, and why.
    Skipped(&'static str),
    /// The rules ran (the object may be unchanged).
    Mutated(Box<Mutation<'a>>),
}

/// The whole webhook decision for one request: operation and dispatch checks,
/// shoot lookup, fetching the needed objects, then the pure engine. Shared by
/// the server ([`WebhookMutator`]) and `scion mutate`.
pub async fn mutate_request<'a>(
    engine: &Engine,
    state: &dyn StateSource,
    request: &'a AdmissionRequest,
) -> Result<Outcome<'a>, Denial> {
    if !matches!(request.operation, Operation::Create | Operation::Update) {
        return Ok(Outcome::Skipped("operation is neither CREATE nor UPDATE"));
    }
    let Some(object) = request.object.as_ref() else {
        return Err(Denial::BadObject(format!(
            "{} request for {} has no object",
            request.operation.as_str(),
            request.kind.kind
        )));
    };
    if !object.is_object() {
        return Err(Denial::BadObject(format!(
            "the {} is not a JSON object",
            request.kind.kind
        )));
    }
    let target = match dispatch(&request.kind, object) {
        Ok(target) => target,
        Err(Skip::NotTargeted) => return Ok(Outcome::Skipped("kind and name are not a target")),
        Err(Skip::BeingDeleted) => return Ok(Outcome::Skipped("object has a deletionTimestamp")),
        Err(Skip::NotReconcile) => {
            return Ok(Outcome::Skipped(
                "OperatingSystemConfig purpose is not reconcile (provision OSCs pass unchanged)",
            ));
        }
    };
    let namespace = if request.namespace.is_empty() {
        object
            .get("metadata")
            .and_then(|m| m.get("namespace"))
            .and_then(Value::as_str)
            .unwrap_or_default()
    } else {
        request.namespace.as_str()
    };
    let shoot = shoot_of(state, target, namespace).await?;
    let mut objects = fetch(engine, state, target, object, &shoot, namespace).await?;
    objects.old = request.old_object.clone();
    engine
        .mutate(target, object, &shoot, &objects)
        .map(|m| Outcome::Mutated(Box::new(m)))
}

/// The shoot context of `namespace` for `target`. The seedprovider webhook
/// does not read the Cluster (Gardener's Etcd ensurers need none; the
/// garden's virtual-garden Etcds have none), so an Etcd without one gets an
/// empty context.
pub async fn shoot_of(
    state: &dyn StateSource,
    target: &crate::profile::Target,
    namespace: &str,
) -> Result<std::sync::Arc<crate::gardener::ShootContext>, Denial> {
    match state.lookup_shoot(namespace).await {
        Ok(shoot) => Ok(shoot),
        Err(crate::state::StateError::ClusterNotFound { .. }) if target.is_etcd() => {
            Ok(std::sync::Arc::new(crate::gardener::ShootContext::new(
                namespace,
                semver::Version::new(0, 0, 0),
            )))
        }
        Err(e) => Err(Denial::Forbidden(e.to_string())),
    }
}

/// The objects the engine needs for this object, from the state source.
pub async fn fetch(
    engine: &Engine,
    state: &dyn StateSource,
    target: &crate::profile::Target,
    object: &Value,
    shoot: &crate::gardener::ShootContext,
    namespace: &str,
) -> Result<Objects, Denial> {
    let mut objects = Objects::new();
    for need in engine.needs(target, object, shoot)? {
        let (kind, need_namespace, name, optional) = match need {
            Need::Object {
                kind,
                namespace,
                name,
                optional,
            } => (kind, namespace, name, optional),
            Need::LabelledSecrets { key, value } => {
                objects.labelled = state
                    .list_labelled(crate::gardener::ObjectKind::Secret, (&key, &value))
                    .await
                    .map_err(|e| Denial::Forbidden(e.to_string()))?;
                continue;
            }
            Need::BackupBucket { name } => {
                let found = state
                    .backup_bucket(&name)
                    .await
                    .map_err(|e| Denial::Forbidden(e.to_string()))?;
                match found {
                    Some(config) => objects.backup_bucket = Some(config),
                    None => {
                        return Err(Denial::Forbidden(format!(
                            "could not get BackupBucket {name:?}: not found"
                        )));
                    }
                }
                continue;
            }
        };
        let in_namespace = match need_namespace {
            NamespaceRef::Object => Some(namespace),
            NamespaceRef::TechnicalId => shoot.technical_id().filter(|id| !id.is_empty()),
        };
        let found = match in_namespace {
            Some(ns) => state
                .object(kind, ns, &name)
                .await
                .map_err(|e| Denial::Forbidden(e.to_string()))?,
            None => None,
        };
        match found {
            Some(data) => {
                objects.insert((kind, need_namespace, name), data);
            }
            None if optional => {}
            None => {
                return Err(Denial::Forbidden(format!(
                    "could not get {} '{}/{}': not found",
                    kind.word(),
                    in_namespace.unwrap_or_default(),
                    name
                )));
            }
        }
    }
    Ok(objects)
}

impl Mutator for WebhookMutator {
    fn decode(&self, body: &[u8]) -> Result<AdmissionRequest, ReviewError> {
        crate::decode::review(body, self.engine.reach())
    }

    fn mutate<'a>(
        &'a self,
        request: &'a AdmissionRequest,
    ) -> BoxFuture<'a, Result<Verdict, Denial>> {
        Box::pin(self.decide(request))
    }

    /// The engine reads the budget in every loop that grows with the
    /// object (issue 27), and the state source's futures wait on the
    /// informer cache or the API server without blocking.
    fn yields(&self) -> bool {
        true
    }
}
