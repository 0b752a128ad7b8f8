//! An immutable, in-memory state: the shoot contexts and namespaced objects at
//! one point in time. The objects-directory source swaps whole snapshots; tests
//! and `scion mutate` build one directly.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use futures::future::BoxFuture;

use super::{ObjectData, ObjectKind, ShootContext, StateError, StateSource};

/// Shoot contexts by namespace and Secrets/ConfigMaps by (kind, namespace, name).
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    shoots: HashMap<String, Arc<ShootContext>>,
    objects: BTreeMap<(ObjectKind, String, String), ObjectData>,
}

impl Snapshot {
    /// Add (or replace) the shoot context of the Cluster named `ctx.cluster_name`.
    pub fn insert_shoot(&mut self, ctx: ShootContext) {
        self.shoots.insert(ctx.cluster_name.clone(), Arc::new(ctx));
    }

    /// Add (or replace) a Secret or ConfigMap.
    pub fn insert_object(&mut self, namespace: &str, name: &str, data: ObjectData) {
        let kind = match data {
            ObjectData::Secret { .. } => ObjectKind::Secret,
            ObjectData::ConfigMap { .. } => ObjectKind::ConfigMap,
        };
        self.objects
            .insert((kind, namespace.to_string(), name.to_string()), data);
    }

    /// Number of shoot contexts.
    pub fn shoot_count(&self) -> usize {
        self.shoots.len()
    }

    /// The shoot context of `namespace`.
    pub fn get_shoot(&self, namespace: &str) -> Result<Arc<ShootContext>, StateError> {
        self.shoots
            .get(namespace)
            .cloned()
            .ok_or_else(|| StateError::ClusterNotFound {
                name: namespace.to_string(),
            })
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

    fn is_synced(&self) -> bool {
        true
    }
}
