//! The cases of Gardener's ensurer tests for GCP (§1.4), Azure (§2.4) and
//! Alicloud (§3.4) of gardener-providers-gcp-azure-alicloud.md that concern the
//! components scion mutates, named after their number. kubelet/OSC cases
//! (GCP 13–16, 20–21; Azure 15–20; Alicloud 3–4) are out of scope.

mod engine_support;

use engine_support::{NS, mutator, request, run, shoot, snapshot};
use scion::admission::Verdict;
use scion::state::ShootContext;
use serde_json::{Value, json};

fn deployment(name: &str, container: Value, template_labels: Value) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"template": {"metadata": {"labels": template_labels}, "spec": {"containers": [container]}}}
    })
}

fn bare(name: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": NS},
           "spec": {"template": {"spec": {"containers": [{"name": name}]}}}})
}

fn secret(labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret",
           "metadata": {"name": "cloudprovider", "namespace": NS, "labels": labels},
           "data": {"foo": "YmFy"}})
}

fn mutate(provider: &str, ctx: ShootContext, objects: &[Value], object: Value) -> Value {
    let m = mutator(provider, snapshot(ctx, objects));
    match run(&m, &request(object.clone())).unwrap() {
        Verdict::Unchanged => object,
        Verdict::Mutated(after) => after,
    }
}

fn vac(provider: &str, version: &str) -> ShootContext {
    let mut s = shoot(version);
    s.annotations.insert(
        format!("{provider}.provider.extensions.gardener.cloud/enable-volume-attributes-class"),
        "true".into(),
    );
    s
}

fn cmd(obj: &Value) -> Vec<String> {
    obj["spec"]["template"]["spec"]["containers"][0]["command"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

fn has(obj: &Value, s: &str) -> bool {
    cmd(obj).iter().any(|c| c == s)
}

fn has_prefix(obj: &Value, p: &str) -> bool {
    cmd(obj).iter().any(|c| c.starts_with(p))
}

const GATE: &str = "--feature-gates=VolumeAttributesClass=true";
const RUNTIME: &str = "--runtime-config=storage.k8s.io/v1beta1=true";

fn empty_mcm() -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": "machine-controller-manager", "namespace": NS}})
}

fn empty_vpa() -> Value {
    json!({"apiVersion": "autoscaling.k8s.io/v1", "kind": "VerticalPodAutoscaler",
           "metadata": {"name": "machine-controller-manager-vpa", "namespace": NS}, "spec": {}})
}

fn sidecar(provider: &str, image: &str, wi: bool, extra: &[&str]) -> Value {
    let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
    scion::mutation::sidecar_container(NS, provider, image, wi, &extra).0
}

const WI_VOLUME: &str = r#"[{"name": "workload-identity", "projected": {"sources": [{"secret": {
    "name": "cloudprovider", "items": [{"key": "token", "path": "token"}]}}]}}]"#;

// ---- GCP §1.4 ---------------------------------------------------------------

const GCP_IMAGE: &str = "europe-docker.pkg.dev/gardener-project/releases/gardener/machine-controller-manager-provider-gcp:v0.25.0";

#[test]
fn gcp_cases_1_to_3_kapi() {
    let out = mutate("gcp", shoot("1.34.1"), &[], bare("kube-apiserver"));
    assert!(!has_prefix(&out, "--feature-gates") && !has_prefix(&out, "--runtime-config"));
    assert!(!has(&out, "--cloud-provider=gce") && !has_prefix(&out, "--cloud-config="));
    let out = mutate("gcp", vac("gcp", "1.33.0"), &[], bare("kube-apiserver"));
    assert!(has(&out, GATE) && has(&out, RUNTIME), "{:?}", cmd(&out));
    let out = mutate("gcp", vac("gcp", "1.34.0"), &[], bare("kube-apiserver"));
    assert!(!has_prefix(&out, "--feature-gates") && !has_prefix(&out, "--runtime-config"));
}

fn gcp_kcm_input() -> Value {
    deployment(
        "kube-controller-manager",
        json!({"name": "kube-controller-manager"}),
        json!({"networking.gardener.cloud/to-blocked-cidrs": "allowed",
               "networking.gardener.cloud/to-public-networks": "allowed",
               "networking.gardener.cloud/to-private-networks": "allowed"}),
    )
}

