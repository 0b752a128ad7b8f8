//! The OperatingSystemConfig webhook through the server's path
//! (`WebhookMutator` over a `Snapshot`), for all five providers: the
//! reference's derived golden vectors (kubelet unit, file contents and their
//! SHA-256), an OSC the Go extension already mutated (no patch), mutating
//! twice equals once, the recorded example OSCs of examples/osc/, and the
//! denials for input Gardener cannot decode.

mod support;

use base64::Engine as _;
use scion::admission::{Denial, Verdict};
use scion::gardener::ShootContext;
use scion::mutation::WebhookMutator;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use support::mutation::{NS, mutator, request, run, shoot, snapshot};

/// The gardenlet kubelet unit of the reference (§1.2, 827 bytes).
const GARDENLET_UNIT: &str = "[Unit]\nDescription=kubelet daemon\nDocumentation=https://kubernetes.io/docs/admin/kubelet\nAfter=containerd.service\n[Install]\nWantedBy=multi-user.target\n[Service]\nRestart=always\nRestartSec=5\nEnvironment=\"HTTP2_READ_IDLE_TIMEOUT_SECONDS=25\" \"HTTP2_PING_TIMEOUT_SECONDS=12\"\nEnvironmentFile=/etc/environment\nEnvironmentFile=-/var/lib/kubelet/extra_args\nExecStart=/opt/bin/kubelet \\\n    --bootstrap-kubeconfig=/var/lib/kubelet/kubeconfig-bootstrap \\\n    --config=/var/lib/kubelet/config/kubelet \\\n    --kubeconfig=/var/lib/kubelet/kubeconfig-real \\\n    --node-labels=worker.gardener.cloud/kubernetes-version=1.33.3 \\\n    --node-labels=worker.gardener.cloud/pool=worker-a \\\n    --container-runtime-endpoint=unix:///run/containerd/containerd.sock \\\n    --runtime-cgroups=/system.slice/containerd.service \\\n    --v=2 $KUBELET_EXTRA_ARGS";

/// The reference's output for AWS with ECR off (928 bytes).
const AWS_UNIT: &str = "[Unit]\nDescription=kubelet daemon\nDocumentation=https://kubernetes.io/docs/admin/kubelet\nAfter=containerd.service\n\n[Install]\nWantedBy=multi-user.target\n\n[Service]\nRestart=always\nRestartSec=5\nEnvironment=\"HTTP2_READ_IDLE_TIMEOUT_SECONDS=25\" \"HTTP2_PING_TIMEOUT_SECONDS=12\"\nEnvironmentFile=/etc/environment\nEnvironmentFile=-/var/lib/kubelet/extra_args\nExecStart=/opt/bin/kubelet --bootstrap-kubeconfig=/var/lib/kubelet/kubeconfig-bootstrap \\\n    --config=/var/lib/kubelet/config/kubelet \\\n    --kubeconfig=/var/lib/kubelet/kubeconfig-real \\\n    --node-labels=worker.gardener.cloud/kubernetes-version=1.33.3 \\\n    --node-labels=worker.gardener.cloud/pool=worker-a \\\n    --container-runtime-endpoint=unix:///run/containerd/containerd.sock \\\n    --runtime-cgroups=/system.slice/containerd.service \\\n    --v=2 \\\n    $KUBELET_EXTRA_ARGS \\\n    --cloud-provider=external\nExecStartPre=/bin/sh -c 'hostnamectl set-hostname $(hostname -f)'\n";

/// Gardener's kubelet configuration codec golden vector (configcodec_test.go).
const KUBELET_CONFIG: &str = include_str!("../src/gocompat/testdata/kubelet-config-golden.yaml");

const SYSCTL: &str =
    "kernel.panic = 10\nnet.ipv4.conf.all.forwarding = 1\nvm.max_map_count = 135217728\n";

fn b64(text: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(text)
}

fn sha256(text: &str) -> String {
    format!("{:x}", Sha256::digest(text.as_bytes()))
}

