//! Builders and assertions shared by the ensurer-case tests of gcp, azure and
//! alicloud (engine_cases_gcp.rs, engine_cases_azure_alicloud.rs).

use scion::gardener::ShootContext;
use serde_json::{Value, json};

use super::{NS, mutator, request, run, shoot, snapshot};

pub fn deployment(name: &str, container: Value, template_labels: Value) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"template": {"metadata": {"labels": template_labels}, "spec": {"containers": [container]}}}
    })
}

pub fn bare(name: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": NS},
           "spec": {"template": {"spec": {"containers": [{"name": name}]}}}})
}

pub fn secret(labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret",
           "metadata": {"name": "cloudprovider", "namespace": NS, "labels": labels},
           "data": {"foo": "YmFy"}})
}

pub fn mutate(provider: &str, ctx: ShootContext, objects: &[Value], object: Value) -> Value {
    let m = mutator(provider, snapshot(ctx, objects));
    let req = request(object);
    let verdict = run(&m, &req).unwrap();
    super::patch_and_apply(&req, &verdict).1
}

pub fn vac(provider: &str, version: &str) -> ShootContext {
    let mut s = shoot(version);
    s.shoot.metadata.annotations.insert(
        format!("{provider}.provider.extensions.gardener.cloud/enable-volume-attributes-class"),
        "true".into(),
    );
    s
}

pub fn cmd(obj: &Value) -> Vec<String> {
    obj["spec"]["template"]["spec"]["containers"][0]["command"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

pub fn has(obj: &Value, s: &str) -> bool {
    cmd(obj).iter().any(|c| c == s)
}

pub fn has_prefix(obj: &Value, p: &str) -> bool {
    cmd(obj).iter().any(|c| c.starts_with(p))
}

pub const GATE: &str = "--feature-gates=VolumeAttributesClass=true";
pub const RUNTIME: &str = "--runtime-config=storage.k8s.io/v1beta1=true";

pub fn empty_mcm() -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": "machine-controller-manager", "namespace": NS}})
}

pub fn empty_vpa() -> Value {
    json!({"apiVersion": "autoscaling.k8s.io/v1", "kind": "VerticalPodAutoscaler",
           "metadata": {"name": "machine-controller-manager-vpa", "namespace": NS}, "spec": {}})
}

pub fn sidecar(provider: &str, image: &str, wi: bool, extra: &[&str]) -> Value {
    let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
    scion::mutation::sidecar_container(NS, provider, image, wi, &extra).0
}

pub const WI_VOLUME: &str = r#"[{"name": "workload-identity", "projected": {"sources": [{"secret": {
    "name": "cloudprovider", "items": [{"key": "token", "path": "token"}]}}]}}]"#;

pub fn gate_only(provider: &str, component: &str, cases: [(&str, bool); 3]) {
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
