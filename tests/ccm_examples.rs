//! The example objects of gcp, azure and alicloud (examples/objects/<provider>)
//! render with the built-in CCM sections. The Cluster is projected here by hand
//! on the fields the CCM reads (the state module's projection does the same in
//! the binary).

mod controlplane_support;

use std::path::PathBuf;

use scion::ccm::{self, ControlPlane, RenderInput, builtin_spec};
use scion::state::{ObjectData, ShootContext, WorkerPool};
use serde_json::Value;

fn load(provider: &str, file: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("examples/objects")
        .join(provider)
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn strings(v: &Value) -> Vec<String> {
    match v {
        Value::String(s) => vec![s.clone()],
        Value::Array(items) => items
            .iter()
            .filter_map(|i| i.as_str().map(String::from))
            .collect(),
        _ => vec![],
    }
}

fn project(cluster: &Value) -> ShootContext {
    let shoot = &cluster["spec"]["shoot"];
    let mut ctx = controlplane_support::shoot(&[], false);
    let spec = &shoot["spec"];
    ctx.cluster_name = cluster["metadata"]["name"].as_str().expect("name").into();
    if let Some(name) = cluster
        .pointer("/metadata/annotations/generic-token-kubeconfig.secret.gardener.cloud~1name")
    {
        ctx.generic_token_kubeconfig_secret = name.as_str().expect("annotation").into();
    } else {
        ctx.generic_token_kubeconfig_secret = "generic-token-kubeconfig".into();
    }
    ctx.kubernetes_version =
        semver::Version::parse(spec["kubernetes"]["version"].as_str().expect("version"))
            .expect("semver");
    ctx.node_cidr_mask_size = spec
        .pointer("/kubernetes/kubeControllerManager/nodeCIDRMaskSize")
        .and_then(Value::as_i64);
    ctx.region = spec["region"].as_str().expect("region").into();
    ctx.provider_type = spec["provider"]["type"].as_str().expect("type").into();
    ctx.networking.ip_families = strings(&spec["networking"]["ipFamilies"]);
    ctx.networking.provider_config = spec["networking"].get("providerConfig").cloned();
    for (target, source) in [
        (&mut ctx.networking.spec, &spec["networking"]),
        (&mut ctx.networking.status, &shoot["status"]["networking"]),
    ] {
        target.pods = strings(&source["pods"]);
        target.nodes = strings(&source["nodes"]);
        target.services = strings(&source["services"]);
    }
    ctx.workers = spec["provider"]["workers"]
        .as_array()
        .expect("workers")
        .iter()
        .map(|w| WorkerPool {
            name: w["name"].as_str().expect("pool").into(),
            kubernetes_version: None,
            maximum: w["maximum"].as_i64().unwrap_or_default(),
        })
        .collect();
    ctx.technical_id = shoot["status"]["technicalID"].as_str().map(String::from);
    ctx.seed_provider_type = cluster
        .pointer("/spec/seed/spec/provider/type")
        .and_then(Value::as_str)
        .map(String::from);
    ctx.seed_region = cluster
        .pointer("/spec/seed/spec/provider/region")
        .and_then(Value::as_str)
        .map(String::from);
    ctx
}

fn secret(value: &Value) -> ObjectData {
    let data = value["stringData"]
        .as_object()
        .expect("stringData")
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().expect("string").as_bytes().to_vec()))
        .collect();
    ObjectData::Secret {
        data: Some(data),
        labels: Default::default(),
    }
}

fn render(provider: &str) -> Vec<String> {
    let cp: ControlPlane =
        serde_json::from_value(load(provider, "controlplane.yaml")).expect("ControlPlane");
    let shoot = project(&load(provider, "cluster.yaml"));
    let creds = secret(&load(provider, "secret-cloudprovider.yaml"));
    assert_eq!(
        cp.namespace(),
        shoot.cluster_name,
        "{provider}: Cluster named after the namespace"
    );
    let spec = builtin_spec(&cp.spec.type_).expect("built-in spec");
    let rendered = ccm::render(
        &RenderInput {
            cp: &cp,
            shoot: &shoot,
            credentials: Some(&creds),
            kube_apiserver_replicas: None,
            image_override: None,
        },
        &spec,
    )
    .unwrap_or_else(|e| panic!("{provider}: {e}"));
    let dep = rendered
        .objects
        .iter()
        .find(|o| o.kind == "Deployment")
        .expect("deployment");
    let c = &dep.object["spec"]["template"]["spec"]["containers"][0];
    let list = if c.get("command").is_some() {
        &c["command"]
    } else {
        &c["args"]
    };
    serde_json::from_value(list.clone()).expect("flags")
}

#[test]
fn gcp_example_renders_with_routes_because_overlay_is_off() {
    let flags = render("gcp");
    assert!(
        flags.contains(&"--configure-cloud-routes=true".into()),
        "{flags:?}"
    );
    assert!(flags.contains(&"--node-cidr-mask-size-ipv4=24".into()));
    assert!(flags.contains(&"--feature-gates=RotateKubeletServerCertificate=true".into()));
}

#[test]
fn azure_example_renders() {
    let flags = render("azure");
    assert!(
        flags.contains(&"--controllers=*,-cloud-node".into()),
        "{flags:?}"
    );
    assert!(flags.contains(&"--cluster-name=shoot--dev--azure".into()));
}

#[test]
fn alicloud_example_renders_with_the_vpc_network() {
    let flags = render("alicloud");
    assert!(flags.contains(&"--network=vpc".into()), "{flags:?}");
}
