//! Pure rendering of the cloud-controller-manager objects for a `ControlPlane`.
//!
//! [`render`] maps a ControlPlane, the shoot context, the credentials Secret,
//! the serving certificate's Secret name and the provider's [`CcmSpec`] to the
//! objects of the three ManagedResources Gardener's ControlPlane actuator
//! writes (configuration, seed, shoot) plus the shoot access Secret it writes
//! directly. No I/O; the same input gives the same bytes. The controller and
//! `scion render` both call it.

mod args;
pub mod cloudconfig;
mod deployment;
mod extra;
mod objects;

use serde_json::Value;

pub use args::uses_workload_identity;
pub use objects::SHOOT_ACCESS_SECRET;

use crate::gardener::{CLUSTER_SCOPED_KINDS, ControlPlane, Gvk, ObjectData, ShootContext};
use crate::profile::ccm::ConfigDelivery;
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
    #[error("ccm.servingSecret: the name of the generated serving certificate Secret is missing")]
    NoServingSecret,
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
    /// is enabled (and the shoot is neither being deleted nor migrated); `None`
    /// (absent) counts as scaled down.
    pub kube_apiserver_replicas: Option<i32>,
    /// The Secret the secrets manager put the CCM serving certificate in
    /// (`cloud-controller-manager-server-<hash>`); needed when the section has a
    /// `servingSecret`.
    pub server_secret: Option<&'a str>,
    /// Image override (flag/env); wins over the image vector.
    pub image_override: Option<&'a str>,
    /// The image vector the profile's image names resolve in (by the shoot's
    /// Kubernetes version).
    pub images: &'a ImageVector,
}

/// One rendered object.
#[derive(Debug, Clone, PartialEq)]
pub struct DesiredObject {
    /// `apiVersion` and `kind` as written in the object.
    pub api_version: String,
    pub kind: String,
    pub name: String,
    /// Empty for cluster-scoped objects.
    pub namespace: String,
    /// The full object including `apiVersion`, `kind` and `metadata`.
    pub object: Value,
}

impl DesiredObject {
    pub fn new(gvk: Gvk, name: &str, namespace: &str, object: Value) -> Self {
        DesiredObject {
            api_version: gvk.api_version(),
            kind: gvk.kind.to_string(),
            name: name.to_string(),
            namespace: namespace.to_string(),
            object,
        }
    }

    /// An object from its manifest (which has `apiVersion`, `kind` and `metadata.name`).
    pub fn from_manifest(object: Value) -> Self {
        let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or_default().to_string();
        DesiredObject {
            api_version: text(object.get("apiVersion")),
            kind: text(object.get("kind")),
            name: text(object.pointer("/metadata/name")),
            namespace: text(object.pointer("/metadata/namespace")),
            object,
        }
    }
}

/// Whether objects of `kind` live outside namespaces.
pub fn cluster_scoped(kind: &str) -> bool {
    CLUSTER_SCOPED_KINDS.contains(&kind)
}

/// The result of a render: the objects of each ManagedResource, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    /// `extension-controlplane-configuration-seed` (seed class): the cloud
    /// config and its companions. Empty when the profile delivers the config
    /// with the CCM (Alicloud).
    pub config: Vec<DesiredObject>,
    /// `extension-controlplane-seed` (seed class): the CCM and what runs with
    /// it in the shoot namespace.
    pub seed: Vec<DesiredObject>,
    /// `extension-controlplane-shoot` (shoot class): RBAC and node agents in the shoot.
    pub shoot: Vec<DesiredObject>,
    /// `shoot-access-cloud-controller-manager`, written directly (GRM's token
    /// requestor fills it; it is no ManagedResource object).
    pub access_secret: DesiredObject,
    /// Hibernation is enabled but kube-apiserver still runs: keep the CCM and
    /// reconcile again shortly (Gardener's requeue after 2 s).
    pub requeue: bool,
}

