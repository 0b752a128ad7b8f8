//! One test bed (etcd and a seed kube-apiserver with the CRDs of
//! `manifests/crds/`) shared by every test of a test binary, each test in
//! namespaces of its own and with an identity of its own ([`Session`]), so
//! that the tests stay independent while the API server starts once (about
//! 4 s of two cores per start, against tens of milliseconds for a
//! namespace).
//!
//! The bed starts on the first [`Session::new`], on a thread of its own with
//! its own runtime (a test's runtime ends with the test, the bed must not),
//! and lives until the test binary exits; its processes then get the
//! kernel's `SIGKILL` (see `process.rs`). Its directory is removed by the
//! next start of a shared bed once the process that made it is gone.
//!
//! A session's identity is the admin impersonating a user of its own in
//! `system:masters` (`Impersonate-User`): no RBAC to wait for, and the audit
//! log tells its requests from everybody else's ([`Session::requests`]).

use std::io::{Read as _, Seek as _, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::FutureExt as _;
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::{Value, json};

use super::Testbed;

/// The shared bed's files, for clients.
#[derive(Debug)]
pub struct Shared {
    /// Admin kubeconfig (client certificate in `system:masters`).
    pub kubeconfig: PathBuf,
    /// The API server's audit log (every request, `Metadata` level).
    pub audit_log: PathBuf,
}

const PID_FILE: &str = "shared.pid";

/// Remove the directories of shared beds whose process is gone.
fn remove_stale_beds() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let dir = entry.path();
        let is_bed = dir
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("scion-testbed-"));
        let Some(pid) = is_bed
            .then(|| std::fs::read_to_string(dir.join(PID_FILE)).ok())
            .flatten()
        else {
            continue;
        };
        if !Path::new("/proc").join(pid.trim()).exists() {
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}

/// The bed, started on first use; panics with the reason when it cannot
/// start.
pub fn shared() -> &'static Shared {
    static SHARED: OnceLock<Result<Shared, String>> = OnceLock::new();
    let started = SHARED.get_or_init(|| {
        remove_stale_beds();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("shared-testbed".into())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(1)
                    .enable_all()
                    .build()
                    .unwrap();
                runtime.block_on(async move {
                    let start = std::panic::AssertUnwindSafe(async {
                        let bed = Testbed::start().await;
                        bed.seed.install_crds().await;
                        bed
                    });
                    match start.catch_unwind().await {
                        Ok(bed) => {
                            std::fs::write(
                                bed.dir().join(PID_FILE),
                                std::process::id().to_string(),
                            )
                            .unwrap();
                            let _ = tx.send(Ok(Shared {
                                kubeconfig: bed.seed.kubeconfig.clone(),
                                audit_log: bed.seed.dir.join("audit.log"),
                            }));
                            // the bed lives as long as the test binary
                            std::future::pending::<()>().await;
                            drop(bed);
                        }
                        Err(panic) => {
                            let why = panic
                                .downcast_ref::<String>()
                                .cloned()
                                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                                .unwrap_or_default();
                            let _ = tx.send(Err(why));
                        }
                    }
                });
            })
            .expect("start the shared test bed's thread");
        rx.recv()
            .unwrap_or_else(|_| Err("its thread ended without a word".into()))
    });
    match started {
        Ok(shared) => shared,
        Err(why) => panic!("the shared test bed did not start: {why}"),
    }
}

/// A unique number per call in this test binary.
pub fn unique() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::SeqCst)
}

/// A client of the shared bed's API server: the admin, or the admin
/// impersonating `user` (in `system:masters`).
pub async fn client(user: Option<&str>) -> kube::Client {
    client_as(user, &["system:masters"]).await
}

/// The admin impersonating `user` (when given) in `groups` only: with no
/// group of power, what RBAC grants `user` is all it may do.
pub async fn client_as(user: Option<&str>, groups: &[&str]) -> kube::Client {
    kube::Client::try_from(config_as(user, groups).await).unwrap()
}

