//! Reconcile flows of the ControlPlane controller against a real
//! kube-apiserver (the test bed shared by this binary, a namespace and an
//! identity per test, every call read back from the audit log): create,
//! nothing requested, the reconcile annotation, a scion upgrade, Gardener's
//! predicates, skips and errors.
//!
//! The timeout needs an API server that never answers: a client-side layer
//! (`testbed::intercept::Hold`) holds the request, everything else is the
//! real server's.

mod support;

use std::sync::Arc;
use std::time::Duration;

use kube::runtime::controller::Action;
use scion::controller;
use scion::gardener::cluster::LastOperation;
use serde_json::json;
use support::controller::mock::*;
use support::controller::real::*;
use support::controller::*;
use support::testbed::intercept::Hold;

const CONFIG_MR: &str = "extension-controlplane-configuration-seed";
const SEED_MR: &str = "extension-controlplane-seed";
const SHOOT_MR: &str = "extension-controlplane-shoot";
const SHOOT_CRDS_MR: &str = "extension-controlplane-shoot-crds";

/// The writes with the hash suffixes of Secret names cut off.
async fn unhashed_writes(f: &Real) -> Vec<String> {
    f.writes()
        .await
        .iter()
        .map(|w| match w.rsplit_once('/') {
            Some((head, name)) => format!("{head}/{}", unhashed(name)),
            None => w.clone(),
        })
        .collect()
}

/// A created ControlPlane, as the API server stores it after a successful
/// reconcile.
async fn created(shoot: &scion::gardener::ShootContext) -> Real {
    let f = real(shoot.clone(), "aws").await;
    f.reconcile(&aws_cp(None, aws_subnets()))
        .await
        .expect("reconciles");
    f
}

/// A restarted (or upgraded) scion on the seed of `f`.
async fn restarted(f: &Real, shoot: &scion::gardener::ShootContext) -> Real {
    real_with(shoot.clone(), "aws", Some(f), |_| {}).await
}

/// `cp` with a changed spec (a new generation), as gardenlet writes one.
fn changed_spec(
    mut cp: scion::gardener::ControlPlane,
    region: &str,
) -> scion::gardener::ControlPlane {
    cp.spec.region = region.into();
    cp
}

