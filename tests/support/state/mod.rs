//! Helpers shared by the objects-directory tests.

#![allow(dead_code)] // each test crate uses a part of these

use std::path::Path;
use std::time::{Duration, Instant};

/// A minimal Cluster with the given name and Kubernetes version, as YAML.
pub fn cluster_yaml(name: &str, version: &str) -> String {
    format!(
        "apiVersion: extensions.gardener.cloud/v1alpha1
kind: Cluster
metadata:
  name: {name}
spec:
  cloudProfile:
    apiVersion: core.gardener.cloud/v1beta1
    kind: CloudProfile
  seed:
    apiVersion: core.gardener.cloud/v1beta1
    kind: Seed
    spec:
      provider:
        type: aws
  shoot:
    apiVersion: core.gardener.cloud/v1beta1
    kind: Shoot
    spec:
      region: eu-west-1
      provider:
        type: aws
      kubernetes:
        version: \"{version}\"
"
    )
}

/// Write `text` to `dir/rel`, creating folders.
pub fn write(dir: &Path, rel: &str, text: &str) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// Poll `check` for up to 5 s.
pub async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let start = Instant::now();
    while !check() {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "timed out waiting for: {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The text of `tests/fixtures/clusters/<name>`.
pub fn fixture_text(name: &str) -> String {
    let path = format!(
        "{}/tests/fixtures/clusters/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A Cluster fixture parsed (JSON or YAML by extension).
pub fn fixture(name: &str) -> serde_json::Value {
    let text = fixture_text(name);
    if name.ends_with(".json") {
        serde_json::from_str(&text).unwrap()
    } else {
        serde_saphyr::from_str(&text).unwrap()
    }
}
