//! Issue 25 item 1 on a real kube-apiserver (the test bed): taking over the
//! Go extension's ManagedResources never deletes what scion does not render.
//!
//! The seed holds the example aws shoot and what the Go extension left: its
//! `extension-controlplane-seed` with the objects scion renders plus a
//! Deployment scion does not render (`csi-snapshot-validation`, the webhook
//! older extension versions ran), and its `extension-controlplane-shoot`
//! with a DaemonSet of an older version (`csi-driver-node-legacy`) besides
//! scion's objects. `scion check` names each such object
//! (`kept`, a `warning` row) before the switch-over; scion's reconciler (the
//! generic one with the ControlPlane actuator, in process, on the seed's
//! API) then takes both over in place: every object the Go extension's
//! ManagedResources held is still in a Secret they reference — what
//! gardener-resource-manager applies, so nothing is deleted — and the
//! ControlPlane's status names the kept objects. A second reconcile keeps
//! them again (the kept Secret is not scion's own). A referenced Secret that
//! is gone makes the next reconcile refuse, with the reason in `lastError`,
//! and leaves the ManagedResource as it was.

#[path = "support/testbed/mod.rs"]
mod testbed;

use std::collections::BTreeSet;
use std::sync::Arc;

use kube::api::{Api, Patch, PatchParams};
use scion::cli::check::{Verdict, check_seed};
use scion::controller::controlplane::{SEED_MR, SHOOT_MR};
use scion::controller::{ControlPlaneActuator, Reconciler, reconcile};
use scion::gardener::ControlPlane;
use scion::managedresources::{self, Bundle, takeover};
use scion::mutation::Engine;
use scion::profile::Profile;
use scion::state::{KubeState, KubeStateOptions, StateSource};
use serde_json::{Value, json};
use testbed::{ApiServer, Testbed, root, yaml_documents};

const SHOOT: &str = "shoot--dev--aws";

fn example_objects() -> Vec<Value> {
    let dir = root().join("examples/objects/aws");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
        .iter()
        .flat_map(|f| yaml_documents(&std::fs::read_to_string(f).unwrap()))
        .collect()
}

fn decoded(bundle: &Bundle) -> Vec<Value> {
    let data = managedresources::compare::secret_data(&bundle.secret).unwrap();
    managedresources::decode(&data).unwrap()
}

/// Every object the ManagedResource `name` holds: all documents of every
/// Secret it references (what GRM applies).
async fn held(api: &ApiServer, name: &str) -> (Value, BTreeSet<takeover::ObjectKey>) {
    let mr = api
        .get(
            "resources.gardener.cloud/v1alpha1",
            "ManagedResource",
            Some(SHOOT),
            name,
        )
        .await
        .unwrap();
    let mut keys = BTreeSet::new();
    for r in mr["spec"]["secretRefs"].as_array().unwrap() {
        let secret = api
            .get("v1", "Secret", Some(SHOOT), r["name"].as_str().unwrap())
            .await
            .unwrap_or_else(|| panic!("Secret {} referenced by {name} is missing", r["name"]));
        let data = managedresources::compare::secret_data(&secret).unwrap();
        keys.extend(takeover::keys(&managedresources::decode(&data).unwrap()));
    }
    (mr, keys)
}

