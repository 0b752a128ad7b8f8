//! Lifecycle flows of the ControlPlane controller against a real
//! kube-apiserver (the test bed shared by this binary, a namespace and an
//! identity per test, every call read back from the audit log):
//! delete waiting for gardener-resource-manager (played by the test: its
//! finalizer on the ManagedResources, released after a while), a stuck
//! deletion, migrate, restore, hibernation and taking over the
//! ManagedResources a Go extension left.
//!
//! The ControlPlane vanishing exactly between the last wait and the
//! finalizer patch needs another writer at a chosen request, which a real
//! API server cannot be asked for: a client-side layer
//! (`testbed::intercept`) plays it, the 404 is the real server's.

mod support;

use std::time::Duration;

use futures::future::BoxFuture;
use kube::runtime::controller::Action;
use serde_json::{Value, json};
use support::controller::mock::*;
use support::controller::real::*;
use support::controller::*;
use support::testbed::intercept::{Intercept, pass};

const CONFIG_MR: &str = "extension-controlplane-configuration-seed";
const SEED_MR: &str = "extension-controlplane-seed";
const SHOOT_MR: &str = "extension-controlplane-shoot";
const SHOOT_CRDS_MR: &str = "extension-controlplane-shoot-crds";

async fn created(shoot: &scion::gardener::ShootContext) -> Real {
    let f = real(shoot.clone(), "aws").await;
    f.reconcile(&aws_cp(None, aws_subnets()))
        .await
        .expect("reconciles");
    f
}

/// The index of the first recorded line equal to `line` (after `from`).
fn position(lines: &[String], line: &str, from: usize) -> usize {
    lines[from..]
        .iter()
        .position(|l| l == line)
        .map(|i| i + from)
        .unwrap_or_else(|| panic!("{line} not after #{from} in {lines:#?}"))
}

/// A Deployment as the API server accepts it.
fn deployment(name: &str, replicas: i64) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": name, "image": "registry.example/x:1"}]}}}})
}

#[tokio::test]
async fn delete_waits_for_grm_in_gardeners_order_then_drops_the_finalizer() {
    let shoot = shoot(&["IPv4"], false);
    let f = created(&shoot).await;
    for name in [CONFIG_MR, SEED_MR, SHOOT_MR] {
        f.grm_finalizer(name).await;
    }
    f.delete_controlplane().await;
    let grm = f.grm(Duration::from_millis(200));
    f.clear().await;
    let action = f.reconcile_stored().await.expect("deletes");
    assert_eq!(action, Action::await_change());
    let released: Vec<Value> = grm.stop();
    assert_eq!(released.len(), 3, "GRM released each ManagedResource");
    let lines: Vec<String> = f.lines().await.iter().map(|l| f.short(l)).collect();
    // Each ManagedResource is deleted only after the one before it is gone
    // (GRM kept each for 200 ms): polled while it was there and once gone.
    let mut at = 0;
    for name in [SHOOT_MR, SEED_MR, CONFIG_MR] {
        at = position(&lines, &format!("DELETE mr/{name}"), at);
        let gets = lines[at + 1..]
            .iter()
            .take_while(|l| !l.starts_with("DELETE mr/"))
            .filter(|l| **l == format!("GET mr/{name}"))
            .count();
        assert!(gets >= 2, "{name} polled until gone: {lines:#?}");
        at += 1;
    }
    position(
        &lines,
        "DELETE secret/shoot-access-cloud-controller-manager",
        at,
    );
    assert_eq!(
        lines.last().map(String::as_str),
        Some("PATCH cp"),
        "finalizer last"
    );
    assert!(
        f.get(&f.cp_path()).await.is_none(),
        "the ControlPlane is gone"
    );
    assert_eq!(
        f.secret_names().await,
        Vec::<String>::new(),
        "no Secret left behind"
    );
    for name in [CONFIG_MR, SEED_MR, SHOOT_MR] {
        assert!(f.managed_resource(name).await.is_none(), "{name}");
    }
}

