//! `scion check`: a read-only audit of a live seed before switching from the
//! Go extension to scion. For every shoot namespace (every Cluster) it reads
//! the objects scion's webhooks mutate — the control-plane Deployments and
//! the machine-controller-manager VPA, the OperatingSystemConfigs and the
//! `cloudprovider` Secret of shoots of the provider, the Etcds of every shoot
//! on a seed of the provider — runs them through the same request path as
//! the webhook (`mutation::mutate_request`) and reports what scion would
//! change: nothing (`matches`), a patch (`differs`, with its operations), or
//! a denial.
//!
//! For every ControlPlane of the provider it also asks the ControlPlane
//! actuator what a reconcile would write (`ControlPlaneActuator::desired`: the
//! same certificate plan, render and ManagedResource bundles, with the writes
//! left out) and compares each ManagedResource with the one present
//! ([`crate::managedresources::compare`]): `matches`, `differs` (the objects
//! added, removed or changed, by kind, namespace and name) or `missing`.
//! Certificates are not re-rendered: the certificate Secrets present in the
//! namespace are reused as the controller reuses them, so the render mounts
//! the same serving-certificate Secret; when none can be reused the
//! certificate a reconcile would generate is reported `missing`.
//!
//! A table on the terminal, JSON with `--output json`; the exit code is
//! non-zero when anything differs.
//!
//! It only reads: GET and LIST (plus the Cluster watch of the state source),
//! the calls of `deploy::rbac::CHECK_API_CALLS`, which
//! `scion check --print-rbac` prints as a ClusterRole.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, ValueEnum};
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use serde::Serialize;
use serde_json::Value;

use crate::controller::ControlPlaneActuator;
use crate::deploy::Extension;
use crate::deploy::rbac::check_cluster_role;
use crate::gardener::{ControlPlane, ManagedResource, ShootContext};
use crate::managedresources::compare::compare;
use crate::mutation::{Engine, Outcome, mutate_request};
use crate::profile::{ANY_NAME, ImageVector, ProviderLabel, TARGETS, Target};
use crate::state::{KubeState, KubeStateOptions, StateSource};

/// Output formats of `scion check`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CheckOutput {
    Table,
    Json,
}

/// Audit a live seed: what would scion change?
#[derive(Debug, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub provider: super::provider::ProviderArgs,
    /// Only this shoot namespace.
    #[arg(long, short = 'n', env = "SCION_NAMESPACE", value_name = "NS")]
    pub namespace: Option<String>,
    /// `table` or `json`.
    #[arg(long, short = 'o', env = "SCION_OUTPUT", value_enum, default_value_t = CheckOutput::Table)]
    pub output: CheckOutput,
    /// Print the read-only ClusterRole the audit needs and exit.
    #[arg(long, env = "SCION_PRINT_RBAC")]
    pub print_rbac: bool,
    /// The extension's settings that change answers, as it is configured.
    #[command(flatten)]
    pub engine: super::engine::EngineArgs,
}

/// What scion would do to one object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// scion would write nothing.
    Matches,
    /// scion would patch the object.
    Differs,
    /// scion's webhook would deny the object.
    Denied,
    /// scion's controller would create the object (a ManagedResource, a certificate).
    Missing,
    /// The object or its shoot could not be read.
    Error,
}

/// One audited object.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    pub namespace: String,
    pub kind: String,
    pub name: String,
    pub result: Verdict,
    /// The patch operations (`op path`) scion would answer with.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// The audit of a seed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub provider: String,
    pub findings: Vec<Finding>,
}

impl Report {
    /// Objects scion would change, deny, or could not read.
    pub fn problems(&self) -> usize {
        self.findings
            .iter()
            .filter(|f| f.result != Verdict::Matches)
            .count()
    }

