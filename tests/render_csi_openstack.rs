//! The CSI objects of the openstack folder against the facts of
//! provider-openstack (gardener-csi.md, "provider-openstack"): hand-written
//! expectations, not snapshots of scion's output. The fixture is upstream's
//! `valuesprovider_test.go` one: namespace `test`, region `europe`, shoot
//! 1.32.0 `shoot--dev--test` with worker zones `[zone2, zone1]`, the
//! CloudProfileConfig with `rescanBlockStorageOnResize`, `ignoreVolumeAZ`,
//! `nodeVolumeAttachLimit: 25` and `requestTimeout: 5m`, password credentials.

mod support;

use support::render::*;

use base64::Engine as _;
use scion::gardener::{ControlPlane, ObjectData, ShootContext};
use scion::profile::{FindOptions, ImageVector};
use scion::render::{RenderError, Rendered};
use serde_json::{Value, json};
use support::controller::{object, render_builtin, secret};

const NS: &str = "test";
const KCP: &str = "/var/run/secrets/gardener.cloud/shoot/generic-kubeconfig/kubeconfig";
const GTK: &str = "generic-token-kubeconfig-92e9ae14";

fn cp(provider_config: Value) -> ControlPlane {
    serde_json::from_value(json!({
        "apiVersion": "extensions.gardener.cloud/v1alpha1",
        "kind": "ControlPlane",
        "metadata": {"name": "control-plane", "namespace": NS},
        "spec": {
            "type": "openstack",
            "region": "europe",
            "secretRef": {"name": "cloudprovider", "namespace": NS},
            "providerConfig": provider_config,
            "infrastructureProviderStatus": {
                "apiVersion": "openstack.provider.extensions.gardener.cloud/v1alpha1",
                "kind": "InfrastructureStatus",
                "networks": {
                    "id": "net-1", "name": "test",
                    "floatingPool": {"id": "fip-1", "name": "public"},
                    "router": {"id": "router-1"},
                    "subnets": [{"id": "subnet-1", "purpose": "nodes", "cidr": "10.250.0.0/19"}],
                    "shareNetwork": {"id": "share-net-1", "name": "sn"},
                },
            },
        },
    }))
    .expect("fixture parses")
}

fn plain_cp() -> ControlPlane {
    cp(json!({
        "apiVersion": "openstack.provider.extensions.gardener.cloud/v1alpha1",
        "kind": "ControlPlaneConfig",
        "loadBalancerProvider": "amphora",
    }))
}

fn manila_cp() -> ControlPlane {
    cp(json!({
        "apiVersion": "openstack.provider.extensions.gardener.cloud/v1alpha1",
        "kind": "ControlPlaneConfig",
        "loadBalancerProvider": "amphora",
        "storage": {"csiManila": {"enabled": true}},
    }))
}

fn shoot(minor: u64, hibernated: bool) -> ShootContext {
    let mut s = ShootContext::new(NS, semver::Version::new(1, minor, 0));
    s.generic_token_kubeconfig_secret = GTK.into();
    s.shoot.metadata.name = "test".into();
    s.shoot.spec.region = "europe".into();
    s.shoot.spec.provider.type_ = "openstack".into();
    s.shoot.spec.hibernation.enabled = hibernated;
    s.shoot.status.technical_id = Some("shoot--dev--test".into());
    s.shoot.spec.networking.pods = scion::gardener::view::Strings(vec!["100.96.0.0/11".into()]);
    for (name, zones) in [
        ("pool-a", ["zone2", "zone1"]),
        ("pool-b", ["zone1", "zone2"]),
    ] {
        let mut w = scion::gardener::cluster::Worker {
            name: name.into(),
            ..Default::default()
        };
        w.zones = scion::gardener::view::Strings(zones.iter().map(|z| z.to_string()).collect());
        s.shoot.spec.provider.workers.push(w);
    }
    s.shoot.spec.provider.infrastructure_config = Some(json!({
        "apiVersion": "openstack.provider.extensions.gardener.cloud/v1alpha1",
        "kind": "InfrastructureConfig",
        "networks": {"workers": "10.250.0.0/16"},
    }));
    s.cloud_profile.spec.provider_config =
        scion::gardener::cluster::CloudProfileConfig(Some(json!({
            "keystoneURL": "someurl",
            "rescanBlockStorageOnResize": true,
            "ignoreVolumeAZ": true,
            "nodeVolumeAttachLimit": 25,
            "requestTimeout": "5m",
            "dhcpDomain": "dhcp-domain",
        })));
    s
}

fn credentials() -> ObjectData {
    secret(
        &[
            ("domainName", "domain-name"),
            ("tenantName", "tenant-name"),
            ("username", "username"),
            ("password", "password"),
            ("authURL", "someurl"),
        ],
        &[],
    )
}

fn render(cp: &ControlPlane, shoot: &ShootContext) -> Result<Rendered, RenderError> {
    render_builtin(cp, shoot, Some(&credentials()), None)
}

fn rendered() -> Rendered {
    render(&plain_cp(), &shoot(32, false)).expect("renders")
}

fn decoded(obj: &Value, key: &str) -> String {
    let text = obj["data"][key]
        .as_str()
        .unwrap_or_else(|| panic!("data {key}"));
    String::from_utf8(
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .expect("base64"),
    )
    .expect("utf-8")
}