/// Issue 21: "deleting a ControlPlane sometimes ends with a logged failure
/// (`patch status … 404 NotFound`)". After the finalizer is released the
/// controller runs once more on the object its cache still holds (the events
/// of its own status patches queued it): with our finalizer, being deleted.
#[tokio::test]
async fn a_deletion_seen_again_from_a_stale_cache_is_no_failure() {
    let shoot = shoot(&["IPv4"], false);
    let f = created(&shoot).await;
    f.delete_controlplane().await;
    let stale = f.controlplane().await;
    f.reconcile_stored().await.expect("deletes");
    assert!(
        f.get(&f.cp_path()).await.is_none(),
        "the ControlPlane is gone"
    );

    // The same controller: it completed this deletion, nothing is requested.
    f.clear().await;
    let action = scion::controller::reconcile(std::sync::Arc::new(stale.clone()), f.ctx.clone())
        .await
        .expect("no failure");
    assert_eq!(action, Action::requeue(Duration::from_secs(600)));
    assert_eq!(f.lines().await, Vec::<String>::new());

    // A controller that did not do it (a new leader): its first patch finds
    // the object gone (the API server's 404), which ends the operation, not
    // as a failure.
    let other = real_with(shoot.clone(), "aws", Some(&f), |_| {}).await;
    let action = scion::controller::reconcile(std::sync::Arc::new(stale), other.ctx.clone())
        .await
        .expect("a 404 of the object itself is no failure");
    assert_eq!(action, Action::await_change());
    let requests = other.requests().await;
    assert_eq!(
        requests
            .iter()
            .map(|r| (other.short(&r.line()), r.code))
            .collect::<Vec<_>>(),
        [("PATCH cp/status".to_string(), 404)],
        "one patch, no error status written, nothing retried"
    );
}

/// Another writer at one request: before the first PATCH of the
/// ControlPlane itself (not its status), the admin removes our finalizer, so
/// the object is gone when the patch arrives.
struct VanishBeforeFinalizerPatch {
    admin: kube::Client,
    cp_path: String,
    fired: std::sync::atomic::AtomicBool,
}

impl Intercept for VanishBeforeFinalizerPatch {
    fn before(
        &self,
        method: &http::Method,
        path: &str,
        _query: &str,
    ) -> BoxFuture<'static, Option<http::Response<kube::client::Body>>> {
        use std::sync::atomic::Ordering;
        if *method != http::Method::PATCH
            || path != self.cp_path
            || self.fired.swap(true, Ordering::SeqCst)
        {
            return pass();
        }
        let (admin, path) = (self.admin.clone(), self.cp_path.clone());
        Box::pin(async move {
            let request = http::Request::patch(&path)
                .header("content-type", "application/merge-patch+json")
                .body(br#"{"metadata":{"finalizers":null}}"#.to_vec())
                .unwrap();
            admin
                .request::<Value>(request)
                .await
                .expect("the other writer removes the finalizer");
            None
        })
    }
}

/// The same for the finalizer patch, the operation's last call: the object
/// vanishes exactly between the last wait and that patch. The other writer
/// acts from a client-side layer (`testbed::intercept`) at that request; the
/// 404 is the real server's.
#[tokio::test]
async fn an_object_gone_before_the_finalizer_patch_is_no_failure() {
    let shoot = shoot(&["IPv4"], false);
    let f = created(&shoot).await;
    f.delete_controlplane().await;
    let vanish = std::sync::Arc::new(VanishBeforeFinalizerPatch {
        admin: f.session.admin.clone(),
        cp_path: f.cp_path(),
        fired: Default::default(),
    });
    let ctx = f.through(shoot, vanish.clone());
    f.clear().await;
    let cp = f.controlplane().await;
    let action = scion::controller::reconcile(std::sync::Arc::new(cp), std::sync::Arc::new(ctx))
        .await
        .expect("no failure");
    assert_eq!(action, Action::await_change());
    assert!(vanish.fired.load(std::sync::atomic::Ordering::SeqCst));
    let requests = f.requests().await;
    let last = requests.last().expect("requests");
    assert_eq!(
        (f.short(&last.line()), last.code),
        ("PATCH cp".to_string(), 404),
        "the finalizer patch is the last request and finds the object gone: {requests:#?}"
    );
    assert!(
        f.get(&f.cp_path()).await.is_none(),
        "the ControlPlane is gone"
    );
}

