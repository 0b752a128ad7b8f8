//! `scion render`: print the CCM objects the controller would apply for one
//! ControlPlane, from an objects directory, without a cluster.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context as _, bail};
use clap::{Args, ValueEnum};
use serde_json::Value;

use crate::ccm::{self, ControlPlane, RenderInput};
use crate::state::{ObjectData, ObjectKind, ShootContext, StateSource};

/// Flags of `scion render`.
#[derive(Debug, Args)]
pub struct RenderArgs {
    /// Provider whose CCM section is used (alicloud, aws, azure, gcp, openstack).
    #[arg(long, env = "SCION_PROVIDER")]
    pub provider: String,
    /// Directory with the Cluster, ControlPlane and Secret manifests (YAML or JSON).
    #[arg(long, env = "SCION_OBJECTS_DIR")]
    pub objects_dir: PathBuf,
    /// The ControlPlane as NAMESPACE/NAME.
    #[arg(long, env = "SCION_CONTROLPLANE")]
    pub controlplane: String,
    /// Output format.
    #[arg(long, env = "SCION_OUTPUT", value_enum, default_value_t = Output::Yaml)]
    pub output: Output,
    /// CCM image, overriding the per-minor image of the profile.
    #[arg(long, env = "SCION_CCM_IMAGE")]
    pub ccm_image: Option<String>,
    /// spec.replicas of kube-apiserver for hibernated shoots (absent = scaled down).
    #[arg(long, env = "SCION_KUBE_APISERVER_REPLICAS")]
    pub kube_apiserver_replicas: Option<i32>,
}

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    Yaml,
    Json,
}

/// Run `scion render`.
pub fn run(args: RenderArgs) -> anyhow::Result<()> {
    let (namespace, name) = args
        .controlplane
        .split_once('/')
        .filter(|(ns, n)| !ns.is_empty() && !n.is_empty())
        .with_context(|| {
            format!(
                "--controlplane {:?} is not NAMESPACE/NAME",
                args.controlplane
            )
        })?;
    let (cp, shoot, credentials) = load_render_inputs(&args.objects_dir, namespace, name)?;
    let spec = ccm::builtin_spec(&args.provider)?;
    let text = render_text(
        &RenderInput {
            cp: &cp,
            shoot: &shoot,
            credentials: credentials.as_ref(),
            kube_apiserver_replicas: args.kube_apiserver_replicas,
            image_override: args.ccm_image.as_deref(),
        },
        &spec,
        args.output,
    )?;
    print!("{text}");
    Ok(())
}

/// Render and format; the part of the command that needs no files.
pub fn render_text(
    input: &RenderInput<'_>,
    spec: &ccm::CcmSpec,
    output: Output,
) -> anyhow::Result<String> {
    let rendered = ccm::render(input, spec).with_context(|| {
        format!(
            "rendering ControlPlane {}/{}",
            input.cp.namespace(),
            input.cp.name()
        )
    })?;
    Ok(match output {
        Output::Yaml => ccm::to_yaml_stream(&rendered.objects).map_err(anyhow::Error::msg)?,
        Output::Json => ccm::to_json_list(&rendered.objects),
    })
}

/// The ControlPlane `namespace/name`, the shoot context of `namespace` and the
/// ControlPlane's credentials Secret from an objects directory.
pub fn load_render_inputs(
    dir: &Path,
    namespace: &str,
    name: &str,
) -> anyhow::Result<(ControlPlane, Arc<ShootContext>, Option<ObjectData>)> {
    let cp = find_controlplane(dir, namespace, name)?;
    let state = open_objects_dir(dir)?;
    inputs_from_state(state.as_ref(), cp)
}

/// Shoot context and credentials for `cp` from any state source.
pub fn inputs_from_state(
    state: &dyn StateSource,
    cp: ControlPlane,
) -> anyhow::Result<(ControlPlane, Arc<ShootContext>, Option<ObjectData>)> {
    let namespace = cp.namespace().to_string();
    let shoot = state.shoot(&namespace)?;
    let secret_ns = cp.spec.secret_ref.namespace.clone().unwrap_or(namespace);
    let credentials = futures::executor::block_on(state.object(
        ObjectKind::Secret,
        &secret_ns,
        &cp.spec.secret_ref.name,
    ))?;
    Ok((cp, shoot, credentials))
}

/// The objects-directory state source. The lead wires `state::ObjectsDir` here.
fn open_objects_dir(dir: &Path) -> anyhow::Result<Arc<dyn StateSource>> {
    bail!(
        "reading Clusters and Secrets from {} needs the objects-directory state source, which this build does not include yet",
        dir.display()
    )
}

/// Find the ControlPlane `namespace/name` in the `.yaml`, `.yml` and `.json` files
/// of `dir` (recursively, multi-document YAML allowed).
pub fn find_controlplane(dir: &Path, namespace: &str, name: &str) -> anyhow::Result<ControlPlane> {
    let mut files = Vec::new();
    collect_files(dir, &mut files).with_context(|| format!("reading {}", dir.display()))?;
    files.sort();
    for file in files {
        let text = std::fs::read_to_string(&file)
            .with_context(|| format!("reading {}", file.display()))?;
        let docs: Vec<Value> = if file.extension().is_some_and(|e| e == "json") {
            vec![
                serde_json::from_str(&text)
                    .with_context(|| format!("parsing {}", file.display()))?,
            ]
        } else {
            serde_saphyr::from_multiple(&text)
                .with_context(|| format!("parsing {}", file.display()))?
        };
        for doc in docs {
            let is_match = doc.get("kind").and_then(Value::as_str) == Some("ControlPlane")
                && doc.pointer("/metadata/namespace").and_then(Value::as_str) == Some(namespace)
                && doc.pointer("/metadata/name").and_then(Value::as_str) == Some(name);
            if is_match {
                return serde_json::from_value(doc).with_context(|| {
                    format!("ControlPlane {namespace}/{name} in {}", file.display())
                });
            }
        }
    }
    bail!("no ControlPlane {namespace}/{name} in {}", dir.display())
}

fn collect_files(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            collect_files(&path, out)?;
        } else if path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| matches!(e, "yaml" | "yml" | "json"))
        {
            out.push(path);
        }
    }
    Ok(())
}
