//! `scion mutate`: run the control-plane webhook on one object offline and print
//! the mutated object or the patch; `--explain` lists which rules matched.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, bail};
use base64::Engine as _;
use clap::{Args, ValueEnum};
use serde_json::Value;

use crate::admission::{AdmissionRequest, GroupVersionKind, Operation, ReviewVersion};
use crate::mutation::{Engine, Outcome, dispatch, mutate_request};
use crate::profile::Profile;
use crate::state::{
    Cidrs, Hibernation, Networking, ObjectData, ShootContext, Snapshot, StateSource, WorkerPool,
};

/// Output format of `scion mutate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    Yaml,
    Json,
    /// The RFC 6902 JSONPatch the webhook would answer with.
    Patch,
}

/// Mutate one object offline, as the webhook would.
#[derive(Debug, Args)]
pub struct MutateArgs {
    /// Provider whose built-in profile to use (aws, openstack).
    #[arg(long, env = "SCION_PROVIDER")]
    pub provider: String,
    /// Use this profile file instead of the built-in one.
    #[arg(long, env = "SCION_PROFILE")]
    pub profile: Option<PathBuf>,
    /// Directory of Cluster, Secret and ConfigMap manifests.
    #[arg(long, env = "SCION_OBJECTS_DIR", conflicts_with = "cluster")]
    pub objects_dir: Option<PathBuf>,
    /// A YAML file with the Cluster and, as further documents, the Secrets and
    /// ConfigMaps the rules read.
    #[arg(long, env = "SCION_CLUSTER")]
    pub cluster: Option<PathBuf>,
    /// Override the image of the machine-controller-manager provider sidecar.
    #[arg(long, env = "SCION_MCM_PROVIDER_IMAGE")]
    pub mcm_provider_image: Option<String>,
    /// The object manifest or AdmissionReview (YAML or JSON); `-` for stdin.
    #[arg(short = 'f', long = "filename", env = "SCION_FILENAME")]
    pub file: PathBuf,
    #[arg(short, long, value_enum, default_value = "yaml", env = "SCION_OUTPUT")]
    pub output: Output,
    /// List on stderr which rules matched and why.
    #[arg(long, env = "SCION_EXPLAIN")]
    pub explain: bool,
}

