//! Reconcile flows of the ControlPlane controller against the stateful mock
//! API server (tower_test, every call recorded): create, nothing requested,
//! the reconcile annotation, a scion upgrade, skips, errors and the timeout.

mod support;

use std::sync::Arc;
use std::time::Duration;

use kube::runtime::controller::Action;
use scion::controller;
use scion::gardener::cluster::LastOperation;
use serde_json::{Value, json};
use support::controller::mock::*;
use support::controller::*;

const CONFIG_MR: &str = "extension-controlplane-configuration-seed";
const SEED_MR: &str = "extension-controlplane-seed";
const SHOOT_MR: &str = "extension-controlplane-shoot";

/// The writes with the hash suffixes of Secret names cut off.
fn unhashed_writes(f: &Fake) -> Vec<String> {
    f.writes()
        .iter()
        .map(|w| match w.rsplit_once('/') {
            Some((head, name)) => format!("{head}/{}", unhashed(name)),
            None => w.clone(),
        })
        .collect()
}

/// A created ControlPlane, as the fake stores it after a successful reconcile.
async fn created(shoot: &scion::gardener::ShootContext) -> Fake {
    let f = fake(state(shoot.clone()), "aws");
    f.reconcile(&aws_cp(None, aws_subnets()))
        .await
        .expect("reconciles");
    f
}

