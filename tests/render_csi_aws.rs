//! The EBS CSI driver of aws (`src/providers/aws/components/csi-driver.yaml`)
//! against the reference (gardener-csi.md, provider-aws sections 1-5, 7, 8):
//! every expectation below is written by hand from the reference, not
//! recorded from scion's output.

mod support;

use support::render::*;

use scion::gardener::ShootContext;
use scion::render::Rendered;
use serde_json::{Value, json};
use support::controller::*;

const KCP: &str = "/var/run/secrets/gardener.cloud/shoot/generic-kubeconfig";
const VAC: &str = "aws.provider.extensions.gardener.cloud/enable-volume-attributes-class";

fn render_with(shoot: &ShootContext, provider_config: Option<Value>, wi: bool) -> Rendered {
    let secret = if wi {
        aws_wi_secret()
    } else {
        aws_static_secret()
    };
    render_builtin(
        &aws_cp(provider_config, aws_subnets()),
        shoot,
        Some(&secret),
        None,
    )
    .expect("renders")
}

fn render_default() -> Rendered {
    render_with(&shoot(&["IPv4"], false), None, false)
}

#[test]
fn the_controller_deployment_has_the_driver_and_its_sidecars_in_order() {
    let r = render_default();
    let d = object(&r, "Deployment", "csi-driver-controller");
    assert_eq!(d["metadata"]["namespace"], NS);
    assert_eq!(
        d["metadata"]["labels"],
        json!({"app": "csi", "role": "controller", "high-availability-config.resources.gardener.cloud/type": "controller"})
    );
    assert_eq!(d["spec"]["replicas"], 1);
    assert_eq!(d["spec"]["revisionHistoryLimit"], 1);
    assert_eq!(
        d["spec"]["strategy"]["rollingUpdate"],
        json!({"maxSurge": "25%", "maxUnavailable": "25%"})
    );
    let pod = &d["spec"]["template"];
    assert_eq!(
        pod["metadata"]["annotations"],
        json!({"checksum/secret-cloudprovider": scion::checksum::secret_checksum(match &aws_static_secret() {
            scion::gardener::ObjectData::Secret { data, .. } => data.as_ref(),
            _ => None,
        })})
    );
    assert_eq!(
        pod["metadata"]["labels"],
        json!({"app": "csi", "role": "controller", "gardener.cloud/role": "controlplane",
               "networking.gardener.cloud/to-dns": "allowed",
               "networking.gardener.cloud/to-public-networks": "allowed",
               "networking.resources.gardener.cloud/to-kube-apiserver-tcp-443": "allowed"})
    );
    assert_eq!(pod["spec"]["automountServiceAccountToken"], false);
    assert_eq!(pod["spec"]["priorityClassName"], "gardener-system-300");
    let names: Vec<&str> = containers(d)
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "aws-csi-driver",
            "aws-csi-volume-modifier",
            "aws-csi-provisioner",
            "aws-csi-attacher",
            "aws-csi-snapshotter",
            "aws-csi-resizer",
            "aws-csi-liveness-probe"
        ]
    );
    let driver = container(d, "aws-csi-driver");
    assert_eq!(
        strings(&driver["args"]),
        [
            "controller",
            "--endpoint=$(CSI_ENDPOINT)",
            &format!("--k8s-tag-cluster-id={NS}"),
            "--logtostderr",
            "--v=5",
            "--batching=true",
            "--http-endpoint=0.0.0.0:3301"
        ]
    );
    assert_eq!(
        driver["env"],
        json!([
            {"name": "CSI_ENDPOINT", "value": "unix:///var/lib/csi/sockets/pluginproxy/csi.sock"},
            {"name": "AWS_SHARED_CREDENTIALS_FILE", "value": "/srv/cloudprovider/credentialsFile"},
            {"name": "AWS_REGION", "value": "eu-west-1"},
        ])
    );
    assert_eq!(
        driver["image"],
        "registry.k8s.io/provider-aws/aws-ebs-csi-driver:v1.63.1"
    );
    assert_eq!(driver["livenessProbe"]["failureThreshold"], 5);
    let provisioner = container(d, "aws-csi-provisioner");
    assert_eq!(
        strings(&provisioner["args"]),
        [
            "--csi-address=$(ADDRESS)",
            &format!("--kubeconfig={KCP}/kubeconfig"),
            &format!("--volume-name-prefix=pv-{NS}"),
            "--extra-create-metadata=true",
            "--default-fstype=ext4",
            "--leader-election=true",
            "--leader-election-namespace=kube-system",
            "--kube-api-qps=100",
            "--kube-api-burst=200",
            "--worker-threads=100",
            "--retry-interval-max=10m",
            "--strict-topology",
            "--v=5"
        ]
    );
    assert_eq!(provisioner["resources"]["requests"]["memory"], "38Mi");
    let snapshotter = container(d, "aws-csi-snapshotter");
    assert_eq!(
        snapshotter["env"],
        json!([{"name": "CSI_ENDPOINT", "value": "/var/lib/csi/sockets/pluginproxy/csi.sock"}])
    );
    assert!(strings(&snapshotter["args"]).contains(&format!("--snapshot-name-prefix={NS}")));
    let resizer = container(d, "aws-csi-resizer");
    assert_eq!(
        strings(&resizer["args"])[4..],
        [
            "--handle-volume-inuse-error=false",
            "--v=5",
            "--extra-modify-metadata",
            "--timeout=60s",
            "--kube-api-qps=100",
            "--kube-api-burst=200",
            "--workers=100",
            "--retry-interval-max=10m"
        ]
    );
    let probe = container(d, "aws-csi-liveness-probe");
    assert!(probe.get("imagePullPolicy").is_none());
    assert_eq!(
        probe["volumeMounts"],
        json!([{"name": "socket-dir", "mountPath": "/csi"}])
    );
    let volumes: Vec<&str> = d["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        volumes,
        [
            "socket-dir",
            "cloudprovider",
            "kubeconfig-csi-attacher",
            "kubeconfig-csi-provisioner",
            "kubeconfig-csi-snapshotter",
            "kubeconfig-csi-resizer",
            "kubeconfig-csi-volume-modifier"
        ]
    );
    let attacher = &d["spec"]["template"]["spec"]["volumes"][2];
    assert_eq!(
        attacher["projected"],
        json!({"defaultMode": 420, "sources": [
            {"secret": {"name": "generic-token-kubeconfig-92e9ae14", "items": [{"key": "kubeconfig", "path": "kubeconfig"}], "optional": false}},
            {"secret": {"name": "shoot-access-csi-attacher", "items": [{"key": "token", "path": "token"}], "optional": false}},
        ]})
    );
    assert_eq!(
        d["spec"]["template"]["spec"]["volumes"][1]["projected"]["sources"][0]["secret"]["items"],
        json!([{"key": "credentialsFile", "path": "credentialsFile"}])
    );
}