fn osc(purpose: &str, unit: &str, config: &str, sysctl: &str) -> Value {
    json!({
        "apiVersion": "extensions.gardener.cloud/v1alpha1",
        "kind": "OperatingSystemConfig",
        "metadata": {"name": "gardener-node-agent-worker-a-77ac3-original", "namespace": NS,
            "labels": {"worker.gardener.cloud/pool": "worker-a",
                "provider.extensions.gardener.cloud/mutated-by-controlplane-webhook": "true"}},
        "spec": {"type": "gardenlinux", "purpose": purpose,
            "units": [{"name": "kubelet.service", "command": "start", "enable": true, "content": unit}],
            "files": [
                {"path": "/var/lib/kubelet/config/kubelet", "permissions": 384,
                    "content": {"inline": {"encoding": "b64", "data": b64(config)}}},
                {"path": "/etc/sysctl.d/99-k8s-general.conf", "permissions": 420,
                    "content": {"inline": {"encoding": "", "data": sysctl}}}
            ]}
    })
}

fn shoot_for(provider: &str, version: &str) -> ShootContext {
    let mut s = shoot(version);
    s.shoot.spec.provider.type_ = provider.into();
    s
}

/// The object after the webhook, and the patch bytes.
fn mutate(m: &WebhookMutator, object: &Value) -> (Value, Vec<u8>) {
    let req = request_in_namespace(object);
    let verdict = run(m, &req).unwrap_or_else(|d| panic!("denied: {d}"));
    let (patch, patched) = support::mutation::patch_and_apply(&req, &verdict);
    (patched, serde_json::to_vec(&patch).unwrap())
}

/// An UPDATE request in the object's own namespace.
fn request_in_namespace(object: &Value) -> scion::admission::AdmissionRequest {
    let mut req = request(object.clone());
    req.namespace = object["metadata"]["namespace"]
        .as_str()
        .unwrap()
        .to_string();
    req
}

fn unit_content<'a>(object: &'a Value, name: &str) -> &'a str {
    object["spec"]["units"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["name"] == name)
        .and_then(|u| u["content"].as_str())
        .unwrap_or_else(|| panic!("no unit {name}"))
}

fn file<'a>(object: &'a Value, path: &str) -> &'a Value {
    object["spec"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == path)
        .unwrap_or_else(|| panic!("no file {path}"))
}

fn inline_text(object: &Value, path: &str) -> String {
    let inline = &file(object, path)["content"]["inline"];
    let data = inline["data"].as_str().unwrap();
    match inline["encoding"].as_str().unwrap() {
        "b64" => String::from_utf8(
            base64::engine::general_purpose::STANDARD
                .decode(data)
                .unwrap(),
        )
        .unwrap(),
        _ => data.to_string(),
    }
}

fn aws_without_ecr_and_mtu() -> WebhookMutator {
    let mut s = shoot_for("aws", "1.33.3");
    s.shoot.spec.provider.infrastructure_config = Some(json!({
        "apiVersion": "aws.provider.extensions.gardener.cloud/v1alpha1",
        "kind": "InfrastructureConfig", "enableECRAccess": false, "enableMTUCustomizer": false}));
    mutator("aws", snapshot(s, &[]))
}

#[test]
fn aws_kubelet_unit_is_the_reference_golden_vector() {
    assert_eq!(GARDENLET_UNIT.len(), 827);
    assert_eq!(AWS_UNIT.len(), 928);
    let m = aws_without_ecr_and_mtu();
    let (once, _) = mutate(
        &m,
        &osc("reconcile", GARDENLET_UNIT, KUBELET_CONFIG, SYSCTL),
    );
    assert_eq!(unit_content(&once, "kubelet.service"), AWS_UNIT);
    assert_eq!(
        inline_text(&once, "/etc/sysctl.d/99-k8s-general.conf"),
        format!(
            "{SYSCTL}\n# AWS specific settings\n# See https://github.com/kubernetes/kubernetes/issues/23395\nnet.ipv4.neigh.default.gc_thresh1 = 0"
        )
    );
    // The golden kubelet configuration already has everything AWS wants:
    // the file's bytes do not change.
    assert_eq!(
        file(&once, "/var/lib/kubelet/config/kubelet")["content"]["inline"]["data"],
        b64(KUBELET_CONFIG)
    );
    assert_eq!(
        once["spec"]["files"].as_array().unwrap().len(),
        2,
        "ECR and MTU off: no files"
    );
}

