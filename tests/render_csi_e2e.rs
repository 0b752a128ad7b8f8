//! CSI and the other control-plane components of every provider on real API
//! servers (the test bed): issue 22's proof that what scion delivers works
//! where it lands.
//!
//! For each provider's example ControlPlane (`examples/objects/<p>`), and for
//! gcp once more with every option on, `scion render --managed-resources`
//! (the binary, exactly what the controller writes) is applied as Gardener
//! would: its Secrets and ManagedResources to the seed API server; then, as
//! gardener-resource-manager does, every object each ManagedResource carries
//! (read back from its stored Secret) to the API server its class names —
//! class `seed` to the seed, the others to the shoot — CustomResourceDefinitions
//! first and established, then everything else, all server-side applied. Each
//! object must be accepted.
//!
//! Then, in the shoot:
//! - a PersistentVolumeClaim without a class gets the one default
//!   StorageClass (the shoot API server runs the `DefaultStorageClass`
//!   admission plugin, named explicitly in its flags);
//! - that class's provisioner is the name of a `CSIDriver` object, and a node
//!   plugin DaemonSet registers exactly that driver with the kubelet
//!   (`--kubelet-registration-path` is `/var/lib/kubelet/plugins/<driver>/csi.sock`),
//!   and the registrar's `--csi-address` and the driver container's endpoint
//!   are that same socket on the node, through their volume mounts;
//! - a VolumeSnapshot without a class gets the default VolumeSnapshotClass,
//!   set by the real `csi-snapshot-controller` (external-snapshotter v8.6.0,
//!   the version the image vectors pin, built by `scripts/testbed.sh`), run
//!   as a process with the arguments scion renders for it and the identity
//!   its shoot access Secret names (ServiceAccount
//!   `kube-system/csi-snapshot-controller`), so the shoot RBAC scion renders
//!   is what authorizes it. The controller defaults only a snapshot of a
//!   bound claim of a CSI volume of the class's driver, so the claim is bound
//!   by kube-controller-manager's volume binder (`persistentvolume-binder`)
//!   to a PersistentVolume of that driver, standing for the disk a CSI
//!   driver would have created (there is no cloud here);
//! - aws (the example has the load balancer controller on): its CRDs
//!   `*.elbv2.k8s.aws` serve: sample objects are accepted and invalid ones
//!   refused by the schema ([`load_balancer_api_serves`]).
//!
//! What is not run and why, each said by the test where it applies:
//! alicloud's upstream renders no VolumeSnapshotClass and no CSIDriver object
//! (gardener-csi.md, alicloud §5.4 and §6): the test asserts both absences
//! and runs neither the snapshot part nor the CSIDriver lookup for it. No
//! Pod runs (there is no kubelet or cloud), so no volume is provisioned,
//! attached or snapshotted in a cloud.

#[path = "support/testbed/mod.rs"]
mod testbed;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use testbed::extension::{Grm, name_of};
use testbed::process::Proc;
use testbed::{ApiServer, ApiServerOptions, Testbed, binaries, root, yaml_documents};

/// The field manager of gardener-resource-manager's applies.
const GRM: &str = "gardener-resource-manager";
/// The namespace of the test's claims and snapshots in the shoot.
const VOLUMES: &str = "volumes";
/// The annotation of the default StorageClass.
const DEFAULT_CLASS: &str = "storageclass.kubernetes.io/is-default-class";
/// The annotation of the default VolumeSnapshotClass.
const DEFAULT_SNAPSHOT_CLASS: &str = "snapshot.storage.kubernetes.io/is-default-class";
/// How long the shoot's controllers may take (loaded 2-core machine).
const WAIT: Duration = Duration::from_secs(120);

/// One ControlPlane to prove.
struct Case {
    provider: &'static str,
    /// Changes to the example's Cluster and ControlPlane (JSON), if any.
    change: Option<fn(&mut Value, &mut Value)>,
    /// Upstream renders a default VolumeSnapshotClass (all but alicloud).
    snapshot_class: bool,
    /// Upstream renders a CSIDriver object for the default class's driver
    /// (all but alicloud).
    csi_driver_object: bool,
    /// Objects the render must contain (kind, name), so that the case proves
    /// what it is meant to.
    must_render: &'static [(&'static str, &'static str)],
    /// Fields of stored shoot objects: (apiVersion, kind, name, JSON
    /// pointer, value), e.g. that an object is served at the version sent.
    stored: &'static [(
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        &'static str,
    )],
    /// The aws-load-balancer-controller is on: its API (the shoot CRDs
    /// `*.elbv2.k8s.aws`) must serve, see [`load_balancer_api_serves`].
    load_balancer_api: bool,
}

impl Case {
    fn example(provider: &'static str) -> Case {
        let upstream_full = provider != "alicloud";
        Case {
            provider,
            change: None,
            snapshot_class: upstream_full,
            csi_driver_object: upstream_full,
            must_render: &[],
            stored: &[],
            load_balancer_api: false,
        }
    }

    fn namespace(&self) -> String {
        format!("shoot--dev--{}", self.provider)
    }
}

