//! The health checks and the heartbeat against a real kube-apiserver (the
//! test bed shared by this binary, a namespace and an identity per test,
//! every call read back from the audit log): `ControlPlaneHealthy`
//! transitions from the CCM Deployment and the ManagedResources (held in
//! caches filled by the test), no write while nothing changes, the
//! resourceVersion guard against a concurrent writer, hibernation and
//! migration; the heartbeat Lease created and renewed.
//!
//! "One renewal per interval, none once stopped" stays on the fake: it runs
//! on tokio's paused clock, which cannot run against real I/O. A shoot API
//! server that never answers is a silent TCP listener (a real one cannot be
//! made to hang on demand).

mod support;

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use kube::runtime::reflector::{self, Store};
use kube::runtime::watcher;
use scion::controller::health::{CacheState, Caches, HealthChecks};
use scion::controller::heartbeat::Heartbeat;
use scion::gardener::{ControlPlane, ManagedResource, ShootContext};
use serde_json::{Value, json};
use support::controller::mock::*;
use support::controller::real::*;
use support::controller::*;

const MRS: [&str; 3] = [
    "extension-controlplane-configuration-seed",
    "extension-controlplane-seed",
    "extension-controlplane-shoot",
];

static TICK: AtomicU32 = AtomicU32::new(0);

/// A clock that moves one second per reading.
fn ticking() -> String {
    let n = TICK.fetch_add(1, Ordering::SeqCst);
    format!("2026-11-21T03:{:02}:{:02}Z", n / 60, n % 60)
}

fn store_of<K>(objects: Vec<K>) -> Store<K>
where
    K: kube::Resource<DynamicType = ()> + Clone + 'static,
{
    let (reader, mut writer) = reflector::store();
    writer.apply_watcher_event(&watcher::Event::Init);
    for o in objects {
        writer.apply_watcher_event(&watcher::Event::InitApply(o));
    }
    writer.apply_watcher_event(&watcher::Event::InitDone);
    reader
}

fn deployment(f: &Real, available: &str) -> Deployment {
    serde_json::from_value(f.moved(&json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "cloud-controller-manager", "namespace": NS, "generation": 2},
        "spec": {"replicas": 1, "selector": {}, "template": {}},
        "status": {"observedGeneration": 2, "updatedReplicas": 1, "conditions": [
            {"type": "Available", "status": available, "reason": "MinimumReplicasUnavailable", "message": "Deployment does not have minimum availability."},
            {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"},
        ]},
    })))
    .expect("Deployment")
}

fn managed_resource(f: &Real, name: &str, healthy: bool) -> ManagedResource {
    let status = if healthy { "True" } else { "False" };
    serde_json::from_value(f.moved(&json!({
        "apiVersion": "resources.gardener.cloud/v1alpha1", "kind": "ManagedResource",
        "metadata": {"name": name, "namespace": NS, "generation": 1},
        "spec": {"secretRefs": []},
        "status": {"observedGeneration": 1, "conditions": [
            {"type": "ResourcesApplied", "status": "True", "reason": "ApplySucceeded", "message": "",
             "lastTransitionTime": "2026-11-21T03:00:00Z", "lastUpdateTime": "2026-11-21T03:00:00Z"},
            {"type": "ResourcesHealthy", "status": status, "reason": "R", "message": "pod crashing",
             "lastTransitionTime": "2026-11-21T03:00:00Z", "lastUpdateTime": "2026-11-21T03:00:00Z"},
        ]},
    })))
    .expect("ManagedResource")
}

struct World {
    f: Real,
    checks: HealthChecks,
}

/// Available Deployments of these names in the world's namespace.
fn available<'a>(f: &Real, names: impl IntoIterator<Item = &'a str>) -> Vec<Deployment> {
    names
        .into_iter()
        .map(|name| {
            let mut d = deployment(f, "True");
            d.metadata.name = Some(name.to_owned());
            d
        })
        .collect()
}

