//! Lifecycle flows of the ControlPlane controller against the stateful mock
//! API server (tower_test, every call recorded): delete waiting for GRM, a
//! stuck deletion, migrate, restore, hibernation and taking over the
//! ManagedResources a Go extension left.

mod support;

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::runtime::controller::Action;
use serde_json::{Value, json};
use support::controller::mock::*;
use support::controller::*;

const CONFIG_MR: &str = "extension-controlplane-configuration-seed";
const SEED_MR: &str = "extension-controlplane-seed";
const SHOOT_MR: &str = "extension-controlplane-shoot";
const SHOOT_CRDS_MR: &str = "extension-controlplane-shoot-crds";

async fn created(shoot: &scion::gardener::ShootContext) -> Fake {
    let f = fake(state(shoot.clone()), "aws");
    f.reconcile(&aws_cp(None, aws_subnets()))
        .await
        .expect("reconciles");
    f
}

fn deleting(f: &Fake) {
    let mut cp = f.controlplane();
    cp.metadata.deletion_timestamp = Some(Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH));
    f.store(&cp);
}

/// The index of the first recorded line equal to `line` (after `from`).
fn position(lines: &[String], line: &str, from: usize) -> usize {
    lines[from..]
        .iter()
        .position(|l| l == line)
        .map(|i| i + from)
        .unwrap_or_else(|| panic!("{line} not after #{from} in {lines:#?}"))
}

