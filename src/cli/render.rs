//! `scion render`: print the CCM objects the controller would deliver for one
//! ControlPlane, from an objects directory, without a cluster: by default the
//! plain objects, each in the namespace it lands in (the directly written
//! Secrets, then the configuration, seed and shoot ManagedResources' objects);
//! with `--managed-resources` the directly written Secrets, then each
//! ManagedResource's Secret and the ManagedResource, exactly as the controller
//! writes them.
//!
//! **Deterministic.** The same objects directory gives the same bytes. The
//! certificate Secrets (CA, bundle, serving certificates) are planned as the
//! controller plans them against the seed, against the secrets manager's
//! Secrets of the shoot namespace in the objects directory
//! ([`crate::secrets::plan_offline`]): those found are used (their names and
//! CA bundle reach the objects), and each one the controller would create is
//! printed as a stable placeholder, never fresh keys, with a `warning:` on
//! stderr.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context as _, bail};
use clap::{Args, ValueEnum};

use crate::gardener::ControlPlane;
use crate::gardener::{ObjectData, ObjectKind, ShootContext};
use crate::profile::ControlPlaneSpec;
use crate::render::{self, RenderInput};
use crate::state::{ObjectsDir, StateSource};

/// Flags of `scion render`.
#[derive(Debug, Args)]
pub struct RenderArgs {
    #[command(flatten)]
    pub provider: super::provider::ProviderArgs,
    /// Directory with the Cluster, ControlPlane and Secret manifests (YAML or JSON).
    #[arg(long, env = "SCION_OBJECTS_DIR")]
    pub objects_dir: PathBuf,
    /// The ControlPlane as NAMESPACE/NAME.
    #[arg(long, env = "SCION_CONTROLPLANE")]
    pub controlplane: String,
    /// Output format.
    #[arg(long, env = "SCION_OUTPUT", value_enum, default_value_t = Output::Yaml)]
    pub output: Output,
    /// CCM image, overriding the image vector.
    #[arg(long, env = "SCION_CCM_IMAGE")]
    pub ccm_image: Option<String>,
    /// spec.replicas of kube-apiserver for hibernated shoots (absent = scaled down).
    #[arg(long, env = "SCION_KUBE_APISERVER_REPLICAS")]
    pub kube_apiserver_replicas: Option<i32>,
    /// Print the ManagedResources and their Secrets as the controller writes
    /// them, instead of the objects they carry.
    #[arg(long, env = "SCION_MANAGED_RESOURCES")]
    pub managed_resources: bool,
    /// The extension feature gates the controller runs with.
    #[command(flatten)]
    pub gates: super::gates::FeatureGateArgs,
}

/// What `render` prints on stderr for a placeholder certificate Secret.
pub fn placeholder_warning(namespace: &str, name: &str, config: &str, dir: &Path) -> String {
    format!(
        "warning: Secret {namespace}/{name} is a placeholder, not a certificate: {} holds no usable Secret of the certificate config {config} (labels managed-by=secrets-manager, name={config}); the controller generates it in the shoot namespace",
        dir.display()
    )
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
    let profile = args.provider.profile()?;
    let provider = profile.provider.clone();
    let objects = load_objects(&args.objects_dir)?;
    let cp = controlplane_in(&objects, &args.objects_dir, namespace, name)?;
    let (cp, shoot, credentials) = inputs_from_state(&objects, cp)?;
    if cp.spec.type_ != provider {
        bail!(
            "ControlPlane {namespace}/{name} is of type {:?}, not {provider:?}: render it with --provider {}",
            cp.spec.type_,
            cp.spec.type_
        );
    }
    let Some(credentials) = credentials else {
        let secret = &cp.spec.secret_ref;
        bail!(
            "ControlPlane {namespace}/{name}: its credentials Secret {}/{} (spec.secretRef) is not in {}; the cloud config and the CCM's checksum are rendered from it",
            secret.namespace.as_deref().unwrap_or(namespace),
            secret.name,
            args.objects_dir.display()
        );
    };
    let spec = profile.control_plane()?;
    args.gates
        .warn_undeclared(&provider, &profile.feature_gates);
    let feature_gates = args.gates.settings();
    let images = super::provider::images(&profile)?;
    let existing = certificate_secrets(&objects, &provider, namespace);
    let certificates = offline_certificates(
        &provider,
        &cp,
        &shoot,
        &spec.certificates(),
        &existing,
        k8s_openapi::jiff::Timestamp::now().as_second(),
    )?;
    let (text, unhonoured) = render_with_warnings(
        &RenderInput {
            credentials: Some(&credentials),
            kube_apiserver_replicas: args.kube_apiserver_replicas,
            image_override: args.ccm_image.as_deref(),
            feature_gates: &feature_gates,
            ..RenderInput::new(&cp, &shoot, &images, &certificates.certificates)
        },
        spec,
        &certificates.create,
        Delivery {
            managed_resources: args.managed_resources,
            output: args.output,
        },
    )?;
    for secret in &certificates.create {
        if secret
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(crate::secrets::PLACEHOLDER_ANNOTATION))
            .is_some()
        {
            let text = |p: &str| {
                secret
                    .pointer(p)
                    .and_then(|v| v.as_str())
                    .unwrap_or_default()
            };
            eprintln!(
                "{}",
                placeholder_warning(
                    text("/metadata/namespace"),
                    text("/metadata/name"),
                    text("/metadata/labels/name"),
                    &args.objects_dir
                )
            );
        }
    }
    for option in &unhonoured {
        eprintln!("warning: ControlPlane {namespace}/{name}: {option}");
    }
    print!("{text}");
    Ok(())
}

