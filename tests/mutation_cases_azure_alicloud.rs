//! The cases of Gardener's Azure (§2.4) and Alicloud (§3.4) ensurer tests of
//! gardener-providers-gcp-azure-alicloud.md that concern the components scion
//! mutates, named after their number, plus historical cases of §2.3. kubelet/OSC
//! cases (Azure 15–20, Alicloud 3–4) are out of scope.

mod support;

use scion::admission::Verdict;
use serde_json::{Value, json};
use support::mutation::cases::*;
use support::mutation::{NS, mutator, request, run, shoot, snapshot};

// ---- Azure §2.4 -------------------------------------------------------------

const AZ_IMAGE: &str = "europe-docker.pkg.dev/gardener-project/releases/gardener/machine-controller-manager-provider-azure:v0.20.1";

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
