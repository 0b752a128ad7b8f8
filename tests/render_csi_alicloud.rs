//! The CSI objects of the alicloud folder against the facts of
//! provider-alicloud (gardener-csi.md, "Alicloud"): hand-written
//! expectations, not snapshots of scion's output. The fixture follows
//! upstream's `valuesprovider_test.go`: shoot `myshoot`, region
//! `eu-central-1`, credentials whose `credentialsFile` is `baz`.

mod support;

use support::render::*;

use base64::Engine as _;
use scion::gardener::{ControlPlane, ObjectData, ShootContext};
use scion::profile::{FindOptions, ImageVector};
use scion::render::Rendered;
use serde_json::json;
use support::controller::providers::{alicloud_cp, provider_shoot};
use support::controller::{NS, object, render_builtin, secret};

const KCFG: &str = "/var/run/secrets/gardener.cloud/shoot/generic-kubeconfig/kubeconfig";
const PLUG: &str = "/var/lib/kubelet/plugins/diskplugin.csi.alibabacloud.com";

fn shoot(hibernated: bool) -> ShootContext {
    let mut s = provider_shoot("alicloud", "eu-central-1", &["IPv4"], hibernated);
    s.shoot.metadata.name = "myshoot".into();
    s
}

fn credentials() -> ObjectData {
    secret(
        &[
            ("accessKeyID", "foo"),
            ("accessKeySecret", "bar"),
            ("credentialsFile", "baz"),
        ],
        &[],
    )
}

fn with_ad_controller(enabled: Option<bool>) -> ControlPlane {
    let mut cp = alicloud_cp(None);
    if let Some(enabled) = enabled {
        cp.spec.provider_config.as_mut().expect("config")["csi"] =
            json!({"enableADController": enabled});
    }
    cp
}

fn render(cp: &ControlPlane, creds: &ObjectData) -> Rendered {
    render_builtin(cp, &shoot(false), Some(creds), None).expect("renders")
}

fn rendered() -> Rendered {
    render(&with_ad_controller(Some(true)), &credentials())
}