    /// The table for the terminal.
    pub fn table(&self) -> String {
        let rows: Vec<[String; 5]> = self
            .findings
            .iter()
            .map(|f| {
                let result = match f.result {
                    Verdict::Matches => "matches",
                    Verdict::Differs => "differs",
                    Verdict::Denied => "denied",
                    Verdict::Missing => "missing",
                    Verdict::Error => "error",
                };
                let detail = match (&f.message, f.changes.len()) {
                    (Some(m), _) => m.clone(),
                    (None, 0) => String::new(),
                    (None, n) => format!("{n} change(s): {}", f.changes.join("; ")),
                };
                [
                    f.namespace.clone(),
                    f.kind.clone(),
                    f.name.clone(),
                    result.to_owned(),
                    detail,
                ]
            })
            .collect();
        let header = ["NAMESPACE", "KIND", "NAME", "RESULT", "DETAIL"].map(str::to_owned);
        let mut widths = header.clone().map(|h| h.len());
        for row in &rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.len());
            }
        }
        let mut out = String::new();
        for row in std::iter::once(&header).chain(&rows) {
            let mut line = String::new();
            for (i, cell) in row.iter().enumerate() {
                if i + 1 == row.len() {
                    line.push_str(cell);
                } else {
                    line.push_str(&format!("{cell:<w$}  ", w = widths[i]));
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out.push_str(&format!(
            "{} object(s) checked, {} would change or could not be checked\n",
            self.findings.len(),
            self.problems()
        ));
        out
    }
}

fn api_resource(target: &Target) -> ApiResource {
    ApiResource {
        group: target.group.to_owned(),
        version: target.version.to_owned(),
        api_version: if target.group.is_empty() {
            target.version.to_owned()
        } else {
            format!("{}/{}", target.group, target.version)
        },
        kind: target.kind.to_owned(),
        plural: target.resource.to_owned(),
    }
}

/// The objects of `target` in `namespace`: by name, or all of them.
async fn read_objects(
    client: &kube::Client,
    target: &Target,
    namespace: &str,
) -> Result<Vec<Value>, kube::Error> {
    let api: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), namespace, &api_resource(target));
    let objects = if target.name == ANY_NAME {
        api.list(&ListParams::default()).await?.items
    } else {
        api.get_opt(target.name).await?.into_iter().collect()
    };
    let resource = api_resource(target);
    Ok(objects
        .into_iter()
        .map(|o| {
            let mut v = serde_json::to_value(o).unwrap_or(Value::Null);
            // list items come without apiVersion and kind
            v["apiVersion"] = Value::String(resource.api_version.clone());
            v["kind"] = Value::String(resource.kind.clone());
            v
        })
        .collect())
}

/// Whether the webhook of `target` sees objects of a shoot with these providers.
fn selected(target: &Target, provider: &str, shoot: &str, seed: Option<&str>) -> bool {
    match target.webhook.namespace_selector {
        ProviderLabel::Shoot => shoot == provider,
        ProviderLabel::Seed => seed == Some(provider),
    }
}

/// Audit `namespaces` against the live objects, reading through `client`
/// and `state` (which holds the Clusters); with `controlplanes`, also the
/// ManagedResources of the provider's ControlPlanes.
pub async fn audit(
    client: &kube::Client,
    engine: &Engine,
    state: &dyn StateSource,
    controlplanes: Option<&ControlPlaneActuator>,
    namespaces: &[String],
) -> Report {
    let provider = engine.profile().provider.clone();
    let mut findings = Vec::new();
    let finding = |namespace: &str, kind: &str, name: &str, result, changes, message| Finding {
        namespace: namespace.to_owned(),
        kind: kind.to_owned(),
        name: name.to_owned(),
        result,
        changes,
        message,
    };
    for namespace in namespaces {
        let shoot = match state.shoot(namespace) {
            Ok(shoot) => shoot,
            Err(err) => {
                findings.push(finding(
                    namespace,
                    "Cluster",
                    namespace,
                    Verdict::Error,
                    Vec::new(),
                    Some(err.to_string()),
                ));
                continue;
            }
        };
        let (shoot_provider, seed_provider) = (
            shoot.provider_type().to_owned(),
            shoot.seed_provider_type().map(str::to_owned),
        );
        for target in TARGETS {
            if !selected(target, &provider, &shoot_provider, seed_provider.as_deref()) {
                continue;
            }
            let objects = match read_objects(client, target, namespace).await {
                Ok(objects) => objects,
                Err(err) => {
                    findings.push(finding(
                        namespace,
                        target.kind,
                        target.name,
                        Verdict::Error,
                        Vec::new(),
                        Some(err.to_string()),
                    ));
                    continue;
                }
            };
            for object in objects {
                let name = object["metadata"]["name"].as_str().unwrap_or("").to_owned();
                let request = match super::mutate::request_for_object(object) {
                    Ok(request) => request,
                    Err(err) => {
                        findings.push(finding(
                            namespace,
                            target.kind,
                            &name,
                            Verdict::Error,
                            Vec::new(),
                            Some(err.to_string()),
                        ));
                        continue;
                    }
                };
                let (result, changes, message) = match mutate_request(engine, state, &request).await
                {
                    Ok(Outcome::Skipped(_)) => (Verdict::Matches, Vec::new(), None),
                    Ok(Outcome::Mutated(m)) => {
                        let ops: Vec<String> = m
                            .patch()
                            .0
                            .iter()
                            .map(|op| {
                                let v = serde_json::to_value(op).unwrap_or(Value::Null);
                                format!(
                                    "{} {}",
                                    v["op"].as_str().unwrap_or("?"),
                                    v["path"].as_str().unwrap_or("?")
                                )
                            })
                            .collect();
                        if ops.is_empty() {
                            (Verdict::Matches, ops, None)
                        } else {
                            (Verdict::Differs, ops, None)
                        }
                    }
                    Err(denial) => (Verdict::Denied, Vec::new(), Some(denial.to_string())),
                };
                findings.push(finding(
                    namespace,
                    target.kind,
                    &name,
                    result,
                    changes,
                    message,
                ));
            }
        }
        if let Some(actuator) = controlplanes
            && shoot_provider == provider
        {
            audit_controlplanes(client, actuator, namespace, &shoot, &mut findings).await;
        }
    }
    Report { provider, findings }
}