#[test]
fn the_disk_config_csi_secret_is_upstreams_text_and_its_checksum_rolls_the_controller() {
    let r = rendered();
    let config = r
        .config
        .iter()
        .find(|o| o.name == "cloud-provider-disk-config-csi")
        .expect("in the configuration ManagedResource");
    assert_eq!(config.object["type"], "Opaque");
    assert_eq!(config.namespace, NS);
    assert_eq!(
        decoded(&config.object, "cloudprovider.conf"),
        "[Global]\nauth-url=\"someurl\"\ndomain-name=\"domain-name\"\ntenant-name=\"tenant-name\"\nusername=\"username\"\npassword=\"password\"\nregion=\"europe\"\n[Metadata]\nrequest-timeout=5m0s\n\n[BlockStorage]\nrescan-on-resize=false\nignore-volume-az=true"
    );
    assert_eq!(
        config.object["data"].as_object().expect("data").len(),
        1,
        "no CA without one"
    );
    let deployment = object(&r, "Deployment", "csi-driver-controller");
    assert_eq!(
        deployment["spec"]["template"]["metadata"]["annotations"],
        json!({"checksum/secret-cloud-provider-disk-config-csi": "18a97052294c82c1e3689164506bb9b9c1418f492bde40e21445377795d5730f"}),
        "only the disk config's checksum, no cloudprovider one"
    );
    // The legacy disk config: the [Global] and [Metadata] sections alone.
    let legacy = object(&r, "Secret", "cloud-provider-disk-config");
    assert_eq!(
        decoded(legacy, "cloudprovider.conf"),
        "[Global]\nauth-url=\"someurl\"\ndomain-name=\"domain-name\"\ntenant-name=\"tenant-name\"\nusername=\"username\"\npassword=\"password\"\nregion=\"europe\"\n[Metadata]\nrequest-timeout=5m0s"
    );
}

#[test]
fn the_disk_config_follows_ignore_volume_az_and_carries_the_ca() {
    let mut s = shoot(32, false);
    s.cloud_profile.spec.provider_config = scion::gardener::cluster::CloudProfileConfig(Some(
        json!({"keystoneURL": "https://k/v3", "keystoneCACert": "CA-PEM", "keystoneForceInsecure": true}),
    ));
    let r = render(&plain_cp(), &s).expect("renders");
    let config = object(&r, "Secret", "cloud-provider-disk-config-csi");
    assert_eq!(
        decoded(config, "cloudprovider.conf"),
        "[Global]\nauth-url=\"https://k/v3\"\ndomain-name=\"domain-name\"\ntenant-name=\"tenant-name\"\nusername=\"username\"\npassword=\"password\"\nregion=\"europe\"\ntls-insecure=true\nca-file=\"/etc/kubernetes/cloudprovider/keystone-ca.crt\"\n[Metadata]\n\n[BlockStorage]\nrescan-on-resize=false\nignore-volume-az=false"
    );
    assert_eq!(decoded(config, "keystone-ca.crt"), "CA-PEM");
}

#[test]
fn the_request_timeout_is_printed_as_go_prints_a_duration() {
    let mut s = shoot(32, false);
    s.cloud_profile.spec.provider_config = scion::gardener::cluster::CloudProfileConfig(Some(
        json!({"keystoneURL": "u", "requestTimeout": "60s"}),
    ));
    let r = render(&plain_cp(), &s).expect("renders");
    for name in ["cloud-provider-config", "cloud-provider-disk-config-csi"] {
        let text = decoded(object(&r, "Secret", name), "cloudprovider.conf");
        assert!(
            text.contains("\n[Metadata]\nrequest-timeout=1m0s\n"),
            "{name}: {text}"
        );
    }
    s.cloud_profile.spec.provider_config = scion::gardener::cluster::CloudProfileConfig(Some(
        json!({"keystoneURL": "u", "requestTimeout": "soon"}),
    ));
    let err = render(&plain_cp(), &s).unwrap_err().to_string();
    assert!(
        err.contains("requestTimeout: time: invalid duration \"soon\""),
        "{err}"
    );
}