fn assert_gcp_kcm(out: &Value, with_gate: bool) {
    let mut want = vec!["--cloud-provider=external", "--allocate-node-cidrs=false"];
    if with_gate {
        want.push(GATE);
    }
    assert_eq!(cmd(out), want, "Gardener's order: external, allocate, VAC");
    assert!(
        !cmd(out)
            .iter()
            .any(|c| c.contains("InTreePluginGCEUnregister"))
    );
    assert_eq!(
        out["spec"]["template"]["metadata"]["labels"],
        json!({}),
        "labels empty (map, not nil)"
    );
    assert!(
        out["spec"]["template"]["spec"]
            .get("volumes")
            .is_none_or(|v| v == &json!([]))
    );
}

#[test]
fn gcp_case_4_kcm_134() {
    assert_gcp_kcm(&mutate("gcp", shoot("1.34.1"), &[], gcp_kcm_input()), false);
}

#[test]
fn gcp_case_5_kcm_133_vac() {
    assert_gcp_kcm(
        &mutate("gcp", vac("gcp", "1.33.0"), &[], gcp_kcm_input()),
        true,
    );
}

#[test]
fn gcp_case_6_kcm_134_vac() {
    assert_gcp_kcm(
        &mutate("gcp", vac("gcp", "1.34.0"), &[], gcp_kcm_input()),
        false,
    );
}

#[test]
fn gcp_kcm_allocate_node_cidrs_is_unconditional_and_strips_every_form() {
    let input = deployment(
        "kube-controller-manager",
        json!({"name": "kube-controller-manager",
               "command": ["--allocate-node-cidrs", "--x", "--allocate-node-cidrs=true"]}),
        json!({}),
    );
    let mut v6 = shoot("1.34.1");
    v6.networking.ip_families = vec!["IPv6".into()];
    for ctx in [shoot("1.34.1"), v6] {
        let out = mutate("gcp", ctx, &[], input.clone());
        assert_eq!(
            cmd(&out),
            [
                "--x",
                "--cloud-provider=external",
                "--allocate-node-cidrs=false"
            ]
        );
    }
}

fn gate_only(provider: &str, component: &str, cases: [(&str, bool); 3]) {
    for (version, with_vac) in [(cases[0].0, false), (cases[1].0, true), (cases[2].0, true)] {
        let ctx = if with_vac {
            vac(provider, version)
        } else {
            shoot(version)
        };
        let out = mutate(provider, ctx, &[], bare(component));
        let expect_gate = cases.iter().any(|(v, g)| *v == version && *g) && with_vac;
        if expect_gate {
            assert_eq!(cmd(&out), [GATE], "{provider} {component} {version}");
        } else {
            assert!(
                cmd(&out).is_empty(),
                "{provider} {component} {version}: {:?}",
                cmd(&out)
            );
        }
    }
}

#[test]
fn gcp_cases_7_to_9_scheduler_gate_only_133_vac() {
    gate_only(
        "gcp",
        "kube-scheduler",
        [("1.34.1", false), ("1.33.0", true), ("1.34.0", false)],
    );
}

#[test]
fn gcp_cases_10_to_12_autoscaler_gate_only_133_vac() {
    gate_only(
        "gcp",
        "cluster-autoscaler",
        [("1.34.1", false), ("1.33.0", true), ("1.34.0", false)],
    );
}

#[test]
fn gcp_case_17_mcm_sidecar_secret_without_labels() {
    let out = mutate("gcp", shoot("1.34.1"), &[secret(json!({}))], empty_mcm());
    assert_eq!(
        out["spec"]["template"]["spec"]["containers"],
        json!([sidecar("provider-gcp", GCP_IMAGE, false, &[])])
    );
    assert!(out["spec"]["template"]["spec"].get("volumes").is_none());
}

