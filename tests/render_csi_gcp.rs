//! GCP's CSI and the other control-plane components (issue 22) against the
//! facts of provider-gcp's charts and values provider
//! (`/work/shared/reference/gardener-csi.md`, "GCP"): every expectation here
//! is written by hand from those facts — names, args in order, env, volumes,
//! RBAC rules, the conditions of each object (ControlPlaneConfig options,
//! shoot annotations, hibernation, dual-stack, Kubernetes minor bands), the
//! checksums as upstream computes them and the images per minor — never a
//! snapshot of scion's own output.

mod support;

use support::render::*;

use std::collections::BTreeMap;

use base64::Engine as _;
use semver::Version;
use serde_json::{Value, json};

use scion::gardener::view::Strings;
use scion::gardener::{ObjectData, ShootContext};
use scion::profile::component::Destination;
use scion::render::Rendered;
use support::controller::providers::*;
use support::controller::{NS, render_builtin};

const GTK: &str = "generic-token-kubeconfig-92e9ae14";
const KCFG: &str =
    "--kubeconfig=/var/run/secrets/gardener.cloud/shoot/generic-kubeconfig/kubeconfig";
const KCFG_DIR: &str = "/var/run/secrets/gardener.cloud/shoot/generic-kubeconfig";
const SOCK: &str = "/var/lib/csi/sockets/pluginproxy";
const VAC: &str = "gcp.provider.extensions.gardener.cloud/enable-volume-attributes-class";
const DATA_CACHE: &str = "gcp.provider.extensions.gardener.cloud/enable-csi-data-cache";
const P: &str = "extensions.gardener.cloud:provider-gcp:";

// ---------------------------------------------------------------- fixtures

/// A single-stack gcp shoot of Kubernetes 1.`minor`.
fn gcp_shoot(minor: u64) -> ShootContext {
    let mut s = provider_shoot("gcp", "europe-west1", &["IPv4"], false);
    s.shoot.spec.kubernetes.version = Version::new(1, minor, 2);
    s
}

/// The ControlPlaneConfig of the fixtures with `storage`.
fn cp_with_storage(storage: Value) -> scion::gardener::ControlPlane {
    gcp_cp(Some(json!({
        "apiVersion": "gcp.provider.extensions.gardener.cloud/v1alpha1",
        "kind": "ControlPlaneConfig",
        "zone": "europe-west1-b",
        "storage": storage,
    })))
}

fn render(
    cp: &scion::gardener::ControlPlane,
    shoot: &ShootContext,
    secret: &ObjectData,
) -> Rendered {
    render_builtin(cp, shoot, Some(secret), None).expect("renders")
}

fn render_default(shoot: &ShootContext) -> Rendered {
    render(&gcp_cp(None), shoot, &gcp_static_secret())
}

fn find<'a>(r: &'a Rendered, into: Destination, kind: &str, name: &str) -> Option<&'a Value> {
    r.of(into)
        .iter()
        .find(|o| o.kind == kind && o.name == name)
        .map(|o| &o.object)
}

fn get<'a>(r: &'a Rendered, into: Destination, kind: &str, name: &str) -> &'a Value {
    find(r, into, kind, name).unwrap_or_else(|| panic!("{into:?}: {kind} {name} is missing"))
}

fn names(r: &Rendered, into: Destination) -> Vec<String> {
    r.of(into)
        .iter()
        .map(|o| format!("{}/{}", o.kind, o.name))
        .collect()
}

/// Gardener's `utils.ComputeChecksum(secret.Data)`: SHA-256 of Go's JSON of
/// the data map (sorted keys, values base64).
fn gardener_secret_checksum(pairs: &[(&str, &str)]) -> String {
    let map: BTreeMap<&str, String> = pairs
        .iter()
        .map(|(k, v)| (*k, base64::engine::general_purpose::STANDARD.encode(v)))
        .collect();
    sha256_hex(serde_json::to_string(&map).expect("json").as_bytes())
}

/// Gardener's `utils.ComputeConfigMapChecksum(cm.Data)`: SHA-256 of the
/// concatenated per-value SHA-256 hex, keys sorted.
fn gardener_configmap_checksum(data: &BTreeMap<String, String>) -> String {
    let joined: String = data.values().map(|v| sha256_hex(v.as_bytes())).collect();
    sha256_hex(joined.as_bytes())
}

const SA_JSON: &str = r#"{"type":"service_account","project_id":"my-project","client_email":"ccm@my-project.iam.gserviceaccount.com"}"#;

/// The projected kubeconfig volume of a sidecar (§3 of the reference).
fn kubeconfig_volume(volume: &str, access: &str) -> Value {
    json!({
        "name": volume,
        "projected": {"defaultMode": 420, "sources": [
            {"secret": {"items": [{"key": "kubeconfig", "path": "kubeconfig"}], "name": GTK, "optional": false}},
            {"secret": {"items": [{"key": "token", "path": "token"}], "name": format!("shoot-access-{access}"), "optional": false}},
        ]},
    })
}

fn static_cloudprovider_volume() -> Value {
    json!({"name": "cloudprovider", "projected": {"defaultMode": 420, "sources": [
        {"secret": {"items": [{"key": "serviceaccount.json", "path": "credentialsConfig"}], "name": "cloudprovider", "optional": false}},
    ]}})
}

fn wi_cloudprovider_volume() -> Value {
    json!({"name": "cloudprovider", "projected": {"defaultMode": 420, "sources": [
        {"secret": {"items": [{"key": "credentialsConfig", "path": "credentialsConfig"}, {"key": "token", "path": "token"}], "name": "cloudprovider", "optional": false}},
    ]}})
}

// ---------------------------------------------------------------- shoot access

#[test]
fn the_shoot_access_secrets_are_upstreams_six_whatever_the_options() {
    let plain = render_default(&gcp_shoot(33));
    let all_on = render(
        &cp_with_storage(json!({"csiFilestore": {"enabled": true}})),
        &provider_shoot("gcp", "europe-west1", &["IPv4", "IPv6"], false),
        &gcp_static_secret(),
    );
    for r in [&plain, &all_on] {
        let got: Vec<&str> = r.access_secrets.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            got,
            [
                "shoot-access-cloud-controller-manager",
                "shoot-access-csi-provisioner",
                "shoot-access-csi-attacher",
                "shoot-access-csi-snapshotter",
                "shoot-access-csi-resizer",
                "shoot-access-csi-snapshot-controller",
            ]
        );
        for s in &r.access_secrets {
            let sa = s.name.strip_prefix("shoot-access-").expect("prefix");
            assert_eq!(
                s.object,
                json!({
                    "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                    "metadata": {
                        "name": s.name, "namespace": NS,
                        "labels": {"resources.gardener.cloud/purpose": "token-requestor", "resources.gardener.cloud/class": "shoot"},
                        "annotations": {"serviceaccount.resources.gardener.cloud/name": sa, "serviceaccount.resources.gardener.cloud/namespace": "kube-system"},
                    },
                })
            );
        }
    }
}

// ---------------------------------------------------------------- seed: csi-driver-controller

