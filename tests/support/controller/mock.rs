//! A scripted mock API server (tower_test) and ControlPlane fixtures for the
//! controller tests: each test lists the exact calls, in order, and the answers.

use std::sync::Arc;
use std::time::Duration;

use super::*;
use http::{Request, Response};
use kube::client::Body;
use scion::ccm::{self, RenderInput};
use scion::controller::{self, Context};
use scion::gardener::ShootContext;
use scion::gardener::{ControlPlane, ControlPlaneStatus, LastOperation};
use scion::state::Snapshot;
use serde_json::{Value, json};

pub const CP_PATH: &str = "/apis/extensions.gardener.cloud/v1alpha1/namespaces/shoot--foo--bar/controlplanes/control-plane";
pub const NOW: &str = "2026-11-21T03:00:00Z";

/// One expected request and the answer to it.
pub struct Call {
    pub method: &'static str,
    pub path: String,
    pub query: &'static [&'static str],
    pub check: Box<dyn Fn(&Value) + Send>,
    pub status: u16,
    pub reply: Value,
}

pub fn call(method: &'static str, path: impl Into<String>, status: u16, reply: Value) -> Call {
    Call {
        method,
        path: path.into(),
        query: &[],
        check: Box::new(|_| {}),
        status,
        reply,
    }
}

impl Call {
    pub fn body(mut self, check: impl Fn(&Value) + Send + 'static) -> Self {
        self.check = Box::new(check);
        self
    }
    pub fn query(mut self, query: &'static [&'static str]) -> Self {
        self.query = query;
        self
    }
}

pub fn not_found() -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404, "message": "not found"})
}

pub fn context(
    state: Snapshot,
    provider: &str,
) -> (
    Arc<Context>,
    tower_test::mock::Handle<Request<Body>, Response<Body>>,
) {
    let (service, handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let client = kube::Client::new(service, "default");
    let mut ctx = Context::new(
        client,
        Arc::new(state),
        provider,
        Arc::new(builtin_spec(provider).expect("spec")),
    );
    ctx.now = || NOW.to_string();
    ctx.delete_poll = Duration::from_millis(1);
    (Arc::new(ctx), handle)
}

/// Serve `calls` in order, then drop the handle so any further call fails.
pub fn serve(
    mut handle: tower_test::mock::Handle<Request<Body>, Response<Body>>,
    calls: Vec<Call>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        for (i, c) in calls.into_iter().enumerate() {
            let (req, send) = handle
                .next_request()
                .await
                .unwrap_or_else(|| panic!("call #{i} {} {} was never made", c.method, c.path));
            assert_eq!(
                req.method().as_str(),
                c.method,
                "call #{i} method ({})",
                req.uri()
            );
            assert_eq!(req.uri().path(), c.path, "call #{i} path");
            let query = req.uri().query().unwrap_or_default().to_string();
            for q in c.query {
                assert!(
                    query.contains(q),
                    "call #{i} {} query {query:?} lacks {q}",
                    c.path
                );
            }
            let bytes = req.into_body().collect_bytes().await.expect("body");
            let body: Value = if bytes.is_empty() {
                Value::Null
            } else {
                serde_json::from_slice(&bytes).expect("json body")
            };
            (c.check)(&body);
            let response = Response::builder()
                .status(c.status)
                .body(Body::from(serde_json::to_vec(&c.reply).expect("reply")))
                .expect("response");
            send.send_response(response);
        }
    })
}

pub async fn finish(server: tokio::task::JoinHandle<()>) {
    tokio::time::timeout(Duration::from_secs(2), server)
        .await
        .expect("the reconciler did not make every expected call within 2s")
        .expect("a call did not match");
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

pub fn desired(cp: &ControlPlane, shoot: &ShootContext) -> Vec<ccm::DesiredObject> {
    let input = RenderInput {
        cp,
        shoot,
        credentials: Some(&aws_static_secret()),
        kube_apiserver_replicas: None,
        image_override: None,
        images: &scion::profile::ImageVector::builtin(&cp.spec.type_),
    };
    ccm::render(&input, &builtin_spec("aws").expect("spec"))
        .expect("renders")
        .objects
}

pub fn object_path(o: &ccm::DesiredObject) -> String {
    let prefix = if o.group.is_empty() {
        "/api/v1".to_string()
    } else {
        format!("/apis/{}/{}", o.group, o.version)
    };
    format!(
        "{prefix}/namespaces/{}/{}/{}",
        o.namespace, o.plural, o.name
    )
}

/// What the API server returns for an applied object: ours plus server fields.
pub fn live(o: &ccm::DesiredObject) -> Value {
    let mut v = o.object.clone();
    v["metadata"]["resourceVersion"] = json!("42");
    v["metadata"]["uid"] = json!("0000");
    if o.kind == "Deployment" {
        v["spec"]["progressDeadlineSeconds"] = json!(600);
        v["status"] = json!({"replicas": 1});
    }
    v
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