#[test]
fn the_cinder_controller_deployment_is_upstreams() {
    let r = rendered();
    let d = object(&r, "Deployment", "csi-driver-controller");
    assert_eq!(d["metadata"]["namespace"], NS);
    assert_eq!(
        d["metadata"]["labels"],
        json!({"app": "csi", "role": "controller", "high-availability-config.resources.gardener.cloud/type": "controller"})
    );
    assert_eq!(d["spec"]["replicas"], 1);
    assert_eq!(d["spec"]["revisionHistoryLimit"], 1);
    assert_eq!(
        d["spec"]["selector"]["matchLabels"],
        json!({"app": "csi", "role": "controller"})
    );
    assert_eq!(
        d["spec"]["strategy"],
        json!({"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}, "type": "RollingUpdate"})
    );
    let pod = &d["spec"]["template"];
    assert_eq!(
        pod["metadata"]["labels"],
        json!({
            "app": "csi", "role": "controller", "gardener.cloud/role": "controlplane",
            "networking.gardener.cloud/to-dns": "allowed",
            "networking.gardener.cloud/to-public-networks": "allowed",
            "networking.gardener.cloud/to-private-networks": "allowed",
            "networking.resources.gardener.cloud/to-kube-apiserver-tcp-443": "allowed",
        })
    );
    assert_eq!(pod["spec"]["automountServiceAccountToken"], false);
    assert_eq!(pod["spec"]["priorityClassName"], "gardener-system-300");
    assert_eq!(
        names(&pod["spec"]["containers"]),
        [
            "openstack-csi-driver",
            "openstack-csi-provisioner",
            "openstack-csi-attacher",
            "openstack-csi-snapshotter",
            "openstack-csi-resizer",
            "openstack-csi-liveness-probe"
        ]
    );
    let kubeconfig = format!("--kubeconfig={KCP}");
    let driver = container(d, "openstack-csi-driver");
    assert_eq!(
        strings(&driver["args"]),
        [
            "/bin/cinder-csi-plugin",
            "--endpoint=$(CSI_ENDPOINT)",
            "--cloud-config=/etc/kubernetes/cloudprovider/cloudprovider.conf",
            "--cluster=test",
            "--user-agent=domain-name",
            "--user-agent=tenant-name",
            "--user-agent=shoot--dev--test",
            "--v=3",
            "--provide-node-service=false",
            "--kube-api-qps=100",
            "--kube-api-burst=200",
        ]
    );
    assert_eq!(
        driver["env"],
        json!([{"name": "CSI_ENDPOINT", "value": "unix:///var/lib/csi/sockets/pluginproxy/csi.sock"}])
    );
    assert_eq!(driver["resources"], json!({"requests": {"memory": "50Mi"}}));
    assert_eq!(
        driver["ports"],
        json!([{"name": "healthz", "containerPort": 9808, "protocol": "TCP"}])
    );
    assert_eq!(
        driver["livenessProbe"],
        json!({"httpGet": {"path": "/healthz", "port": "healthz"}, "initialDelaySeconds": 10, "timeoutSeconds": 3, "periodSeconds": 10, "failureThreshold": 5})
    );
    assert_eq!(
        driver["securityContext"],
        json!({"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}})
    );
    assert_eq!(
        driver["volumeMounts"],
        json!([
            {"name": "socket-dir", "mountPath": "/var/lib/csi/sockets/pluginproxy"},
            {"name": "cloud-provider-config", "mountPath": "/etc/kubernetes/cloudprovider"},
            {"name": "usr-share-ca-certificates", "mountPath": "/usr/share/ca-certificates", "readOnly": true},
            {"name": "etc-ssl", "mountPath": "/etc/ssl", "readOnly": true},
        ])
    );
    assert_eq!(
        strings(&container(d, "openstack-csi-provisioner")["args"]),
        [
            "--csi-address=$(ADDRESS)",
            kubeconfig.as_str(),
            "--feature-gates=Topology=true",
            "--volume-name-prefix=pv-test",
            "--default-fstype=ext4",
            "--leader-election",
            "--leader-election-namespace=kube-system",
            "--timeout=3m",
            "--v=5",
            "--kube-api-qps=100",
            "--kube-api-burst=200",
            "--strict-topology",
        ]
    );
    assert_eq!(
        strings(&container(d, "openstack-csi-attacher")["args"]),
        [
            "--csi-address=$(ADDRESS)",
            kubeconfig.as_str(),
            "--leader-election",
            "--leader-election-namespace=kube-system",
            "--timeout=3m",
            "--v=5",
            "--max-entries=1000",
            "--kube-api-qps=100",
            "--kube-api-burst=200",
        ]
    );
    let snapshotter = container(d, "openstack-csi-snapshotter");
    assert_eq!(
        strings(&snapshotter["args"]),
        [
            "--csi-address=$(CSI_ENDPOINT)",
            kubeconfig.as_str(),
            "--leader-election",
            "--leader-election-namespace=kube-system",
            "--timeout=3m",
            "--snapshot-name-prefix=test",
            "--kube-api-qps=100",
            "--kube-api-burst=200",
        ]
    );
    assert_eq!(
        snapshotter["env"],
        json!([{"name": "CSI_ENDPOINT", "value": "/var/lib/csi/sockets/pluginproxy/csi.sock"}])
    );
    assert_eq!(
        strings(&container(d, "openstack-csi-resizer")["args"]),
        [
            "--csi-address=$(ADDRESS)",
            kubeconfig.as_str(),
            "--leader-election=true",
            "--leader-election-namespace=kube-system",
            "--timeout=3m",
            "--handle-volume-inuse-error=false",
            "--v=5",
            "--kube-api-qps=100",
            "--kube-api-burst=200",
        ]
    );
    for (name, memory) in [
        ("openstack-csi-provisioner", "38Mi"),
        ("openstack-csi-attacher", "36Mi"),
        ("openstack-csi-snapshotter", "36Mi"),
        ("openstack-csi-resizer", "32Mi"),
        ("openstack-csi-liveness-probe", "32Mi"),
    ] {
        let c = container(d, name);
        assert_eq!(
            c["resources"],
            json!({"requests": {"memory": memory}}),
            "{name}"
        );
        assert_eq!(
            c["imagePullPolicy"].as_str(),
            (name != "openstack-csi-liveness-probe").then_some("IfNotPresent"),
            "{name}"
        );
        if name != "openstack-csi-liveness-probe" {
            let sidecar = name.trim_start_matches("openstack-");
            assert_eq!(
                c["volumeMounts"][1],
                json!({"mountPath": "/var/run/secrets/gardener.cloud/shoot/generic-kubeconfig", "name": format!("kubeconfig-{sidecar}"), "readOnly": true}),
                "{name}"
            );
        }
    }
    let liveness = container(d, "openstack-csi-liveness-probe");
    assert_eq!(strings(&liveness["args"]), ["--csi-address=/csi/csi.sock"]);
    assert_eq!(
        liveness["volumeMounts"],
        json!([{"name": "socket-dir", "mountPath": "/csi"}])
    );
    let volumes = &pod["spec"]["volumes"];
    assert_eq!(
        names(volumes),
        [
            "socket-dir",
            "kubeconfig-csi-attacher",
            "kubeconfig-csi-provisioner",
            "kubeconfig-csi-snapshotter",
            "kubeconfig-csi-resizer",
            "usr-share-ca-certificates",
            "cloud-provider-config",
            "etc-ssl"
        ]
    );
    assert_eq!(
        volumes[2]["projected"],
        json!({"defaultMode": 420, "sources": [
            {"secret": {"items": [{"key": "kubeconfig", "path": "kubeconfig"}], "name": GTK, "optional": false}},
            {"secret": {"items": [{"key": "token", "path": "token"}], "name": "shoot-access-csi-provisioner", "optional": false}},
        ]})
    );
    assert_eq!(
        volumes[6]["secret"],
        json!({"secretName": "cloud-provider-disk-config-csi"})
    );
    assert_eq!(volumes[7]["hostPath"], json!({"path": "/etc/ssl"}));
}

#[test]
fn the_vpas_and_pdbs_are_upstreams() {
    let r = rendered();
    let vpa = object(&r, "VerticalPodAutoscaler", "csi-driver-controller-vpa");
    assert_eq!(
        vpa["spec"]["updatePolicy"]["updateMode"],
        "InPlaceOrRecreate"
    );
    assert_eq!(
        vpa["spec"]["targetRef"],
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "csi-driver-controller"})
    );
    let policies = vpa["spec"]["resourcePolicy"]["containerPolicies"]
        .as_array()
        .expect("policies");
    assert_eq!(policies.len(), 6);
    assert_eq!(
        policies[0],
        json!({"containerName": "openstack-csi-driver", "controlledValues": "RequestsOnly", "controlledResources": ["memory"]})
    );
    let pdb = object(&r, "PodDisruptionBudget", "csi-driver-controller");
    assert_eq!(
        pdb["spec"],
        json!({"maxUnavailable": 1, "selector": {"matchLabels": {"app": "csi", "role": "controller"}}, "unhealthyPodEvictionPolicy": "AlwaysAllow"})
    );
    let vpa = object(&r, "VerticalPodAutoscaler", "csi-snapshot-controller-vpa");
    assert_eq!(
        vpa["spec"]["resourcePolicy"]["containerPolicies"],
        json!([{"containerName": "openstack-csi-snapshot-controller", "controlledValues": "RequestsOnly", "controlledResources": ["memory"]}])
    );
    let pdb = object(&r, "PodDisruptionBudget", "csi-snapshot-controller");
    assert_eq!(
        pdb["spec"]["selector"]["matchLabels"],
        json!({"app": "csi-snapshot-controller", "role": "controller"})
    );
    assert!(
        !r.all()
            .iter()
            .any(|o| o.kind == "ServiceMonitor" && o.name.contains("csi")),
        "no ServiceMonitor for the openstack CSI controller"
    );
}

#[test]
fn the_snapshot_controller_is_upstreams() {
    let r = rendered();
    let d = object(&r, "Deployment", "csi-snapshot-controller");
    assert_eq!(d["spec"]["replicas"], 1);
    let pod = &d["spec"]["template"];
    assert!(pod["metadata"].get("annotations").is_none());
    assert_eq!(
        pod["metadata"]["labels"],
        json!({
            "app": "csi-snapshot-controller", "role": "controller",
            "networking.gardener.cloud/to-dns": "allowed",
            "networking.gardener.cloud/to-public-networks": "allowed",
            "networking.resources.gardener.cloud/to-kube-apiserver-tcp-443": "allowed",
        })
    );
    assert_eq!(pod["spec"]["priorityClassName"], "gardener-system-200");
    let c = container(d, "openstack-csi-snapshot-controller");
    assert_eq!(
        strings(&c["args"]),
        [
            format!("--kubeconfig={KCP}").as_str(),
            "--leader-election=true",
            "--leader-election-namespace=kube-system",
            "--kube-api-qps=100",
            "--kube-api-burst=200"
        ]
    );
    assert_eq!(c["resources"], json!({"requests": {"memory": "32Mi"}}));
    assert_eq!(
        pod["spec"]["volumes"][0]["projected"]["sources"][1]["secret"]["name"],
        "shoot-access-csi-snapshot-controller"
    );
}

#[test]
fn replicas_follow_hibernation_as_the_ccms() {
    let hibernated = shoot(32, true);
    let down =
        render_builtin(&plain_cp(), &hibernated, Some(&credentials()), Some(0)).expect("renders");
    for name in [
        "cloud-controller-manager",
        "csi-driver-controller",
        "csi-snapshot-controller",
    ] {
        assert_eq!(
            object(&down, "Deployment", name)["spec"]["replicas"],
            0,
            "{name}"
        );
    }
    let running =
        render_builtin(&plain_cp(), &hibernated, Some(&credentials()), Some(1)).expect("renders");
    assert_eq!(
        object(&running, "Deployment", "csi-driver-controller")["spec"]["replicas"],
        1
    );
}

#[test]
fn the_shoot_access_secrets_are_the_ccms_and_the_sidecars() {
    let r = rendered();
    let names: Vec<&str> = r.access_secrets.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "shoot-access-cloud-controller-manager",
            "shoot-access-csi-provisioner",
            "shoot-access-csi-attacher",
            "shoot-access-csi-snapshotter",
            "shoot-access-csi-resizer",
            "shoot-access-csi-snapshot-controller"
        ]
    );
    let s = &r.access_secrets[5].object;
    assert_eq!(
        s["metadata"]["annotations"]["serviceaccount.resources.gardener.cloud/name"],
        "csi-snapshot-controller"
    );
    assert_eq!(
        s["metadata"]["labels"]["resources.gardener.cloud/purpose"],
        "token-requestor"
    );
}

