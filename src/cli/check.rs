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
//! certificate a reconcile would generate is reported `missing` (planned as
//! a placeholder: an audit generates no keys).
//!
//! A table on the terminal, JSON with `--output json`; the exit code is
//! non-zero when anything differs.
//!
//! It only reads: GET and LIST (plus the Cluster watch of the state source),
//! the calls of `deploy::rbac::CHECK_API_CALLS`, which
//! `scion check --print-rbac` prints as a ClusterRole.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, ValueEnum};
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use serde::Serialize;
use serde_json::Value;

use crate::controller::ControlPlaneActuator;
use crate::controller::controlplane;
use crate::controller::health::CONDITION_TYPE;
use crate::deploy::Extension;
use crate::deploy::rbac::check_cluster_role;
use crate::gardener::defaults::normalize;
use crate::gardener::{ControlPlane, ManagedResource, ShootContext};
use crate::managedresources::compare::compare;
use crate::managedresources::takeover;
use crate::mutation::{Engine, Outcome, mutate_request};
use crate::profile::{ANY_NAME, ProviderLabel, TARGETS, Target};
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
    /// The kubeconfig to read (default: $KUBECONFIG, ~/.kube/config, in-cluster).
    #[arg(long, env = "SCION_KUBECONFIG", value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use (default: its current context).
    #[arg(long, env = "SCION_CONTEXT", value_name = "NAME")]
    pub context: Option<String>,
    /// No progress lines on stderr.
    #[arg(long, short = 'q', env = "SCION_QUIET")]
    pub quiet: bool,
    /// The extension's settings that change answers, as it is configured.
    #[command(flatten)]
    pub engine: super::engine::EngineArgs,
    /// The extension feature gates the extension runs with (the ControlPlane
    /// renders honour the ones the provider declares).
    #[command(flatten)]
    pub gates: super::gates::FeatureGateArgs,
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
    /// Something to fix or know before or after the switch-over (two writers
    /// of `ControlPlaneHealthy`; objects of a ManagedResource scion does not
    /// render, which the take-over keeps); counts as a difference.
    Warning,
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
    /// Why the audit stopped before the end (forbidden, unreachable).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
}

/// Exit code: every object matches.
pub const EXIT_MATCHES: u8 = 0;
/// Exit code: scion would change, deny or create something.
pub const EXIT_DIFFERS: u8 = 1;
/// Exit code: the audit could not be done, or not completely (an object or
/// the seed could not be read; the audit stopped): no verdict.
pub const EXIT_NOT_AUDITED: u8 = 2;