#[tokio::test]
async fn create_writes_certificates_access_secrets_and_five_managed_resources() {
    let shoot = shoot(&["IPv4"], false);
    let f = real(shoot.clone(), "aws").await;
    let action = f
        .reconcile(&aws_cp(None, aws_subnets()))
        .await
        .expect("reconciles");
    assert_eq!(action, Action::requeue(Duration::from_secs(600)));
    assert_eq!(
        unhashed_writes(&f).await,
        [
            "PATCH cp",
            "PATCH cp/status",
            // CA, bundle, the CCM's and the ALB webhook's server
            // certificates, 10 shoot access Secrets
            "POST secret",
            "POST secret",
            "POST secret",
            "POST secret",
            "POST secret",
            "POST secret",
            "POST secret",
            "POST secret",
            "POST secret",
            "POST secret",
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
            "POST secret",
            "POST mr",
            "POST secret",
            "POST mr",
            "PATCH cp/status",
        ]
    );
    let posted: Vec<String> = f.created().await.iter().map(|n| unhashed(n)).collect();
    assert_eq!(
        posted,
        [
            "ca-provider-aws-controlplane",
            "ca-provider-aws-controlplane-bundle",
            "cloud-controller-manager-server",
            // gardener-csi.md aws §1 row 1: the ALB webhook's server certificate
            "aws-load-balancer-controller-webhook-service",
            "shoot-access-cloud-controller-manager",
            "shoot-access-csi-provisioner",
            "shoot-access-csi-attacher",
            "shoot-access-csi-snapshotter",
            "shoot-access-csi-resizer",
            "shoot-access-csi-snapshot-controller",
            "shoot-access-csi-volume-modifier",
            "shoot-access-aws-custom-route-controller",
            "shoot-access-aws-ipam-controller",
            "shoot-access-aws-load-balancer-controller",
            CONFIG_MR,
            CONFIG_MR,
            SEED_MR,
            SEED_MR,
            SHOOT_MR,
            SHOOT_MR,
            SHOOT_CRDS_MR,
            SHOOT_CRDS_MR,
            "extension-controlplane-storageclasses",
            "extension-controlplane-storageclasses",
        ]
    );
    let cp = f.controlplane().await;
    assert_eq!(
        cp.metadata.finalizers,
        Some(vec!["extensions.gardener.cloud/controlplane".to_string()])
    );
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
        let mr = f.managed_resource(name).await.expect("stored");
        assert_eq!(mr["spec"]["class"].as_str(), class, "{name}");
        let secret = mr["spec"]["secretRefs"][0]["name"].as_str().expect("ref");
        assert_eq!(unhashed(secret), name);
        let stored = f.get(&f.secret_path(secret)).await.expect("secret");
        assert_eq!(stored["immutable"], true);
        assert_eq!(
            stored["metadata"]["labels"]["resources.gardener.cloud/garbage-collectable-reference"],
            "true"
        );
    }
    let shoot_mr = f.managed_resource(SHOOT_MR).await.expect("shoot MR");
    assert_eq!(shoot_mr["spec"]["keepObjects"], false);
    assert_eq!(
        shoot_mr["spec"]["injectLabels"],
        json!({"shoot.gardener.cloud/no-cleanup": "true"})
    );

    // The CCM mounts the serving certificate Secret the secrets manager created.
    let seed = f.managed_objects(SEED_MR).await;
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
    let stored = f
        .get(&f.secret_path(server))
        .await
        .expect("server Secret exists");
    assert_eq!(stored["type"], "kubernetes.io/tls");
    assert!(seed.iter().any(|o| o["kind"] == "PrometheusRule"));
    let shoot_objects = f.managed_objects(SHOOT_MR).await;
    assert_eq!(shoot_objects[0]["kind"], "ClusterRoleBinding");
}

/// The finalizer is added by a JSON patch guarded by a `test` of the
/// finalizers it read: a real API server refuses it (422) when someone
/// else's finalizer came in between, and the reconcile fails rather than
/// dropping that finalizer.
#[tokio::test]
async fn the_finalizer_patch_is_guarded_against_a_concurrent_writer() {
    let shoot = shoot(&["IPv4"], false);
    let f = real(shoot, "aws").await;
    f.insert(&cp_json(&aws_cp(None, aws_subnets()))).await;
    let read = f.controlplane().await;
    f.patch(
        &f.cp_path(),
        &json!({"metadata": {"finalizers": ["example.com/other"]}}),
    )
    .await;
    f.clear().await;
    let err = controller::reconcile(Arc::new(read), f.ctx.clone())
        .await
        .expect_err("the guarded patch fails");
    assert!(
        err.to_string().contains("422") || err.to_string().contains("test"),
        "{err}"
    );
    assert_eq!(
        f.controlplane().await.metadata.finalizers,
        Some(vec!["example.com/other".to_string()]),
        "the other finalizer survives"
    );
}

#[tokio::test]
async fn nothing_requested_makes_no_call_at_all() {
    let shoot = shoot(&["IPv4"], false);
    let f = created(&shoot).await;
    f.clear().await;
    for _ in 0..3 {
        let action = f.reconcile_stored().await.expect("settled");
        assert_eq!(action, Action::requeue(Duration::from_secs(600)));
    }
    assert_eq!(f.lines().await, Vec::<String>::new());
}