#[test]
fn the_csi_driver_controller_deployment_is_upstreams() {
    let r = render_default(&gcp_shoot(33));
    let d = get(&r, Destination::Seed, "Deployment", "csi-driver-controller");
    assert_eq!(d["metadata"]["namespace"], NS);
    assert_eq!(
        d["metadata"]["labels"],
        json!({"app": "csi", "role": "controller", "high-availability-config.resources.gardener.cloud/type": "controller"})
    );
    assert_eq!(d["spec"]["replicas"], 1);
    assert_eq!(d["spec"]["revisionHistoryLimit"], 0);
    assert_eq!(
        d["spec"]["selector"],
        json!({"matchLabels": {"app": "csi", "role": "controller"}})
    );
    assert_eq!(
        d["spec"]["strategy"],
        json!({"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}, "type": "RollingUpdate"})
    );
    let meta = &d["spec"]["template"]["metadata"];
    assert_eq!(meta["creationTimestamp"], Value::Null);
    assert!(
        meta.as_object()
            .expect("meta")
            .contains_key("creationTimestamp")
    );
    assert_eq!(
        meta["labels"],
        json!({
            "app": "csi", "role": "controller", "gardener.cloud/role": "controlplane",
            "networking.gardener.cloud/to-dns": "allowed",
            "networking.gardener.cloud/to-public-networks": "allowed",
            "networking.resources.gardener.cloud/to-kube-apiserver-tcp-443": "allowed",
        })
    );
    // Helm's sha256sum of the rendered config.yaml, and the credentials' checksum.
    let config_yaml = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: csi-driver-controller-config\n  namespace: {NS}\ndata:\n  cloudprovider.conf: |\n    [Global]\n    project-id=\"my-project\"\n    zone=\"europe-west1-b\"\n"
    );
    assert_eq!(
        meta["annotations"],
        json!({
            "checksum/configmap-csi-driver-controller": sha256_hex(config_yaml.as_bytes()),
            "checksum/secret-cloudprovider": gardener_secret_checksum(&[("serviceaccount.json", SA_JSON)]),
        })
    );
    let spec = pod_spec(d);
    assert_eq!(spec["automountServiceAccountToken"], false);
    assert_eq!(spec["priorityClassName"], "gardener-system-300");
    let order: Vec<&str> = spec["containers"]
        .as_array()
        .expect("containers")
        .iter()
        .map(|c| c["name"].as_str().expect("name"))
        .collect();
    assert_eq!(
        order,
        [
            "gcp-csi-driver",
            "gcp-csi-provisioner",
            "gcp-csi-attacher",
            "gcp-csi-snapshotter",
            "gcp-csi-resizer",
            "gcp-csi-liveness-probe"
        ]
    );

    let driver = container(d, "gcp-csi-driver");
    assert_eq!(
        args(d, "gcp-csi-driver"),
        [
            "--endpoint=$(CSI_ENDPOINT)",
            "--cloud-config=/etc/kubernetes/cloudprovider/cloudprovider.conf",
            "--run-node-service=false",
            &format!("--extra-labels=k8s-cluster-name={NS}"),
            "--logtostderr",
            "--v=3",
            "--enable-storage-pools",
            "--http-endpoint=0.0.0.0:3301",
        ]
    );
    assert_eq!(
        driver["image"],
        "registry.k8s.io/cloud-provider-gcp/gcp-compute-persistent-disk-csi-driver:v1.26.0"
    );
    assert_eq!(driver["imagePullPolicy"], "IfNotPresent");
    assert_eq!(
        driver["env"],
        json!([
            {"name": "CSI_ENDPOINT", "value": format!("unix://{SOCK}/csi.sock")},
            {"name": "GOOGLE_APPLICATION_CREDENTIALS", "value": "/srv/cloudprovider/credentialsConfig"},
        ])
    );
    assert_eq!(driver["resources"], json!({"requests": {"memory": "50Mi"}}));
    assert_eq!(
        driver["ports"],
        json!([
            {"name": "healthz", "containerPort": 9808, "protocol": "TCP"},
            {"name": "metrics", "containerPort": 3301, "protocol": "TCP"},
        ])
    );
    assert_eq!(
        driver["securityContext"],
        json!({"allowPrivilegeEscalation": false})
    );
    assert_eq!(
        driver["livenessProbe"],
        json!({"httpGet": {"path": "/healthz", "port": "healthz"}, "initialDelaySeconds": 10, "timeoutSeconds": 3, "periodSeconds": 10, "failureThreshold": 5})
    );
    assert_eq!(
        driver["volumeMounts"],
        json!([
            {"name": "socket-dir", "mountPath": SOCK},
            {"name": "csi-driver-controller-config", "mountPath": "/etc/kubernetes/cloudprovider"},
            {"name": "cloudprovider", "mountPath": "/srv/cloudprovider", "readOnly": true},
        ])
    );

    let sidecar = |name: &str, volume: &str| {
        let c = container(d, name);
        assert_eq!(c["imagePullPolicy"], "IfNotPresent", "{name}");
        assert_eq!(
            c["securityContext"],
            json!({"allowPrivilegeEscalation": false}),
            "{name}"
        );
        assert_eq!(
            c["volumeMounts"],
            json!([
                {"name": "socket-dir", "mountPath": SOCK},
                {"mountPath": KCFG_DIR, "name": volume, "readOnly": true},
            ]),
            "{name}"
        );
        c
    };
    let provisioner = sidecar("gcp-csi-provisioner", "kubeconfig-csi-provisioner");
    assert_eq!(
        args(d, "gcp-csi-provisioner"),
        [
            "--csi-address=$(ADDRESS)",
            KCFG,
            "--volume-name-prefix=pv-",
            "--default-fstype=ext4",
            "--extra-create-metadata=true",
            "--leader-election=true",
            "--leader-election-namespace=kube-system",
            "--kube-api-qps=100",
            "--kube-api-burst=200",
            "--strict-topology",
            "--v=5",
        ]
    );
    assert_eq!(
        provisioner["env"],
        json!([{"name": "ADDRESS", "value": format!("{SOCK}/csi.sock")}])
    );
    assert_eq!(
        provisioner["resources"],
        json!({"requests": {"memory": "32Mi"}})
    );
    assert_eq!(
        provisioner["image"],
        "registry.k8s.io/sig-storage/csi-provisioner:v5.3.0"
    );
    let attacher = sidecar("gcp-csi-attacher", "kubeconfig-csi-attacher");
    assert_eq!(
        args(d, "gcp-csi-attacher"),
        [
            "--csi-address=$(ADDRESS)",
            KCFG,
            "--leader-election",
            "--leader-election-namespace=kube-system",
            "--kube-api-qps=100",
            "--kube-api-burst=200",
            "--v=5",
        ]
    );
    assert_eq!(
        attacher["resources"],
        json!({"requests": {"memory": "50Mi"}})
    );
    assert_eq!(
        attacher["image"],
        "registry.k8s.io/sig-storage/csi-attacher:v4.12.0"
    );
    let snapshotter = sidecar("gcp-csi-snapshotter", "kubeconfig-csi-snapshotter");
    assert_eq!(
        args(d, "gcp-csi-snapshotter"),
        [
            "--csi-address=$(CSI_ENDPOINT)",
            KCFG,
            "--leader-election",
            "--leader-election-namespace=kube-system",
            "--snapshot-name-prefix=snapshot",
            "--kube-api-qps=100",
            "--kube-api-burst=200",
        ]
    );
    // No unix:// for the snapshotter.
    assert_eq!(
        snapshotter["env"],
        json!([{"name": "CSI_ENDPOINT", "value": format!("{SOCK}/csi.sock")}])
    );
    assert_eq!(
        snapshotter["resources"],
        json!({"requests": {"memory": "32Mi"}})
    );
    assert_eq!(
        snapshotter["image"],
        "registry.k8s.io/sig-storage/csi-snapshotter:v8.6.0"
    );
    let resizer = sidecar("gcp-csi-resizer", "kubeconfig-csi-resizer");
    assert_eq!(
        args(d, "gcp-csi-resizer"),
        [
            "--csi-address=$(ADDRESS)",
            KCFG,
            "--leader-election=true",
            "--leader-election-namespace=kube-system",
            "--handle-volume-inuse-error=false",
            "--kube-api-qps=100",
            "--kube-api-burst=200",
            "--v=5",
        ]
    );
    assert_eq!(
        resizer["resources"],
        json!({"requests": {"memory": "32Mi"}})
    );
    assert_eq!(
        resizer["image"],
        "registry.k8s.io/sig-storage/csi-resizer:v1.14.0"
    );
    let probe = container(d, "gcp-csi-liveness-probe");
    assert_eq!(
        probe,
        &json!({
            "name": "gcp-csi-liveness-probe",
            "image": "registry.k8s.io/sig-storage/livenessprobe:v2.19.0",
            "args": ["--csi-address=/csi/csi.sock"],
            "resources": {"requests": {"memory": "32Mi"}},
            "securityContext": {"allowPrivilegeEscalation": false},
            "volumeMounts": [{"name": "socket-dir", "mountPath": "/csi"}],
        }),
        "no imagePullPolicy for the liveness probe"
    );

    assert_eq!(
        spec["volumes"],
        json!([
            {"name": "socket-dir", "emptyDir": {}},
            kubeconfig_volume("kubeconfig-csi-attacher", "csi-attacher"),
            kubeconfig_volume("kubeconfig-csi-provisioner", "csi-provisioner"),
            kubeconfig_volume("kubeconfig-csi-snapshotter", "csi-snapshotter"),
            kubeconfig_volume("kubeconfig-csi-resizer", "csi-resizer"),
            static_cloudprovider_volume(),
            {"name": "csi-driver-controller-config", "configMap": {"name": "csi-driver-controller-config"}},
        ])
    );

    let cm = get(
        &r,
        Destination::Seed,
        "ConfigMap",
        "csi-driver-controller-config",
    );
    assert_eq!(
        cm["data"],
        json!({"cloudprovider.conf": "[Global]\nproject-id=\"my-project\"\nzone=\"europe-west1-b\"\n"})
    );
    assert_eq!(cm["metadata"]["namespace"], NS);
}

#[test]
fn kubernetes_134_switches_the_sidecar_images_and_adds_the_dynamic_provisioning_flags() {
    for (minor, provisioner, resizer, dynamic) in [
        (32, "v5.3.0", "v1.14.0", false),
        (33, "v5.3.0", "v1.14.0", false),
        (34, "v6.3.0", "v2.2.1", true),
        (35, "v6.3.0", "v2.2.1", true),
        (36, "v6.3.0", "v2.2.1", true),
    ] {
        let r = render_default(&gcp_shoot(minor));
        let d = get(&r, Destination::Seed, "Deployment", "csi-driver-controller");
        assert_eq!(
            container(d, "gcp-csi-provisioner")["image"],
            format!("registry.k8s.io/sig-storage/csi-provisioner:{provisioner}"),
            "1.{minor}"
        );
        assert_eq!(
            container(d, "gcp-csi-resizer")["image"],
            format!("registry.k8s.io/sig-storage/csi-resizer:{resizer}"),
            "1.{minor}"
        );
        let a = args(d, "gcp-csi-driver");
        let flags = [
            "--supports-dynamic-iops-provisioning=hyperdisk-balanced,hyperdisk-extreme,",
            "--supports-dynamic-throughput-provisioning=hyperdisk-balanced,hyperdisk-throughput,hyperdisk-ml,",
        ];
        if dynamic {
            assert_eq!(&a[8..], flags, "1.{minor}: after --http-endpoint, in order");
        } else {
            assert_eq!(a.len(), 8, "1.{minor}: {a:?}");
        }
        // Feature gates only with the annotation.
        assert!(
            !args(d, "gcp-csi-provisioner")
                .iter()
                .any(|f| f.starts_with("--feature-gates"))
        );
    }
}

#[test]
fn the_volume_attributes_class_annotation_parses_as_a_boolean_for_the_pd_sidecars() {
    let gates = "--feature-gates=VolumeAttributesClass=true,";
    let on = render_default(&with_annotation(gcp_shoot(33), VAC, "true"));
    let d = get(
        &on,
        Destination::Seed,
        "Deployment",
        "csi-driver-controller",
    );
    let p = args(d, "gcp-csi-provisioner");
    assert_eq!(&p[..3], ["--csi-address=$(ADDRESS)", KCFG, gates]);
    let z = args(d, "gcp-csi-resizer");
    assert_eq!(z[5], gates, "after --handle-volume-inuse-error: {z:?}");
    assert_eq!(z[4], "--handle-volume-inuse-error=false");
    // Below 1.34 the annotation alone turns the dynamic-provisioning flags on.
    assert!(
        args(d, "gcp-csi-driver")
            .iter()
            .any(|a| a.starts_with("--supports-dynamic-iops-provisioning="))
    );

    for value in ["false", "", "yes"] {
        let off = render_default(&with_annotation(gcp_shoot(33), VAC, value));
        let d = get(
            &off,
            Destination::Seed,
            "Deployment",
            "csi-driver-controller",
        );
        for c in ["gcp-csi-provisioner", "gcp-csi-resizer", "gcp-csi-driver"] {
            assert!(
                !args(d, c)
                    .iter()
                    .any(|a| a.contains("VolumeAttributesClass")
                        || a.starts_with("--supports-dynamic")),
                "{value:?}: {c}"
            );
        }
    }
}

#[test]
fn the_data_cache_annotation_counts_by_its_presence() {
    for value in ["true", "false", ""] {
        let r = render_default(&with_annotation(gcp_shoot(34), DATA_CACHE, value));
        let d = get(&r, Destination::Seed, "Deployment", "csi-driver-controller");
        let a = args(d, "gcp-csi-driver");
        assert_eq!(a[7], "--http-endpoint=0.0.0.0:3301");
        assert_eq!(
            a[8], "--enable-data-cache",
            "{value:?}: before the dynamic flags"
        );
        assert!(a[9].starts_with("--supports-dynamic-iops-provisioning="));
        let node = get(&r, Destination::Shoot, "DaemonSet", "csi-driver-node");
        assert_eq!(
            args(node, "csi-driver"),
            [
                "--endpoint=$(CSI_ENDPOINT)",
                "--run-controller-service=false",
                "--maxprocs=2",
                "--enable-data-cache",
                "--node-name=$(KUBE_NODE_NAME)",
                "--logtostderr",
                "--v=5",
            ],
            "{value:?}"
        );
    }
    let r = render_default(&gcp_shoot(34));
    let d = get(&r, Destination::Seed, "Deployment", "csi-driver-controller");
    assert!(!args(d, "gcp-csi-driver").contains(&"--enable-data-cache".to_string()));
}

#[test]
fn workload_identity_switches_the_credentials_file_and_its_volume() {
    let r = render(&gcp_cp(None), &gcp_shoot(34), &gcp_wi_secret());
    let d = get(&r, Destination::Seed, "Deployment", "csi-driver-controller");
    let driver = container(d, "gcp-csi-driver");
    assert_eq!(
        driver["env"][1],
        json!({"name": "GOOGLE_APPLICATION_CREDENTIALS", "value": "/var/run/secrets/gardener.cloud/workload-identity/credentialsConfig"})
    );
    assert_eq!(
        driver["volumeMounts"][2],
        json!({"name": "cloudprovider", "mountPath": "/var/run/secrets/gardener.cloud/workload-identity", "readOnly": true})
    );
    assert_eq!(pod_spec(d)["volumes"][5], wi_cloudprovider_volume());
    // The project of the workload-identity Secret.
    let cm = get(
        &r,
        Destination::Seed,
        "ConfigMap",
        "csi-driver-controller-config",
    );
    assert_eq!(
        cm["data"]["cloudprovider.conf"],
        "[Global]\nproject-id=\"wi-project\"\nzone=\"europe-west1-b\"\n"
    );
}

#[test]
fn the_controller_vpa_pdb_service_and_service_monitor_are_upstreams() {
    let r = render_default(&gcp_shoot(33));
    let policy = |c: &str| json!({"containerName": c, "controlledValues": "RequestsOnly", "controlledResources": ["memory"]});
    assert_eq!(
        get(
            &r,
            Destination::Seed,
            "VerticalPodAutoscaler",
            "csi-driver-controller-vpa"
        )["spec"],
        json!({
            "resourcePolicy": {"containerPolicies": [
                policy("gcp-csi-driver"), policy("gcp-csi-provisioner"), policy("gcp-csi-attacher"),
                policy("gcp-csi-snapshotter"), policy("gcp-csi-resizer"), policy("gcp-csi-liveness-probe"),
            ]},
            "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "csi-driver-controller"},
            "updatePolicy": {"updateMode": "InPlaceOrRecreate"},
        })
    );
    let pdb = get(
        &r,
        Destination::Seed,
        "PodDisruptionBudget",
        "csi-driver-controller",
    );
    assert_eq!(
        pdb["metadata"]["labels"],
        json!({"app": "csi", "role": "controller"})
    );
    assert_eq!(
        pdb["spec"],
        json!({"maxUnavailable": 1, "selector": {"matchLabels": {"app": "csi", "role": "controller"}}, "unhealthyPodEvictionPolicy": "AlwaysAllow"})
    );
    let svc = get(&r, Destination::Seed, "Service", "csi-driver-controller");
    assert_eq!(
        svc["metadata"]["annotations"],
        json!({
            "networking.resources.gardener.cloud/from-all-scrape-targets-allowed-ports": "[{\"port\":3301,\"protocol\":\"TCP\"}]",
            "networking.resources.gardener.cloud/from-world-to-ports": "[{\"port\":3301,\"protocol\":\"TCP\"}]",
        })
    );
    assert_eq!(
        svc["metadata"]["labels"],
        json!({"app": "csi", "role": "controller"})
    );
    assert_eq!(
        svc["spec"],
        json!({"type": "ClusterIP", "clusterIP": "None", "ports": [{"name": "metrics", "port": 3301, "protocol": "TCP"}], "selector": {"app": "csi", "role": "controller"}})
    );
    let sm = get(
        &r,
        Destination::Seed,
        "ServiceMonitor",
        "shoot-csi-driver-controller",
    );
    assert_eq!(sm["metadata"]["labels"], json!({"prometheus": "shoot"}));
    assert_eq!(
        sm["spec"],
        json!({
            "selector": {"matchLabels": {"app": "csi", "role": "controller"}},
            "endpoints": [{
                "port": "metrics",
                "relabelings": [{"action": "labelmap", "regex": "__meta_kubernetes_service_label_(.+)"}],
                "metricRelabelings": [{"sourceLabels": ["__name__"], "action": "keep", "regex": "^(csidriver_operation_errors)$"}],
            }],
        })
    );
}

#[test]
fn the_snapshot_controller_is_upstreams() {
    let r = render_default(&gcp_shoot(33));
    let d = get(
        &r,
        Destination::Seed,
        "Deployment",
        "csi-snapshot-controller",
    );
    assert_eq!(
        d["metadata"]["labels"],
        json!({"app": "csi-snapshot-controller", "role": "controller", "high-availability-config.resources.gardener.cloud/type": "controller"})
    );
    assert_eq!(d["spec"]["replicas"], 1);
    assert_eq!(d["spec"]["revisionHistoryLimit"], 0);
    assert_eq!(
        d["spec"]["selector"],
        json!({"matchLabels": {"app": "csi-snapshot-controller", "role": "controller"}})
    );
    let meta = &d["spec"]["template"]["metadata"];
    assert!(meta.get("annotations").is_none_or(Value::is_null), "{meta}");
    assert_eq!(
        meta["labels"],
        json!({
            "app": "csi-snapshot-controller", "role": "controller",
            "networking.gardener.cloud/to-dns": "allowed",
            "networking.gardener.cloud/to-public-networks": "allowed",
            "networking.resources.gardener.cloud/to-kube-apiserver-tcp-443": "allowed",
        })
    );
    let spec = pod_spec(d);
    assert_eq!(spec["automountServiceAccountToken"], false);
    assert_eq!(spec["priorityClassName"], "gardener-system-200");
    assert_eq!(
        spec["containers"],
        json!([{
            "name": "gcp-csi-snapshot-controller",
            "image": "registry.k8s.io/sig-storage/snapshot-controller:v8.6.0",
            "imagePullPolicy": "IfNotPresent",
            "args": [KCFG, "--leader-election=true", "--leader-election-namespace=kube-system"],
            "resources": {"requests": {"memory": "32Mi"}},
            "securityContext": {"allowPrivilegeEscalation": false},
            "volumeMounts": [{"mountPath": KCFG_DIR, "name": "kubeconfig", "readOnly": true}],
        }])
    );
    assert_eq!(
        spec["volumes"],
        json!([kubeconfig_volume("kubeconfig", "csi-snapshot-controller")])
    );
    assert_eq!(
        get(
            &r,
            Destination::Seed,
            "VerticalPodAutoscaler",
            "csi-snapshot-controller-vpa"
        )["spec"],
        json!({
            "resourcePolicy": {"containerPolicies": [{"containerName": "gcp-csi-snapshot-controller", "controlledValues": "RequestsOnly", "controlledResources": ["memory"]}]},
            "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "csi-snapshot-controller"},
            "updatePolicy": {"updateMode": "InPlaceOrRecreate"},
        })
    );
    let pdb = get(
        &r,
        Destination::Seed,
        "PodDisruptionBudget",
        "csi-snapshot-controller",
    );
    assert_eq!(
        pdb["metadata"]["labels"],
        json!({"app": "csi-snapshot-controller", "role": "controller"})
    );
    assert_eq!(
        pdb["spec"],
        json!({"maxUnavailable": 1, "selector": {"matchLabels": {"app": "csi-snapshot-controller", "role": "controller"}}, "unhealthyPodEvictionPolicy": "AlwaysAllow"})
    );
}

#[test]
fn hibernation_scales_every_controller_as_the_ccm() {
    let filestore = cp_with_storage(json!({"csiFilestore": {"enabled": true}}));
    let mut s = provider_shoot("gcp", "europe-west1", &["IPv4", "IPv6"], true);
    s.shoot.spec.kubernetes.version = Version::new(1, 34, 1);
    let controllers = [
        "cloud-controller-manager",
        "csi-driver-controller",
        "csi-snapshot-controller",
        "csi-driver-filestore-controller",
        "ingress-gce",
    ];
    // Hibernated with kube-apiserver scaled down: 0.
    let r = render(&filestore, &s, &gcp_static_secret());
    for name in controllers {
        assert_eq!(
            get(&r, Destination::Seed, "Deployment", name)["spec"]["replicas"],
            0,
            "{name}"
        );
    }
    // kube-apiserver still running: 1 (and requeue), as the CCM.
    let r = render_builtin(&filestore, &s, Some(&gcp_static_secret()), Some(1)).expect("renders");
    assert!(r.requeue);
    for name in controllers {
        assert_eq!(
            get(&r, Destination::Seed, "Deployment", name)["spec"]["replicas"],
            1,
            "{name}"
        );
    }
}

// ---------------------------------------------------------------- seed: Filestore

#[test]
fn filestore_is_off_unless_the_controlplane_config_enables_it() {
    for storage in [
        json!({}),
        json!({"csiFilestore": {"enabled": false}}),
        json!({"csiFilestore": null}),
    ] {
        let r = render(
            &cp_with_storage(storage.clone()),
            &gcp_shoot(34),
            &gcp_static_secret(),
        );
        let all: Vec<String> = r.all().iter().map(|o| o.name.clone()).collect();
        for name in [
            "csi-driver-filestore-controller",
            "csi-filestore-controller-config",
            "csi-driver-filestore-controller-vpa",
            "csi-driver-filestore-node",
            "csi-driver-filestore-node-sa",
            "filestore.csi.storage.gke.io",
            "extensions.gardener.cloud:provider-gcp:csi-driver-filestore",
            "csi-filestore",
        ] {
            assert!(!all.contains(&name.to_string()), "{storage}: {name}");
        }
    }
}

#[test]
fn the_filestore_controller_is_upstreams_with_what_its_pods_get() {
    let r = render(
        &cp_with_storage(json!({"csiFilestore": {"enabled": true}})),
        &with_annotation(gcp_shoot(34), VAC, "false"),
        &gcp_static_secret(),
    );
    let d = get(
        &r,
        Destination::Seed,
        "Deployment",
        "csi-driver-filestore-controller",
    );
    assert_eq!(
        d["metadata"]["labels"],
        json!({"app": "csi-filestore", "role": "controller", "high-availability-config.resources.gardener.cloud/type": "controller"})
    );
    assert_eq!(d["spec"]["replicas"], 1);
    assert_eq!(d["spec"]["revisionHistoryLimit"], 0);
    assert_eq!(
        d["spec"]["selector"],
        json!({"matchLabels": {"app": "csi-filestore", "role": "controller"}})
    );
    assert_eq!(
        d["spec"]["strategy"],
        json!({"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}, "type": "RollingUpdate"})
    );
    let config_yaml = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: csi-filestore-controller-config\n  namespace: {NS}\ndata:\n  cloudprovider.conf: |\n    [Global]\n    project-id=\"my-project\"\n    zone=\"europe-west1-b\"\n"
    );
    let meta = &d["spec"]["template"]["metadata"];
    assert_eq!(
        meta["annotations"],
        json!({
            // The PD driver's key name, as upstream's chart writes it.
            "checksum/configmap-csi-driver-controller": sha256_hex(config_yaml.as_bytes()),
            "checksum/secret-cloudprovider": gardener_secret_checksum(&[("serviceaccount.json", SA_JSON)]),
        })
    );
    assert!(meta.get("creationTimestamp").is_none());
    assert_eq!(
        meta["labels"],
        json!({
            "app": "csi-filestore", "role": "controller", "gardener.cloud/role": "controlplane",
            "networking.gardener.cloud/to-dns": "allowed",
            "networking.gardener.cloud/to-public-networks": "allowed",
            "networking.resources.gardener.cloud/to-kube-apiserver-tcp-443": "allowed",
        })
    );
    let spec = pod_spec(d);
    assert_eq!(spec["priorityClassName"], "gardener-system-300");
    assert_eq!(spec["automountServiceAccountToken"], false);
    let order: Vec<&str> = spec["containers"]
        .as_array()
        .expect("containers")
        .iter()
        .map(|c| c["name"].as_str().expect("name"))
        .collect();
    assert_eq!(
        order,
        [
            "gcp-filestore-driver",
            "gcp-filestore-provisioner",
            "gcp-filestore-resizer",
            "gcp-filestore-liveness-probe",
            "gcp-filestore-snapshotter"
        ]
    );
    // Upstream's misindented resources: the pods run without requests.
    for c in spec["containers"].as_array().expect("containers") {
        assert!(c.get("resources").is_none(), "{}", c["name"]);
        assert!(c.get("requests").is_none(), "{}", c["name"]);
    }
    let driver = container(d, "gcp-filestore-driver");
    assert_eq!(
        driver["image"],
        "registry.k8s.io/cloud-provider-gcp/gcp-filestore-csi-driver:v1.12.0"
    );
    assert_eq!(
        args(d, "gcp-filestore-driver"),
        [
            "--v=3",
            "--endpoint=$(CSI_ENDPOINT)",
            "--nodeid=$(KUBE_NODE_NAME)",
            "--controller=true",
            "--cloud-config=/etc/kubernetes/cloudprovider/cloudprovider.conf",
            &format!("--extra-labels=k8s-cluster-name={NS}"),
            "--logtostderr",
            "--kube-api-qps=100",
            "--kube-api-burst=200",
        ]
    );
    assert_eq!(
        driver["env"],
        json!([
            {"name": "KUBE_NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
            {"name": "CSI_ENDPOINT", "value": format!("unix://{SOCK}/csi.sock")},
            {"name": "GOOGLE_APPLICATION_CREDENTIALS", "value": "/srv/cloudprovider/credentialsConfig"},
        ])
    );
    assert_eq!(
        driver["ports"],
        json!([{"name": "healthz", "containerPort": 9808, "protocol": "TCP"}])
    );
    assert_eq!(
        driver["volumeMounts"],
        json!([
            {"name": "socket-dir", "mountPath": SOCK},
            {"name": "csi-filestore-controller-config", "mountPath": "/etc/kubernetes/cloudprovider"},
            {"name": "cloudprovider", "mountPath": "/srv/cloudprovider", "readOnly": true},
        ])
    );
    // The annotation's mere presence ("false" here) turns the gates on.
    let gates = "--feature-gates=VolumeAttributesClass=true,";
    assert_eq!(
        args(d, "gcp-filestore-provisioner"),
        [
            "--csi-address=$(ADDRESS)",
            KCFG,
            gates,
            "--volume-name-prefix=pv-",
            "--default-fstype=ext4",
            "--extra-create-metadata=true",
            "--leader-election=true",
            "--leader-election-namespace=kube-system",
            "--kube-api-qps=100",
            "--kube-api-burst=200",
            "--v=5",
        ],
        "no --strict-topology"
    );
    assert_eq!(
        args(d, "gcp-filestore-resizer"),
        [
            "--csi-address=$(ADDRESS)",
            KCFG,
            "--leader-election=true",
            "--leader-election-namespace=kube-system",
            "--handle-volume-inuse-error=false",
            gates,
            "--kube-api-qps=100",
            "--kube-api-burst=200",
            "--v=5",
        ]
    );
    assert_eq!(
        args(d, "gcp-filestore-liveness-probe"),
        ["--csi-address=/csi/csi.sock"]
    );
    assert_eq!(
        args(d, "gcp-filestore-snapshotter"),
        [
            "--csi-address=$(CSI_ENDPOINT)",
            KCFG,
            "--leader-election",
            "--leader-election-namespace=kube-system",
            "--snapshot-name-prefix=snapshot",
            "--kube-api-qps=100",
            "--kube-api-burst=200",
        ]
    );
    // The PD controller's sidecars keep theirs off: "false" parses as false.
    let pd = get(&r, Destination::Seed, "Deployment", "csi-driver-controller");
    assert!(!args(pd, "gcp-csi-provisioner").contains(&gates.to_string()));
    assert_eq!(
        spec["volumes"],
        json!([
            {"name": "socket-dir", "emptyDir": {}},
            kubeconfig_volume("kubeconfig-csi-provisioner", "csi-provisioner"),
            kubeconfig_volume("kubeconfig-csi-snapshotter", "csi-snapshotter"),
            kubeconfig_volume("kubeconfig-csi-resizer", "csi-resizer"),
            static_cloudprovider_volume(),
            {"name": "csi-filestore-controller-config", "configMap": {"name": "csi-filestore-controller-config"}},
        ])
    );
    assert_eq!(
        get(
            &r,
            Destination::Seed,
            "ConfigMap",
            "csi-filestore-controller-config"
        )["data"],
        json!({"cloudprovider.conf": "[Global]\nproject-id=\"my-project\"\nzone=\"europe-west1-b\"\n"})
    );
    let policy = |c: &str| json!({"containerName": c, "controlledValues": "RequestsOnly", "controlledResources": ["memory"]});
    assert_eq!(
        get(
            &r,
            Destination::Seed,
            "VerticalPodAutoscaler",
            "csi-driver-filestore-controller-vpa"
        )["spec"],
        json!({
            "resourcePolicy": {"containerPolicies": [
                policy("gcp-filestore-driver"), policy("gcp-filestore-provisioner"), policy("gcp-filestore-resizer"),
                policy("gcp-filestore-liveness-probe"), policy("gcp-filestore-snapshotter"),
            ]},
            "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "csi-driver-filestore-controller"},
            "updatePolicy": {"updateMode": "InPlaceOrRecreate"},
        })
    );
    assert!(
        find(
            &r,
            Destination::Seed,
            "PodDisruptionBudget",
            "csi-driver-filestore-controller"
        )
        .is_none()
    );
    assert!(
        find(
            &r,
            Destination::Seed,
            "Service",
            "csi-driver-filestore-controller"
        )
        .is_none()
    );

    // Workload identity, as the PD driver.
    let wi = render(
        &cp_with_storage(json!({"csiFilestore": {"enabled": true}})),
        &gcp_shoot(34),
        &gcp_wi_secret(),
    );
    let d = get(
        &wi,
        Destination::Seed,
        "Deployment",
        "csi-driver-filestore-controller",
    );
    assert_eq!(
        container(d, "gcp-filestore-driver")["env"][2]["value"],
        "/var/run/secrets/gardener.cloud/workload-identity/credentialsConfig"
    );
    assert_eq!(pod_spec(d)["volumes"][4], wi_cloudprovider_volume());
}

// ---------------------------------------------------------------- seed: ingress-gce

#[test]
fn ingress_gce_follows_dual_stack_in_spec_and_status() {
    // Single-stack: only the ConfigMap (always written).
    let r = render_default(&gcp_shoot(34));
    assert!(find(&r, Destination::Seed, "Deployment", "ingress-gce").is_none());
    assert!(
        find(
            &r,
            Destination::Seed,
            "VerticalPodAutoscaler",
            "ingress-gce"
        )
        .is_none()
    );
    let cm = get(
        &r,
        Destination::Configuration,
        "ConfigMap",
        "cloud-provider-config-ingress-gce",
    );
    assert_eq!(cm["metadata"]["namespace"], NS);
    // The nodes subnet (the CCM's config names the internal one).
    assert_eq!(
        cm["data"],
        json!({"cloudprovider.conf": format!("[Global]\nproject-id=\"my-project\"\nnetwork-name=\"vpc-1234\"\nsubnetwork-name=\"subnet-nodes1234\"\nmultizone=true\nlocal-zone=\"europe-west1-b\"\ntoken-url=nil\nnode-tags=\"{NS}\"\n")})
    );
    assert_eq!(
        names(&r, Destination::Configuration),
        [
            "ConfigMap/cloud-provider-config",
            "ConfigMap/cloud-provider-config-ingress-gce"
        ]
    );

    // Dual-stack in the spec: running.
    let dual = provider_shoot("gcp", "europe-west1", &["IPv4", "IPv6"], false);
    let r = render_default(&dual);
    let d = get(&r, Destination::Seed, "Deployment", "ingress-gce");
    assert_eq!(d["spec"]["replicas"], 1);
    // IPv6 alone is not IPv4 single-stack either.
    let v6 = render_default(&provider_shoot("gcp", "europe-west1", &["IPv6"], false));
    assert_eq!(
        get(&v6, Destination::Seed, "Deployment", "ingress-gce")["spec"]["replicas"],
        1
    );

    // Back to single-stack in the spec, two node CIDRs still in the status:
    // the objects stay, at 0 replicas.
    let mut back = dual.clone();
    back.shoot.spec.networking.ip_families = Strings(vec!["IPv4".into()]);
    let r = render_default(&back);
    assert_eq!(
        get(&r, Destination::Seed, "Deployment", "ingress-gce")["spec"]["replicas"],
        0
    );
    assert!(
        find(
            &r,
            Destination::Seed,
            "VerticalPodAutoscaler",
            "ingress-gce"
        )
        .is_some()
    );
}

#[test]
fn the_ingress_gce_deployment_is_upstreams() {
    let dual = provider_shoot("gcp", "europe-west1", &["IPv4", "IPv6"], false);
    let r = render_default(&dual);
    let d = get(&r, Destination::Seed, "Deployment", "ingress-gce");
    assert_eq!(
        d["metadata"]["labels"],
        json!({"app": "kubernetes", "role": "glbc"}),
        "no HA label"
    );
    assert_eq!(d["spec"]["revisionHistoryLimit"], 0);
    assert_eq!(
        d["spec"]["selector"],
        json!({"matchLabels": {"app": "kubernetes", "role": "glbc"}})
    );
    let cm = get(
        &r,
        Destination::Configuration,
        "ConfigMap",
        "cloud-provider-config-ingress-gce",
    );
    let data: BTreeMap<String, String> = serde_json::from_value(cm["data"].clone()).expect("data");
    let meta = &d["spec"]["template"]["metadata"];
    assert_eq!(
        meta["annotations"],
        json!({
            "checksum/secret-cloudprovider": gardener_secret_checksum(&[("serviceaccount.json", SA_JSON)]),
            "checksum/configmap-cloud-provider-config-ingress-gce": gardener_configmap_checksum(&data),
        })
    );
    // The reference's vector for the per-key scheme.
    let vector = BTreeMap::from([(
        "cloudprovider.conf".to_string(),
        "ingress-gce-content".to_string(),
    )]);
    assert_eq!(
        gardener_configmap_checksum(&vector),
        "7767e78e603af512385dc40c04665e9e385e2944606d9a7324fccb086969f72d"
    );
    assert_eq!(
        meta["labels"],
        json!({
            "app": "kubernetes", "role": "glbc", "gardener.cloud/role": "controlplane",
            "networking.gardener.cloud/to-dns": "allowed",
            "networking.gardener.cloud/to-public-networks": "allowed",
            "networking.resources.gardener.cloud/to-kube-apiserver-tcp-443": "allowed",
        })
    );
    let spec = pod_spec(d);
    for (k, v) in [
        ("automountServiceAccountToken", json!(false)),
        ("priorityClassName", json!("system-cluster-critical")),
        ("dnsPolicy", json!("ClusterFirst")),
        ("restartPolicy", json!("Always")),
        ("schedulerName", json!("default-scheduler")),
        ("terminationGracePeriodSeconds", json!(30)),
    ] {
        assert_eq!(spec[k], v, "{k}");
    }
    assert_eq!(
        spec["containers"],
        json!([{
            "name": "glbc",
            "image": "europe-docker.pkg.dev/gardener-project/releases/gardener/extensions/ingress-gce:v1.38.2",
            "args": [
                "--config-file-path=/etc/kubernetes/cloudprovider/cloudprovider.conf",
                "--healthz-port=8086",
                "--logtostderr",
                "--sync-period=600s",
                "--running-in-cluster=false",
                "--run-l4-netlb-controller=true",
                "--enable-l4ilb-dual-stack=true",
                "--enable-l4netlb-dual-stack=true",
                KCFG,
                "--leader-elect=true",
                "--v=2",
                "--run-l4-controller=false",
                "--run-ingress-controller=false",
                "--enable-negs-for-ingress=false",
            ],
            "env": [{"name": "GOOGLE_APPLICATION_CREDENTIALS", "value": "/srv/cloudprovider/credentialsConfig"}],
            "securityContext": {"allowPrivilegeEscalation": false},
            "livenessProbe": {"httpGet": {"path": "/healthz", "port": 8086, "scheme": "HTTP"}, "initialDelaySeconds": 30, "periodSeconds": 30, "timeoutSeconds": 15, "successThreshold": 1, "failureThreshold": 5},
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File",
            "resources": {"requests": {"cpu": "100m", "memory": "75Mi"}},
            "volumeMounts": [
                {"name": "cloud-provider-config-ingress-gce", "mountPath": "/etc/kubernetes/cloudprovider"},
                {"name": "cloudprovider", "mountPath": "/srv/cloudprovider", "readOnly": true},
                {"name": "kubeconfig", "mountPath": KCFG_DIR, "readOnly": true},
            ],
        }])
    );
    // It reuses the CCM's token.
    assert_eq!(
        spec["volumes"],
        json!([
            {"name": "cloud-provider-config-ingress-gce", "configMap": {"name": "cloud-provider-config-ingress-gce"}},
            static_cloudprovider_volume(),
            kubeconfig_volume("kubeconfig", "cloud-controller-manager"),
        ])
    );
    // The VPA is named ingress-gce (the template's name).
    assert_eq!(
        get(
            &r,
            Destination::Seed,
            "VerticalPodAutoscaler",
            "ingress-gce"
        )["spec"],
        json!({
            "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "ingress-gce"},
            "updatePolicy": {"updateMode": "InPlaceOrRecreate"},
            "resourcePolicy": {"containerPolicies": [{"containerName": "glbc", "controlledValues": "RequestsOnly", "controlledResources": ["memory"]}]},
        })
    );
    // Without a nodes subnet, no subnetwork line; the VPC falls back to the namespace.
    let mut cp = gcp_cp(None);
    cp.spec.infrastructure_provider_status =
        Some(json!({"networks": {"subnets": [{"purpose": "internal", "name": "internal-1"}]}}));
    let r = render(&cp, &dual, &gcp_wi_secret());
    let cm = get(
        &r,
        Destination::Configuration,
        "ConfigMap",
        "cloud-provider-config-ingress-gce",
    );
    assert_eq!(
        cm["data"]["cloudprovider.conf"],
        format!(
            "[Global]\nproject-id=\"wi-project\"\nnetwork-name=\"{NS}\"\nmultizone=true\nlocal-zone=\"europe-west1-b\"\ntoken-url=nil\nnode-tags=\"{NS}\"\n"
        )
    );
    let d = get(&r, Destination::Seed, "Deployment", "ingress-gce");
    assert_eq!(
        container(d, "glbc")["volumeMounts"][1]["mountPath"],
        "/var/run/secrets/gardener.cloud/workload-identity"
    );
    assert_eq!(pod_spec(d)["volumes"][1], wi_cloudprovider_volume());
}

// ---------------------------------------------------------------- shoot: node plugins

#[test]
fn the_node_plugin_daemonset_and_csidriver_are_upstreams() {
    let r = render_default(&gcp_shoot(34));
    let ds = get(&r, Destination::Shoot, "DaemonSet", "csi-driver-node");
    let labels = json!({"node.gardener.cloud/critical-component": "true", "app": "csi", "role": "disk-driver"});
    assert_eq!(ds["metadata"]["namespace"], "kube-system");
    assert_eq!(ds["metadata"]["labels"], labels);
    assert_eq!(
        ds["spec"]["selector"],
        json!({"matchLabels": {"app": "csi", "role": "disk-driver"}})
    );
    assert!(ds["spec"].get("updateStrategy").is_none());
    assert_eq!(
        ds["spec"]["template"]["metadata"],
        json!({"annotations": {"node.gardener.cloud/wait-for-csi-node-gcp": "pd.csi.storage.gke.io"}, "labels": labels})
    );
    let spec = pod_spec(ds);
    assert_eq!(spec["hostNetwork"], true);
    assert_eq!(spec["priorityClassName"], "system-node-critical");
    assert_eq!(spec["serviceAccountName"], "csi-driver-node");
    assert_eq!(
        spec["tolerations"],
        json!([{"effect": "NoSchedule", "operator": "Exists"}, {"key": "CriticalAddonsOnly", "operator": "Exists"}, {"effect": "NoExecute", "operator": "Exists"}])
    );
    assert_eq!(
        spec["securityContext"],
        json!({"seccompProfile": {"type": "RuntimeDefault"}})
    );
    assert_eq!(
        spec["containers"],
        json!([
            {
                "name": "csi-driver",
                "image": "registry.k8s.io/cloud-provider-gcp/gcp-compute-persistent-disk-csi-driver:v1.26.0",
                "args": ["--endpoint=$(CSI_ENDPOINT)", "--run-controller-service=false", "--maxprocs=2", "--logtostderr", "--v=5"],
                "env": [
                    {"name": "KUBE_NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                    {"name": "CSI_ENDPOINT", "value": "unix:/csi/csi.sock"},
                ],
                "resources": {"requests": {"memory": "50Mi"}},
                "securityContext": {"privileged": true, "readOnlyRootFilesystem": true},
                "ports": [{"name": "healthz", "containerPort": 9808, "protocol": "TCP"}],
                "livenessProbe": {"httpGet": {"path": "/healthz", "port": "healthz"}, "initialDelaySeconds": 10, "timeoutSeconds": 3, "periodSeconds": 10, "failureThreshold": 5},
                "volumeMounts": [
                    {"name": "kubelet-dir", "mountPath": "/var/lib/kubelet", "mountPropagation": "Bidirectional"},
                    {"name": "plugin-dir", "mountPath": "/csi"},
                    {"name": "device-dir", "mountPath": "/dev"},
                ],
            },
            {
                "name": "csi-node-driver-registrar",
                "image": "registry.k8s.io/sig-storage/csi-node-driver-registrar:v2.17.0",
                "args": ["--csi-address=$(ADDRESS)", "--kubelet-registration-path=$(DRIVER_REG_SOCK_PATH)", "--v=5"],
                "env": [
                    {"name": "ADDRESS", "value": "/csi/csi.sock"},
                    {"name": "DRIVER_REG_SOCK_PATH", "value": "/var/lib/kubelet/plugins/pd.csi.storage.gke.io/csi.sock"},
                    {"name": "GOMAXPROCS", "value": "2"},
                ],
                "resources": {"requests": {"memory": "32Mi"}},
                "securityContext": {"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true},
                "volumeMounts": [{"name": "plugin-dir", "mountPath": "/csi"}, {"name": "registration-dir", "mountPath": "/registration"}],
            },
            {
                "name": "csi-liveness-probe",
                "image": "registry.k8s.io/sig-storage/livenessprobe:v2.19.0",
                "args": ["--csi-address=/csi/csi.sock"],
                "env": [{"name": "GOMAXPROCS", "value": "2"}],
                "resources": {"requests": {"memory": "32Mi"}},
                "securityContext": {"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true},
                "volumeMounts": [{"name": "plugin-dir", "mountPath": "/csi"}],
            },
        ])
    );
    assert_eq!(
        spec["volumes"],
        json!([
            {"name": "kubelet-dir", "hostPath": {"path": "/var/lib/kubelet", "type": "Directory"}},
            {"name": "plugin-dir", "hostPath": {"path": "/var/lib/kubelet/plugins/pd.csi.storage.gke.io/", "type": "DirectoryOrCreate"}},
            {"name": "registration-dir", "hostPath": {"path": "/var/lib/kubelet/plugins_registry/", "type": "Directory"}},
            {"name": "device-dir", "hostPath": {"path": "/dev", "type": "Directory"}},
        ])
    );
    // The provisioner of the default class is the CSIDriver and the driver the
    // node plugin registers.
    let driver = get(&r, Destination::Shoot, "CSIDriver", "pd.csi.storage.gke.io");
    assert_eq!(
        driver,
        &json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": "pd.csi.storage.gke.io"}, "spec": {"attachRequired": true, "podInfoOnMount": false}})
    );
    assert_eq!(
        get(&r, Destination::StorageClasses, "StorageClass", "default")["provisioner"],
        "pd.csi.storage.gke.io"
    );
    assert_eq!(
        get(&r, Destination::Shoot, "ServiceAccount", "csi-driver-node"),
        &json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "csi-driver-node", "namespace": "kube-system"}, "automountServiceAccountToken": false})
    );
}

#[test]
fn the_shoot_rbac_is_upstreams() {
    let r = render_default(&gcp_shoot(34));
    let rule = |groups: &[&str], resources: &[&str], verbs: &[&str]| json!({"apiGroups": groups, "resources": resources, "verbs": verbs});
    let rw = ["get", "list", "watch", "update", "patch"];
    let events = ["list", "watch", "create", "update", "patch"];
    let cluster_roles = [
        (
            "csi-driver",
            vec![
                rule(&[""], &["nodes"], &["get", "list", "update"]),
                rule(&[""], &["namespaces"], &["get", "list"]),
                rule(&[""], &["persistentvolumes"], &rw),
                rule(&["storage.k8s.io"], &["volumeattachments"], &rw),
            ],
        ),
        (
            "csi-provisioner",
            vec![
                rule(
                    &[""],
                    &["persistentvolumes"],
                    &["get", "list", "watch", "create", "delete", "patch"],
                ),
                rule(
                    &[""],
                    &["persistentvolumeclaims"],
                    &["get", "list", "watch", "update"],
                ),
                rule(
                    &["storage.k8s.io"],
                    &["storageclasses"],
                    &["get", "list", "watch"],
                ),
                rule(
                    &["storage.k8s.io"],
                    &["volumeattributesclasses"],
                    &["get", "list", "watch"],
                ),
                rule(&[""], &["events"], &events),
                rule(
                    &["snapshot.storage.k8s.io"],
                    &["volumesnapshots"],
                    &["get", "list"],
                ),
                rule(
                    &["snapshot.storage.k8s.io"],
                    &["volumesnapshotcontents"],
                    &["get", "list"],
                ),
                rule(
                    &["storage.k8s.io"],
                    &["csinodes"],
                    &["get", "list", "watch"],
                ),
                rule(&[""], &["nodes"], &["get", "list", "watch"]),
                rule(
                    &["storage.k8s.io"],
                    &["volumeattachments"],
                    &["get", "list", "watch"],
                ),
            ],
        ),
        (
            "csi-attacher",
            vec![
                rule(&[""], &["persistentvolumes"], &rw),
                rule(&[""], &["nodes"], &rw),
                rule(
                    &["storage.k8s.io"],
                    &["csinodes"],
                    &["get", "list", "watch"],
                ),
                rule(&["storage.k8s.io"], &["volumeattachments"], &rw),
                rule(
                    &["storage.k8s.io"],
                    &["volumeattachments/status"],
                    &["patch"],
                ),
                rule(&[""], &["events"], &["create", "patch", "update"]),
            ],
        ),
        (
            "csi-resizer",
            vec![
                rule(&[""], &["persistentvolumes"], &rw),
                rule(
                    &[""],
                    &["persistentvolumeclaims"],
                    &["get", "list", "watch"],
                ),
                rule(
                    &[""],
                    &["persistentvolumeclaims/status"],
                    &["update", "patch"],
                ),
                rule(
                    &["storage.k8s.io"],
                    &["volumeattributesclasses"],
                    &["get", "list", "watch"],
                ),
                rule(&[""], &["events"], &events),
            ],
        ),
        (
            "csi-snapshotter",
            vec![
                rule(&[""], &["events"], &events),
                rule(&[""], &["secrets"], &["get", "list"]),
                rule(
                    &["snapshot.storage.k8s.io"],
                    &["volumesnapshotclasses"],
                    &["get", "list", "watch"],
                ),
                rule(
                    &["snapshot.storage.k8s.io"],
                    &["volumesnapshotcontents"],
                    &[
                        "create", "get", "list", "watch", "update", "patch", "delete",
                    ],
                ),
                rule(
                    &["snapshot.storage.k8s.io"],
                    &["volumesnapshotcontents/status"],
                    &["update", "patch"],
                ),
            ],
        ),
        (
            "csi-snapshot-controller",
            vec![
                rule(&[""], &["persistentvolumes"], &["get", "list", "watch"]),
                rule(
                    &[""],
                    &["persistentvolumeclaims"],
                    &["get", "list", "watch", "update"],
                ),
                rule(&[""], &["events"], &events),
                rule(
                    &["storage.k8s.io"],
                    &["storageclasses"],
                    &["get", "list", "watch"],
                ),
                rule(
                    &["snapshot.storage.k8s.io"],
                    &["volumesnapshotclasses"],
                    &["get", "list", "watch"],
                ),
                rule(
                    &["snapshot.storage.k8s.io"],
                    &["volumesnapshotcontents"],
                    &[
                        "create", "get", "list", "watch", "update", "delete", "patch",
                    ],
                ),
                rule(
                    &["snapshot.storage.k8s.io"],
                    &["volumesnapshotcontents/status"],
                    &["patch"],
                ),
                rule(
                    &["snapshot.storage.k8s.io"],
                    &["volumesnapshots"],
                    &["get", "list", "watch", "update", "patch"],
                ),
                rule(
                    &["snapshot.storage.k8s.io"],
                    &["volumesnapshots/status"],
                    &["update", "patch"],
                ),
            ],
        ),
    ];
    for (name, rules) in cluster_roles {
        let full = format!("{P}{name}");
        let role = get(&r, Destination::Shoot, "ClusterRole", &full);
        assert_eq!(role["rules"], json!(rules), "{name}");
        assert!(role["metadata"].get("namespace").is_none(), "{name}");
        let sa = if name == "csi-driver" {
            "csi-driver-node"
        } else {
            name
        };
        let binding = get(&r, Destination::Shoot, "ClusterRoleBinding", &full);
        assert_eq!(
            binding["roleRef"],
            json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": full})
        );
        assert_eq!(
            binding["subjects"],
            json!([{"kind": "ServiceAccount", "name": sa, "namespace": "kube-system"}])
        );
        if name == "csi-driver" {
            assert!(find(&r, Destination::Shoot, "Role", &full).is_none());
            continue;
        }
        let role = get(&r, Destination::Shoot, "Role", &full);
        assert_eq!(role["metadata"]["namespace"], "kube-system");
        assert_eq!(
            role["rules"],
            json!([rule(
                &["coordination.k8s.io"],
                &["leases"],
                &["get", "watch", "list", "delete", "update", "create"]
            )])
        );
        let binding = get(&r, Destination::Shoot, "RoleBinding", &full);
        assert_eq!(binding["metadata"]["namespace"], "kube-system");
        assert_eq!(
            binding["roleRef"],
            json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": full})
        );
        assert_eq!(
            binding["subjects"],
            json!([{"kind": "ServiceAccount", "name": name, "namespace": "kube-system"}])
        );
    }
    // The chart renders no ServiceAccounts for the sidecars (GRM's token
    // requestor creates them): only the node plugin's.
    let accounts: Vec<&str> = r
        .shoot
        .iter()
        .filter(|o| o.kind == "ServiceAccount")
        .map(|o| o.name.as_str())
        .collect();
    assert_eq!(accounts, ["csi-driver-node"]);
}

#[test]
fn the_filestore_node_objects_are_upstreams() {
    let r = render(
        &cp_with_storage(json!({"csiFilestore": {"enabled": true}})),
        &gcp_shoot(34),
        &gcp_static_secret(),
    );
    let ds = get(
        &r,
        Destination::Shoot,
        "DaemonSet",
        "csi-driver-filestore-node",
    );
    assert!(ds["metadata"].get("labels").is_none(), "no metadata.labels");
    let labels = json!({"node.gardener.cloud/critical-component": "true", "app": "csi", "role": "filestore-driver"});
    assert_eq!(ds["spec"]["selector"], json!({"matchLabels": labels}));
    assert_eq!(
        ds["spec"]["updateStrategy"],
        json!({"type": "RollingUpdate"})
    );
    assert_eq!(
        ds["spec"]["template"]["metadata"],
        json!({"annotations": {"node.gardener.cloud/wait-for-csi-node-gcp": "filestore.csi.storage.gke.io"}, "labels": labels})
    );
    let spec = pod_spec(ds);
    assert_eq!(spec["hostNetwork"], true);
    assert_eq!(spec["priorityClassName"], "system-node-critical");
    assert_eq!(spec["serviceAccountName"], "csi-driver-filestore-node-sa");
    assert_eq!(
        spec["securityContext"],
        json!({"seccompProfile": {"type": "RuntimeDefault"}})
    );
    assert_eq!(spec["tolerations"].as_array().map(Vec::len), Some(3));
    let image = "registry.k8s.io/cloud-provider-gcp/gcp-filestore-csi-driver:v1.12.0";
    assert_eq!(
        spec["containers"],
        json!([
            {
                "name": "csi-driver-filestore",
                "image": image,
                "args": ["--v=5", "--logtostderr", "--endpoint=$(CSI_ENDPOINT)", "--nodeid=$(KUBE_NODE_NAME)", "--node=true"],
                "env": [
                    {"name": "KUBE_NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                    {"name": "CSI_ENDPOINT", "value": "unix:/csi/csi.sock"},
                ],
                // No resources: upstream's misindented block does not reach the pods.
                "securityContext": {"privileged": true},
                "ports": [{"name": "healthz", "containerPort": 24913, "protocol": "TCP"}],
                "livenessProbe": {"httpGet": {"path": "/healthz", "port": "healthz"}, "initialDelaySeconds": 10, "timeoutSeconds": 3, "periodSeconds": 10, "failureThreshold": 5},
                "volumeMounts": [
                    {"name": "kubelet-dir", "mountPath": "/var/lib/kubelet", "mountPropagation": "Bidirectional"},
                    {"name": "plugin-dir", "mountPath": "/csi"},
                ],
            },
            {"name": "nfs-services", "image": image, "command": ["/nfs_services_start.sh"]},
            {
                "name": "csi-node-driver-registrar",
                "image": "registry.k8s.io/sig-storage/csi-node-driver-registrar:v2.17.0",
                "args": ["--csi-address=$(ADDRESS)", "--kubelet-registration-path=$(DRIVER_REG_SOCK_PATH)", "--v=5"],
                "env": [
                    {"name": "ADDRESS", "value": "/csi/csi.sock"},
                    {"name": "DRIVER_REG_SOCK_PATH", "value": "/var/lib/kubelet/plugins/filestore.csi.storage.gke.io/csi.sock"},
                    {"name": "GOMAXPROCS", "value": "2"},
                ],
                "resources": {"requests": {"memory": "32Mi"}},
                "securityContext": {"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true},
                "volumeMounts": [{"name": "plugin-dir", "mountPath": "/csi"}, {"name": "registration-dir", "mountPath": "/registration"}],
            },
            {
                "name": "csi-liveness-probe",
                "image": "registry.k8s.io/sig-storage/livenessprobe:v2.19.0",
                "args": ["--csi-address=/csi/csi.sock", "--health-port=24913"],
                "env": [{"name": "GOMAXPROCS", "value": "2"}],
                "resources": {"requests": {"memory": "32Mi"}},
                "securityContext": {"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true},
                "volumeMounts": [{"name": "plugin-dir", "mountPath": "/csi"}],
            },
        ])
    );
    assert_eq!(
        spec["volumes"],
        json!([
            {"name": "registration-dir", "hostPath": {"path": "/var/lib/kubelet/plugins_registry/", "type": "Directory"}},
            {"name": "kubelet-dir", "hostPath": {"path": "/var/lib/kubelet", "type": "Directory"}},
            {"name": "plugin-dir", "hostPath": {"path": "/var/lib/kubelet/plugins/filestore.csi.storage.gke.io/", "type": "DirectoryOrCreate"}},
        ])
    );
    assert_eq!(
        get(
            &r,
            Destination::Shoot,
            "CSIDriver",
            "filestore.csi.storage.gke.io"
        )["spec"],
        json!({"attachRequired": false, "podInfoOnMount": true})
    );
    assert_eq!(
        get(
            &r,
            Destination::Shoot,
            "ServiceAccount",
            "csi-driver-filestore-node-sa"
        )["automountServiceAccountToken"],
        false
    );
    let name = format!("{P}csi-driver-filestore");
    assert_eq!(
        get(&r, Destination::Shoot, "ClusterRole", &name)["rules"],
        get(
            &r,
            Destination::Shoot,
            "ClusterRole",
            &format!("{P}csi-driver")
        )["rules"],
        "the same rules as the PD node plugin's"
    );
    assert_eq!(
        get(&r, Destination::Shoot, "ClusterRoleBinding", &name)["subjects"],
        json!([{"kind": "ServiceAccount", "name": "csi-driver-filestore-node-sa", "namespace": "kube-system"}])
    );
}

// ---------------------------------------------------------------- shoot: calico policy

#[test]
fn the_calico_policy_follows_overlay_networking_and_the_kube_apiserver_bands() {
    let shoot = |minor: u64, overlay: bool, networking: &str, kapi: Option<Value>| {
        let mut s = gcp_shoot(minor);
        s.shoot.spec.networking.type_ = Some(networking.into());
        s.shoot.spec.networking.provider_config = Some(json!({"overlay": {"enabled": overlay}}));
        s.shoot.spec.kubernetes.kube_apiserver = kapi
            .map(|v| scion::gardener::cluster::KubeApiServer {
                feature_gates: v.get("featureGates").cloned(),
                runtime_config: v.get("runtimeConfig").cloned(),
            })
            .unwrap_or_default();
        s
    };
    let gate_and = |version: &str| {
        Some(
            json!({"featureGates": {"MutatingAdmissionPolicy": true}, "runtimeConfig": {format!("admissionregistration.k8s.io/{version}"): true}}),
        )
    };
    let version_of = |s: &ShootContext| -> Option<String> {
        let r = render_default(s);
        let policy = find(
            &r,
            Destination::Shoot,
            "MutatingAdmissionPolicy",
            "calico-mutating-admission-policy",
        );
        let binding = find(
            &r,
            Destination::Shoot,
            "MutatingAdmissionPolicyBinding",
            "block-calico-network-unavailable-binding",
        );
        assert_eq!(policy.is_some(), binding.is_some());
        let (policy, binding) = (policy?, binding?);
        assert_eq!(policy["apiVersion"], binding["apiVersion"]);
        assert_eq!(
            binding["spec"],
            json!({"policyName": "calico-mutating-admission-policy"})
        );
        Some(policy["apiVersion"].as_str()?.to_string())
    };
    let v = |s: &str| Some(format!("admissionregistration.k8s.io/{s}"));
    assert_eq!(version_of(&shoot(36, false, "calico", None)), v("v1"));
    assert_eq!(version_of(&shoot(37, false, "calico", None)), v("v1"));
    assert_eq!(
        version_of(&shoot(35, false, "calico", gate_and("v1beta1"))),
        v("v1beta1")
    );
    assert_eq!(
        version_of(&shoot(34, false, "calico", gate_and("v1beta1"))),
        v("v1beta1")
    );
    assert_eq!(
        version_of(&shoot(33, false, "calico", gate_and("v1alpha1"))),
        v("v1alpha1")
    );
    for (s, why) in [
        (shoot(36, true, "calico", None), "overlay on"),
        (shoot(36, false, "cilium", None), "not calico"),
        (shoot(35, false, "calico", None), "no gate"),
        (
            shoot(35, false, "calico", gate_and("v1alpha1")),
            "the wrong API version",
        ),
        (
            shoot(
                35,
                false,
                "calico",
                Some(json!({"featureGates": {"MutatingAdmissionPolicy": true}})),
            ),
            "no runtimeConfig",
        ),
        (
            shoot(
                35,
                false,
                "calico",
                Some(
                    json!({"featureGates": {"MutatingAdmissionPolicy": false}, "runtimeConfig": {"admissionregistration.k8s.io/v1beta1": true}}),
                ),
            ),
            "the gate off",
        ),
        (
            shoot(33, false, "calico", gate_and("v1beta1")),
            "below 1.34 it is v1alpha1",
        ),
    ] {
        assert_eq!(version_of(&s), None, "{why}");
    }
    // Overlay absent means enabled: no policy.
    let mut s = shoot(36, false, "calico", None);
    s.shoot.spec.networking.provider_config = None;
    assert_eq!(version_of(&s), None);

    let r = render_default(&shoot(36, false, "calico", None));
    let policy = get(
        &r,
        Destination::Shoot,
        "MutatingAdmissionPolicy",
        "calico-mutating-admission-policy",
    );
    assert!(policy["metadata"].get("namespace").is_none());
    assert_eq!(
        policy["spec"],
        json!({
            "failurePolicy": "Fail",
            "reinvocationPolicy": "IfNeeded",
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["UPDATE"], "resources": ["nodes/status"]}]},
            "matchConditions": [
                {"name": "is-calico-node", "expression": "request.userInfo.username == \"system:serviceaccount:kube-system:calico-node\""},
                {"name": "has-network-unavailable-in-request", "expression": "object.status.conditions.exists(c, c.type == 'NetworkUnavailable')"},
            ],
            "variables": [
                {"name": "oldNetworkUnavailableCondition", "expression": "has(oldObject.status) && has(oldObject.status.conditions) ?  oldObject.status.conditions.filter(c, c.type == 'NetworkUnavailable') : []"},
                {"name": "conditionsWithoutNetworkUnavailable", "expression": "object.status.conditions.filter(c, c.type != 'NetworkUnavailable')"},
                {"name": "finalConditions", "expression": "variables.oldNetworkUnavailableCondition.size() > 0 ? variables.conditionsWithoutNetworkUnavailable + variables.oldNetworkUnavailableCondition : variables.conditionsWithoutNetworkUnavailable"},
            ],
            "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": "[\n  JSONPatch{\n    op: \"replace\",\n    path: \"/status/conditions\",\n    value: variables.finalConditions\n  }\n]\n"}}],
        })
    );
}