impl World {
    async fn new(shoot: ShootContext) -> World {
        let f = real(shoot, "aws").await;
        f.insert(&cp_json(&succeeded(with_finalizer(aws_cp(
            None,
            aws_subnets(),
        )))))
        .await;
        let checks = HealthChecks {
            client: f.ctx.client.clone(),
            state: f.ctx.state.clone(),
            provider: "aws".into(),
            classes: vec!["shoot".into()],
            period: Duration::from_secs(30),
            deployments: vec!["cloud-controller-manager".into()],
            feature_gates: Default::default(),
            managed_resources: MRS.iter().map(|s| s.to_string()).collect(),
            events: Vec::new(),
            shoot_secrets: scion::controller::health::shoot::kubeconfig_secrets(false),
            now: ticking,
            concurrency: 5,
            metrics: None,
            warned: Default::default(),
        };
        World { f, checks }
    }

    /// One pass over caches holding `cp` and `deployments` and `mrs`;
    /// returns how many conditions were written.
    async fn pass_over(
        &self,
        cp: ControlPlane,
        deployments: Vec<Deployment>,
        mrs: &[ManagedResource],
    ) -> usize {
        let caches = Caches::synced(
            store_of(vec![cp]),
            store_of(deployments),
            MRS.iter()
                .map(|name| {
                    let mine = mrs
                        .iter()
                        .filter(|m| m.metadata.name.as_deref() == Some(*name))
                        .cloned()
                        .collect();
                    (name.to_string(), store_of(mine))
                })
                .collect(),
        );
        self.checks.pass(&caches).await
    }

    /// [`World::pass_over`] the stored ControlPlane.
    async fn pass(&self, deployments: Vec<Deployment>, mrs: &[ManagedResource]) -> usize {
        self.pass_over(self.f.controlplane().await, deployments, mrs)
            .await
    }

    async fn condition(&self) -> Value {
        let cp = self.f.controlplane().await;
        let conditions: Vec<Value> = cp.status.and_then(|s| s.conditions).unwrap_or_default();
        conditions
            .into_iter()
            .find(|c| c["type"] == "ControlPlaneHealthy")
            .expect("ControlPlaneHealthy")
    }

    fn healthy_mrs(&self) -> Vec<ManagedResource> {
        MRS.iter()
            .map(|n| managed_resource(&self.f, n, true))
            .collect()
    }
}

#[tokio::test]
async fn control_plane_healthy_follows_the_deployment_and_the_managed_resources() {
    let w = World::new(shoot(&["IPv4"], false)).await;
    let ns = w.f.ns().to_owned();

    // Nothing there yet: False with every detail numbered.
    assert_eq!(w.pass(vec![], &[]).await, 1);
    let c = w.condition().await;
    assert_eq!(c["status"], "False");
    assert_eq!(c["reason"], "HealthCheckUnsuccessful");
    let message = c["message"].as_str().expect("message");
    assert!(
        message.starts_with(&format!(
            "1) deployment \"cloud-controller-manager\" in namespace \"{ns}\" not found. 2) Managed Resource \"extension-controlplane-configuration-seed\" in namespace \"{ns}\" not found."
        )),
        "{message}"
    );
    assert!(
        message.contains("4) Managed Resource \"extension-controlplane-shoot\""),
        "{message}"
    );
    let first_transition = c["lastTransitionTime"].clone();

    // The same situation again: no write at all.
    w.f.clear().await;
    assert_eq!(w.pass(vec![], &[]).await, 0);
    assert_eq!(w.f.lines().await, Vec::<String>::new());

    // Everything healthy: True, a new transition time.
    let healthy = w.healthy_mrs();
    assert_eq!(w.pass(vec![deployment(&w.f, "True")], &healthy).await, 1);
    let c = w.condition().await;
    assert_eq!(
        (
            c["status"].as_str(),
            c["reason"].as_str(),
            c["message"].as_str()
        ),
        (
            Some("True"),
            Some("HealthCheckSuccessful"),
            Some("All health checks successful")
        )
    );
    assert_ne!(c["lastTransitionTime"], first_transition);
    w.f.clear().await;
    assert_eq!(w.pass(vec![deployment(&w.f, "True")], &healthy).await, 0);
    assert_eq!(w.f.lines().await, Vec::<String>::new());

    // The CCM crash-loops: one detail, with a trailing dot.
    assert_eq!(w.pass(vec![deployment(&w.f, "False")], &healthy).await, 1);
    let c = w.condition().await;
    assert_eq!(c["status"], "False");
    assert_eq!(
        c["message"],
        format!(
            "deployment \"cloud-controller-manager\" in namespace \"{ns}\" is unhealthy: condition \"Available\" has invalid status False (expected True) due to MinimumReplicasUnavailable: Deployment does not have minimum availability."
        )
    );

    // A ManagedResource reports unhealthy objects.
    let mut mrs = w.healthy_mrs();
    mrs[1] = managed_resource(&w.f, MRS[1], false);
    assert_eq!(w.pass(vec![deployment(&w.f, "True")], &mrs).await, 1);
    let message = w.condition().await["message"]
        .as_str()
        .expect("message")
        .to_string();
    assert!(
        message.starts_with(&format!(
            "managed resource \"extension-controlplane-seed\" in namespace \"{ns}\" is unhealthy:"
        )),
        "{message}"
    );
    assert!(message.contains("pod crashing"), "{message}");
}

