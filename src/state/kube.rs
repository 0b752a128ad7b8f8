//! The Kubernetes API source: a watch on `Cluster` objects that keeps only their
//! projection, and live, time-bounded GETs for Secrets and ConfigMaps (no Secret
//! cache: provider-aws#790).

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use futures::StreamExt as _;
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::runtime::WatchStreamExt as _;
use kube::runtime::watcher::{self, Event};
use kube::{Api, Client};
use tokio::sync::watch as signal;

use k8s_openapi::jiff::Timestamp;

use super::{StateError, StateSource};
use crate::gardener::{ClusterObject, ObjectData, ObjectKind, ShootContext};

/// Settings of the API source.
#[derive(Debug, Clone)]
pub struct KubeStateOptions {
    /// Bound on each Secret/ConfigMap GET, well inside the webhook's request
    /// timeout. Default 2 s.
    pub get_timeout: Duration,
    /// Clusters per page of the initial list. Each Cluster is 100–500 KB of JSON
    /// that is read whole before it is pruned, so this bounds the start-up peak.
    /// Default 50.
    pub page_size: u32,
}

impl Default for KubeStateOptions {
    fn default() -> Self {
        KubeStateOptions {
            get_timeout: Duration::from_secs(2),
            page_size: 50,
        }
    }
}

type Entry = Result<Arc<ShootContext>, StateError>;

/// How the Cluster watch follows the API server, for `/readyz`'s note.
#[derive(Debug, Default)]
struct Following {
    /// End of the last complete list.
    listed_at: Option<Timestamp>,
    /// A list (again) in progress since.
    listing_since: Option<Timestamp>,
    /// The watch fails since, with the last error.
    failing: Option<(Timestamp, String)>,
}

/// A list again that has not completed after this long is worth a note.
const SLOW_LIST: std::time::Duration = std::time::Duration::from_secs(5);

fn now_seconds() -> Timestamp {
    Timestamp::from_second(Timestamp::now().as_second()).unwrap_or_else(|_| Timestamp::now())
}

/// Shoot contexts from the API server. Construct with [`KubeState::new`], drive
/// with [`KubeState::run`] (or [`KubeState::spawn`]).
pub struct KubeState {
    client: Client,
    options: KubeStateOptions,
    shoots: RwLock<HashMap<String, Entry>>,
    synced: signal::Sender<bool>,
    following: RwLock<Following>,
}

impl std::fmt::Debug for KubeState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeState")
            .field("options", &self.options)
            .field("synced", &self.is_synced())
            .finish()
    }
}

impl KubeState {
    pub fn new(client: Client, options: KubeStateOptions) -> Self {
        KubeState {
            client,
            options,
            shoots: RwLock::new(HashMap::new()),
            synced: signal::Sender::new(false),
            following: RwLock::new(Following::default()),
        }
    }

    /// Spawn [`KubeState::run`] on the current Tokio runtime.
    pub fn spawn(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        let this = self.clone();
        tokio::spawn(async move { this.run().await })
    }

    /// Watch Clusters until the future is dropped. Errors (API server gone,
    /// RBAC missing, ...) are logged and retried with kube-runtime's default
    /// backoff; a malformed Cluster is logged and its lookups answer with the
    /// projection error. Ready after the first complete list.
    pub async fn run(&self) {
        let api: Api<ClusterObject> = Api::all(self.client.clone());
        let config = watcher::Config::default().page_size(self.options.page_size);
        let mut stream = std::pin::pin!(watcher::watcher(api, config).default_backoff());
        let mut relist: Option<HashMap<String, Entry>> = None;
        let mut errors = WatchErrors::new("Clusters");
        while let Some(event) = stream.next().await {
            if event.is_ok() {
                errors.observe(&event);
                // Init starts a (re)list, which may fail again: not a recovery.
                if !matches!(event, Ok(Event::Init)) {
                    self.following().failing = None;
                }
            }
            match event {
                Ok(Event::Init) => {
                    relist = Some(HashMap::new());
                    self.following().listing_since = Some(now_seconds());
                }
                Ok(Event::InitApply(cluster)) => {
                    if let Some((name, entry)) = entry(cluster) {
                        relist.get_or_insert_with(HashMap::new).insert(name, entry);
                    }
                }
                Ok(Event::InitDone) => {
                    let fresh = relist.take().unwrap_or_default();
                    let count = fresh.len();
                    *self.shoots.write().unwrap_or_else(PoisonError::into_inner) = fresh;
                    self.synced.send_replace(true);
                    let mut following = self.following();
                    following.listing_since = None;
                    following.listed_at = Some(now_seconds());
                    drop(following);
                    tracing::info!(clusters = count, "Cluster list synced");
                }
                Ok(Event::Apply(cluster)) => {
                    if let Some((name, entry)) = entry(cluster) {
                        self.write().insert(name, entry);
                    }
                }
                Ok(Event::Delete(cluster)) => {
                    if let Some(name) = cluster.metadata.name {
                        self.write().remove(&name);
                    }
                }
                Err(e) => {
                    let error = describe_watch(&e);
                    errors.failed(error.clone());
                    let mut following = self.following();
                    let since = following.failing.as_ref().map_or_else(now_seconds, |f| f.0);
                    following.failing = Some((since, error));
                }
            }
        }
    }