#[test]
fn workload_identity_changes_the_credentials_file_and_the_volume() {
    let r = render_with(&shoot(&["IPv4"], false), None, true);
    let d = object(&r, "Deployment", "csi-driver-controller");
    let driver = container(d, "aws-csi-driver");
    assert_eq!(
        driver["env"][1]["value"],
        "/var/run/secrets/gardener.cloud/workload-identity/credentialsFile"
    );
    assert_eq!(
        driver["volumeMounts"][0]["mountPath"],
        "/var/run/secrets/gardener.cloud/workload-identity"
    );
    assert_eq!(
        d["spec"]["template"]["spec"]["volumes"][1]["projected"]["sources"][0]["secret"]["items"],
        json!([{"key": "token", "path": "token"}, {"key": "credentialsFile", "path": "credentialsFile"}])
    );
}

#[test]
fn the_volume_attributes_class_gate_keeps_its_trailing_comma_below_1_34_only() {
    let gate = "--feature-gates=VolumeAttributesClass=true,".to_string();
    for (minor, value, want) in [
        (33, "true", true),
        (33, "false", false),
        (34, "true", false),
    ] {
        let s = with_annotation(with_version(shoot(&["IPv4"], false), minor), VAC, value);
        let r = render_with(&s, None, false);
        let d = object(&r, "Deployment", "csi-driver-controller");
        for c in ["aws-csi-provisioner", "aws-csi-resizer"] {
            let args = strings(&container(d, c)["args"]);
            assert_eq!(
                args.last() == Some(&gate),
                want,
                "1.{minor} {value} {c}: {args:?}"
            );
        }
    }
    let no_annotation = render_default();
    let d = object(&no_annotation, "Deployment", "csi-driver-controller");
    assert!(!strings(&container(d, "aws-csi-provisioner")["args"]).contains(&gate));
}