/// The Deployments checked are the ones the provider's components declare
/// (`health.deployments`), in order; each one missing is its own detail.
#[tokio::test]
async fn the_checked_deployments_are_the_ones_the_components_declare() {
    let profile = scion::profile::Profile::builtin("aws").expect("aws");
    let declared: Vec<String> = profile
        .control_plane()
        .expect("controlPlane")
        .health_deployments()
        .into_iter()
        .map(str::to_string)
        .collect();
    assert_eq!(declared[0], "cloud-controller-manager", "{declared:?}");
    let mut w = World::new(shoot(&["IPv4"], false)).await;
    w.checks.deployments = profile
        .control_plane()
        .expect("controlPlane")
        .health_checks();
    let ns = w.f.ns().to_owned();
    let all: Vec<Deployment> = declared
        .iter()
        .map(|name| {
            let mut d = deployment(&w.f, "True");
            d.metadata.name = Some(name.clone());
            d
        })
        .collect();
    let healthy = w.healthy_mrs();
    assert_eq!(w.pass(all.clone(), &healthy).await, 1);
    assert_eq!(w.condition().await["status"], "True");
    let last = declared.last().expect("one");
    assert_eq!(w.pass(all[..all.len() - 1].to_vec(), &healthy).await, 1);
    assert_eq!(
        w.condition().await["message"],
        format!("deployment \"{last}\" in namespace \"{ns}\" not found.")
    );
}

/// A Deployment declared with a condition (gcp's `ingress-gce`, checked
/// while the shoot is dual-stack) is looked at only for the shoots it holds
/// for: a single-stack shoot without it is healthy, a dual-stack one is not.
#[tokio::test]
async fn a_conditional_deployment_is_checked_only_where_its_condition_holds() {
    let gcp = scion::profile::Profile::builtin("gcp").expect("gcp");
    let declared = gcp.control_plane().expect("controlPlane").health_checks();
    assert!(
        declared
            .iter()
            .any(|d| d.name == "ingress-gce" && d.when.is_some()),
        "{declared:?}"
    );
    for (families, status, message) in [
        (&["IPv4"][..], "True", None),
        (
            &["IPv4", "IPv6"][..],
            "False",
            Some("deployment \"ingress-gce\" in namespace \"{ns}\" not found."),
        ),
    ] {
        let mut w = World::new(shoot(families, false)).await;
        w.checks.deployments = declared.clone();
        let ns = w.f.ns().to_owned();
        // every unconditional one exists
        let present = available(
            &w.f,
            declared
                .iter()
                .filter(|d| d.when.is_none())
                .map(|d| d.name.as_str()),
        );
        let healthy = w.healthy_mrs();
        assert_eq!(w.pass(present, &healthy).await, 1, "{families:?}");
        let condition = w.condition().await;
        assert_eq!(condition["status"], status, "{families:?}: {condition}");
        if let Some(message) = message {
            assert_eq!(
                condition["message"],
                message.replace("{ns}", &ns),
                "{families:?}"
            );
        }
    }
}

