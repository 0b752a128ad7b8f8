//! Controller flows against a mock API server (tower_test): each test scripts the
//! exact calls the reconciler must make, in order, and what the server answers.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use http::{Request, Response};
use kube::client::Body;
use kube::runtime::controller::Action;
use scion::ccm::{self, ControlPlane, RenderInput, builtin_spec};
use scion::controller::{self, Context};
use scion::state::{LastOperation, ShootContext, Snapshot};
use serde_json::{Value, json};

const CP_PATH: &str = "/apis/extensions.gardener.cloud/v1alpha1/namespaces/shoot--foo--bar/controlplanes/control-plane";
const NOW: &str = "2026-11-21T03:00:00Z";

/// One expected request and the answer to it.
struct Call {
    method: &'static str,
    path: String,
    query: &'static [&'static str],
    check: Box<dyn Fn(&Value) + Send>,
    status: u16,
    reply: Value,
}

fn call(method: &'static str, path: impl Into<String>, status: u16, reply: Value) -> Call {
    Call { method, path: path.into(), query: &[], check: Box::new(|_| {}), status, reply }
}

impl Call {
    fn body(mut self, check: impl Fn(&Value) + Send + 'static) -> Self {
        self.check = Box::new(check);
        self
    }
    fn query(mut self, query: &'static [&'static str]) -> Self {
        self.query = query;
        self
    }
}

fn not_found() -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404, "message": "not found"})
}

fn context(state: Snapshot, provider: &str) -> (Arc<Context>, tower_test::mock::Handle<Request<Body>, Response<Body>>) {
    let (service, handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let client = kube::Client::new(service, "default");
    let mut ctx = Context::new(client, Arc::new(state), provider, Arc::new(builtin_spec(provider).expect("spec")));
    ctx.now = || NOW.to_string();
    ctx.delete_poll = Duration::from_millis(1);
    (Arc::new(ctx), handle)
}

/// Serve `calls` in order, then drop the handle so any further call fails.
fn serve(mut handle: tower_test::mock::Handle<Request<Body>, Response<Body>>, calls: Vec<Call>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        for (i, c) in calls.into_iter().enumerate() {
            let (req, send) = handle
                .next_request()
                .await
                .unwrap_or_else(|| panic!("call #{i} {} {} was never made", c.method, c.path));
            assert_eq!(req.method().as_str(), c.method, "call #{i} method ({})", req.uri());
            assert_eq!(req.uri().path(), c.path, "call #{i} path");
            let query = req.uri().query().unwrap_or_default().to_string();
            for q in c.query {
                assert!(query.contains(q), "call #{i} {} query {query:?} lacks {q}", c.path);
            }
            let bytes = req.into_body().collect_bytes().await.expect("body");
            let body: Value = if bytes.is_empty() { Value::Null } else { serde_json::from_slice(&bytes).expect("json body") };
            (c.check)(&body);
            let response = Response::builder()
                .status(c.status)
                .body(Body::from(serde_json::to_vec(&c.reply).expect("reply")))
                .expect("response");
            send.send_response(response);
        }
    })
}

async fn finish(server: tokio::task::JoinHandle<()>) {
    tokio::time::timeout(Duration::from_secs(2), server)
        .await
        .expect("the reconciler did not make every expected call within 2s")
        .expect("a call did not match");
}

fn state(shoot: ShootContext) -> Snapshot {
    let mut snapshot = Snapshot::default();
    snapshot.insert_shoot(shoot);
    snapshot.insert_object(NS, "cloudprovider", aws_static_secret());
    snapshot
}

fn with_finalizer(mut cp: ControlPlane) -> ControlPlane {
    cp.metadata.finalizers = Some(vec![controller::FINALIZER.to_string()]);
    cp
}