#[test]
fn the_provisioner_and_resizer_images_follow_the_minor() {
    for (minor, provisioner, resizer) in [(33, "v5.3.0", "v1.14.0"), (34, "v6.3.0", "v2.2.1")] {
        let r = render_with(&with_version(shoot(&["IPv4"], false), minor), None, false);
        let d = object(&r, "Deployment", "csi-driver-controller");
        assert_eq!(
            container(d, "aws-csi-provisioner")["image"],
            format!("registry.k8s.io/sig-storage/csi-provisioner:{provisioner}")
        );
        assert_eq!(
            container(d, "aws-csi-resizer")["image"],
            format!("registry.k8s.io/sig-storage/csi-resizer:{resizer}")
        );
    }
}

#[test]
fn hibernated_shoots_get_no_replicas() {
    let r = render_builtin(
        &aws_cp(None, aws_subnets()),
        &shoot(&["IPv4"], true),
        Some(&aws_static_secret()),
        None,
    )
    .expect("renders");
    for name in ["csi-driver-controller", "csi-snapshot-controller"] {
        assert_eq!(
            object(&r, "Deployment", name)["spec"]["replicas"],
            0,
            "{name}"
        );
    }
}

#[test]
fn the_snapshot_controller_vpas_pdbs_service_and_monitor() {
    let r = render_default();
    let d = object(&r, "Deployment", "csi-snapshot-controller");
    let pod = &d["spec"]["template"];
    assert!(pod["metadata"].get("annotations").is_none());
    assert_eq!(pod["spec"]["priorityClassName"], "gardener-system-200");
    assert!(
        pod["metadata"]["labels"]
            .get("gardener.cloud/role")
            .is_none()
    );
    let c = container(d, "aws-csi-snapshot-controller");
    assert_eq!(
        strings(&c["args"]),
        [
            format!("--kubeconfig={KCP}/kubeconfig"),
            "--leader-election=true".into(),
            "--leader-election-namespace=kube-system".into()
        ]
    );
    assert_eq!(
        c["image"],
        "registry.k8s.io/sig-storage/snapshot-controller:v8.6.0"
    );
    let vpa = object(&r, "VerticalPodAutoscaler", "csi-driver-controller-vpa");
    let policies: Vec<&str> = vpa["spec"]["resourcePolicy"]["containerPolicies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["containerName"].as_str().unwrap())
        .collect();
    assert_eq!(
        policies,
        [
            "aws-csi-driver",
            "aws-csi-provisioner",
            "aws-csi-attacher",
            "aws-csi-snapshotter",
            "aws-csi-resizer",
            "aws-csi-liveness-probe",
            "aws-csi-volume-modifier"
        ]
    );
    let pdb = object(&r, "PodDisruptionBudget", "csi-snapshot-controller");
    assert_eq!(
        pdb["spec"]["selector"]["matchLabels"],
        json!({"app": "csi-snapshot-controller", "role": "controller"})
    );
    let svc = object(&r, "Service", "csi-driver-controller");
    assert_eq!(
        svc["metadata"]["annotations"]["networking.resources.gardener.cloud/from-world-to-ports"],
        "[{\"port\":3301,\"protocol\":\"TCP\"}]"
    );
    assert_eq!(svc["spec"]["clusterIP"], "None");
    let sm = object(&r, "ServiceMonitor", "shoot-csi-driver-controller");
    assert_eq!(sm["metadata"]["labels"], json!({"prometheus": "shoot"}));
}

#[test]
fn shoot_access_secrets_and_health() {
    let r = render_default();
    let names: Vec<&str> = r.access_secrets.iter().map(|s| s.name.as_str()).collect();
    for sa in [
        "csi-provisioner",
        "csi-attacher",
        "csi-snapshotter",
        "csi-resizer",
        "csi-snapshot-controller",
        "csi-volume-modifier",
    ] {
        let name = format!("shoot-access-{sa}");
        assert!(names.contains(&name.as_str()), "{name}");
        let s = object(&r, "Secret", &name);
        assert_eq!(
            s["metadata"]["annotations"]["serviceaccount.resources.gardener.cloud/name"],
            sa
        );
    }
    let spec = builtin_spec("aws").expect("spec");
    assert_eq!(
        spec.health_deployments(),
        // gardener-csi.md aws §8: the custom-route controller too (always
        // present, 0 replicas when disabled)
        [
            "cloud-controller-manager",
            "csi-driver-controller",
            "csi-snapshot-controller",
            "aws-custom-route-controller"
        ]
    );
    // gardener-csi.md aws §6.1: the newest Event of the controller's
    // ServiceAccount in the shoot, a Warning younger than 5 minutes, fails it
    let events = spec.health_events();
    assert_eq!(events.len(), 1, "{events:#?}");
    let crc = &events[0];
    assert_eq!(
        (
            crc.component.as_str(),
            crc.kind.as_str(),
            crc.namespace.as_str(),
            crc.name.as_str(),
            crc.within,
            crc.after.clone()
        ),
        (
            "aws-custom-route-controller",
            "ServiceAccount",
            "kube-system",
            "aws-custom-route-controller",
            std::time::Duration::from_secs(300),
            vec!["aws-custom-route-controller".to_string()]
        )
    );
    let codes: Vec<(Option<&str>, &str)> = crc
        .codes
        .iter()
        .map(|c| (c.message_contains.as_deref(), c.code.as_str()))
        .collect();
    assert_eq!(
        codes,
        [
            (Some("RouteLimitExceeded"), "ERR_INFRA_QUOTA_EXCEEDED"),
            (None, "ERR_RETRYABLE_INFRA_DEPENDENCIES")
        ]
    );
    // read only while the controller is in use
    let when = crc.when.as_ref().expect("when");
    let mut shoot =
        support::controller::providers::provider_shoot("aws", "eu-west-1", &["IPv4"], false);
    let facts = |s: &scion::gardener::ShootContext| {
        when.eval(&scion::profile::Facts::of_shoot(s))
            .expect("evaluates")
    };
    assert!(!facts(&shoot));
    shoot.shoot.spec.provider.control_plane_config =
        Some(serde_json::json!({"cloudControllerManager": {"useCustomRouteController": true}}));
    assert!(facts(&shoot));
}

#[test]
fn the_node_daemonset_csidriver_and_rbac() {
    let r = render_default();
    let ds = object(&r, "DaemonSet", "csi-driver-node");
    assert_eq!(ds["metadata"]["namespace"], "kube-system");
    assert_eq!(
        ds["spec"]["template"]["metadata"]["annotations"],
        json!({"node.gardener.cloud/wait-for-csi-node-aws": "ebs.csi.aws.com"})
    );
    let driver = container(ds, "csi-driver");
    assert_eq!(
        strings(&driver["args"]),
        [
            "node",
            "--endpoint=$(CSI_ENDPOINT)",
            "--logtostderr",
            "--v=3",
            "--vmodule=node_*=4,mount*=4,driver=4,controller=4"
        ]
    );
    let registrar = container(ds, "csi-node-driver-registrar");
    assert_eq!(
        registrar["env"][1],
        json!({"name": "DRIVER_REG_SOCK_PATH", "value": "/var/lib/kubelet/plugins/ebs.csi.aws.com/csi.sock"})
    );
    let s = with_annotation(
        with_annotation(
            shoot(&["IPv4"], false),
            "aws.provider.extensions.gardener.cloud/volume-attach-limit",
            "25",
        ),
        "aws.provider.extensions.gardener.cloud/legacy-xfs",
        "true",
    );
    let r2 = render_with(&s, None, false);
    let args =
        strings(&container(object(&r2, "DaemonSet", "csi-driver-node"), "csi-driver")["args"]);
    assert_eq!(
        args[2..4],
        ["--volume-attach-limit=25", "--legacy-xfs=true"]
    );
    let csidriver = object(&r, "CSIDriver", "ebs.csi.aws.com");
    assert_eq!(
        csidriver["spec"],
        json!({"attachRequired": true, "podInfoOnMount": false})
    );
    for sa in ["csi-driver-node", "csi-volume-modifier"] {
        assert_eq!(
            object(&r, "ServiceAccount", sa)["automountServiceAccountToken"],
            false
        );
    }
    let p = "extensions.gardener.cloud:provider-aws";
    let binding = object(&r, "ClusterRoleBinding", &format!("{p}:csi-driver"));
    assert_eq!(binding["subjects"][0]["name"], "csi-driver-node");
    let role = object(&r, "Role", &format!("{p}:csi-snapshot-controller"));
    assert_eq!(
        role["rules"],
        json!([{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "watch", "list", "delete", "update", "create"]}])
    );
    let provisioner = object(&r, "ClusterRole", &format!("{p}:csi-provisioner"));
    assert_eq!(
        provisioner["rules"][9],
        json!({"apiGroups": ["storage.k8s.io"], "resources": ["volumeattributesclasses"], "verbs": ["get"]})
    );
}