#[test]
fn an_osc_the_go_extension_already_mutated_gets_no_patch() {
    // Every value below is the Go extension's output as the reference
    // derives it, not scion's.
    let go_mutated_sysctl = format!(
        "{SYSCTL}\n# AWS specific settings\n# See https://github.com/kubernetes/kubernetes/issues/23395\nnet.ipv4.neigh.default.gc_thresh1 = 0"
    );
    let object = osc("reconcile", AWS_UNIT, KUBELET_CONFIG, &go_mutated_sysctl);
    let m = aws_without_ecr_and_mtu();
    let verdict = run(&m, &request(object)).unwrap();
    assert_eq!(verdict, Verdict::Unchanged);
}

#[test]
fn provision_and_other_purposes_pass_unchanged_without_a_cluster() {
    let m = mutator("aws", scion::state::Snapshot::default());
    for purpose in ["provision", "other"] {
        let verdict = run(
            &m,
            &request(osc(purpose, GARDENLET_UNIT, KUBELET_CONFIG, SYSCTL)),
        );
        assert_eq!(verdict, Ok(Verdict::Unchanged), "{purpose}");
    }
    // reconcile reads the Cluster first.
    let err = run(
        &m,
        &request(osc("reconcile", GARDENLET_UNIT, KUBELET_CONFIG, SYSCTL)),
    )
    .unwrap_err();
    assert_eq!(err.code(), 403);
    assert!(err.to_string().contains("could not get Cluster"), "{err}");
}

#[test]
fn mutating_twice_equals_mutating_once_for_every_provider() {
    for provider in ["aws", "openstack", "gcp", "azure", "alicloud"] {
        let mut s = shoot_for(provider, "1.33.3");
        s.shoot.spec.provider.infrastructure_config = Some(json!({"kind": "InfrastructureConfig"}));
        let acr = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "kubelet-acr-config", "namespace": NS}, "data": {"acr.conf": "{\"cloud\":\"AzurePublicCloud\"}"}});
        let m = mutator(provider, snapshot(s, &[acr]));
        let input = osc("reconcile", GARDENLET_UNIT, KUBELET_CONFIG, SYSCTL);
        let (once, patch) = mutate(&m, &input);
        assert_ne!(once, input, "{provider}");
        let (again, second) = mutate(&m, &input);
        assert_eq!(
            (&again, &patch),
            (&once, &second),
            "{provider}: not deterministic"
        );
        let (twice, none) = mutate(&m, &once);
        assert_eq!(twice, once, "{provider}");
        assert_eq!(none, b"[]", "{provider}: a second pass patches");
        let unit = unit_content(&once, "kubelet.service");
        assert!(
            unit.contains(" \\\n    --cloud-provider=external"),
            "{provider}: {unit}"
        );
    }
}