    fn following(&self) -> std::sync::RwLockWriteGuard<'_, Following> {
        self.following
            .write()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Wait until the initial list is complete.
    pub async fn wait_synced(&self) {
        let mut rx = self.synced.subscribe();
        // The sender lives in `self`, so this cannot fail while we borrow it.
        let _ = rx.wait_for(|synced| *synced).await;
    }

    /// Number of Clusters known (well-formed or not).
    /// The names of the Clusters seen (the shoot namespaces), sorted.
    pub fn namespaces(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .shoots
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .keys()
            .cloned()
            .collect();
        names.sort();
        names
    }

    pub fn cluster_count(&self) -> usize {
        self.shoots
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<String, Entry>> {
        self.shoots.write().unwrap_or_else(PoisonError::into_inner)
    }

    async fn get(
        &self,
        kind: ObjectKind,
        namespace: &str,
        name: &str,
    ) -> Result<Option<ObjectData>, StateError> {
        let client = self.client.clone();
        let request = async {
            match kind {
                ObjectKind::Secret => Api::<Secret>::namespaced(client, namespace)
                    .get_opt(name)
                    .await
                    .map(|s| s.map(secret_data)),
                ObjectKind::ConfigMap => Api::<ConfigMap>::namespaced(client, namespace)
                    .get_opt(name)
                    .await
                    .map(|c| c.map(configmap_data)),
            }
        };
        let error = |reason: String| StateError::Api {
            kind: kind.word(),
            namespace: namespace.to_string(),
            name: name.to_string(),
            reason,
        };
        self.within(request, error).await
    }

    /// A live LIST of the objects of `kind` labelled `label` in all
    /// namespaces (never cached, like the GETs).
    async fn list(
        &self,
        kind: ObjectKind,
        label: (&str, &str),
    ) -> Result<Vec<ObjectData>, StateError> {
        let params = kube::api::ListParams::default().labels(&format!("{}={}", label.0, label.1));
        let client = self.client.clone();
        let request = async {
            match kind {
                ObjectKind::Secret => Api::<Secret>::all(client)
                    .list(&params)
                    .await
                    .map(|l| l.items.into_iter().map(secret_data).collect()),
                ObjectKind::ConfigMap => Api::<ConfigMap>::all(client)
                    .list(&params)
                    .await
                    .map(|l| l.items.into_iter().map(configmap_data).collect()),
            }
        };
        let error = |reason: String| StateError::Api {
            kind: kind.word(),
            namespace: "*".to_string(),
            name: format!("{}={}", label.0, label.1),
            reason,
        };
        self.within(request, error).await
    }

    /// A live read of the Cluster `name`, for a webhook request whose
    /// namespace the watch has not delivered (yet): a shoot created while
    /// the watch waits out its backoff, or a replica whose first list has
    /// not completed. A list by name (`fieldSelector=metadata.name=…`): the
    /// `list` the watch is granted covers it, no `get` on every Cluster is
    /// needed. The result is not put into the cache; the watch stays its
    /// only writer, so a read cannot bring back a Cluster the watch saw
    /// deleted.
    async fn get_cluster(&self, name: &str) -> Result<Arc<ShootContext>, StateError> {
        let api: Api<ClusterObject> = Api::all(self.client.clone());
        let params = kube::api::ListParams::default().fields(&format!("metadata.name={name}"));
        let error = |reason: String| StateError::Api {
            kind: "Cluster",
            namespace: String::new(),
            name: name.to_string(),
            reason,
        };
        let found = self.within(api.list(&params), error).await?;
        match found.items.into_iter().next() {
            Some(cluster) => match entry(cluster) {
                Some((_, entry)) => entry,
                None => Err(StateError::ClusterNotFound {
                    name: name.to_string(),
                }),
            },
            None => Err(StateError::ClusterNotFound {
                name: name.to_string(),
            }),
        }
    }

    /// A live GET of a cluster-scoped BackupBucket: its `spec.providerConfig`.
    async fn get_backup_bucket(&self, name: &str) -> Result<Option<serde_json::Value>, StateError> {
        let gvk = crate::gardener::BACKUP_BUCKET;
        let resource = kube::discovery::ApiResource {
            group: gvk.group.into(),
            version: gvk.version.into(),
            api_version: gvk.api_version(),
            kind: gvk.kind.into(),
            plural: gvk.plural.into(),
        };
        let api: Api<kube::api::DynamicObject> = Api::all_with(self.client.clone(), &resource);
        let error = |reason: String| StateError::Api {
            kind: "backupbucket",
            namespace: String::new(),
            name: name.to_string(),
            reason,
        };
        let found = self.within(api.get_opt(name), error).await?;
        Ok(found.map(|b| {
            b.data
                .pointer("/spec/providerConfig")
                .cloned()
                .unwrap_or(serde_json::Value::Null)
        }))
    }

    /// One API call bounded by the GET timeout; its error or the timeout
    /// described by `error`.
    async fn within<T>(
        &self,
        request: impl std::future::Future<Output = Result<T, kube::Error>>,
        error: impl Fn(String) -> StateError,
    ) -> Result<T, StateError> {
        match tokio::time::timeout(self.options.get_timeout, request).await {
            Ok(Ok(found)) => Ok(found),
            Ok(Err(e)) => Err(error(describe(&e))),
            Err(_) => Err(error(format!(
                "no answer from the API server within {}",
                crate::gardener::duration::text(self.options.get_timeout)
            ))),
        }
    }
}

impl StateSource for KubeState {
    /// Before the first complete list a missing Cluster is not known to be
    /// missing: the lookup says the Clusters have not been listed yet
    /// ([`StateError::NotSynced`]) rather than "not found", which would send
    /// an operator looking for a Cluster that exists.
    fn shoot(&self, namespace: &str) -> Result<Arc<ShootContext>, StateError> {
        let shoots = self.shoots.read().unwrap_or_else(PoisonError::into_inner);
        match shoots.get(namespace) {
            Some(entry) => entry.clone(),
            None if !self.is_synced() => Err(StateError::NotSynced {
                name: namespace.to_string(),
            }),
            None => Err(StateError::ClusterNotFound {
                name: namespace.to_string(),
            }),
        }
    }