#[test]
fn the_node_plugin_is_upstreams() {
    let r = rendered();
    let secret = r
        .shoot
        .iter()
        .find(|o| o.kind == "Secret" && o.name == "cloud-provider-config")
        .expect("node config in the shoot");
    assert_eq!(secret.namespace, "kube-system");
    assert_eq!(
        decoded(&secret.object, "cloudprovider.conf"),
        "[BlockStorage]\nrescan-on-resize=true\nnode-volume-attach-limit=25"
    );
    let ds = object(&r, "DaemonSet", "csi-driver-node");
    assert_eq!(ds["metadata"]["namespace"], "kube-system");
    assert_eq!(
        ds["metadata"]["labels"],
        json!({"node.gardener.cloud/critical-component": "true", "app": "csi", "role": "disk-driver"})
    );
    let pod = &ds["spec"]["template"];
    assert_eq!(
        pod["metadata"]["annotations"],
        json!({
            "checksum/secret-cloud-provider-config": "0e66742c3ecbef3204827ea5fb266b45d02284b6119218ade6913b12b689a219",
            "node.gardener.cloud/wait-for-csi-node-openstack": "cinder.csi.openstack.org",
        })
    );
    assert_eq!(pod["spec"]["serviceAccount"], "csi-driver-node");
    assert!(pod["spec"].get("serviceAccountName").is_none());
    assert_eq!(pod["spec"]["hostNetwork"], true);
    assert_eq!(pod["spec"]["priorityClassName"], "system-node-critical");
    assert_eq!(
        pod["spec"]["securityContext"],
        json!({"seccompProfile": {"type": "RuntimeDefault"}})
    );
    assert_eq!(
        names(&pod["spec"]["containers"]),
        [
            "csi-driver",
            "csi-node-driver-registrar",
            "csi-liveness-probe"
        ]
    );
    let driver = container(ds, "csi-driver");
    assert_eq!(
        strings(&driver["args"]),
        [
            "/bin/cinder-csi-plugin",
            "--endpoint=$(CSI_ENDPOINT)",
            "--nodeid=$(NODE_ID)",
            "--cloud-config=/etc/kubernetes/cloudprovider/cloudprovider.conf",
            "--user-agent=domain-name",
            "--user-agent=tenant-name",
            "--user-agent=shoot--dev--test",
            "--v=2",
            "--vmodule=mount*=4,nodeserver=3,utils=2,driver=4,openstack=4,client=4,server=4,controllerserver=4",
            "--node-service-no-os-client=true",
            "--provide-controller-service=false",
        ]
    );
    assert_eq!(
        driver["env"][0],
        json!({"name": "CSI_ENDPOINT", "value": "unix:///csi/csi.sock"})
    );
    assert_eq!(
        driver["securityContext"],
        json!({"privileged": true, "capabilities": {"add": ["SYS_ADMIN"]}, "allowPrivilegeEscalation": true})
    );
    assert_eq!(
        driver["volumeMounts"][0]["mountPropagation"],
        "Bidirectional"
    );
    let registrar = container(ds, "csi-node-driver-registrar");
    assert_eq!(
        registrar["env"],
        json!([
            {"name": "ADDRESS", "value": "/csi/csi.sock"},
            {"name": "DRIVER_REG_SOCK_PATH", "value": "/var/lib/kubelet/plugins/cinder.csi.openstack.org/csi.sock"},
        ])
    );
    assert_eq!(
        names(&pod["spec"]["volumes"]),
        [
            "kubelet-dir",
            "plugin-dir",
            "registration-dir",
            "device-dir",
            "cloud-provider-config"
        ]
    );
    assert_eq!(
        pod["spec"]["volumes"][1]["hostPath"],
        json!({"path": "/var/lib/kubelet/plugins/cinder.csi.openstack.org/", "type": "DirectoryOrCreate"})
    );
    let csidriver = object(&r, "CSIDriver", "cinder.csi.openstack.org");
    assert_eq!(
        csidriver["spec"],
        json!({"attachRequired": true, "podInfoOnMount": true, "volumeLifecycleModes": ["Persistent", "Ephemeral"]})
    );
    let sa = object(&r, "ServiceAccount", "csi-driver-node");
    assert_eq!(sa["automountServiceAccountToken"], false);
}