#[test]
fn provider_units_and_files_are_the_references_bytes() {
    let mut aws = shoot_for("aws", "1.34.2");
    aws.shoot.spec.provider.infrastructure_config = Some(json!({"kind": "InfrastructureConfig"}));
    let (out, _) = mutate(
        &mutator("aws", snapshot(aws, &[])),
        &osc("reconcile", GARDENLET_UNIT, KUBELET_CONFIG, SYSCTL),
    );
    let paths: Vec<&str> = out["spec"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths[2..],
        [
            "/opt/bin/mtu-customizer.sh",
            "/opt/bin/ecr-credential-provider",
            "/opt/gardener/ecr-credential-provider-config.json"
        ]
    );
    assert!(sha256(&inline_text(&out, "/opt/bin/mtu-customizer.sh")).starts_with("20888641"));
    let ecr = inline_text(&out, "/opt/gardener/ecr-credential-provider-config.json");
    assert_eq!((ecr.len(), &sha256(&ecr)[..8]), (337, "168b6c9e"));
    assert_eq!(
        file(&out, "/opt/gardener/ecr-credential-provider-config.json")["permissions"],
        493
    );
    assert_eq!(
        file(&out, "/opt/bin/ecr-credential-provider")["content"],
        json!({"imageRef": {"image": "europe-docker.pkg.dev/gardener-project/releases/gardener/extensions/ecr-credential-provider:v1.34.1", "filePathInImage": "/bin/ecr-credential-provider"}})
    );
    assert!(sha256(unit_content(&out, "custom-mtu.service")).starts_with("95709b87"));
    let unit = unit_content(&out, "kubelet.service");
    assert!(unit.contains("--cloud-provider=external \\\n    --image-credential-provider-config=/opt/gardener/ecr-credential-provider-config.json \\\n    --image-credential-provider-bin-dir=/opt/bin/\n"), "{unit}");

    let (gcp, _) = mutate(
        &mutator("gcp", snapshot(shoot_for("gcp", "1.33.3"), &[])),
        &osc("reconcile", GARDENLET_UNIT, KUBELET_CONFIG, SYSCTL),
    );
    let agent = unit_content(&gcp, "google-guest-agent.service");
    assert_eq!(
        sha256(agent),
        "9686331a27df4d3c493082ba2e080dc3c38cc66aedcaa369c10846d4ad158e3f"
    );
    assert_eq!(
        sha256(&inline_text(&gcp, "/etc/default/instance_configs.cfg")),
        "c92f657e09da7b6738723e6b0f06cb9c2683d8efc7ae56bb0c54ebfb3948bc7e"
    );
    assert!(
        inline_text(&gcp, "/etc/sysctl.d/99-k8s-general.conf")
            .ends_with("\n\n# GCE specific settings\nnet.ipv4.ip_forward = 1")
    );

    let (ali, _) = mutate(
        &mutator("alicloud", snapshot(shoot_for("alicloud", "1.33.3"), &[])),
        &osc("reconcile", GARDENLET_UNIT, KUBELET_CONFIG, SYSCTL),
    );
    let pre = unit_content(&ali, "kubelet.service")
        .lines()
        .find(|l| l.starts_with("ExecStartPre="))
        .unwrap();
    assert_eq!(
        sha256(&pre["ExecStartPre=".len()..]),
        "07387ba853e902546ea1c5c47d7384db819cabe40471c02b0c2bd71f7a4e22a1"
    );
    assert!(
        inline_text(&ali, "/var/lib/kubelet/config/kubelet")
            .contains("\nproviderID: place_holder_of_providerid\n")
    );
    assert_eq!(
        inline_text(&ali, "/etc/sysctl.d/99-k8s-general.conf"),
        SYSCTL,
        "alicloud has no sysctl rule"
    );
}

#[test]
fn openstack_quotes_the_cloud_profiles_resolv_conf_options_like_go() {
    for (options, size, prefix) in [
        (json!(null), 847, "3a696e84"),
        (json!(["rotate", "timeout:1"]), 871, "71722735"),
    ] {
        let mut s = shoot_for("openstack", "1.33.3");
        s.cloud_profile.spec.provider_config.0 = Some(json!({"resolvConfOptions": options}));
        let (out, _) = mutate(
            &mutator("openstack", snapshot(s, &[])),
            &osc("reconcile", GARDENLET_UNIT, KUBELET_CONFIG, SYSCTL),
        );
        let script = inline_text(&out, "/opt/bin/update-resolv-conf.sh");
        assert_eq!(
            (script.len(), &sha256(&script)[..8]),
            (size, prefix),
            "{options}"
        );
        let config = inline_text(&out, "/var/lib/kubelet/config/kubelet");
        assert!(
            config.contains("\nresolvConf: /etc/resolv-for-kubelet.conf\n"),
            "{config}"
        );
        let units: Vec<&Value> = out["spec"]["units"].as_array().unwrap().iter().collect();
        assert_eq!(
            units[1],
            &json!({"name": "update-resolv-conf.path", "enable": true, "content": "[Path]\nPathChanged=/run/systemd/resolve/resolv.conf\n\n[Install]\nWantedBy=multi-user.target\n"})
        );
    }
}