/// The secrets manager's Secrets of `provider` in `namespace` of an objects
/// directory (labels `managed-by=secrets-manager`,
/// `manager-identity=provider-<p>-controlplane`), as the controller lists
/// them in the seed.
pub fn certificate_secrets(
    objects: &ObjectsDir,
    provider: &str,
    namespace: &str,
) -> Vec<k8s_openapi::api::core::v1::Secret> {
    let identity = crate::secrets::identity(provider);
    objects
        .snapshot()
        .selected(
            ObjectKind::Secret,
            namespace,
            &[
                (crate::secrets::LABEL_MANAGED_BY, crate::secrets::MANAGED_BY),
                (crate::secrets::LABEL_IDENTITY, &identity),
            ],
        )
        .into_iter()
        .filter_map(|(name, data)| match data {
            ObjectData::Secret { data, labels } => Some(k8s_openapi::api::core::v1::Secret {
                metadata: kube::api::ObjectMeta {
                    name: Some(name),
                    namespace: Some(namespace.to_string()),
                    labels: Some(labels),
                    ..Default::default()
                },
                data: data.map(|d| {
                    d.into_iter()
                        .map(|(k, v)| (k, k8s_openapi::ByteString(v)))
                        .collect()
                }),
                ..Default::default()
            }),
            ObjectData::ConfigMap { .. } => None,
        })
        .collect()
}

/// Certificates for an offline render: the secrets manager's plan against
/// `existing` (the objects directory's), with placeholders for what the
/// controller would create; `now` decides only renewals.
pub fn offline_certificates(
    provider: &str,
    cp: &ControlPlane,
    shoot: &ShootContext,
    certificates: &[crate::secrets::ServerCertificate],
    existing: &[k8s_openapi::api::core::v1::Secret],
    now: i64,
) -> anyhow::Result<crate::secrets::Plan> {
    let rotation = shoot.ca_rotation();
    Ok(crate::secrets::plan_offline(&crate::secrets::Request {
        provider,
        namespace: cp.namespace(),
        now,
        rotation: crate::secrets::CaRotation {
            last_initiation: rotation
                .last_initiation_time
                .as_deref()
                .and_then(crate::secrets::unix_seconds),
            completing: rotation.phase.as_deref() == Some("Completing"),
        },
        existing,
        certificates,
    })?)
}

/// How the render is printed.
#[derive(Debug, Clone, Copy)]
pub struct Delivery {
    /// ManagedResources and their Secrets instead of the objects they carry.
    pub managed_resources: bool,
    pub output: Output,
}

/// Render and format; the part of the command that needs no files.
/// `certificates` are the secrets manager's Secrets, printed first.
pub fn render_text(
    input: &RenderInput<'_>,
    spec: &ControlPlaneSpec,
    certificates: &[serde_json::Value],
    delivery: Delivery,
) -> anyhow::Result<String> {
    Ok(render_with_warnings(input, spec, certificates, delivery)?.0)
}

/// [`render_text`], and the settings the render does not honour (for the
/// warnings on stderr).
pub fn render_with_warnings(
    input: &RenderInput<'_>,
    spec: &ControlPlaneSpec,
    certificates: &[serde_json::Value],
    delivery: Delivery,
) -> anyhow::Result<(String, Vec<crate::profile::Unhonoured>)> {
    let rendered = render::render(input, spec).with_context(|| {
        format!(
            "rendering ControlPlane {}/{}",
            input.cp.namespace(),
            input.cp.name()
        )
    })?;
    let mut objects: Vec<serde_json::Value> = certificates.to_vec();
    if delivery.managed_resources {
        objects.extend(rendered.access_secrets.iter().map(|o| o.object.clone()));
        for bundle in crate::controller::controlplane::bundles(input.cp.namespace(), &rendered)? {
            objects.push(bundle.secret);
            objects.push(bundle.managed_resource);
        }
    } else {
        objects.extend(rendered.all().into_iter().map(|o| o.object.clone()));
    }
    let refs: Vec<&serde_json::Value> = objects.iter().collect();
    let text = match delivery.output {
        Output::Yaml => render::to_yaml_stream(&refs).map_err(anyhow::Error::msg)?,
        Output::Json => render::to_json_list(&refs),
    };
    Ok((text, rendered.unhonoured))
}

/// The ControlPlane `namespace/name`, the shoot context of `namespace` and the
/// ControlPlane's credentials Secret from an objects directory.
pub fn load_render_inputs(
    dir: &Path,
    namespace: &str,
    name: &str,
) -> anyhow::Result<(ControlPlane, Arc<ShootContext>, Option<ObjectData>)> {
    let objects = load_objects(dir)?;
    let cp = controlplane_in(&objects, dir, namespace, name)?;
    inputs_from_state(&objects, cp)
}

/// Read an objects directory, each problem a `warning:` on stderr.
pub fn load_objects(dir: &Path) -> anyhow::Result<ObjectsDir> {
    let (objects, problems) = ObjectsDir::load(dir)
        .with_context(|| format!("reading the objects directory {}", dir.display()))?;
    for problem in &problems {
        eprintln!("warning: {problem}");
    }
    Ok(objects)
}

/// The ControlPlane `namespace/name` of an objects directory.
fn controlplane_in(
    objects: &ObjectsDir,
    dir: &Path,
    namespace: &str,
    name: &str,
) -> anyhow::Result<ControlPlane> {
    let cp = objects
        .controlplane(namespace, name)
        .with_context(|| format!("no ControlPlane {namespace}/{name} in {}", dir.display()))?;
    serde_json::from_value(cp)
        .with_context(|| format!("ControlPlane {namespace}/{name} in {}", dir.display()))
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