/// The client configuration of [`client_as`] (to add layers of one's own).
pub async fn config_as(user: Option<&str>, groups: &[&str]) -> kube::Config {
    let path = &shared().kubeconfig;
    let mut config = kube::Config::from_custom_kubeconfig(
        Kubeconfig::read_from(path).unwrap(),
        &KubeConfigOptions::default(),
    )
    .await
    .unwrap_or_else(|e| panic!("kubeconfig {}: {e}", path.display()));
    if let Some(user) = user {
        config.auth_info.impersonate = Some(user.to_owned());
        config.auth_info.impersonate_groups =
            Some(groups.iter().map(|g| (*g).to_owned()).collect());
    }
    config
}

/// One request of the audit log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Audited {
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, …
    pub verb: String,
    /// The request's path, without the query.
    pub path: String,
    /// The request's query (`limit=50&…`), empty without one.
    pub query: String,
    /// The object's name (also for a create).
    pub name: String,
    pub code: i64,
}

impl Audited {
    /// `"METHOD path"` with the HTTP method of the verb (`GET` for get,
    /// list and watch).
    pub fn line(&self) -> String {
        let method = match self.verb.as_str() {
            "create" => "POST",
            "update" => "PUT",
            "patch" => "PATCH",
            "delete" | "deletecollection" => "DELETE",
            _ => "GET",
        };
        format!("{method} {}", self.path)
    }

    /// A write (not a get, list or watch).
    pub fn is_write(&self) -> bool {
        !matches!(self.verb.as_str(), "get" | "list" | "watch")
    }
}

/// A test's part of the shared bed: a namespace, an admin client, a client
/// with an identity of its own, and its requests in the audit log.
pub struct Session {
    pub namespace: String,
    /// The admin (the test's own writes and reads).
    pub admin: kube::Client,
    /// The identity whose requests [`Session::requests`] lists.
    pub user: String,
    /// A client acting as `user`.
    pub client: kube::Client,
    /// Audit log position (bytes) of [`Session::clear`].
    mark: AtomicU64,
}

