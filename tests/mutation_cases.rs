//! The cases of Gardener's ensurer tests (gardener-controlplane.md §3.6 AWS and
//! §3.7 OpenStack) that concern the components scion mutates, named after their
//! number, plus the historical in-tree cases of §3.6.

mod support;

use scion::gardener::ShootContext;
use scion::gardener::view::Strings;
use serde_json::{Value, json};
use support::mutation::{NS, mutator, request, run, shoot, snapshot};

const VAC: &str = "aws.provider.extensions.gardener.cloud/enable-volume-attributes-class";

fn deployment(name: &str, container: Value, template_labels: Value) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"template": {"metadata": {"labels": template_labels}, "spec": {"containers": [container]}}}
    })
}

fn bare(name: &str) -> Value {
    deployment(name, json!({"name": name}), json!({}))
}

fn secret(labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret",
           "metadata": {"name": "cloudprovider", "namespace": NS, "labels": labels},
           "data": {"foo": "YmFy"}})
}

fn configmap() -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": "cloud-provider-config", "namespace": NS}, "data": {"abc": "xyz"}})
}

/// Mutate with the built-in profile and return the object as stored.
fn mutate(provider: &str, ctx: ShootContext, objects: &[Value], object: Value) -> Value {
    let m = mutator(provider, snapshot(ctx, objects));
    let req = request(object);
    let verdict = run(&m, &req).unwrap();
    support::mutation::patch_and_apply(&req, &verdict).1
}

fn vac(version: &str) -> ShootContext {
    let mut s = shoot(version);
    s.shoot
        .metadata
        .annotations
        .insert(VAC.into(), "true".into());
    s
}

fn c0(obj: &Value) -> &Value {
    &obj["spec"]["template"]["spec"]["containers"][0]
}