impl Report {
    /// [`EXIT_NOT_AUDITED`] when it stopped or anything could not be read,
    /// else [`EXIT_DIFFERS`] when anything differs, else [`EXIT_MATCHES`].
    pub fn exit_code(&self) -> u8 {
        if self.stopped.is_some() || self.findings.iter().any(|f| f.result == Verdict::Error) {
            EXIT_NOT_AUDITED
        } else if self.problems() > 0 {
            EXIT_DIFFERS
        } else {
            EXIT_MATCHES
        }
    }

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
                    Verdict::Warning => "warning",
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
        if let Some(why) = &self.stopped {
            out.push_str(&format!("audit stopped early: {why}\n"));
        }
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
    watch: &Watch,
) -> Report {
    let provider = engine.profile().provider.clone();
    let mut findings = go_extension_findings(client, &provider).await;
    let mut stopped = None;
    let finding = |namespace: &str, kind: &str, name: &str, result, changes, message| Finding {
        namespace: namespace.to_owned(),
        kind: kind.to_owned(),
        name: name.to_owned(),
        result,
        changes,
        message,
    };
    for (i, namespace) in namespaces.iter().enumerate() {
        if let Some(why) = watch.guard.as_ref().and_then(|g| g.stopped()) {
            stopped = Some(why);
            break;
        }
        (watch.progress)(&format!(
            "checking {namespace} ({}/{})",
            i + 1,
            namespaces.len()
        ));
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
                let stored = object.clone();
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
                        let ops = stored_changes(&stored, &m.object());
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
    if stopped.is_none() {
        stopped = watch.guard.as_ref().and_then(|g| g.stopped());
    }
    Report {
        provider,
        findings,
        stopped,
    }
}

/// The Go extension's name (`gardener-extension-provider-<p>`): its
/// Deployment, container and binary (`/gardener-extension-provider-<p>`).
fn go_extension(provider: &str) -> String {
    format!("gardener-extension-provider-{provider}")
}

/// Whether a Deployment is the Go extension of `provider` running its
/// `healthcheck` controller (`Some(true)`), not running it (`Some(false)`),
/// or not the Go extension at all (`None`, scion's own among them): its
/// binary is `/gardener-extension-provider-<p>`; the controllers are all of
/// them unless `--controllers` lists others, less `--disable-controllers`;
/// a Deployment scaled to 0 runs none.
pub fn go_runs_healthcheck(deployment: &Value, provider: &str) -> Option<bool> {
    let binary = go_extension(provider);
    let spec = &deployment["spec"];
    let containers = spec["template"]["spec"]["containers"].as_array()?;
    let words: Vec<&str> = containers
        .iter()
        .filter(|c| {
            c["command"]
                .as_array()
                .and_then(|cmd| cmd.first())
                .and_then(Value::as_str)
                .is_some_and(|cmd| cmd.rsplit('/').next() == Some(binary.as_str()))
        })
        .flat_map(|c| {
            ["command", "args"]
                .into_iter()
                .flat_map(|k| c[k].as_array().into_iter().flatten())
                .filter_map(Value::as_str)
        })
        .collect();
    if words.is_empty() {
        return None;
    }
    if spec["replicas"].as_i64() == Some(0) {
        return Some(false);
    }
    let list = |flag: &str| -> Option<Vec<String>> {
        let eq = format!("{flag}=");
        let at = words
            .iter()
            .rposition(|w| *w == flag || w.starts_with(&eq))?;
        let value = match words[at].strip_prefix(&eq) {
            Some(v) => v,
            None => words.get(at + 1).copied().unwrap_or_default(),
        };
        Some(
            value
                .split(',')
                .map(|v| v.trim().trim_matches('"').to_owned())
                .filter(|v| !v.is_empty())
                .collect(),
        )
    };
    let enabled = list("--controllers").is_none_or(|c| c.iter().any(|c| c == "healthcheck"));
    let disabled =
        list("--disable-controllers").is_some_and(|c| c.iter().any(|c| c == "healthcheck"));
    Some(enabled && !disabled)
}

/// The field manager that last wrote the ControlPlane's `status.conditions`
/// when scion wrote its `status.lastOperation` (scion reconciles it) and
/// someone else the conditions: a second writer of `ControlPlaneHealthy`
/// (the Go extension's healthcheck controller after the switch-over).
pub fn second_condition_writer(cp: &ControlPlane) -> Option<String> {
    let entries = cp.metadata.managed_fields.as_deref().unwrap_or_default();
    let owner = |field: &str| {
        entries
            .iter()
            .filter(|e| {
                e.fields_v1
                    .as_ref()
                    .is_some_and(|f| f.0.pointer(&format!("/f:status/{field}")).is_some())
            })
            .max_by(|a, b| {
                a.time
                    .as_ref()
                    .map(|t| t.0)
                    .cmp(&b.time.as_ref().map(|t| t.0))
            })
            .and_then(|e| e.manager.clone())
    };
    let operation = owner("f:lastOperation")?;
    let conditions = owner("f:conditions")?;
    (operation == crate::controller::FIELD_MANAGER && conditions != operation).then_some(conditions)
}

/// Whether a Deployment is scion (`serve` with the provider) running its
/// `healthcheck` controller: `--controllers` (default all, `none`) less
/// `--disable-controllers`, and not scaled to 0. `None`: not scion.
pub fn scion_runs_healthcheck(deployment: &Value, provider: &str) -> Option<bool> {
    let spec = &deployment["spec"];
    let args: Vec<&str> = spec["template"]["spec"]["containers"]
        .as_array()?
        .iter()
        .filter_map(|c| c["args"].as_array())
        .find(|a| {
            a.first().and_then(Value::as_str) == Some("serve")
                && a.iter()
                    .any(|w| w.as_str() == Some(format!("--provider={provider}").as_str()))
        })?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    if spec["replicas"].as_i64() == Some(0) {
        return Some(false);
    }
    let list = |flag: &str| {
        args.iter()
            .rev()
            .find_map(|w| w.strip_prefix(&format!("{flag}=")))
            .map(|v| v.split(',').map(str::trim).collect::<Vec<_>>())
    };
    let enabled =
        list("--controllers").is_none_or(|c| c.contains(&"healthcheck") && !c.contains(&"none"));
    let disabled = list("--disable-controllers").is_some_and(|c| c.contains(&"healthcheck"));
    Some(enabled && !disabled)
}

/// The Go extension's Deployments that run its healthcheck controller while
/// scion runs its own (issue 25 item 3: one writer of `ControlPlaneHealthy`).
/// Before scion's controllers run (the audit before the switch-over, the
/// webhooks-only stage), the Go extension is the one writer: no warning.
async fn go_extension_findings(client: &kube::Client, provider: &str) -> Vec<Finding> {
    let api: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &ApiResource::erase::<k8s_openapi::api::apps::v1::Deployment>(&()),
    );
    let params = ListParams::default().labels(&format!(
        "app.kubernetes.io/name={}",
        go_extension(provider)
    ));
    let deployments = match api.list(&params).await {
        Ok(list) => list.items,
        Err(err) => {
            return vec![error_finding(
                "",
                "Deployment",
                &go_extension(provider),
                format!("cannot list the Go extension's Deployments: {err}"),
            )];
        }
    };
    let values: Vec<Value> = deployments
        .iter()
        .filter_map(|d| serde_json::to_value(d).ok())
        .collect();
    let scion_writes = values
        .iter()
        .any(|d| scion_runs_healthcheck(d, provider) == Some(true));
    if !scion_writes {
        return Vec::new();
    }
    deployments
        .into_iter()
        .zip(values)
        .filter_map(|(d, value)| {
            go_runs_healthcheck(&value, provider)?.then(|| Finding {
                namespace: d.metadata.namespace.clone().unwrap_or_default(),
                kind: "Deployment".to_owned(),
                name: d.metadata.name.clone().unwrap_or_default(),
                result: Verdict::Warning,
                changes: Vec::new(),
                message: Some(format!(
                    "the Go extension runs its healthcheck controller and so does scion: both write {CONDITION_TYPE}; set disableControllers: [controlplane, healthcheck] in the Go extension's ControllerDeployment values (--disable-controllers=controlplane,healthcheck)"
                )),
            })
        })
        .collect()
}

