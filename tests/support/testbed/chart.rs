//! Rendering `charts/scion` with the real `helm template` of the test bed
//! (`scripts/testbed.sh build`: helm v3 from its Go module, pinned and
//! cached). A machine where helm cannot be built fails the test with the
//! script's message: the chart is never left untested.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use super::bins;
pub use super::bins::root;

/// The chart directory.
pub fn chart_dir() -> PathBuf {
    root().join("charts/scion")
}

/// Run the test bed's helm with `args`, its configuration and caches in a
/// throw-away home (no cluster is contacted by `template` and `lint`).
pub fn helm(args: &[&str]) -> Output {
    let home = tempfile::tempdir().unwrap();
    Command::new(bins::binaries().helm())
        .args(args)
        .env("HOME", home.path())
        .env("HELM_CACHE_HOME", home.path().join("cache"))
        .env("HELM_CONFIG_HOME", home.path().join("config"))
        .env("HELM_DATA_HOME", home.path().join("data"))
        .env("KUBECONFIG", home.path().join("no-cluster"))
        .output()
        .expect("run helm")
}

/// One rendered document: the template it came from and the object.
#[derive(Debug, Clone)]
pub struct Rendered {
    pub source: String,
    pub object: Value,
}

impl Rendered {
    pub fn kind(&self) -> &str {
        self.object["kind"].as_str().unwrap_or("")
    }
    pub fn name(&self) -> &str {
        self.object["metadata"]["name"].as_str().unwrap_or("")
    }
}

/// Render the chart with `values` (YAML) as release `release` in `namespace`
/// on a seed of `kube_version`; `Err` is helm's message.
pub fn try_render(
    values: &str,
    release: &str,
    namespace: &str,
    kube_version: &str,
) -> Result<Vec<Rendered>, String> {
    try_render_chart(&chart_dir(), values, release, namespace, kube_version)
}

/// [`try_render`] of the chart in `chart` (e.g. one unpacked from an archive).
pub fn try_render_chart(
    chart: &Path,
    values: &str,
    release: &str,
    namespace: &str,
    kube_version: &str,
) -> Result<Vec<Rendered>, String> {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("values.yaml");
    std::fs::write(&file, values).unwrap();
    let out = helm(&[
        "template",
        release,
        chart.to_str().unwrap(),
        "--namespace",
        namespace,
        "--kube-version",
        kube_version,
        "--values",
        file.to_str().unwrap(),
    ]);
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(split_rendered(&String::from_utf8(out.stdout).unwrap()))
}

/// helm's output: documents separated by `---`, each headed by
/// `# Source: <chart>/templates/<file>`.
pub fn split_rendered(stream: &str) -> Vec<Rendered> {
    let mut docs = Vec::new();
    for doc in stream.split("\n---\n") {
        let doc = doc.strip_prefix("---\n").unwrap_or(doc);
        let source = doc
            .lines()
            .find_map(|l| l.strip_prefix("# Source: "))
            .unwrap_or_default()
            .to_owned();
        let object: Value = serde_saphyr::from_str(doc)
            .unwrap_or_else(|e| panic!("helm rendered invalid YAML ({source}): {e}\n{doc}"));
        if !object.is_null() {
            docs.push(Rendered { source, object });
        }
    }
    docs
}

/// [`try_render`] with the release name and seed version gardenlet would use.
pub fn render(values: &str, namespace: &str) -> Vec<Rendered> {
    try_render(values, "provider-test", namespace, "1.33.0").unwrap_or_else(|e| panic!("{e}"))
}

/// The values gardenlet injects (reference §3.2), as it would for an aws seed.
pub const GARDENLET_VALUES: &str = r#"
provider: aws
gardener:
  version: v1.120.0
  garden:
    clusterIdentity: garden-1
  gardenlet:
    featureGates: {DefaultSeccompProfile: true, NewWorkerPoolHash: false}
  seed:
    name: aws-eu1
    clusterIdentity: seed-aws-eu1
    annotations: {}
    labels: {seed.gardener.cloud/eu: "true"}
    provider: aws
    region: eu-west-1
    volumeProvider: ""
    volumeProviders: []
    protected: false
    visible: true
    taints: []
    networks: {nodes: 10.250.0.0/16, pods: 100.96.0.0/11, services: 100.64.0.0/13}
    blockCIDRs: []
    ingressDomain: ingress.aws-eu1.example.com
    spec:
      provider: {type: aws, region: eu-west-1}
      networks: {nodes: 10.250.0.0/16, pods: 100.96.0.0/11, services: 100.64.0.0/13}
      settings:
        topologyAwareRouting: {enabled: true}
"#;