#[test]
fn the_node_config_without_the_cloud_profile_flags() {
    let mut s = shoot(32, false);
    s.cloud_profile.spec.provider_config =
        scion::gardener::cluster::CloudProfileConfig(Some(json!({"keystoneURL": "u"})));
    let r = render(&plain_cp(), &s).expect("renders");
    let secret = r
        .shoot
        .iter()
        .find(|o| o.name == "cloud-provider-config")
        .expect("node config");
    assert_eq!(
        decoded(&secret.object, "cloudprovider.conf"),
        "[BlockStorage]\nrescan-on-resize=false"
    );
}

#[test]
fn the_rbac_is_named_and_scoped_as_upstreams() {
    let r = rendered();
    let prefix = "extensions.gardener.cloud:provider-openstack:";
    let cluster_roles: Vec<String> = r
        .shoot
        .iter()
        .filter(|o| o.kind == "ClusterRole" && o.name.starts_with(prefix))
        .map(|o| o.name.trim_start_matches(prefix).to_string())
        .collect();
    let mut sorted = cluster_roles.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        [
            "csi-attacher",
            "csi-driver",
            "csi-provisioner",
            "csi-resizer",
            "csi-snapshot-controller",
            "csi-snapshotter"
        ]
    );
    let rules = |name: &str| object(&r, "ClusterRole", &format!("{prefix}{name}"))["rules"].clone();
    assert!(
        rules("csi-provisioner")
            .as_array()
            .expect("rules")
            .contains(&json!({"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "watch", "list", "delete", "update", "create"]}))
    );
    assert_eq!(
        rules("csi-snapshotter")[1],
        json!({"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list"]})
    );
    assert_eq!(
        rules("csi-snapshot-controller")[2],
        json!({"apiGroups": ["storage.k8s.io"], "resources": ["storageclasses"], "verbs": ["get", "list", "watch"]})
    );
    assert_eq!(
        rules("csi-attacher")[1],
        json!({"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch", "update", "patch"]})
    );
    let driver_binding = object(&r, "ClusterRoleBinding", &format!("{prefix}csi-driver"));
    assert_eq!(
        driver_binding["subjects"],
        json!([{"kind": "ServiceAccount", "name": "csi-driver-node", "namespace": "kube-system"}])
    );
    for sa in [
        "csi-attacher",
        "csi-provisioner",
        "csi-resizer",
        "csi-snapshot-controller",
        "csi-snapshotter",
    ] {
        let binding = object(&r, "ClusterRoleBinding", &format!("{prefix}{sa}"));
        assert_eq!(binding["subjects"][0]["name"], sa);
        let role = r
            .shoot
            .iter()
            .find(|o| o.kind == "Role" && o.name == format!("{prefix}{sa}"))
            .unwrap_or_else(|| panic!("Role {sa}"));
        assert_eq!(role.namespace, "kube-system");
        assert_eq!(role.object["rules"][0]["resources"], json!(["leases"]));
        let rb = object(&r, "RoleBinding", &format!("{prefix}{sa}"));
        assert_eq!(
            rb["roleRef"],
            json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": format!("{prefix}{sa}")})
        );
    }
    assert!(
        !r.all().iter().any(|o| o.name.contains("csi-driver")
            && o.kind == "Role"
            && o.name.ends_with(":csi-driver")),
        "no Role for the node driver"
    );
}