// ---------------------------------------------------------------- storage classes

/// `name -> is default` of the rendered StorageClasses, in order.
fn classes(r: &Rendered) -> Vec<(String, bool)> {
    r.storage_classes
        .iter()
        .filter(|o| o.kind == "StorageClass")
        .map(|o| {
            (
                o.name.clone(),
                o.object["metadata"]["annotations"]["storageclass.kubernetes.io/is-default-class"]
                    == "true",
            )
        })
        .collect()
}

fn snapshot_class_default(r: &Rendered) -> bool {
    get(
        r,
        Destination::StorageClasses,
        "VolumeSnapshotClass",
        "default",
    )["metadata"]["annotations"]["snapshot.storage.kubernetes.io/is-default-class"]
        == "true"
}

fn with_storage(storage: Value) -> Rendered {
    render(
        &cp_with_storage(storage),
        &gcp_shoot(34),
        &gcp_static_secret(),
    )
}

#[test]
fn the_pd_classes_and_the_snapshot_class_are_upstreams() {
    let r = render_default(&gcp_shoot(34));
    for (name, disk) in [
        ("default", "pd-balanced"),
        ("gce-sc-hdd", "pd-standard"),
        ("gce-sc-fast", "pd-ssd"),
    ] {
        let mut annotations = json!({"resources.gardener.cloud/delete-on-invalid-update": "true"});
        if name == "default" {
            annotations["storageclass.kubernetes.io/is-default-class"] = json!("true");
        }
        assert_eq!(
            get(&r, Destination::StorageClasses, "StorageClass", name),
            &json!({
                "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                "metadata": {"name": name, "annotations": annotations},
                "allowVolumeExpansion": true,
                "provisioner": "pd.csi.storage.gke.io",
                "parameters": {"type": disk},
                "volumeBindingMode": "WaitForFirstConsumer",
            })
        );
    }
    assert_eq!(
        get(
            &r,
            Destination::StorageClasses,
            "VolumeSnapshotClass",
            "default"
        ),
        &json!({
            "apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshotClass",
            "metadata": {"name": "default", "annotations": {"snapshot.storage.kubernetes.io/is-default-class": "true"}},
            "driver": "pd.csi.storage.gke.io",
            "deletionPolicy": "Delete",
        })
    );
    assert_eq!(
        names(&r, Destination::StorageClasses),
        [
            "StorageClass/default",
            "StorageClass/gce-sc-hdd",
            "StorageClass/gce-sc-fast",
            "VolumeSnapshotClass/default"
        ]
    );
}