#[tokio::test]
async fn reconcile_annotation_is_removed_and_an_unchanged_render_writes_no_managed_resource() {
    let shoot = shoot(&["IPv4"], false);
    let f = created(&shoot).await;
    let mut cp = annotated(f.controlplane().await, "reconcile");
    cp.metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert("example.com/kept".into(), "yes".into());
    f.store(&cp).await;
    f.clear().await;
    f.reconcile_stored().await.expect("reconciles");
    assert_eq!(
        f.writes().await,
        ["PATCH cp", "PATCH cp/status", "PATCH cp/status"]
    );
    let cp = f.controlplane().await;
    let annotations = cp.metadata.annotations.unwrap_or_default();
    assert!(!annotations.contains_key("gardener.cloud/operation"));
    assert_eq!(
        annotations.get("example.com/kept").map(String::as_str),
        Some("yes"),
        "only the operation annotation is removed"
    );
    let last = cp.status.and_then(|s| s.last_operation).expect("last");
    assert_eq!(
        (last.type_.as_str(), last.state.as_str()),
        ("Reconcile", "Succeeded")
    );
}

/// A ManagedResource and its Secret deleted behind scion's back come back on
/// the next requested reconcile with the same bytes: the actuator remembers
/// the Secret's name from the first reconcile (`managedresources::memo`),
/// decides from it, and encodes the Secret only to write it.
#[tokio::test]
async fn a_managed_resource_deleted_behind_scions_back_is_written_again_with_the_same_bytes() {
    let shoot = shoot(&["IPv4"], false);
    let f = created(&shoot).await;
    let mr = f.managed_resource(SEED_MR).await.expect("seed MR");
    let secret_name = mr["spec"]["secretRefs"][0]["name"]
        .as_str()
        .expect("ref")
        .to_string();
    let secret = f.get(&f.secret_path(&secret_name)).await.expect("Secret");
    f.remove(&f.mr_path(SEED_MR)).await;
    f.remove(&f.secret_path(&secret_name)).await;
    f.store(&annotated(f.controlplane().await, "reconcile"))
        .await;
    f.clear().await;
    f.reconcile_stored().await.expect("reconciles");
    assert_eq!(
        unhashed_writes(&f).await,
        [
            "PATCH cp",
            "PATCH cp/status",
            "POST secret",
            "POST mr",
            "PATCH cp/status"
        ]
    );
    let again = f
        .get(&f.secret_path(&secret_name))
        .await
        .expect("the same Secret name");
    assert_eq!(again["data"], secret["data"]);
    let again = f.managed_resource(SEED_MR).await.expect("seed MR again");
    assert_eq!(again["spec"], mr["spec"]);
    assert_eq!(
        again["metadata"]["annotations"],
        mr["metadata"]["annotations"]
    );
}