fn error_finding(namespace: &str, kind: &str, name: &str, message: String) -> Finding {
    Finding {
        namespace: namespace.to_owned(),
        kind: kind.to_owned(),
        name: name.to_owned(),
        result: Verdict::Error,
        changes: Vec::new(),
        message: Some(message),
    }
}

/// The ControlPlanes of `namespace` the controller reconciles: the
/// provider's, of class `shoot`, not being deleted.
async fn controlplanes(
    client: &kube::Client,
    provider: &str,
    namespace: &str,
) -> Result<Vec<ControlPlane>, kube::Error> {
    let api: Api<ControlPlane> = Api::namespaced(client.clone(), namespace);
    Ok(api
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter(|cp| {
            cp.spec.type_ == provider
                && cp.class() == "shoot"
                && cp.metadata.deletion_timestamp.is_none()
        })
        .collect())
}

/// Compare what the actuator would write for each ControlPlane of
/// `namespace` with the ManagedResources present.
async fn audit_controlplanes(
    client: &kube::Client,
    actuator: &ControlPlaneActuator,
    namespace: &str,
    shoot: &ShootContext,
    findings: &mut Vec<Finding>,
) {
    let cps = match controlplanes(client, &actuator.provider, namespace).await {
        Ok(cps) => cps,
        Err(err) => {
            findings.push(error_finding(
                namespace,
                "ControlPlane",
                "",
                err.to_string(),
            ));
            return;
        }
    };
    let mrs: Api<ManagedResource> = Api::namespaced(client.clone(), namespace);
    let secrets: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        namespace,
        &ApiResource::erase::<k8s_openapi::api::core::v1::Secret>(&()),
    );
    for cp in cps {
        let desired = match actuator.desired(&cp, shoot).await {
            Ok(desired) => desired,
            Err(err) => {
                findings.push(error_finding(
                    namespace,
                    "ControlPlane",
                    cp.name(),
                    err.to_string(),
                ));
                continue;
            }
        };
        for created in &desired.plan.create {
            let config = created["metadata"]["labels"][crate::secrets::LABEL_NAME]
                .as_str()
                .unwrap_or_default();
            findings.push(Finding {
                namespace: namespace.to_owned(),
                kind: "Secret".to_owned(),
                name: config.to_owned(),
                result: Verdict::Missing,
                changes: Vec::new(),
                message: Some(format!(
                    "no reusable {config} certificate in the namespace: a reconcile generates one, and the CCM mounts the new Secret"
                )),
            });
        }
        for bundle in &desired.bundles {
            findings.push(managed_resource_finding(&mrs, &secrets, namespace, bundle).await);
        }
    }
}