/// A Deployment declared with an extension feature gate condition (azure's
/// `remedy-controller-azure`, not checked while `DisableRemedyController` is
/// on, upstream's pre-check) follows the gates the checks run with: without
/// the Deployment, the shoot is healthy under the gate and not without it.
#[tokio::test]
async fn a_deployment_under_a_feature_gate_is_checked_only_while_the_gate_allows() {
    let azure = scion::profile::Profile::builtin("azure").expect("azure");
    let plane = azure.control_plane().expect("controlPlane");
    let declared = plane.health_checks();
    for (gate, status) in [(true, "True"), (false, "False")] {
        let mut w = World::new(shoot(&["IPv4"], false)).await;
        w.checks.deployments = declared.clone();
        w.checks.feature_gates = scion::profile::FeatureGates::resolve(
            &plane.feature_gates,
            &[("DisableRemedyController".to_owned(), gate)].into(),
        );
        let ns = w.f.ns().to_owned();
        let present = available(
            &w.f,
            declared
                .iter()
                .map(|d| d.name.as_str())
                .filter(|name| *name != "remedy-controller-azure"),
        );
        let healthy = w.healthy_mrs();
        assert_eq!(w.pass(present, &healthy).await, 1, "gate {gate}");
        let condition = w.condition().await;
        assert_eq!(condition["status"], status, "gate {gate}: {condition}");
        if !gate {
            assert_eq!(
                condition["message"],
                format!("deployment \"remedy-controller-azure\" in namespace \"{ns}\" not found.")
            );
        }
    }
}

/// The condition is written with a merge patch of the status that keeps
/// the other conditions and carries the resourceVersion the cache read: a
/// real API server refuses it (409) when someone wrote in between, and
/// nothing of theirs is lost; the next pass, on the new version, writes.
#[tokio::test]
async fn the_status_patch_keeps_other_conditions_and_is_guarded() {
    let w = World::new(shoot(&["IPv4"], false)).await;
    let other = json!({"type": "Other", "status": "True", "reason": "R", "message": "m",
                       "lastTransitionTime": "2026-11-21T03:00:00Z", "lastUpdateTime": "2026-11-21T03:00:00Z"});
    let cp = cp_json(&w.f.controlplane().await);
    w.f.patch_status(&cp, &json!({"conditions": [other]})).await;
    let read = w.f.controlplane().await;
    // another writer after the cache read
    let mut second = other.clone();
    second["type"] = json!("Second");
    w.f.patch_status(&cp, &json!({"conditions": [other, second]}))
        .await;
    let healthy = w.healthy_mrs();
    w.f.clear().await;
    assert_eq!(
        w.pass_over(read, vec![deployment(&w.f, "True")], &healthy)
            .await,
        0,
        "a stale read writes nothing"
    );
    let codes: Vec<i64> = w.f.requests().await.iter().map(|r| r.code).collect();
    assert_eq!(codes, [409], "one guarded patch, refused");
    assert_eq!(w.pass(vec![deployment(&w.f, "True")], &healthy).await, 1);
    let stored = w.f.controlplane().await;
    let types: Vec<String> = stored
        .status
        .and_then(|s| s.conditions)
        .unwrap_or_default()
        .iter()
        .map(|c| c["type"].as_str().expect("type").to_owned())
        .collect();
    assert_eq!(types, ["Other", "Second", "ControlPlaneHealthy"]);
}

#[tokio::test]
async fn hibernated_shoots_are_healthy_and_migrating_ones_are_not_checked() {
    let w = World::new(shoot(&["IPv4"], true)).await;
    assert_eq!(w.pass(vec![], &[]).await, 1);
    let c = w.condition().await;
    assert_eq!(
        (c["status"].as_str(), c["message"].as_str()),
        (Some("True"), Some("Shoot is hibernated"))
    );

    let w = World::new(shoot(&["IPv4"], false)).await;
    let migrating: ControlPlane = annotated(w.f.controlplane().await, "migrate");
    w.f.store(&migrating).await;
    w.f.clear().await;
    assert_eq!(w.pass(vec![], &[]).await, 0);
    assert_eq!(w.f.lines().await, Vec::<String>::new());
}

/// A clock an hour after the ticking one: past every progressing threshold.
fn an_hour_later() -> String {
    let n = TICK.fetch_add(1, Ordering::SeqCst);
    format!("2026-11-21T04:{:02}:{:02}Z", n / 60, n % 60)
}

