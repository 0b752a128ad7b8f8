//! Rendering `charts/scion` with Helm's template engine (Go's text/template
//! and sprig, `scripts/chart-render/main.go`), built by
//! `scripts/chart-render.sh`, which installs Debian's Go packages when they
//! are missing (as root or with CI=true). A machine where that is impossible
//! fails the test with the script's message: the chart is never left untested.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;

/// The repository root.
pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The chart directory.
pub fn chart_dir() -> PathBuf {
    root().join("charts/scion")
}

/// Path of the renderer, built once per test binary.
pub fn renderer() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| root().join("target"));
        let out = Command::new("bash")
            .arg(root().join("scripts/chart-render.sh"))
            .env("CARGO_TARGET_DIR", target)
            .output()
            .expect("run scripts/chart-render.sh");
        assert!(
            out.status.success(),
            "scripts/chart-render.sh failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
    })
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
/// on a seed of `kube_version`; `Err` is the renderer's message.
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
    let out = Command::new(renderer())
        .args(["--chart", chart.to_str().unwrap()])
        .args(["--release", release, "--namespace", namespace])
        .args(["--kube-version", kube_version])
        .args(["--values", file.to_str().unwrap()])
        .output()
        .expect("run the chart renderer");
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let docs: Vec<Value> = serde_json::from_slice(&out.stdout).expect("renderer output is JSON");
    Ok(docs
        .into_iter()
        .map(|d| Rendered {
            source: d["source"].as_str().unwrap().to_owned(),
            object: d["object"].clone(),
        })
        .collect())
}

/// [`try_render`] as gardenlet does for provider `p`: release `provider-<p>`.
pub fn render(values: &str, namespace: &str) -> Vec<Rendered> {
    try_render(values, "provider-test", namespace, "1.33.0").unwrap_or_else(|e| panic!("{e}"))
}