#[test]
fn the_plugin_controller_is_upstreams() {
    let r = rendered();
    let d = object(&r, "Deployment", "csi-plugin-controller");
    assert!(
        d["metadata"].get("labels").is_none(),
        "upstream's labels block stands outside metadata: the API server drops it"
    );
    assert_eq!(d["metadata"]["namespace"], NS);
    assert_eq!(d["spec"]["replicas"], 1);
    assert_eq!(d["spec"]["revisionHistoryLimit"], 0);
    assert!(d["spec"].get("strategy").is_none());
    assert_eq!(
        d["spec"]["selector"]["matchLabels"],
        json!({"app": "kubernetes", "role": "csi-plugin-controller"})
    );
    let pod = &d["spec"]["template"];
    assert_eq!(
        pod["metadata"]["annotations"],
        json!({"checksum/secret-cloudprovider": scion::checksum::secret_checksum(Some(&[
            ("accessKeyID".to_string(), b"foo".to_vec()),
            ("accessKeySecret".to_string(), b"bar".to_vec()),
            ("credentialsFile".to_string(), b"baz".to_vec()),
        ].into_iter().collect()))})
    );
    assert_eq!(
        pod["metadata"]["labels"],
        json!({
            "gardener.cloud/role": "controlplane",
            "app": "kubernetes",
            "role": "csi-plugin-controller",
            "networking.gardener.cloud/to-dns": "allowed",
            "networking.gardener.cloud/to-public-networks": "allowed",
            "networking.gardener.cloud/to-alicloud-networks": "allowed",
            "networking.resources.gardener.cloud/to-kube-apiserver-tcp-443": "allowed",
        })
    );
    assert_eq!(pod["spec"]["automountServiceAccountToken"], false);
    assert_eq!(pod["spec"]["priorityClassName"], "gardener-system-300");
    assert_eq!(
        names(&pod["spec"]["containers"]),
        [
            "alicloud-csi-diskplugin",
            "alicloud-csi-attacher",
            "alicloud-csi-provisioner",
            "alicloud-csi-snapshotter",
            "alicloud-csi-resizer",
            "alicloud-csi-liveness-probe"
        ]
    );
    let kubeconfig = format!("--kubeconfig={KCFG}");
    let plugin = container(d, "alicloud-csi-diskplugin");
    assert_eq!(
        strings(&plugin["args"]),
        [
            "--endpoint=$(CSI_ENDPOINT)",
            "--nodeid=dummy",
            "--run-as-controller=true",
            kubeconfig.as_str(),
            "--v=5"
        ]
    );
    assert_eq!(
        plugin["env"],
        json!([
            {"name": "DISK_AD_CONTROLLER", "value": "true"},
            {"name": "CSI_ENDPOINT", "value": "unix://var/lib/kubelet/plugins/diskplugin.csi.alibabacloud.com/csi.sock"},
            {"name": "SERVICE_TYPE", "value": "provisioner"},
            {"name": "INSTALL_SNAPSHOT_CRD", "value": "false"},
            {"name": "REGION_ID", "value": "eu-central-1"},
            {"name": "ALIBABA_CLOUD_CREDENTIALS_FILE", "value": "/srv/cloudprovider/credentialsFile"},
        ])
    );
    assert_eq!(plugin["imagePullPolicy"], "IfNotPresent");
    assert_eq!(
        plugin["resources"],
        json!({"requests": {"cpu": "20m", "memory": "50Mi"}})
    );
    assert_eq!(
        plugin["ports"],
        json!([{"containerPort": 80}, {"name": "healthz", "containerPort": 9808, "protocol": "TCP"}])
    );
    assert_eq!(
        plugin["livenessProbe"],
        json!({"httpGet": {"path": "/healthz", "port": "healthz"}, "initialDelaySeconds": 150, "timeoutSeconds": 3, "periodSeconds": 10, "failureThreshold": 5})
    );
    assert_eq!(
        plugin["volumeMounts"],
        json!([
            {"name": "socket-dir", "mountPath": PLUG},
            {"mountPath": "/var/run/secrets/gardener.cloud/shoot/generic-kubeconfig", "name": "kubeconfig-csi-controller-ali-plugin", "readOnly": true},
            {"name": "cloudprovider", "mountPath": "/srv/cloudprovider"},
        ])
    );
    let attacher = container(d, "alicloud-csi-attacher");
    assert_eq!(
        strings(&attacher["args"]),
        [
            "--v=5",
            "--csi-address=$(CSI_ENDPOINT)",
            kubeconfig.as_str(),
            "--leader-election",
            "--leader-election-namespace=kube-system",
            "--kube-api-qps=100",
            "--kube-api-burst=200"
        ]
    );
    assert_eq!(
        attacher["env"],
        json!([
            {"name": "CSI_ENDPOINT", "value": format!("{PLUG}/csi.sock")},
            {"name": "MY_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        ])
    );
    let provisioner = container(d, "alicloud-csi-provisioner");
    assert_eq!(
        strings(&provisioner["args"]),
        [
            "--csi-address=$(CSI_ENDPOINT)",
            kubeconfig.as_str(),
            "--feature-gates=Topology=True",
            "--leader-election-namespace=kube-system",
            "--volume-name-prefix=pv-myshoot",
            "--default-fstype=ext4",
            "--leader-election=true",
            "--kube-api-qps=100",
            "--kube-api-burst=200"
        ]
    );
    assert_eq!(
        provisioner["env"][1],
        json!({"name": "POD_NAMESPACE", "value": "kube-system"})
    );
    assert_eq!(
        strings(&container(d, "alicloud-csi-snapshotter")["args"]),
        [
            "--csi-address=$(CSI_ENDPOINT)",
            kubeconfig.as_str(),
            "--leader-election",
            "--leader-election-namespace=kube-system",
            "--snapshot-name-prefix=s-myshoot",
            "--kube-api-qps=100",
            "--kube-api-burst=200"
        ]
    );
    let resizer = container(d, "alicloud-csi-resizer");
    assert_eq!(
        strings(&resizer["args"]),
        [
            "--v=5",
            "--csi-address=$(ADDRESS)",
            kubeconfig.as_str(),
            "--leader-election=true",
            "--leader-election-namespace=kube-system",
            "--handle-volume-inuse-error=false",
            "--kube-api-qps=100",
            "--kube-api-burst=200"
        ]
    );
    assert_eq!(
        resizer["env"],
        json!([{"name": "ADDRESS", "value": format!("{PLUG}/csi.sock")}])
    );
    assert_eq!(
        strings(&container(d, "alicloud-csi-liveness-probe")["args"]),
        [format!("--csi-address={PLUG}/csi.sock")]
    );
    for (name, cpu, memory) in [
        ("alicloud-csi-attacher", "11m", "36Mi"),
        ("alicloud-csi-provisioner", "11m", "38Mi"),
        ("alicloud-csi-snapshotter", "11m", "36Mi"),
        ("alicloud-csi-resizer", "11m", "32Mi"),
        ("alicloud-csi-liveness-probe", "11m", "32Mi"),
    ] {
        let c = container(d, name);
        assert_eq!(
            c["resources"],
            json!({"requests": {"cpu": cpu, "memory": memory}}),
            "{name}"
        );
        assert!(
            c.get("imagePullPolicy").is_none(),
            "only the plugin sets it: {name}"
        );
        assert_eq!(
            c["securityContext"],
            json!({"allowPrivilegeEscalation": false}),
            "{name}"
        );
    }
    let volumes = &pod["spec"]["volumes"];
    assert_eq!(
        names(volumes),
        [
            "cloudprovider",
            "socket-dir",
            "kubeconfig-csi-controller-ali-plugin",
            "kubeconfig-csi-attacher",
            "kubeconfig-csi-provisioner",
            "kubeconfig-csi-snapshotter",
            "kubeconfig-csi-resizer"
        ]
    );
    assert_eq!(volumes[0]["secret"], json!({"secretName": "cloudprovider"}));
    assert_eq!(
        volumes[2]["projected"]["sources"][1]["secret"]["name"],
        "shoot-access-csi-controller-ali-plugin"
    );
}

#[test]
fn the_ad_controller_switch_sets_the_env_on_both_plugins() {
    for enabled in [None, Some(false)] {
        let r = render(&with_ad_controller(enabled), &credentials());
        let plugin = container(
            object(&r, "Deployment", "csi-plugin-controller"),
            "alicloud-csi-diskplugin",
        );
        assert_eq!(plugin["env"][0]["name"], "CSI_ENDPOINT", "{enabled:?}");
        let node = container(
            object(&r, "DaemonSet", "csi-disk-plugin-alicloud"),
            "csi-diskplugin",
        );
        assert_eq!(node["env"][0]["name"], "CSI_ENDPOINT", "{enabled:?}");
    }
    let r = rendered();
    let node = container(
        object(&r, "DaemonSet", "csi-disk-plugin-alicloud"),
        "csi-diskplugin",
    );
    assert_eq!(
        node["env"][0],
        json!({"name": "DISK_AD_CONTROLLER", "value": "true"})
    );
}

#[test]
fn the_snapshot_controller_vpas_and_pdbs_are_upstreams() {
    let r = rendered();
    let d = object(&r, "Deployment", "csi-snapshot-controller");
    assert_eq!(
        d["metadata"]["labels"],
        json!({"app": "csi-snapshot-controller", "role": "controller", "high-availability-config.resources.gardener.cloud/type": "controller"})
    );
    assert_eq!(d["spec"]["revisionHistoryLimit"], 0);
    let pod = &d["spec"]["template"];
    assert!(pod["metadata"].get("annotations").is_none());
    assert_eq!(
        pod["metadata"]["labels"],
        json!({
            "app": "csi-snapshot-controller", "role": "controller",
            "networking.gardener.cloud/to-dns": "allowed",
            "networking.resources.gardener.cloud/to-kube-apiserver-tcp-443": "allowed",
        })
    );
    assert_eq!(pod["spec"]["priorityClassName"], "gardener-system-200");
    let c = container(d, "alicloud-csi-snapshot-controller");
    assert_eq!(
        strings(&c["args"]),
        [
            format!("--kubeconfig={KCFG}").as_str(),
            "--leader-election=true",
            "--leader-election-namespace=kube-system",
            "--kube-api-qps=100",
            "--kube-api-burst=200"
        ]
    );
    assert_eq!(
        c["resources"],
        json!({"requests": {"cpu": "11m", "memory": "32Mi"}})
    );
    let vpa = object(&r, "VerticalPodAutoscaler", "csi-plugin-controller-vpa");
    assert_eq!(vpa["spec"]["updatePolicy"]["updateMode"], "Recreate");
    let policies: Vec<&str> = vpa["spec"]["resourcePolicy"]["containerPolicies"]
        .as_array()
        .expect("policies")
        .iter()
        .map(|p| {
            assert_eq!(
                p.as_object().expect("policy").len(),
                2,
                "no controlledResources"
            );
            p["containerName"].as_str().expect("name")
        })
        .collect();
    assert_eq!(
        policies,
        [
            "alicloud-csi-diskplugin",
            "alicloud-csi-provisioner",
            "alicloud-csi-attacher",
            "alicloud-csi-snapshotter",
            "alicloud-csi-resizer",
            "alicloud-csi-liveness-probe"
        ]
    );
    let vpa = object(&r, "VerticalPodAutoscaler", "csi-snapshot-controller-vpa");
    assert_eq!(
        vpa["spec"]["resourcePolicy"]["containerPolicies"],
        json!([{"containerName": "alicloud-csi-snapshot-controller", "controlledValues": "RequestsOnly"}])
    );
    let pdb = object(&r, "PodDisruptionBudget", "csi-plugin-controller");
    assert_eq!(
        pdb["metadata"]["labels"],
        json!({"app": "kubernetes", "role": "csi-plugin-controller"})
    );
    assert_eq!(pdb["spec"]["maxUnavailable"], 1);
    assert_eq!(pdb["spec"]["unhealthyPodEvictionPolicy"], "AlwaysAllow");
    let pdb = object(&r, "PodDisruptionBudget", "csi-snapshot-controller");
    assert_eq!(
        pdb["spec"]["selector"]["matchLabels"],
        json!({"app": "csi-snapshot-controller", "role": "controller"})
    );
    // The NetworkPolicy the plugin controller's label selects (with the CCM).
    let policy = object(&r, "NetworkPolicy", "allow-to-alicloud-networks");
    assert_eq!(
        policy["spec"]["podSelector"]["matchLabels"],
        json!({"networking.gardener.cloud/to-alicloud-networks": "allowed"})
    );
}

#[test]
fn both_controllers_follow_hibernation() {
    let down = render_builtin(
        &with_ad_controller(None),
        &shoot(true),
        Some(&credentials()),
        Some(0),
    )
    .expect("renders");
    for name in [
        "cloud-controller-manager",
        "csi-plugin-controller",
        "csi-snapshot-controller",
    ] {
        assert_eq!(
            object(&down, "Deployment", name)["spec"]["replicas"],
            0,
            "{name}"
        );
    }
}

#[test]
fn the_shoot_access_secrets_are_the_seven_of_upstream() {
    let r = rendered();
    let names: Vec<&str> = r.access_secrets.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "shoot-access-cloud-controller-manager",
            "shoot-access-csi-controller-ali-plugin",
            "shoot-access-csi-attacher",
            "shoot-access-csi-provisioner",
            "shoot-access-csi-snapshotter",
            "shoot-access-csi-resizer",
            "shoot-access-csi-snapshot-controller"
        ]
    );
}

#[test]
fn the_node_plugin_and_its_secret_are_upstreams() {
    let r = rendered();
    let secret = object(&r, "Secret", "csi-diskplugin-alicloud");
    assert_eq!(
        secret,
        &json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "csi-diskplugin-alicloud", "namespace": "kube-system"},
            "data": {"credentialsFile": "YmF6"},
            "type": "Opaque",
        })
    );
    let ds = object(&r, "DaemonSet", "csi-disk-plugin-alicloud");
    assert_eq!(
        ds["metadata"]["labels"],
        json!({"origin": "gardener", "app": "csi-disk-plugin-alicloud", "node.gardener.cloud/critical-component": "true"})
    );
    assert_eq!(
        ds["spec"]["selector"]["matchLabels"],
        json!({"app": "csi-disk-plugin-alicloud"})
    );
    let manifest = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: csi-diskplugin-alicloud\n  namespace: kube-system\ndata:\n  credentialsFile: YmF6\ntype: Opaque\n";
    let pod = &ds["spec"]["template"];
    assert_eq!(
        pod["metadata"]["annotations"],
        json!({
            "checksum/secret-csi-diskplugin-alicloud": sha256_hex(manifest),
            "node.gardener.cloud/wait-for-csi-node-alicloud": "diskplugin.csi.alibabacloud.com",
        })
    );
    assert_eq!(pod["spec"]["serviceAccount"], "csi-disk-plugin-alicloud");
    assert!(pod["spec"].get("serviceAccountName").is_none());
    assert_eq!(pod["spec"]["priorityClassName"], "system-node-critical");
    assert_eq!(pod["spec"]["hostNetwork"], true);
    assert_eq!(
        pod["spec"]["tolerations"],
        json!([
            {"effect": "NoSchedule", "operator": "Exists"},
            {"key": "CriticalAddonsOnly", "operator": "Exists"},
            {"effect": "NoExecute", "operator": "Exists"},
        ])
    );
    let init = &pod["spec"]["initContainers"][0];
    assert_eq!(init["name"], "init");
    assert_eq!(
        init["image"],
        "registry.eu-central-1.aliyuncs.com/acs/csi-plugin:v1.34.3-init"
    );
    assert_eq!(
        init["securityContext"],
        json!({"privileged": true, "allowPrivilegeEscalation": true})
    );
    assert_eq!(
        init["resources"],
        json!({"requests": {"cpu": "100m", "memory": "128Mi"}})
    );
    assert_eq!(
        names(&pod["spec"]["containers"]),
        ["driver-registrar", "csi-diskplugin", "csi-liveness-probe"]
    );
    let registrar = container(ds, "driver-registrar");
    assert_eq!(
        strings(&registrar["args"]),
        [
            "--v=5",
            "--csi-address=/csi/csi.sock",
            format!("--kubelet-registration-path={PLUG}/csi.sock").as_str()
        ]
    );
    assert_eq!(
        registrar["lifecycle"]["preStop"]["exec"]["command"],
        json!([
            "/bin/sh",
            "-c",
            "rm -rf /registration/diskplugin.csi.alibabacloud.com /registration/diskplugin.csi.alibabacloud.com-reg.sock"
        ])
    );
    let plugin = container(ds, "csi-diskplugin");
    assert_eq!(
        strings(&plugin["args"]),
        ["--endpoint=$(CSI_ENDPOINT)", "--v=5"]
    );
    assert_eq!(plugin["securityContext"], json!({"privileged": true}));
    assert_eq!(
        plugin["resources"],
        json!({"requests": {"cpu": "12m", "memory": "40Mi"}})
    );
    assert_eq!(
        plugin["env"][3],
        json!({"name": "KUBE_NODE_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}}})
    );
    assert_eq!(
        plugin["volumeMounts"],
        json!([
            {"name": "pods-mount-dir", "mountPath": "/var/lib/kubelet", "mountPropagation": "Bidirectional"},
            {"mountPath": "/dev", "name": "host-dev", "mountPropagation": "HostToContainer"},
            {"name": "cloudprovider", "mountPath": "/srv/cloudprovider"},
        ])
    );
    assert_eq!(
        pod["spec"]["volumes"],
        json!([
            {"name": "cloudprovider", "secret": {"secretName": "csi-diskplugin-alicloud"}},
            {"name": "registration-dir", "hostPath": {"path": "/var/lib/kubelet/plugins_registry", "type": "DirectoryOrCreate"}},
            {"name": "plugin-dir", "hostPath": {"path": PLUG, "type": "DirectoryOrCreate"}},
            {"name": "pods-mount-dir", "hostPath": {"path": "/var/lib/kubelet", "type": "Directory"}},
            {"name": "host-dev", "hostPath": {"path": "/dev"}},
        ])
    );
    assert!(
        !r.all().iter().any(|o| o.kind == "CSIDriver"),
        "upstream renders no CSIDriver"
    );
}

#[test]
fn a_secret_without_a_credentials_file_gets_the_one_the_webhook_writes() {
    let r = render(
        &with_ad_controller(None),
        &secret(&[("accessKeyID", "A"), ("accessKeySecret", "S")], &[]),
    );
    let secret = object(&r, "Secret", "csi-diskplugin-alicloud");
    let file = base64::engine::general_purpose::STANDARD
        .decode(secret["data"]["credentialsFile"].as_str().expect("b64"))
        .expect("base64");
    assert_eq!(
        String::from_utf8(file).expect("utf-8"),
        "[default]\ntype = access_key\naccess_key_id = A\naccess_key_secret = S"
    );
}

#[test]
fn the_rbac_is_named_as_upstreams() {
    let r = rendered();
    let e = "extensions.gardener.cloud";
    let sa = object(&r, "ServiceAccount", "csi-disk-plugin-alicloud");
    assert_eq!(sa["automountServiceAccountToken"], false);
    assert_eq!(
        r.shoot
            .iter()
            .filter(|o| o.kind == "ServiceAccount")
            .count(),
        1,
        "the sidecars' accounts come from the token requestor"
    );
    let plugin = object(
        &r,
        "ClusterRole",
        &format!("{e}:kube-system:csi-disk-plugin-alicloud"),
    );
    assert_eq!(
        plugin["rules"][0],
        json!({"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "update", "patch"]})
    );
    let binding = object(
        &r,
        "ClusterRoleBinding",
        &format!("{e}:csi-disk-plugin-alicloud"),
    );
    assert_eq!(
        binding["roleRef"]["name"],
        format!("{e}:kube-system:csi-disk-plugin-alicloud")
    );
    let role = object(&r, "Role", "csi-controller-ali-plugin");
    assert_eq!(
        role["rules"],
        json!([{"apiGroups": [""], "resources": ["configmaps", "nodes"], "verbs": ["get"]}])
    );
    object(
        &r,
        "ClusterRole",
        &format!("{e}:kube-system:csi-controller-ali-plugin"),
    );
    object(
        &r,
        "ClusterRoleBinding",
        &format!("{e}:csi-controller-ali-plugin"),
    );
    for name in [
        "csi-attacher",
        "csi-provisioner",
        "csi-resizer",
        "csi-snapshotter",
        "csi-snapshot-controller",
    ] {
        object(&r, "ClusterRole", &format!("{e}:kube-system:{name}"));
        let binding = object(&r, "ClusterRoleBinding", &format!("{e}:{name}"));
        assert_eq!(
            binding["subjects"],
            json!([{"kind": "ServiceAccount", "name": name, "namespace": "kube-system"}])
        );
        let role = object(&r, "Role", name);
        assert_eq!(role["metadata"]["namespace"], "kube-system");
        assert_eq!(
            role["rules"],
            json!([{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "watch", "list", "delete", "update", "create"]}])
        );
        object(&r, "RoleBinding", name);
    }
    let rules = |name: &str| {
        object(&r, "ClusterRole", &format!("{e}:kube-system:{name}"))["rules"]
            .as_array()
            .expect("rules")
            .len()
    };
    assert_eq!(rules("csi-resizer"), 4);
    assert_eq!(rules("csi-snapshotter"), 13);
    assert_eq!(rules("csi-provisioner"), 10);
    let provisioner = object(
        &r,
        "ClusterRole",
        &format!("{e}:kube-system:csi-provisioner"),
    );
    assert_eq!(
        provisioner["rules"][9],
        json!({"apiGroups": ["storage.k8s.io"], "resources": ["volumeattributesclasses"], "verbs": ["get"]})
    );
}

#[test]
fn one_default_storage_class_and_no_snapshot_class() {
    let r = rendered();
    assert_eq!(r.storage_classes.len(), 1);
    assert_eq!(
        r.storage_classes[0].object,
        json!({
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": "default", "annotations": {
                "storageclass.kubernetes.io/is-default-class": "true",
                "resources.gardener.cloud/delete-on-invalid-update": "true",
            }},
            "provisioner": "diskplugin.csi.alibabacloud.com",
            "volumeBindingMode": "WaitForFirstConsumer",
            "allowVolumeExpansion": true,
            "parameters": {"csi.storage.k8s.io/fstype": "ext4", "type": "cloud_essd", "readOnly": "false", "encrypted": "true"},
        })
    );
}