#[test]
fn gcp_case_18_mcm_workload_identity_needs_both_labels() {
    let both = secret(
        json!({"security.gardener.cloud/purpose": "workload-identity-token-requestor",
                             "workloadidentity.security.gardener.cloud/provider": "gcp"}),
    );
    let out = mutate("gcp", shoot("1.34.1"), &[both], empty_mcm());
    let spec = &out["spec"]["template"]["spec"];
    assert_eq!(
        spec["containers"],
        json!([sidecar("provider-gcp", GCP_IMAGE, true, &[])])
    );
    assert_eq!(
        spec["volumes"],
        serde_json::from_str::<Value>(WI_VOLUME).unwrap()
    );
    // The purpose label alone (AWS's and Azure's rule) is not enough on GCP.
    let purpose =
        secret(json!({"security.gardener.cloud/purpose": "workload-identity-token-requestor"}));
    let out = mutate("gcp", shoot("1.34.1"), &[purpose], empty_mcm());
    assert!(out["spec"]["template"]["spec"].get("volumes").is_none());
    // A missing Secret is a denial, as Gardener's failed GET.
    let m = mutator("gcp", snapshot(shoot("1.34.1"), &[]));
    let err = run(&m, &request(empty_mcm())).unwrap_err().to_string();
    assert!(err.contains("cloudprovider"), "{err}");
}

#[test]
fn gcp_case_19_mcm_vpa_policy() {
    let out = mutate("gcp", shoot("1.34.1"), &[], empty_vpa());
    assert_eq!(
        out["spec"]["resourcePolicy"]["containerPolicies"],
        json!([{"containerName": "machine-controller-manager-provider-gcp", "controlledValues": "RequestsOnly"}])
    );
}

#[test]
fn gcp_historical_in_tree_kapi_checksums_are_the_golden_digests() {
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "cloud-provider-config", "namespace": NS}, "data": {"abc": "xyz"}});
    let out = mutate(
        "gcp",
        shoot("1.17.0"),
        &[secret(json!({})), cm],
        bare("kube-apiserver"),
    );
    let ann = &out["spec"]["template"]["metadata"]["annotations"];
    assert!(
        ann["checksum/secret-cloudprovider"]
            .as_str()
            .unwrap()
            .starts_with("8bafb35f")
    );
    assert!(
        ann["checksum/configmap-cloud-provider-config"]
            .as_str()
            .unwrap()
            .starts_with("08a7bc7f")
    );
    assert!(has(&out, "--cloud-provider=gce"));
    let env = &out["spec"]["template"]["spec"]["containers"][0]["env"];
    assert_eq!(
        env,
        &json!([{"name": "GOOGLE_APPLICATION_CREDENTIALS", "value": "/srv/cloudprovider/serviceaccount.json"}])
    );
}

#[test]
fn gcp_before_1_31_allocates_node_cidrs_and_unregisters_the_in_tree_plugin() {
    let out = mutate("gcp", shoot("1.30.2"), &[], bare("kube-controller-manager"));
    assert_eq!(
        cmd(&out),
        [
            "--feature-gates=InTreePluginGCEUnregister=true",
            "--cloud-provider=external",
            "--allocate-node-cidrs=true"
        ]
    );
}

// ---- Azure §2.4 -------------------------------------------------------------

const AZ_IMAGE: &str = "europe-docker.pkg.dev/gardener-project/releases/gardener/machine-controller-manager-provider-azure:v0.18.0";

#[test]
fn azure_case_1_kapi_bare_132() {
    let out = mutate("azure", shoot("1.32.0"), &[], bare("kube-apiserver"));
    assert!(!has_prefix(&out, "--feature-gates"));
    assert!(!has(&out, "--cloud-provider=azure") && !has_prefix(&out, "--cloud-config="));
    assert!(
        out["spec"]["template"].get("metadata").is_none(),
        "template annotations stay nil"
    );
}