/// The patch operations (`op path`) that would change the stored object:
/// scion's answer applied to it, both as the API server stores them
/// ([`normalize`]: its defaults filled in, the fields it populates dropped).
/// A webhook answer that only removes what the server defaults back (the
/// MCM sidecar's `terminationMessagePath`, say) changes nothing stored.
pub fn stored_changes(stored: &Value, answered: &Value) -> Vec<String> {
    crate::patch::diff(&normalize(stored), &normalize(answered))
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
        .collect()
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
        if let Some(manager) = second_condition_writer(&cp) {
            findings.push(Finding {
                namespace: namespace.to_owned(),
                kind: "ControlPlane".to_owned(),
                name: cp.name().to_owned(),
                result: Verdict::Warning,
                changes: Vec::new(),
                message: Some(format!(
                    "scion reconciles it, but {manager:?} last wrote its conditions: two writers of {CONDITION_TYPE} (disable the Go extension's healthcheck controller)"
                )),
            });
        }
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
        for option in &desired.unhonoured {
            findings.push(Finding {
                namespace: namespace.to_owned(),
                kind: "ControlPlane".to_owned(),
                name: cp.name().to_owned(),
                result: Verdict::Warning,
                changes: Vec::new(),
                message: Some(option.to_string()),
            });
        }
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
        let keys = controlplane::rendered_keys(&desired.bundles);
        for bundle in &desired.bundles {
            let rendered = &keys[controlplane::cluster_index(bundle.class)];
            findings
                .push(managed_resource_finding(&mrs, &secrets, namespace, bundle, rendered).await);
        }
    }
}