#[test]
fn the_default_class_follows_the_storage_options() {
    let defaults = |r: &Rendered| -> Vec<String> {
        classes(r)
            .into_iter()
            .filter(|(_, d)| *d)
            .map(|(n, _)| n)
            .collect()
    };
    assert_eq!(defaults(&with_storage(json!({}))), ["default"]);
    assert_eq!(
        defaults(&with_storage(json!({"managedDefaultStorageClass": true}))),
        ["default"]
    );
    assert_eq!(
        defaults(&with_storage(json!({"defaultStorageClass": "gce-sc-fast"}))),
        ["gce-sc-fast"]
    );
    // managedDefaultStorageClass false wins over defaultStorageClass.
    assert!(
        defaults(&with_storage(
            json!({"managedDefaultStorageClass": false, "defaultStorageClass": "gce-sc-fast"})
        ))
        .is_empty()
    );
    // A class that is not rendered: no default at all.
    assert!(
        defaults(&with_storage(
            json!({"defaultStorageClass": "gce-sc-hd-balanced"})
        ))
        .is_empty()
    );
    assert_eq!(
        defaults(&with_storage(json!({
            "defaultStorageClass": "gce-sc-hd-extreme",
            "hyperDiskExtreme": {"enabled": true, "provisionedIopsOnCreate": 5000},
        }))),
        ["gce-sc-hd-extreme"]
    );
    // An empty name: none.
    assert!(defaults(&with_storage(json!({"defaultStorageClass": ""}))).is_empty());

    assert!(snapshot_class_default(&with_storage(json!({}))));
    assert!(snapshot_class_default(&with_storage(
        json!({"managedDefaultVolumeSnapshotClass": true})
    )));
    let off = with_storage(json!({"managedDefaultVolumeSnapshotClass": false}));
    assert!(!snapshot_class_default(&off));
    assert!(
        get(
            &off,
            Destination::StorageClasses,
            "VolumeSnapshotClass",
            "default"
        )["metadata"]["annotations"]
            .as_object()
            .is_none_or(|a| a.is_empty())
    );
}