fn strings(v: &Value) -> Vec<&str> {
    v.as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

fn has_prefix(v: &Value, prefix: &str) -> bool {
    strings(v).iter().any(|s| s.starts_with(prefix))
}

/// "133" in Gardener's tests is really 1.34.1 (§3.6 quirk); we test both it and
/// a real 1.33.1 without the annotation.
const SHOOT_133_QUIRK: &str = "1.34.1";

fn assert_clean_kapi(out: &Value) {
    let c = c0(out);
    assert!(!has_prefix(&c["command"], "--feature-gates"), "{c}");
    assert!(!has_prefix(&c["command"], "--runtime-config"), "{c}");
    assert!(!has_prefix(&c["command"], "--cloud-provider="), "{c}");
    assert!(!has_prefix(&c["command"], "--cloud-config="), "{c}");
    assert!(
        c.get("env")
            .is_none_or(|e| e.as_array().unwrap().is_empty()),
        "{c}"
    );
    let ann = &out["spec"]["template"]["metadata"]["annotations"];
    assert!(
        ann.is_null() || ann.as_object().unwrap().is_empty(),
        "{ann}"
    );
}

#[test]
fn aws_case_1_kapi_bare_133() {
    assert_clean_kapi(&mutate(
        "aws",
        shoot(SHOOT_133_QUIRK),
        &[],
        bare("kube-apiserver"),
    ));
    assert_clean_kapi(&mutate("aws", shoot("1.33.1"), &[], bare("kube-apiserver")));
}

#[test]
fn aws_case_2_kapi_bare_134() {
    assert_clean_kapi(&mutate("aws", shoot("1.34.0"), &[], bare("kube-apiserver")));
}

#[test]
fn aws_case_3_kapi_leftovers_removed_volume_kept() {
    let input = json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "kube-apiserver", "namespace": NS},
        "spec": {"template": {"spec": {
            "containers": [{
                "name": "kube-apiserver",
                "command": ["--cloud-provider=?", "--cloud-config=?",
                            "--enable-admission-plugins=Priority,NamespaceLifecycle",
                            "--disable-admission-plugins=PersistentVolumeLabel"],
                "env": [{"name": "AWS_ACCESS_KEY_ID", "value": "?"}, {"name": "AWS_SECRET_ACCESS_KEY", "value": "?"}],
                "volumeMounts": [{"name": "cloud-provider-config", "mountPath": "?"}]
            }],
            "volumes": [{"name": "cloud-provider-config", "configMap": {"name": "cloud-provider-config"}}]
        }}}
    });
    let out = mutate("aws", shoot("1.34.0"), &[], input);
    let c = c0(&out);
    assert_eq!(
        strings(&c["command"]),
        [
            "--enable-admission-plugins=Priority,NamespaceLifecycle",
            "--disable-admission-plugins=PersistentVolumeLabel"
        ]
    );
    assert_eq!(c["env"], json!([]));
    assert_eq!(c["volumeMounts"].as_array().unwrap().len(), 1);
    assert_eq!(
        out["spec"]["template"]["spec"]["volumes"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert!(out["spec"]["template"]["metadata"]["annotations"].is_null());
}

#[test]
fn aws_case_4_kapi_vac_133() {
    let out = mutate("aws", vac("1.33.1"), &[], bare("kube-apiserver"));
    let cmd = &c0(&out)["command"];
    assert!(
        strings(cmd).contains(&"--feature-gates=VolumeAttributesClass=true"),
        "{cmd}"
    );
    assert!(
        strings(cmd).contains(&"--runtime-config=storage.k8s.io/v1beta1=true"),
        "{cmd}"
    );
}

fn assert_clean_kcm(out: &Value) {
    let c = c0(out);
    let cmd = &c["command"];
    assert!(strings(cmd).contains(&"--cloud-provider=external"), "{cmd}");
    assert!(
        !has_prefix(cmd, "--cloud-config=") && !has_prefix(cmd, "--external-cloud-volume-plugin=")
    );
    assert!(!has_prefix(cmd, "--feature-gates"), "{cmd}");
    assert!(
        c.get("env")
            .is_none_or(|e| e.as_array().unwrap().is_empty())
    );
    assert_eq!(out["spec"]["template"]["metadata"]["labels"], json!({}));
    let mounts = c.get("volumeMounts").cloned().unwrap_or(json!([]));
    assert!(
        !mounts.to_string().contains("etc-ssl") && !mounts.to_string().contains("usr-share-ca")
    );
    let vols = out["spec"]["template"]["spec"]
        .get("volumes")
        .cloned()
        .unwrap_or(json!([]));
    assert_eq!(vols, json!([]));
}

fn kcm_with_blocked_label() -> Value {
    deployment(
        "kube-controller-manager",
        json!({"name": "kube-controller-manager"}),
        json!({"networking.gardener.cloud/to-blocked-cidrs": "allowed"}),
    )
}

#[test]
fn aws_case_5_kcm_bare_133() {
    assert_clean_kcm(&mutate(
        "aws",
        shoot(SHOOT_133_QUIRK),
        &[],
        kcm_with_blocked_label(),
    ));
}

#[test]
fn aws_case_6_kcm_bare_134() {
    assert_clean_kcm(&mutate(
        "aws",
        shoot("1.34.0"),
        &[],
        kcm_with_blocked_label(),
    ));
}

#[test]
fn aws_case_7_kcm_leftovers_134() {
    let input = deployment(
        "kube-controller-manager",
        json!({"name": "kube-controller-manager",
               "command": ["--cloud-provider=?", "--cloud-config=?", "--external-cloud-volume-plugin=?"],
               "env": [{"name": "AWS_ACCESS_KEY_ID", "value": "?"}, {"name": "AWS_SECRET_ACCESS_KEY", "value": "?"}]}),
        json!({"networking.gardener.cloud/to-blocked-cidrs": "allowed"}),
    );
    let out = mutate("aws", shoot("1.34.0"), &[], input);
    assert_clean_kcm(&out);
    assert_eq!(
        strings(&c0(&out)["command"]),
        ["--cloud-provider=external", "--allocate-node-cidrs=true"],
        "--cloud-provider replaced in place"
    );
}

#[test]
fn aws_case_8_kcm_vac_133() {
    let out = mutate("aws", vac("1.33.1"), &[], bare("kube-controller-manager"));
    assert!(strings(&c0(&out)["command"]).contains(&"--feature-gates=VolumeAttributesClass=true"));
}

#[test]
fn aws_kcm_allocate_node_cidrs_by_ip_family() {
    let input = deployment(
        "kube-controller-manager",
        json!({"name": "kube-controller-manager", "command": ["--allocate-node-cidrs", "--x", "--allocate-node-cidrs=true"]}),
        json!({}),
    );
    let out = mutate("aws", shoot("1.34.0"), &[], input.clone());
    assert_eq!(
        strings(&c0(&out)["command"]),
        [
            "--x",
            "--cloud-provider=external",
            "--allocate-node-cidrs=true"
        ]
    );
    let mut v6 = shoot("1.34.0");
    v6.shoot.spec.networking.ip_families = Strings(vec!["IPv4".into(), "IPv6".into()]);
    let out = mutate("aws", v6, &[], input.clone());
    assert!(strings(&c0(&out)["command"]).contains(&"--allocate-node-cidrs=false"));
    let mut v6_nodes = shoot("1.34.0");
    v6_nodes.shoot.status.networking.nodes = Strings(vec!["2001:db8::/64".into()]);
    let out = mutate("aws", v6_nodes, &[], input);
    assert!(strings(&c0(&out)["command"]).contains(&"--allocate-node-cidrs=false"));
}

fn gates_only(component: &str) {
    for ctx in [shoot(SHOOT_133_QUIRK), shoot("1.34.0")] {
        let input = bare(component);
        assert_eq!(mutate("aws", ctx, &[], input.clone()), input, "{component}");
    }
    let out = mutate("aws", vac("1.33.1"), &[], bare(component));
    assert_eq!(
        strings(&c0(&out)["command"]),
        ["--feature-gates=VolumeAttributesClass=true"]
    );
    // The annotation must parse as true (Go's ParseBool): "yes" does not.
    let mut ctx = shoot("1.33.1");
    ctx.shoot
        .metadata
        .annotations
        .insert(VAC.into(), "yes".into());
    assert_eq!(mutate("aws", ctx, &[], bare(component)), bare(component));
}

#[test]
fn aws_cases_9_to_11_scheduler_gate_only_with_vac() {
    gates_only("kube-scheduler");
}

#[test]
fn aws_cases_12_to_14_autoscaler_gate_only_with_vac() {
    gates_only("cluster-autoscaler");
}

fn empty_mcm() -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": "machine-controller-manager", "namespace": NS}})
}