#[tokio::test]
async fn delete_waits_for_grm_in_gardeners_order_then_drops_the_finalizer() {
    let shoot = shoot(&["IPv4"], false);
    let f = created(&shoot).await;
    deleting(&f);
    {
        let mut api = f.api.lock().unwrap();
        for name in [CONFIG_MR, SEED_MR, SHOOT_MR] {
            api.linger(&mr_path(name), 2);
        }
    }
    f.clear();
    let action = f.reconcile_stored().await.expect("deletes");
    assert_eq!(action, Action::await_change());
    let lines: Vec<String> = f.lines().iter().map(|l| short(l)).collect();
    // Each ManagedResource is deleted only after the one before it is gone
    // (GRM kept each for two more GETs).
    let mut at = 0;
    for name in [SHOOT_MR, SEED_MR, CONFIG_MR] {
        at = position(&lines, &format!("DELETE mr/{name}"), at);
        let gets = lines[at + 1..]
            .iter()
            .take_while(|l| !l.starts_with("DELETE mr/"))
            .filter(|l| **l == format!("GET mr/{name}"))
            .count();
        assert_eq!(gets, 3, "{name} polled until gone: {lines:#?}");
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
    assert!(f.get(CP_PATH).is_none(), "the ControlPlane is gone");
    assert_eq!(
        f.secret_names(),
        Vec::<String>::new(),
        "no Secret left behind"
    );
    for name in [CONFIG_MR, SEED_MR, SHOOT_MR] {
        assert!(f.managed_resource(name).is_none(), "{name}");
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
    deleting(&f);
    let stale = f.controlplane();
    f.reconcile_stored().await.expect("deletes");
    assert!(f.get(CP_PATH).is_none(), "the ControlPlane is gone");

    // The same controller: it completed this deletion, nothing is requested.
    f.clear();
    let action = scion::controller::reconcile(std::sync::Arc::new(stale.clone()), f.ctx.clone())
        .await
        .expect("no failure");
    assert_eq!(action, Action::requeue(Duration::from_secs(600)));
    assert_eq!(f.lines(), Vec::<String>::new());

    // A controller that did not do it (a new leader): its first patch finds
    // the object gone, which ends the operation, not as a failure.
    let other = fake_with(state(shoot.clone()), "aws", Some(f.api.clone()), |_| {});
    other.clear();
    let action = scion::controller::reconcile(std::sync::Arc::new(stale), other.ctx.clone())
        .await
        .expect("a 404 of the object itself is no failure");
    assert_eq!(action, Action::await_change());
    assert_eq!(
        other.lines().iter().map(|l| short(l)).collect::<Vec<_>>(),
        ["PATCH cp/status"],
        "one patch, no error status written, nothing retried"
    );
}

/// The same for the finalizer patch, the operation's last call.
#[tokio::test]
async fn an_object_gone_before_the_finalizer_patch_is_no_failure() {
    let shoot = shoot(&["IPv4"], false);
    let f = created(&shoot).await;
    deleting(&f);
    f.api.lock().unwrap().fail("PATCH", CP_PATH, 404);
    let action = f.reconcile_stored().await.expect("no failure");
    assert_eq!(action, Action::await_change());
}

#[tokio::test]
async fn a_deletion_grm_cannot_finish_is_reported_with_grms_message_and_code() {
    let shoot = shoot(&["IPv4"], false);
    let f = fake_with(state(shoot.clone()), "aws", None, |r| {
        r.actuator.delete_wait = Duration::from_millis(20);
    });
    f.reconcile(&aws_cp(None, aws_subnets()))
        .await
        .expect("reconciles");
    {
        let mut api = f.api.lock().unwrap();
        let mr = api.get_mut(&mr_path(SHOOT_MR)).expect("shoot MR");
        mr["metadata"]["finalizers"] =
            json!(["resources.gardener.cloud/gardener-resource-manager"]);
        mr["status"] = json!({"conditions": [{
            "type": "ResourcesApplied", "status": "False", "reason": "DeletionFailed",
            "message": "Error during apply of object \"v1/ConfigMap/kube-system/x\" is invalid: data: bad",
            "lastTransitionTime": "2026-11-21T03:00:00Z", "lastUpdateTime": "2026-11-21T03:00:00Z",
        }]});
    }
    deleting(&f);
    let err = f.reconcile_stored().await.expect_err("stuck");
    assert!(err.to_string().contains("still exists"), "{err}");
    let cp = f.controlplane();
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
        f.managed_resource(SEED_MR).is_some(),
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
    {
        let mut api = f.api.lock().unwrap();
        for name in [CONFIG_MR, SEED_MR, SHOOT_MR] {
            api.get_mut(&mr_path(name)).expect("MR")["metadata"]["finalizers"] =
                json!(["resources.gardener.cloud/gardener-resource-manager"]);
        }
    }
    deleting(&f);
    f.clear();
    f.reconcile_stored().await.expect("deletes without waiting");
    let lines: Vec<String> = f.lines().iter().map(|l| short(l)).collect();
    for name in [CONFIG_MR, SEED_MR, SHOOT_MR] {
        assert!(lines.contains(&format!("DELETE mr/{name}")), "{lines:#?}");
    }
    assert!(f.get(CP_PATH).is_none());
}

#[tokio::test]
async fn migrate_keeps_the_shoot_objects_and_drops_every_finalizer() {
    let shoot = shoot(&["IPv4"], false);
    let f = created(&shoot).await;
    let mut cp = annotated(f.controlplane(), "migrate");
    cp.metadata
        .finalizers
        .get_or_insert_with(Vec::new)
        .push("example.com/other".into());
    f.store(&cp);
    f.api.lock().unwrap().linger(&mr_path(SHOOT_MR), 1);
    f.clear();
    let action = f.reconcile_stored().await.expect("migrates");
    assert_eq!(action, Action::await_change());
    {
        let api = f.api.lock().unwrap();
        let keep = api
            .calls
            .iter()
            .find(|c| c.method == "PATCH" && c.path == mr_path(SHOOT_MR))
            .expect("keepObjects patch");
        assert_eq!(keep.body, json!({"spec": {"keepObjects": true}}));
        let last = api.calls.last().expect("calls");
        assert_eq!(last.path, CP_PATH);
        assert_eq!(
            last.body,
            json!({"metadata": {"finalizers": null, "annotations": {"gardener.cloud/operation": null}}})
        );
    }
    let cp = f.controlplane();
    assert_eq!(cp.metadata.finalizers, None);
    let op = cp.status.and_then(|s| s.last_operation).expect("last");
    assert_eq!(
        (op.type_.as_str(), op.state.as_str()),
        ("Migrate", "Succeeded")
    );
    assert_eq!(
        f.secret_names(),
        Vec::<String>::new(),
        "certificates gone from this seed"
    );

    // Migrated: nothing until restore or migrate is requested.
    f.clear();
    assert_eq!(
        f.reconcile_stored().await.expect("skips"),
        Action::await_change()
    );
    assert_eq!(f.lines(), Vec::<String>::new());
}

#[tokio::test]
async fn restore_adds_the_finalizer_delivers_and_removes_the_annotation() {
    let shoot = shoot(&["IPv4"], false);
    let f = fake(state(shoot), "aws");
    f.reconcile(&annotated(aws_cp(None, aws_subnets()), "restore"))
        .await
        .expect("restores");
    let cp = f.controlplane();
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
        assert!(f.managed_resource(name).is_some(), "{name}");
    }
}

/// The restored CA (gardenlet writes the persisted Secrets back before it
/// asks for `restore`) is used, not replaced.
#[tokio::test]
async fn restore_reuses_the_persisted_ca() {
    let shoot = shoot(&["IPv4"], false);
    let first = created(&shoot).await;
    let ca: Vec<Value> = {
        let api = first.api.lock().unwrap();
        api.list(&format!("/api/v1/namespaces/{NS}/secrets"))
            .into_iter()
            .filter(|s| s["metadata"]["labels"]["persist"] == "true")
            .cloned()
            .collect()
    };
    assert_eq!(ca.len(), 1, "one persisted CA");
    let f = fake(state(shoot), "aws");
    f.api.lock().unwrap().insert(ca[0].clone());
    f.reconcile(&annotated(aws_cp(None, aws_subnets()), "restore"))
        .await
        .expect("restores");
    let posted: Vec<String> = f
        .api
        .lock()
        .unwrap()
        .calls
        .iter()
        .filter(|c| c.method == "POST")
        .map(|c| unhashed(c.body["metadata"]["name"].as_str().unwrap_or_default()))
        .collect();
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
    let f = fake(state(shoot.clone()), "aws");
    f.api
        .lock()
        .unwrap()
        .insert(json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "kube-apiserver", "namespace": NS}, "spec": {"replicas": 2}}));
    let action = f
        .reconcile(&aws_cp(None, aws_subnets()))
        .await
        .expect("reconciles");
    assert_eq!(action, Action::requeue(Duration::from_secs(2)));
    let replicas = |f: &Fake| {
        f.managed_objects(SEED_MR)
            .into_iter()
            .find(|o| o["kind"] == "Deployment")
            .expect("Deployment")["spec"]["replicas"]
            .clone()
    };
    assert_eq!(replicas(&f), 1, "kube-apiserver still runs");
    // The requeue runs the operation again although nothing was requested.
    f.api.lock().unwrap().remove(&format!(
        "/apis/apps/v1/namespaces/{NS}/deployments/kube-apiserver"
    ));
    let action = f.reconcile_stored().await.expect("reconciles");
    assert_eq!(action, Action::requeue(Duration::from_secs(600)));
    assert_eq!(replicas(&f), 0, "scaled down after kube-apiserver");
}

