//! GCP's components on real API servers (the test bed), with every option on:
//! the example shoot made dual-stack (ingress-gce), Kubernetes 1.35 with the
//! kube-apiserver's MutatingAdmissionPolicy gate and `v1beta1` runtime config
//! (the calico policy), Filestore, all three hyperdisk classes with
//! `gce-sc-hd-balanced` as the default, and the volume-attributes-class and
//! data-cache annotations. Every rendered object is server-side applied to the
//! API server it is meant for (seed: the shoot access Secrets, configuration
//! and seed ManagedResources' objects; shoot: CRDs first, then the shoot and
//! storage-class objects) and must be accepted; then a PersistentVolumeClaim
//! without a class gets the default class, whose provisioner is the CSIDriver
//! and the driver the node plugin registers.
//!
//! The example ControlPlane itself (options off) is covered by the generic
//! end-to-end test of every provider. The VolumeSnapshotClass goes in after
//! the shared volume-snapshot CRDs of the shoot-crds ManagedResource.

#[path = "support/testbed/mod.rs"]
mod testbed;

use std::path::PathBuf;

use scion::cli::render::load_render_inputs;
use scion::profile::{ImageVector, Profile};
use scion::render::{DesiredObject, RenderInput, Rendered};
use semver::Version;
use serde_json::{Value, json};
use testbed::Testbed;

const NS: &str = "shoot--dev--gcp";
const MANAGER: &str = "gardener-resource-manager";

fn everything_on() -> Rendered {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let (mut cp, shoot, credentials) =
        load_render_inputs(&root.join("examples/objects/gcp"), NS, "control-plane")
            .expect("example inputs");
    cp.spec.provider_config = Some(json!({
        "apiVersion": "gcp.provider.extensions.gardener.cloud/v1alpha1",
        "kind": "ControlPlaneConfig",
        "zone": "europe-west1-b",
        "storage": {
            "defaultStorageClass": "gce-sc-hd-balanced",
            "csiFilestore": {"enabled": true},
            "hyperDiskBalanced": {"enabled": true, "provisionedIopsOnCreate": 3000, "provisionedThroughputOnCreate": "140Mi"},
            "hyperDiskThroughput": {"enabled": true, "provisionedThroughputOnCreate": "50Mi"},
            "hyperDiskExtreme": {"enabled": true, "provisionedIopsOnCreate": 5000},
        },
    }));
    let mut shoot = (*shoot).clone();
    let s = &mut shoot.shoot;
    s.spec.kubernetes.version = Version::new(1, 35, 4);
    s.spec.kubernetes.kube_apiserver = scion::gardener::cluster::KubeApiServer {
        feature_gates: Some(json!({"MutatingAdmissionPolicy": true})),
        runtime_config: Some(json!({"admissionregistration.k8s.io/v1beta1": true})),
    };
    s.spec.networking.ip_families.0 = vec!["IPv4".into(), "IPv6".into()];
    s.spec.networking.pods.0.push("2001:db8:1::/48".into());
    s.spec.networking.services.0.push("2001:db8:2::/108".into());
    for key in [
        "gcp.provider.extensions.gardener.cloud/enable-volume-attributes-class",
        "gcp.provider.extensions.gardener.cloud/enable-csi-data-cache",
    ] {
        s.metadata.annotations.insert(key.into(), "true".into());
    }
    let profile = Profile::builtin("gcp").expect("gcp");
    let spec = profile.control_plane().expect("components");
    let certificates = scion::secrets::Certificates::fixed(
        "cloud-controller-manager-server-e2e",
        &spec.certificates(),
        "",
    );
    scion::render::render(
        &RenderInput {
            cp: &cp,
            shoot: &shoot,
            credentials: credentials.as_ref(),
            kube_apiserver_replicas: None,
            certificates: &certificates,
            image_override: None,
            images: &ImageVector::builtin("gcp"),
        },
        spec,
    )
    .expect("renders")
}