/// The finding of one desired ManagedResource against the one present.
async fn managed_resource_finding(
    mrs: &Api<ManagedResource>,
    secrets: &Api<DynamicObject>,
    namespace: &str,
    bundle: &crate::managedresources::Bundle,
    rendered: &std::collections::BTreeSet<takeover::ObjectKey>,
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
    let mut comparison = match compare(bundle, &live, &referenced) {
        Ok(c) => c,
        Err(err) => return error_finding(namespace, kind, &bundle.name, err),
    };
    match takeover::plan(&live, &referenced, rendered) {
        Ok(kept) => comparison.mark_kept(&takeover::keys(&kept)),
        Err(refusal) => {
            return Finding {
                namespace: namespace.to_owned(),
                kind: kind.to_owned(),
                name: bundle.name.clone(),
                result: Verdict::Denied,
                changes: comparison.unreadable.clone(),
                message: Some(format!("scion's controller would refuse: {refusal}")),
            };
        }
    }
    let mut changes: Vec<String> = comparison.spec.clone();
    changes.extend(comparison.objects.iter().map(ToString::to_string));
    changes.extend(comparison.unreadable.iter().cloned());
    let kept = comparison
        .objects
        .iter()
        .filter(|c| c.change == crate::managedresources::compare::Change::Kept)
        .count();
    let message = if comparison.only_kept() {
        Some(format!(
            "{kept} object(s) scion does not render: the take-over keeps them as they are (gardener-resource-manager keeps applying them); {}",
            changes.join("; ")
        ))
    } else {
        (!comparison.same_secret && comparison.matches()).then(|| {
            format!(
                "same objects; scion would rewrite them into Secret {}",
                bundle.secret_name
            )
        })
    };
    Finding {
        namespace: namespace.to_owned(),
        kind: kind.to_owned(),
        name: bundle.name.clone(),
        result: if comparison.matches() {
            Verdict::Matches
        } else if comparison.only_kept() {
            Verdict::Warning
        } else {
            Verdict::Differs
        },
        changes,
        message,
    }
}

/// How long the Cluster list may take to arrive.
const SYNC_TIMEOUT: Duration = Duration::from_secs(60);

/// Failed connections in a row after which the API server counts as
/// unreachable and the audit stops (the Cluster watch retries with backoff:
/// about 10 s).
pub const MAX_TRANSPORT_FAILURES: u32 = 5;

/// Watches every response of the audit's client: a 401 or 403, or
/// [`MAX_TRANSPORT_FAILURES`] failed connections in a row, stop the audit
/// with the reason (instead of retrying, or reporting every object as an
/// error, until the time runs out).
#[derive(Debug)]
pub struct Guard {
    stop: tokio::sync::watch::Sender<Option<String>>,
    failures: std::sync::atomic::AtomicU32,
}

impl Default for Guard {
    fn default() -> Self {
        Guard {
            stop: tokio::sync::watch::Sender::new(None),
            failures: Default::default(),
        }
    }
}

impl Guard {
    /// Why the audit must stop, once it must.
    pub fn stopped(&self) -> Option<String> {
        self.stop.borrow().clone()
    }

    fn stop_with(&self, why: String) {
        self.stop.send_if_modified(|s| {
            let first = s.is_none();
            if first {
                *s = Some(why);
            }
            first
        });
    }

    /// Resolves once the audit must stop.
    async fn wait(&self) {
        let mut rx = self.stop.subscribe();
        let _ = rx.wait_for(Option::is_some).await;
    }

    fn answered(&self, method: &str, path: &str, status: u16) {
        use std::sync::atomic::Ordering;
        self.failures.store(0, Ordering::Relaxed);
        if status == 401 || status == 403 {
            let word = if status == 401 {
                "Unauthorized"
            } else {
                "Forbidden"
            };
            self.stop_with(format!(
                "the API server answered {status} {word} to {method} {path}: check needs the read-only ClusterRole `scion check --print-rbac` prints"
            ));
        }
    }