/// The proof: a new scion (here a new CCM image) rolls no CCM until
/// gardenlet asks; then it writes the new seed ManagedResource and leaves the
/// old Secret to GRM's garbage collector.
#[tokio::test]
async fn an_upgraded_scion_writes_nothing_until_a_reconcile_is_requested() {
    let shoot = shoot(&["IPv4"], false);
    let old = created(&shoot).await;
    let old_secret = old.managed_resource(SEED_MR).await.expect("seed MR")["spec"]["secretRefs"][0]
        ["name"]
        .as_str()
        .expect("ref")
        .to_string();
    let upgraded = real_with(shoot.clone(), "aws", Some(&old), |r| {
        r.actuator.image_override = Some("registry.example/ccm:v2".into());
    })
    .await;
    upgraded.clear().await;
    for _ in 0..3 {
        upgraded.reconcile_stored().await.expect("settled");
    }
    assert_eq!(
        upgraded.lines().await,
        Vec::<String>::new(),
        "an upgrade alone made calls"
    );

    upgraded
        .store(&annotated(upgraded.controlplane().await, "reconcile"))
        .await;
    upgraded.clear().await;
    upgraded.reconcile_stored().await.expect("reconciles");
    assert_eq!(
        unhashed_writes(&upgraded).await,
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
        .await
        .into_iter()
        .find(|o| o["kind"] == "Deployment")
        .expect("Deployment")["spec"]["template"]["spec"]["containers"][0]["image"]
        .clone();
    assert_eq!(image, "registry.example/ccm:v2");
    let old = upgraded
        .get(&upgraded.secret_path(&old_secret))
        .await
        .expect("old Secret kept for GRM");
    assert_eq!(
        old["metadata"]["labels"]["resources.gardener.cloud/garbage-collectable-reference"],
        "true"
    );
}

/// Issue 21: a spec change without `gardener.cloud/operation` waits for
/// gardenlet (the shoot's maintenance window), as in Gardener's extensions.
/// Every case of the predicates, through the reconciler and the API server:
/// the same process looking again (UPDATE) and a restarted one (CREATE).
#[tokio::test]
async fn only_gardeners_predicates_start_an_operation() {
    let shoot = shoot(&["IPv4"], false);
    let f = created(&shoot).await;
    let renders = ["PATCH cp/status", "PATCH cp/status"];

    // UPDATE: a new generation without the annotation: nothing.
    f.store(&changed_spec(f.controlplane().await, "eu-west-2"))
        .await;
    assert_eq!(f.controlplane().await.metadata.generation, Some(2));
    f.clear().await;
    f.reconcile_stored().await.expect("settled");
    assert_eq!(
        f.lines().await,
        Vec::<String>::new(),
        "spec change, same process"
    );

    // CREATE (a restarted scion): the same, last operation Succeeded: nothing.
    let g = restarted(&f, &shoot).await;
    g.reconcile_stored().await.expect("settled");
    assert_eq!(
        g.lines().await,
        Vec::<String>::new(),
        "spec change, restarted"
    );

    // The annotation: rendered (the new region is in the CCM's seed
    // ManagedResource), the new generation observed.
    g.store(&annotated(g.controlplane().await, "reconcile"))
        .await;
    g.clear().await;
    g.reconcile_stored().await.expect("reconciles");
    assert_eq!(
        unhashed_writes(&g).await,
        [
            "PATCH cp",
            "PATCH cp/status",
            "POST secret",
            "PUT mr/extension-controlplane-seed",
            "PATCH cp/status"
        ]
    );
    assert_eq!(
        g.controlplane()
            .await
            .status
            .expect("status")
            .observed_generation,
        Some(2)
    );

    // UPDATE: a last operation that did not succeed (written by someone
    // else; this process succeeded): nothing — Gardener passes it on CREATE only.
    let mut cp = g.controlplane().await;
    if let Some(last) = cp.status.as_mut().and_then(|s| s.last_operation.as_mut()) {
        last.state = "Error".into();
    }
    g.store(&cp).await;
    g.clear().await;
    g.reconcile_stored().await.expect("settled");
    assert_eq!(g.lines().await, Vec::<String>::new(), "Error on an update");

    // CREATE: a restart finds it not Succeeded: rendered.
    let h = restarted(&f, &shoot).await;
    h.reconcile_stored().await.expect("reconciles");
    assert_eq!(h.writes().await, renders, "Error on the first look");

    // CREATE: no last operation at all: Create.
    let i = restarted(&f, &shoot).await;
    let mut cp = i.controlplane().await;
    cp.status = None;
    i.store(&cp).await;
    i.clear().await;
    i.reconcile_stored().await.expect("creates");
    assert_eq!(i.writes().await, renders, "no lastOperation");

    // restore and migrate annotations are requests on any look.
    for op in ["restore", "migrate"] {
        let j = restarted(&f, &shoot).await;
        j.reconcile_stored().await.expect("settled first");
        j.store(&annotated(succeeded(j.controlplane().await), op))
            .await;
        j.clear().await;
        j.reconcile_stored().await.expect("operates");
        let writes = j.writes().await;
        assert!(
            writes.iter().filter(|w| *w == "PATCH cp/status").count() >= 2,
            "{op}: {writes:?}"
        );
    }
}

/// `--ignore-operation-annotation`: a changed Cluster renders without a request.
#[tokio::test]
async fn ignoring_the_operation_annotation_renders_on_every_change() {
    let shoot = shoot(&["IPv4"], false);
    let base = created(&shoot).await;
    let mut f = real_with(shoot.clone(), "aws", Some(&base), |r| {
        r.ignore_operation_annotation = true;
    })
    .await;
    f.reconcile_stored().await.expect("reconciles");
    assert_eq!(
        f.writes().await,
        ["PATCH cp/status", "PATCH cp/status"],
        "first look renders"
    );
    f.clear().await;
    f.reconcile_stored().await.expect("settled");
    assert_eq!(
        f.lines().await,
        Vec::<String>::new(),
        "nothing changed since"
    );
    // A new generation without the annotation: rendered (GenerationChangedPredicate).
    f.store(&changed_spec(f.controlplane().await, "eu-west-2"))
        .await;
    f.clear().await;
    f.reconcile_stored().await.expect("reconciles");
    assert_eq!(
        unhashed_writes(&f).await,
        [
            "PATCH cp/status",
            "POST secret",
            "PUT mr/extension-controlplane-seed",
            "PATCH cp/status"
        ],
        "new generation (the new region is in the seed ManagedResource)"
    );
    f.clear().await;
    // The Cluster moves (a new resource version): rendered again, unasked.
    let mut changed = shoot.clone();
    changed.resource_version = Some("8".into());
    Arc::get_mut(&mut f.ctx).expect("sole owner").state = Arc::new(state_in(changed, f.ns()));
    f.reconcile_stored().await.expect("reconciles");
    assert_eq!(f.writes().await, ["PATCH cp/status", "PATCH cp/status"]);
    f.clear().await;
    f.reconcile_stored().await.expect("settled");
    assert_eq!(f.lines().await, Vec::<String>::new());
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
        let f = real(shoot, provider).await;
        let action = f.reconcile(&cp).await.expect("skips without error");
        assert_eq!(action, Action::await_change());
        assert_eq!(f.lines().await, Vec::<String>::new());
    }
}