#[test]
fn azure_acr_follows_the_configmap_in_the_technical_id_namespace() {
    let acr = |ns: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "kubelet-acr-config", "namespace": ns}, "data": {"acr.conf": "acr"}})
    };
    let mut with_stale = osc("reconcile", GARDENLET_UNIT, KUBELET_CONFIG, SYSCTL);
    with_stale["spec"]["files"].as_array_mut().unwrap().insert(0, json!({"path": "/var/lib/kubelet/acr.conf", "content": {"inline": {"encoding": "", "data": "old"}}}));
    let (out, _) = mutate(
        &mutator("azure", snapshot(shoot_for("azure", "1.33.3"), &[acr(NS)])),
        &with_stale,
    );
    let files = out["spec"]["files"].as_array().unwrap();
    assert_eq!(
        files.last().unwrap(),
        &json!({"path": "/var/lib/kubelet/acr.conf", "permissions": 420, "content": {"inline": {"encoding": "b64", "data": "YWNy"}}})
    );
    assert_eq!(
        files
            .iter()
            .filter(|f| f["path"] == "/var/lib/kubelet/acr.conf")
            .count(),
        1
    );
    assert!(unit_content(&out, "kubelet.service").ends_with("--cloud-provider=external \\\n    --azure-container-registry-config=/var/lib/kubelet/acr.conf\n"));
    assert!(
        !unit_content(&out, "kubelet.service").contains("ExecStartPre"),
        "azure adds none"
    );
    // In another namespace than the technical ID: no ACR.
    let (none, _) = mutate(
        &mutator(
            "azure",
            snapshot(shoot_for("azure", "1.33.3"), &[acr("elsewhere")]),
        ),
        &osc("reconcile", GARDENLET_UNIT, KUBELET_CONFIG, SYSCTL),
    );
    assert!(!unit_content(&none, "kubelet.service").contains("azure-container-registry"));
    assert_eq!(none["spec"]["files"].as_array().unwrap().len(), 2);
}

#[test]
fn azure_drops_the_kubelet_fields_its_library_does_not_know() {
    let config = KUBELET_CONFIG.replace(
        "syncFrequency: 1m0s\n",
        "syncFrequency: 1m0s\ntlsCurvePreferences:\n- 23\n",
    );
    for (provider, kept) in [("azure", false), ("gcp", true)] {
        let (out, _) = mutate(
            &mutator(provider, snapshot(shoot_for(provider, "1.33.3"), &[])),
            &osc("reconcile", GARDENLET_UNIT, &config, SYSCTL),
        );
        assert_eq!(
            inline_text(&out, "/var/lib/kubelet/config/kubelet").contains("tlsCurvePreferences"),
            kept,
            "{provider}"
        );
    }
}

#[test]
fn the_pool_label_picks_the_kubelet_version() {
    let mut s = shoot_for("aws", "1.31.2");
    s.shoot.spec.provider.workers[0].kubernetes.version = Some(semver::Version::new(1, 30, 4));
    let m = mutator("aws", snapshot(s, &[]));
    let (out, _) = mutate(
        &m,
        &osc("reconcile", GARDENLET_UNIT, KUBELET_CONFIG, SYSCTL),
    );
    assert!(
        inline_text(&out, "/var/lib/kubelet/config/kubelet")
            .contains("featureGates:\n  InTreePluginAWSUnregister: true\n")
    );
    let mut other_pool = osc("reconcile", GARDENLET_UNIT, KUBELET_CONFIG, SYSCTL);
    other_pool["metadata"]["labels"]["worker.gardener.cloud/pool"] = json!("worker-b");
    let (out, _) = mutate(&m, &other_pool);
    assert!(
        !inline_text(&out, "/var/lib/kubelet/config/kubelet").contains("InTreePluginAWSUnregister")
    );
}

fn denial(object: Value) -> Denial {
    let m = aws_without_ecr_and_mtu();
    run(&m, &request(object)).expect_err("denied")
}