#[test]
fn aws_case_28_mcm_sidecar() {
    let out = mutate(
        "aws",
        shoot(SHOOT_133_QUIRK),
        &[secret(json!({}))],
        empty_mcm(),
    );
    let (expected, volume) = scion::mutation::provider_sidecar(
        NS,
        "provider-aws",
        "europe-docker.pkg.dev/gardener-project/releases/gardener/machine-controller-manager-provider-aws:v0.28.1",
        None,
    );
    assert!(volume.is_none());
    assert_eq!(
        out["spec"]["template"]["spec"]["containers"],
        json!([expected])
    );
    assert!(out["spec"]["template"]["spec"].get("volumes").is_none());
    assert_eq!(expected["name"], "machine-controller-manager-provider-aws");
}

#[test]
fn aws_case_29_mcm_sidecar_workload_identity() {
    let s = secret(json!({"security.gardener.cloud/purpose": "workload-identity-token-requestor"}));
    let out = mutate("aws", shoot(SHOOT_133_QUIRK), &[s], empty_mcm());
    let spec = &out["spec"]["template"]["spec"];
    let mounts = &spec["containers"][0]["volumeMounts"];
    assert_eq!(
        mounts[1],
        json!({"name": "workload-identity", "mountPath": "/var/run/secrets/gardener.cloud/workload-identity"})
    );
    assert_eq!(
        spec["volumes"],
        json!([{"name": "workload-identity", "projected": {"sources": [{"secret": {
            "name": "cloudprovider", "items": [{"key": "token", "path": "token"}]}}]}}])
    );
}

#[test]
fn aws_case_30_mcm_vpa_policy() {
    let vpa = json!({"apiVersion": "autoscaling.k8s.io/v1", "kind": "VerticalPodAutoscaler",
                     "metadata": {"name": "machine-controller-manager-vpa", "namespace": NS}, "spec": {}});
    let out = mutate("aws", shoot("1.34.0"), &[], vpa);
    assert_eq!(
        out["spec"]["resourcePolicy"]["containerPolicies"],
        json!([{"containerName": "machine-controller-manager-provider-aws", "controlledValues": "RequestsOnly"}])
    );
}

#[test]
fn aws_historical_kapi_in_tree_checksums_are_the_golden_digests() {
    for version in ["1.16.4", "1.17.0", "1.18.1"] {
        let out = mutate(
            "aws",
            shoot(version),
            &[secret(json!({})), configmap()],
            bare("kube-apiserver"),
        );
        let ann = &out["spec"]["template"]["metadata"]["annotations"];
        assert_eq!(
            ann["checksum/secret-cloudprovider"],
            "8bafb35ff1ac60275d62e1cbd495aceb511fb354f74a20f7d06ecb48b3a68432",
            "{version}"
        );
        assert_eq!(
            ann["checksum/configmap-cloud-provider-config"],
            "08a7bc7fe8f59b055f173145e211760a83f02cf89635cef26ebb351378635606"
        );
        let cmd = strings(&c0(&out)["command"]);
        assert!(cmd.contains(&"--cloud-provider=aws"), "{version}: {cmd:?}");
        assert_eq!(
            c0(&out)["env"][0]["valueFrom"]["secretKeyRef"],
            json!({"name": "cloudprovider", "key": "accessKeyID"})
        );
    }
}