#[test]
fn the_hyperdisk_classes_exist_when_enabled_with_parameters() {
    let r = with_storage(json!({
        "hyperDiskBalanced": {"enabled": true, "provisionedIopsOnCreate": 3000, "provisionedThroughputOnCreate": "140Mi"},
        "hyperDiskThroughput": {"enabled": true, "provisionedThroughputOnCreate": "50Mi"},
        "hyperDiskExtreme": {"enabled": true, "provisionedIopsOnCreate": 5000},
    }));
    assert_eq!(
        classes(&r).into_iter().map(|(n, _)| n).collect::<Vec<_>>(),
        [
            "default",
            "gce-sc-hdd",
            "gce-sc-fast",
            "gce-sc-hd-balanced",
            "gce-sc-hd-throughput",
            "gce-sc-hd-extreme"
        ]
    );
    let class = |name: &str, parameters: Value| {
        json!({
            "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": name, "annotations": {"resources.gardener.cloud/delete-on-invalid-update": "true"}},
            "allowVolumeExpansion": true,
            "provisioner": "pd.csi.storage.gke.io",
            "parameters": parameters,
            "volumeBindingMode": "WaitForFirstConsumer",
        })
    };
    // Parameter values are quoted strings.
    assert_eq!(
        get(
            &r,
            Destination::StorageClasses,
            "StorageClass",
            "gce-sc-hd-balanced"
        ),
        &class(
            "gce-sc-hd-balanced",
            json!({"type": "hyperdisk-balanced", "provisioned-iops-on-create": "3000", "provisioned-throughput-on-create": "140Mi"})
        )
    );
    assert_eq!(
        get(
            &r,
            Destination::StorageClasses,
            "StorageClass",
            "gce-sc-hd-throughput"
        ),
        &class(
            "gce-sc-hd-throughput",
            json!({"type": "hyperdisk-throughput", "provisioned-throughput-on-create": "50Mi"})
        )
    );
    assert_eq!(
        get(
            &r,
            Destination::StorageClasses,
            "StorageClass",
            "gce-sc-hd-extreme"
        ),
        &class(
            "gce-sc-hd-extreme",
            json!({"type": "hyperdisk-extreme", "provisioned-iops-on-create": "5000"})
        )
    );

    // Disabled, or enabled without a parameter (an empty values map): no class.
    for storage in [
        json!({"hyperDiskBalanced": {"enabled": false, "provisionedIopsOnCreate": 3000}}),
        json!({"hyperDiskBalanced": {"enabled": true}}),
        json!({"hyperDiskThroughput": {"enabled": true}}),
        json!({"hyperDiskExtreme": {"enabled": true}}),
    ] {
        let names: Vec<String> = classes(&with_storage(storage.clone()))
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert_eq!(names, ["default", "gce-sc-hdd", "gce-sc-fast"], "{storage}");
    }
    // A parameter set to 0 or "" keeps the class (the values map is not empty)
    // but is not written (the chart's `if` is false for it); each class writes
    // only its own parameters.
    let r = with_storage(json!({
        "hyperDiskBalanced": {"enabled": true, "provisionedIopsOnCreate": 0, "provisionedThroughputOnCreate": "100Mi"},
        "hyperDiskThroughput": {"enabled": true, "provisionedIopsOnCreate": 100, "provisionedThroughputOnCreate": ""},
        "hyperDiskExtreme": {"enabled": true, "provisionedThroughputOnCreate": "100Mi"},
    }));
    assert_eq!(
        get(
            &r,
            Destination::StorageClasses,
            "StorageClass",
            "gce-sc-hd-balanced"
        )["parameters"],
        json!({"type": "hyperdisk-balanced", "provisioned-throughput-on-create": "100Mi"})
    );
    assert_eq!(
        get(
            &r,
            Destination::StorageClasses,
            "StorageClass",
            "gce-sc-hd-throughput"
        )["parameters"],
        json!({"type": "hyperdisk-throughput"})
    );
    assert_eq!(
        get(
            &r,
            Destination::StorageClasses,
            "StorageClass",
            "gce-sc-hd-extreme"
        )["parameters"],
        json!({"type": "hyperdisk-extreme"})
    );
}