impl Rendered {
    /// Every object in the order `scion render` prints them: the shoot access
    /// Secret, the configuration, seed and shoot objects.
    pub fn all(&self) -> Vec<&DesiredObject> {
        std::iter::once(&self.access_secret)
            .chain(&self.config)
            .chain(&self.seed)
            .chain(&self.shoot)
            .collect()
    }
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
    if spec.serving_secret.is_some() && input.server_secret.is_none() {
        return Err(RenderError::NoServingSecret);
    }
    let secret_data = match input.credentials {
        Some(ObjectData::Secret { data, .. }) => data.as_ref(),
        _ => None,
    };
    let workload_identity = uses_workload_identity(spec.workload_identity, input.credentials);
    let inputs = cloudconfig::Inputs {
        cp: input.cp,
        shoot: input.shoot,
        credentials: secret_data,
        workload_identity,
    };
    let config = cloudconfig::render(spec.cloud_config.format, &inputs)?;
    let config_object = objects::cloud_config(input.cp, &spec.cloud_config, &config);

    // Gardener's GetControlPlaneReplicas: 0 only while hibernated with
    // kube-apiserver down; a shoot being deleted or migrated keeps its CCM (it
    // cleans up load balancers); kube-apiserver still up means look again.
    let shoot = input.shoot;
    let watches_kas =
        shoot.hibernation_enabled() && !shoot.shoot_deleting() && !shoot.shoot_migrating();
    let kas_running = input.kube_apiserver_replicas.is_some_and(|r| r > 0);
    let scaled_down = watches_kas && !kas_running;
    let replicas = if scaled_down { 0 } else { 1 };
    let requeue = watches_kas && kas_running;

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
    let facts = crate::profile::Facts {
        shoot,
        provider: &input.cp.spec.type_,
        workload_identity: Some(workload_identity),
        ..crate::profile::Facts::of_shoot(shoot)
    };
    let extra = |list| extra::objects(list, input, &inputs, &facts);

    let mut config_mr = Vec::new();
    let mut seed = Vec::new();
    match spec.cloud_config.managed_resource {
        ConfigDelivery::Configuration => config_mr.push(config_object.object),
        ConfigDelivery::Seed => seed.push(config_object.object),
    }
    config_mr.extend(extra(&spec.config_objects)?);
    seed.push(objects::service(input.cp, spec));
    seed.push(objects::pod_disruption_budget(input.cp));
    if let Some(vpa) = &spec.vpa {
        seed.push(objects::vpa(input.cp, spec, vpa));
    }
    seed.push(deployment);
    for object in extra(&spec.seed_objects)? {
        seed.push(extra::in_namespace(object, namespace));
    }
    let shoot_objects = extra(&spec.shoot_objects)?
        .into_iter()
        .map(|o| {
            if cluster_scoped(&o.kind) || !o.namespace.is_empty() {
                o
            } else {
                extra::in_namespace(o, "kube-system")
            }
        })
        .collect();
    Ok(Rendered {
        config: config_mr,
        seed,
        shoot: shoot_objects,
        access_secret: objects::shoot_access_secret(input.cp),
        requeue,
    })
}

/// The objects as a YAML stream (`---` before each document), as `scion render`
/// prints them.
pub fn to_yaml_stream(objects: &[&Value]) -> Result<String, String> {
    // Long flags stay on one line; multi-line values (the INI file) stay literal blocks.
    let mut options = serde_saphyr::SerializerOptions::default();
    options.folded_wrap_chars = 1 << 16;
    let mut out = String::new();
    for obj in objects {
        out.push_str("---\n");
        out.push_str(
            &serde_saphyr::to_string_with_options(obj, options.clone())
                .map_err(|e| e.to_string())?,
        );
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    Ok(out)
}

/// The objects as a pretty-printed `v1/List`.
pub fn to_json_list(objects: &[&Value]) -> String {
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": objects});
    let mut text = serde_json::to_string_pretty(&list).unwrap_or_default();
    text.push('\n');
    text
}