#[test]
fn azure_case_2_kapi_cloud_flags_removed_volume_kept() {
    let input = deployment(
        "kube-apiserver",
        json!({"name": "kube-apiserver",
               "command": ["--cloud-provider=?", "--cloud-config=?", "--enable-admission-plugins=Priority,NamespaceLifecycle"],
               "volumeMounts": [{"name": "cloud-provider-config", "mountPath": "?"}]}),
        json!({}),
    );
    let mut input = input;
    input["spec"]["template"]["spec"]["volumes"] = json!([{"name": "cloud-provider-config"}]);
    input["spec"]["template"]["metadata"]["annotations"] = json!({"checksum/configmap-cloud-provider-config": "x", "checksum/secret-cloud-provider-config": "y"});
    let out = mutate("azure", shoot("1.32.0"), &[], input);
    assert_eq!(
        cmd(&out),
        ["--enable-admission-plugins=Priority,NamespaceLifecycle"]
    );
    let spec = &out["spec"]["template"]["spec"];
    assert_eq!(
        spec["volumes"],
        json!([{"name": "cloud-provider-config"}]),
        "not removed"
    );
    assert_eq!(
        spec["containers"][0]["volumeMounts"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        out["spec"]["template"]["metadata"]["annotations"],
        json!({"checksum/secret-cloud-provider-config": "y"}),
        "only the configmap checksum (a key Azure never set) is deleted"
    );
}

#[test]
fn azure_cases_3_4_kapi_vac() {
    let out = mutate("azure", vac("azure", "1.33.0"), &[], bare("kube-apiserver"));
    assert!(has(&out, GATE) && has(&out, RUNTIME));
    let out = mutate("azure", vac("azure", "1.34.0"), &[], bare("kube-apiserver"));
    assert!(!has_prefix(&out, "--feature-gates"));
}

#[test]
fn azure_cases_5_6_kcm() {
    let leftovers = deployment(
        "kube-controller-manager",
        json!({"name": "kube-controller-manager",
               "command": ["--cloud-provider=?", "--cloud-config=?", "--external-cloud-volume-plugin=?", "--allocate-node-cidrs=true"],
               "volumeMounts": [{"name": "etc-ssl", "mountPath": "/etc/ssl"}, {"name": "usr-share-cacerts", "mountPath": "/usr/share/ca-certificates"}]}),
        json!({"networking.gardener.cloud/to-public-networks": "allowed"}),
    );
    let mut leftovers = leftovers;
    leftovers["spec"]["template"]["spec"]["volumes"] =
        json!([{"name": "etc-ssl"}, {"name": "usr-share-cacerts"}]);
    for input in [bare("kube-controller-manager"), leftovers.clone()] {
        let out = mutate("azure", shoot("1.32.0"), &[], input.clone());
        assert!(has(&out, "--cloud-provider=external"));
        assert!(!has_prefix(&out, "--feature-gates"));
        assert!(
            !has_prefix(&out, "--cloud-config=")
                && !has_prefix(&out, "--external-cloud-volume-plugin=")
        );
        let spec = &out["spec"]["template"]["spec"];
        assert!(
            spec.get("volumes").is_none_or(|v| v == &json!([])),
            "{spec}"
        );
        assert_eq!(
            out["spec"]["template"]["metadata"].get("labels"),
            input["spec"]["template"]["metadata"].get("labels"),
            "labels untouched"
        );
    }
    let out = mutate("azure", shoot("1.32.0"), &[], leftovers);
    assert_eq!(
        cmd(&out),
        ["--cloud-provider=external", "--allocate-node-cidrs=true"],
        "--allocate-node-cidrs untouched"
    );
}

#[test]
fn azure_cases_7_8_kcm_vac() {
    let out = mutate(
        "azure",
        vac("azure", "1.33.0"),
        &[],
        bare("kube-controller-manager"),
    );
    assert_eq!(cmd(&out), ["--cloud-provider=external", GATE]);
    let out = mutate(
        "azure",
        vac("azure", "1.34.0"),
        &[],
        bare("kube-controller-manager"),
    );
    assert_eq!(cmd(&out), ["--cloud-provider=external"]);
}

#[test]
fn azure_cases_9_to_11_scheduler_gate_only_133_vac() {
    gate_only(
        "azure",
        "kube-scheduler",
        [("1.32.0", false), ("1.33.0", true), ("1.34.0", false)],
    );
}

#[test]
fn azure_cases_12_to_14_autoscaler_gate_only_133_vac() {
    gate_only(
        "azure",
        "cluster-autoscaler",
        [("1.32.0", false), ("1.33.0", true), ("1.34.0", false)],
    );
}

#[test]
fn azure_case_21_mcm_sidecar_with_reattach_timeout() {
    let out = mutate("azure", shoot("1.32.0"), &[secret(json!({}))], empty_mcm());
    let c = &out["spec"]["template"]["spec"]["containers"];
    assert_eq!(
        c,
        &json!([sidecar(
            "provider-azure",
            AZ_IMAGE,
            false,
            &["--machine-pv-reattach-timeout=150s"]
        )])
    );
    let args = c[0]["args"].as_array().unwrap();
    assert_eq!(args[args.len() - 2], "--v=3", "appended after --v=3");
    assert_eq!(args[args.len() - 1], "--machine-pv-reattach-timeout=150s");
}

#[test]
fn azure_case_22_mcm_workload_identity_with_purpose_label_only() {
    let s = secret(json!({"security.gardener.cloud/purpose": "workload-identity-token-requestor"}));
    let out = mutate("azure", shoot("1.32.0"), &[s], empty_mcm());
    let spec = &out["spec"]["template"]["spec"];
    assert_eq!(
        spec["containers"],
        json!([sidecar(
            "provider-azure",
            AZ_IMAGE,
            true,
            &["--machine-pv-reattach-timeout=150s"]
        )])
    );
    assert_eq!(
        spec["volumes"],
        serde_json::from_str::<Value>(WI_VOLUME).unwrap()
    );
}

#[test]
fn azure_case_23_mcm_vpa_policy() {
    let out = mutate("azure", shoot("1.32.0"), &[], empty_vpa());
    assert_eq!(
        out["spec"]["resourcePolicy"]["containerPolicies"],
        json!([{"containerName": "machine-controller-manager-provider-azure", "controlledValues": "RequestsOnly"}])
    );
}

#[test]
fn azure_historical_in_tree_uses_the_config_secret_checksum() {
    let cfg = json!({"apiVersion": "v1", "kind": "Secret",
                     "metadata": {"name": "cloud-provider-config", "namespace": NS}, "data": {"foo": "YmFy"}});
    let out = mutate("azure", shoot("1.20.0"), &[cfg], bare("kube-apiserver"));
    assert!(has(&out, "--cloud-provider=azure"));
    let ann = &out["spec"]["template"]["metadata"]["annotations"];
    assert!(
        ann["checksum/secret-cloud-provider-config"]
            .as_str()
            .unwrap()
            .starts_with("8bafb35f")
    );
    assert_eq!(
        out["spec"]["template"]["spec"]["volumes"],
        json!([{"name": "cloud-provider-config", "secret": {"secretName": "cloud-provider-config", "defaultMode": 420}}])
    );
}

// ---- Alicloud §3.4 ----------------------------------------------------------

#[test]
fn alicloud_cases_1_2_kcm_cloud_provider_external() {
    let out = mutate(
        "alicloud",
        shoot("1.32.0"),
        &[],
        bare("kube-controller-manager"),
    );
    assert_eq!(cmd(&out), ["--cloud-provider=external"]);
    let input = deployment(
        "kube-controller-manager",
        json!({"name": "kube-controller-manager", "command": ["--cloud-provider=?", "--cloud-config=?"]}),
        json!({"networking.gardener.cloud/to-blocked-cidrs": "allowed"}),
    );
    let out = mutate("alicloud", shoot("1.32.0"), &[], input.clone());
    assert_eq!(
        cmd(&out),
        ["--cloud-provider=external", "--cloud-config=?"],
        "nothing removed"
    );
    assert_eq!(
        out["spec"]["template"]["metadata"],
        input["spec"]["template"]["metadata"]
    );
}

#[test]
fn alicloud_case_5_mcm_sidecar_without_reading_the_secret() {
    // No Secret in the namespace: Alicloud does not read it.
    let out = mutate("alicloud", shoot("1.32.0"), &[], empty_mcm());
    let (expected, _) = scion::mutation::provider_sidecar(
        NS,
        "provider-alicloud",
        "europe-docker.pkg.dev/gardener-project/releases/gardener/machine-controller-manager-provider-alicloud:v0.15.1",
        None,
    );
    assert_eq!(
        out["spec"]["template"]["spec"]["containers"],
        json!([expected])
    );
}

#[test]
fn alicloud_case_6_mcm_vpa_policy() {
    let out = mutate("alicloud", shoot("1.32.0"), &[], empty_vpa());
    assert_eq!(
        out["spec"]["resourcePolicy"]["containerPolicies"],
        json!([{"containerName": "machine-controller-manager-provider-alicloud", "controlledValues": "RequestsOnly"}])
    );
}

#[test]
fn alicloud_other_components_are_not_touched_at_head() {
    for component in ["kube-apiserver", "kube-scheduler", "cluster-autoscaler"] {
        let m = mutator("alicloud", snapshot(shoot("1.32.0"), &[]));
        assert_eq!(
            run(&m, &request(bare(component))).unwrap(),
            Verdict::Unchanged,
            "{component}"
        );
    }
}