    fn failed(&self, error: &str) {
        use std::sync::atomic::Ordering;
        let n = self.failures.fetch_add(1, Ordering::Relaxed) + 1;
        if n >= MAX_TRANSPORT_FAILURES {
            self.stop_with(format!(
                "the API server is unreachable ({n} failed connections in a row): {error}"
            ));
        }
    }
}

/// The tower layer that puts a [`Guard`] on a client's requests.
#[derive(Debug, Clone)]
pub struct GuardLayer(pub Arc<Guard>);

impl<S> tower_layer::Layer<S> for GuardLayer {
    type Service = Guarded<S>;
    fn layer(&self, inner: S) -> Guarded<S> {
        Guarded {
            inner,
            guard: self.0.clone(),
        }
    }
}

/// A service whose answers a [`Guard`] watches.
#[derive(Debug, Clone)]
pub struct Guarded<S> {
    inner: S,
    guard: Arc<Guard>,
}

impl<S, Req, Res> tower_service::Service<http::Request<Req>> for Guarded<S>
where
    S: tower_service::Service<http::Request<Req>, Response = http::Response<Res>>,
    S::Future: Send + 'static,
    S::Error: std::fmt::Display,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = futures::future::BoxFuture<'static, Result<S::Response, S::Error>>;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<Req>) -> Self::Future {
        let (method, path) = (req.method().to_string(), req.uri().path().to_string());
        let guard = self.guard.clone();
        let answer = self.inner.call(req);
        Box::pin(async move {
            let result = answer.await;
            match &result {
                Ok(response) => guard.answered(&method, &path, response.status().as_u16()),
                Err(e) => guard.failed(&e.to_string()),
            }
            result
        })
    }
}

/// What an audit reports while it runs, and the guard that can stop it.
pub struct Watch {
    /// One line per step (namespace), for stderr.
    pub progress: Box<dyn Fn(&str) + Send + Sync>,
    pub guard: Option<Arc<Guard>>,
}

impl Watch {
    /// No progress, no guard.
    pub fn silent() -> Self {
        Watch {
            progress: Box::new(|_| {}),
            guard: None,
        }
    }
}

/// The client of `--kubeconfig` and `--context` (else the usual inference:
/// `$KUBECONFIG`, `~/.kube/config`, in-cluster), watched by `guard`.
async fn client(args: &CheckArgs, guard: &Arc<Guard>) -> anyhow::Result<kube::Client> {
    let options = kube::config::KubeConfigOptions {
        context: args.context.clone(),
        ..Default::default()
    };
    let config = match (&args.kubeconfig, &args.context) {
        (Some(path), _) => {
            let kubeconfig = kube::config::Kubeconfig::read_from(path)
                .with_context(|| format!("cannot read the kubeconfig {}", path.display()))?;
            kube::Config::from_custom_kubeconfig(kubeconfig, &options)
                .await
                .with_context(|| format!("cannot use the kubeconfig {}", path.display()))?
        }
        (None, Some(context)) => kube::Config::from_kubeconfig(&options)
            .await
            .with_context(|| format!("cannot use the kubeconfig context {context:?}"))?,
        (None, None) => kube::Config::infer()
            .await
            .context("scion check needs a Kubernetes API (--kubeconfig, $KUBECONFIG, ~/.kube/config or in-cluster)")?,
    };
    Ok(kube::client::ClientBuilder::try_from(config)
        .context("cannot build the Kubernetes client")?
        .with_layer(&GuardLayer(guard.clone()))
        .build())
}

/// `scion check`: print the report, and the exit code: 0 matches, 1
/// differs, 2 could not audit (with the reason on stderr).
pub fn main(args: &CheckArgs) -> std::process::ExitCode {
    let code = match run(args, &mut std::io::stdout().lock()) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("scion: error: could not audit: {}", super::one_line(&err));
            EXIT_NOT_AUDITED
        }
    };
    std::process::ExitCode::from(code)
}