impl Session {
    /// A session with a new namespace `<prefix>-<n>` (labels `labels`).
    pub async fn new(prefix: &str, labels: &[(&str, &str)]) -> Session {
        let n = unique();
        let namespace = format!("{prefix}-{n}");
        let session = Session::in_namespace(&namespace).await;
        let labels: serde_json::Map<String, Value> = labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), json!(v)))
            .collect();
        session
            .apply(&json!({"apiVersion": "v1", "kind": "Namespace",
                           "metadata": {"name": namespace, "labels": labels}}))
            .await;
        session
    }

    /// Another identity in the namespace `namespace` (which must exist, or
    /// be created by the caller): a second scion on the same seed.
    pub async fn in_namespace(namespace: &str) -> Session {
        Session::as_member_of(namespace, &["system:masters"]).await
    }

    /// [`Session::in_namespace`] with an identity in `groups` only (none:
    /// only what RBAC grants its user, [`Session::user`]).
    pub async fn as_member_of(namespace: &str, groups: &[&str]) -> Session {
        let user = format!("scion-test-{}", unique());
        let session = Session {
            namespace: namespace.to_owned(),
            admin: client(None).await,
            client: client_as(Some(&user), groups).await,
            user,
            mark: AtomicU64::new(0),
        };
        session.mark.store(audit_len(), Ordering::SeqCst);
        session
    }

    /// Server-side apply `object` as the admin (field manager `test`).
    pub async fn apply(&self, object: &Value) -> Value {
        let (api, name) = dynamic_api(&self.admin, object).await;
        let params = kube::api::PatchParams::apply("test").force();
        let stored = api
            .patch(&name, &params, &kube::api::Patch::Apply(object))
            .await
            .unwrap_or_else(|e| panic!("apply {} {name}: {e}", object["kind"]));
        serde_json::to_value(stored).unwrap()
    }

    /// GET `path` as the admin; `None` on 404.
    pub async fn get(&self, path: &str) -> Option<Value> {
        let request = http::Request::get(path).body(Vec::new()).unwrap();
        match self.admin.request::<Value>(request).await {
            Ok(v) => Some(v),
            Err(kube::Error::Api(s)) if s.code == 404 => None,
            Err(e) => panic!("GET {path}: {e}"),
        }
    }

    /// The requests of `user` since [`Session::clear`] (or the start), once
    /// the audit log holds all of them.
    pub async fn requests(&self) -> Vec<Audited> {
        let barrier = self.barrier().await;
        read_audit(self.mark.load(Ordering::SeqCst))
            .into_iter()
            .filter(|e| e["impersonatedUser"]["username"] == self.user.as_str())
            .filter(|e| {
                e["stage"] == "ResponseComplete"
                    || (e["stage"] == "ResponseStarted" && e["verb"] == "watch")
            })
            .map(audited)
            .filter(|a| !a.path.starts_with(&barrier))
            .collect()
    }

    /// Forget the requests so far.
    pub async fn clear(&self) {
        self.barrier().await;
        self.mark.store(audit_len(), Ordering::SeqCst);
    }

    /// Make a request as `user` and wait until the audit log has it: every
    /// request `user` completed before is in the log then (the API server
    /// writes an event before it answers the next request of the same
    /// client, give or take the time between its response and its event,
    /// which a short settle covers). Returns the barrier paths' prefix.
    async fn barrier(&self) -> String {
        let prefix = format!("/api/v1/namespaces/{}/configmaps/barrier-", self.namespace);
        let path = format!("{prefix}{}", unique());
        let request = http::Request::get(&path).body(Vec::new()).unwrap();
        let _ = self.client.request::<Value>(request).await;
        let deadline = Instant::now() + Duration::from_secs(30);
        let start = self.mark.load(Ordering::SeqCst);
        loop {
            if read_audit(start)
                .iter()
                .any(|e| e["requestURI"] == path.as_str() && e["stage"] == "ResponseComplete")
            {
                tokio::time::sleep(Duration::from_millis(50)).await;
                return prefix;
            }
            assert!(
                Instant::now() < deadline,
                "the audit log does not show {path} after 30 s"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

fn audited(e: Value) -> Audited {
    let uri = e["requestURI"].as_str().unwrap_or_default();
    Audited {
        verb: e["verb"].as_str().unwrap_or_default().to_owned(),
        path: uri.split('?').next().unwrap_or_default().to_owned(),
        query: uri.split_once('?').map_or("", |(_, q)| q).to_owned(),
        name: e["objectRef"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        code: e["responseStatus"]["code"].as_i64().unwrap_or_default(),
    }
}

/// The audit log's length in bytes.
fn audit_len() -> u64 {
    std::fs::metadata(&shared().audit_log)
        .map(|m| m.len())
        .unwrap_or(0)
}

/// The complete audit events from byte `from` on.
fn read_audit(from: u64) -> Vec<Value> {
    let Ok(mut file) = std::fs::File::open(&shared().audit_log) else {
        return Vec::new();
    };
    let mut text = String::new();
    if file.seek(SeekFrom::Start(from)).is_err() || file.read_to_string(&mut text).is_err() {
        return Vec::new();
    }
    // the last line may still be being written
    let complete = text.rfind('\n').map_or("", |end| &text[..end]);
    complete
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The dynamic API of `object`'s kind (discovered) and its name.
pub async fn dynamic_api(
    client: &kube::Client,
    object: &Value,
) -> (kube::Api<kube::api::DynamicObject>, String) {
    let api_version = object["apiVersion"].as_str().expect("apiVersion");
    let kind = object["kind"].as_str().expect("kind");
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let gvk = kube::api::GroupVersionKind::gvk(group, version, kind);
    let (resource, _) = kube::discovery::pinned_kind(client, &gvk)
        .await
        .unwrap_or_else(|e| panic!("the API server does not serve {api_version} {kind}: {e}"));
    let name = object["metadata"]["name"]
        .as_str()
        .expect("name")
        .to_owned();
    let api = match object["metadata"]["namespace"].as_str() {
        Some(ns) => kube::Api::namespaced_with(client.clone(), ns, &resource),
        None => kube::Api::all_with(client.clone(), &resource),
    };
    (api, name)
}
