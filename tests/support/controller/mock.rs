//! The controller tests' reconciler with test clocks, ControlPlane fixtures,
//! and the stateful fake of `fake.rs` (tower_test) for the two tests on
//! tokio's paused clock and the scale example.

use std::sync::Arc;
use std::time::Duration;

use super::*;
use http::{Request, Response};
use kube::client::Body;
use scion::controller::{self, ControlPlaneActuator, ControlPlaneReconciler};
use scion::gardener::ShootContext;
use scion::gardener::{ControlPlane, ControlPlaneStatus, LastOperation};
use scion::render::{self, RenderInput};
use scion::state::Snapshot;
use serde_json::{Value, json};

pub const CP_PATH: &str = "/apis/extensions.gardener.cloud/v1alpha1/namespaces/shoot--foo--bar/controlplanes/control-plane";
pub const NOW: &str = "2026-11-21T03:00:00Z";

/// The certificates' clock: 2026-11-18.
pub const NOW_UNIX: i64 = 1_795_000_000;

/// The reconciler of `provider` with test clocks and a 1 ms deletion poll.
pub fn reconciler(client: kube::Client, state: Snapshot, provider: &str) -> ControlPlaneReconciler {
    let state: Arc<dyn scion::state::StateSource> = Arc::new(state);
    let mut actuator = ControlPlaneActuator::new(
        client.clone(),
        state.clone(),
        provider,
        Arc::new(builtin_spec(provider).expect("spec")),
    );
    actuator.delete_poll = Duration::from_millis(1);
    actuator.now_unix = || NOW_UNIX;
    let mut ctx = ControlPlaneReconciler::new(client, state, provider, actuator);
    ctx.now = || NOW.to_string();
    ctx
}

/// A reconciler against the stateful fake; the fake's task ends when the
/// reconciler (and every client clone) is dropped.
pub struct Fake {
    pub ctx: Arc<ControlPlaneReconciler>,
    pub api: Arc<std::sync::Mutex<super::fake::FakeApi>>,
    pub server: tokio::task::JoinHandle<()>,
}

pub fn fake(state: Snapshot, provider: &str) -> Fake {
    fake_with(state, provider, None, |_| {})
}

/// A reconciler against the stateful fake `api` (a new one when `None`: a
/// second reconciler on the same API is a restarted or upgraded scion),
/// adjusted by `configure`.
pub fn fake_with(
    state: Snapshot,
    provider: &str,
    api: Option<Arc<std::sync::Mutex<super::fake::FakeApi>>>,
    configure: impl FnOnce(&mut ControlPlaneReconciler),
) -> Fake {
    let (service, handle) =
        tower_test::mock::pair::<Request<Body>, Response<super::fake::FakeBody>>();
    let client = kube::Client::new(service, "default");
    let api = api.unwrap_or_default();
    let server = super::fake::serve(api.clone(), handle);
    let mut ctx = reconciler(client, state, provider);
    configure(&mut ctx);
    Fake {
        ctx: Arc::new(ctx),
        api,
        server,
    }
}

impl Fake {
    /// Store `cp` in the fake and reconcile it as the watch would hand it over.
    pub async fn reconcile(
        &self,
        cp: &ControlPlane,
    ) -> Result<kube::runtime::controller::Action, controller::Error> {
        let path = super::fake::path_of(&cp_json(cp));
        let stored = {
            let mut api = self.api.lock().unwrap();
            if api.get(&path).is_none() {
                api.insert(cp_json(cp));
            }
            api.get(&path).cloned().unwrap()
        };
        let mut cp = cp.clone();
        cp.metadata.resource_version = stored["metadata"]["resourceVersion"]
            .as_str()
            .map(String::from);
        controller::reconcile(Arc::new(cp), self.ctx.clone()).await
    }

    /// The ControlPlane as the fake stores it now.
    pub fn controlplane(&self) -> ControlPlane {
        let api = self.api.lock().unwrap();
        serde_json::from_value(api.get(CP_PATH).cloned().expect("stored ControlPlane"))
            .expect("ControlPlane")
    }

    pub fn lines(&self) -> Vec<String> {
        self.api.lock().unwrap().lines()
    }

    pub fn clear(&self) {
        self.api.lock().unwrap().clear_calls();
    }

    pub fn get(&self, path: &str) -> Option<Value> {
        self.api.lock().unwrap().get(path).cloned()
    }

    /// The recorded writes as `METHOD path` lines, paths shortened by [`short`].
    pub fn writes(&self) -> Vec<String> {
        self.api
            .lock()
            .unwrap()
            .writes()
            .iter()
            .map(|c| short(&c.line()))
            .collect()
    }

    /// Replace the stored ControlPlane by `cp` (as gardenlet would write it).
    pub fn store(&self, cp: &ControlPlane) {
        let mut api = self.api.lock().unwrap();
        api.remove(CP_PATH);
        api.insert(cp_json(cp));
    }

    /// Reconcile the ControlPlane as the fake stores it now.
    pub async fn reconcile_stored(
        &self,
    ) -> Result<kube::runtime::controller::Action, controller::Error> {
        let cp = self.controlplane();
        controller::reconcile(Arc::new(cp), self.ctx.clone()).await
    }

    /// The stored ManagedResource `name` of the test namespace.
    pub fn managed_resource(&self, name: &str) -> Option<Value> {
        self.get(&mr_path(name))
    }

