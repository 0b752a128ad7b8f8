//! The ControlPlane controller's tests against a real kube-apiserver: the
//! test bed shared by a test binary (`testbed::shared`), each test in a
//! shoot namespace of its own. [`Real`] runs the reconciler (with the test
//! clocks of [`super::mock::reconciler`]) as a user of its own and reads its
//! calls back from the API server's audit log, so a test asserts the calls
//! and the stored result as it did against the fake, on the server Gardener
//! runs.
//!
//! The fixtures build objects in [`NS`]; `Real` moves them into its
//! namespace ([`Real::moved`]) on the way in, and the paths and lines it
//! returns name its namespace ([`Real::short`] shortens them as
//! [`super::mock::short`] did).

use std::sync::Arc;
use std::time::Duration;

use kube::api::{DynamicObject, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use scion::controller::{self, ControlPlaneReconciler};
use scion::gardener::{ControlPlane, ShootContext};
use scion::state::Snapshot;
use serde_json::{Value, json};

use super::mock::{cp_json, decode_secret, reconciler};
use super::{NS, aws_static_secret};
use crate::support::testbed::intercept::{self, Intercept};
use crate::support::testbed::shared::{Audited, Session, dynamic_api};

/// The finalizer gardener-resource-manager keeps on a ManagedResource until
/// it deleted its objects.
pub const GRM_FINALIZER: &str = "resources.gardener.cloud/gardener-resource-manager";

/// gardener-resource-manager played by a test ([`Real::grm`]).
pub struct Grm {
    task: tokio::task::JoinHandle<()>,
    released: Arc<std::sync::Mutex<Vec<Value>>>,
}

impl Grm {
    /// Stop; the ManagedResources released, as they were when released.
    pub fn stop(self) -> Vec<Value> {
        self.task.abort();
        self.released.lock().unwrap().clone()
    }
}

/// A reconciler acting on the real API server in a namespace of its own.
pub struct Real {
    pub ctx: Arc<ControlPlaneReconciler>,
    pub session: Arc<Session>,
}

/// `shoot` moved into `namespace`.
pub fn shoot_in(mut shoot: ShootContext, namespace: &str) -> ShootContext {
    shoot.cluster_name = namespace.to_owned();
    if shoot.shoot.status.technical_id.is_some() {
        shoot.shoot.status.technical_id = Some(namespace.to_owned());
    }
    shoot
}

/// The reconciler's state: the shoot (moved into `namespace`) and its
/// static `cloudprovider` credentials, as `mock::state` has them.
pub fn state_in(shoot: ShootContext, namespace: &str) -> Snapshot {
    let mut snapshot = Snapshot::default();
    snapshot.insert_shoot(shoot_in(shoot, namespace));
    snapshot.insert_object(namespace, "cloudprovider", aws_static_secret());
    snapshot
}

/// A new namespace on the shared bed and a reconciler of `provider` for
/// `shoot` in it.
pub async fn real(shoot: ShootContext, provider: &str) -> Real {
    real_with(shoot, provider, None, |_| {}).await
}

/// [`real`] on the namespace of `on` (`Some`: a second reconciler on the
/// same seed, a restarted or upgraded scion, with an identity of its own),
/// adjusted by `configure`.
pub async fn real_with(
    shoot: ShootContext,
    provider: &str,
    on: Option<&Real>,
    configure: impl FnOnce(&mut ControlPlaneReconciler),
) -> Real {
    let session = match on {
        Some(other) => Session::in_namespace(&other.session.namespace).await,
        None => Session::new("shoot--t", &[]).await,
    };
    real_in(session, shoot, provider, configure)
}

/// A reconciler of `provider` for `shoot` in the session's namespace.
pub fn real_in(
    session: Session,
    shoot: ShootContext,
    provider: &str,
    configure: impl FnOnce(&mut ControlPlaneReconciler),
) -> Real {
    let state = state_in(shoot, &session.namespace);
    let mut ctx = reconciler(session.client.clone(), state, provider);
    // GRM is played by the tests here: a poll every 1 ms would flood the
    // audit log while they take their time
    ctx.actuator.delete_poll = Duration::from_millis(20);
    configure(&mut ctx);
    Real {
        ctx: Arc::new(ctx),
        session: Arc::new(session),
    }
}

impl Real {
    /// A second reconciler like [`Real::ctx`] (the same identity, namespace,
    /// provider and clocks) for `shoot`, whose client goes through
    /// `intercept` (`testbed::intercept`): for the faults a real API server
    /// cannot produce at a chosen request. Its calls are in
    /// [`Real::requests`] (those the layer let through).
    pub fn through(
        &self,
        shoot: ShootContext,
        intercept: Arc<dyn Intercept>,
    ) -> ControlPlaneReconciler {
        let client = intercept::client(self.session.client.clone(), intercept);
        let mut ctx = reconciler(client, state_in(shoot, self.ns()), &self.ctx.provider);
        ctx.actuator.delete_poll = self.ctx.actuator.delete_poll;
        ctx
    }

    /// The namespace.
    pub fn ns(&self) -> &str {
        &self.session.namespace
    }

    /// `object` with every mention of [`NS`] moved into this namespace.
    pub fn moved(&self, object: &Value) -> Value {
        serde_json::from_str(&object.to_string().replace(NS, self.ns())).unwrap()
    }

    /// The ControlPlane's path.
    pub fn cp_path(&self) -> String {
        format!(
            "/apis/extensions.gardener.cloud/v1alpha1/namespaces/{}/controlplanes/control-plane",
            self.ns()
        )
    }

    pub fn mr_path(&self, name: &str) -> String {
        format!(
            "/apis/resources.gardener.cloud/v1alpha1/namespaces/{}/managedresources/{name}",
            self.ns()
        )
    }

    pub fn secret_path(&self, name: &str) -> String {
        format!("/api/v1/namespaces/{}/secrets/{name}", self.ns())
    }

    /// A line with this namespace's paths shortened: `cp`, `cp/status`,
    /// `mr/<name>`, `secret/<name>`, `deployment/<name>`.
    pub fn short(&self, line: &str) -> String {
        let ns = self.ns();
        line.replace(&self.cp_path(), "cp")
            .replace(
                &format!(
                    "/apis/resources.gardener.cloud/v1alpha1/namespaces/{ns}/managedresources"
                ),
                "mr",
            )
            .replace(&format!("/api/v1/namespaces/{ns}/secrets"), "secret")
            .replace(
                &format!("/apis/apps/v1/namespaces/{ns}/deployments"),
                "deployment",
            )
    }

    /// The reconciler's requests since [`Real::clear`].
    pub async fn requests(&self) -> Vec<Audited> {
        self.session.requests().await
    }

    /// The reconciler's requests as `METHOD path` lines.
    pub async fn lines(&self) -> Vec<String> {
        self.requests().await.iter().map(Audited::line).collect()
    }

    /// The reconciler's writes as shortened lines.
    pub async fn writes(&self) -> Vec<String> {
        self.requests()
            .await
            .iter()
            .filter(|a| a.is_write())
            .map(|a| self.short(&a.line()))
            .collect()
    }

    /// The names of the objects the reconciler created, in order.
    pub async fn created(&self) -> Vec<String> {
        self.requests()
            .await
            .into_iter()
            .filter(|a| a.verb == "create")
            .map(|a| a.name)
            .collect()
    }

    pub async fn clear(&self) {
        self.session.clear().await;
    }

    /// GET `path` as the admin; `None` when absent.
    pub async fn get(&self, path: &str) -> Option<Value> {
        self.session.get(path).await
    }

    /// The stored ControlPlane.
    pub async fn controlplane(&self) -> ControlPlane {
        let cp = self
            .get(&self.cp_path())
            .await
            .expect("stored ControlPlane");
        serde_json::from_value(cp).expect("ControlPlane")
    }

    /// Create `object` (moved into this namespace) as the admin, with its
    /// status where it has one (a ManagedResource's, a Deployment's).
    pub async fn insert(&self, object: &Value) -> Value {
        let object = self.moved(object);
        let (api, name) = dynamic_api(&self.session.admin, &object).await;
        let mut meta = object.clone();
        for field in [
            "uid",
            "resourceVersion",
            "generation",
            "creationTimestamp",
            "managedFields",
        ] {
            if let Some(m) = meta["metadata"].as_object_mut() {
                m.remove(field);
            }
        }
        let status = meta.as_object_mut().unwrap().remove("status");
        let created: DynamicObject = serde_json::from_value(meta).unwrap();
        let created = api
            .create(&PostParams::default(), &created)
            .await
            .unwrap_or_else(|e| panic!("create {} {name}: {e}", object["kind"]));
        match status {
            Some(status) if !status.is_null() => {
                self.write_status(&api, &name, &created, status).await
            }
            _ => serde_json::to_value(created).unwrap(),
        }
    }

    async fn write_status(
        &self,
        api: &kube::Api<DynamicObject>,
        name: &str,
        stored: &DynamicObject,
        status: Value,
    ) -> Value {
        let mut with_status = serde_json::to_value(stored).unwrap();
        with_status["status"] = status;
        let body: DynamicObject = serde_json::from_value(with_status).unwrap();
        serde_json::to_value(
            api.replace_status(name, &PostParams::default(), &body)
                .await
                .unwrap_or_else(|e| panic!("status of {name}: {e}")),
        )
        .unwrap()
    }

    /// Delete the object at `path` as the admin (absent is fine).
    pub async fn remove(&self, path: &str) {
        let request = http::Request::delete(path).body(Vec::new()).unwrap();
        match self.session.admin.request::<Value>(request).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => panic!("DELETE {path}: {e}"),
        }
    }

    /// Merge-patch the object at `path` (its main resource) as the admin.
    pub async fn patch(&self, path: &str, patch: &Value) -> Value {
        let request = http::Request::patch(path)
            .header("content-type", "application/merge-patch+json")
            .body(serde_json::to_vec(patch).unwrap())
            .unwrap();
        self.session
            .admin
            .request::<Value>(request)
            .await
            .unwrap_or_else(|e| panic!("PATCH {path}: {e}"))
    }

    /// Write `cp` (moved into this namespace) over the stored ControlPlane as
    /// gardenlet would: labels, annotations, finalizers and spec, then its
    /// status (a new spec is a new generation; the server keeps deletion
    /// and generation to itself).
    pub async fn store(&self, cp: &ControlPlane) {
        let object = self.moved(&cp_json(cp));
        let api: kube::Api<DynamicObject> = dynamic_api(&self.session.admin, &object).await.0;
        let current = api.get("control-plane").await.expect("stored ControlPlane");
        let mut main = object.clone();
        main["metadata"]["resourceVersion"] = json!(current.metadata.resource_version);
        let status = main.as_object_mut().unwrap().remove("status");
        let main: DynamicObject = serde_json::from_value(main).unwrap();
        let stored = api
            .replace("control-plane", &PostParams::default(), &main)
            .await
            .unwrap_or_else(|e| panic!("store the ControlPlane: {e}"));
        let old = serde_json::to_value(&current).unwrap()["status"].clone();
        let status = status.unwrap_or(Value::Null);
        if status != old {
            let status = if status.is_null() { json!({}) } else { status };
            self.write_status(&api, "control-plane", &stored, status)
                .await;
        }
    }

    /// Create `cp` (moved into this namespace) unless a ControlPlane is
    /// stored, then reconcile the stored one as the watch would hand it over.
    pub async fn reconcile(&self, cp: &ControlPlane) -> Result<Action, controller::Error> {
        if self.get(&self.cp_path()).await.is_none() {
            self.insert(&cp_json(cp)).await;
        }
        self.reconcile_stored().await
    }

    /// Reconcile the ControlPlane as stored now.
    pub async fn reconcile_stored(&self) -> Result<Action, controller::Error> {
        let cp = self.controlplane().await;
        controller::reconcile(Arc::new(cp), self.ctx.clone()).await
    }

    /// Delete the ControlPlane as gardenlet does (our finalizer keeps it,
    /// with a deletion timestamp).
    pub async fn delete_controlplane(&self) {
        self.remove(&self.cp_path()).await;
    }

    /// The stored ManagedResource `name`.
    pub async fn managed_resource(&self, name: &str) -> Option<Value> {
        self.get(&self.mr_path(name)).await
    }

    /// The objects a stored ManagedResource carries (decoded from its Secret).
    pub async fn managed_objects(&self, name: &str) -> Vec<Value> {
        let mr = self
            .managed_resource(name)
            .await
            .unwrap_or_else(|| panic!("ManagedResource {name}"));
        let secret = mr["spec"]["secretRefs"][0]["name"]
            .as_str()
            .expect("secretRef");
        let secret = self
            .get(&self.secret_path(secret))
            .await
            .unwrap_or_else(|| panic!("Secret {secret}"));
        decode_secret(&secret)
    }

    /// Every Secret of the namespace.
    pub async fn secrets(&self) -> Vec<Value> {
        let list = self
            .get(&format!("/api/v1/namespaces/{}/secrets", self.ns()))
            .await
            .expect("Secret list");
        items(&list, "v1", "Secret")
    }

    /// Names of the Secrets of the namespace.
    pub async fn secret_names(&self) -> Vec<String> {
        self.secrets()
            .await
            .iter()
            .map(|s| {
                s["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned()
            })
            .collect()
    }

    /// The ManagedResources of the namespace.
    pub async fn managed_resources(&self) -> Vec<Value> {
        managed_resources(&self.session).await
    }

    /// gardener-resource-manager's finalizer on the ManagedResource `name`,
    /// as it puts one on every ManagedResource it applied.
    pub async fn grm_finalizer(&self, name: &str) {
        self.patch(
            &self.mr_path(name),
            &json!({"metadata": {"finalizers": [GRM_FINALIZER]}}),
        )
        .await;
    }

    /// gardener-resource-manager releasing the ManagedResource `name` once
    /// deleted: its finalizer removed.
    pub async fn grm_release(&self, name: &str) {
        release(&self.session, name).await;
    }

    /// Play gardener-resource-manager (until [`Grm::stop`]): every
    /// ManagedResource of the namespace being deleted is released `after`
    /// its deletion was first seen.
    pub fn grm(&self, after: Duration) -> Grm {
        let session = self.session.clone();
        let released: Arc<std::sync::Mutex<Vec<Value>>> = Default::default();
        let log = released.clone();
        let task = tokio::spawn(async move {
            let mut seen: std::collections::BTreeMap<String, tokio::time::Instant> =
                Default::default();
            loop {
                for mr in managed_resources(&session).await {
                    if !mr["metadata"]["deletionTimestamp"].is_string() {
                        continue;
                    }
                    let name = mr["metadata"]["name"].as_str().unwrap().to_owned();
                    let first = *seen
                        .entry(name.clone())
                        .or_insert_with(tokio::time::Instant::now);
                    if first.elapsed() >= after {
                        release(&session, &name).await;
                        log.lock().unwrap().push(mr);
                    }
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        });
        Grm { task, released }
    }

    /// Patch the status of the object at `path` (merge) as the admin.
    pub async fn patch_status(&self, object: &Value, status: &Value) {
        let object = self.moved(object);
        let (api, name) = dynamic_api(&self.session.admin, &object).await;
        api.patch_status(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": status})),
        )
        .await
        .unwrap_or_else(|e| panic!("status of {name}: {e}"));
    }
}

/// The ManagedResources of the session's namespace.
async fn managed_resources(session: &Session) -> Vec<Value> {
    let list = session
        .get(&format!(
            "/apis/resources.gardener.cloud/v1alpha1/namespaces/{}/managedresources",
            session.namespace
        ))
        .await
        .expect("ManagedResource list");
    items(
        &list,
        "resources.gardener.cloud/v1alpha1",
        "ManagedResource",
    )
}

/// Remove every finalizer of the ManagedResource `name` (absent is fine).
async fn release(session: &Session, name: &str) {
    let path = format!(
        "/apis/resources.gardener.cloud/v1alpha1/namespaces/{}/managedresources/{name}",
        session.namespace
    );
    let request = http::Request::patch(&path)
        .header("content-type", "application/merge-patch+json")
        .body(serde_json::to_vec(&json!({"metadata": {"finalizers": null}})).unwrap())
        .unwrap();
    match session.admin.request::<Value>(request).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 404 => {}
        Err(e) => panic!("release {name}: {e}"),
    }
}

/// The items of a list, with the apiVersion and kind a list leaves out.
fn items(list: &Value, api_version: &str, kind: &str) -> Vec<Value> {
    let mut items = list["items"].as_array().cloned().unwrap_or_default();
    for item in &mut items {
        item["apiVersion"] = json!(api_version);
        item["kind"] = json!(kind);
    }
    items
}
