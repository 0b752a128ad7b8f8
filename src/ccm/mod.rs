//! Pure rendering of the cloud-controller-manager objects for a `ControlPlane`.
//!
//! [`render`] maps a ControlPlane, the shoot context, the credentials Secret and
//! the provider's [`CcmSpec`] to the desired objects, in apply order. No I/O; the
//! same input gives the same bytes. The controller and `scion render` both call it.

mod args;
pub mod cloudconfig;
mod deployment;
mod objects;

use serde_json::Value;

pub use args::uses_workload_identity;
pub use objects::{DESIRED_HASH_ANNOTATION, desired_hash};

use crate::gardener::{ControlPlane, Gvk, ObjectData, ShootContext};
use crate::profile::{CcmSpec, ConditionError, FindOptions, ImageVector};

/// Name of the CCM Deployment, Service and PodDisruptionBudget.
pub const CCM_NAME: &str = "cloud-controller-manager";

/// Why rendering failed. Messages name the object and the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RenderError {
    #[error("ccm.image: {0}; set an image override or add the image to the image vector")]
    NoImage(String),
    #[error(transparent)]
    Condition(#[from] ConditionError),
    #[error(
        "could not determine subnet from infrastructureProviderStatus of controlplane '{controlplane}': {reason}"
    )]
    InfrastructureStatus {
        controlplane: String,
        reason: String,
    },
    #[error("invalid infrastructureProviderStatus of controlplane '{controlplane}': {reason}")]
    InfrastructureField {
        controlplane: String,
        reason: String,
    },
    #[error("invalid providerConfig of controlplane '{controlplane}': {field}: {reason}")]
    ProviderConfig {
        controlplane: String,
        field: String,
        reason: String,
    },
    #[error("invalid credentials Secret: {reason}")]
    Credentials { reason: String },
    #[error("invalid CloudProfileConfig: {reason}")]
    CloudProfileConfig { reason: String },
    #[error("controlplane has no namespace")]
    NoNamespace,
}

/// Inputs the shell gathers for one render.
#[derive(Debug, Clone, Copy)]
pub struct RenderInput<'a> {
    pub cp: &'a ControlPlane,
    pub shoot: &'a ShootContext,
    /// The `spec.secretRef` Secret; `None` when it does not exist (checksummed as
    /// Gardener's nil data).
    pub credentials: Option<&'a ObjectData>,
    /// `spec.replicas` of Deployment `kube-apiserver`, read only when hibernation
    /// is enabled; `None` (absent) counts as scaled down.
    pub kube_apiserver_replicas: Option<i32>,
    /// Image override (flag/env); wins over the image vector.
    pub image_override: Option<&'a str>,
    /// The image vector the profile's image names resolve in (by the shoot's
    /// Kubernetes version).
    pub images: &'a ImageVector,
}

/// One object scion owns, ready for server-side apply.
#[derive(Debug, Clone, PartialEq)]
pub struct DesiredObject {
    /// API group ("" for core).
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    /// Resource name in URLs, e.g. `deployments`.
    pub plural: &'static str,
    pub name: String,
    pub namespace: String,
    /// The full object including `apiVersion`, `kind`, `metadata` (with the
    /// desired-hash annotation).
    pub object: Value,
}

impl DesiredObject {
    pub fn new(gvk: Gvk, name: &str, namespace: &str, object: Value) -> Self {
        DesiredObject {
            group: gvk.group,
            version: gvk.version,
            kind: gvk.kind,
            plural: gvk.plural,
            name: name.to_string(),
            namespace: namespace.to_string(),
            object,
        }
    }

    /// `apiVersion` as written in the object.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

/// The result of a render.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    /// Objects in apply order (config and Secret before the Deployment).
    pub objects: Vec<DesiredObject>,
    /// Hibernation is enabled but kube-apiserver still runs: keep the CCM and
    /// reconcile again shortly (Gardener's requeue after 2 s).
    pub requeue: bool,
}

