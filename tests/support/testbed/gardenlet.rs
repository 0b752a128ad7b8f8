//! What gardenlet writes into a seed for a shoot, from the repository's
//! recorded objects: the shoot's context (Cluster, `cloudprovider` Secret,
//! cloud config, ControlPlane; `examples/objects/<provider>/`) and the
//! objects scion's webhooks mutate (control-plane Deployments, the
//! machine-controller-manager VPA, an OperatingSystemConfig, the Etcds, the
//! `cloudprovider` Secret; `tests/fixtures/admission/`, `examples/osc/`,
//! `examples/etcd/`), each movable into any shoot namespace.

use std::path::Path;

use serde_json::{Value, json};

use super::{gardenlet_object, root, yaml_documents};

/// The control-plane components whose recorded writes
/// [`gardenlet_objects`] returns.
pub const COMPONENTS: &[&str] = &[
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "cluster-autoscaler",
    "machine-controller-manager",
    "machine-controller-manager-vpa",
];

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The object of the newest recorded review of `component` for `provider`,
/// as gardenlet sends it, moved into `namespace`.
pub fn recorded_object(provider: &str, component: &str, namespace: &str) -> Value {
    let dir = root().join("tests/fixtures/admission");
    let mut found: Vec<(semver::Version, std::path::PathBuf)> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            let version = name
                .strip_prefix(&format!("{provider}-"))?
                .strip_suffix(&format!("-{component}.review.json"))?;
            let v = semver::Version::parse(&format!("{version}.0")).ok()?;
            Some((v, dir.join(&name)))
        })
        .collect();
    found.sort();
    let (_, path) = found
        .pop()
        .unwrap_or_else(|| panic!("no recorded review of {provider} {component}"));
    gardenlet_object(
        path.strip_prefix(root()).unwrap().to_str().unwrap(),
        namespace,
    )
}

/// Every object the webhooks of `provider` mutate, as gardenlet writes them
/// into `namespace`.
pub fn gardenlet_objects(provider: &str, namespace: &str) -> Vec<Value> {
    let mut objects: Vec<Value> = COMPONENTS
        .iter()
        .map(|c| recorded_object(provider, c, namespace))
        .collect();
    let mut osc = read_json(&root().join(format!("examples/osc/{provider}-original.json")));
    osc["metadata"]["namespace"] = json!(namespace);
    objects.push(osc);
    for etcd in ["main", "events"] {
        let mut e = read_json(&root().join(format!("examples/etcd/{provider}-etcd-{etcd}.json")));
        e["metadata"]["namespace"] = json!(namespace);
        objects.push(e);
    }
    let mut secret = example_objects(provider)
        .into_iter()
        .find(|o| o["kind"] == "Secret" && o["metadata"]["name"] == "cloudprovider")
        .expect("an example cloudprovider Secret");
    secret["metadata"]["namespace"] = json!(namespace);
    objects.push(secret);
    objects
}

/// The example objects of `provider` (Cluster, Secrets, ConfigMaps,
/// BackupBucket, ControlPlane) of the example shoot `shoot--dev--<provider>`.
pub fn example_objects(provider: &str) -> Vec<Value> {
    example_shoot(provider, &format!("shoot--dev--{provider}"))
}

/// The example objects of `provider` for a shoot of namespace `namespace`:
/// every mention of the example's namespace (the Cluster's name, the
/// technical ID, the objects' namespace, the cloud config's cluster tag)
/// replaced.
pub fn example_shoot(provider: &str, namespace: &str) -> Vec<Value> {
    let dir = root().join("examples/objects").join(provider);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let example = format!("shoot--dev--{provider}");
    files
        .iter()
        .flat_map(|f| {
            yaml_documents(
                &std::fs::read_to_string(f)
                    .unwrap()
                    .replace(&example, namespace),
            )
        })
        .collect()
}