#[tokio::test]
async fn render_error_sets_last_error_and_requeues_with_backoff() {
    let shoot = shoot(&["IPv4"], false);
    let cp = aws_cp(None, json!([]));
    let f = real(shoot, "aws").await;
    let err = f.reconcile(&cp).await.expect_err("fails");
    let status = f.controlplane().await.status.expect("status");
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
    let cp = Arc::new(f.controlplane().await);
    assert_eq!(
        controller::error_policy(cp.clone(), &err, f.ctx.clone()),
        Action::requeue(Duration::from_secs(1))
    );
    // The event of our own Error status patch does not bypass the backoff.
    f.clear().await;
    let waiting = controller::reconcile(cp.clone(), f.ctx.clone())
        .await
        .expect("waits for the backoff");
    assert!(
        format!("{waiting:?}").contains("requeue_after: Some("),
        "{waiting:?}"
    );
    assert_eq!(f.lines().await, Vec::<String>::new());
    // A new request (the reconcile annotation) is served at once, and fails again: 2 s.
    f.store(&annotated((*cp).clone(), "reconcile")).await;
    let err = f.reconcile_stored().await.expect_err("fails again");
    assert_eq!(
        controller::error_policy(cp, &err, f.ctx.clone()),
        Action::requeue(Duration::from_secs(2))
    );
}