#[test]
fn the_default_storage_classes_and_the_snapshot_class() {
    let r = rendered();
    let classes: Vec<&Value> = r
        .storage_classes
        .iter()
        .filter(|o| o.kind == "StorageClass")
        .map(|o| &o.object)
        .collect();
    assert_eq!(classes.len(), 2);
    for (class, default) in classes.iter().zip(["true", "false"]) {
        assert_eq!(
            class["metadata"]["annotations"],
            json!({"resources.gardener.cloud/delete-on-invalid-update": "true", "storageclass.kubernetes.io/is-default-class": default})
        );
        assert_eq!(class["provisioner"], "cinder.csi.openstack.org");
        assert_eq!(class["volumeBindingMode"], "WaitForFirstConsumer");
        assert_eq!(class["allowVolumeExpansion"], true);
        assert!(class.get("parameters").is_none() && class.get("reclaimPolicy").is_none());
    }
    assert_eq!(classes[0]["metadata"]["name"], "default");
    assert_eq!(classes[1]["metadata"]["name"], "default-class");
    let snapshot = object(&r, "VolumeSnapshotClass", "csi-cinder");
    assert_eq!(
        snapshot,
        &json!({
            "apiVersion": "snapshot.storage.k8s.io/v1",
            "kind": "VolumeSnapshotClass",
            "metadata": {"name": "csi-cinder", "annotations": {
                "resources.gardener.cloud/delete-on-invalid-update": "true",
                "snapshot.storage.kubernetes.io/is-default-class": "true",
            }},
            "driver": "cinder.csi.openstack.org",
            "deletionPolicy": "Delete",
        })
    );
}

#[test]
fn the_cloud_profiles_storage_classes_replace_the_defaults() {
    let mut s = shoot(32, false);
    s.cloud_profile.spec.provider_config = scion::gardener::cluster::CloudProfileConfig(Some(
        json!({
            "keystoneURL": "u",
            "storageClasses": [
                {"name": "fast", "default": true, "annotations": {"a": "b"}, "labels": {"l": "v"},
                 "parameters": {"type": "perf0", "availability": "eu01-m"}, "reclaimPolicy": "Retain",
                 "volumeBindingMode": "Immediate"},
                {"name": "other", "provisioner": "other.csi.example.com", "default": false},
            ],
        }),
    ));
    let r = render(&plain_cp(), &s).expect("renders");
    let classes: Vec<&Value> = r
        .storage_classes
        .iter()
        .filter(|o| o.kind == "StorageClass")
        .map(|o| &o.object)
        .collect();
    assert_eq!(
        classes[0],
        &json!({
            "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": "fast", "annotations": {
                "resources.gardener.cloud/delete-on-invalid-update": "true",
                "storageclass.kubernetes.io/is-default-class": "true",
                "a": "b",
            }, "labels": {"l": "v"}},
            "parameters": {"type": "perf0", "availability": "eu01-m"},
            "allowVolumeExpansion": true,
            "provisioner": "cinder.csi.openstack.org",
            "reclaimPolicy": "Retain",
            "volumeBindingMode": "Immediate",
        })
    );
    assert_eq!(
        classes[1],
        &json!({
            "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": "other", "annotations": {
                "resources.gardener.cloud/delete-on-invalid-update": "true",
                "storageclass.kubernetes.io/is-default-class": "false",
            }},
            "allowVolumeExpansion": true,
            "provisioner": "other.csi.example.com",
        }),
        "no WaitForFirstConsumer default for the CloudProfile's classes"
    );
    assert_eq!(classes.len(), 2);
    object(&r, "VolumeSnapshotClass", "csi-cinder");
}

#[test]
fn manila_is_rendered_only_when_enabled() {
    let r = rendered();
    assert!(
        !r.all().iter().any(|o| o.name.contains("manila")),
        "{:?}",
        r.all().iter().map(|o| &o.name).collect::<Vec<_>>()
    );
    let r = render(&manila_cp(), &shoot(32, false)).expect("renders");
    for (kind, name) in [
        ("Deployment", "csi-driver-manila-controller"),
        ("VerticalPodAutoscaler", "csi-driver-manila-controller"),
        ("CSIDriver", "nfs.manila.csi.openstack.org"),
        ("Secret", "manila-csi-plugin"),
        ("DaemonSet", "csi-driver-manila-node"),
        ("ServiceAccount", "csi-driver-manila-node"),
        ("VolumeSnapshotClass", "csi-manila-nfs"),
        (
            "Role",
            "extensions.gardener.cloud:provider-openstack:csi-manila-secret",
        ),
        (
            "ClusterRole",
            "extensions.gardener.cloud:provider-openstack:csi-driver-manila-node",
        ),
    ] {
        object(&r, kind, name);
    }
    assert_eq!(r.access_secrets.len(), 6, "no access Secret of its own");
}

#[test]
fn the_manila_controller_is_upstreams() {
    let r = render(&manila_cp(), &shoot(32, false)).expect("renders");
    let d = object(&r, "Deployment", "csi-driver-manila-controller");
    assert!(
        r.seed
            .iter()
            .any(|o| o.name == "csi-driver-manila-controller")
    );
    assert_eq!(
        d["metadata"]["labels"],
        json!({"app": "csi", "role": "driver-manila-controller", "high-availability-config.resources.gardener.cloud/type": "controller"})
    );
    assert_eq!(
        d["spec"]["template"]["metadata"]["annotations"]["checksum/secret-cloud-provider-disk-config-csi"],
        "18a97052294c82c1e3689164506bb9b9c1418f492bde40e21445377795d5730f"
    );
    assert_eq!(
        names(&d["spec"]["template"]["spec"]["containers"]),
        [
            "openstack-csi-manila-driver",
            "openstack-csi-manila-nfs-driver",
            "openstack-csi-manila-liveness-probe",
            "openstack-csi-manila-provisioner",
            "openstack-csi-manila-snapshotter",
            "openstack-csi-manila-resizer"
        ]
    );
    let driver = container(d, "openstack-csi-manila-driver");
    assert_eq!(
        strings(&driver["args"]),
        [
            "/bin/manila-csi-plugin",
            "--nodeid=$(NODE_ID)",
            "--endpoint=/csi/csi.sock",
            "--drivername=$(DRIVER_NAME)",
            "--v=5",
            "--share-protocol-selector=$(MANILA_SHARE_PROTO)",
            "--fwdendpoint=/csi-fwd/csi.sock",
            "--cluster-id=test",
            "--with-topology",
            "--user-agent=domain-name",
            "--user-agent=tenant-name",
            "--user-agent=shoot--dev--test",
            "--kube-api-qps=100",
            "--kube-api-burst=200",
        ]
    );
    assert_eq!(
        driver["env"][0],
        json!({"name": "DRIVER_NAME", "value": "nfs.manila.csi.openstack.org"})
    );
    assert_eq!(
        driver["env"][2],
        json!({"name": "MANILA_SHARE_PROTO", "value": "NFS"})
    );
    assert_eq!(
        strings(&container(d, "openstack-csi-manila-nfs-driver")["args"]),
        [
            "--v=5",
            "--nodeid=$(NODE_ID)",
            "--endpoint=$(CSI_ENDPOINT)",
            "--drivername=gardener.nfs.csi.k8s.io"
        ]
    );
    assert_eq!(
        strings(&container(d, "openstack-csi-manila-liveness-probe")["args"]),
        [
            "--csi-address=/csi/csi.sock",
            "--probe-timeout=3s",
            "--health-port=9808",
            "--v=2"
        ]
    );
    assert_eq!(
        strings(&container(d, "openstack-csi-manila-resizer")["args"])[6],
        "--v=3"
    );
    assert_eq!(
        names(&d["spec"]["template"]["spec"]["volumes"]),
        [
            "nfs-plugin-dir",
            "nfs-fwd-plugin-dir",
            "kubeconfig-csi-provisioner",
            "kubeconfig-csi-snapshotter",
            "kubeconfig-csi-resizer"
        ],
        "no CA volume without a CA"
    );
    let hibernated = render_builtin(
        &manila_cp(),
        &shoot(32, true),
        Some(&credentials()),
        Some(0),
    )
    .expect("renders");
    assert_eq!(
        object(&hibernated, "Deployment", "csi-driver-manila-controller")["spec"]["replicas"],
        0
    );
}