/// The finding of one desired ManagedResource against the one present.
async fn managed_resource_finding(
    mrs: &Api<ManagedResource>,
    secrets: &Api<DynamicObject>,
    namespace: &str,
    bundle: &crate::managedresources::Bundle,
) -> Finding {
    let kind = "ManagedResource";
    let live = match mrs.get_opt(&bundle.name).await {
        Ok(Some(live)) => live,
        Ok(None) => {
            return Finding {
                namespace: namespace.to_owned(),
                kind: kind.to_owned(),
                name: bundle.name.clone(),
                result: Verdict::Missing,
                changes: Vec::new(),
                message: Some(format!(
                    "scion would create it with Secret {}",
                    bundle.secret_name
                )),
            };
        }
        Err(err) => return error_finding(namespace, kind, &bundle.name, err.to_string()),
    };
    let mut referenced = Vec::new();
    for reference in &live.spec.secret_refs {
        match secrets.get_opt(&reference.name).await {
            Ok(secret) => referenced.push((
                reference.name.clone(),
                secret.map(|s| serde_json::to_value(s).unwrap_or(Value::Null)),
            )),
            Err(err) => {
                return error_finding(
                    namespace,
                    kind,
                    &bundle.name,
                    format!("Secret {}: {err}", reference.name),
                );
            }
        }
    }
    let live = serde_json::to_value(&live).unwrap_or(Value::Null);
    let comparison = match compare(bundle, &live, &referenced) {
        Ok(c) => c,
        Err(err) => return error_finding(namespace, kind, &bundle.name, err),
    };
    let mut changes: Vec<String> = comparison.spec.clone();
    changes.extend(comparison.objects.iter().map(ToString::to_string));
    changes.extend(comparison.unreadable.iter().cloned());
    let message = (!comparison.same_secret && comparison.matches()).then(|| {
        format!(
            "same objects; scion would rewrite them into Secret {}",
            bundle.secret_name
        )
    });
    Finding {
        namespace: namespace.to_owned(),
        kind: kind.to_owned(),
        name: bundle.name.clone(),
        result: if comparison.matches() {
            Verdict::Matches
        } else {
            Verdict::Differs
        },
        changes,
        message,
    }
}

/// How long the Cluster list may take to arrive.
const SYNC_TIMEOUT: Duration = Duration::from_secs(60);

/// Run `scion check`.
pub fn run(args: &CheckArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    if args.print_rbac {
        let ext = Extension::new(&args.provider.name()?, "default")?;
        let yaml = serde_saphyr::to_string(&check_cluster_role(&ext))?;
        out.write_all(yaml.as_bytes())?;
        return Ok(());
    }
    let profile = args.provider.profile()?;
    let engine = args.engine.engine(profile)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let report = runtime.block_on(async {
        let client = kube::Client::try_default()
            .await
            .context("scion check needs a Kubernetes API (kubeconfig or in-cluster)")?;
        check_seed(client, &engine, args.namespace.as_deref()).await
    })?;
    match args.output {
        CheckOutput::Table => out.write_all(report.table().as_bytes())?,
        CheckOutput::Json => {
            serde_json::to_writer_pretty(&mut *out, &report)?;
            out.write_all(b"\n")?;
        }
    }
    let problems = report.problems();
    if problems > 0 {
        anyhow::bail!(
            "{problems} of {} object(s) would change or could not be checked",
            report.findings.len()
        );
    }
    Ok(())
}

/// Sync the Clusters, then [`audit`] every shoot namespace (or `only`).
pub async fn check_seed(
    client: kube::Client,
    engine: &Engine,
    only: Option<&str>,
) -> anyhow::Result<Report> {
    let images = ImageVector::builtin_with_env_overwrite(&engine.profile().provider)?;
    let state = Arc::new(KubeState::new(client.clone(), KubeStateOptions::default()));
    let reflector = state.spawn();
    let synced = tokio::time::timeout(SYNC_TIMEOUT, state.wait_synced()).await;
    if synced.is_err() {
        reflector.abort();
        anyhow::bail!("the Cluster list did not arrive within {SYNC_TIMEOUT:?}");
    }
    let namespaces: Vec<String> = state
        .namespaces()
        .into_iter()
        .filter(|ns| only.is_none_or(|o| o == ns))
        .collect();
    if let Some(o) = only
        && namespaces.is_empty()
    {
        reflector.abort();
        anyhow::bail!("no Cluster {o:?} on this seed");
    }
    let actuator = match engine.profile().ccm() {
        Ok(spec) => {
            let provider = engine.profile().provider.clone();
            let mut actuator = ControlPlaneActuator::new(
                client.clone(),
                state.clone(),
                &provider,
                Arc::new(spec.clone()),
            );
            actuator.images = Arc::new(images);
            Some(actuator)
        }
        // A profile without a CCM section runs no ControlPlane controller.
        Err(_) => None,
    };
    let report = audit(
        &client,
        engine,
        state.as_ref(),
        actuator.as_ref(),
        &namespaces,
    )
    .await;
    reflector.abort();
    Ok(report)
}