#[tokio::test]
async fn a_hanging_api_server_ends_the_reconcile_at_the_timeout() {
    let shoot = shoot(&["IPv4"], false);
    let f = real(shoot.clone(), "aws").await;
    f.insert(&cp_json(&aws_cp(None, aws_subnets()))).await;
    // The first request (the finalizer patch) is never answered.
    let hold = Hold::first(1);
    let mut ctx = f.through(shoot, hold.clone());
    ctx.timeout = Duration::from_millis(200);
    let cp = f.controlplane().await;
    let err = controller::reconcile(Arc::new(cp), Arc::new(ctx))
        .await
        .expect_err("times out");
    assert!(
        matches!(err, controller::Error::Timeout(d) if d == Duration::from_millis(200)),
        "{err}"
    );
    assert_eq!(hold.held.load(std::sync::atomic::Ordering::SeqCst), 1);
    // After the timeout the reconciler records it in the status.
    assert_eq!(f.writes().await, ["PATCH cp/status"]);
    let cp = f.get(&f.cp_path()).await.expect("stored");
    assert_eq!(cp["status"]["lastOperation"]["state"], "Error");
    let d = cp["status"]["lastError"]["description"]
        .as_str()
        .expect("lastError");
    assert!(d.contains("did not finish within 200ms"), "{d}");
}

/// The reconciler's memory of objects (first look or not, the last
/// operation) is bounded: an object not looked at for two resyncs and a
/// reconcile bound (deleted, say) is forgotten. On real time with a short
/// resync (100 ms) and bound (4 s): forgotten after 4.2 s.
#[tokio::test]
async fn the_memory_of_objects_gone_is_pruned() {
    let shoot = shoot(&["IPv4"], false);
    let f = real_with(shoot, "aws", None, |r| {
        r.resync = Duration::from_millis(100);
        r.timeout = Duration::from_secs(4);
    })
    .await;
    f.reconcile(&aws_cp(None, aws_subnets()))
        .await
        .expect("reconciles");
    let mut other = f.controlplane().await;
    other.metadata.name = Some("other".into());
    f.insert(&cp_json(&other)).await;
    let other = {
        let path = f.cp_path().replace("/control-plane", "/other");
        serde_json::from_value(f.get(&path).await.expect("stored")).expect("ControlPlane")
    };
    controller::reconcile(Arc::new(other), f.ctx.clone())
        .await
        .expect("settled");
    assert_eq!(f.ctx.remembered(), 2);
    tokio::time::sleep(Duration::from_millis(4200 + 300)).await;
    f.reconcile_stored().await.expect("settled");
    assert_eq!(f.ctx.remembered(), 1, "only the one looked at since");
}

/// At a start the controller may look at a ControlPlane before the Cluster
/// list has arrived (issue 21's restarts logged "could not get Cluster …:
/// not found" for every shoot): one live read of the Cluster (issue 23's
/// answer for the webhook, shared by the controller), and when that finds
/// none either, a look again in a second, no failure. Once the list is
/// complete, a missing Cluster is an error.
#[tokio::test]
async fn a_controlplane_seen_before_the_cluster_list_is_requeued_quietly() {
    let f = real(shoot(&["IPv4"], false), "aws").await;
    f.insert(&cp_json(&aws_cp(None, aws_subnets()))).await;
    let cp = Arc::new(f.controlplane().await);
    // the API source before its first list (not started)
    let mut ctx = reconciler(f.session.client.clone(), Default::default(), "aws");
    ctx.state = Arc::new(scion::state::KubeState::new(
        f.session.client.clone(),
        Default::default(),
    ));
    let action = controller::reconcile(cp.clone(), Arc::new(ctx))
        .await
        .expect("no failure");
    assert_eq!(action, Action::requeue(Duration::from_secs(1)));
    // reads of the Cluster only (the audit log may show the live read's
    // request more than once), nothing written
    let lines = f.lines().await;
    assert!(
        !lines.is_empty()
            && lines
                .iter()
                .all(|l| l == "GET /apis/extensions.gardener.cloud/v1alpha1/clusters"),
        "{lines:?}"
    );
    // a complete state without the Cluster
    let ctx = reconciler(f.session.client.clone(), Default::default(), "aws");
    let err = controller::reconcile(cp, Arc::new(ctx))
        .await
        .expect_err("no Cluster");
    assert!(err.to_string().contains("could not get Cluster"), "{err}");
}