async fn apply_all(server: &testbed::ApiServer, objects: &[&DesiredObject]) {
    for o in objects {
        server
            .apply(&o.object, MANAGER)
            .await
            .unwrap_or_else(|e| panic!("{}: {}/{} refused: {e}", server.name, o.kind, o.name));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_gcp_object_with_every_option_is_accepted_and_the_default_class_is_taken() {
    let r = everything_on();
    // The options reach the render (else this test would prove less).
    for (kind, name) in [
        ("Deployment", "ingress-gce"),
        ("Deployment", "csi-driver-filestore-controller"),
        ("DaemonSet", "csi-driver-filestore-node"),
        (
            "MutatingAdmissionPolicy",
            "calico-mutating-admission-policy",
        ),
        ("StorageClass", "gce-sc-hd-extreme"),
        ("StorageClass", "csi-filestore"),
    ] {
        assert!(
            r.all().iter().any(|o| o.kind == kind && o.name == name),
            "{kind}/{name} not rendered"
        );
    }

    let bed = Testbed::start_with_shoot().await;
    let seed = &bed.seed;
    let shoot = bed.shoot.as_ref().expect("shoot API server");

    // Seed: the CRDs a seed has (VPA, ServiceMonitor, …), the shoot namespace.
    seed.install_crds().await;
    seed.namespace(NS, &[]).await;
    let seed_objects: Vec<&DesiredObject> = r
        .access_secrets
        .iter()
        .chain(&r.config)
        .chain(&r.seed)
        .collect();
    apply_all(seed, &seed_objects).await;

    // Shoot: CRDs first, then what uses them.
    for crd in &r.shoot_crds {
        shoot
            .apply(&crd.object, MANAGER)
            .await
            .unwrap_or_else(|e| panic!("shoot CRD {}: {e}", crd.name));
    }
    for crd in &r.shoot_crds {
        shoot.established(&crd.name).await;
    }
    assert!(
        r.shoot_crds
            .iter()
            .any(|c| c.name == "volumesnapshotclasses.snapshot.storage.k8s.io"),
        "the shared volume-snapshot CRDs travel with gcp's"
    );
    let shoot_objects: Vec<&DesiredObject> = r.shoot.iter().chain(&r.storage_classes).collect();
    apply_all(shoot, &shoot_objects).await;
    let snapshot_class = shoot
        .get(
            "snapshot.storage.k8s.io/v1",
            "VolumeSnapshotClass",
            None,
            "default",
        )
        .await
        .expect("VolumeSnapshotClass stored");
    assert_eq!(
        snapshot_class["metadata"]["annotations"]["snapshot.storage.kubernetes.io/is-default-class"],
        "true"
    );
    assert_eq!(snapshot_class["driver"], "pd.csi.storage.gke.io");
    // The calico policy is served as v1beta1 on this 1.35 API server.
    let policy = shoot
        .get(
            "admissionregistration.k8s.io/v1beta1",
            "MutatingAdmissionPolicy",
            None,
            "calico-mutating-admission-policy",
        )
        .await
        .expect("policy stored");
    assert_eq!(policy["spec"]["failurePolicy"], "Fail");

    // A claim without a class gets the default class.
    shoot.namespace("volumes", &[]).await;
    let claim = shoot
        .apply(
            &json!({
                "apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": {"name": "data", "namespace": "volumes"},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
            }),
            "test",
        )
        .await
        .expect("claim");
    assert_eq!(claim["spec"]["storageClassName"], "gce-sc-hd-balanced");
    let class = shoot
        .get(
            "storage.k8s.io/v1",
            "StorageClass",
            None,
            "gce-sc-hd-balanced",
        )
        .await
        .expect("class");
    let provisioner = class["provisioner"].as_str().expect("provisioner");
    assert!(
        shoot
            .get("storage.k8s.io/v1", "CSIDriver", None, provisioner)
            .await
            .is_some(),
        "a CSIDriver named {provisioner}"
    );
    let node = shoot
        .get(
            "apps/v1",
            "DaemonSet",
            Some("kube-system"),
            "csi-driver-node",
        )
        .await
        .expect("node plugin");
    let registrar: &Value = node["spec"]["template"]["spec"]["containers"]
        .as_array()
        .expect("containers")
        .iter()
        .find(|c| c["name"] == "csi-node-driver-registrar")
        .expect("registrar");
    let socket = registrar["env"]
        .as_array()
        .expect("env")
        .iter()
        .find(|e| e["name"] == "DRIVER_REG_SOCK_PATH")
        .and_then(|e| e["value"].as_str())
        .expect("DRIVER_REG_SOCK_PATH");
    assert_eq!(
        socket,
        format!("/var/lib/kubelet/plugins/{provisioner}/csi.sock"),
        "the node plugin registers the class's provisioner"
    );
}