#[test]
fn the_manila_node_part_is_upstreams() {
    let r = render(&manila_cp(), &shoot(32, false)).expect("renders");
    let secret = object(&r, "Secret", "manila-csi-plugin");
    let keys: Vec<&String> = secret["data"].as_object().expect("data").keys().collect();
    assert_eq!(
        keys,
        [
            "os-authURL",
            "os-domainName",
            "os-password",
            "os-projectName",
            "os-region",
            "os-userName"
        ]
    );
    assert_eq!(decoded(secret, "os-authURL"), "someurl");
    assert_eq!(decoded(secret, "os-region"), "europe");
    assert_eq!(decoded(secret, "os-projectName"), "tenant-name");
    let classes: Vec<(&str, &Value)> = r
        .shoot
        .iter()
        .filter(|o| o.kind == "StorageClass")
        .map(|o| (o.name.as_str(), &o.object["parameters"]))
        .collect();
    assert_eq!(
        classes.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
        [
            "csi-manila-nfs",
            "csi-manila-nfs-auto",
            "csi-manila-nfs-zone1",
            "csi-manila-nfs-zone2"
        ],
        "zones sorted, each once"
    );
    assert_eq!(classes[1].1["autoTopology"], "true");
    assert_eq!(classes[2].1["availability"], "zone1");
    assert_eq!(classes[0].1["shareNetworkID"], "share-net-1");
    assert_eq!(classes[0].1["nfs-shareClient"], "10.250.0.0/19");
    assert_eq!(
        classes[0].1["csi.storage.k8s.io/node-stage-secret-name"],
        "manila-csi-plugin"
    );
    assert_eq!(classes[0].1.as_object().expect("params").len(), 11);
    let class = object(&r, "StorageClass", "csi-manila-nfs");
    assert_eq!(class["mountOptions"], json!(["nfsvers=4.1"]));
    assert_eq!(class["provisioner"], "nfs.manila.csi.openstack.org");
    assert_eq!(class["volumeBindingMode"], "WaitForFirstConsumer");
    let driver = object(&r, "CSIDriver", "nfs.manila.csi.openstack.org");
    assert_eq!(
        driver["spec"],
        json!({"attachRequired": false, "podInfoOnMount": false, "fsGroupPolicy": "None"})
    );
    let ds = object(&r, "DaemonSet", "csi-driver-manila-node");
    let pod = &ds["spec"]["template"]["spec"];
    assert_eq!(pod["dnsPolicy"], "ClusterFirstWithHostNet");
    assert_eq!(pod["serviceAccount"], "csi-driver-manila-node");
    assert_eq!(
        strings(&container(ds, "driver-manila-nfs-node")["command"]),
        [
            "/bin/sh",
            "-c",
            "/bin/manila-csi-plugin --nodeid=$(NODE_ID) --with-topology --nodeaz=$(curl http://169.254.169.254/openstack/latest/meta_data.json | jq -r .availability_zone) --endpoint=/csi/csi.sock --drivername=$(DRIVER_NAME) --share-protocol-selector=$(MANILA_SHARE_PROTO) --fwdendpoint=/csi-fwd/csi.sock --cluster-id=test --v=2"
        ]
    );
    assert_eq!(
        strings(&container(ds, "driver-nfs-nfs-node")["args"])[4],
        "--mount-permissions=511"
    );
    assert_eq!(
        container(ds, "nfs-manila-liveness-probe")["args"][1],
        "--health-port=24913"
    );
    assert_eq!(
        container(ds, "nfs-nfs-liveness-probe")["args"][1],
        "--health-port=24914"
    );
    assert_eq!(
        container(ds, "nfs-registrar")["env"][0],
        json!({"name": "DRIVER_REG_SOCK_PATH", "value": "/var/lib/kubelet/plugins/nfs.manila.csi.openstack.org/csi.sock"})
    );
    let binding = object(
        &r,
        "RoleBinding",
        "extensions.gardener.cloud:provider-openstack:csi-manila-secret",
    );
    assert_eq!(
        names(&binding["subjects"]),
        ["csi-provisioner", "csi-resizer", "csi-snapshotter"]
    );
}

