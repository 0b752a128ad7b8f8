//! Azure's CSI drivers, remedy controller, allow-egress Services and storage
//! classes as `src/render` renders them from `src/providers/azure/components`:
//! hand-written expectations from the reference facts (gardener-csi.md,
//! "Azure"; provider-azure's charts and values provider), not snapshots of
//! scion's output. Each test names the fact it checks.

mod support;

use support::render::*;

use std::collections::BTreeMap;

use scion::gardener::ShootContext;
use scion::render::Rendered;
use serde_json::{Value, json};
use support::controller::providers::*;
use support::controller::{NS, object, render_builtin, render_builtin_gated};

const KCFG: &str = "/var/run/secrets/gardener.cloud/shoot/generic-kubeconfig/kubeconfig";
const KCFG_DIR: &str = "/var/run/secrets/gardener.cloud/shoot/generic-kubeconfig";
const GTK: &str = "generic-token-kubeconfig-92e9ae14";
const SOCK: &str = "/var/lib/csi/sockets/pluginproxy";
const P: &str = "extensions.gardener.cloud:provider-azure:";
const ANNOTATION: &str = "azure.provider.extensions.gardener.cloud/";

fn render(cp: &scion::gardener::ControlPlane, shoot: &ShootContext) -> Rendered {
    render_builtin(cp, shoot, Some(&azure_static_secret()), Some(1)).expect("renders")
}

fn default_render() -> Rendered {
    render(&azure_cp(json!({})), &azure_shoot(&["IPv4"], false))
}

fn annotated(pairs: &[(&str, &str)]) -> ShootContext {
    let mut s = azure_shoot(&["IPv4"], false);
    for (k, v) in pairs {
        s.shoot
            .metadata
            .annotations
            .insert(format!("{ANNOTATION}{k}"), v.to_string());
    }
    s
}

fn pod(r: &Rendered, kind: &str, name: &str) -> Value {
    object(r, kind, name)["spec"]["template"].clone()
}

fn container(r: &Rendered, kind: &str, name: &str, container: &str) -> Value {
    pod(r, kind, name)["spec"]["containers"]
        .as_array()
        .expect("containers")
        .iter()
        .find(|c| c["name"] == container)
        .unwrap_or_else(|| panic!("{name}: no container {container}"))
        .clone()
}

fn args(r: &Rendered, kind: &str, name: &str, c: &str) -> Vec<String> {
    strings(&container(r, kind, name, c)["args"])
}

fn has(r: &Rendered, kind: &str, name: &str) -> bool {
    r.all().iter().any(|o| o.kind == kind && o.name == name)
}

/// Gardener's `ComputeChecksum` of a Secret with one key `cloudprovider.conf`.
fn checksum_of_conf(text: &str) -> String {
    let data: BTreeMap<String, Vec<u8>> =
        [("cloudprovider.conf".to_string(), text.as_bytes().to_vec())].into();
    scion::checksum::secret_checksum(Some(&data))
}

fn decoded(r: &Rendered, name: &str) -> String {
    use base64::Engine as _;
    let secret = r
        .config
        .iter()
        .find(|o| o.kind == "Secret" && o.name == name)
        .unwrap_or_else(|| panic!("config Secret {name}"));
    let b64 = secret.object["data"]["cloudprovider.conf"]
        .as_str()
        .expect("key");
    String::from_utf8(
        base64::engine::general_purpose::STANDARD
            .decode(b64)
            .expect("base64"),
    )
    .expect("utf-8")
}

/// provider-azure's `cloud-provider-disk-config` for the fixture: the base lines,
/// then the subscription and `useInstanceMetadata`, no AAD credentials.
const DISK_CONFIG: &str = r#"cloud: "AZUREPUBLICCLOUD"
location: "westeurope"
resourceGroup: "rg-1234"
routeTableName: "route-table"
securityGroupName: "sec-groups"
subnetName: "subnet-acbd1234"
vnetName: "vnet-1234"
loadBalancerSku: "standard"
vmType: "standard"
cloudProviderBackoff: true
cloudProviderBackoffRetries: 6
cloudProviderBackoffExponent: 1.5
cloudProviderBackoffDuration: 5
cloudProviderBackoffJitter: 1.0
cloudProviderRateLimit: true
cloudProviderRateLimitQPS: 120
cloudProviderRateLimitBucket: 120
cloudProviderRateLimitQPSWrite: 120
cloudProviderRateLimitBucketWrite: 120
tenantId: "tenant-1"
subscriptionId: "subscription-1"
useInstanceMetadata: true"#;

#[test]
fn the_checksum_is_gardeners_compute_checksum() {
    // The upstream test fixture: data {"cloudprovider.conf": "foo"}.
    assert_eq!(
        checksum_of_conf("foo"),
        "77627eb2343b9f2dc2fca3cce35f2f9eec55783aa5f7dac21c473019e5825de2"
    );
}

#[test]
fn shoot_access_secrets_are_upstreams_nine() {
    let r = default_render();
    let got: Vec<&str> = r.access_secrets.iter().map(|o| o.name.as_str()).collect();
    assert_eq!(
        got,
        [
            "shoot-access-cloud-controller-manager",
            "shoot-access-csi-driver-controller-disk",
            "shoot-access-csi-driver-controller-file",
            "shoot-access-csi-provisioner",
            "shoot-access-csi-attacher",
            "shoot-access-csi-snapshotter",
            "shoot-access-csi-resizer",
            "shoot-access-csi-snapshot-controller",
            "shoot-access-remedy-controller-azure",
        ]
    );
    let s = &r.access_secrets[3].object;
    assert_eq!(
        s["metadata"]["labels"],
        json!({"resources.gardener.cloud/purpose": "token-requestor", "resources.gardener.cloud/class": "shoot"})
    );
    assert_eq!(
        s["metadata"]["annotations"],
        json!({"serviceaccount.resources.gardener.cloud/name": "csi-provisioner", "serviceaccount.resources.gardener.cloud/namespace": "kube-system"})
    );
    // Always, also with the remedy controller disabled.
    let off = render(
        &azure_cp(json!({})),
        &annotated(&[("disable-remedy-controller", "true")]),
    );
    assert_eq!(off.access_secrets.len(), 9);
}

#[test]
fn the_disk_config_secret_has_no_credentials_and_the_shoot_configmap_copies_it() {
    let r = default_render();
    assert_eq!(decoded(&r, "cloud-provider-disk-config"), DISK_CONFIG);
    let cm = r
        .shoot
        .iter()
        .find(|o| o.kind == "ConfigMap" && o.name == "cloud-provider-disk-config")
        .expect("shoot ConfigMap");
    assert_eq!(cm.namespace, "kube-system");
    // A block scalar in the chart: one newline more.
    assert_eq!(
        cm.object["data"],
        json!({"cloudprovider.conf": format!("{DISK_CONFIG}\n")})
    );
    // The CCM's config keeps its credentials, first.
    assert!(decoded(&r, "cloud-provider-config").starts_with(
        "aadClientId: \"client-id-1\"\naadClientSecret: \"client-secret-1\"\ntenantId: \"tenant-1\"\nsubscriptionId: \"subscription-1\"\ncloud: \"AZUREPUBLICCLOUD\"\n"
    ));
    // Not zoned: VM scale sets.
    let vmss = render(
        &azure_cp(json!({"zoned": false})),
        &azure_shoot(&["IPv4"], false),
    );
    assert!(decoded(&vmss, "cloud-provider-disk-config").contains("\nvmType: \"vmss\"\n"));
    // Workload identity: the ids come from `config`, still no credentials.
    let wi = render_builtin(
        &azure_cp(json!({})),
        &azure_shoot(&["IPv4"], false),
        Some(&azure_wi_secret()),
        Some(1),
    )
    .expect("renders");
    let text = decoded(&wi, "cloud-provider-disk-config");
    assert!(
        text.ends_with(
            "tenantId: \"wi-tenant\"\nsubscriptionId: \"wi-subscription\"\nuseInstanceMetadata: true"
        ),
        "{text}"
    );
    assert!(!text.contains("aad"), "{text}");
}