#[tokio::test]
async fn a_deletion_grm_cannot_finish_is_reported_with_grms_message_and_code() {
    let shoot = shoot(&["IPv4"], false);
    let f = real_with(shoot.clone(), "aws", None, |r| {
        r.actuator.delete_wait = Duration::from_millis(300);
    })
    .await;
    f.reconcile(&aws_cp(None, aws_subnets()))
        .await
        .expect("reconciles");
    f.grm_finalizer(SHOOT_MR).await;
    let mr = f.managed_resource(SHOOT_MR).await.expect("shoot MR");
    f.patch_status(
        &mr,
        &json!({"conditions": [{
            "type": "ResourcesApplied", "status": "False", "reason": "DeletionFailed",
            "message": "Error during apply of object \"v1/ConfigMap/kube-system/x\" is invalid: data: bad",
            "lastTransitionTime": "2026-11-21T03:00:00Z", "lastUpdateTime": "2026-11-21T03:00:00Z",
        }]}),
    )
    .await;
    f.delete_controlplane().await;
    let err = f.reconcile_stored().await.expect_err("stuck");
    assert!(err.to_string().contains("still exists"), "{err}");
    let cp = f.controlplane().await;
    let status = cp.status.expect("status");
    let last_error = status.last_error.expect("lastError");
    assert!(
        last_error
            .description
            .contains("error while waiting for all resources to be deleted"),
        "{}",
        last_error.description
    );
    assert!(
        last_error.description.contains("data: bad"),
        "{}",
        last_error.description
    );
    assert_eq!(last_error.codes, ["ERR_CONFIGURATION_PROBLEM"]);
    assert!(
        cp.metadata.finalizers.is_some_and(|f| !f.is_empty()),
        "finalizer kept"
    );
    assert!(
        f.managed_resource(SEED_MR).await.is_some(),
        "seed MR waits for the shoot MR"
    );
}

#[tokio::test]
async fn force_deletion_does_not_wait() {
    let mut shoot = shoot(&["IPv4"], false);
    shoot.shoot.metadata.annotations.insert(
        "confirmation.gardener.cloud/force-deletion".into(),
        "true".into(),
    );
    let f = created(&shoot).await;
    for name in [CONFIG_MR, SEED_MR, SHOOT_MR] {
        f.grm_finalizer(name).await;
    }
    f.delete_controlplane().await;
    f.clear().await;
    f.reconcile_stored().await.expect("deletes without waiting");
    let lines: Vec<String> = f.lines().await.iter().map(|l| f.short(l)).collect();
    for name in [CONFIG_MR, SEED_MR, SHOOT_MR] {
        assert!(lines.contains(&format!("DELETE mr/{name}")), "{lines:#?}");
        let mr = f.managed_resource(name).await.expect("held by GRM");
        assert!(mr["metadata"]["deletionTimestamp"].is_string(), "{name}");
    }
    assert!(f.get(&f.cp_path()).await.is_none());
}

#[tokio::test]
async fn migrate_keeps_the_shoot_objects_and_drops_every_finalizer() {
    let shoot = shoot(&["IPv4"], false);
    let f = created(&shoot).await;
    let mut cp = annotated(f.controlplane().await, "migrate");
    cp.metadata
        .finalizers
        .get_or_insert_with(Vec::new)
        .push("example.com/other".into());
    f.store(&cp).await;
    f.grm_finalizer(SHOOT_MR).await;
    let grm = f.grm(Duration::from_millis(100));
    f.clear().await;
    let action = f.reconcile_stored().await.expect("migrates");
    assert_eq!(action, Action::await_change());
    // GRM saw the shoot ManagedResource deleted with keepObjects: the
    // objects in the shoot survive
    let released = grm.stop();
    let shoot_mr = released
        .iter()
        .find(|m| m["metadata"]["name"] == SHOOT_MR)
        .expect("the shoot MR released");
    assert_eq!(shoot_mr["spec"]["keepObjects"], true);
    let lines: Vec<String> = f.lines().await.iter().map(|l| f.short(l)).collect();
    let keep = position(&lines, &format!("PATCH mr/{SHOOT_MR}"), 0);
    position(&lines, &format!("DELETE mr/{SHOOT_MR}"), keep);
    assert_eq!(
        lines.last().map(String::as_str),
        Some("PATCH cp"),
        "{lines:#?}"
    );
    let cp = f.controlplane().await;
    assert_eq!(cp.metadata.finalizers, None, "every finalizer dropped");
    assert!(
        !cp.metadata
            .annotations
            .clone()
            .unwrap_or_default()
            .contains_key("gardener.cloud/operation")
    );
    let op = cp.status.and_then(|s| s.last_operation).expect("last");
    assert_eq!(
        (op.type_.as_str(), op.state.as_str()),
        ("Migrate", "Succeeded")
    );
    assert_eq!(
        f.secret_names().await,
        Vec::<String>::new(),
        "certificates gone from this seed"
    );

    // Migrated: nothing until restore or migrate is requested.
    f.clear().await;
    assert_eq!(
        f.reconcile_stored().await.expect("skips"),
        Action::await_change()
    );
    assert_eq!(f.lines().await, Vec::<String>::new());
}