    fn object<'a>(
        &'a self,
        kind: ObjectKind,
        namespace: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<ObjectData>, StateError>> {
        Box::pin(self.get(kind, namespace, name))
    }

    fn list_labelled<'a>(
        &'a self,
        kind: ObjectKind,
        label: (&'a str, &'a str),
    ) -> BoxFuture<'a, Result<Vec<ObjectData>, StateError>> {
        Box::pin(self.list(kind, label))
    }

    fn backup_bucket<'a>(
        &'a self,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<serde_json::Value>, StateError>> {
        Box::pin(self.get_backup_bucket(name))
    }

    fn is_synced(&self) -> bool {
        *self.synced.borrow()
    }

    /// The watch failing, or a list again taking long: the webhook answers
    /// from the Clusters of the last complete list meanwhile.
    fn sync_note(&self) -> Option<String> {
        let following = self
            .following
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        let from = match following.listed_at {
            Some(at) => format!("answering from the Clusters listed at {at}"),
            None => "no Cluster list has completed yet".to_owned(),
        };
        if let Some((since, error)) = &following.failing {
            return Some(format!(
                "the Cluster watch fails since {since} ({error}); {from}"
            ));
        }
        let since = following.listing_since?;
        let slow = Timestamp::now().duration_since(since).unsigned_abs() >= SLOW_LIST;
        slow.then(|| format!("listing the Clusters again since {since}; {from}"))
    }

    /// The watch's cache, and a live read of a Cluster it does not hold.
    fn lookup_shoot<'a>(
        &'a self,
        namespace: &'a str,
    ) -> BoxFuture<'a, Result<Arc<ShootContext>, StateError>> {
        Box::pin(async move {
            match self.shoot(namespace) {
                Err(StateError::ClusterNotFound { .. } | StateError::NotSynced { .. }) => {
                    self.get_cluster(namespace).await
                }
                found => found,
            }
        })
    }
}

use crate::gardener::api_error::{WatchErrors, describe, describe_watch};

fn secret_data(secret: Secret) -> ObjectData {
    ObjectData::Secret {
        data: secret
            .data
            .map(|data| data.into_iter().map(|(k, v)| (k, v.0)).collect()),
        labels: secret.metadata.labels.unwrap_or_default(),
    }
}

fn configmap_data(configmap: ConfigMap) -> ObjectData {
    ObjectData::ConfigMap {
        data: configmap.data,
        labels: configmap.metadata.labels.unwrap_or_default(),
    }
}

/// A watched Cluster as the state keeps it: its name and its shoot context
/// (or why it cannot be used, logged once here).
fn entry(cluster: ClusterObject) -> Option<(String, Entry)> {
    let name = cluster.metadata.name?;
    let entry = cluster.context.map(Arc::new).map_err(|e| {
        tracing::warn!(cluster = %name, error = %e, "Cluster cannot be used");
        StateError::from(e)
    });
    Some((name, entry))
}