fn succeeded(mut cp: ControlPlane) -> ControlPlane {
    cp.status = Some(ccm::ControlPlaneStatus {
        last_operation: Some(ccm::LastOperation {
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

fn annotated(mut cp: ControlPlane, op: &str) -> ControlPlane {
    cp.metadata.annotations.get_or_insert_with(Default::default).insert(controller::OPERATION_ANNOTATION.into(), op.into());
    cp
}

fn desired(cp: &ControlPlane, shoot: &ShootContext) -> Vec<ccm::DesiredObject> {
    let input = RenderInput { cp, shoot, credentials: Some(&aws_static_secret()), kube_apiserver_replicas: None, image_override: None };
    ccm::render(&input, &builtin_spec("aws").expect("spec")).expect("renders").objects
}

fn object_path(o: &ccm::DesiredObject) -> String {
    let prefix = if o.group.is_empty() { "/api/v1".to_string() } else { format!("/apis/{}/{}", o.group, o.version) };
    format!("{prefix}/namespaces/{}/{}/{}", o.namespace, o.plural, o.name)
}

/// What the API server returns for an applied object: ours plus server fields.
fn live(o: &ccm::DesiredObject) -> Value {
    let mut v = o.object.clone();
    v["metadata"]["resourceVersion"] = json!("42");
    v["metadata"]["uid"] = json!("0000");
    if o.kind == "Deployment" {
        v["spec"]["progressDeadlineSeconds"] = json!(600);
        v["status"] = json!({"replicas": 1});
    }
    v
}

fn cp_json(cp: &ControlPlane) -> Value {
    let mut v = serde_json::to_value(cp).expect("cp");
    v["apiVersion"] = json!("extensions.gardener.cloud/v1alpha1");
    v["kind"] = json!("ControlPlane");
    v
}

fn status_is(op: &'static str, state: &'static str, progress: i64) -> impl Fn(&Value) + Send + 'static {
    move |body: &Value| {
        let last = &body["status"]["lastOperation"];
        assert_eq!((last["type"].as_str(), last["state"].as_str(), last["progress"].as_i64()), (Some(op), Some(state), Some(progress)), "{body}");
        assert_eq!(last["lastUpdateTime"], NOW);
    }
}

#[tokio::test]
async fn create_adds_finalizer_reports_processing_applies_and_succeeds() {
    let shoot = shoot(&["IPv4"], false);
    let cp = aws_cp(None, aws_subnets());
    let (ctx, handle) = context(state(shoot.clone()), "aws");
    let mut calls = vec![
        call("PATCH", CP_PATH, 200, cp_json(&with_finalizer(cp.clone()))).body(|b| {
            assert_eq!(b, &json!([
                {"op": "test", "path": "/metadata/finalizers", "value": null},
                {"op": "add", "path": "/metadata/finalizers", "value": ["extensions.gardener.cloud/controlplane"]},
            ]));
        }),
        call("PATCH", format!("{CP_PATH}/status"), 200, cp_json(&cp)).body(|b| {
            status_is("Create", "Processing", 1)(b);
            assert_eq!(b["status"]["lastOperation"]["description"], "Reconciling the ControlPlane");
        }),
    ];
    for o in desired(&cp, &shoot) {
        let want = o.object.clone();
        calls.push(call("GET", object_path(&o), 404, not_found()));
        calls.push(
            call("PATCH", object_path(&o), 200, live(&o))
                .query(&["fieldManager=scion", "force=true"])
                .body(move |b| assert_eq!(b, &want)),
        );
    }
    calls.push(call("PATCH", format!("{CP_PATH}/status"), 200, cp_json(&cp)).body(|b| {
        status_is("Create", "Succeeded", 100)(b);
        assert_eq!(b["status"]["observedGeneration"], 1);
        assert_eq!(b["status"]["lastError"], Value::Null);
        assert_eq!(b["status"]["lastOperation"]["description"], "Successfully reconciled ControlPlane");
    }));
    let server = serve(handle, calls);
    let action = controller::reconcile(Arc::new(cp), ctx).await.expect("reconciles");
    finish(server).await;
    assert_eq!(action, Action::requeue(Duration::from_secs(600)));
}

#[tokio::test]
async fn unchanged_second_reconcile_only_reads() {
    let shoot = shoot(&["IPv4"], false);
    let cp = succeeded(with_finalizer(aws_cp(None, aws_subnets())));
    let (ctx, handle) = context(state(shoot.clone()), "aws");
    let calls = desired(&cp, &shoot).iter().map(|o| call("GET", object_path(o), 200, live(o))).collect();
    let server = serve(handle, calls);
    let action = controller::reconcile(Arc::new(cp), ctx).await.expect("reconciles");
    finish(server).await;
    assert_eq!(action, Action::requeue(Duration::from_secs(600)));
}

#[tokio::test]
async fn drift_is_repaired_by_applying_only_the_drifted_object() {
    let shoot = shoot(&["IPv4"], false);
    let cp = succeeded(with_finalizer(aws_cp(None, aws_subnets())));
    let (ctx, handle) = context(state(shoot.clone()), "aws");
    let mut calls = Vec::new();
    for o in desired(&cp, &shoot) {
        if o.kind == "Deployment" {
            let mut drifted = live(&o);
            drifted["spec"]["replicas"] = json!(0);
            let want = o.object.clone();
            calls.push(call("GET", object_path(&o), 200, drifted));
            calls.push(call("PATCH", object_path(&o), 200, live(&o)).body(move |b| assert_eq!(b, &want)));
        } else {
            calls.push(call("GET", object_path(&o), 200, live(&o)));
        }
    }
    let server = serve(handle, calls);
    controller::reconcile(Arc::new(cp), ctx).await.expect("reconciles");
    finish(server).await;
}

#[tokio::test]
async fn reconcile_annotation_is_removed_then_reconciled() {
    let shoot = shoot(&["IPv4"], false);
    let cp = annotated(succeeded(with_finalizer(aws_cp(None, aws_subnets()))), "reconcile");
    let (ctx, handle) = context(state(shoot.clone()), "aws");
    let mut calls = vec![
        call("PATCH", CP_PATH, 200, cp_json(&cp)).body(|b| {
            assert_eq!(b, &json!({"metadata": {"annotations": {"gardener.cloud/operation": null}}}));
        }),
        call("PATCH", format!("{CP_PATH}/status"), 200, cp_json(&cp)).body(status_is("Reconcile", "Processing", 1)),
    ];
    for o in desired(&cp, &shoot) {
        calls.push(call("GET", object_path(&o), 200, live(&o)));
    }
    calls.push(call("PATCH", format!("{CP_PATH}/status"), 200, cp_json(&cp)).body(status_is("Reconcile", "Succeeded", 100)));
    let server = serve(handle, calls);
    controller::reconcile(Arc::new(cp), ctx).await.expect("reconciles");
    finish(server).await;
}

#[tokio::test]
async fn wait_for_state_other_types_and_failed_shoots_make_no_call() {
    let mut failed = shoot(&["IPv4"], false);
    failed.last_operation = Some(LastOperation { type_: "Reconcile".into(), state: "Failed".into() });
    let mut other_class = aws_cp(None, aws_subnets());
    other_class.spec.class = Some("seed".into());
    let cases = [
        (annotated(aws_cp(None, aws_subnets()), "wait-for-state"), shoot(&["IPv4"], false), "aws"),
        (aws_cp(None, aws_subnets()), shoot(&["IPv4"], false), "openstack"),
        (other_class, shoot(&["IPv4"], false), "aws"),
        (aws_cp(None, aws_subnets()), failed, "aws"),
    ];
    for (cp, shoot, provider) in cases {
        let (ctx, handle) = context(state(shoot), provider);
        let server = serve(handle, vec![]);
        let action = controller::reconcile(Arc::new(cp), ctx).await.expect("skips without error");
        finish(server).await;
        assert_eq!(action, Action::await_change());
    }
}

#[tokio::test]
async fn render_error_sets_last_error_and_requeues_with_backoff() {
    let shoot = shoot(&["IPv4"], false);
    let cp = aws_cp(None, json!([]));
    let (ctx, handle) = context(state(shoot), "aws");
    let calls = vec![
        call("PATCH", CP_PATH, 200, cp_json(&with_finalizer(cp.clone()))),
        call("PATCH", format!("{CP_PATH}/status"), 200, cp_json(&cp)).body(status_is("Create", "Processing", 1)),
        call("PATCH", format!("{CP_PATH}/status"), 200, cp_json(&cp)).body(|b| {
            status_is("Create", "Error", 50)(b);
            let description = b["status"]["lastError"]["description"].as_str().expect("lastError");
            assert!(description.starts_with("Error reconciling ControlPlane: could not determine subnet"), "{description}");
            assert!(description.contains("purpose public, internal or nodes"), "{description}");
            assert_eq!(b["status"]["lastOperation"]["description"], description);
            assert_eq!(b["status"]["observedGeneration"], 1);
        }),
    ];
    let server = serve(handle, calls);
    let cp = Arc::new(cp);
    let err = controller::reconcile(cp.clone(), ctx.clone()).await.expect_err("fails");
    finish(server).await;
    assert_eq!(controller::error_policy(cp.clone(), &err, ctx.clone()), Action::requeue(Duration::from_secs(1)));
    assert_eq!(controller::error_policy(cp, &err, ctx), Action::requeue(Duration::from_secs(2)));
}

#[tokio::test]
async fn delete_removes_objects_in_order_then_the_finalizer() {
    let shoot = shoot(&["IPv4"], false);
    let mut cp = succeeded(with_finalizer(aws_cp(None, aws_subnets())));
    cp.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH));
    let (ctx, handle) = context(state(shoot), "aws");
    let mut calls = vec![call("PATCH", format!("{CP_PATH}/status"), 200, cp_json(&cp)).body(status_is("Delete", "Processing", 1))];
    let order = [
        ("/apis/apps/v1", "deployments", "cloud-controller-manager"),
        ("/apis/autoscaling.k8s.io/v1", "verticalpodautoscalers", "cloud-controller-manager-vpa"),
        ("/apis/policy/v1", "poddisruptionbudgets", "cloud-controller-manager"),
        ("/api/v1", "services", "cloud-controller-manager"),
        ("/api/v1", "secrets", "shoot-access-cloud-controller-manager"),
        ("/api/v1", "configmaps", "cloud-provider-config"),
    ];
    for (prefix, plural, name) in order {
        let path = format!("{prefix}/namespaces/{NS}/{plural}/{name}");
        let gone = json!({"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 200});
        calls.push(call("DELETE", path.clone(), 200, gone));
        calls.push(call("GET", path, 404, not_found()));
    }
    calls.push(call("PATCH", format!("{CP_PATH}/status"), 200, cp_json(&cp)).body(status_is("Delete", "Succeeded", 100)));
    calls.push(call("PATCH", CP_PATH, 200, cp_json(&cp)).body(|b| {
        assert_eq!(b, &json!([
            {"op": "test", "path": "/metadata/finalizers/0", "value": "extensions.gardener.cloud/controlplane"},
            {"op": "remove", "path": "/metadata/finalizers/0"},
        ]));
    }));
    let server = serve(handle, calls);
    let action = controller::reconcile(Arc::new(cp), ctx).await.expect("deletes");
    finish(server).await;
    assert_eq!(action, Action::await_change());
}

#[tokio::test]
async fn blocked_deletion_names_the_object_and_its_finalizers() {
    let shoot = shoot(&["IPv4"], false);
    let mut cp = with_finalizer(aws_cp(None, aws_subnets()));
    cp.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH));
    let (ctx, handle) = context(state(shoot.clone()), "aws");
    let mut ctx = Arc::try_unwrap(ctx).ok().expect("sole owner");
    ctx.delete_wait = Duration::ZERO;
    let ctx = Arc::new(ctx);
    let deployment = desired(&cp, &shoot).into_iter().find(|o| o.kind == "Deployment").expect("deployment");
    let mut stuck = live(&deployment);
    stuck["metadata"]["finalizers"] = json!(["example.com/protect"]);
    let calls = vec![
        call("PATCH", format!("{CP_PATH}/status"), 200, cp_json(&cp)).body(status_is("Delete", "Processing", 1)),
        call("DELETE", object_path(&deployment), 200, stuck.clone()),
        call("GET", object_path(&deployment), 200, stuck),
        call("PATCH", format!("{CP_PATH}/status"), 200, cp_json(&cp)).body(|b| {
            status_is("Delete", "Error", 50)(b);
            let d = b["status"]["lastError"]["description"].as_str().expect("lastError");
            assert!(d.contains("Deployment shoot--foo--bar/cloud-controller-manager still exists"), "{d}");
            assert!(d.contains("example.com/protect"), "{d}");
        }),
    ];
    let server = serve(handle, calls);
    let err = controller::reconcile(Arc::new(cp), ctx).await.expect_err("blocked");
    finish(server).await;
    assert!(err.to_string().contains("cloud-controller-manager"), "{err}");
}

#[tokio::test]
async fn migrate_keeps_objects_and_drops_finalizers() {
    let cp = annotated(succeeded(with_finalizer(aws_cp(None, aws_subnets()))), "migrate");
    let (ctx, handle) = context(state(shoot(&["IPv4"], false)), "aws");
    let calls = vec![
        call("PATCH", format!("{CP_PATH}/status"), 200, cp_json(&cp)).body(status_is("Migrate", "Processing", 1)),
        call("PATCH", format!("{CP_PATH}/status"), 200, cp_json(&cp)).body(status_is("Migrate", "Succeeded", 100)),
        call("PATCH", CP_PATH, 200, cp_json(&cp)).body(|b| {
            assert_eq!(b, &json!({"metadata": {"finalizers": null, "annotations": {"gardener.cloud/operation": null}}}));
        }),
    ];
    let server = serve(handle, calls);
    let action = controller::reconcile(Arc::new(cp), ctx).await.expect("migrates");
    finish(server).await;
    assert_eq!(action, Action::await_change());
}

#[tokio::test]
async fn migrated_object_is_skipped_until_restored() {
    let mut cp = with_finalizer(aws_cp(None, aws_subnets()));
    cp.status = Some(ccm::ControlPlaneStatus {
        last_operation: Some(ccm::LastOperation { type_: "Migrate".into(), state: "Succeeded".into(), progress: 100, ..Default::default() }),
        observed_generation: Some(1),
        ..Default::default()
    });
    let (ctx, handle) = context(state(shoot(&["IPv4"], false)), "aws");
    let server = serve(handle, vec![]);
    assert_eq!(controller::reconcile(Arc::new(cp), ctx).await.expect("skips"), Action::await_change());
    finish(server).await;
}

#[tokio::test]
async fn hibernated_shoot_waits_for_kube_apiserver_before_scaling_down() {
    let shoot = shoot(&["IPv4"], true);
    let cp = succeeded(with_finalizer(aws_cp(None, aws_subnets())));
    let (ctx, handle) = context(state(shoot.clone()), "aws");
    let kas = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "kube-apiserver", "namespace": NS}, "spec": {"replicas": 2, "selector": {}, "template": {}}});
    let input = RenderInput { cp: &cp, shoot: &shoot, credentials: Some(&aws_static_secret()), kube_apiserver_replicas: Some(2), image_override: None };
    let objects = ccm::render(&input, &builtin_spec("aws").expect("spec")).expect("renders").objects;
    let mut calls = vec![call("GET", format!("/apis/apps/v1/namespaces/{NS}/deployments/kube-apiserver"), 200, kas)];
    for o in &objects {
        calls.push(call("GET", object_path(o), 200, live(o)));
    }
    let server = serve(handle, calls);
    let action = controller::reconcile(Arc::new(cp), ctx).await.expect("reconciles");
    finish(server).await;
    assert_eq!(action, Action::requeue(Duration::from_secs(2)));
}