#[tokio::test]
async fn a_hibernated_shoot_being_deleted_keeps_one_ccm_for_the_load_balancers() {
    let mut shoot = shoot(&["IPv4"], true);
    shoot.shoot.metadata.deletion_timestamp = Some("2026-11-21T03:00:00Z".into());
    let f = fake(state(shoot), "aws");
    f.reconcile(&aws_cp(None, aws_subnets()))
        .await
        .expect("reconciles");
    let deployment = f
        .managed_objects(SEED_MR)
        .into_iter()
        .find(|o| o["kind"] == "Deployment")
        .expect("Deployment");
    assert_eq!(deployment["spec"]["replicas"], 1);
    assert!(
        !f.lines().iter().any(|l| l.contains("kube-apiserver")),
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
    let f = fake(state(shoot), "aws");
    {
        let mut api = f.api.lock().unwrap();
        for name in [CONFIG_MR, SEED_MR, SHOOT_MR, SHOOT_CRDS_MR] {
            let secret = format!("{name}-0a1b2c3d");
            api.insert(
                json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "immutable": true,
                "metadata": {"name": secret, "namespace": NS,
                    "labels": {"resources.gardener.cloud/garbage-collectable-reference": "true"}},
                "data": {"x": "eA=="}}),
            );
            let class = if name == SHOOT_MR || name == SHOOT_CRDS_MR {
                Value::Null
            } else {
                json!("seed")
            };
            api.insert(json!({"apiVersion": "resources.gardener.cloud/v1alpha1", "kind": "ManagedResource",
                "metadata": {"name": name, "namespace": NS,
                    "labels": {"origin": "gardener-extension-provider-aws"},
                    "annotations": {format!("reference.resources.gardener.cloud/secret-{}", "deadbeef"): secret}},
                "spec": {"class": class, "secretRefs": [{"name": secret}]}}));
        }
    }
    f.reconcile(&aws_cp(None, aws_subnets()))
        .await
        .expect("reconciles");
    let writes = f.writes();
    for name in [CONFIG_MR, SEED_MR, SHOOT_MR] {
        assert!(writes.contains(&format!("PUT mr/{name}")), "{writes:#?}");
        assert!(
            !writes.contains(&"POST mr".to_string()),
            "no second ManagedResource"
        );
        let mr = f.managed_resource(name).expect("MR");
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
            .get(&secret_path(&format!("{name}-0a1b2c3d")))
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
    let mrs = f
        .api
        .lock()
        .unwrap()
        .list(&format!(
            "/apis/resources.gardener.cloud/v1alpha1/namespaces/{NS}/managedresources"
        ))
        .len();
    assert_eq!(mrs, 4, "no doubles");

    // On deletion the Go extension's CRDs ManagedResource goes too.
    deleting(&f);
    f.reconcile_stored().await.expect("deletes");
    assert!(f.managed_resource(SHOOT_CRDS_MR).is_none());
    assert!(
        f.get(&secret_path(&format!("{SHOOT_CRDS_MR}-0a1b2c3d")))
            .is_none()
    );
}

/// Gardener does not wait for the shoot webhooks ManagedResource while
/// hibernation is enabled (no shoot kube-apiserver to delete them from).
#[tokio::test]
async fn a_hibernated_shoot_does_not_wait_for_its_shoot_webhooks() {
    let shoot = shoot(&["IPv4"], true);
    let f = fake_with(state(shoot), "aws", None, |r| {
        r.actuator.delete_wait = Duration::from_millis(20);
    });
    f.reconcile(&aws_cp(None, aws_subnets()))
        .await
        .expect("reconciles");
    f.api
        .lock()
        .unwrap()
        .insert(json!({"apiVersion": "resources.gardener.cloud/v1alpha1",
        "kind": "ManagedResource",
        "metadata": {"name": "extension-controlplane-shoot-webhooks", "namespace": NS,
            "finalizers": ["resources.gardener.cloud/gardener-resource-manager"]},
        "spec": {"secretRefs": []}}));
    deleting(&f);
    f.reconcile_stored()
        .await
        .expect("deletes without waiting for the webhooks");
    assert!(f.get(CP_PATH).is_none());
}