#[test]
fn the_filestore_class_names_the_vpc() {
    let r = with_storage(json!({"csiFilestore": {"enabled": true}}));
    assert_eq!(
        get(
            &r,
            Destination::StorageClasses,
            "StorageClass",
            "csi-filestore"
        ),
        &json!({
            "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": "csi-filestore"},
            "provisioner": "filestore.csi.storage.gke.io",
            "parameters": {"network": "vpc-1234", "tier": "standard"},
            "allowVolumeExpansion": true,
        })
    );
    assert_eq!(
        names(&r, Destination::StorageClasses)
            .last()
            .map(String::as_str),
        Some("StorageClass/csi-filestore"),
        "after the VolumeSnapshotClass, as in the chart"
    );
}

// ---------------------------------------------------------------- shoot CRDs

#[test]
fn the_gke_networking_crds_are_in_the_shoot_crds() {
    let r = render_default(&gcp_shoot(34));
    for (name, kind, plural, singular) in [
        (
            "networks.networking.gke.io",
            "Network",
            "networks",
            "network",
        ),
        (
            "gkenetworkparamsets.networking.gke.io",
            "GKENetworkParamSet",
            "gkenetworkparamsets",
            "gkenetworkparamset",
        ),
    ] {
        let crd = get(&r, Destination::ShootCrds, "CustomResourceDefinition", name);
        assert_eq!(crd["apiVersion"], "apiextensions.k8s.io/v1");
        assert_eq!(
            crd["metadata"]["annotations"],
            json!({"controller-gen.kubebuilder.io/version": "v0.16.5"})
        );
        let spec = &crd["spec"];
        assert_eq!(spec["group"], "networking.gke.io");
        assert_eq!(spec["scope"], "Cluster");
        assert_eq!(
            spec["names"],
            json!({"kind": kind, "listKind": format!("{kind}List"), "plural": plural, "singular": singular})
        );
        let version = &spec["versions"][0];
        assert_eq!(spec["versions"].as_array().map(Vec::len), Some(1));
        assert_eq!(version["name"], "v1");
        assert_eq!(version["served"], true);
        assert_eq!(version["storage"], true);
        assert_eq!(version["subresources"], json!({"status": {}}));
        let status = &version["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"];
        assert_eq!(
            status["conditions"]["x-kubernetes-list-map-keys"],
            json!(["type"])
        );
        assert_eq!(
            status["conditions"]["items"]["required"],
            json!(["lastTransitionTime", "message", "reason", "status", "type"])
        );
    }
    let network = &get(
        &r,
        Destination::ShootCrds,
        "CustomResourceDefinition",
        "networks.networking.gke.io",
    )["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
    assert_eq!(network["required"], json!(["type"]));
    assert_eq!(
        network["properties"]["type"]["enum"],
        json!(["L2", "L3", "Device"])
    );
}

// ---------------------------------------------------------------- images, determinism

#[test]
fn every_image_resolves_for_every_supported_minor() {
    for minor in [32, 33, 34, 35, 36] {
        let r = render(
            &cp_with_storage(json!({"csiFilestore": {"enabled": true}})),
            &{
                let mut s = provider_shoot("gcp", "europe-west1", &["IPv4", "IPv6"], false);
                s.shoot.spec.kubernetes.version = Version::new(1, minor, 0);
                s
            },
            &gcp_static_secret(),
        );
        let mut images = Vec::new();
        for o in r.all() {
            let Some(spec) = o.object.pointer("/spec/template/spec") else {
                continue;
            };
            for c in spec["containers"].as_array().expect("containers") {
                images.push(c["image"].as_str().expect("image").to_string());
            }
        }
        // CCM, 6 PD controller, snapshot controller, 5 filestore controller,
        // glbc, 3 PD node, 4 filestore node.
        assert_eq!(images.len(), 1 + 6 + 1 + 5 + 1 + 3 + 4, "1.{minor}");
        assert!(images.iter().all(|i| i.contains(':')), "{images:?}");
    }
}

#[test]
fn imagevector_overwrite_replaces_the_csi_images() {
    let dir = tempfile::tempdir().expect("tempdir");
    let overwrite = dir.path().join("overwrite.yaml");
    std::fs::write(
        &overwrite,
        "images:\n- name: csi-provisioner\n  repository: registry.example.com/mirror/csi-provisioner\n  tag: v6.3.0-mirrored\n  targetVersion: '>= 1.34'\n- name: csi-driver\n  repository: registry.example.com/mirror/pd-csi\n  tag: v1.26.0\n",
    )
    .expect("write");
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let run = |overwrite: Option<&std::path::Path>| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_scion"));
        cmd.args([
            "render",
            "--provider",
            "gcp",
            "--controlplane",
            "shoot--dev--gcp/control-plane",
        ])
        .arg("--objects-dir")
        .arg(root.join("examples/objects/gcp"))
        .env_remove("IMAGEVECTOR_OVERWRITE");
        if let Some(path) = overwrite {
            cmd.env("IMAGEVECTOR_OVERWRITE", path);
        }
        let out = cmd.output().expect("scion render");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf-8")
    };
    let plain = run(None);
    let mirrored = run(Some(&overwrite));
    assert!(plain.contains("image: registry.k8s.io/sig-storage/csi-provisioner:v6.3.0\n"));
    assert!(!mirrored.contains("registry.k8s.io/sig-storage/csi-provisioner"));
    assert!(
        mirrored.contains("image: registry.example.com/mirror/csi-provisioner:v6.3.0-mirrored\n")
    );
    // Both the controller and the node plugin run the mirrored driver.
    assert_eq!(
        mirrored
            .matches("image: registry.example.com/mirror/pd-csi:v1.26.0\n")
            .count(),
        2
    );
    // `scion images` lists them.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_scion"))
        .args(["images", "--provider", "gcp", "--output", "list"])
        .env("IMAGEVECTOR_OVERWRITE", &overwrite)
        .output()
        .expect("scion images");
    let list = String::from_utf8(out.stdout).expect("utf-8");
    for image in [
        "registry.example.com/mirror/csi-provisioner:v6.3.0-mirrored",
        "registry.example.com/mirror/pd-csi:v1.26.0",
        "registry.k8s.io/sig-storage/csi-provisioner:v5.3.0",
        "registry.k8s.io/cloud-provider-gcp/gcp-filestore-csi-driver:v1.12.0",
        "registry.k8s.io/sig-storage/csi-attacher:v4.12.0",
        "registry.k8s.io/sig-storage/csi-snapshotter:v8.6.0",
        "registry.k8s.io/sig-storage/csi-resizer:v1.14.0",
        "registry.k8s.io/sig-storage/csi-resizer:v2.2.1",
        "registry.k8s.io/sig-storage/livenessprobe:v2.19.0",
        "registry.k8s.io/sig-storage/csi-node-driver-registrar:v2.17.0",
        "registry.k8s.io/sig-storage/snapshot-controller:v8.6.0",
        "europe-docker.pkg.dev/gardener-project/releases/gardener/extensions/ingress-gce:v1.38.2",
    ] {
        assert!(list.lines().any(|l| l == image), "{image} not in\n{list}");
    }
}