#[tokio::test]
async fn restore_adds_the_finalizer_delivers_and_removes_the_annotation() {
    let shoot = shoot(&["IPv4"], false);
    let f = real(shoot, "aws").await;
    f.reconcile(&annotated(aws_cp(None, aws_subnets()), "restore"))
        .await
        .expect("restores");
    let cp = f.controlplane().await;
    assert_eq!(
        cp.metadata.finalizers,
        Some(vec!["extensions.gardener.cloud/controlplane".to_string()])
    );
    assert!(
        !cp.metadata
            .annotations
            .unwrap_or_default()
            .contains_key("gardener.cloud/operation")
    );
    let op = cp.status.and_then(|s| s.last_operation).expect("last");
    assert_eq!(
        (op.type_.as_str(), op.state.as_str()),
        ("Restore", "Succeeded")
    );
    for name in [CONFIG_MR, SEED_MR, SHOOT_MR] {
        assert!(f.managed_resource(name).await.is_some(), "{name}");
    }
}

/// The restored CA (gardenlet writes the persisted Secrets back before it
/// asks for `restore`) is used, not replaced.
#[tokio::test]
async fn restore_reuses_the_persisted_ca() {
    let shoot = shoot(&["IPv4"], false);
    let first = created(&shoot).await;
    let ca: Vec<Value> = first
        .secrets()
        .await
        .into_iter()
        .filter(|s| s["metadata"]["labels"]["persist"] == "true")
        .collect();
    assert_eq!(ca.len(), 1, "one persisted CA");
    let f = real(shoot, "aws").await;
    let mut restored = ca[0].clone();
    restored["metadata"]["namespace"] = json!(f.ns());
    f.insert(&restored).await;
    f.reconcile(&annotated(aws_cp(None, aws_subnets()), "restore"))
        .await
        .expect("restores");
    let posted: Vec<String> = f.created().await.iter().map(|n| unhashed(n)).collect();
    assert!(
        !posted.contains(&"ca-provider-aws-controlplane".to_string()),
        "{posted:?}"
    );
    assert!(
        posted.contains(&"cloud-controller-manager-server".to_string()),
        "{posted:?}"
    );
}

#[tokio::test]
async fn hibernated_shoot_waits_for_kube_apiserver_before_scaling_down() {
    let shoot = shoot(&["IPv4"], true);
    let f = real(shoot.clone(), "aws").await;
    f.insert(&deployment("kube-apiserver", 2)).await;
    let action = f
        .reconcile(&aws_cp(None, aws_subnets()))
        .await
        .expect("reconciles");
    assert_eq!(action, Action::requeue(Duration::from_secs(2)));
    async fn replicas(f: &Real) -> Value {
        f.managed_objects(SEED_MR)
            .await
            .into_iter()
            .find(|o| o["kind"] == "Deployment")
            .expect("Deployment")["spec"]["replicas"]
            .clone()
    }
    assert_eq!(replicas(&f).await, 1, "kube-apiserver still runs");
    // The requeue runs the operation again although nothing was requested.
    f.remove(&format!(
        "/apis/apps/v1/namespaces/{}/deployments/kube-apiserver",
        f.ns()
    ))
    .await;
    let action = f.reconcile_stored().await.expect("reconciles");
    assert_eq!(action, Action::requeue(Duration::from_secs(600)));
    assert_eq!(replicas(&f).await, 0, "scaled down after kube-apiserver");
}

#[tokio::test]
async fn a_hibernated_shoot_being_deleted_keeps_one_ccm_for_the_load_balancers() {
    let mut shoot = shoot(&["IPv4"], true);
    shoot.shoot.metadata.deletion_timestamp = Some("2026-11-21T03:00:00Z".into());
    let f = real(shoot, "aws").await;
    f.reconcile(&aws_cp(None, aws_subnets()))
        .await
        .expect("reconciles");
    let deployment = f
        .managed_objects(SEED_MR)
        .await
        .into_iter()
        .find(|o| o["kind"] == "Deployment")
        .expect("Deployment");
    assert_eq!(deployment["spec"]["replicas"], 1);
    assert!(
        !f.lines().await.iter().any(|l| l.contains("kube-apiserver")),
        "kube-apiserver not read while the shoot is deleted"
    );
}