/// Entry point of `scion mutate`: errors go to stderr with exit code 1.
pub fn main(args: MutateArgs) -> std::process::ExitCode {
    match run(args) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Run `scion mutate`.
pub fn run(args: MutateArgs) -> anyhow::Result<()> {
    let profile = match &args.profile {
        Some(path) => Profile::load(path)?,
        None => Profile::builtin(&args.provider)?,
    };
    let engine = Engine::new(profile).with_sidecar_image(args.mcm_provider_image.clone());
    let state = build_state(&args)?;
    let text = read_input(&args.file)?;
    let request = request_from_input(&text).with_context(|| {
        format!(
            "{}: not an object manifest or AdmissionReview",
            args.file.display()
        )
    })?;
    let before = request.object.clone().unwrap_or(Value::Null);

    let runtime = tokio::runtime::Builder::new_current_thread().build()?;
    let outcome = runtime
        .block_on(mutate_request(&engine, state.as_ref(), &request))
        .map_err(|d| anyhow::anyhow!("denied ({} {}): {d}", d.code(), d.reason()))?;
    let after = match outcome {
        Outcome::Skipped(why) => {
            if args.explain {
                eprintln!("not mutated: {why}");
            }
            before.clone()
        }
        Outcome::Mutated(m) => {
            if args.explain {
                explain(&engine, state.as_ref(), &request)?;
            }
            m.object
        }
    };
    let printed = match args.output {
        Output::Json => serde_json::to_string_pretty(&after)?,
        Output::Yaml => serde_saphyr::to_string(&after)?,
        Output::Patch => serde_json::to_string_pretty(&crate::patch::diff(&before, &after))?,
    };
    println!("{}", printed.trim_end());
    Ok(())
}

/// Print every rule of the object's component with its evaluated condition.
fn explain(
    engine: &Engine,
    state: &dyn StateSource,
    request: &AdmissionRequest,
) -> anyhow::Result<()> {
    let object = request.object.as_ref().context("request has no object")?;
    let target =
        dispatch(&request.kind, object).map_err(|s| anyhow::anyhow!("not a target: {s:?}"))?;
    let shoot = state.shoot(&request.namespace)?;
    let profile = engine.profile();
    eprintln!(
        "profile {} ({}), component {}",
        profile.provider, profile.source, target.component
    );
    for t in engine.explain(target, &shoot) {
        let mark = if t.matched { "matched" } else { "skipped" };
        eprintln!("  {mark:7} {}: {}", t.rule, t.reason);
    }
    Ok(())
}

/// The state the command reads. THE LEAD WIRES `--objects-dir` here: replace the
/// `objects_dir` branch with `ObjectsDir::load(dir)` (as `Arc<dyn StateSource>`).
fn build_state(args: &MutateArgs) -> anyhow::Result<Arc<dyn StateSource>> {
    if let Some(dir) = &args.objects_dir {
        return state_from_objects_dir(dir);
    }
    let mut snapshot = Snapshot::default();
    if let Some(path) = &args.cluster {
        load_manifests_into(&mut snapshot, &read_input(path)?)
            .with_context(|| format!("{}", path.display()))?;
    }
    Ok(Arc::new(snapshot))
}

/// Placeholder seam for the objects-directory source (state::ObjectsDir).
fn state_from_objects_dir(dir: &Path) -> anyhow::Result<Arc<dyn StateSource>> {
    bail!(
        "--objects-dir {} is not available in this build yet; use --cluster FILE",
        dir.display()
    )
}

fn read_input(path: &Path) -> anyhow::Result<String> {
    if path.as_os_str() == "-" {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)?;
        return Ok(s);
    }
    std::fs::read_to_string(path).with_context(|| format!("could not read {}", path.display()))
}

