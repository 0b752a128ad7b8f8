//! `scion mutate`: run the webhooks on one object offline (a control-plane
//! Deployment or VPA, an OperatingSystemConfig, the `cloudprovider` Secret, an
//! Etcd) and print the mutated object or the patch; `--explain` lists which
//! rules matched.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use serde_json::Value;

use crate::admission::{AdmissionRequest, GroupVersionKind, Operation, ReviewVersion};
use crate::mutation::{Engine, Outcome, dispatch, fetch, mutate_request, shoot_of};
use crate::state::{DecodedObject, Document, ObjectsDir, Snapshot, StateSource, decode_object};

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
    #[command(flatten)]
    pub provider: super::provider::ProviderArgs,
    /// Directory of Cluster, Secret and ConfigMap manifests.
    #[arg(long, env = "SCION_OBJECTS_DIR", conflicts_with = "cluster")]
    pub objects_dir: Option<PathBuf>,
    /// A YAML file with the Cluster and, as further documents, the Secrets and
    /// ConfigMaps the rules read.
    #[arg(long, env = "SCION_CLUSTER")]
    pub cluster: Option<PathBuf>,
    #[command(flatten)]
    pub engine: super::engine::EngineArgs,
    /// The object manifest or AdmissionReview (YAML or JSON); `-` for stdin.
    #[arg(short = 'f', long = "filename", env = "SCION_FILENAME")]
    pub file: PathBuf,
    #[arg(short, long, value_enum, default_value = "yaml", env = "SCION_OUTPUT")]
    pub output: Output,
    /// List on stderr which rules matched and why.
    #[arg(long, env = "SCION_EXPLAIN")]
    pub explain: bool,
}

/// Run `scion mutate`.
pub fn run(args: MutateArgs) -> anyhow::Result<()> {
    let profile = args.provider.profile()?;
    let engine = args.engine.engine(profile)?;
    let state = build_state(&args)?;
    let text = read_input(&args.file)?;
    let request = request_from_input(&text).with_context(|| {
        format!(
            "{}: not an object manifest or AdmissionReview",
            args.file.display()
        )
    })?;
    let runtime = tokio::runtime::Builder::new_current_thread().build()?;
    let outcome = runtime
        .block_on(mutate_request(&engine, state.as_ref(), &request))
        .map_err(|d| {
            let mut message = format!(
                "denied ({} {}): {}: {d}",
                d.code(),
                d.reason(),
                request.identity()
            );
            if args.objects_dir.is_none() && args.cluster.is_none() {
                message.push_str(
                    "; no --objects-dir or --cluster was given, so no Cluster, Secret or ConfigMap is known: pass the shoot's state with one of them",
                );
            }
            anyhow::Error::msg(message)
        })?;
    // The object and the patch the webhook would answer with.
    let (after, patch) = match outcome {
        Outcome::Skipped(why) => {
            if args.explain {
                eprintln!("not mutated: {why}");
            }
            let unchanged = request.object.clone().unwrap_or(Value::Null);
            (unchanged, json_patch::Patch(Vec::new()))
        }
        Outcome::Mutated(m) => {
            if args.explain {
                let state = state.as_ref();
                runtime.block_on(explain(&args.engine, &engine, state, &request, &m.matched))?;
            }
            (m.object(), m.patch())
        }
    };
    let printed = match args.output {
        Output::Json => serde_json::to_string_pretty(&after)?,
        Output::Yaml => serde_saphyr::to_string(&after)?,
        Output::Patch => serde_json::to_string_pretty(&patch)?,
    };
    // not println!, which panics when the reader has gone
    writeln!(std::io::stdout().lock(), "{}", printed.trim_end())?;
    Ok(())
}

