//! An immutable, in-memory state: the shoot contexts and namespaced objects at
//! one point in time. The objects-directory source swaps whole snapshots; tests
//! and `scion mutate` build one directly.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;

use super::{StateError, StateSource};
use crate::gardener::{ObjectData, ObjectKind, ShootContext};

/// Shoot contexts by namespace, Secrets/ConfigMaps by (kind, namespace, name),
/// and raw ControlPlanes by (namespace, name).
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    shoots: HashMap<String, Arc<ShootContext>>,
    /// Clusters that exist but could not be projected, by name: their lookups
    /// answer with the projection error rather than "not found".
    malformed: HashMap<String, StateError>,
    objects: BTreeMap<(ObjectKind, String, String), ObjectData>,
    /// BackupBuckets by name: their `spec.providerConfig`.
    backup_buckets: BTreeMap<String, Value>,
    controlplanes: BTreeMap<(String, String), Value>,
}

impl Snapshot {
    /// Add (or replace) the shoot context of the Cluster named `ctx.cluster_name`.
    pub fn insert_shoot(&mut self, ctx: ShootContext) {
        self.insert_shared_shoot(Arc::new(ctx));
    }

    /// Like [`Snapshot::insert_shoot`], sharing a context that is already in an `Arc`.
    pub fn insert_shared_shoot(&mut self, ctx: Arc<ShootContext>) {
        self.malformed.remove(&ctx.cluster_name);
        self.shoots.insert(ctx.cluster_name.clone(), ctx);
    }

    /// Record a Cluster that could not be projected (a
    /// [`StateError::ClusterMalformed`] naming it); replaces its context.
    pub fn insert_malformed(&mut self, error: StateError) {
        let name = match &error {
            StateError::ClusterMalformed(e) => e.name.clone(),
            StateError::ClusterNotFound { name } | StateError::NotSynced { name } => name.clone(),
            StateError::Api { .. } => return,
        };
        self.shoots.remove(&name);
        self.malformed.insert(name, error);
    }

    /// Add (or replace) a raw ControlPlane object.
    pub fn insert_controlplane(&mut self, namespace: &str, name: &str, object: Value) {
        self.controlplanes
            .insert((namespace.to_string(), name.to_string()), object);
    }

    /// The ControlPlane `namespace/name`, raw.
    pub fn controlplane(&self, namespace: &str, name: &str) -> Option<&Value> {
        self.controlplanes
            .get(&(namespace.to_string(), name.to_string()))
    }

    /// All ControlPlanes, ordered by namespace and name.
    pub fn controlplanes(&self) -> impl Iterator<Item = &Value> {
        self.controlplanes.values()
    }

    /// Add (or replace) a Secret or ConfigMap.
    pub fn insert_object(&mut self, namespace: &str, name: &str, data: ObjectData) {
        let kind = data.kind();
        self.objects
            .insert((kind, namespace.to_string(), name.to_string()), data);
    }

    /// Number of shoot contexts.
    /// Add a BackupBucket's `spec.providerConfig`.
    pub fn insert_backup_bucket(&mut self, name: &str, provider_config: Value) {
        self.backup_buckets
            .insert(name.to_string(), provider_config);
    }

    /// The objects of `kind` labelled `label`, in all namespaces.
    pub fn labelled(&self, kind: ObjectKind, label: (&str, &str)) -> Vec<ObjectData> {
        self.objects
            .iter()
            .filter(|((k, _, _), data)| {
                *k == kind && data.labels().get(label.0).is_some_and(|v| v == label.1)
            })
            .map(|(_, data)| data.clone())
            .collect()
    }

    /// The objects of `kind` in `namespace` carrying every label of
    /// `selector`, with their names, in name order (the secrets manager's
    /// Secrets for `scion render`).
    pub fn selected(
        &self,
        kind: ObjectKind,
        namespace: &str,
        selector: &[(&str, &str)],
    ) -> Vec<(String, ObjectData)> {
        self.objects
            .iter()
            .filter(|((k, ns, _), data)| {
                *k == kind
                    && ns == namespace
                    && selector
                        .iter()
                        .all(|(key, value)| data.labels().get(*key).is_some_and(|v| v == value))
            })
            .map(|((_, _, name), data)| (name.clone(), data.clone()))
            .collect()
    }

    /// A BackupBucket's `spec.providerConfig`.
    pub fn get_backup_bucket(&self, name: &str) -> Option<&Value> {
        self.backup_buckets.get(name)
    }

    pub fn shoot_count(&self) -> usize {
        self.shoots.len()
    }

    /// The shoot context of `namespace`.
    pub fn get_shoot(&self, namespace: &str) -> Result<Arc<ShootContext>, StateError> {
        if let Some(ctx) = self.shoots.get(namespace) {
            return Ok(ctx.clone());
        }
        Err(self
            .malformed
            .get(namespace)
            .cloned()
            .unwrap_or_else(|| StateError::ClusterNotFound {
                name: namespace.to_string(),
            }))
    }

    /// A Secret or ConfigMap, if present.
    pub fn get_object(&self, kind: ObjectKind, namespace: &str, name: &str) -> Option<&ObjectData> {
        self.objects
            .get(&(kind, namespace.to_string(), name.to_string()))
    }
}

impl StateSource for Snapshot {
    fn shoot(&self, namespace: &str) -> Result<Arc<ShootContext>, StateError> {
        self.get_shoot(namespace)
    }

    fn object<'a>(
        &'a self,
        kind: ObjectKind,
        namespace: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<ObjectData>, StateError>> {
        let found = self.get_object(kind, namespace, name).cloned();
        Box::pin(async move { Ok(found) })
    }

    fn list_labelled<'a>(
        &'a self,
        kind: ObjectKind,
        label: (&'a str, &'a str),
    ) -> BoxFuture<'a, Result<Vec<ObjectData>, StateError>> {
        let found = self.labelled(kind, label);
        Box::pin(async move { Ok(found) })
    }

    fn backup_bucket<'a>(
        &'a self,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<Value>, StateError>> {
        let found = self.get_backup_bucket(name).cloned();
        Box::pin(async move { Ok(found) })
    }

    fn is_synced(&self) -> bool {
        true
    }
}