/// An AdmissionReview as sent, or a bare manifest turned into an UPDATE request.
pub fn request_from_input(text: &str) -> anyhow::Result<AdmissionRequest> {
    let value: Value = serde_saphyr::from_str(text)?;
    if value.get("kind").and_then(Value::as_str) == Some("AdmissionReview") {
        return Ok(AdmissionRequest::from_review_bytes(&serde_json::to_vec(
            &value,
        )?)?);
    }
    let api_version = value
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let meta = |key: &str| {
        value
            .pointer(&format!("/metadata/{key}"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    Ok(AdmissionRequest {
        uid: "scion-mutate".into(),
        kind: GroupVersionKind {
            group: group.into(),
            version: version.into(),
            kind: value
                .get("kind")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .into(),
        },
        name: meta("name"),
        namespace: meta("namespace"),
        operation: Operation::Update,
        object: Some(value),
        old_object: None,
        dry_run: Some(true),
        version: ReviewVersion::V1,
    })
}

/// Cluster, Secret and ConfigMap documents into a snapshot.
fn load_manifests_into(snapshot: &mut Snapshot, text: &str) -> anyhow::Result<()> {
    let docs: Vec<Value> = serde_saphyr::from_str_multiple(text)?;
    for doc in docs {
        let ns = doc
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let name = doc
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let labels: BTreeMap<String, String> = doc
            .pointer("/metadata/labels")
            .cloned()
            .map(serde_json::from_value)
            .transpose()?
            .unwrap_or_default();
        match doc.get("kind").and_then(Value::as_str) {
            Some("Cluster") => snapshot.insert_shoot(shoot_from_cluster(&doc)?),
            Some("Secret") => {
                let data = match doc.get("data") {
                    Some(Value::Object(m)) => Some(
                        m.iter()
                            .map(|(k, v)| {
                                let b64 = v.as_str().unwrap_or_default();
                                let bytes = base64::engine::general_purpose::STANDARD
                                    .decode(b64)
                                    .with_context(|| {
                                    format!("Secret {ns}/{name}: data.{k} is not base64")
                                })?;
                                Ok((k.clone(), bytes))
                            })
                            .collect::<anyhow::Result<BTreeMap<_, _>>>()?,
                    ),
                    _ => None,
                };
                snapshot.insert_object(ns, name, ObjectData::Secret { data, labels });
            }
            Some("ConfigMap") => {
                let data = doc
                    .get("data")
                    .cloned()
                    .map(serde_json::from_value)
                    .transpose()?;
                snapshot.insert_object(ns, name, ObjectData::ConfigMap { data, labels });
            }
            other => {
                bail!("unexpected document kind {other:?} (want Cluster, Secret or ConfigMap)")
            }
        }
    }
    Ok(())
}

/// A minimal projection of a Cluster for `--cluster` (the full one belongs to
/// the state module; the lead may replace this with it).
fn shoot_from_cluster(cluster: &Value) -> anyhow::Result<ShootContext> {
    let shoot = cluster.pointer("/spec/shoot").unwrap_or(&Value::Null);
    let s = |ptr: &str| {
        shoot
            .pointer(ptr)
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let strings = |v: Option<&Value>| -> Vec<String> {
        match v {
            Some(Value::String(s)) => vec![s.clone()],
            Some(Value::Array(a)) => a
                .iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect(),
            _ => Vec::new(),
        }
    };
    let name = cluster
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let version = s("/spec/kubernetes/version")
        .context("Cluster: spec.shoot.spec.kubernetes.version is missing")?;
    let kubernetes_version = semver::Version::parse(&version).with_context(|| {
        format!("Cluster {name}: spec.shoot.spec.kubernetes.version {version:?}")
    })?;
    let workers = shoot
        .pointer("/spec/provider/workers")
        .and_then(Value::as_array)
        .map(|ws| {
            ws.iter()
                .map(|w| WorkerPool {
                    name: w
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                    kubernetes_version: w
                        .pointer("/kubernetes/version")
                        .and_then(Value::as_str)
                        .and_then(|v| semver::Version::parse(v).ok()),
                })
                .collect()
        })
        .unwrap_or_default();
    let cidrs = |base: &str| Cidrs {
        pods: strings(shoot.pointer(&format!("{base}/pods"))),
        nodes: strings(shoot.pointer(&format!("{base}/nodes"))),
        services: strings(shoot.pointer(&format!("{base}/services"))),
    };
    Ok(ShootContext {
        cluster_name: name,
        resource_version: None,
        generic_token_kubeconfig_secret: "generic-token-kubeconfig".into(),
        kubernetes_version,
        workers,
        networking: Networking {
            ip_families: strings(shoot.pointer("/spec/networking/ipFamilies")),
            spec: cidrs("/spec/networking"),
            status: cidrs("/status/networking"),
        },
        node_cidr_mask_size: None,
        region: s("/spec/region").unwrap_or_default(),
        annotations: shoot
            .pointer("/metadata/annotations")
            .cloned()
            .map(serde_json::from_value)
            .transpose()?
            .unwrap_or_default(),
        provider_type: s("/spec/provider/type").unwrap_or_default(),
        infrastructure_config: shoot
            .pointer("/spec/provider/infrastructureConfig")
            .cloned(),
        control_plane_config: shoot.pointer("/spec/provider/controlPlaneConfig").cloned(),
        hibernation: Hibernation::default(),
        last_operation: None,
        technical_id: s("/status/technicalID"),
        deletion_timestamp: s("/metadata/deletionTimestamp"),
        seed_provider_type: cluster
            .pointer("/spec/seed/spec/provider/type")
            .and_then(Value::as_str)
            .map(str::to_string),
        cloud_profile_config: cluster
            .pointer("/spec/cloudProfile/spec/providerConfig")
            .cloned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_manifest_becomes_an_update_request() {
        let r = request_from_input(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: kube-scheduler, namespace: shoot--a--b}\n",
        )
        .unwrap();
        assert_eq!(r.kind.group, "apps");
        assert_eq!(r.kind.version, "v1");
        assert_eq!(r.namespace, "shoot--a--b");
        assert_eq!(r.operation, Operation::Update);
    }
}
