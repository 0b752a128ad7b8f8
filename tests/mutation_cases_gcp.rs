//! The cases of Gardener's GCP ensurer test (gardener-providers-gcp-azure-alicloud.md
//! §1.4) that concern the components scion mutates, named after their number,
//! plus historical cases of §1.3. kubelet/OSC cases (13–16, 20–21) are out of scope.

mod support;

use serde_json::{Value, json};
use support::mutation::cases::*;
use support::mutation::{NS, mutator, request, run, shoot, snapshot};

// ---- GCP §1.4 ---------------------------------------------------------------

const GCP_IMAGE: &str = "europe-docker.pkg.dev/gardener-project/releases/gardener/machine-controller-manager-provider-gcp:v0.28.1";

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
    v6.shoot.spec.networking.ip_families = scion::gardener::view::Strings(vec!["IPv6".into()]);
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