/// Run `scion check`; the exit code of the report (errors before a report:
/// could not audit).
pub fn run(args: &CheckArgs, out: &mut dyn Write) -> anyhow::Result<u8> {
    if args.print_rbac {
        let ext = Extension::new(&args.provider.name()?, "default")?;
        let yaml = serde_saphyr::to_string(&check_cluster_role(&ext))?;
        out.write_all(yaml.as_bytes())?;
        return Ok(EXIT_MATCHES);
    }
    let profile = args.provider.profile()?;
    args.gates
        .warn_undeclared(&profile.provider, &profile.feature_gates);
    let gates = args.gates.settings();
    let engine = args.engine.engine(profile)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let quiet = args.quiet;
    let report = runtime.block_on(async {
        let guard = Arc::new(Guard::default());
        let client = client(args, &guard).await?;
        let watch = Watch {
            progress: Box::new(move |line| {
                if !quiet {
                    eprintln!("{line}");
                }
            }),
            guard: Some(guard),
        };
        check_seed_with(client, &engine, &gates, args.namespace.as_deref(), &watch).await
    })?;
    match args.output {
        CheckOutput::Table => out.write_all(report.table().as_bytes())?,
        CheckOutput::Json => {
            serde_json::to_writer_pretty(&mut *out, &report)?;
            out.write_all(b"\n")?;
        }
    }
    let code = report.exit_code();
    match code {
        EXIT_NOT_AUDITED => eprintln!(
            "scion: could not audit{}",
            report.stopped.as_deref().map_or_else(
                || ": some objects could not be read (rows `error`)".to_string(),
                |w| format!(": {w}")
            )
        ),
        EXIT_DIFFERS => eprintln!(
            "scion: {} of {} object(s) would change",
            report.problems(),
            report.findings.len()
        ),
        _ => {}
    }
    Ok(code)
}

/// Sync the Clusters, then [`audit`] every shoot namespace (or `only`).
pub async fn check_seed(
    client: kube::Client,
    engine: &Engine,
    only: Option<&str>,
) -> anyhow::Result<Report> {
    check_seed_with(
        client,
        engine,
        &crate::profile::GateSettings::new(),
        only,
        &Watch::silent(),
    )
    .await
}

/// [`check_seed`] with the operator's extension feature gates, progress and
/// a [`Guard`] that can stop it.
pub async fn check_seed_with(
    client: kube::Client,
    engine: &Engine,
    feature_gates: &crate::profile::GateSettings,
    only: Option<&str>,
    watch: &Watch,
) -> anyhow::Result<Report> {
    let images = super::provider::images(engine.profile())?;
    let state = Arc::new(KubeState::new(client.clone(), KubeStateOptions::default()));
    let reflector = state.spawn();
    (watch.progress)("listing the Clusters");
    let stop = async {
        match &watch.guard {
            Some(guard) => guard.wait().await,
            None => std::future::pending().await,
        }
    };
    let synced = tokio::select! {
        synced = tokio::time::timeout(SYNC_TIMEOUT, state.wait_synced()) => synced.is_ok(),
        () = stop => false,
    };
    if !synced {
        reflector.abort();
        if let Some(why) = watch.guard.as_ref().and_then(|g| g.stopped()) {
            anyhow::bail!("{why}");
        }
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
    let actuator = match engine.profile().control_plane() {
        Ok(spec) => {
            let provider = engine.profile().provider.clone();
            let mut actuator = ControlPlaneActuator::new(
                client.clone(),
                state.clone(),
                &provider,
                Arc::new(spec.clone()),
            );
            actuator.images = Arc::new(images);
            actuator.feature_gates = feature_gates.clone();
            Some(actuator)
        }
        // A profile without components runs no ControlPlane controller.
        Err(_) => None,
    };
    let report = audit(
        &client,
        engine,
        state.as_ref(),
        actuator.as_ref(),
        &namespaces,
        watch,
    )
    .await;
    reflector.abort();
    Ok(report)
}