    /// The objects a stored ManagedResource carries (decoded from its Secret).
    pub fn managed_objects(&self, name: &str) -> Vec<Value> {
        let mr = self
            .managed_resource(name)
            .unwrap_or_else(|| panic!("ManagedResource {name}"));
        let secret = mr["spec"]["secretRefs"][0]["name"]
            .as_str()
            .expect("secretRef")
            .to_string();
        let secret = self
            .get(&secret_path(&secret))
            .unwrap_or_else(|| panic!("Secret {secret}"));
        decode_secret(&secret)
    }

    /// Names of the stored Secrets of the test namespace.
    pub fn secret_names(&self) -> Vec<String> {
        let api = self.api.lock().unwrap();
        api.list(&format!("/api/v1/namespaces/{NS}/secrets"))
            .iter()
            .map(|s| {
                s["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string()
            })
            .collect()
    }
}

/// The objects in a ManagedResource Secret.
pub fn decode_secret(secret: &Value) -> Vec<Value> {
    use base64::Engine as _;
    let mut data = std::collections::BTreeMap::new();
    for (k, v) in secret["data"].as_object().expect("data") {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(v.as_str().expect("base64 text"))
            .expect("base64");
        data.insert(k.clone(), bytes);
    }
    scion::managedresources::decode(&data).expect("decodes")
}

pub fn mr_path(name: &str) -> String {
    format!("/apis/resources.gardener.cloud/v1alpha1/namespaces/{NS}/managedresources/{name}")
}

pub fn secret_path(name: &str) -> String {
    format!("/api/v1/namespaces/{NS}/secrets/{name}")
}

/// A recorded line with the test namespace's paths shortened: `cp`,
/// `cp/status`, `mr/<name>`, `secret/<name>`, `deployment/<name>`.
pub fn short(line: &str) -> String {
    line.replace(CP_PATH, "cp")
        .replace(
            &format!("/apis/resources.gardener.cloud/v1alpha1/namespaces/{NS}/managedresources"),
            "mr",
        )
        .replace(&format!("/api/v1/namespaces/{NS}/secrets"), "secret")
        .replace(
            &format!("/apis/apps/v1/namespaces/{NS}/deployments"),
            "deployment",
        )
}

/// `name` with the hash suffixes Gardener appends (`-<8 hex>`, `-<5 hex>`) cut off.
pub fn unhashed(name: &str) -> String {
    let mut parts: Vec<&str> = name.split('-').collect();
    while parts.len() > 1 {
        let last = parts[parts.len() - 1];
        if (last.len() == 8 || last.len() == 5) && last.chars().all(|c| c.is_ascii_hexdigit()) {
            parts.pop();
        } else {
            break;
        }
    }
    parts.join("-")
}

pub fn state(shoot: ShootContext) -> Snapshot {
    let mut snapshot = Snapshot::default();
    snapshot.insert_shoot(shoot);
    snapshot.insert_object(NS, "cloudprovider", aws_static_secret());
    snapshot
}

pub fn with_finalizer(mut cp: ControlPlane) -> ControlPlane {
    cp.metadata.finalizers = Some(vec![controller::FINALIZER.to_string()]);
    cp
}

pub fn succeeded(mut cp: ControlPlane) -> ControlPlane {
    cp.status = Some(ControlPlaneStatus {
        last_operation: Some(LastOperation {
            type_: "Reconcile".into(),
            state: "Succeeded".into(),
            progress: 100,
            description: "Successfully reconciled ControlPlane".into(),
            last_update_time: NOW.into(),
        }),
        observed_generation: cp.metadata.generation,
        ..Default::default()
    });
    cp
}

pub fn annotated(mut cp: ControlPlane, op: &str) -> ControlPlane {
    cp.metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(controller::OPERATION_ANNOTATION.into(), op.into());
    cp
}

/// The render the controller makes for `cp` with `server_secret`.
pub fn desired(cp: &ControlPlane, shoot: &ShootContext, server_secret: &str) -> render::Rendered {
    let spec = builtin_spec("aws").expect("spec");
    let certificates = scion::secrets::Certificates::fixed(server_secret, &spec.certificates(), "");
    let images = scion::profile::ImageVector::builtin(&cp.spec.type_);
    let credentials = aws_static_secret();
    let input = RenderInput {
        credentials: Some(&credentials),
        ..RenderInput::new(cp, shoot, &images, &certificates)
    };
    render::render(&input, &spec).expect("renders")
}

pub fn cp_json(cp: &ControlPlane) -> Value {
    let mut v = serde_json::to_value(cp).expect("cp");
    v["apiVersion"] = json!("extensions.gardener.cloud/v1alpha1");
    v["kind"] = json!("ControlPlane");
    v
}

pub fn status_is(
    op: &'static str,
    state: &'static str,
    progress: i64,
) -> impl Fn(&Value) + Send + 'static {
    move |body: &Value| {
        let last = &body["status"]["lastOperation"];
        assert_eq!(
            (
                last["type"].as_str(),
                last["state"].as_str(),
                last["progress"].as_i64()
            ),
            (Some(op), Some(state), Some(progress)),
            "{body}"
        );
        assert_eq!(last["lastUpdateTime"], NOW);
    }
}