/// Print every rule of the component with its evaluated condition and
/// description (for an OperatingSystemConfig with its pool's kubelet version
/// and the ConfigMaps read for it, as the webhook reads them), then every
/// operation of the patch with the rule that caused it (see
/// [`super::explain`]), and for an Etcd where its storage class and capacity
/// came from.
async fn explain(
    settings: &super::engine::EngineArgs,
    engine: &Engine,
    state: &dyn StateSource,
    request: &AdmissionRequest,
    matched: &[String],
) -> anyhow::Result<()> {
    let object = request.object.as_ref().context("request has no object")?;
    let target = dispatch(&request.kind, object)
        .map_err(|_| anyhow::anyhow!("{} is not a target of the webhooks", request.kind.kind))?;
    let shoot = shoot_of(state, target, &request.namespace)
        .await
        .map_err(|d| anyhow::anyhow!("{d}"))?;
    let mut objects = fetch(engine, state, target, object, &shoot, &request.namespace)
        .await
        .map_err(|d| anyhow::anyhow!("{d}"))?;
    objects.old = request.old_object.clone();
    let profile = engine.profile();
    eprintln!(
        "profile {} ({}), component {}",
        profile.provider, profile.source, target.component
    );
    let rules = profile.rules(target.component);
    let description = |name: &str| {
        rules
            .iter()
            .find(|r| r.name == name)
            .and_then(|r| r.description.clone())
    };
    for t in engine.explain_object(target, object, &shoot, &objects) {
        let mark = if t.matched { "matched" } else { "skipped" };
        eprintln!("  {mark:7} {}: {}", t.rule, t.reason);
        if let Some(text) = description(&t.rule) {
            eprintln!("          {text}");
        }
    }
    // The object after no rule, then after each matching rule in turn.
    let images = super::provider::images(profile)?;
    let mut stages = Vec::with_capacity(matched.len() + 1);
    for k in 0..=matched.len() {
        let mut partial = profile.clone();
        for (component, rules) in &mut partial.components {
            if *component == target.component {
                rules.retain(|r| matched[..k].contains(&r.name));
            }
        }
        let stage_engine = settings.engine_with(partial, &images);
        let stage = match mutate_request(&stage_engine, state, request)
            .await
            .map_err(|d| anyhow::anyhow!("{d}"))?
        {
            Outcome::Mutated(m) => m.object(),
            Outcome::Skipped(_) => object.clone(),
        };
        stages.push(stage);
    }
    let attributed = super::explain::attribute(object, &stages);
    if attributed.is_empty() {
        eprintln!("patch: none");
    } else {
        let n = attributed.len();
        let plural = if n == 1 { "" } else { "s" };
        eprintln!("patch ({n} operation{plural}), each with the rule that caused it:");
    }
    for a in &attributed {
        eprintln!("  {}", super::explain::op_line(&a.op));
        match a.stage {
            Some(0) => eprintln!(
                "      by scion's {} handling itself, before any rule",
                target.kind
            ),
            Some(k) => {
                let name = &matched[k - 1];
                match description(name) {
                    Some(text) => eprintln!("      by rule {name}: {text}"),
                    None => eprintln!("      by rule {name}"),
                }
                let before: Vec<String> = a
                    .earlier
                    .iter()
                    .map(|k| match k {
                        0 => format!("scion's {} handling", target.kind),
                        k => format!("rule {}", matched[k - 1]),
                    })
                    .collect();
                if !before.is_empty() {
                    eprintln!(
                        "      (earlier changes to the same place: {})",
                        before.join(", ")
                    );
                }
            }
            None => eprintln!("      by several rules together (no one rule's change holds it)"),
        }
    }
    if target.is_etcd() {
        explain_etcd(settings, profile, target, object, objects.old.as_ref());
    }
    Ok(())
}

/// Where an Etcd's storage class and capacity come from.
fn explain_etcd(
    settings: &super::engine::EngineArgs,
    profile: &crate::profile::Profile,
    target: &crate::profile::Target,
    object: &Value,
    old: Option<&Value>,
) {
    use crate::mutation::etcd;
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let storage = profile.rules(target.component).iter().find_map(|r| {
        r.actions.iter().find_map(|a| match a {
            crate::profile::Action::EtcdStorage(s) => Some(s),
            _ => None,
        })
    });
    let (Some(storage), Some(main)) = (storage, etcd::is_main(name)) else {
        return;
    };
    let config = crate::mutation::EtcdConfig {
        storage_class: settings.etcd_storage_class.clone(),
        storage_capacity: settings.etcd_storage_capacity.clone(),
    };
    let choice = etcd::choose(storage, main, &config, old);
    eprintln!("Etcd {name}:");
    eprintln!(
        "  storageClass {:?}: {}",
        choice.class.0,
        choice.class.1.describe("class")
    );
    eprintln!(
        "  storageCapacity {:?}: {}",
        choice.capacity.0,
        choice.capacity.1.describe("capacity")
    );
}