/// A seed where the Go extension ran: its ManagedResources (other labels, an
/// unhashed Secret), its CA and server certificate, and an
/// `extension-controlplane-shoot-crds` scion does not render. scion updates
/// the same ManagedResources in place (no second one), leaves the Go
/// extension's old Secrets to GRM's garbage collector, and keeps the CRDs one.
#[tokio::test]
async fn the_go_extensions_managed_resources_are_taken_over() {
    let shoot = shoot(&["IPv4"], false);
    let f = real(shoot, "aws").await;
    for name in [CONFIG_MR, SEED_MR, SHOOT_MR, SHOOT_CRDS_MR] {
        let secret = format!("{name}-0a1b2c3d");
        f.insert(
            &json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "immutable": true,
            "metadata": {"name": secret, "namespace": NS,
                "labels": {"resources.gardener.cloud/garbage-collectable-reference": "true"}},
            "data": {"x": "eA=="}}),
        )
        .await;
        let mut mr = json!({"apiVersion": "resources.gardener.cloud/v1alpha1", "kind": "ManagedResource",
            "metadata": {"name": name, "namespace": NS,
                "labels": {"origin": "gardener-extension-provider-aws"},
                "annotations": {format!("reference.resources.gardener.cloud/secret-{}", "deadbeef"): secret}},
            "spec": {"secretRefs": [{"name": secret}]}});
        if name != SHOOT_MR && name != SHOOT_CRDS_MR {
            mr["spec"]["class"] = json!("seed");
        }
        f.insert(&mr).await;
    }
    f.reconcile(&aws_cp(None, aws_subnets()))
        .await
        .expect("reconciles");
    let writes = f.writes().await;
    for name in [CONFIG_MR, SEED_MR, SHOOT_MR] {
        assert!(writes.contains(&format!("PUT mr/{name}")), "{writes:#?}");
        assert!(
            !writes.contains(&"POST mr".to_string()),
            "no second ManagedResource"
        );
        let mr = f.managed_resource(name).await.expect("MR");
        assert_eq!(
            mr["metadata"]["labels"]["origin"],
            "gardener-extension-provider-aws"
        );
        let annotations = mr["metadata"]["annotations"]
            .as_object()
            .expect("annotations");
        assert_eq!(
            annotations.len(),
            1,
            "the old reference annotation replaced: {annotations:?}"
        );
        let new_secret = mr["spec"]["secretRefs"][0]["name"].as_str().expect("ref");
        assert_ne!(new_secret, format!("{name}-0a1b2c3d"));
        let old = f
            .get(&f.secret_path(&format!("{name}-0a1b2c3d")))
            .await
            .expect("old Secret left for GRM");
        assert_eq!(
            old["metadata"]["labels"]["resources.gardener.cloud/garbage-collectable-reference"],
            "true"
        );
    }
    assert!(
        !writes.iter().any(|w| w.contains(SHOOT_CRDS_MR)),
        "{writes:#?}"
    );
    assert_eq!(f.managed_resources().await.len(), 4, "no doubles");

    // On deletion the Go extension's CRDs ManagedResource goes too.
    f.delete_controlplane().await;
    f.reconcile_stored().await.expect("deletes");
    assert!(f.managed_resource(SHOOT_CRDS_MR).await.is_none());
    assert!(
        f.get(&f.secret_path(&format!("{SHOOT_CRDS_MR}-0a1b2c3d")))
            .await
            .is_none()
    );
}

/// Gardener does not wait for the shoot webhooks ManagedResource while
/// hibernation is enabled (no shoot kube-apiserver to delete them from).
#[tokio::test]
async fn a_hibernated_shoot_does_not_wait_for_its_shoot_webhooks() {
    let shoot = shoot(&["IPv4"], true);
    let f = real_with(shoot, "aws", None, |r| {
        r.actuator.delete_wait = Duration::from_millis(300);
    })
    .await;
    f.reconcile(&aws_cp(None, aws_subnets()))
        .await
        .expect("reconciles");
    f.insert(&json!({"apiVersion": "resources.gardener.cloud/v1alpha1",
        "kind": "ManagedResource",
        "metadata": {"name": "extension-controlplane-shoot-webhooks", "namespace": NS,
            "finalizers": [GRM_FINALIZER]},
        "spec": {"secretRefs": []}}))
        .await;
    f.delete_controlplane().await;
    f.reconcile_stored()
        .await
        .expect("deletes without waiting for the webhooks");
    assert!(f.get(&f.cp_path()).await.is_none());
}