/// The aws example has the load balancer controller on
/// (`loadBalancerController.enabled`): its CRDs are established and serve.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aws_example_is_accepted_and_claims_and_snapshots_get_the_default_classes() {
    prove(Case {
        must_render: &[
            (
                "CustomResourceDefinition",
                "ingressclassparams.elbv2.k8s.aws",
            ),
            (
                "CustomResourceDefinition",
                "targetgroupbindings.elbv2.k8s.aws",
            ),
            (
                "MutatingWebhookConfiguration",
                "aws-load-balancer-controller-webhook",
            ),
            (
                "ValidatingWebhookConfiguration",
                "aws-load-balancer-controller-webhook",
            ),
        ],
        load_balancer_api: true,
        ..Case::example("aws")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openstack_example_is_accepted_and_claims_and_snapshots_get_the_default_classes() {
    prove(Case::example("openstack")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gcp_example_is_accepted_and_claims_and_snapshots_get_the_default_classes() {
    prove(Case::example("gcp")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn azure_example_is_accepted_and_claims_and_snapshots_get_the_default_classes() {
    prove(Case::example("azure")).await;
}

/// alicloud has no VolumeSnapshotClass and no CSIDriver object upstream
/// (gardener-csi.md, alicloud §5.4, §6): both absences are asserted, the
/// snapshot default is not run for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alicloud_example_is_accepted_and_claims_get_the_default_class() {
    prove(Case::example("alicloud")).await;
}

/// gcp with every option on: the example shoot made dual-stack (ingress-gce),
/// Kubernetes 1.35 with the kube-apiserver's MutatingAdmissionPolicy gate and
/// `v1beta1` runtime config (the calico policy), Filestore, all three
/// hyperdisk classes with `gce-sc-hd-balanced` as the default, and the
/// volume-attributes-class and data-cache annotations.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gcp_with_every_option_is_accepted_and_claims_and_snapshots_get_the_default_classes() {
    prove(Case {
        change: Some(gcp_everything_on),
        // The shoot API server's MutatingAdmissionPolicy gate and v1beta1
        // runtime config (the calico policy) come with
        // ApiServerOptions::shoot, as for every case.
        must_render: &[
            ("Deployment", "ingress-gce"),
            ("Deployment", "csi-driver-filestore-controller"),
            ("DaemonSet", "csi-driver-filestore-node"),
            (
                "MutatingAdmissionPolicy",
                "calico-mutating-admission-policy",
            ),
            ("StorageClass", "gce-sc-hd-extreme"),
            ("StorageClass", "gce-sc-hd-balanced"),
            ("StorageClass", "csi-filestore"),
            ("CSIDriver", "filestore.csi.storage.gke.io"),
        ],
        // The calico policy is served as v1beta1 on this 1.35 API server.
        stored: &[(
            "admissionregistration.k8s.io/v1beta1",
            "MutatingAdmissionPolicy",
            "calico-mutating-admission-policy",
            "/spec/failurePolicy",
            "Fail",
        )],
        ..Case::example("gcp")
    })
    .await;
}

fn gcp_everything_on(cluster: &mut Value, cp: &mut Value) {
    cp["spec"]["providerConfig"] = json!({
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
    });
    let shoot = &mut cluster["spec"]["shoot"];
    for key in [
        "gcp.provider.extensions.gardener.cloud/enable-volume-attributes-class",
        "gcp.provider.extensions.gardener.cloud/enable-csi-data-cache",
    ] {
        shoot["metadata"]["annotations"][key] = json!("true");
    }
    let spec = &mut shoot["spec"];
    spec["kubernetes"]["version"] = json!("1.35.4");
    spec["kubernetes"]["kubeAPIServer"] = json!({
        "featureGates": {"MutatingAdmissionPolicy": true},
        "runtimeConfig": {"admissionregistration.k8s.io/v1beta1": true},
    });
    let networking = &mut spec["networking"];
    networking["ipFamilies"] = json!(["IPv4", "IPv6"]);
    for (key, v6) in [
        ("pods", "2001:db8:1::/48"),
        ("services", "2001:db8:2::/108"),
    ] {
        let v4 = networking[key]
            .as_str()
            .expect("a single-stack CIDR")
            .to_owned();
        networking[key] = json!([v4, v6]);
    }
}

/// The whole proof for one case.
async fn prove(case: Case) {
    let started = Instant::now();
    let p = case.provider;
    let ns = case.namespace();
    let inputs = tempfile::tempdir().unwrap();
    let objects_dir = objects_dir(&case, inputs.path());
    let printed = render_managed_resources(p, &objects_dir, &ns);

    // Gardener's shoot kube-apiserver flags (ApiServerOptions::shoot:
    // privileged node plugins, the MutatingAdmissionPolicy API), and the
    // DefaultStorageClass admission plugin: on by default in kube-apiserver,
    // named so that the claim's default class below cannot silently depend
    // on a changed default.
    let mut shoot_options = ApiServerOptions::shoot("shoot");
    shoot_options
        .extra_args
        .push("--enable-admission-plugins=DefaultStorageClass".to_owned());
    let bed = Testbed::start_with(&[
        ApiServerOptions::named("seed"),
        ApiServerOptions {
            // The volume binder binds the snapshot's claim to its volume.
            controller_manager: true,
            controllers: vec![
                "garbagecollector".into(),
                "namespace".into(),
                "persistentvolume-binder".into(),
            ],
            // The binder retries a claim it saw before its volume every sync
            // period (15 s by default); 1 s keeps the test short.
            controller_manager_args: vec!["--pvclaimbinder-sync-period=1s".into()],
            ..shoot_options
        },
    ])
    .await;
    let seed = &bed.seed;
    let shoot = bed.shoot.as_ref().expect("shoot API server");

    // gardenlet's part: the seed's CRDs (ManagedResource, VPA, monitoring),
    // the shoot namespace; scion's part: what it writes there.
    seed.install_crds().await;
    seed.namespace(&ns, &[("shoot.gardener.cloud/provider", p)])
        .await;
    for object in &printed {
        seed.apply(object, "scion").await.unwrap_or_else(|e| {
            panic!(
                "{p}: the seed API server rejects scion's {} {}: {e}",
                object["kind"],
                name_of(object)
            )
        });
    }

    // gardener-resource-manager's part: each ManagedResource's objects to the
    // API server its class names, read from the Secret the seed stored.
    let grm = Grm {
        seed,
        shoot: Some(shoot),
    };
    let mut to_seed = Vec::new();
    let mut to_shoot = Vec::new();
    let managed_resources: Vec<&Value> = printed
        .iter()
        .filter(|o| o["kind"] == "ManagedResource")
        .collect();
    for mr in &managed_resources {
        let stored = seed
            .get(
                "resources.gardener.cloud/v1alpha1",
                "ManagedResource",
                Some(&ns),
                name_of(mr),
            )
            .await
            .expect("the ManagedResource is stored");
        let objects = grm.objects(&stored).await;
        let to = if stored["spec"]["class"] == "seed" {
            &mut to_seed
        } else {
            &mut to_shoot
        };
        to.extend(objects.into_iter().map(|o| (name_of(mr).to_owned(), o)));
    }
    for (kind, name) in case.must_render {
        assert!(
            to_seed
                .iter()
                .chain(&to_shoot)
                .any(|(_, o)| o["kind"] == *kind && name_of(o) == *name),
            "{p}: {kind} {name} is not rendered (the case would prove less than it says)"
        );
    }
    let crds = apply_like_grm(p, seed, &to_seed).await + apply_like_grm(p, shoot, &to_shoot).await;
    // The seed objects stay in the shoot namespace.
    for (mr, o) in &to_seed {
        if let Some(object_ns) = o["metadata"]["namespace"].as_str() {
            assert_eq!(object_ns, ns, "{p}: {mr}'s {} {}", o["kind"], name_of(o));
        }
    }

    for (api_version, kind, name, pointer, value) in case.stored {
        let stored = shoot
            .get(api_version, kind, None, name)
            .await
            .unwrap_or_else(|| panic!("{p}: {kind} {name} stored as {api_version}"));
        assert_eq!(
            stored.pointer(pointer),
            Some(&json!(value)),
            "{p}: {kind} {name} {pointer}"
        );
    }

    let load_balancer_part = if case.load_balancer_api {
        format!("; {}", load_balancer_api_serves(p, shoot).await)
    } else {
        String::new()
    };

    // In the shoot: the default StorageClass of a claim without a class.
    shoot.namespace(VOLUMES, &[]).await;
    let classes = list(shoot, "storage.k8s.io/v1", "StorageClass").await;
    let defaults: Vec<&Value> = classes
        .iter()
        .filter(|c| c["metadata"]["annotations"][DEFAULT_CLASS] == "true")
        .collect();
    assert_eq!(
        defaults.len(),
        1,
        "{p}: exactly one default StorageClass, not {:?}",
        defaults.iter().map(|c| name_of(c)).collect::<Vec<_>>()
    );
    let default_class = name_of(defaults[0]).to_owned();
    let driver = defaults[0]["provisioner"]
        .as_str()
        .expect("a provisioner")
        .to_owned();
    let claim = shoot
        .apply(
            &json!({
                "apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": {"name": "data", "namespace": VOLUMES},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
            }),
            "test",
        )
        .await
        .expect("a claim is accepted");
    assert_eq!(
        claim["spec"]["storageClassName"], default_class,
        "{p}: a claim without a class gets the default class"
    );

    // Its provisioner is the CSIDriver object and the driver a node plugin
    // registers with the kubelet.
    let csi_driver = shoot
        .get("storage.k8s.io/v1", "CSIDriver", None, &driver)
        .await;
    if case.csi_driver_object {
        assert!(csi_driver.is_some(), "{p}: a CSIDriver named {driver}");
    } else {
        // alicloud: upstream renders no CSIDriver (gardener-csi.md alicloud
        // §5.4); the kubelet then treats the driver with the defaults
        // (attach required, no pod info on mount).
        assert!(
            to_shoot.iter().all(|(_, o)| o["kind"] != "CSIDriver"),
            "{p}: upstream renders no CSIDriver object"
        );
        eprintln!("{p}: no CSIDriver object, as upstream (the lookup is not run)");
    }
    let daemon_sets = list_in(shoot, "apps/v1", "DaemonSet", "kube-system").await;
    assert_node_plugin_registers(p, &daemon_sets, &driver);

    // The default VolumeSnapshotClass of a snapshot without a class.
    let snapshot_classes: Vec<&Value> = to_shoot
        .iter()
        .map(|(_, o)| o)
        .filter(|o| o["kind"] == "VolumeSnapshotClass")
        .collect();
    let snapshot_part = if case.snapshot_class {
        let snapshot_class = default_snapshot_class(p, shoot, &driver).await;
        let (bound, defaulted) = snapshot_gets_the_default_class(
            &bed,
            &ns,
            &printed,
            (&default_class, &driver),
            &snapshot_class,
        )
        .await;
        format!(
            "claim bound in {:.1} s, VolumeSnapshot → {snapshot_class} in {:.1} s",
            bound.as_secs_f64(),
            defaulted.as_secs_f64()
        )
    } else {
        assert!(
            snapshot_classes.is_empty(),
            "{p}: upstream renders no VolumeSnapshotClass, scion renders {:?}",
            snapshot_classes
                .iter()
                .map(|c| name_of(c))
                .collect::<Vec<_>>()
        );
        eprintln!(
            "{p}: no VolumeSnapshotClass, as upstream (gardener-csi.md {p} §6): \
             the VolumeSnapshot default is not run for it"
        );
        "no VolumeSnapshotClass upstream: snapshot default not run".to_owned()
    };
    eprintln!(
        "E2E {p}: {} ManagedResources; {} seed and {} shoot objects accepted ({crds} CRDs \
         established first); claim → {default_class} ({driver}); {snapshot_part}\
         {load_balancer_part}; {:.1} s",
        managed_resources.len(),
        to_seed.len(),
        to_shoot.len(),
        started.elapsed().as_secs_f64()
    );
}

/// The example's objects directory, or a copy with the case's changes.
fn objects_dir(case: &Case, scratch: &Path) -> PathBuf {
    let example = root().join("examples/objects").join(case.provider);
    let Some(change) = case.change else {
        return example;
    };
    let mut documents = Vec::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&example)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    for file in files {
        documents.extend(yaml_documents(&std::fs::read_to_string(&file).unwrap()));
    }
    let cluster = documents.iter().position(|d| d["kind"] == "Cluster");
    let cp = documents.iter().position(|d| d["kind"] == "ControlPlane");
    let (Some(cluster), Some(cp)) = (cluster, cp) else {
        panic!("{}: no Cluster or ControlPlane", example.display());
    };
    let mut cluster_doc = documents[cluster].take();
    let mut cp_doc = documents[cp].take();
    change(&mut cluster_doc, &mut cp_doc);
    documents[cluster] = cluster_doc;
    documents[cp] = cp_doc;
    for (i, document) in documents.iter().enumerate() {
        std::fs::write(
            scratch.join(format!("{i:02}.json")),
            serde_json::to_vec_pretty(document).unwrap(),
        )
        .unwrap();
    }
    scratch.to_owned()
}

/// `scion render --managed-resources --output json` of the case: the
/// directly written Secrets, each ManagedResource's Secret and the
/// ManagedResource, as the controller writes them.
fn render_managed_resources(provider: &str, objects_dir: &Path, namespace: &str) -> Vec<Value> {
    let out = Command::new(env!("CARGO_BIN_EXE_scion"))
        .args(["render", "--provider", provider, "--objects-dir"])
        .arg(objects_dir)
        .args([
            "--controlplane",
            &format!("{namespace}/control-plane"),
            "--managed-resources",
            "--output",
            "json",
        ])
        .output()
        .expect("run scion render");
    assert!(
        out.status.success(),
        "{provider}: scion render failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let list: Value = serde_json::from_slice(&out.stdout).expect("render prints a JSON List");
    let items = list["items"].as_array().expect("a List").clone();
    let mrs: Vec<&str> = items
        .iter()
        .filter(|o| o["kind"] == "ManagedResource")
        .map(name_of)
        .collect();
    for always in [
        "extension-controlplane-seed",
        "extension-controlplane-shoot",
    ] {
        assert!(mrs.contains(&always), "{provider}: {always} in {mrs:?}");
    }
    items
}

/// Server-side apply `objects` (ManagedResource name, object) as GRM does:
/// the CustomResourceDefinitions first, until established, then the rest in
/// order. Panics naming the object and the ManagedResource when one is
/// refused. Returns the number of CRDs.
async fn apply_like_grm(provider: &str, api: &ApiServer, objects: &[(String, Value)]) -> usize {
    let is_crd = |o: &Value| o["kind"] == "CustomResourceDefinition";
    let crds: Vec<&(String, Value)> = objects.iter().filter(|(_, o)| is_crd(o)).collect();
    for (mr, crd) in &crds {
        apply_one(provider, api, mr, crd).await;
    }
    for (_, crd) in &crds {
        api.established(name_of(crd)).await;
    }
    for (mr, object) in objects.iter().filter(|(_, o)| !is_crd(o)) {
        apply_one(provider, api, mr, object).await;
    }
    crds.len()
}

async fn apply_one(provider: &str, api: &ApiServer, mr: &str, object: &Value) {
    api.apply(object, GRM).await.unwrap_or_else(|e| {
        panic!(
            "{provider}: the {} API server rejects {} {} of ManagedResource {mr}: {e}",
            api.name,
            object["kind"],
            name_of(object)
        )
    });
}

/// The namespace of the test's TargetGroupBindings in the shoot.
const LOAD_BALANCING: &str = "load-balancing";
/// The webhook configurations of the aws-load-balancer-controller.
const ALB_WEBHOOKS: &str = "aws-load-balancer-controller-webhook";

/// The aws-load-balancer-controller's API in the shoot (ALB on): both CRDs
/// are established with their names accepted; the webhook configurations
/// scion renders send a TargetGroupBinding to the controller's webhook
/// first (no controller runs here, and their `failurePolicy: Fail` refuses
/// it: that is what the shoot gets until the controller answers); without
/// them — the API alone, as the schema serves it — sample objects of both
/// kinds are accepted (TargetGroupBinding at both served versions, stored
/// as v1beta1; an unknown field pruned, which only a structural schema
/// does), and invalid ones are refused by the schema naming the field: an
/// enum value, a required field, a pattern and the CEL rule.
async fn load_balancer_api_serves(p: &str, shoot: &ApiServer) -> String {
    for name in [
        "ingressclassparams.elbv2.k8s.aws",
        "targetgroupbindings.elbv2.k8s.aws",
    ] {
        let crd = shoot
            .get(
                "apiextensions.k8s.io/v1",
                "CustomResourceDefinition",
                None,
                name,
            )
            .await
            .unwrap_or_else(|| panic!("{p}: CRD {name} in the shoot"));
        let conditions = crd["status"]["conditions"]
            .as_array()
            .unwrap_or_else(|| panic!("{p}: {name} has conditions"));
        for wanted in ["Established", "NamesAccepted"] {
            assert!(
                conditions
                    .iter()
                    .any(|c| c["type"] == wanted && c["status"] == "True"),
                "{p}: {name} {wanted}: {conditions:?}"
            );
        }
        assert!(
            conditions
                .iter()
                .all(|c| c["type"] != "NonStructuralSchema"),
            "{p}: {name}: {conditions:?}"
        );
    }
    shoot.namespace(LOAD_BALANCING, &[]).await;
    let binding = |name: &str, api_version: &str, spec: Value| {
        json!({
            "apiVersion": api_version, "kind": "TargetGroupBinding",
            "metadata": {"name": name, "namespace": LOAD_BALANCING},
            "spec": spec,
        })
    };
    let params = |name: &str, spec: Value| {
        json!({
            "apiVersion": "elbv2.k8s.aws/v1beta1", "kind": "IngressClassParams",
            "metadata": {"name": name},
            "spec": spec,
        })
    };
    let web = binding(
        "web",
        "elbv2.k8s.aws/v1beta1",
        json!({
            "serviceRef": {"name": "web", "port": 80},
            "targetGroupARN": "arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/web/0123456789abcdef",
            "targetType": "ip",
            "ipAddressType": "ipv4",
            "networking": {"ingress": [{
                "from": [{"securityGroup": {"groupID": "sg-0123456789abcdef0"}}],
                "ports": [{"port": "http", "protocol": "TCP"}],
            }]},
        }),
    );

    // With the webhook configurations: the controller's webhook is asked.
    let via_webhook = shoot.create(&web).await;
    match &via_webhook {
        Err(kube::Error::Api(s)) if s.message.contains("mtargetgroupbinding.elbv2.k8s.aws") => {}
        other => panic!(
            "{p}: a TargetGroupBinding goes to the controller's mutating webhook \
             (failurePolicy Fail, no controller here), not {other:?}"
        ),
    }

    // The API alone.
    for kind in [
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
    ] {
        shoot
            .delete("admissionregistration.k8s.io/v1", kind, None, ALB_WEBHOOKS)
            .await;
    }
    // The API server's webhook cache follows the deletion within moments.
    testbed::eventually(
        "a TargetGroupBinding is accepted once the webhooks are gone",
        Duration::from_secs(30),
        || async {
            match shoot.create(&web).await {
                Ok(_) => Some(()),
                Err(kube::Error::Api(s)) if s.message.contains("failed calling webhook") => None,
                Err(e) => panic!("{p}: TargetGroupBinding web: {e}"),
            }
        },
    )
    .await;
    let accepted = [
        binding(
            "legacy",
            "elbv2.k8s.aws/v1alpha1",
            json!({
                "serviceRef": {"name": "legacy", "port": "https"},
                "targetGroupARN": "arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/legacy/0123456789abcdef",
                "targetType": "instance",
            }),
        ),
        params(
            "internet-facing",
            json!({
                "scheme": "internet-facing",
                "ipAddressType": "dualstack",
                "group": {"name": "shared"},
                "subnets": {"ids": ["subnet-0aa11bb22cc33dd44"]},
                "loadBalancerAttributes": [{"key": "idle_timeout.timeout_seconds", "value": "120"}],
                "listeners": [{"port": 443, "protocol": "HTTPS",
                               "listenerAttributes": [{"key": "routing.http.response.server.enabled", "value": "false"}]}],
                "namespaceSelector": {"matchLabels": {"team": "web"}},
                "prefixListsIDs": ["pl-0123456789abcdef0"],
                "notAField": "pruned",
            }),
        ),
    ];
    for object in &accepted {
        shoot.create(object).await.unwrap_or_else(|e| {
            panic!(
                "{p}: {} {} is refused: {e}",
                object["kind"],
                name_of(object)
            )
        });
    }
    let legacy = shoot
        .get(
            "elbv2.k8s.aws/v1beta1",
            "TargetGroupBinding",
            Some(LOAD_BALANCING),
            "legacy",
        )
        .await
        .expect("the v1alpha1 TargetGroupBinding is stored");
    assert_eq!(legacy["apiVersion"], "elbv2.k8s.aws/v1beta1");
    assert_eq!(
        legacy["spec"]["serviceRef"],
        json!({"name": "legacy", "port": "https"})
    );
    let stored = shoot
        .get(
            "elbv2.k8s.aws/v1beta1",
            "IngressClassParams",
            None,
            "internet-facing",
        )
        .await
        .expect("the IngressClassParams is stored");
    assert_eq!(stored["spec"]["group"], json!({"name": "shared"}));
    assert!(
        stored["spec"].get("notAField").is_none(),
        "{p}: an unknown field is pruned: {}",
        stored["spec"]
    );

    let refused = [
        (
            binding(
                "bad-target-type",
                "elbv2.k8s.aws/v1beta1",
                json!({"serviceRef": {"name": "web", "port": 80}, "targetType": "pod"}),
            ),
            "spec.targetType: Unsupported value: \"pod\"",
        ),
        (
            binding(
                "no-service",
                "elbv2.k8s.aws/v1beta1",
                json!({"targetType": "ip"}),
            ),
            "spec.serviceRef: Required value",
        ),
        (
            params("bad-scheme", json!({"scheme": "public"})),
            "spec.scheme: Unsupported value: \"public\"",
        ),
        (
            params("bad-subnet", json!({"subnets": {"ids": ["vpc-1"]}})),
            "spec.subnets.ids[0]: Invalid value: \"vpc-1\"",
        ),
        (
            params(
                "both-prefix-lists",
                json!({"prefixListsIDs": ["pl-1"], "PrefixListsIDs": ["pl-1"]}),
            ),
            "cannot specify both 'prefixListsIDs' and 'PrefixListsIDs' fields",
        ),
    ];
    for (object, why) in &refused {
        match shoot.create(object).await {
            Err(kube::Error::Api(s)) if s.code == 422 && s.message.contains(why) => {}
            other => panic!(
                "{p}: {} {} must be refused by the schema with {why:?}, not {other:?}",
                object["kind"],
                name_of(object)
            ),
        }
    }
    format!(
        "ALB CRDs established; TargetGroupBinding sent to the controller's webhook, \
         without it {} objects accepted and {} refused by the schema",
        accepted.len() + 1,
        refused.len()
    )
}

async fn list(api: &ApiServer, api_version: &str, kind: &str) -> Vec<Value> {
    api.api(api_version, kind, None)
        .await
        .list(&Default::default())
        .await
        .unwrap_or_else(|e| panic!("list {kind}: {e}"))
        .items
        .into_iter()
        .map(|o| serde_json::to_value(o).unwrap())
        .collect()
}

async fn list_in(api: &ApiServer, api_version: &str, kind: &str, namespace: &str) -> Vec<Value> {
    testbed::extension::list(api, api_version, kind, namespace).await
}

/// A node plugin DaemonSet (stored in the shoot) registers `driver`: its
/// registrar's `--kubelet-registration-path` is the driver's socket in the
/// kubelet's plugin directory, the registrar's `--csi-address` and the driver
/// container's endpoint are that file on the node through their mounts.
fn assert_node_plugin_registers(provider: &str, daemon_sets: &[Value], driver: &str) {
    let socket = format!("/var/lib/kubelet/plugins/{driver}/csi.sock");
    let mut registering = Vec::new();
    for ds in daemon_sets {
        let pod = &ds["spec"]["template"]["spec"];
        for container in pod["containers"].as_array().into_iter().flatten() {
            if flag(container, "--kubelet-registration-path=").as_deref() == Some(&socket) {
                registering.push((ds, pod, container));
            }
        }
    }
    let [(ds, pod, registrar)] = registering[..] else {
        panic!(
            "{provider}: exactly one node plugin registers {socket}, not {}",
            registering.len()
        );
    };
    let ds = name_of(ds);
    let address = flag(registrar, "--csi-address=")
        .unwrap_or_else(|| panic!("{provider}: {ds}'s registrar has --csi-address"));
    assert_eq!(
        on_node(pod, registrar, &address).as_deref(),
        Some(socket.as_str()),
        "{provider}: {ds}'s registrar talks to the socket it registers ({address})"
    );
    let drivers: Vec<&Value> = pod["containers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["name"] != registrar["name"])
        .filter(|c| endpoint(c).is_some())
        .collect();
    let [driver_container] = drivers[..] else {
        panic!(
            "{provider}: {ds} has one driver container with a CSI endpoint, not {}",
            drivers.len()
        );
    };
    let endpoint = endpoint(driver_container).unwrap();
    assert_eq!(
        on_node(pod, driver_container, &endpoint).as_deref(),
        Some(socket.as_str()),
        "{provider}: {ds}'s driver {} serves the socket the kubelet is given ({endpoint})",
        driver_container["name"]
    );
}

/// The value of `--name=` among a container's args, `$(VAR)` expanded from
/// its env.
fn flag(container: &Value, prefix: &str) -> Option<String> {
    container["args"]
        .as_array()?
        .iter()
        .filter_map(Value::as_str)
        .find_map(|a| a.strip_prefix(prefix))
        .map(|v| expand(container, v))
}

/// A driver's CSI endpoint as a path: `--endpoint=` or `CSI_ENDPOINT`, less
/// the `unix:` scheme. alicloud's `unix://var/lib/…` (two slashes, upstream's)
/// is read as the driver does, a path from the container's root.
fn endpoint(container: &Value) -> Option<String> {
    let value = flag(container, "--endpoint=").or_else(|| env(container, "CSI_ENDPOINT"))?;
    let path = value.strip_prefix("unix:").unwrap_or(&value);
    Some(format!("/{}", path.trim_start_matches('/')))
}

fn env(container: &Value, name: &str) -> Option<String> {
    container["env"]
        .as_array()?
        .iter()
        .find(|e| e["name"] == name)
        .and_then(|e| e["value"].as_str())
        .map(str::to_owned)
}

/// `$(VAR)` references replaced by the container's env values, as the kubelet does.
fn expand(container: &Value, value: &str) -> String {
    let mut out = value.to_owned();
    while let Some(start) = out.find("$(") {
        let Some(len) = out[start..].find(')') else {
            break;
        };
        let name = out[start + 2..start + len].to_owned();
        let Some(v) = env(container, &name) else {
            break;
        };
        out.replace_range(start..=start + len, &v);
    }
    out
}

/// The node's path of `path` in `container`: through the volume mount with
/// the longest matching mount path, whose volume is a hostPath.
fn on_node(pod: &Value, container: &Value, path: &str) -> Option<String> {
    let mount = container["volumeMounts"]
        .as_array()?
        .iter()
        .filter(|m| {
            let at = m["mountPath"]
                .as_str()
                .unwrap_or_default()
                .trim_end_matches('/');
            path.strip_prefix(at)
                .is_some_and(|rest| rest.starts_with('/'))
        })
        .max_by_key(|m| m["mountPath"].as_str().unwrap_or_default().len())?;
    let at = mount["mountPath"].as_str()?.trim_end_matches('/');
    let volume = pod["volumes"]
        .as_array()?
        .iter()
        .find(|v| v["name"] == mount["name"])?;
    let host = volume["hostPath"]["path"].as_str()?.trim_end_matches('/');
    Some(format!("{host}{}", &path[at.len()..]))
}

/// The one default VolumeSnapshotClass stored in the shoot; its driver is the
/// default StorageClass's.
async fn default_snapshot_class(provider: &str, shoot: &ApiServer, driver: &str) -> String {
    let classes = list(shoot, "snapshot.storage.k8s.io/v1", "VolumeSnapshotClass").await;
    let defaults: Vec<&Value> = classes
        .iter()
        .filter(|c| c["metadata"]["annotations"][DEFAULT_SNAPSHOT_CLASS] == "true")
        .collect();
    let [class] = defaults[..] else {
        panic!(
            "{provider}: exactly one default VolumeSnapshotClass, not {:?}",
            defaults.iter().map(|c| name_of(c)).collect::<Vec<_>>()
        );
    };
    assert_eq!(
        class["driver"], driver,
        "{provider}: the default VolumeSnapshotClass is the default StorageClass's driver's"
    );
    name_of(class).to_owned()
}

/// Run the csi-snapshot-controller as scion renders it (its container's
/// args, the kubeconfig replaced by one of the ServiceAccount its shoot
/// access Secret names), bind a claim without a class (which gets
/// `storage_class`) to a volume of `driver`, snapshot it without a class: the
/// controller sets `snapshot_class`. Returns how long the binding and the
/// class took.
async fn snapshot_gets_the_default_class(
    bed: &Testbed,
    namespace: &str,
    printed: &[Value],
    (storage_class, driver): (&str, &str),
    snapshot_class: &str,
) -> (Duration, Duration) {
    let seed = &bed.seed;
    let shoot = bed.shoot.as_ref().unwrap();
    // The seed Deployment scion rendered (GRM applied it above).
    let deployment = seed
        .get(
            "apps/v1",
            "Deployment",
            Some(namespace),
            "csi-snapshot-controller",
        )
        .await
        .expect("the csi-snapshot-controller Deployment in the seed");
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    let rendered_args: Vec<String> = container["args"]
        .as_array()
        .expect("args")
        .iter()
        .map(|a| a.as_str().unwrap().to_owned())
        .collect();
    assert!(
        rendered_args.iter().any(|a| a.starts_with("--kubeconfig=")),
        "the controller reaches the shoot through a kubeconfig: {rendered_args:?}"
    );
    // Its identity in the shoot: the ServiceAccount the token requestor
    // serves for the shoot access Secret its kubeconfig volume projects.
    let access = printed
        .iter()
        .find(|o| name_of(o) == "shoot-access-csi-snapshot-controller")
        .expect("the shoot access Secret of the snapshot controller");
    let annotations = &access["metadata"]["annotations"];
    let account = annotations["serviceaccount.resources.gardener.cloud/name"]
        .as_str()
        .expect("the ServiceAccount name");
    let account_ns = annotations["serviceaccount.resources.gardener.cloud/namespace"]
        .as_str()
        .expect("the ServiceAccount namespace");
    shoot
        .apply(
            &json!({"apiVersion": "v1", "kind": "ServiceAccount",
                    "metadata": {"name": account, "namespace": account_ns}}),
            "token-requestor",
        )
        .await
        .expect("the ServiceAccount");
    let token = shoot.service_account_token(account_ns, account).await;
    let kubeconfig = shoot.kubeconfig_with_token("csi-snapshot-controller.kubeconfig", &token);

    let mut cmd = Command::new(binaries().snapshot_controller());
    for arg in &rendered_args {
        if arg.starts_with("--kubeconfig=") {
            cmd.arg(format!("--kubeconfig={}", kubeconfig.display()));
        } else {
            cmd.arg(arg);
        }
    }
    // Logging only: the defaulting's own lines are at level 5.
    cmd.arg("--v=5");
    let log = shoot.dir.join("csi-snapshot-controller.log");
    let mut controller = Proc::spawn("csi-snapshot-controller", cmd, &log);

    // The disk a CSI driver of `driver` would have created, and a claim
    // without a class that names it.
    let started = Instant::now();
    shoot
        .apply(
            &json!({
                "apiVersion": "v1", "kind": "PersistentVolume",
                "metadata": {"name": "e2e-volume"},
                "spec": {
                    "capacity": {"storage": "1Gi"},
                    "accessModes": ["ReadWriteOnce"],
                    "persistentVolumeReclaimPolicy": "Retain",
                    "storageClassName": storage_class,
                    "csi": {"driver": driver, "volumeHandle": "e2e-volume-handle"},
                },
            }),
            "test",
        )
        .await
        .expect("a CSI volume of the driver");
    let claim = shoot
        .apply(
            &json!({
                "apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": {"name": "snapshot-source", "namespace": VOLUMES},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "1Gi"}},
                    "volumeName": "e2e-volume",
                },
            }),
            "test",
        )
        .await
        .expect("the claim");
    assert_eq!(claim["spec"]["storageClassName"], storage_class);
    wait(
        "the claim bound by kube-controller-manager's volume binder",
        &mut controller,
        || async {
            let claim = shoot
                .get(
                    "v1",
                    "PersistentVolumeClaim",
                    Some(VOLUMES),
                    "snapshot-source",
                )
                .await?;
            (claim["status"]["phase"] == "Bound").then_some(())
        },
    )
    .await;
    let bound = started.elapsed();

    let started = Instant::now();
    shoot
        .apply(
            &json!({
                "apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshot",
                "metadata": {"name": "e2e-snapshot", "namespace": VOLUMES},
                "spec": {"source": {"persistentVolumeClaimName": "snapshot-source"}},
            }),
            "test",
        )
        .await
        .expect("a VolumeSnapshot without a class is accepted");
    let class = wait(
        "the VolumeSnapshot's class set by csi-snapshot-controller",
        &mut controller,
        || async {
            let snapshot = shoot
                .get(
                    "snapshot.storage.k8s.io/v1",
                    "VolumeSnapshot",
                    Some(VOLUMES),
                    "e2e-snapshot",
                )
                .await?;
            snapshot["spec"]["volumeSnapshotClassName"]
                .as_str()
                .map(str::to_owned)
        },
    )
    .await;
    assert_eq!(
        class, snapshot_class,
        "a VolumeSnapshot without a class gets the default VolumeSnapshotClass"
    );
    let defaulted = started.elapsed();
    controller.stop(Duration::from_secs(10));
    (bound, defaulted)
}

/// Poll `check` every 200 ms for at most [`WAIT`]; on timeout (or when the
/// controller exits) panic with the controller's log.
async fn wait<T, F, Fut>(what: &str, controller: &mut Proc, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        let exited = controller.exited();
        if exited.is_some() || Instant::now() > deadline {
            panic!(
                "{what}: not after {WAIT:?} (csi-snapshot-controller {}); its log:\n{}",
                exited.map_or("running".to_owned(), |s| format!("exited: {s}")),
                controller.log_tail(6000)
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