/// The CCM image: the override, else the vector's image of `name` for the
/// shoot's Kubernetes version.
pub(crate) fn image(input: &RenderInput<'_>, name: &str) -> Result<String, RenderError> {
    if let Some(image) = input.image_override {
        return Ok(image.to_string());
    }
    let opts = FindOptions {
        target_version: Some(input.shoot.kubernetes_version()),
        ..Default::default()
    };
    input
        .images
        .find(name, &opts)
        .map_err(|e| RenderError::NoImage(e.to_string()))
}

/// Render every object of the CCM for `input` according to `spec`.
pub fn render(input: &RenderInput<'_>, spec: &CcmSpec) -> Result<Rendered, RenderError> {
    let namespace = input.cp.namespace();
    if namespace.is_empty() {
        return Err(RenderError::NoNamespace);
    }
    let secret_data = match input.credentials {
        Some(ObjectData::Secret { data, .. }) => data.as_ref(),
        _ => None,
    };
    let workload_identity = uses_workload_identity(spec.workload_identity, input.credentials);
    let config = cloudconfig::render(
        spec.cloud_config.format,
        &cloudconfig::Inputs {
            cp: input.cp,
            shoot: input.shoot,
            credentials: secret_data,
            workload_identity,
        },
    )?;
    let config_object = objects::cloud_config(input.cp, &spec.cloud_config, &config);

    let hibernation = input.shoot.hibernation_enabled();
    let kas_running = input.kube_apiserver_replicas.is_some_and(|r| r > 0);
    let replicas = if hibernation && !kas_running { 0 } else { 1 };
    let requeue = hibernation && kas_running;

    let deployment = deployment::deployment(
        &deployment::DeploymentInput {
            render: input,
            replicas,
            config_checksum: &config_object.checksum,
            config_annotation: &config_object.annotation,
            secret_data,
            workload_identity,
        },
        spec,
    )?;
    let mut objects = vec![
        config_object.object,
        objects::shoot_access_secret(input.cp),
        objects::service(input.cp, spec),
        objects::pod_disruption_budget(input.cp),
    ];
    if let Some(vpa) = &spec.vpa {
        objects.push(objects::vpa(input.cp, spec, vpa));
    }
    objects.push(deployment);
    for obj in &mut objects {
        objects::finish(obj, input.cp);
    }
    Ok(Rendered { objects, requeue })
}

/// The objects scion owns for `cp`, in deletion order: the Deployment first (the
/// CCM stops), the cloud config last. Only the identities are filled in.
pub fn deletion_order(cp: &ControlPlane, spec: &CcmSpec) -> Vec<DesiredObject> {
    vec![
        objects::deployment_ref(cp),
        objects::vpa_ref(cp),
        objects::pod_disruption_budget(cp),
        objects::service(cp, spec),
        objects::shoot_access_secret(cp),
        objects::cloud_config(cp, &spec.cloud_config, &Default::default()).object,
    ]
}

/// The objects as a YAML stream (`---` before each document), as `scion render`
/// prints them.
pub fn to_yaml_stream(objects: &[DesiredObject]) -> Result<String, String> {
    // Long flags stay on one line; multi-line values (the INI file) stay literal blocks.
    let mut options = serde_saphyr::SerializerOptions::default();
    options.folded_wrap_chars = 1 << 16;
    let mut out = String::new();
    for obj in objects {
        out.push_str("---\n");
        out.push_str(
            &serde_saphyr::to_string_with_options(&obj.object, options.clone())
                .map_err(|e| e.to_string())?,
        );
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    Ok(out)
}

/// The objects as a pretty-printed `v1/List`.
pub fn to_json_list(objects: &[DesiredObject]) -> String {
    let items: Vec<&Value> = objects.iter().map(|o| &o.object).collect();
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items});
    let mut text = serde_json::to_string_pretty(&list).unwrap_or_default();
    text.push('\n');
    text
}