#[test]
fn manila_takes_the_workers_cidr_and_the_application_credential() {
    let mut cp = manila_cp();
    cp.spec
        .infrastructure_provider_status
        .as_mut()
        .expect("infra")["networks"]["subnets"][0]["cidr"] = Value::Null;
    let app = secret(
        &[
            ("domainName", "domain-name"),
            ("tenantName", "tenant-name"),
            ("applicationCredentialID", "app-id"),
            ("applicationCredentialSecret", "app-secret"),
        ],
        &[],
    );
    let r = render_builtin(&cp, &shoot(32, false), Some(&app), None).expect("renders");
    let class = object(&r, "StorageClass", "csi-manila-nfs");
    assert_eq!(class["parameters"]["nfs-shareClient"], "10.250.0.0/16");
    let secret = object(&r, "Secret", "manila-csi-plugin");
    let keys: Vec<&String> = secret["data"].as_object().expect("data").keys().collect();
    assert_eq!(
        keys,
        [
            "os-applicationCredentialID",
            "os-applicationCredentialSecret",
            "os-authURL",
            "os-region"
        ]
    );
    // Without an InfrastructureConfig, Manila cannot be configured.
    let mut s = shoot(32, false);
    s.shoot.spec.provider.infrastructure_config = None;
    let err = render(&manila_cp(), &s).unwrap_err().to_string();
    assert!(
        err.contains("provider config is not set on the infrastructure resource"),
        "{err}"
    );
}

#[test]
fn images_follow_upstreams_pins_per_minor() {
    let vector = ImageVector::builtin("openstack");
    let find = |name: &str, minor: u64| {
        let v = semver::Version::new(1, minor, 3);
        vector.find(
            name,
            &FindOptions {
                target_version: Some(&v),
                ..Default::default()
            },
        )
    };
    for (minor, tag) in [
        (32, "v1.32.1"),
        (33, "v1.33.1"),
        (34, "v1.34.1"),
        (35, "v1.35.0"),
        (36, "v1.36.0"),
        (40, "v1.36.0"),
    ] {
        assert_eq!(
            find("csi-driver-cinder", minor).expect("cinder"),
            format!("registry.k8s.io/provider-os/cinder-csi-plugin:{tag}")
        );
        assert_eq!(
            find("csi-driver-manila", minor).expect("manila"),
            format!("registry.k8s.io/provider-os/manila-csi-plugin:{tag}")
        );
    }
    assert!(
        find("csi-driver-cinder", 31).is_err(),
        "no cinder image below 1.32"
    );
    assert_eq!(
        find("csi-provisioner", 33).expect("p"),
        "registry.k8s.io/sig-storage/csi-provisioner:v5.3.0"
    );
    assert_eq!(
        find("csi-provisioner", 34).expect("p"),
        "registry.k8s.io/sig-storage/csi-provisioner:v6.3.0"
    );
    assert_eq!(
        find("csi-resizer", 33).expect("r"),
        "registry.k8s.io/sig-storage/csi-resizer:v1.14.0"
    );
    assert_eq!(
        find("csi-resizer", 35).expect("r"),
        "registry.k8s.io/sig-storage/csi-resizer:v2.2.1"
    );
    for (name, image) in [
        (
            "csi-attacher",
            "registry.k8s.io/sig-storage/csi-attacher:v4.12.0",
        ),
        (
            "csi-snapshotter",
            "registry.k8s.io/sig-storage/csi-snapshotter:v8.6.0",
        ),
        (
            "csi-snapshot-controller",
            "registry.k8s.io/sig-storage/snapshot-controller:v8.6.0",
        ),
        (
            "csi-liveness-probe",
            "registry.k8s.io/sig-storage/livenessprobe:v2.19.0",
        ),
        (
            "csi-node-driver-registrar",
            "registry.k8s.io/sig-storage/csi-node-driver-registrar:v2.17.0",
        ),
        (
            "csi-driver-nfs",
            "registry.k8s.io/sig-storage/nfsplugin:v4.13.4",
        ),
    ] {
        assert_eq!(find(name, 33).expect(name), image);
    }
    // The render picks them by the shoot's version; 1.31 has no Cinder image.
    let r = render(&plain_cp(), &shoot(34, false)).expect("renders");
    let d = object(&r, "Deployment", "csi-driver-controller");
    assert_eq!(
        container(d, "openstack-csi-driver")["image"],
        "registry.k8s.io/provider-os/cinder-csi-plugin:v1.34.1"
    );
    assert_eq!(
        container(d, "openstack-csi-provisioner")["image"],
        "registry.k8s.io/sig-storage/csi-provisioner:v6.3.0"
    );
    let err = render(&plain_cp(), &shoot(31, false))
        .unwrap_err()
        .to_string();
    assert!(err.contains("could not find image"), "{err}");
}

#[test]
fn imagevector_overwrite_replaces_the_csi_images_in_render_and_images() {
    let dir = tempfile::tempdir().expect("tempdir");
    let overwrite = dir.path().join("overwrite.yaml");
    std::fs::write(
        &overwrite,
        "images:\n- name: csi-driver-cinder\n  repository: example.com/cinder\n  tag: v9\n  targetVersion: 1.33.x\n- name: csi-node-driver-registrar\n  repository: example.com/registrar\n  tag: v1\n",
    )
    .expect("write");
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let run = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_scion"))
            .current_dir(&root)
            .args(args)
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
        String::from_utf8(out.stdout).expect("utf-8")
    };
    let images = run(&["images", "--provider", "openstack"]);
    assert!(images.contains("example.com/cinder"), "{images}");
    assert!(
        images.contains("registry.k8s.io/provider-os/manila-csi-plugin"),
        "{images}"
    );
    let text = run(&[
        "render",
        "--provider",
        "openstack",
        "--objects-dir",
        "examples/objects",
        "--controlplane",
        "shoot--dev--openstack/control-plane",
    ]);
    assert!(
        text.contains("image: example.com/cinder:v9"),
        "the example shoot is 1.33"
    );
    assert!(text.contains("image: example.com/registrar:v1"));
    assert!(!text.contains("cinder-csi-plugin:v1.33.1"));
}

#[test]
fn health_joins_the_ccm_and_both_csi_controllers() {
    let profile = scion::profile::Profile::builtin("openstack").expect("openstack");
    let mut declared = profile
        .control_plane()
        .expect("controlPlane")
        .health_deployments();
    declared.sort();
    assert_eq!(
        declared,
        [
            "cloud-controller-manager",
            "csi-driver-controller",
            "csi-snapshot-controller"
        ],
        "upstream's healthcheck/add.go; not the Manila controller"
    );
}
