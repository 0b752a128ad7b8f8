//! The health checks and the heartbeat against the stateful mock API server
//! (tower_test, every call recorded): `ControlPlaneHealthy` transitions from
//! the CCM Deployment and the ManagedResources, no write while nothing
//! changes, hibernation and migration; the heartbeat Lease created, renewed
//! every interval and no longer once stopped.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use kube::runtime::reflector::{self, Store};
use kube::runtime::watcher;
use scion::controller::health::{Caches, HealthChecks};
use scion::controller::heartbeat::Heartbeat;
use scion::gardener::{ControlPlane, ManagedResource, ShootContext};
use serde_json::{Value, json};
use support::controller::mock::*;
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

fn deployment(available: &str) -> Deployment {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "cloud-controller-manager", "namespace": NS, "generation": 2},
        "spec": {"selector": {}, "template": {}},
        "status": {"observedGeneration": 2, "conditions": [
            {"type": "Available", "status": available, "reason": "MinimumReplicasUnavailable", "message": "Deployment does not have minimum availability."},
            {"type": "Progressing", "status": "True"},
        ]},
    }))
    .expect("Deployment")
}

fn managed_resource(name: &str, healthy: bool) -> ManagedResource {
    let status = if healthy { "True" } else { "False" };
    serde_json::from_value(json!({
        "apiVersion": "resources.gardener.cloud/v1alpha1", "kind": "ManagedResource",
        "metadata": {"name": name, "namespace": NS, "generation": 1},
        "spec": {"secretRefs": []},
        "status": {"observedGeneration": 1, "conditions": [
            {"type": "ResourcesApplied", "status": "True", "reason": "ApplySucceeded", "message": "",
             "lastTransitionTime": "2026-11-21T03:00:00Z", "lastUpdateTime": "2026-11-21T03:00:00Z"},
            {"type": "ResourcesHealthy", "status": status, "reason": "R", "message": "pod crashing",
             "lastTransitionTime": "2026-11-21T03:00:00Z", "lastUpdateTime": "2026-11-21T03:00:00Z"},
        ]},
    }))
    .expect("ManagedResource")
}

struct World {
    f: Fake,
    checks: HealthChecks,
}

impl World {
    fn new(shoot: ShootContext) -> World {
        let f = fake(state(shoot.clone()), "aws");
        f.api
            .lock()
            .unwrap()
            .insert(cp_json(&succeeded(with_finalizer(aws_cp(
                None,
                aws_subnets(),
            )))));
        let checks = HealthChecks {
            client: f.ctx.client.clone(),
            state: Arc::new(state(shoot)),
            provider: "aws".into(),
            classes: vec!["shoot".into()],
            period: Duration::from_secs(30),
            deployments: vec!["cloud-controller-manager".into()],
            managed_resources: MRS.iter().map(|s| s.to_string()).collect(),
            now: ticking,
            concurrency: 5,
            metrics: None,
            warned: Default::default(),
        };
        World { f, checks }
    }