/// The Deployment `name` as the API server stores it.
async fn stored_deployment(f: &Real, name: &str) -> Deployment {
    let path = format!("/apis/apps/v1/namespaces/{}/deployments/{name}", f.ns());
    serde_json::from_value(f.get(&path).await.expect("stored Deployment")).expect("Deployment")
}

/// The ManagedResource `name` as the API server stores it.
async fn stored_mr(f: &Real, name: &str) -> ManagedResource {
    serde_json::from_value(
        f.get(&f.mr_path(name))
            .await
            .expect("stored ManagedResource"),
    )
    .expect("ManagedResource")
}

fn timed(type_: &str, status: &str, reason: &str, message: &str) -> Value {
    json!({"type": type_, "status": status, "reason": reason, "message": message,
           "lastTransitionTime": "2026-11-21T03:00:00Z", "lastUpdateTime": "2026-11-21T03:00:00Z"})
}

/// Issue 22 item 6: a Deployment mid-rollout, produced on the API server by
/// writing its status subresource as the Deployment controller does, is
/// `Progressing` (upstream's `CheckDeployment` fails it, the rollout is in
/// flight), for at most its `progressDeadlineSeconds` since the condition
/// left `True`; then `False`; `True` once rolled out; a rollout past its
/// deadline is `False` at once.
#[tokio::test]
async fn a_deployment_rolling_out_is_progressing_until_its_deadline() {
    let mut w = World::new(shoot(&["IPv4"], false)).await;
    let ns = w.f.ns().to_owned();
    let healthy = w.healthy_mrs();
    let ccm = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "cloud-controller-manager", "namespace": NS},
        "spec": {"replicas": 3, "progressDeadlineSeconds": 300,
                 "selector": {"matchLabels": {"app": "ccm"}},
                 "template": {"metadata": {"labels": {"app": "ccm"}},
                              "spec": {"containers": [{"name": "ccm", "image": "ccm:v1"}]}}},
        "status": {"observedGeneration": 1, "replicas": 3, "updatedReplicas": 3,
                   "readyReplicas": 3, "availableReplicas": 3, "conditions": [
            timed("Available", "True", "MinimumReplicasAvailable", "Deployment has minimum availability."),
            timed("Progressing", "True", "NewReplicaSetAvailable", "ReplicaSet \"ccm-1\" has successfully progressed."),
        ]},
    });
    w.f.insert(&ccm).await;
    let live = || stored_deployment(&w.f, "cloud-controller-manager");
    assert_eq!(w.pass(vec![live().await], &healthy).await, 1);
    assert_eq!(w.condition().await["status"], "True");

    // A new image: a new generation, not yet observed.
    let path = format!("/apis/apps/v1/namespaces/{ns}/deployments/cloud-controller-manager");
    w.f.patch(&path, &json!({"spec": {"template": {"spec": {"containers": [{"name": "ccm", "image": "ccm:v2"}]}}}}))
        .await;
    assert_eq!(live().await.metadata.generation, Some(2));
    assert_eq!(w.pass(vec![live().await], &healthy).await, 1);
    let c = w.condition().await;
    assert_eq!(
        (c["status"].as_str(), c["reason"].as_str(), c["message"].as_str()),
        (
            Some("Progressing"),
            Some("HealthCheckProgressing"),
            Some(format!("deployment \"cloud-controller-manager\" in namespace \"{ns}\" is rolling out: observed generation outdated (1/2).").as_str())
        )
    );
    let since = c["lastTransitionTime"].clone();

    // Observed; one new pod up, two old ones going: not available.
    w.f.patch_status(&ccm, &json!({"observedGeneration": 2, "updatedReplicas": 1,
        "availableReplicas": 1, "unavailableReplicas": 2, "conditions": [
        timed("Available", "False", "MinimumReplicasUnavailable", "Deployment does not have minimum availability."),
        timed("Progressing", "True", "ReplicaSetUpdated", "ReplicaSet \"ccm-2\" is progressing."),
    ]})).await;
    assert_eq!(w.pass(vec![live().await], &healthy).await, 1);
    let c = w.condition().await;
    assert_eq!(c["status"], "Progressing");
    assert_eq!(
        c["message"],
        format!(
            "deployment \"cloud-controller-manager\" in namespace \"{ns}\" is rolling out: condition \"Available\" has invalid status False (expected True) due to MinimumReplicasUnavailable: Deployment does not have minimum availability."
        )
    );
    assert_eq!(c["lastTransitionTime"], since, "still the same status");

    // Past the Deployment's deadline (300 s) since the transition: False.
    w.checks.now = an_hour_later;
    assert_eq!(w.pass(vec![live().await], &healthy).await, 1);
    let c = w.condition().await;
    assert_eq!(
        (c["status"].as_str(), c["reason"].as_str()),
        (Some("False"), Some("HealthCheckUnsuccessful"))
    );
    assert!(
        c["message"]
            .as_str()
            .expect("message")
            .contains("is rolling out: ")
    );

    // Rolled out: True.
    w.checks.now = ticking;
    w.f.patch_status(&ccm, &json!({"updatedReplicas": 3, "availableReplicas": 3,
        "unavailableReplicas": 0, "conditions": [
        timed("Available", "True", "MinimumReplicasAvailable", "Deployment has minimum availability."),
        timed("Progressing", "True", "NewReplicaSetAvailable", "ReplicaSet \"ccm-2\" has successfully progressed."),
    ]})).await;
    assert_eq!(w.pass(vec![live().await], &healthy).await, 1);
    assert_eq!(w.condition().await["status"], "True");

    // A rollout past its deadline (Progressing=False): unhealthy at once.
    w.f.patch(&path, &json!({"spec": {"template": {"spec": {"containers": [{"name": "ccm", "image": "ccm:v3"}]}}}}))
        .await;
    w.f.patch_status(&ccm, &json!({"observedGeneration": 3, "updatedReplicas": 1, "conditions": [
        timed("Available", "False", "MinimumReplicasUnavailable", "Deployment does not have minimum availability."),
        timed("Progressing", "False", "ProgressDeadlineExceeded", "ReplicaSet \"ccm-3\" has timed out progressing."),
    ]})).await;
    assert_eq!(w.pass(vec![live().await], &healthy).await, 1);
    let c = w.condition().await;
    assert_eq!(c["status"], "False");
    assert!(
        c["message"]
            .as_str()
            .expect("message")
            .contains("is unhealthy: condition \"Available\""),
        "{c}"
    );
}