#[tokio::test]
async fn create_writes_certificates_access_secret_and_three_managed_resources() {
    let shoot = shoot(&["IPv4"], false);
    let f = fake(state(shoot.clone()), "aws");
    let action = f
        .reconcile(&aws_cp(None, aws_subnets()))
        .await
        .expect("reconciles");
    assert_eq!(action, Action::requeue(Duration::from_secs(600)));
    assert_eq!(
        unhashed_writes(&f),
        [
            "PATCH cp",
            "PATCH cp/status",
            "POST secret",
            "POST secret",
            "POST secret",
            "POST secret",
            "POST secret",
            "POST mr",
            "POST secret",
            "POST mr",
            "POST secret",
            "POST mr",
            "PATCH cp/status",
        ]
    );
    let api = f.api.lock().unwrap();
    let posted: Vec<String> = api
        .calls
        .iter()
        .filter(|c| c.method == "POST")
        .map(|c| unhashed(c.body["metadata"]["name"].as_str().expect("name")))
        .collect();
    assert_eq!(
        posted,
        [
            "ca-provider-aws-controlplane",
            "ca-provider-aws-controlplane-bundle",
            "cloud-controller-manager-server",
            "shoot-access-cloud-controller-manager",
            CONFIG_MR,
            CONFIG_MR,
            SEED_MR,
            SEED_MR,
            SHOOT_MR,
            SHOOT_MR,
        ]
    );
    let finalizer = &api.calls[0].body;
    assert_eq!(
        finalizer,
        &json!([
            {"op": "test", "path": "/metadata/finalizers", "value": null},
            {"op": "add", "path": "/metadata/finalizers", "value": ["extensions.gardener.cloud/controlplane"]},
        ])
    );
    drop(api);
    let cp = f.controlplane();
    let status = cp.status.expect("status");
    let last = status.last_operation.expect("lastOperation");
    assert_eq!(
        (last.type_.as_str(), last.state.as_str(), last.progress),
        ("Create", "Succeeded", 100)
    );
    assert_eq!(last.description, "Successfully reconciled ControlPlane");
    assert_eq!(status.observed_generation, Some(1));

    // Seed class for the seed-side ManagedResources, the shoot one with
    // Gardener's shoot defaults; each references its immutable Secret.
    for (name, class) in [
        (CONFIG_MR, Some("seed")),
        (SEED_MR, Some("seed")),
        (SHOOT_MR, None),
    ] {
        let mr = f.managed_resource(name).expect("stored");
        assert_eq!(mr["spec"]["class"].as_str(), class, "{name}");
        let secret = mr["spec"]["secretRefs"][0]["name"].as_str().expect("ref");
        assert_eq!(unhashed(secret), name);
        let stored = f.get(&secret_path(secret)).expect("secret");
        assert_eq!(stored["immutable"], true);
        assert_eq!(
            stored["metadata"]["labels"]["resources.gardener.cloud/garbage-collectable-reference"],
            "true"
        );
    }
    let shoot_mr = f.managed_resource(SHOOT_MR).expect("shoot MR");
    assert_eq!(shoot_mr["spec"]["keepObjects"], false);
    assert_eq!(
        shoot_mr["spec"]["injectLabels"],
        json!({"shoot.gardener.cloud/no-cleanup": "true"})
    );

    // The CCM mounts the serving certificate Secret the secrets manager created.
    let seed = f.managed_objects(SEED_MR);
    let deployment = seed
        .iter()
        .find(|o| o["kind"] == "Deployment")
        .expect("Deployment");
    let volumes = deployment["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .expect("volumes");
    let server = volumes
        .iter()
        .find(|v| v["name"] == "cloud-controller-manager-server")
        .expect("server volume")["secret"]["secretName"]
        .as_str()
        .expect("secretName");
    let stored = f.get(&secret_path(server)).expect("server Secret exists");
    assert_eq!(stored["type"], "kubernetes.io/tls");
    assert!(seed.iter().any(|o| o["kind"] == "PrometheusRule"));
    let shoot_objects = f.managed_objects(SHOOT_MR);
    assert_eq!(shoot_objects[0]["kind"], "ClusterRoleBinding");
}

#[tokio::test]
async fn nothing_requested_makes_no_call_at_all() {
    let shoot = shoot(&["IPv4"], false);
    let f = created(&shoot).await;
    f.clear();
    for _ in 0..3 {
        let action = f.reconcile_stored().await.expect("settled");
        assert_eq!(action, Action::requeue(Duration::from_secs(600)));
    }
    assert_eq!(f.lines(), Vec::<String>::new());
}

#[tokio::test]
async fn reconcile_annotation_is_removed_and_an_unchanged_render_writes_no_managed_resource() {
    let shoot = shoot(&["IPv4"], false);
    let f = created(&shoot).await;
    f.store(&annotated(f.controlplane(), "reconcile"));
    f.clear();
    f.reconcile_stored().await.expect("reconciles");
    assert_eq!(
        f.writes(),
        ["PATCH cp", "PATCH cp/status", "PATCH cp/status"]
    );
    let api = f.api.lock().unwrap();
    assert_eq!(
        api.calls
            .iter()
            .find(|c| c.method == "PATCH")
            .expect("patch")
            .body,
        json!({"metadata": {"annotations": {"gardener.cloud/operation": null}}})
    );
    drop(api);
    let cp = f.controlplane();
    assert!(
        !cp.metadata
            .annotations
            .unwrap_or_default()
            .contains_key("gardener.cloud/operation")
    );
    let last = cp.status.and_then(|s| s.last_operation).expect("last");
    assert_eq!(
        (last.type_.as_str(), last.state.as_str()),
        ("Reconcile", "Succeeded")
    );
}

/// The proof: a new scion (here a new CCM image) rolls no CCM until
/// gardenlet asks; then it writes the new seed ManagedResource and leaves the
/// old Secret to GRM's garbage collector.
#[tokio::test]
async fn an_upgraded_scion_writes_nothing_until_a_reconcile_is_requested() {
    let shoot = shoot(&["IPv4"], false);
    let old = created(&shoot).await;
    let old_secret =
        old.managed_resource(SEED_MR).expect("seed MR")["spec"]["secretRefs"][0]["name"]
            .as_str()
            .expect("ref")
            .to_string();
    let upgraded = fake_with(state(shoot.clone()), "aws", Some(old.api.clone()), |r| {
        r.actuator.image_override = Some("registry.example/ccm:v2".into());
    });
    upgraded.clear();
    for _ in 0..3 {
        upgraded.reconcile_stored().await.expect("settled");
    }
    assert_eq!(
        upgraded.lines(),
        Vec::<String>::new(),
        "an upgrade alone made calls"
    );

    upgraded.store(&annotated(upgraded.controlplane(), "reconcile"));
    upgraded.clear();
    upgraded.reconcile_stored().await.expect("reconciles");
    assert_eq!(
        unhashed_writes(&upgraded),
        [
            "PATCH cp",
            "PATCH cp/status",
            "POST secret",
            "PUT mr/extension-controlplane-seed",
            "PATCH cp/status"
        ]
    );
    let image = upgraded
        .managed_objects(SEED_MR)
        .into_iter()
        .find(|o| o["kind"] == "Deployment")
        .expect("Deployment")["spec"]["template"]["spec"]["containers"][0]["image"]
        .clone();
    assert_eq!(image, "registry.example/ccm:v2");
    let old = upgraded
        .get(&secret_path(&old_secret))
        .expect("old Secret kept for GRM");
    assert_eq!(
        old["metadata"]["labels"]["resources.gardener.cloud/garbage-collectable-reference"],
        "true"
    );
}

/// Issue 21: a spec change without `gardener.cloud/operation` waits for
/// gardenlet (the shoot's maintenance window), as in Gardener's extensions.
/// Every case of the predicates, through the reconciler and the fake API:
/// the same process looking again (UPDATE) and a restarted one (CREATE).
#[tokio::test]
async fn only_gardeners_predicates_start_an_operation() {
    let shoot = shoot(&["IPv4"], false);
    let f = created(&shoot).await;
    let renders = ["PATCH cp/status", "PATCH cp/status"];

    // UPDATE: a new generation without the annotation: nothing.
    let mut cp = f.controlplane();
    cp.metadata.generation = Some(2);
    f.store(&cp);
    f.clear();
    f.reconcile_stored().await.expect("settled");
    assert_eq!(f.lines(), Vec::<String>::new(), "spec change, same process");

    // CREATE (a restarted scion): the same, last operation Succeeded: nothing.
    let restarted = || fake_with(state(shoot.clone()), "aws", Some(f.api.clone()), |_| {});
    let g = restarted();
    g.clear();
    g.reconcile_stored().await.expect("settled");
    assert_eq!(g.lines(), Vec::<String>::new(), "spec change, restarted");

    // The annotation: rendered, the new generation observed.
    g.store(&annotated(g.controlplane(), "reconcile"));
    g.clear();
    g.reconcile_stored().await.expect("reconciles");
    assert_eq!(
        g.writes(),
        ["PATCH cp", "PATCH cp/status", "PATCH cp/status"]
    );
    assert_eq!(
        g.controlplane().status.expect("status").observed_generation,
        Some(2)
    );

    // UPDATE: a last operation that did not succeed (written by someone
    // else; this process succeeded): nothing — Gardener passes it on CREATE only.
    let mut cp = g.controlplane();
    if let Some(last) = cp.status.as_mut().and_then(|s| s.last_operation.as_mut()) {
        last.state = "Error".into();
    }
    g.store(&cp);
    g.clear();
    g.reconcile_stored().await.expect("settled");
    assert_eq!(g.lines(), Vec::<String>::new(), "Error on an update");

    // CREATE: a restart finds it not Succeeded: rendered.
    let h = restarted();
    h.clear();
    h.reconcile_stored().await.expect("reconciles");
    assert_eq!(h.writes(), renders, "Error on the first look");

    // CREATE: no last operation at all: Create.
    let i = restarted();
    let mut cp = i.controlplane();
    cp.status = None;
    i.store(&cp);
    i.clear();
    i.reconcile_stored().await.expect("creates");
    assert_eq!(i.writes(), renders, "no lastOperation");

    // restore and migrate annotations are requests on any look.
    for op in ["restore", "migrate"] {
        let j = restarted();
        j.reconcile_stored().await.expect("settled first");
        j.store(&annotated(succeeded(j.controlplane()), op));
        j.clear();
        j.reconcile_stored().await.expect("operates");
        assert!(
            j.writes()
                .iter()
                .filter(|w| *w == "PATCH cp/status")
                .count()
                >= 2,
            "{op}: {:?}",
            j.writes()
        );
    }
}

/// `--ignore-operation-annotation`: a changed Cluster renders without a request.
#[tokio::test]
async fn ignoring_the_operation_annotation_renders_on_every_change() {
    let shoot = shoot(&["IPv4"], false);
    let base = created(&shoot).await;
    let mut f = fake_with(state(shoot.clone()), "aws", Some(base.api.clone()), |r| {
        r.ignore_operation_annotation = true;
    });
    f.clear();
    f.reconcile_stored().await.expect("reconciles");
    assert_eq!(
        f.writes(),
        ["PATCH cp/status", "PATCH cp/status"],
        "first look renders"
    );
    f.clear();
    f.reconcile_stored().await.expect("settled");
    assert_eq!(f.lines(), Vec::<String>::new(), "nothing changed since");
    // A new generation without the annotation: rendered (GenerationChangedPredicate).
    let mut cp = f.controlplane();
    cp.metadata.generation = Some(2);
    f.store(&cp);
    f.clear();
    f.reconcile_stored().await.expect("reconciles");
    assert_eq!(
        f.writes(),
        ["PATCH cp/status", "PATCH cp/status"],
        "new generation"
    );
    f.clear();
    // The Cluster moves (a new resource version): rendered again, unasked.
    let mut changed = shoot.clone();
    changed.resource_version = Some("8".into());
    Arc::get_mut(&mut f.ctx).expect("sole owner").state = Arc::new(state(changed));
    f.reconcile_stored().await.expect("reconciles");
    assert_eq!(f.writes(), ["PATCH cp/status", "PATCH cp/status"]);
    f.clear();
    f.reconcile_stored().await.expect("settled");
    assert_eq!(f.lines(), Vec::<String>::new());
}

#[tokio::test]
async fn wait_for_state_other_types_and_failed_shoots_make_no_call() {
    let mut failed = shoot(&["IPv4"], false);
    failed.shoot.status.last_operation = Some(LastOperation {
        type_: "Reconcile".into(),
        state: "Failed".into(),
    });
    let mut other_class = aws_cp(None, aws_subnets());
    other_class.spec.class = Some("seed".into());
    let cases = [
        (
            annotated(aws_cp(None, aws_subnets()), "wait-for-state"),
            shoot(&["IPv4"], false),
            "aws",
        ),
        (
            aws_cp(None, aws_subnets()),
            shoot(&["IPv4"], false),
            "openstack",
        ),
        (other_class, shoot(&["IPv4"], false), "aws"),
        (aws_cp(None, aws_subnets()), failed, "aws"),
    ];
    for (cp, shoot, provider) in cases {
        let f = fake(state(shoot), provider);
        let action = f.reconcile(&cp).await.expect("skips without error");
        assert_eq!(action, Action::await_change());
        assert_eq!(f.lines(), Vec::<String>::new());
    }
}

#[tokio::test]
async fn render_error_sets_last_error_and_requeues_with_backoff() {
    let shoot = shoot(&["IPv4"], false);
    let cp = aws_cp(None, json!([]));
    let f = fake(state(shoot), "aws");
    let err = f.reconcile(&cp).await.expect_err("fails");
    let status = f.controlplane().status.expect("status");
    let last = status.last_operation.expect("last");
    assert_eq!(
        (last.type_.as_str(), last.state.as_str(), last.progress),
        ("Create", "Error", 50)
    );
    let description = status.last_error.expect("lastError").description;
    assert!(
        description.starts_with("Error reconciling ControlPlane: could not determine subnet"),
        "{description}"
    );
    assert_eq!(last.description, description);
    assert_eq!(status.observed_generation, Some(1));
    let cp = Arc::new(f.controlplane());
    assert_eq!(
        controller::error_policy(cp.clone(), &err, f.ctx.clone()),
        Action::requeue(Duration::from_secs(1))
    );
    // The event of our own Error status patch does not bypass the backoff.
    f.clear();
    let waiting = controller::reconcile(cp.clone(), f.ctx.clone())
        .await
        .expect("waits for the backoff");
    assert!(
        format!("{waiting:?}").contains("requeue_after: Some("),
        "{waiting:?}"
    );
    assert_eq!(f.lines(), Vec::<String>::new());
    // A new request (the reconcile annotation) is served at once, and fails again: 2 s.
    f.store(&annotated((*cp).clone(), "reconcile"));
    let err = f.reconcile_stored().await.expect_err("fails again");
    assert_eq!(
        controller::error_policy(cp, &err, f.ctx.clone()),
        Action::requeue(Duration::from_secs(2))
    );
}

#[tokio::test]
async fn a_hanging_api_server_ends_the_reconcile_at_the_timeout() {
    let cp = aws_cp(None, aws_subnets());
    let (ctx, mut handle) = context(state(shoot(&["IPv4"], false)), "aws");
    let mut ctx = Arc::try_unwrap(ctx).ok().expect("sole owner");
    ctx.timeout = Duration::from_millis(200);
    let server = tokio::spawn(async move {
        // Take the first request (the finalizer patch) and never answer it.
        let _pending = handle.next_request().await.expect("a request");
        // After the timeout the reconciler records it in the status.
        let (req, send) = handle.next_request().await.expect("the status patch");
        assert_eq!(req.uri().path(), format!("{CP_PATH}/status"));
        let body: Value =
            serde_json::from_slice(&req.into_body().collect_bytes().await.expect("body"))
                .expect("json");
        assert_eq!(body["status"]["lastOperation"]["state"], "Error");
        let d = body["status"]["lastError"]["description"]
            .as_str()
            .expect("lastError");
        assert!(d.contains("did not finish within 200ms"), "{d}");
        let reply = http::Response::builder()
            .status(200)
            .body(kube::client::Body::from(
                serde_json::to_vec(&cp_json(&aws_cp(None, aws_subnets()))).expect("json"),
            ))
            .expect("response");
        send.send_response(reply);
    });
    let err = controller::reconcile(Arc::new(cp), Arc::new(ctx))
        .await
        .expect_err("times out");
    assert!(
        matches!(err, controller::Error::Timeout(d) if d == Duration::from_millis(200)),
        "{err}"
    );
    finish(server).await;
}

/// The reconciler's memory of objects (first look or not, the last
/// operation) is bounded: an object not looked at for two resyncs and a
/// reconcile bound (deleted, say) is forgotten.
#[tokio::test(start_paused = true)]
async fn the_memory_of_objects_gone_is_pruned() {
    let shoot = shoot(&["IPv4"], false);
    let f = created(&shoot).await;
    let other = {
        let mut cp = f.controlplane();
        cp.metadata.name = Some("other".into());
        cp
    };
    controller::reconcile(Arc::new(other), f.ctx.clone())
        .await
        .expect("settled");
    assert_eq!(f.ctx.remembered(), 2);
    tokio::time::advance(Duration::from_secs(600 * 2 + 180)).await;
    f.reconcile_stored().await.expect("settled");
    assert_eq!(f.ctx.remembered(), 1, "only the one looked at since");
}