#[test]
fn images_have_no_version_constraint() {
    let vector = ImageVector::builtin("alicloud");
    for minor in [29, 33, 36] {
        let v = semver::Version::new(1, minor, 0);
        let find = |name: &str| {
            vector
                .find(
                    name,
                    &FindOptions {
                        target_version: Some(&v),
                        ..Default::default()
                    },
                )
                .unwrap_or_else(|e| panic!("{name}: {e}"))
        };
        for (name, image) in [
            (
                "csi-plugin-alicloud",
                "registry.eu-central-1.aliyuncs.com/acs/csi-plugin:v1.34.3",
            ),
            (
                "csi-plugin-alicloud-init",
                "registry.eu-central-1.aliyuncs.com/acs/csi-plugin:v1.34.3-init",
            ),
            (
                "csi-attacher",
                "registry.k8s.io/sig-storage/csi-attacher:v4.10.0",
            ),
            (
                "csi-provisioner",
                "registry.k8s.io/sig-storage/csi-provisioner:v5.3.0",
            ),
            (
                "csi-snapshotter",
                "registry.k8s.io/sig-storage/csi-snapshotter:v8.4.0",
            ),
            (
                "csi-snapshot-controller",
                "registry.k8s.io/sig-storage/snapshot-controller:v8.4.0",
            ),
            (
                "csi-resizer",
                "registry.k8s.io/sig-storage/csi-resizer:v1.14.0",
            ),
            (
                "csi-liveness-probe",
                "registry.k8s.io/sig-storage/livenessprobe:v2.17.0",
            ),
            (
                "csi-node-driver-registrar",
                "registry.k8s.io/sig-storage/csi-node-driver-registrar:v2.15.0",
            ),
        ] {
            assert_eq!(find(name), image, "1.{minor}");
        }
    }
}