#[test]
fn bad_input_is_denied_naming_the_unit_or_file_and_the_cause() {
    // The object is named once, by the server (`tests/server_attack.rs`).
    let d = denial(osc(
        "reconcile",
        "[Service\nExecStart=x",
        KUBELET_CONFIG,
        SYSCTL,
    ));
    assert_eq!(d.code(), 403);
    assert_eq!(
        d.to_string(),
        "unit kubelet.service: could not deserialize kubelet.service unit content: unable to find end of section"
    );
    let d = denial(osc("reconcile", GARDENLET_UNIT, "maxPods: many\n", SYSCTL));
    assert_eq!(
        d.to_string(),
        "file /var/lib/kubelet/config/kubelet: could not decode kubelet configuration: field maxPods: cannot unmarshal string into Go value of type int32"
    );
    let mut gzip = osc("reconcile", GARDENLET_UNIT, KUBELET_CONFIG, SYSCTL);
    gzip["spec"]["files"][1]["content"]["inline"]["encoding"] = json!("gzip");
    let d = denial(gzip);
    assert!(d.to_string().starts_with("file /etc/sysctl.d/99-k8s-general.conf: could not decode kubernetes general configuration: could not parse file codec ID 'gzip'"), "{d}");
    let mut not_b64 = osc("reconcile", GARDENLET_UNIT, KUBELET_CONFIG, SYSCTL);
    not_b64["spec"]["files"][0]["content"]["inline"]["data"] = json!("%%%");
    assert!(
        denial(not_b64).to_string().contains(
            "file /var/lib/kubelet/config/kubelet: could not decode kubelet configuration"
        )
    );
    let mut bad_units = osc("reconcile", GARDENLET_UNIT, KUBELET_CONFIG, SYSCTL);
    bad_units["spec"]["units"] = json!("x");
    let d = denial(bad_units);
    assert_eq!(
        (d.code(), d.to_string()),
        (400, "field spec.units must be a list".to_string())
    );
    let mut content = osc("reconcile", GARDENLET_UNIT, KUBELET_CONFIG, SYSCTL);
    content["spec"]["units"][0]["content"] = json!(7);
    assert_eq!(denial(content).code(), 400);
}

#[test]
fn the_recorded_example_oscs_are_mutated_once_and_stay_put() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for provider in ["alicloud", "aws", "azure", "gcp", "openstack"] {
        let m = support::mutation::example_mutator(provider);
        let text =
            std::fs::read_to_string(root.join(format!("examples/osc/{provider}-original.json")))
                .unwrap();
        let input: Value = serde_json::from_str(&text).unwrap();
        let (once, patch) = mutate(&m, &input);
        assert_ne!(patch, b"[]", "{provider}");
        let (_, second) = mutate(&m, &once);
        assert_eq!(second, b"[]", "{provider}");
        // The kubelet configuration gardenlet wrote is already what the
        // provider wants (except alicloud's providerID): untouched bytes.
        let config_changed = inline_text(&once, "/var/lib/kubelet/config/kubelet")
            != inline_text(&input, "/var/lib/kubelet/config/kubelet");
        assert_eq!(
            config_changed,
            matches!(provider, "alicloud" | "openstack"),
            "{provider}"
        );
        let init: Value = serde_json::from_str(
            &std::fs::read_to_string(root.join(format!("examples/osc/{provider}-init.json")))
                .unwrap(),
        )
        .unwrap();
        assert_eq!(
            run(&m, &request(init)),
            Ok(Verdict::Unchanged),
            "{provider} -init"
        );
    }
}

/// The recorded review (examples/reviews/aws-operatingsystemconfig.json):
/// gardenlet's UPDATE overwrites the stored, mutated OSC with its own spec;
/// the webhook's answer turns it back into exactly the stored spec, so no
/// byte on the nodes changes and no kubelet restarts.
#[test]
fn gardenlets_update_of_a_mutated_osc_comes_back_to_the_stored_bytes() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let m = support::mutation::example_mutator("aws");
    let body = std::fs::read(root.join("examples/reviews/aws-operatingsystemconfig.json")).unwrap();
    let req = scion::decode::whole(&body).unwrap();
    let verdict = run(&m, &req).unwrap();
    let (_, patched) = support::mutation::patch_and_apply(&req, &verdict);
    let stored: Value =
        serde_json::from_slice::<Value>(&body).unwrap()["request"]["oldObject"].clone();
    assert_ne!(req.object.as_ref().unwrap()["spec"], stored["spec"]);
    assert_eq!(patched["spec"], stored["spec"]);
}