/// The state the command reads: an objects directory (as `serve` reads it), or
/// the manifests of `--cluster FILE`, or nothing.
fn build_state(args: &MutateArgs) -> anyhow::Result<Arc<dyn StateSource>> {
    if let Some(dir) = &args.objects_dir {
        let (objects, problems) = ObjectsDir::load(dir)
            .with_context(|| format!("cannot read the objects directory {}", dir.display()))?;
        for problem in &problems {
            eprintln!("warning: {problem}");
        }
        return Ok(Arc::new(objects));
    }
    let mut snapshot = Snapshot::default();
    if let Some(path) = &args.cluster {
        load_manifests_into(&mut snapshot, &read_input(path)?)
            .with_context(|| format!("{}", path.display()))?;
    }
    Ok(Arc::new(snapshot))
}

fn read_input(path: &Path) -> anyhow::Result<String> {
    if path.as_os_str() == "-" {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)?;
        return Ok(s);
    }
    std::fs::read_to_string(path).with_context(|| format!("could not read {}", path.display()))
}

/// An AdmissionReview as sent, or a bare manifest turned into an UPDATE request
/// (a Secret's `stringData` folded into `data` first, as the API server does
/// before admission).
pub fn request_from_input(text: &str) -> anyhow::Result<AdmissionRequest> {
    let value: Value = serde_saphyr::from_str(text)?;
    if value.get("kind").and_then(Value::as_str) == Some("AdmissionReview") {
        return Ok(crate::decode::whole(&serde_json::to_vec(&value)?)?);
    }
    request_for_object(value)
}

/// The UPDATE request the API server would send for `value`, a manifest with
/// apiVersion and kind (`scion check` audits live objects this way).
pub fn request_for_object(mut value: Value) -> anyhow::Result<AdmissionRequest> {
    let (Some(api_version), Some(_)) = (
        value.get("apiVersion").and_then(Value::as_str),
        value.get("kind").and_then(Value::as_str),
    ) else {
        bail!("a manifest needs apiVersion and kind");
    };
    let api_version = api_version.to_string();
    crate::state::fold_string_data(&mut value).map_err(|e| anyhow::anyhow!("Secret: {e}"))?;
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", &api_version));
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
        has_old_object: false,
        old_object: None,
        dry_run: Some(true),
        version: ReviewVersion::V1,
    })
}

/// Load the Cluster, Secret and ConfigMap manifests of `text` (multi-document
/// YAML or JSON) into `snapshot`, decoded exactly as the objects directory does.
fn load_manifests_into(snapshot: &mut Snapshot, text: &str) -> anyhow::Result<()> {
    let docs: Vec<Document> = serde_saphyr::from_multiple(text)?;
    for doc in docs.into_iter().filter(|d| !d.value.is_null()) {
        match decode_object(doc).map_err(|e| anyhow::anyhow!(e))? {
            DecodedObject::Shoot(shoot) => snapshot.insert_shared_shoot(shoot),
            DecodedObject::MalformedCluster(err) => return Err(err.into()),
            DecodedObject::Object {
                namespace,
                name,
                data,
            } => snapshot.insert_object(&namespace, &name, data),
            DecodedObject::ControlPlane { .. } => {}
            DecodedObject::BackupBucket {
                name,
                provider_config,
            } => snapshot.insert_backup_bucket(&name, provider_config),
            DecodedObject::Ignored { api_version, kind } => {
                bail!(
                    "unexpected document {api_version} {kind} (want Cluster, Secret, ConfigMap or BackupBucket)"
                )
            }
        }
    }
    Ok(())
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

    #[test]
    fn input_that_is_no_manifest_is_an_error_not_a_pass() {
        for text in ["vm", "[1, 2]", "metadata: {name: x}", "kind: Deployment"] {
            let err = request_from_input(text).expect_err(text).to_string();
            assert!(err.contains("apiVersion and kind"), "{text}: {err}");
        }
    }
}