#[test]
fn storage_classes_are_default_unless_the_control_plane_config_says_otherwise() {
    for (config, default) in [
        (None, true),
        (
            Some(
                json!({"apiVersion": "aws.provider.extensions.gardener.cloud/v1alpha1", "kind": "ControlPlaneConfig", "storage": {"managedDefaultClass": true}}),
            ),
            true,
        ),
        (
            Some(
                json!({"apiVersion": "aws.provider.extensions.gardener.cloud/v1alpha1", "kind": "ControlPlaneConfig", "storage": {"managedDefaultClass": false}}),
            ),
            false,
        ),
    ] {
        let r = render_with(&shoot(&["IPv4"], false), config, false);
        let sc = object(&r, "StorageClass", "default");
        let mut annotations = json!({"resources.gardener.cloud/delete-on-invalid-update": "true"});
        if default {
            annotations["storageclass.kubernetes.io/is-default-class"] = json!("true");
        }
        assert_eq!(sc["metadata"]["annotations"], annotations);
        assert_eq!(sc["provisioner"], "ebs.csi.aws.com");
        assert_eq!(sc["parameters"], json!({"encrypted": "true"}));
        assert_eq!(sc["volumeBindingMode"], "WaitForFirstConsumer");
        assert_eq!(sc["allowVolumeExpansion"], true);
        assert!(sc.get("reclaimPolicy").is_none());
        let vsc = object(&r, "VolumeSnapshotClass", "default");
        if default {
            assert_eq!(
                vsc["metadata"]["annotations"],
                json!({"snapshot.storage.kubernetes.io/is-default-class": "true"})
            );
        } else {
            assert!(vsc["metadata"].get("annotations").is_none(), "{vsc}");
        }
        assert_eq!(vsc["driver"], "ebs.csi.aws.com");
        assert_eq!(vsc["deletionPolicy"], "Delete");
        assert!(r.storage_classes.iter().any(|o| o.name == "default"));
    }
}