#[test]
fn controller_deployments_are_upstreams_per_role() {
    let r = default_render();
    let sum = checksum_of_conf(&decoded(&r, "cloud-provider-config"));
    for role in ["disk", "file"] {
        let name = format!("csi-driver-controller-{role}");
        let d = object(&r, "Deployment", &name);
        assert_eq!(
            d["metadata"]["labels"],
            json!({"app": "csi", "role": format!("controller-{role}")}),
            "no HA label on the Deployment"
        );
        assert_eq!(d["spec"]["replicas"], json!(1));
        assert_eq!(d["spec"]["revisionHistoryLimit"], json!(1));
        assert_eq!(
            d["spec"]["selector"],
            json!({"matchLabels": {"app": "csi", "role": format!("controller-{role}")}})
        );
        assert_eq!(
            d["spec"]["strategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}})
        );
        let p = &d["spec"]["template"];
        assert_eq!(
            p["metadata"]["annotations"],
            json!({"checksum/secret-cloud-provider-config": sum})
        );
        assert_eq!(
            p["metadata"]["labels"],
            json!({
                "app": "csi",
                "role": format!("controller-{role}"),
                "gardener.cloud/role": "controlplane",
                "high-availability-config.resources.gardener.cloud/type": "controller",
                "networking.gardener.cloud/to-dns": "allowed",
                "networking.gardener.cloud/to-public-networks": "allowed",
                "networking.resources.gardener.cloud/to-kube-apiserver-tcp-443": "allowed",
            })
        );
        assert_eq!(p["spec"]["automountServiceAccountToken"], json!(false));
        assert_eq!(p["spec"]["priorityClassName"], json!("gardener-system-300"));
        assert_eq!(
            names(&p["spec"]["containers"]),
            [
                "azure-csi-driver",
                "azure-csi-provisioner",
                "azure-csi-attacher",
                "azure-csi-snapshotter",
                "azure-csi-resizer",
                "azure-csi-liveness-probe"
            ]
        );
        for c in p["spec"]["containers"].as_array().expect("containers") {
            assert_eq!(
                c["securityContext"],
                json!({"allowPrivilegeEscalation": false})
            );
        }
        assert_eq!(
            names(&p["spec"]["volumes"]),
            [
                "socket-dir".to_string(),
                "cloud-provider-config".into(),
                format!("kubeconfig-csi-driver-controller-{role}"),
                "kubeconfig-csi-attacher".into(),
                "kubeconfig-csi-provisioner".into(),
                "kubeconfig-csi-snapshotter".into(),
                "kubeconfig-csi-resizer".into(),
            ]
        );
        let volumes = p["spec"]["volumes"].as_array().expect("volumes");
        assert_eq!(volumes[0], json!({"name": "socket-dir", "emptyDir": {}}));
        assert_eq!(
            volumes[1],
            json!({"name": "cloud-provider-config", "secret": {"secretName": "cloud-provider-config"}})
        );
        for (volume, sa) in volumes[2..].iter().zip([
            format!("csi-driver-controller-{role}"),
            "csi-attacher".into(),
            "csi-provisioner".into(),
            "csi-snapshotter".into(),
            "csi-resizer".into(),
        ]) {
            assert_eq!(
                volume["projected"],
                json!({"defaultMode": 420, "sources": [
                    {"secret": {"items": [{"key": "kubeconfig", "path": "kubeconfig"}], "name": GTK, "optional": false}},
                    {"secret": {"items": [{"key": "token", "path": "token"}], "name": format!("shoot-access-{sa}"), "optional": false}},
                ]})
            );
        }

        let driver = container(&r, "Deployment", &name, "azure-csi-driver");
        let image = if role == "disk" {
            "mcr.microsoft.com/oss/v2/kubernetes-csi/azuredisk-csi:v1.34.4"
        } else {
            "mcr.microsoft.com/oss/v2/kubernetes-csi/azurefile-csi:v1.35.4"
        };
        assert_eq!(driver["image"], json!(image));
        assert_eq!(driver["imagePullPolicy"], json!("IfNotPresent"));
        let want: Vec<String> = if role == "disk" {
            vec![
                "--endpoint=$(CSI_ENDPOINT)".into(),
                format!("--kubeconfig={KCFG}"),
                "--kube-api-qps=100".into(),
                "--kube-api-burst=200".into(),
                "--v=5".into(),
            ]
        } else {
            vec![
                "--endpoint=$(CSI_ENDPOINT)".into(),
                "--nodeid=dummy".into(),
                format!("--kubeconfig={KCFG}"),
                "--kube-api-qps=100".into(),
                "--kube-api-burst=200".into(),
                "--v=5".into(),
            ]
        };
        assert_eq!(
            strings(&driver["args"]),
            want,
            "{role}: zoned, no annotations"
        );
        assert_eq!(
            driver["env"],
            json!([
                {"name": "CSI_ENDPOINT", "value": format!("unix://{SOCK}/csi.sock")},
                {"name": "AZURE_CREDENTIAL_FILE", "value": "/etc/kubernetes/cloudprovider/cloudprovider.conf"},
            ])
        );
        assert_eq!(driver["resources"], json!({"requests": {"memory": "50Mi"}}));
        assert_eq!(
            driver["ports"],
            json!([{"name": "healthz", "containerPort": 9808, "protocol": "TCP"}])
        );
        assert_eq!(
            driver["livenessProbe"],
            json!({"failureThreshold": 5, "httpGet": {"path": "/healthz", "port": "healthz", "scheme": "HTTP"}, "initialDelaySeconds": 10, "periodSeconds": 10, "successThreshold": 1, "timeoutSeconds": 3})
        );
        assert_eq!(
            driver["volumeMounts"],
            json!([
                {"name": "socket-dir", "mountPath": SOCK},
                {"mountPath": KCFG_DIR, "name": format!("kubeconfig-csi-driver-controller-{role}"), "readOnly": true},
                {"name": "cloud-provider-config", "mountPath": "/etc/kubernetes/cloudprovider"},
            ])
        );

        let mut provisioner: Vec<String> = vec![
            "--csi-address=$(ADDRESS)".into(),
            "--feature-gates=Topology=true".into(),
            "--leader-election=true".into(),
            "--leader-election-namespace=kube-system".into(),
            format!("--kubeconfig={KCFG}"),
            "--timeout=120s".into(),
            format!("--volume-name-prefix=pv-{NS}"),
            "--default-fstype=ext4".into(),
            "--extra-create-metadata=true".into(),
            "--kube-api-qps=100".into(),
            "--kube-api-burst=200".into(),
            "--v=5".into(),
        ];
        if role == "disk" {
            provisioner.push("--strict-topology".into());
        }
        assert_eq!(
            args(&r, "Deployment", &name, "azure-csi-provisioner"),
            provisioner
        );
        assert_eq!(
            args(&r, "Deployment", &name, "azure-csi-attacher"),
            [
                "--csi-address=$(ADDRESS)".to_string(),
                format!("--kubeconfig={KCFG}"),
                "--leader-election".into(),
                "--leader-election-namespace=kube-system".into(),
                "--v=5".into(),
                "--timeout=1200s".into(),
                "--worker-threads=500".into(),
                "--kube-api-qps=100".into(),
                "--kube-api-burst=200".into(),
            ]
        );
        assert_eq!(
            args(&r, "Deployment", &name, "azure-csi-snapshotter"),
            [
                "--csi-address=$(CSI_ENDPOINT)".to_string(),
                format!("--kubeconfig={KCFG}"),
                "--leader-election".into(),
                "--leader-election-namespace=kube-system".into(),
                format!("--snapshot-name-prefix={NS}"),
                "--kube-api-qps=100".into(),
                "--kube-api-burst=200".into(),
            ]
        );
        assert_eq!(
            args(&r, "Deployment", &name, "azure-csi-resizer"),
            [
                "--csi-address=$(ADDRESS)".to_string(),
                format!("--kubeconfig={KCFG}"),
                "--leader-election=true".into(),
                "--leader-election-namespace=kube-system".into(),
                "--kube-api-qps=100".into(),
                "--kube-api-burst=200".into(),
                "--v=5".into(),
                "--handle-volume-inuse-error=false".into(),
            ]
        );
        for (c, env, memory, sa) in [
            (
                "azure-csi-provisioner",
                "ADDRESS",
                "40Mi",
                "csi-provisioner",
            ),
            ("azure-csi-attacher", "ADDRESS", "40Mi", "csi-attacher"),
            (
                "azure-csi-snapshotter",
                "CSI_ENDPOINT",
                "60Mi",
                "csi-snapshotter",
            ),
            ("azure-csi-resizer", "ADDRESS", "50Mi", "csi-resizer"),
        ] {
            let c = container(&r, "Deployment", &name, c);
            assert_eq!(
                c["env"],
                json!([{"name": env, "value": format!("{SOCK}/csi.sock")}])
            );
            assert_eq!(c["resources"], json!({"requests": {"memory": memory}}));
            assert_eq!(c["imagePullPolicy"], json!("IfNotPresent"));
            assert_eq!(
                c["volumeMounts"],
                json!([
                    {"name": "socket-dir", "mountPath": SOCK},
                    {"mountPath": KCFG_DIR, "name": format!("kubeconfig-{sa}"), "readOnly": true},
                ])
            );
        }
        let probe = container(&r, "Deployment", &name, "azure-csi-liveness-probe");
        assert_eq!(probe["args"], json!(["--csi-address=/csi/csi.sock"]));
        assert_eq!(probe["resources"], json!({"requests": {"memory": "40Mi"}}));
        assert_eq!(
            probe["volumeMounts"],
            json!([{"name": "socket-dir", "mountPath": "/csi"}])
        );
        assert_eq!(
            probe["image"],
            json!("registry.k8s.io/sig-storage/livenessprobe:v2.19.0")
        );

        let vpa = object(&r, "VerticalPodAutoscaler", &format!("{name}-vpa"));
        let policy = |c: &str| json!({"containerName": c, "controlledValues": "RequestsOnly", "controlledResources": ["memory"]});
        assert_eq!(
            vpa["spec"],
            json!({
                "resourcePolicy": {"containerPolicies": [
                    policy("azure-csi-driver"), policy("azure-csi-provisioner"), policy("azure-csi-attacher"),
                    policy("azure-csi-snapshotter"), policy("azure-csi-resizer"), policy("azure-csi-liveness-probe"),
                ]},
                "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
                "updatePolicy": {"updateMode": "Recreate"},
            })
        );
        let pdb = object(&r, "PodDisruptionBudget", &name);
        assert_eq!(
            pdb["metadata"]["labels"],
            json!({"app": "csi", "role": format!("controller-{role}")})
        );
        assert_eq!(
            pdb["spec"],
            json!({"maxUnavailable": 1, "selector": {"matchLabels": {"app": "csi", "role": format!("controller-{role}")}}, "unhealthyPodEvictionPolicy": "AlwaysAllow"})
        );
    }
    // No Service or ServiceMonitor for azure's CSI controllers.
    assert!(
        !r.seed
            .iter()
            .any(|o| o.kind == "Service" && o.name.starts_with("csi-"))
    );
    assert!(
        !r.seed
            .iter()
            .any(|o| o.kind == "ServiceMonitor" && o.name.contains("csi"))
    );
}

#[test]
fn vm_scale_sets_and_the_caching_mode_annotation_add_disk_flags_only() {
    let r = render(
        &azure_cp(json!({"zoned": false})),
        &annotated(&[("convert-rw-caching-mode-for-intree-pv", "True")]),
    );
    assert_eq!(
        args(
            &r,
            "Deployment",
            "csi-driver-controller-disk",
            "azure-csi-driver"
        ),
        [
            "--endpoint=$(CSI_ENDPOINT)".to_string(),
            format!("--kubeconfig={KCFG}"),
            "--disable-avset-nodes=false".into(),
            "--convert-rw-caching-mode-for-intree-pv=true".into(),
            "--kube-api-qps=100".into(),
            "--kube-api-burst=200".into(),
            "--v=5".into(),
        ]
    );
    let file = args(
        &r,
        "Deployment",
        "csi-driver-controller-file",
        "azure-csi-driver",
    );
    assert!(
        !file
            .iter()
            .any(|a| a.starts_with("--disable-avset") || a.starts_with("--convert"))
    );
    // ParseBool: "no" is not true.
    let r = render(
        &azure_cp(json!({})),
        &annotated(&[("convert-rw-caching-mode-for-intree-pv", "no")]),
    );
    assert!(
        !args(
            &r,
            "Deployment",
            "csi-driver-controller-disk",
            "azure-csi-driver"
        )
        .iter()
        .any(|a| a.starts_with("--convert"))
    );
}

#[test]
fn volume_attributes_class_gates_only_below_1_34_with_the_annotation() {
    const GATE: &str = "--feature-gates=VolumeAttributesClass=true,";
    let on = render(
        &azure_cp(json!({})),
        &with_version(annotated(&[("enable-volume-attributes-class", "true")]), 33),
    );
    for role in ["disk", "file"] {
        let name = format!("csi-driver-controller-{role}");
        let p = args(&on, "Deployment", &name, "azure-csi-provisioner");
        // Two --feature-gates flags: Topology, then the gate after --extra-create-metadata.
        assert_eq!(p[1], "--feature-gates=Topology=true");
        assert_eq!(p[8], "--extra-create-metadata=true");
        assert_eq!(p[9], GATE);
        assert_eq!(p[10], "--kube-api-qps=100");
        let rz = args(&on, "Deployment", &name, "azure-csi-resizer");
        assert_eq!(rz.last().map(String::as_str), Some(GATE), "{role}");
    }
    for shoot in [
        with_version(annotated(&[("enable-volume-attributes-class", "true")]), 34),
        with_version(
            annotated(&[("enable-volume-attributes-class", "false")]),
            33,
        ),
        with_version(azure_shoot(&["IPv4"], false), 33),
    ] {
        let r = render(&azure_cp(json!({})), &shoot);
        for c in ["azure-csi-provisioner", "azure-csi-resizer"] {
            assert!(
                !args(&r, "Deployment", "csi-driver-controller-disk", c)
                    .contains(&GATE.to_string())
            );
        }
    }
}

#[test]
fn workload_identity_mounts_the_token_on_the_drivers_and_the_remedy_controller() {
    let r = render_builtin(
        &azure_cp(json!({})),
        &azure_shoot(&["IPv4"], false),
        Some(&azure_wi_secret()),
        Some(1),
    )
    .expect("renders");
    let token = json!({"name": "cloudprovider", "projected": {"defaultMode": 420, "sources": [
        {"secret": {"items": [{"key": "token", "path": "token"}], "name": "cloudprovider", "optional": false}},
    ]}});
    let mount = json!({"name": "cloudprovider", "mountPath": "/var/run/secrets/gardener.cloud/workload-identity", "readOnly": true});
    for role in ["disk", "file"] {
        let name = format!("csi-driver-controller-{role}");
        let p = pod(&r, "Deployment", &name);
        assert_eq!(
            p["spec"]["volumes"][2], token,
            "after cloud-provider-config"
        );
        assert_eq!(
            container(&r, "Deployment", &name, "azure-csi-driver")["volumeMounts"][2],
            mount
        );
        // Only the driver reads the cloud.
        assert_eq!(
            container(&r, "Deployment", &name, "azure-csi-provisioner")["volumeMounts"]
                .as_array()
                .map(Vec::len),
            Some(2)
        );
    }
    let remedy = pod(&r, "Deployment", "remedy-controller-azure");
    assert_eq!(remedy["spec"]["volumes"][3], token);
    assert_eq!(remedy["spec"]["containers"][0]["volumeMounts"][0], mount);
}

#[test]
fn the_snapshot_controller_is_upstreams() {
    let r = default_render();
    let d = object(&r, "Deployment", "csi-snapshot-controller");
    assert_eq!(
        d["metadata"]["labels"],
        json!({"app": "csi-snapshot-controller", "role": "controller", "high-availability-config.resources.gardener.cloud/type": "controller"})
    );
    assert_eq!(d["spec"]["replicas"], json!(1));
    assert_eq!(d["spec"]["revisionHistoryLimit"], json!(1));
    let p = &d["spec"]["template"];
    assert!(
        p["metadata"].get("annotations").is_none(),
        "none: an empty key upstream"
    );
    assert_eq!(
        p["metadata"]["labels"],
        json!({
            "app": "csi-snapshot-controller",
            "role": "controller",
            "networking.gardener.cloud/to-dns": "allowed",
            "networking.gardener.cloud/to-public-networks": "allowed",
            "networking.resources.gardener.cloud/to-kube-apiserver-tcp-443": "allowed",
        })
    );
    assert_eq!(p["spec"]["priorityClassName"], json!("gardener-system-200"));
    assert_eq!(p["spec"]["automountServiceAccountToken"], json!(false));
    let c = container(
        &r,
        "Deployment",
        "csi-snapshot-controller",
        "azure-csi-snapshot-controller",
    );
    assert_eq!(
        c["image"],
        json!("registry.k8s.io/sig-storage/snapshot-controller:v8.6.0")
    );
    assert_eq!(
        strings(&c["args"]),
        [
            format!("--kubeconfig={KCFG}"),
            "--leader-election=true".into(),
            "--leader-election-namespace=kube-system".into(),
            "--kube-api-qps=100".into(),
            "--kube-api-burst=200".into(),
        ]
    );
    assert_eq!(c["resources"], json!({"requests": {"memory": "32Mi"}}));
    assert_eq!(
        c["volumeMounts"],
        json!([{"mountPath": KCFG_DIR, "name": "kubeconfig", "readOnly": true}])
    );
    assert_eq!(
        p["spec"]["volumes"][0]["projected"]["sources"][1]["secret"]["name"],
        json!("shoot-access-csi-snapshot-controller")
    );
    assert_eq!(
        object(&r, "VerticalPodAutoscaler", "csi-snapshot-controller-vpa")["spec"]["resourcePolicy"],
        json!({"containerPolicies": [{"containerName": "azure-csi-snapshot-controller", "controlledValues": "RequestsOnly", "controlledResources": ["memory"]}]})
    );
    assert_eq!(
        object(&r, "PodDisruptionBudget", "csi-snapshot-controller")["spec"],
        json!({"maxUnavailable": 1, "selector": {"matchLabels": {"app": "csi-snapshot-controller", "role": "controller"}}, "unhealthyPodEvictionPolicy": "AlwaysAllow"})
    );
}

#[test]
fn hibernation_scales_every_controller_to_zero_as_the_ccm() {
    let cp = azure_cp(json!({}));
    let down = render_builtin(
        &cp,
        &azure_shoot(&["IPv4"], true),
        Some(&azure_static_secret()),
        Some(0),
    )
    .expect("renders");
    for name in [
        "cloud-controller-manager",
        "csi-driver-controller-disk",
        "csi-driver-controller-file",
        "csi-snapshot-controller",
        "remedy-controller-azure",
    ] {
        assert_eq!(
            object(&down, "Deployment", name)["spec"]["replicas"],
            json!(0),
            "{name}"
        );
    }
    assert!(
        !has(&down, "PrometheusRule", "shoot-remedy-controller-azure"),
        "only while replicas > 0"
    );
    // Hibernating, kube-apiserver still up: everything keeps running.
    let up = render_builtin(
        &cp,
        &azure_shoot(&["IPv4"], true),
        Some(&azure_static_secret()),
        Some(1),
    )
    .expect("renders");
    assert_eq!(
        object(&up, "Deployment", "csi-driver-controller-disk")["spec"]["replicas"],
        json!(1)
    );
    assert!(has(&up, "PrometheusRule", "shoot-remedy-controller-azure"));
}

/// The rendered `configmap.yaml` of the remedy chart for the shoot namespace,
/// whose sha256 is the pod annotation.
fn remedy_configmap_manifest() -> String {
    format!(
        "apiVersion: v1
kind: ConfigMap
metadata:
  name: remedy-controller-azure-config
  namespace: {NS}
data:
  config.yaml: |
    ---
    apiVersion: remedy.config.gardener.cloud/v1alpha1
    kind: ControllerConfiguration
    clientConnection:
      acceptContentTypes: application/json
      contentType: application/json
      qps: 100
      burst: 130
    azure:
      orphanedPublicIPRemedy:
        requeueInterval: 1m
        syncPeriod: 10h
        deletionGracePeriod: 5m
        maxGetAttempts: 5
        maxCleanAttempts: 5
      failedVMRemedy:
        requeueInterval: 1m
        syncPeriod: 2h
        maxGetAttempts: 5
        maxReapplyAttempts: 5
"
    )
}

#[test]
fn the_remedy_controller_is_upstreams() {
    let r = default_render();
    let manifest = remedy_configmap_manifest();
    let cm = object(&r, "ConfigMap", "remedy-controller-azure-config");
    let body: String = manifest
        .split_once("  config.yaml: |\n")
        .expect("block")
        .1
        .lines()
        .map(|l| format!("{}\n", &l[4..]))
        .collect();
    assert_eq!(cm["data"], json!({"config.yaml": body}));
    let d = object(&r, "Deployment", "remedy-controller-azure");
    assert_eq!(
        d["metadata"]["labels"],
        json!({"app": "remedy-controller-azure"})
    );
    assert_eq!(d["spec"]["revisionHistoryLimit"], json!(1));
    assert_eq!(d["spec"]["replicas"], json!(1));
    let p = &d["spec"]["template"];
    assert_eq!(
        p["metadata"]["annotations"],
        json!({
            "checksum/configmap-remedy-controller-azure-config": scion::checksum::sha256_hex(manifest.as_bytes()),
            "checksum/secret-cloud-provider-config": checksum_of_conf(&decoded(&r, "cloud-provider-config")),
        })
    );
    assert_eq!(
        p["metadata"]["labels"],
        json!({
            "gardener.cloud/role": "controlplane",
            "app": "remedy-controller-azure",
            "networking.gardener.cloud/to-dns": "allowed",
            "networking.gardener.cloud/to-public-networks": "allowed",
            "networking.gardener.cloud/to-private-networks": "allowed",
            "networking.gardener.cloud/to-runtime-apiserver": "allowed",
            "networking.resources.gardener.cloud/to-kube-apiserver-tcp-443": "allowed",
        })
    );
    assert_eq!(
        p["spec"]["serviceAccountName"],
        json!("remedy-controller-azure")
    );
    assert_eq!(p["spec"]["priorityClassName"], json!("gardener-system-300"));
    assert!(p["spec"].get("automountServiceAccountToken").is_none());
    let c = &p["spec"]["containers"][0];
    assert_eq!(
        c["image"],
        json!(
            "europe-docker.pkg.dev/gardener-project/releases/gardener/remedy-controller/remedy-controller-azure:v0.14.0"
        )
    );
    assert!(c.get("args").is_none(), "command, not args");
    assert_eq!(
        strings(&c["command"]),
        [
            "/remedy-controller-azure".to_string(),
            format!("--target-kubeconfig={KCFG}"),
            format!("--namespace={NS}"),
            "--config-file=/etc/remedy-controller-azure/config/config.yaml".into(),
            "--infrastructure-config=/etc/kubernetes/cloudprovider/cloudprovider.conf".into(),
            "--leader-election=true".into(),
            "--publicipaddress-max-concurrent-reconciles=5".into(),
            "--virtualmachine-max-concurrent-reconciles=5".into(),
            "--service-max-concurrent-reconciles=5".into(),
            "--node-max-concurrent-reconciles=5".into(),
            "--metrics-bind-address=:10258".into(),
            "--target-metrics-bind-address=:10259".into(),
            "--disable-controllers=".into(),
            "--target-disable-controllers=".into(),
        ]
    );
    assert_eq!(
        c["env"],
        json!([{"name": "LEADER_ELECTION_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}}])
    );
    assert_eq!(
        c["ports"],
        json!([{"name": "metrics", "containerPort": 10258, "protocol": "TCP"}, {"name": "target-metrics", "containerPort": 10259, "protocol": "TCP"}])
    );
    assert_eq!(c["resources"], json!({"requests": {"memory": "72M"}}));
    assert_eq!(
        names(&c["volumeMounts"]),
        ["kubeconfig", "config", "cloud-provider-config"]
    );
    assert_eq!(
        names(&p["spec"]["volumes"]),
        ["kubeconfig", "config", "cloud-provider-config"]
    );
    assert_eq!(
        object(&r, "ServiceAccount", "remedy-controller-azure")["automountServiceAccountToken"],
        json!(false)
    );
    let role = object(&r, "Role", "remedy-controller-azure");
    assert_eq!(role["rules"].as_array().map(Vec::len), Some(6));
    assert_eq!(
        role["rules"][5],
        json!({"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "resourceNames": ["remedy-controller-azure-leader-election"], "verbs": ["get", "watch", "update"]})
    );
    assert_eq!(
        object(&r, "RoleBinding", "remedy-controller-azure")["subjects"],
        json!([{"kind": "ServiceAccount", "name": "remedy-controller-azure", "namespace": NS}])
    );
    let svc = object(&r, "Service", "remedy-controller-azure");
    assert_eq!(
        svc["metadata"]["annotations"],
        json!({"networking.resources.gardener.cloud/from-all-scrape-targets-allowed-ports": "[{\"port\":10258,\"protocol\":\"TCP\"}]"})
    );
    assert_eq!(svc["spec"]["clusterIP"], json!("None"));
    assert_eq!(
        object(&r, "VerticalPodAutoscaler", "remedy-controller-azure-vpa")["spec"],
        json!({"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "remedy-controller-azure"}, "updatePolicy": {"updateMode": "Recreate"}})
    );
    assert!(has(&r, "PodDisruptionBudget", "remedy-controller-azure"));
    assert!(has(&r, "ServiceMonitor", "shoot-remedy-controller-azure"));
    let rule = object(&r, "PrometheusRule", "shoot-remedy-controller-azure");
    let alerts: Vec<&str> = rule["spec"]["groups"][0]["rules"]
        .as_array()
        .expect("rules")
        .iter()
        .map(|r| r["alert"].as_str().expect("alert"))
        .collect();
    assert_eq!(alerts, ["RemedyControllerDown", "AzureVMFailed"]);
    // The shoot side.
    let cr = format!("{P}remedy-controller-azure");
    assert_eq!(
        object(&r, "ClusterRole", &cr)["rules"],
        json!([{"apiGroups": [""], "resources": ["services", "nodes"], "verbs": ["create", "get", "list", "watch", "patch", "update", "delete", "deletecollection"]}])
    );
    assert_eq!(
        object(&r, "ClusterRoleBinding", &cr)["subjects"],
        json!([{"kind": "ServiceAccount", "name": "remedy-controller-azure", "namespace": "kube-system"}])
    );
    // Not rendered: the monitoring dashboard (docs/controlplane.md says why).
    assert!(!has(&r, "ConfigMap", "remedy-controller-azure-dashboard"));
}

#[test]
fn disabling_the_remedy_controller_keeps_the_deployment_at_zero() {
    let wi_on = |shoot: &ShootContext| {
        render_builtin(
            &azure_cp(json!({})),
            shoot,
            Some(&azure_wi_secret()),
            Some(1),
        )
        .expect("renders")
    };
    let off = wi_on(&annotated(&[("disable-remedy-controller", "true")]));
    let d = object(&off, "Deployment", "remedy-controller-azure");
    assert_eq!(d["spec"]["replicas"], json!(0));
    let annotations = d["spec"]["template"]["metadata"]["annotations"]
        .as_object()
        .expect("annotations");
    assert_eq!(
        annotations.keys().collect::<Vec<_>>(),
        ["checksum/configmap-remedy-controller-azure-config"],
        "no config checksum when disabled"
    );
    assert_eq!(
        names(&d["spec"]["template"]["spec"]["volumes"]),
        ["kubeconfig", "config", "cloud-provider-config"],
        "no workload identity when disabled"
    );
    assert!(!has(
        &off,
        "PrometheusRule",
        "shoot-remedy-controller-azure"
    ));
    let cr = format!("{P}remedy-controller-azure");
    assert!(!has(&off, "ClusterRole", &cr) && !has(&off, "ClusterRoleBinding", &cr));
    assert!(has(&off, "ServiceMonitor", "shoot-remedy-controller-azure"));
    // Upstream compares with "true" exactly.
    let on = wi_on(&annotated(&[("disable-remedy-controller", "True")]));
    assert_eq!(
        object(&on, "Deployment", "remedy-controller-azure")["spec"]["replicas"],
        json!(1)
    );
    assert!(has(&on, "ClusterRole", &cr));
}

/// `--feature-gates` as the operator sets them.
fn gates(pairs: &[(&str, bool)]) -> scion::profile::GateSettings {
    pairs.iter().map(|(n, on)| (n.to_string(), *on)).collect()
}

fn gated(shoot: &ShootContext, set: &scion::profile::GateSettings) -> Rendered {
    render_builtin_gated(
        &azure_cp(json!({})),
        shoot,
        Some(&azure_wi_secret()),
        Some(1),
        set,
    )
    .expect("renders")
}

#[test]
fn the_disable_remedy_controller_gate_disables_it_as_the_annotation_does() {
    // provider-azure's getRemedyControllerChartValues: the gate
    // DisableRemedyController (pkg/features, alpha, default false) or the
    // annotation "true" give {enabled: true, replicas: 0}, and the shoot
    // chart's remedy sub-chart is not rendered.
    let plain = azure_shoot(&["IPv4"], false);
    let on = gated(&plain, &gates(&[("DisableRemedyController", true)]));
    let d = object(&on, "Deployment", "remedy-controller-azure");
    assert_eq!(d["spec"]["replicas"], json!(0));
    assert_eq!(
        d["spec"]["template"]["metadata"]["annotations"]
            .as_object()
            .expect("annotations")
            .keys()
            .collect::<Vec<_>>(),
        ["checksum/configmap-remedy-controller-azure-config"],
        "no config checksum"
    );
    assert_eq!(
        names(&d["spec"]["template"]["spec"]["volumes"]),
        ["kubeconfig", "config", "cloud-provider-config"],
        "no workload identity"
    );
    assert!(!has(&on, "PrometheusRule", "shoot-remedy-controller-azure"));
    let cr = format!("{P}remedy-controller-azure");
    assert!(!has(&on, "ClusterRole", &cr) && !has(&on, "ClusterRoleBinding", &cr));
    // the same objects, byte for byte, as with the annotation
    let annotated = gated(
        &annotated(&[("disable-remedy-controller", "true")]),
        &gates(&[]),
    );
    assert_eq!(on.all(), annotated.all());
    // both together are no different
    let both = gated(
        &self::annotated(&[("disable-remedy-controller", "true")]),
        &gates(&[("DisableRemedyController", true)]),
    );
    assert_eq!(both.all(), annotated.all());
}

#[test]
fn the_gate_off_or_unset_changes_nothing() {
    let plain = azure_shoot(&["IPv4"], false);
    let unset = gated(&plain, &gates(&[]));
    assert_eq!(
        object(&unset, "Deployment", "remedy-controller-azure")["spec"]["replicas"],
        json!(1)
    );
    assert!(has(
        &unset,
        "PrometheusRule",
        "shoot-remedy-controller-azure"
    ));
    assert_eq!(
        gated(&plain, &gates(&[("DisableRemedyController", false)])).all(),
        unset.all()
    );
    // a gate azure does not declare (another provider's, or a part scion
    // does not run) has no effect
    assert_eq!(
        gated(&plain, &gates(&[("MTUCustomizer", true)])).all(),
        unset.all()
    );
    // the last value of a gate set twice wins (component-base's map)
    let twice = scion::profile::featuregates::settings(&[
        ("DisableRemedyController".to_owned(), true),
        ("DisableRemedyController".to_owned(), false),
    ]);
    assert_eq!(gated(&plain, &twice).all(), unset.all());
}

#[test]
fn the_health_checks_skip_the_remedy_controller_under_the_gate() {
    use scion::profile::{Facts, FeatureGates};
    // pkg/controller/healthcheck/add.go: the CCM, both CSI controllers, the
    // remedy controller (pre-check: gate off and annotation not "true") and
    // the snapshot controller.
    let spec = support::controller::builtin_spec("azure").expect("azure");
    let checked = |shoot: &ShootContext, set: &scion::profile::GateSettings| -> Vec<String> {
        let gates = FeatureGates::resolve(&spec.feature_gates, set);
        let facts = Facts {
            feature_gates: Some(&gates),
            ..Facts::of_shoot(shoot)
        };
        spec.health_checks()
            .into_iter()
            .filter(|d| d.when.as_ref().is_none_or(|c| c.eval(&facts).unwrap()))
            .map(|d| d.name)
            .collect()
    };
    let all = [
        "cloud-controller-manager",
        "csi-driver-controller-disk",
        "csi-driver-controller-file",
        "csi-snapshot-controller",
        "remedy-controller-azure",
    ];
    let plain = azure_shoot(&["IPv4"], false);
    assert_eq!(checked(&plain, &gates(&[])), all);
    assert_eq!(
        checked(&plain, &gates(&[("DisableRemedyController", false)])),
        all
    );
    let skipped: Vec<&str> = all
        .into_iter()
        .filter(|d| *d != "remedy-controller-azure")
        .collect();
    assert_eq!(
        checked(&plain, &gates(&[("DisableRemedyController", true)])),
        skipped
    );
    // Under the annotation the check stays and passes: the Deployment has 0
    // replicas (the condition language tests annotations with ParseBool,
    // upstream with "true" exactly).
    assert_eq!(
        checked(
            &annotated(&[("disable-remedy-controller", "true")]),
            &gates(&[])
        ),
        all
    );
    // the caches and the RBAC cover it whatever the gate
    assert!(
        spec.health_deployments()
            .contains(&"remedy-controller-azure")
    );
}

#[test]
fn azure_declares_upstreams_gate_and_validate_shows_it() {
    // pkg/features/features.go: DisableRemedyController, alpha, default false.
    let profile = scion::profile::Profile::builtin("azure").expect("azure");
    let declared: Vec<(&str, bool)> = profile
        .feature_gates
        .iter()
        .map(|g| (g.name.as_str(), g.default))
        .collect();
    assert_eq!(declared, [("DisableRemedyController", false)]);
    let summary = scion::cli::validate::summary(&profile);
    assert!(
        summary.contains("  extension feature gate DisableRemedyController (default false): remedy-controller-azure as with"),
        "{summary}"
    );
    // no other built-in provider declares one (their gates concern parts
    // scion does not run)
    for other in scion::profile::BUILTIN_PROVIDERS {
        if *other != "azure" {
            let p = scion::profile::Profile::builtin(other).expect("built in");
            assert!(p.feature_gates.is_empty(), "{other}");
        }
    }
}

#[test]
fn node_daemonsets_are_upstreams_per_role() {
    let r = render(
        &azure_cp(json!({})),
        &annotated(&[
            ("volume-attach-limit", "-1"),
            ("reserved-data-disk-slot-num", "2"),
        ]),
    );
    for (role, healthz, metrics) in [("disk", 29603, 29605), ("file", 29613, 29615)] {
        let name = format!("csi-driver-node-{role}");
        let driver = format!("{role}.csi.azure.com");
        let ds = r
            .shoot
            .iter()
            .find(|o| o.kind == "DaemonSet" && o.name == name)
            .expect("DaemonSet in the shoot");
        assert_eq!(ds.namespace, "kube-system");
        let d = &ds.object;
        let labels = json!({"app": "csi", "role": format!("driver-{role}")});
        assert_eq!(
            d["metadata"]["labels"],
            json!({"node.gardener.cloud/critical-component": "true", "app": "csi", "role": format!("driver-{role}")})
        );
        assert_eq!(d["spec"]["selector"], json!({"matchLabels": labels}));
        let p = &d["spec"]["template"];
        assert_eq!(
            p["metadata"]["annotations"],
            json!({
                "node.gardener.cloud/wait-for-csi-node-azure": driver,
                "checksum/configmap-cloud-provider-disk-config": checksum_of_conf(DISK_CONFIG),
            })
        );
        let s = &p["spec"];
        assert_eq!(s["hostNetwork"], json!(true));
        assert_eq!(s["priorityClassName"], json!("system-node-critical"));
        assert_eq!(s["serviceAccount"], json!(name), "the deprecated field");
        assert!(s.get("serviceAccountName").is_none());
        assert_eq!(
            s["tolerations"],
            json!([{"effect": "NoSchedule", "operator": "Exists"}, {"key": "CriticalAddonsOnly", "operator": "Exists"}, {"effect": "NoExecute", "operator": "Exists"}])
        );
        assert_eq!(
            s["securityContext"],
            json!({"seccompProfile": {"type": "RuntimeDefault"}})
        );
        assert_eq!(
            names(&s["containers"]),
            [
                "csi-driver",
                "csi-node-driver-registrar",
                "csi-liveness-probe"
            ]
        );
        let c = container(&r, "DaemonSet", &name, "csi-driver");
        let mut want = vec![
            "--endpoint=$(CSI_ENDPOINT)".to_string(),
            "--nodeid=$(KUBE_NODE_NAME)".into(),
            format!("--metrics-address=0.0.0.0:{metrics}"),
        ];
        if role == "disk" {
            want.push("--volume-attach-limit=-1".into());
            want.push("--reserved-data-disk-slot-num=2".into());
        }
        want.push("--v=5".into());
        assert_eq!(strings(&c["args"]), want);
        assert_eq!(
            c["env"],
            json!([
                {"name": "CSI_ENDPOINT", "value": "unix:///csi/csi.sock"},
                {"name": "AZURE_CREDENTIAL_FILE", "value": "/etc/kubernetes/cloudprovider/cloudprovider.conf"},
                {"name": "KUBE_NODE_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}}},
            ])
        );
        assert_eq!(c["securityContext"], json!({"privileged": true}));
        assert_eq!(c["resources"], json!({"requests": {"memory": "50Mi"}}));
        assert_eq!(
            c["ports"],
            json!([{"containerPort": healthz, "name": "healthz", "protocol": "TCP"}, {"containerPort": metrics, "name": "metrics", "protocol": "TCP"}])
        );
        assert_eq!(
            c["livenessProbe"],
            json!({"failureThreshold": 5, "httpGet": {"path": "/healthz", "port": "healthz"}, "initialDelaySeconds": 30, "timeoutSeconds": 10, "periodSeconds": 30})
        );
        let mut mounts = vec![
            "kubelet-dir",
            "plugin-dir",
            "device-dir",
            "cloud-provider-config",
        ];
        let mut volumes = vec![
            "kubelet-dir",
            "plugin-dir",
            "registration-dir",
            "device-dir",
            "cloud-provider-config",
        ];
        if role == "disk" {
            mounts.extend(["sys-devices-dir", "scsi-host-dir"]);
            volumes.extend(["sys-devices-dir", "scsi-host-dir"]);
        }
        assert_eq!(names(&c["volumeMounts"]), mounts);
        assert_eq!(
            c["volumeMounts"][0],
            json!({"name": "kubelet-dir", "mountPath": "/var/lib/kubelet", "mountPropagation": "Bidirectional"})
        );
        assert_eq!(names(&s["volumes"]), volumes, "disk 7 volumes, file 5");
        assert_eq!(
            s["volumes"][1],
            json!({"name": "plugin-dir", "hostPath": {"path": format!("/var/lib/kubelet/plugins/{driver}"), "type": "DirectoryOrCreate"}})
        );
        assert_eq!(
            s["volumes"][2],
            json!({"name": "registration-dir", "hostPath": {"path": "/var/lib/kubelet/plugins_registry/", "type": "DirectoryOrCreate"}})
        );
        assert_eq!(
            s["volumes"][4],
            json!({"name": "cloud-provider-config", "configMap": {"name": "cloud-provider-disk-config"}})
        );
        let reg = container(&r, "DaemonSet", &name, "csi-node-driver-registrar");
        assert_eq!(
            strings(&reg["args"]),
            [
                "--csi-address=$(ADDRESS)",
                "--kubelet-registration-path=$(DRIVER_REG_SOCK_PATH)",
                "--v=5"
            ]
        );
        assert_eq!(
            reg["env"],
            json!([{"name": "ADDRESS", "value": "/csi/csi.sock"}, {"name": "DRIVER_REG_SOCK_PATH", "value": format!("/var/lib/kubelet/plugins/{driver}/csi.sock")}])
        );
        assert_eq!(reg["resources"], json!({"requests": {"memory": "32Mi"}}));
        assert_eq!(
            reg["image"],
            json!("registry.k8s.io/sig-storage/csi-node-driver-registrar:v2.17.0")
        );
        let probe = container(&r, "DaemonSet", &name, "csi-liveness-probe");
        assert_eq!(
            strings(&probe["args"]),
            [
                "--csi-address=/csi/csi.sock".to_string(),
                "--probe-timeout=3s".into(),
                format!("--health-port={healthz}"),
                "--v=5".into(),
            ]
        );
        assert_eq!(probe["resources"], json!({"requests": {"memory": "32Mi"}}));
    }
    // Without the annotations, no attach-limit flags.
    let plain = default_render();
    assert_eq!(
        args(&plain, "DaemonSet", "csi-driver-node-disk", "csi-driver").len(),
        4
    );
}

#[test]
fn csi_drivers_service_accounts_and_rbac_are_named_as_upstream() {
    let r = default_render();
    assert_eq!(
        object(&r, "CSIDriver", "disk.csi.azure.com"),
        &json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
            "metadata": {"name": "disk.csi.azure.com", "annotations": {"resources.gardener.cloud/delete-on-invalid-update": "true"}},
            "spec": {"attachRequired": true, "podInfoOnMount": false, "fsGroupPolicy": "File"}})
    );
    assert_eq!(
        object(&r, "CSIDriver", "file.csi.azure.com")["spec"],
        json!({"attachRequired": false, "podInfoOnMount": true, "volumeLifecycleModes": ["Persistent", "Ephemeral"], "fsGroupPolicy": "ReadWriteOnceWithFSType"})
    );
    for role in ["disk", "file"] {
        let sa = object(&r, "ServiceAccount", &format!("csi-driver-node-{role}"));
        assert_eq!(sa["automountServiceAccountToken"], json!(false));
        assert_eq!(sa["metadata"]["namespace"], json!("kube-system"));
        assert_eq!(
            object(&r, "ClusterRoleBinding", &format!("{P}csi-driver-{role}"))["roleRef"]["name"],
            json!(format!("{P}csi-driver"))
        );
        let b = object(
            &r,
            "ClusterRoleBinding",
            &format!("{P}csi-driver-controller-{role}"),
        );
        assert_eq!(
            b["subjects"],
            json!([{"kind": "ServiceAccount", "name": format!("csi-driver-controller-{role}"), "namespace": "kube-system"}])
        );
    }
    let cluster_roles: Vec<String> = r
        .shoot
        .iter()
        .filter(|o| o.kind == "ClusterRole" && o.name.starts_with(P))
        .map(|o| o.name.trim_start_matches(P).to_string())
        .collect();
    let mut sorted = cluster_roles.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        [
            "csi-attacher",
            "csi-driver",
            "csi-driver-controller-disk",
            "csi-driver-controller-file",
            "csi-provisioner",
            "csi-resizer",
            "csi-snapshot-controller",
            "csi-snapshot-validation",
            "csi-snapshotter",
            "remedy-controller-azure",
        ]
    );
    assert!(
        !has(
            &r,
            "ClusterRoleBinding",
            &format!("{P}csi-snapshot-validation")
        ),
        "legacy, unbound"
    );
    for sa in [
        "csi-attacher",
        "csi-provisioner",
        "csi-resizer",
        "csi-snapshotter",
        "csi-snapshot-controller",
    ] {
        let name = format!("{P}{sa}");
        let subject = json!([{"kind": "ServiceAccount", "name": sa, "namespace": "kube-system"}]);
        assert_eq!(object(&r, "ClusterRoleBinding", &name)["subjects"], subject);
        assert_eq!(object(&r, "RoleBinding", &name)["subjects"], subject);
        assert_eq!(
            object(&r, "RoleBinding", &name)["roleRef"],
            json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name})
        );
        assert_eq!(
            object(&r, "Role", &name)["rules"],
            json!([{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "watch", "list", "delete", "update", "create"]}])
        );
    }
    let rule = |kind: &str, name: &str, i: usize| {
        object(&r, kind, &format!("{P}{name}"))["rules"][i].clone()
    };
    assert_eq!(
        rule("ClusterRole", "csi-snapshot-controller", 7),
        json!({"apiGroups": ["snapshot.storage.k8s.io"], "resources": ["volumesnapshots"], "verbs": ["get", "list", "watch", "update", "patch", "create"]})
    );
    assert_eq!(
        rule("ClusterRole", "csi-provisioner", 10),
        json!({"apiGroups": ["storage.k8s.io"], "resources": ["volumeattributesclasses"], "verbs": ["get"]})
    );
    assert_eq!(
        rule("ClusterRole", "csi-driver", 1),
        json!({"apiGroups": [""], "resources": ["namespaces", "secrets"], "verbs": ["get", "list"]})
    );
    assert_eq!(
        object(&r, "ClusterRole", &format!("{P}csi-driver-controller-file"))["rules"],
        json!([{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list", "create"]}])
    );
    assert_eq!(
        rule("ClusterRole", "csi-resizer", 5),
        json!({"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]})
    );
}

#[test]
fn storage_classes_and_the_snapshot_class_follow_the_controlplane_config() {
    let r = default_render();
    let classes: Vec<(&str, &str)> = r
        .storage_classes
        .iter()
        .map(|o| (o.kind.as_str(), o.name.as_str()))
        .collect();
    assert_eq!(
        classes,
        [
            ("StorageClass", "default"),
            ("StorageClass", "managed-standard-hdd"),
            ("StorageClass", "managed-standard-ssd"),
            ("StorageClass", "managed-premium-ssd"),
            ("StorageClass", "files"),
            ("VolumeSnapshotClass", "default"),
        ]
    );
    let sc = |r: &Rendered, name: &str| {
        r.storage_classes
            .iter()
            .find(|o| o.kind == "StorageClass" && o.name == name)
            .expect("class")
            .object
            .clone()
    };
    assert_eq!(
        sc(&r, "default"),
        json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": "default", "annotations": {"storageclass.kubernetes.io/is-default-class": "true", "resources.gardener.cloud/delete-on-invalid-update": "true"}},
            "provisioner": "disk.csi.azure.com", "parameters": {"skuName": "StandardSSD_LRS", "kind": "managed"},
            "volumeBindingMode": "WaitForFirstConsumer", "allowVolumeExpansion": true})
    );
    for (name, provisioner, parameters) in [
        (
            "managed-standard-hdd",
            "disk.csi.azure.com",
            json!({"skuName": "Standard_LRS", "kind": "managed"}),
        ),
        (
            "managed-standard-ssd",
            "disk.csi.azure.com",
            json!({"skuName": "StandardSSD_LRS", "kind": "managed"}),
        ),
        (
            "managed-premium-ssd",
            "disk.csi.azure.com",
            json!({"skuName": "Premium_LRS", "kind": "managed"}),
        ),
        (
            "files",
            "file.csi.azure.com",
            json!({"skuName": "Standard_LRS"}),
        ),
    ] {
        assert_eq!(
            sc(&r, name),
            json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                "metadata": {"name": name, "annotations": {"resources.gardener.cloud/delete-on-invalid-update": "true"}},
                "provisioner": provisioner, "parameters": parameters,
                "volumeBindingMode": "WaitForFirstConsumer", "allowVolumeExpansion": true})
        );
    }
    let vsc = |r: &Rendered| {
        r.storage_classes
            .last()
            .expect("snapshot class")
            .object
            .clone()
    };
    assert_eq!(
        vsc(&r),
        json!({"apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshotClass",
            "metadata": {"name": "default", "annotations": {"snapshot.storage.kubernetes.io/is-default-class": "true"}},
            "driver": "disk.csi.azure.com", "deletionPolicy": "Delete"})
    );
    assert!(
        r.storage_classes.iter().all(|o| o.namespace.is_empty()),
        "cluster-scoped"
    );

    let mut cp = azure_cp(json!({}));
    cp.spec.provider_config = Some(json!({
        "apiVersion": "azure.provider.extensions.gardener.cloud/v1alpha1", "kind": "ControlPlaneConfig",
        "storage": {"managedDefaultStorageClass": false, "managedDefaultVolumeSnapshotClass": false},
    }));
    let unmanaged = render(&cp, &azure_shoot(&["IPv4"], false));
    assert_eq!(
        sc(&unmanaged, "default")["metadata"]["annotations"],
        json!({"resources.gardener.cloud/delete-on-invalid-update": "true"})
    );
    assert!(vsc(&unmanaged)["metadata"].get("annotations").is_none());
    // Only one of the two unmanaged.
    cp.spec.provider_config =
        Some(json!({"storage": {"managedDefaultVolumeSnapshotClass": false}}));
    let half = render(&cp, &azure_shoot(&["IPv4"], false));
    assert_eq!(
        sc(&half, "default")["metadata"]["annotations"]["storageclass.kubernetes.io/is-default-class"],
        json!("true")
    );
    assert!(vsc(&half)["metadata"].get("annotations").is_none());
}

#[test]
fn allow_egress_follows_the_outbound_access_and_the_skip_annotation() {
    let egress = |r: &Rendered| -> Vec<String> {
        r.shoot
            .iter()
            .filter(|o| o.kind == "Service")
            .map(|o| o.name.clone())
            .collect()
    };
    let r = default_render();
    assert_eq!(egress(&r), ["allow-tcp-egress", "allow-udp-egress"]);
    for (proto, name) in [("TCP", "allow-tcp-egress"), ("UDP", "allow-udp-egress")] {
        let svc = object(&r, "Service", name);
        assert_eq!(svc["metadata"]["namespace"], json!("kube-system"));
        assert_eq!(
            svc["metadata"]["labels"],
            json!({"app": "gardener", "role": name})
        );
        assert_eq!(
            svc["metadata"]["annotations"]["azure.remedy.gardener.cloud/ignore"],
            json!("true")
        );
        assert!(
            svc["metadata"]["annotations"]["gardener.cloud/description"]
                .as_str()
                .is_some_and(|d| d.contains(proto))
        );
        assert_eq!(
            svc["spec"],
            json!({"ports": [{"name": "dummy", "port": 1234, "protocol": proto, "targetPort": 1234}], "selector": {}, "type": "LoadBalancer"})
        );
    }
    let explicit = render(
        &azure_cp(
            json!({"networks": {"vnet": {"name": "vnet-1234"}, "subnets": [{"purpose": "nodes", "name": "subnet-acbd1234"}], "outboundAccessType": "LoadBalancer"}}),
        ),
        &azure_shoot(&["IPv4"], false),
    );
    assert_eq!(egress(&explicit).len(), 2);
    let nat = render(
        &azure_cp(
            json!({"networks": {"vnet": {"name": "vnet-1234"}, "subnets": [{"purpose": "nodes", "name": "subnet-acbd1234"}], "outboundAccessType": "NatGateway"}}),
        ),
        &azure_shoot(&["IPv4"], false),
    );
    assert!(egress(&nat).is_empty());
    let skipped = render(
        &azure_cp(json!({})),
        &annotated(&[("skip-allow-egress", "true")]),
    );
    assert!(egress(&skipped).is_empty());
    let not_skipped = render(
        &azure_cp(json!({})),
        &annotated(&[("skip-allow-egress", "1")]),
    );
    assert_eq!(
        egress(&not_skipped).len(),
        2,
        "upstream compares with \"true\""
    );
}

#[test]
fn images_follow_the_shoot_minor_as_upstream_pins_them() {
    let image = |r: &Rendered, c: &str| {
        container(r, "Deployment", "csi-driver-controller-disk", c)["image"]
            .as_str()
            .expect("image")
            .to_string()
    };
    let r33 = render(
        &azure_cp(json!({})),
        &with_version(azure_shoot(&["IPv4"], false), 33),
    );
    assert_eq!(
        image(&r33, "azure-csi-provisioner"),
        "registry.k8s.io/sig-storage/csi-provisioner:v5.3.0"
    );
    assert_eq!(
        image(&r33, "azure-csi-resizer"),
        "registry.k8s.io/sig-storage/csi-resizer:v1.14.0"
    );
    assert_eq!(
        image(&r33, "azure-csi-attacher"),
        "registry.k8s.io/sig-storage/csi-attacher:v4.12.0"
    );
    assert_eq!(
        image(&r33, "azure-csi-snapshotter"),
        "registry.k8s.io/sig-storage/csi-snapshotter:v8.6.0"
    );
    for minor in [34, 35] {
        let r = render(
            &azure_cp(json!({})),
            &with_version(azure_shoot(&["IPv4"], false), minor),
        );
        assert_eq!(
            image(&r, "azure-csi-provisioner"),
            "registry.k8s.io/sig-storage/csi-provisioner:v6.3.0"
        );
        assert_eq!(
            image(&r, "azure-csi-resizer"),
            "registry.k8s.io/sig-storage/csi-resizer:v2.2.0"
        );
    }
}

#[test]
fn render_is_deterministic_and_lands_in_the_right_managed_resources() {
    let a = default_render();
    let b = default_render();
    assert_eq!(a, b);
    let kinds = |list: &[scion::render::DesiredObject]| -> Vec<String> {
        list.iter()
            .map(|o| format!("{}/{}", o.kind, o.name))
            .collect()
    };
    assert_eq!(
        kinds(&a.config),
        [
            "Secret/cloud-provider-config",
            "Secret/cloud-provider-disk-config"
        ]
    );
    for seed in [
        "Deployment/csi-driver-controller-disk",
        "Deployment/csi-snapshot-controller",
        "Deployment/remedy-controller-azure",
        "ConfigMap/remedy-controller-azure-config",
    ] {
        assert!(kinds(&a.seed).contains(&seed.to_string()), "{seed}");
    }
    for shoot in [
        "DaemonSet/csi-driver-node-disk",
        "CSIDriver/file.csi.azure.com",
        "ConfigMap/cloud-provider-disk-config",
        "Service/allow-udp-egress",
    ] {
        assert!(kinds(&a.shoot).contains(&shoot.to_string()), "{shoot}");
    }
    assert!(a.seed.iter().all(|o| o.namespace == NS));
}

#[test]
fn the_health_check_watches_upstreams_deployments() {
    let spec = support::controller::builtin_spec("azure").expect("azure loads");
    assert_eq!(
        spec.health_deployments(),
        [
            "cloud-controller-manager",
            "csi-driver-controller-disk",
            "csi-driver-controller-file",
            "csi-snapshot-controller",
            "remedy-controller-azure",
        ]
    );
}

/// `scion images` lists the new images and `IMAGEVECTOR_OVERWRITE` replaces
/// them in `scion render`, through the real binary.
#[test]
fn scion_images_lists_them_and_imagevector_overwrite_replaces_them() {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let images = std::process::Command::new(env!("CARGO_BIN_EXE_scion"))
        .args(["images", "--provider", "azure"])
        .env_remove("IMAGEVECTOR_OVERWRITE")
        .output()
        .expect("scion runs");
    assert!(
        images.status.success(),
        "{}",
        String::from_utf8_lossy(&images.stderr)
    );
    let listed = String::from_utf8_lossy(&images.stdout);
    for name in [
        "csi-driver-disk",
        "csi-driver-file",
        "csi-provisioner",
        "csi-attacher",
        "csi-snapshotter",
        "csi-resizer",
        "csi-liveness-probe",
        "csi-node-driver-registrar",
        "csi-snapshot-controller",
        "remedy-controller-azure",
    ] {
        assert!(listed.contains(name), "{name} not listed: {listed}");
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let overwrite = dir.path().join("overwrite.yaml");
    std::fs::write(
        &overwrite,
        "images:\n- name: csi-driver-disk\n  repository: registry.example.com/azuredisk-csi\n  tag: v9.9.9\n- name: remedy-controller-azure\n  repository: registry.example.com/remedy\n  tag: v0.0.1\n",
    )
    .expect("write");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_scion"))
        .current_dir(&root)
        .args([
            "render",
            "--provider",
            "azure",
            "--objects-dir",
            "examples/objects",
            "--controlplane",
            "shoot--dev--azure/control-plane",
        ])
        .env("IMAGEVECTOR_OVERWRITE", &overwrite)
        .output()
        .expect("scion runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    // Two controller containers and one node plugin of the disk role.
    assert_eq!(
        text.matches("image: registry.example.com/azuredisk-csi:v9.9.9")
            .count(),
        2,
        "{text}"
    );
    assert_eq!(
        text.matches("image: registry.example.com/remedy:v0.0.1")
            .count(),
        1
    );
    assert!(text.contains("image: mcr.microsoft.com/oss/v2/kubernetes-csi/azurefile-csi:v1.35.4"));
}