fn key(kind: &str, namespace: &str, name: &str) -> takeover::ObjectKey {
    (kind.to_owned(), namespace.to_owned(), name.to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_take_over_keeps_what_scion_does_not_render() {
    let bed = Testbed::start().await;
    let api = &bed.seed;
    api.install_crds().await;
    api.namespace(
        SHOOT,
        &[
            ("shoot.gardener.cloud/provider", "aws"),
            ("seed.gardener.cloud/provider", "aws"),
        ],
    )
    .await;
    for mut doc in example_objects() {
        if doc["kind"] == "ControlPlane" {
            // a field scion does not honour, for the warning (issue 25 item 2)
            doc["spec"]["providerConfig"]["ipamController"] = json!({"enabled": true});
        }
        api.apply(&doc, "gardenlet").await.unwrap();
    }
    let client = api.client();
    let state = Arc::new(KubeState::new(client.clone(), KubeStateOptions::default()));
    let _reflector = state.spawn();
    state.wait_synced().await;
    let profile = Profile::builtin("aws").unwrap();
    let spec = Arc::new(profile.control_plane().unwrap().clone());
    let cps: Api<ControlPlane> = Api::namespaced(client.clone(), SHOOT);
    let cp = cps.list(&Default::default()).await.unwrap().items.remove(0);
    let shoot = state.shoot(SHOOT).unwrap();

    // what the Go extension left: scion's objects (its chart renders the
    // same) plus components scion does not render
    let actuator = ControlPlaneActuator::new(client.clone(), state.clone(), "aws", spec.clone());
    let before = actuator.desired(&cp, &shoot).await.unwrap();
    // `desired` (what `scion check` audits) only reads: the certificates a
    // reconcile would generate are placeholders, not fresh keys
    assert_eq!(before.plan.create.len(), 4, "{:#?}", before.plan.create);
    for secret in &before.plan.create {
        assert!(
            secret["metadata"]["annotations"]
                .get(scion::secrets::PLACEHOLDER_ANNOTATION)
                .is_some(),
            "{secret:#}"
        );
    }
    // the Go extension's secrets manager left its certificates, which scion reuses
    let generated = scion::secrets::plan(&scion::secrets::Request {
        provider: "aws",
        namespace: SHOOT,
        now: k8s_openapi::jiff::Timestamp::now().as_second(),
        rotation: Default::default(),
        existing: &[],
        certificates: &spec.certificates(),
    })
    .unwrap();
    for secret in &generated.create {
        let mut secret = secret.clone();
        secret["metadata"]["namespace"] = json!(SHOOT);
        api.create(&secret).await.unwrap();
    }
    let desired = actuator.desired(&cp, &shoot).await.unwrap();
    assert!(desired.plan.create.is_empty(), "{:#?}", desired.plan.create);
    let csi_controller = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "csi-snapshot-validation", "namespace": SHOOT},
        "spec": {"selector": {"matchLabels": {"app": "snapshot-validation"}},
            "template": {"metadata": {"labels": {"app": "snapshot-validation"}},
                "spec": {"containers": [{"name": "webhook", "image": "registry.k8s.io/sig-storage/snapshot-validation-webhook:v6.3.3"}]}}}});
    let csi_node = json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "csi-driver-node-legacy", "namespace": "kube-system"},
        "spec": {"selector": {"matchLabels": {"app": "csi"}},
            "template": {"metadata": {"labels": {"app": "csi"}},
                "spec": {"containers": [{"name": "csi-driver", "image": "registry.k8s.io/provider-aws/aws-ebs-csi-driver:v1.40.0"}]}}}});
    for (name, extra) in [(SEED_MR, &csi_controller), (SHOOT_MR, &csi_node)] {
        let ours = desired.bundles.iter().find(|b| b.name == name).unwrap();
        let mut objects = decoded(ours);
        objects.push(extra.clone());
        let go = managedresources::bundle(SHOOT, name, ours.class, "data.yaml", &objects).unwrap();
        api.create(&go.secret).await.unwrap();
        api.create(&go.managed_resource).await.unwrap();
    }

    // check names each object the take-over keeps
    let engine = Engine::new(profile.clone());
    let report = check_seed(client.clone(), &engine, Some(SHOOT))
        .await
        .unwrap();
    for (name, kept) in [
        (
            SEED_MR,
            "kept Deployment shoot--dev--aws/csi-snapshot-validation",
        ),
        (
            SHOOT_MR,
            "kept DaemonSet kube-system/csi-driver-node-legacy",
        ),
    ] {
        let row = report
            .findings
            .iter()
            .find(|f| f.kind == "ManagedResource" && f.name == name)
            .unwrap_or_else(|| panic!("no row for {name}: {:#?}", report.findings));
        assert_eq!(row.result, Verdict::Warning, "{row:#?}");
        assert_eq!(row.changes, [kept], "{row:#?}");
        assert!(
            row.message
                .as_deref()
                .unwrap_or_default()
                .contains("take-over keeps them"),
            "{row:#?}"
        );
    }

    // the settings scion does not honour: a row each
    let options: Vec<&str> = report
        .findings
        .iter()
        .filter(|f| f.kind == "ControlPlane" && f.result == Verdict::Warning)
        .filter_map(|f| f.message.as_deref())
        .collect();
    assert_eq!(
        options,
        [
            "ControlPlaneConfig ipamController.enabled = true is not honoured: aws-ipam-controller runs for IPv6 and dual-stack shoots whatever this field says, as provider-aws since its IPAM change: an IPv4 shoot gets 0 replicas"
        ],
        "{:#?}",
        report.findings
    );

    // the take-over
    let ctx = Arc::new(Reconciler::new(
        client.clone(),
        state.clone() as Arc<dyn StateSource>,
        "aws",
        ControlPlaneActuator::new(client.clone(), state.clone(), "aws", spec.clone()),
    ));
    reconcile(Arc::new(cp.clone()), ctx.clone()).await.unwrap();
    let want = |extra: &takeover::ObjectKey, bundle: &str| {
        let mut keys = takeover::keys(&decoded(
            desired.bundles.iter().find(|b| b.name == bundle).unwrap(),
        ));
        keys.insert(extra.clone());
        keys
    };
    let seed_extra = key("Deployment", SHOOT, "csi-snapshot-validation");
    let shoot_extra = key("DaemonSet", "kube-system", "csi-driver-node-legacy");
    for (name, extra) in [(SEED_MR, &seed_extra), (SHOOT_MR, &shoot_extra)] {
        let (mr, keys) = held(api, name).await;
        assert_eq!(keys, want(extra, name), "{name}: {mr:#}");
        let refs = mr["spec"]["secretRefs"].as_array().unwrap();
        assert_eq!(refs.len(), 2, "{mr:#}");
        assert!(
            refs[1]["name"]
                .as_str()
                .unwrap()
                .starts_with(&format!("{name}-kept-"))
        );
        let ours = desired.bundles.iter().find(|b| b.name == name).unwrap();
        assert_eq!(
            mr["metadata"]["annotations"][takeover::RENDERED_SECRET_ANNOTATION],
            ours.secret_name.as_str()
        );
        assert_eq!(refs[0]["name"], ours.secret_name.as_str());
    }
    let stored = cps.get(cp.metadata.name.as_deref().unwrap()).await.unwrap();
    let last = stored
        .status
        .as_ref()
        .unwrap()
        .last_operation
        .clone()
        .unwrap();
    assert_eq!(last.state, "Succeeded");
    assert!(
        last.description.starts_with(
            "Successfully reconciled ControlPlane; kept 2 object(s) scion does not render"
        ) && last.description.contains(
            "extension-controlplane-seed: Deployment shoot--dev--aws/csi-snapshot-validation"
        ) && last
            .description
            .contains("extension-controlplane-shoot: DaemonSet kube-system/csi-driver-node-legacy"),
        "{}",
        last.description
    );

    // the same settings as a Warning Event on the ControlPlane
    let events: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(client.clone(), SHOOT);
    let event = events
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .find(|e| e.reason.as_deref() == Some(scion::controller::controlplane::UNHONOURED_REASON))
        .expect("an OptionsNotHonoured event");
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    let regarding = event.regarding.unwrap();
    assert_eq!(
        (regarding.kind.as_deref(), regarding.name.as_deref()),
        (Some("ControlPlane"), cp.metadata.name.as_deref())
    );
    assert_eq!(
        event.note.as_deref(),
        Some(
            "ControlPlaneConfig ipamController.enabled = true is not honoured: aws-ipam-controller runs for IPv6 and dual-stack shoots whatever this field says, as provider-aws since its IPAM change: an IPv4 shoot gets 0 replicas"
        )
    );

    // a second reconcile keeps them again: the kept Secret is not scion's own
    let operate = |cp: ControlPlane| {
        let ctx = ctx.clone();
        async move {
            let pp = PatchParams::default();
            let body =
                json!({"metadata": {"annotations": {"gardener.cloud/operation": "reconcile"}}});
            let name = cp.metadata.name.clone().unwrap();
            let cps: Api<ControlPlane> = Api::namespaced(ctx.client.clone(), SHOOT);
            let annotated = cps.patch(&name, &pp, &Patch::Merge(&body)).await.unwrap();
            reconcile(Arc::new(annotated), ctx.clone()).await
        }
    };
    operate(stored.clone()).await.unwrap();
    for (name, extra) in [(SEED_MR, &seed_extra), (SHOOT_MR, &shoot_extra)] {
        assert_eq!(held(api, name).await.1, want(extra, name), "{name}");
    }

    // a Secret that cannot be read: refused, nothing written
    let (before, _) = held(api, SEED_MR).await;
    let mut broken = before.clone();
    broken["spec"]["secretRefs"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "extension-controlplane-seed-gone"}));
    let broken = api.update(&broken).await.unwrap();
    let err = operate(cps.get(cp.metadata.name.as_deref().unwrap()).await.unwrap())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("refusing to take over ManagedResource extension-controlplane-seed: its Secret extension-controlplane-seed-gone is missing"), "{err}");
    let stored = cps.get(cp.metadata.name.as_deref().unwrap()).await.unwrap();
    let last_error = stored.status.unwrap().last_error.unwrap();
    assert!(
        last_error.description.contains("refusing to take over"),
        "{last_error:?}"
    );
    let after = api
        .get(
            "resources.gardener.cloud/v1alpha1",
            "ManagedResource",
            Some(SHOOT),
            SEED_MR,
        )
        .await
        .unwrap();
    assert_eq!(after["spec"], broken["spec"]);
    assert_eq!(
        after["metadata"]["resourceVersion"],
        broken["metadata"]["resourceVersion"]
    );
}
