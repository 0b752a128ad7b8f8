//! Cluster state: the shoot context of a namespace, from the API server or from
//! an objects directory.

mod context;
mod files;
mod kube;
mod objects;
mod objects_dir;
mod project;
mod prune;
mod snapshot;
mod watch;

pub use context::{Cidrs, Hibernation, LastOperation, Networking, ShootContext, WorkerPool};
pub use files::LoadProblem;
pub use kube::{KubeState, KubeStateOptions};
pub use objects::{DecodedObject, decode_object};
pub use objects_dir::{ObjectsDir, ObjectsDirError};
pub use project::{
    GENERIC_TOKEN_KUBECONFIG_ANNOTATION, GENERIC_TOKEN_KUBECONFIG_DEFAULT, parse_version,
    project_cluster,
};
pub use prune::PrunedObject;
pub use snapshot::Snapshot;
pub use watch::DEFAULT_DEBOUNCE;

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::future::BoxFuture;

/// The data of a Secret (`.data`, decoded bytes) or ConfigMap (`.data`).
/// `None` data is kept distinct from empty data because Gardener's checksum
/// of a nil map differs from that of an empty one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ObjectData {
    Secret {
        data: Option<BTreeMap<String, Vec<u8>>>,
        labels: BTreeMap<String, String>,
    },
    ConfigMap {
        data: Option<BTreeMap<String, String>>,
        labels: BTreeMap<String, String>,
    },
}

/// Which kind of namespaced object a rule needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ObjectKind {
    Secret,
    ConfigMap,
}

/// Errors of a state source. Messages name the namespace and the object, as
/// Gardener's do, because they end up in a 403 answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StateError {
    #[error("could not get Cluster {name:?}: not found")]
    ClusterNotFound { name: String },
    #[error("Cluster {name:?} is malformed: field {field}: {reason}")]
    ClusterMalformed {
        name: String,
        field: String,
        reason: String,
    },
    #[error("could not get {kind} '{namespace}/{name}': not found")]
    ObjectNotFound {
        kind: &'static str,
        namespace: String,
        name: String,
    },
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

    /// True once the initial sync finished; `/readyz` waits for it.
    fn is_synced(&self) -> bool;
}
