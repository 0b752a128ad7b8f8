//! Cluster state: the shoot context of a namespace, from the API server or from
//! an objects directory.

mod files;
mod kube;
mod objects;
mod objects_dir;
mod snapshot;
pub mod throttle;
mod watch;

pub use files::LoadProblem;
pub use kube::{KubeState, KubeStateOptions};
pub use objects::{DecodedObject, Document, decode_object, fold_string_data};
pub use objects_dir::{MAX_FILE_BYTES, ObjectsDir, ObjectsDirError};
pub use snapshot::Snapshot;
pub use watch::DEFAULT_DEBOUNCE;

use std::sync::Arc;

use futures::future::BoxFuture;

use crate::gardener::{ClusterError, ObjectData, ObjectKind, ShootContext};

/// Errors of a state source. Messages name the namespace and the object, as
/// Gardener's do, because they end up in a 403 answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StateError {
    #[error("could not get Cluster {name:?}: not found")]
    ClusterNotFound { name: String },
    /// The Clusters have not been read yet (the first list of the watch has
    /// not completed: the API server is slow, hangs or refuses): whether the
    /// Cluster exists is not known, so it must not be answered as missing.
    #[error(
        "could not get Cluster {name:?}: the Clusters have not been listed from the API server yet (the replica is not ready)"
    )]
    NotSynced { name: String },
    #[error(transparent)]
    ClusterMalformed(#[from] ClusterError),
    #[error("could not get {kind} '{namespace}/{name}': {reason}")]
    Api {
        kind: &'static str,
        namespace: String,
        name: String,
        reason: String,
    },
}

/// Where the shoot context and the namespaced objects come from.
///
/// Two implementations are chosen at start: an objects directory (no cluster)
/// and the Kubernetes API (a reflector on Clusters plus live GETs).
pub trait StateSource: Send + Sync + 'static {
    /// The shoot context of the Cluster named after `namespace`, decoded once per
    /// change of the Cluster.
    fn shoot(&self, namespace: &str) -> Result<Arc<ShootContext>, StateError>;

    /// A Secret or ConfigMap in `namespace`; `Ok(None)` when it does not exist.
    fn object<'a>(
        &'a self,
        kind: ObjectKind,
        namespace: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<ObjectData>, StateError>>;

    /// The objects of `kind` in all namespaces labelled `label` (Azure's
    /// tenant service principal Secrets).
    fn list_labelled<'a>(
        &'a self,
        kind: ObjectKind,
        label: (&'a str, &'a str),
    ) -> BoxFuture<'a, Result<Vec<ObjectData>, StateError>>;

    /// The `spec.providerConfig` of the cluster-scoped BackupBucket `name`
    /// (`Some(Value::Null)` when it has none); `Ok(None)` when it does not
    /// exist.
    fn backup_bucket<'a>(
        &'a self,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<serde_json::Value>, StateError>>;

    /// True once the initial sync finished; `/readyz` waits for it.
    fn is_synced(&self) -> bool;

    /// What the state serves from when it cannot follow its source right
    /// now (the watch failing, a list again in progress), for `/readyz`'s
    /// `state-synced` line; `None` when it follows.
    fn sync_note(&self) -> Option<String> {
        None
    }

    /// The shoot context for a webhook request: [`StateSource::shoot`], and
    /// where the source's cache can lag behind the API server (the API
    /// source's watch, which after an API server restart resumes only after
    /// its backoff), a live read of the Cluster the cache does not hold.
    fn lookup_shoot<'a>(
        &'a self,
        namespace: &'a str,
    ) -> BoxFuture<'a, Result<Arc<ShootContext>, StateError>> {
        Box::pin(std::future::ready(self.shoot(namespace)))
    }
}