#[test]
fn rendering_is_deterministic_and_places_every_object() {
    let cp = cp_with_storage(json!({
        "csiFilestore": {"enabled": true},
        "hyperDiskBalanced": {"enabled": true, "provisionedIopsOnCreate": 3000, "provisionedThroughputOnCreate": "140Mi"},
    }));
    let mut s = provider_shoot("gcp", "europe-west1", &["IPv4", "IPv6"], false);
    s.shoot.spec.kubernetes.version = Version::new(1, 36, 0);
    s.shoot.spec.networking.type_ = Some("calico".into());
    s.shoot.spec.networking.provider_config = Some(json!({"overlay": {"enabled": false}}));
    let a = render(&cp, &s, &gcp_static_secret());
    let b = render(&cp, &s, &gcp_static_secret());
    assert_eq!(a, b);
    assert_eq!(
        names(&a, Destination::Seed),
        [
            "Service/cloud-controller-manager",
            "PodDisruptionBudget/cloud-controller-manager",
            "VerticalPodAutoscaler/cloud-controller-manager-vpa",
            "Deployment/cloud-controller-manager",
            "ServiceMonitor/shoot-cloud-controller-manager",
            "PrometheusRule/shoot-cloud-controller-manager",
            "ConfigMap/csi-driver-controller-config",
            "Deployment/csi-driver-controller",
            "VerticalPodAutoscaler/csi-driver-controller-vpa",
            "PodDisruptionBudget/csi-driver-controller",
            "Service/csi-driver-controller",
            "ServiceMonitor/shoot-csi-driver-controller",
            "Deployment/csi-snapshot-controller",
            "VerticalPodAutoscaler/csi-snapshot-controller-vpa",
            "PodDisruptionBudget/csi-snapshot-controller",
            "ConfigMap/csi-filestore-controller-config",
            "Deployment/csi-driver-filestore-controller",
            "VerticalPodAutoscaler/csi-driver-filestore-controller-vpa",
            "Deployment/ingress-gce",
            "VerticalPodAutoscaler/ingress-gce",
        ]
    );
    for o in a
        .of(Destination::Seed)
        .iter()
        .chain(a.of(Destination::Configuration))
    {
        assert_eq!(o.namespace, NS, "{}/{}", o.kind, o.name);
    }
    for o in a.of(Destination::Shoot) {
        let namespaced = !matches!(
            o.kind.as_str(),
            "ClusterRole"
                | "ClusterRoleBinding"
                | "CSIDriver"
                | "MutatingAdmissionPolicy"
                | "MutatingAdmissionPolicyBinding"
        );
        assert_eq!(
            o.namespace,
            if namespaced { "kube-system" } else { "" },
            "{}/{}",
            o.kind,
            o.name
        );
    }
    for o in a
        .of(Destination::StorageClasses)
        .iter()
        .chain(a.of(Destination::ShootCrds))
    {
        assert_eq!(o.namespace, "", "{}/{}", o.kind, o.name);
    }
}