/// Issue 22 item 6: the shoot side (the CSI node DaemonSet lives in the
/// shoot) counts through the shoot ManagedResource's conditions, as
/// gardenlet's `SystemComponentsHealthy` reads them: not yet observed by
/// gardener-resource-manager, or its objects rolling out
/// (`ResourcesProgressing=True`), is `Progressing`; `ResourcesHealthy=False`
/// is `False`; all reported and rolled out is `True`. The ManagedResources
/// are written to and read from the API server.
#[tokio::test]
async fn the_shoot_managed_resource_reports_progress_and_failure_of_the_shoot_side() {
    let w = World::new(shoot(&["IPv4"], false)).await;
    let ns = w.f.ns().to_owned();
    let shoot_mr = MRS[2];
    for (i, name) in MRS.iter().enumerate() {
        let mut mr = serde_json::to_value(managed_resource(&w.f, name, true)).expect("json");
        if i == 2 {
            // created by scion, not yet seen by gardener-resource-manager
            mr.as_object_mut().expect("object").remove("status");
        }
        w.f.insert(&mr).await;
    }
    let live = || async {
        let mut mrs = Vec::new();
        for name in MRS {
            mrs.push(stored_mr(&w.f, name).await);
        }
        mrs
    };
    let ccm = || vec![deployment(&w.f, "True")];
    assert_eq!(w.pass(ccm(), &live().await).await, 1);
    let c = w.condition().await;
    assert_eq!(
        (c["status"].as_str(), c["reason"].as_str(), c["message"].as_str()),
        (
            Some("Progressing"),
            Some("HealthCheckProgressing"),
            Some(format!("managed resource \"{shoot_mr}\" in namespace \"{ns}\" is progressing: observed generation of managed resource {ns}/{shoot_mr} outdated (0/1).").as_str())
        )
    );

    // Applied; the csi-driver-node DaemonSet rolls out in the shoot.
    let object = json!({"apiVersion": "resources.gardener.cloud/v1alpha1", "kind": "ManagedResource",
                        "metadata": {"name": shoot_mr, "namespace": NS}});
    let status = |healthy: &str, progressing: &str, message: &str| {
        json!({"observedGeneration": 1, "conditions": [
            timed("ResourcesApplied", "True", "ApplySucceeded", "All resources are applied."),
            timed("ResourcesHealthy", healthy, "ResourcesHealthy", message),
            timed("ResourcesProgressing", progressing, "ResourcesProgressing", message),
        ]})
    };
    w.f.patch_status(
        &object,
        &status(
            "True",
            "True",
            "DaemonSet \"kube-system/csi-driver-node\" is progressing",
        ),
    )
    .await;
    assert_eq!(w.pass(ccm(), &live().await).await, 1);
    let c = w.condition().await;
    assert_eq!(c["status"], "Progressing");
    assert_eq!(
        c["message"],
        format!(
            "managed resource \"{shoot_mr}\" in namespace \"{ns}\" is progressing: condition ResourcesProgressing of managed resource {ns}/{shoot_mr} is True: DaemonSet \"kube-system/csi-driver-node\" is progressing."
        )
    );

    // The DaemonSet's pods crash: False.
    w.f.patch_status(
        &object,
        &status(
            "False",
            "False",
            "DaemonSet \"kube-system/csi-driver-node\" is unhealthy",
        ),
    )
    .await;
    assert_eq!(w.pass(ccm(), &live().await).await, 1);
    let c = w.condition().await;
    assert_eq!(
        (c["status"].as_str(), c["reason"].as_str()),
        (Some("False"), Some("HealthCheckUnsuccessful"))
    );
    assert!(
        c["message"]
            .as_str()
            .expect("message")
            .contains(&format!("is unhealthy: condition ResourcesHealthy of managed resource {ns}/{shoot_mr} is False: DaemonSet")),
        "{c}"
    );

    // Rolled out and healthy: True.
    w.f.patch_status(
        &object,
        &status("True", "False", "All resources are healthy."),
    )
    .await;
    assert_eq!(w.pass(ccm(), &live().await).await, 1);
    assert_eq!(w.condition().await["status"], "True");
}