#[test]
fn imagevector_overwrite_replaces_the_plugin_image() {
    let dir = tempfile::tempdir().expect("tempdir");
    let overwrite = dir.path().join("overwrite.yaml");
    std::fs::write(
        &overwrite,
        "images:\n- name: csi-plugin-alicloud\n  repository: example.com/csi-plugin\n  tag: v2\n",
    )
    .expect("write");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_scion"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "render",
            "--provider",
            "alicloud",
            "--objects-dir",
            "examples/objects",
            "--controlplane",
            "shoot--dev--alicloud/control-plane",
        ])
        .env("IMAGEVECTOR_OVERWRITE", &overwrite)
        .env_remove("SCION_PROVIDER")
        .env_remove("SCION_PROFILE")
        .env_remove("SCION_PROVIDER_DIR")
        .output()
        .expect("scion runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("utf-8");
    assert_eq!(
        text.matches("image: example.com/csi-plugin:v2").count(),
        2,
        "controller and node"
    );
    assert!(text.contains("image: registry.eu-central-1.aliyuncs.com/acs/csi-plugin:v1.34.3-init"));
}

#[test]
fn health_joins_the_ccm_and_both_csi_controllers() {
    let profile = scion::profile::Profile::builtin("alicloud").expect("alicloud");
    let mut declared = profile
        .control_plane()
        .expect("controlPlane")
        .health_deployments();
    declared.sort();
    assert_eq!(
        declared,
        [
            "cloud-controller-manager",
            "csi-plugin-controller",
            "csi-snapshot-controller"
        ]
    );
}