// ---------------------------------------------------------------- health

#[test]
fn the_health_checks_cover_upstreams_seed_deployments() {
    use scion::profile::Facts;
    let spec = support::controller::builtin_spec("gcp").expect("gcp");
    // pkg/controller/healthcheck/add.go: the CCM, the PD controller and the
    // snapshot controller; ingress-gce only while dual-stack (its pre-check);
    // none for Filestore.
    // the Deployments checked for a shoot, as the health checks choose them
    let checked = |shoot: &ShootContext| -> Vec<String> {
        spec.health_checks()
            .into_iter()
            .filter(|d| {
                d.when
                    .as_ref()
                    .is_none_or(|c| c.eval(&Facts::of_shoot(shoot)).unwrap())
            })
            .map(|d| d.name)
            .collect()
    };
    let single = provider_shoot("gcp", "europe-west1", &["IPv4"], false);
    assert_eq!(
        checked(&single),
        [
            "cloud-controller-manager",
            "csi-driver-controller",
            "csi-snapshot-controller"
        ]
    );
    let dual = provider_shoot("gcp", "europe-west1", &["IPv4", "IPv6"], false);
    assert_eq!(
        checked(&dual),
        [
            "cloud-controller-manager",
            "csi-driver-controller",
            "csi-snapshot-controller",
            "ingress-gce"
        ]
    );
    // every Deployment that may be checked, for the RBAC and the caches
    assert_eq!(spec.health_deployments().len(), 4);
}