#[test]
fn aws_historical_autoscaler_gates_by_version() {
    let gates = |v: &str| {
        let out = mutate("aws", shoot(v), &[], bare("cluster-autoscaler"));
        strings(&c0(&out)["command"])
            .into_iter()
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert!(gates("1.19.3").is_empty());
    assert_eq!(
        gates("1.20.0"),
        ["--feature-gates=CSIMigration=true,CSIMigrationAWS=true,CSIMigrationAWSComplete=true"]
    );
    assert_eq!(
        gates("1.21.0"),
        ["--feature-gates=InTreePluginAWSUnregister=true"]
    );
    assert_eq!(
        gates("1.30.9"),
        ["--feature-gates=InTreePluginAWSUnregister=true"]
    );
    assert!(gates("1.31.0").is_empty());
}

#[test]
fn aws_before_1_31_moves_persistent_volume_label_to_disabled() {
    let input = deployment(
        "kube-apiserver",
        json!({"name": "kube-apiserver", "command": ["--enable-admission-plugins=Priority,PersistentVolumeLabel"]}),
        json!({}),
    );
    let out = mutate("aws", shoot("1.28.5"), &[], input);
    assert_eq!(
        strings(&c0(&out)["command"]),
        [
            "--enable-admission-plugins=Priority",
            "--feature-gates=InTreePluginAWSUnregister=true",
            "--disable-admission-plugins=PersistentVolumeLabel"
        ]
    );
}

#[test]
fn openstack_case_1_kapi_bare() {
    let out = mutate("openstack", shoot("1.32.0"), &[], bare("kube-apiserver"));
    assert_eq!(out, bare("kube-apiserver"));
}

#[test]
fn openstack_case_2_kapi_cloud_flags_removed() {
    let input = deployment(
        "kube-apiserver",
        json!({"name": "kube-apiserver", "command": ["--cloud-provider=?", "--cloud-config=?", "--enable-admission-plugins=Priority,NamespaceLifecycle"]}),
        json!({}),
    );
    let out = mutate("openstack", shoot("1.32.0"), &[], input);
    assert_eq!(
        strings(&c0(&out)["command"]),
        ["--enable-admission-plugins=Priority,NamespaceLifecycle"]
    );
}

#[test]
fn openstack_case_3_kcm_bare() {
    let out = mutate("openstack", shoot("1.32.0"), &[], kcm_with_blocked_label());
    assert_eq!(strings(&c0(&out)["command"]), ["--cloud-provider=external"]);
    assert_eq!(out["spec"]["template"]["metadata"]["labels"], json!({}));
}

#[test]
fn openstack_case_4_kcm_leftovers() {
    let input = json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "kube-controller-manager", "namespace": NS},
        "spec": {"template": {"metadata": {"labels": {"networking.gardener.cloud/to-blocked-cidrs": "allowed"}}, "spec": {
            "containers": [{"name": "kube-controller-manager",
                "command": ["--cloud-provider=?", "--cloud-config=?", "--external-cloud-volume-plugin=?"],
                "volumeMounts": [{"name": "usr-share-ca-certificates", "mountPath": "/usr/share/ca-certificates"},
                                 {"name": "etc-ssl", "mountPath": "/etc/ssl"}]}],
            "volumes": [{"name": "usr-share-ca-certificates", "hostPath": {"path": "/usr/share/ca-certificates"}},
                        {"name": "etc-ssl", "hostPath": {"path": "/etc/ssl"}}]
        }}}
    });
    let out = mutate("openstack", shoot("1.32.0"), &[], input);
    let c = c0(&out);
    assert_eq!(strings(&c["command"]), ["--cloud-provider=external"]);
    assert_eq!(c["volumeMounts"], json!([]));
    assert_eq!(out["spec"]["template"]["spec"]["volumes"], json!([]));
    assert_eq!(out["spec"]["template"]["metadata"]["labels"], json!({}));
}

#[test]
fn openstack_case_12_mcm_sidecar() {
    let out = mutate("openstack", shoot("1.32.0"), &[], empty_mcm());
    let (expected, _) = scion::mutation::provider_sidecar(
        NS,
        "provider-openstack",
        "europe-docker.pkg.dev/gardener-project/releases/gardener/machine-controller-manager-provider-openstack:v0.27.1",
        None,
    );
    assert_eq!(
        out["spec"]["template"]["spec"]["containers"],
        json!([expected])
    );
}

#[test]
fn openstack_case_13_mcm_vpa_policy() {
    let vpa = json!({"apiVersion": "autoscaling.k8s.io/v1", "kind": "VerticalPodAutoscaler",
                     "metadata": {"name": "machine-controller-manager-vpa", "namespace": NS}, "spec": {"resourcePolicy": null}});
    let out = mutate("openstack", shoot("1.32.0"), &[], vpa);
    assert_eq!(
        out["spec"]["resourcePolicy"]["containerPolicies"],
        json!([{"containerName": "machine-controller-manager-provider-openstack", "controlledValues": "RequestsOnly"}])
    );
}
