//! The health checks and the heartbeat against a real kube-apiserver (the
//! test bed shared by this binary, a namespace and an identity per test,
//! every call read back from the audit log): `ControlPlaneHealthy`
//! transitions from the CCM Deployment and the ManagedResources (held in
//! caches filled by the test), no write while nothing changes, the
//! resourceVersion guard against a concurrent writer, hibernation and
//! migration; the heartbeat Lease created and renewed.
//!
//! "One renewal per interval, none once stopped" stays on the fake: it runs
//! on tokio's paused clock, which cannot run against real I/O.

mod support;

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
        "spec": {"selector": {}, "template": {}},
        "status": {"observedGeneration": 2, "conditions": [
            {"type": "Available", "status": available, "reason": "MinimumReplicasUnavailable", "message": "Deployment does not have minimum availability."},
            {"type": "Progressing", "status": "True"},
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
            managed_resources: MRS.iter().map(|s| s.to_string()).collect(),
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