    /// One pass over caches holding the stored ControlPlane and `deployments`
    /// and `mrs`; returns how many conditions were written.
    async fn pass(&self, deployments: Vec<Deployment>, mrs: &[ManagedResource]) -> usize {
        let caches = Caches::synced(
            store_of(vec![self.f.controlplane()]),
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

    fn condition(&self) -> Value {
        let cp = self.f.controlplane();
        let conditions: Vec<Value> = cp.status.and_then(|s| s.conditions).unwrap_or_default();
        conditions
            .into_iter()
            .find(|c| c["type"] == "ControlPlaneHealthy")
            .expect("ControlPlaneHealthy")
    }
}

fn healthy_mrs() -> Vec<ManagedResource> {
    MRS.iter().map(|n| managed_resource(n, true)).collect()
}

#[tokio::test]
async fn control_plane_healthy_follows_the_deployment_and_the_managed_resources() {
    let w = World::new(shoot(&["IPv4"], false));

    // Nothing there yet: False with every detail numbered.
    assert_eq!(w.pass(vec![], &[]).await, 1);
    let c = w.condition();
    assert_eq!(c["status"], "False");
    assert_eq!(c["reason"], "HealthCheckUnsuccessful");
    let message = c["message"].as_str().expect("message");
    assert!(
        message.starts_with(
            "1) deployment \"cloud-controller-manager\" in namespace \"shoot--foo--bar\" not found. 2) Managed Resource \"extension-controlplane-configuration-seed\" in namespace \"shoot--foo--bar\" not found."
        ),
        "{message}"
    );
    assert!(
        message.contains("4) Managed Resource \"extension-controlplane-shoot\""),
        "{message}"
    );
    let first_transition = c["lastTransitionTime"].clone();

    // The same situation again: no write at all.
    w.f.clear();
    assert_eq!(w.pass(vec![], &[]).await, 0);
    assert_eq!(w.f.lines(), Vec::<String>::new());

    // Everything healthy: True, a new transition time.
    assert_eq!(w.pass(vec![deployment("True")], &healthy_mrs()).await, 1);
    let c = w.condition();
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
    w.f.clear();
    assert_eq!(w.pass(vec![deployment("True")], &healthy_mrs()).await, 0);
    assert_eq!(w.f.lines(), Vec::<String>::new());

    // The CCM crash-loops: one detail, with a trailing dot.
    assert_eq!(w.pass(vec![deployment("False")], &healthy_mrs()).await, 1);
    let c = w.condition();
    assert_eq!(c["status"], "False");
    assert_eq!(
        c["message"],
        "deployment \"cloud-controller-manager\" in namespace \"shoot--foo--bar\" is unhealthy: condition \"Available\" has invalid status False (expected True) due to MinimumReplicasUnavailable: Deployment does not have minimum availability."
    );

    // A ManagedResource reports unhealthy objects.
    let mut mrs = healthy_mrs();
    mrs[1] = managed_resource(MRS[1], false);
    assert_eq!(w.pass(vec![deployment("True")], &mrs).await, 1);
    let message = w.condition()["message"]
        .as_str()
        .expect("message")
        .to_string();
    assert!(
        message.starts_with("managed resource \"extension-controlplane-seed\" in namespace \"shoot--foo--bar\" is unhealthy:"),
        "{message}"
    );
    assert!(message.contains("pod crashing"), "{message}");
}

#[tokio::test]
async fn the_status_patch_keeps_other_conditions_and_is_guarded() {
    let w = World::new(shoot(&["IPv4"], false));
    {
        let mut api = w.f.api.lock().unwrap();
        let cp = api.get_mut(CP_PATH).expect("cp");
        cp["status"]["conditions"] = json!([{"type": "Other", "status": "True"}]);
    }
    assert_eq!(w.pass(vec![deployment("True")], &healthy_mrs()).await, 1);
    let api = w.f.api.lock().unwrap();
    let patch = api.calls.last().expect("patch");
    assert_eq!(patch.path, format!("{CP_PATH}/status"));
    assert!(
        patch.body["metadata"]["resourceVersion"].is_string(),
        "{}",
        patch.body
    );
    let types: Vec<&str> = patch.body["status"]["conditions"]
        .as_array()
        .expect("conditions")
        .iter()
        .map(|c| c["type"].as_str().expect("type"))
        .collect();
    assert_eq!(types, ["Other", "ControlPlaneHealthy"]);
}

#[tokio::test]
async fn hibernated_shoots_are_healthy_and_migrating_ones_are_not_checked() {
    let w = World::new(shoot(&["IPv4"], true));
    assert_eq!(w.pass(vec![], &[]).await, 1);
    let c = w.condition();
    assert_eq!(
        (c["status"].as_str(), c["message"].as_str()),
        (Some("True"), Some("Shoot is hibernated"))
    );

    let w = World::new(shoot(&["IPv4"], false));
    let migrating: ControlPlane = annotated(w.f.controlplane(), "migrate");
    w.f.store(&migrating);
    w.f.clear();
    assert_eq!(w.pass(vec![], &[]).await, 0);
    assert_eq!(w.f.lines(), Vec::<String>::new());
}

const LEASE: &str =
    "/apis/coordination.k8s.io/v1/namespaces/garden-ext/leases/gardener-extension-heartbeat";

fn heartbeat(f: &Fake, interval: Duration) -> Heartbeat {
    Heartbeat {
        client: f.ctx.client.clone(),
        namespace: "garden-ext".into(),
        holder: "provider-aws".into(),
        interval,
        now: || "2026-11-21T03:00:00.000000Z".to_string(),
    }
}

#[tokio::test]
async fn the_heartbeat_lease_is_created_then_renewed() {
    let f = fake(state(shoot(&["IPv4"], false)), "aws");
    let hb = heartbeat(&f, Duration::from_secs(30));
    hb.renew().await.expect("creates");
    hb.renew().await.expect("renews");
    let api = f.api.lock().unwrap();
    let lines: Vec<String> = api.lines();
    assert_eq!(
        lines,
        [
            format!("GET {LEASE}"),
            "POST /apis/coordination.k8s.io/v1/namespaces/garden-ext/leases".to_string(),
            format!("GET {LEASE}"),
            format!("PATCH {LEASE}"),
        ]
    );
    let lease = api.get(LEASE).expect("Lease");
    assert_eq!(
        lease["spec"],
        json!({"holderIdentity": "provider-aws", "leaseDurationSeconds": 30,
               "renewTime": "2026-11-21T03:00:00.000000Z"})
    );
}

/// On tokio's paused clock: exactly one renewal per interval.
#[tokio::test(start_paused = true)]
async fn the_heartbeat_renews_every_interval_and_stops_with_the_controller() {
    let f = fake(state(shoot(&["IPv4"], false)), "aws");
    let hb = heartbeat(&f, Duration::from_secs(30));
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