/// A check whose cache is not current (its watch failing) could not run:
/// `Unknown`, `ConditionCheckError`, as upstream's failed GET. The cache's
/// state is set by hand: a real API server can be made to refuse the watch,
/// but only before the first list, when the loop does not run at all.
#[tokio::test]
async fn a_check_whose_cache_is_not_current_makes_the_condition_unknown() {
    let w = World::new(shoot(&["IPv4"], false)).await;
    let ns = w.f.ns().to_owned();
    let healthy = w.healthy_mrs();
    let name = format!("managedresources {}", MRS[2]);
    let mut caches = Caches::synced(
        store_of(vec![w.f.controlplane().await]),
        store_of(vec![deployment(&w.f, "True")]),
        MRS.iter()
            .map(|n| {
                let mine = healthy
                    .iter()
                    .filter(|m| m.metadata.name.as_deref() == Some(*n))
                    .cloned()
                    .collect();
                (n.to_string(), store_of(mine))
            })
            .collect(),
    );
    caches.synced.retain(|(n, _)| *n != name);
    let (_tx, rx) = tokio::sync::watch::channel(CacheState {
        synced: true,
        error: Some("managedresources is forbidden".into()),
    });
    caches.synced.push((name, rx));
    assert_eq!(w.checks.pass(&caches).await, 1);
    let c = w.condition().await;
    assert_eq!(
        (c["status"].as_str(), c["reason"].as_str(), c["message"].as_str()),
        (
            Some("Unknown"),
            Some("ConditionCheckError"),
            Some(format!("failed to execute 1 health check: Managed Resource \"{}\" in namespace \"{ns}\": its cache is not current: managedresources is forbidden.", MRS[2]).as_str())
        )
    );
}

fn lease_path(namespace: &str) -> String {
    format!(
        "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/gardener-extension-heartbeat"
    )
}

fn heartbeat(client: &kube::Client, namespace: &str, interval: Duration) -> Heartbeat {
    Heartbeat {
        client: client.clone(),
        namespace: namespace.into(),
        holder: "provider-aws".into(),
        interval,
        now: || "2026-11-21T03:00:00.000000Z".to_string(),
    }
}

#[tokio::test]
async fn the_heartbeat_lease_is_created_then_renewed() {
    let f = real(shoot(&["IPv4"], false), "aws").await;
    let hb = heartbeat(&f.ctx.client, f.ns(), Duration::from_secs(30));
    hb.renew().await.expect("creates");
    hb.renew().await.expect("renews");
    let lease = lease_path(f.ns());
    assert_eq!(
        f.lines().await,
        [
            format!("GET {lease}"),
            format!(
                "POST /apis/coordination.k8s.io/v1/namespaces/{}/leases",
                f.ns()
            ),
            format!("GET {lease}"),
            format!("PATCH {lease}"),
        ]
    );
    let stored = f.get(&lease).await.expect("Lease");
    assert_eq!(
        stored["spec"],
        json!({"holderIdentity": "provider-aws", "leaseDurationSeconds": 30,
               "renewTime": "2026-11-21T03:00:00.000000Z"})
    );
}

/// On tokio's paused clock (the fake: virtual time cannot run against real
/// I/O): exactly one renewal per interval.
#[tokio::test(start_paused = true)]
async fn the_heartbeat_renews_every_interval_and_stops_with_the_controller() {
    let f = fake(state(shoot(&["IPv4"], false)), "aws");
    let hb = heartbeat(&f.ctx.client, "garden-ext", Duration::from_secs(30));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(hb.run(async move {
        let _ = stopped.await;
    }));
    tokio::time::sleep(Duration::from_secs(100)).await;
    let _ = stop.send(());
    task.await.expect("heartbeat ends");
    let renewals = |f: &Fake| {
        f.lines()
            .iter()
            .filter(|l| l.starts_with("PATCH") || l.starts_with("POST"))
            .count()
    };
    let done = renewals(&f);
    assert_eq!(done, 4, "at 0, 30, 60 and 90 s");
    tokio::time::sleep(Duration::from_secs(100)).await;
    assert_eq!(renewals(&f), done, "no renewal once stopped");
}

/// The Event check's read of a shoot whose API server accepts connections
/// and never answers gives up at its deadline, with the message the
/// condition carries. A real API server cannot be made to hang on demand:
/// a TCP listener that holds every connection silently stands in for it.
#[tokio::test]
async fn a_shoot_that_never_answers_is_given_up_at_the_deadline() {
    use k8s_openapi::api::core::v1::Secret;
    use scion::controller::health::shoot::{DEADLINE, EXTERNAL_SECRET, newest_event};
    use scion::profile::component::HealthEvents;

    let f = real(shoot(&["IPv4"], false), "aws").await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let silent = tokio::spawn(async move {
        let mut held = Vec::new();
        // bounded: the test opens one connection (a retry at most a few)
        while held.len() < 16 {
            let (connection, _) = listener.accept().await.unwrap();
            held.push(connection);
        }
    });
    let kubeconfig = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: shoot\n  cluster: {{server: 'https://{addr}'}}\nusers:\n- name: gardener\n  user: {{token: abc}}\ncontexts:\n- name: shoot\n  context: {{cluster: shoot, user: gardener}}\ncurrent-context: shoot\n"
    );
    let secret: Secret = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": EXTERNAL_SECRET, "namespace": f.ns()},
        "stringData": {"kubeconfig": kubeconfig},
    }))
    .unwrap();
    kube::Api::<Secret>::namespaced(f.session.client.clone(), f.ns())
        .create(&Default::default(), &secret)
        .await
        .unwrap();
    let spec = HealthEvents {
        component: "aws-custom-route-controller".into(),
        after: Vec::new(),
        kind: "ServiceAccount".into(),
        name: "aws-custom-route-controller".into(),
        namespace: "kube-system".into(),
        within: Duration::from_secs(300),
        codes: Vec::new(),
        when: None,
    };
    let started = std::time::Instant::now();
    let read = newest_event(&f.session.client, f.ns(), &[EXTERNAL_SECRET], &spec).await;
    let took = started.elapsed();
    silent.abort();
    assert_eq!(read, Err("no answer within 10s".to_string()));
    assert!(
        took >= DEADLINE && took < DEADLINE + Duration::from_secs(5),
        "{took:?}"
    );
}
