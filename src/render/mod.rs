//! Pure rendering of a provider's control-plane components for a
//! `ControlPlane`: the generic renderer that fills the components of the
//! provider folder ([`crate::profile::component`]) with the values of one
//! ControlPlane, its shoot and its credentials.
//!
//! [`render`] maps a ControlPlane, the shoot context, the credentials Secret,
//! the serving certificate's Secret name and the profile's
//! [`ControlPlaneSpec`] to the objects of the ManagedResources Gardener's
//! ControlPlane actuator writes (configuration, seed, shoot, shoot CRDs,
//! storage classes) plus the shoot access Secrets it writes directly. No
//! I/O; the same input gives the same bytes. The controller and `scion
//! render` both call it.
//!
//! The values components read are computed here ([`ROOTS`] lists them):
//! replicas as Gardener's `GetControlPlaneReplicas`, images from the vector
//! by the shoot's Kubernetes version, the credentials' checksum, the
//! extension feature gates (the declared defaults under the operator's
//! settings), and the values the provider's Rust computes (`code.<name>`),
//! each once per render.

use std::cell::RefCell;
use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::checksum;
use crate::gardener::{CLUSTER_SCOPED_KINDS, ControlPlane, Gvk, ObjectData, SECRET, ShootContext};
use crate::profile::component::expr::Expr;
use crate::profile::component::template::{walk, walk_ref};
use crate::profile::component::{ComponentError, Destination, ROOTS, Roots};
use crate::profile::{
    ControlPlaneSpec, Facts, FeatureGates, FindOptions, GateSettings, ImageVector,
};
use crate::providers::{CodeError, CodeInput};
use crate::secrets::Certificates;

/// Name of the CCM Deployment, Service and PodDisruptionBudget (Gardener's).
pub const CCM_NAME: &str = "cloud-controller-manager";

/// Why rendering failed. Messages name the component, the object and the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RenderError {
    #[error(
        "component {component}: object {object}: {}{message}",
        field_prefix(field)
    )]
    Component {
        component: String,
        object: String,
        field: String,
        message: String,
    },
    /// The provider's Rust could not compute a value: its own message, as
    /// the Go extensions word it.
    #[error(transparent)]
    Code(#[from] CodeError),
    #[error("controlplane has no namespace")]
    NoNamespace,
}

fn field_prefix(field: &str) -> String {
    if field.is_empty() {
        String::new()
    } else {
        format!("field {field}: ")
    }
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
    /// The Secrets the secrets manager keeps the serving certificates in
    /// (`secrets.<config>`, e.g. `cloud-controller-manager-server-<hash>`) and
    /// the CA bundle (`caBundle`).
    pub certificates: &'a Certificates,
    /// Image override (`--ccm-image`) of the profile's `ccmImage`; wins over
    /// the image vector.
    pub image_override: Option<&'a str>,
    /// The image vector the components' image names resolve in (by the
    /// shoot's Kubernetes version).
    pub images: &'a ImageVector,
    /// The operator's extension feature gates (`--feature-gates`); the
    /// render applies them over the gates the profile declares.
    pub feature_gates: &'a GateSettings,
}

/// No feature gate set: every declared gate at its default.
static NO_GATES: GateSettings = GateSettings::new();

impl<'a> RenderInput<'a> {
    /// The input for `cp` and its shoot with nothing else known: no
    /// credentials Secret, kube-apiserver scaled down (read only while
    /// hibernated), no image override, no feature gate set. Set the rest
    /// with struct update syntax.
    pub fn new(
        cp: &'a ControlPlane,
        shoot: &'a ShootContext,
        images: &'a ImageVector,
        certificates: &'a Certificates,
    ) -> Self {
        RenderInput {
            cp,
            shoot,
            credentials: None,
            kube_apiserver_replicas: None,
            certificates,
            image_override: None,
            images,
            feature_gates: &NO_GATES,
        }
    }
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
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Rendered {
    /// `extension-controlplane-configuration-seed` (seed class): the
    /// configuration the seed components mount.
    pub config: Vec<DesiredObject>,
    /// `extension-controlplane-seed` (seed class): what runs in the shoot namespace.
    pub seed: Vec<DesiredObject>,
    /// `extension-controlplane-shoot` (shoot class): RBAC, node agents, drivers in the shoot.
    pub shoot: Vec<DesiredObject>,
    /// `extension-controlplane-shoot-crds` (shoot class).
    pub shoot_crds: Vec<DesiredObject>,
    /// `extension-controlplane-storageclasses` (shoot class).
    pub storage_classes: Vec<DesiredObject>,
    /// The `shoot-access-<name>` Secrets, written directly (GRM's token
    /// requestor fills them; they are no ManagedResource objects).
    pub access_secrets: Vec<DesiredObject>,
    /// Hibernation is enabled but kube-apiserver still runs: keep the
    /// components and reconcile again shortly (Gardener's requeue after 2 s).
    pub requeue: bool,
    /// The ControlPlaneConfig and Cluster settings that are set and that the
    /// components do not honour (`options.yaml`): `render` warns, the
    /// controller records an event, `check` adds a row.
    pub unhonoured: Vec<crate::profile::Unhonoured>,
}

impl Rendered {
    /// Every object in the order `scion render` prints them: the shoot access
    /// Secrets, then the objects of each ManagedResource.
    pub fn all(&self) -> Vec<&DesiredObject> {
        self.access_secrets
            .iter()
            .chain(&self.config)
            .chain(&self.seed)
            .chain(&self.shoot)
            .chain(&self.shoot_crds)
            .chain(&self.storage_classes)
            .collect()
    }

    /// The objects of a destination.
    pub fn of(&self, destination: Destination) -> &[DesiredObject] {
        match destination {
            Destination::Configuration => &self.config,
            Destination::Seed => &self.seed,
            Destination::Shoot => &self.shoot,
            Destination::ShootCrds => &self.shoot_crds,
            Destination::StorageClasses => &self.storage_classes,
        }
    }

    fn of_mut(&mut self, destination: Destination) -> &mut Vec<DesiredObject> {
        match destination {
            Destination::Configuration => &mut self.config,
            Destination::Seed => &mut self.seed,
            Destination::Shoot => &mut self.shoot,
            Destination::ShootCrds => &mut self.shoot_crds,
            Destination::StorageClasses => &mut self.storage_classes,
        }
    }
}

/// Whether the credentials count as workload identity: the provider's Rust
/// decides where it says so, else Gardener's purpose label.
pub fn uses_workload_identity(plane: &ControlPlaneSpec, credentials: Option<&ObjectData>) -> bool {
    plane
        .code
        .and_then(|c| c.0.workload_identity(credentials))
        .unwrap_or_else(|| {
            credentials.is_some_and(|s| s.requests_workload_identity(&BTreeMap::new()))
        })
}

/// Render every component of `plane` for `input`.
pub fn render(input: &RenderInput<'_>, plane: &ControlPlaneSpec) -> Result<Rendered, RenderError> {
    let namespace = input.cp.namespace();
    if namespace.is_empty() {
        return Err(RenderError::NoNamespace);
    }
    // Gardener's GetControlPlaneReplicas: 0 only while hibernated with
    // kube-apiserver down; a shoot being deleted or migrated keeps its
    // components (the CCM cleans up load balancers); kube-apiserver still up
    // means look again.
    let shoot = input.shoot;
    let watches_kas =
        shoot.hibernation_enabled() && !shoot.shoot_deleting() && !shoot.shoot_migrating();
    let kas_running = input.kube_apiserver_replicas.is_some_and(|r| r > 0);
    let replicas = if watches_kas && !kas_running { 0 } else { 1 };
    let roots = RenderRoots {
        input,
        plane,
        replicas,
        workload_identity: uses_workload_identity(plane, input.credentials),
        feature_gates: FeatureGates::resolve(&plane.feature_gates, input.feature_gates),
        secret_data: match input.credentials {
            Some(ObjectData::Secret { data, .. }) => data.as_ref(),
            _ => None,
        },
        code_values: RefCell::new(BTreeMap::new()),
        code_error: RefCell::new(None),
    };
    let mut out = Rendered {
        requeue: watches_kas && kas_running,
        ..Rendered::default()
    };
    for name in plane.shoot_access() {
        out.access_secrets.push(shoot_access_secret(input.cp, name));
    }
    for component in &plane.components {
        let objects = component.render(&roots).map_err(|e: ComponentError| {
            match roots.code_error.borrow_mut().take() {
                Some(code) => RenderError::Code(code),
                None => RenderError::Component {
                    component: component.name.clone(),
                    object: e.object,
                    field: e.field,
                    message: e.message,
                },
            }
        })?;
        for (destination, object) in objects {
            let mut object = DesiredObject::from_manifest(object);
            if object.namespace.is_empty() && !cluster_scoped(&object.kind) {
                let default = if destination.in_shoot() {
                    "kube-system"
                } else {
                    namespace
                };
                object.object["metadata"]["namespace"] = Value::String(default.to_string());
                object.namespace = default.to_string();
            }
            out.of_mut(destination).push(object);
        }
    }
    out.unhonoured = plane
        .options
        .unhonoured(input.cp.spec.provider_config.as_ref(), &roots);
    Ok(out)
}

/// The Secret gardener-resource-manager's token requestor fills with a token
/// of the shoot ServiceAccount `kube-system/<name>` (Gardener's
/// `NewShootAccessSecret`). scion owns only its labels and annotations, never
/// `data`.
pub fn shoot_access_secret(cp: &ControlPlane, service_account: &str) -> DesiredObject {
    let name = shoot_access_secret_name(service_account);
    DesiredObject::new(
        SECRET,
        &name,
        cp.namespace(),
        json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": name,
                "namespace": cp.namespace(),
                "labels": {
                    "resources.gardener.cloud/purpose": "token-requestor",
                    "resources.gardener.cloud/class": "shoot",
                },
                "annotations": {
                    "serviceaccount.resources.gardener.cloud/name": service_account,
                    "serviceaccount.resources.gardener.cloud/namespace": "kube-system",
                },
            },
            "type": "Opaque",
        }),
    )
}

/// `shoot-access-<service account>`.
pub fn shoot_access_secret_name(service_account: &str) -> String {
    format!("shoot-access-{service_account}")
}

/// The values of one render.
struct RenderRoots<'a> {
    input: &'a RenderInput<'a>,
    plane: &'a ControlPlaneSpec,
    replicas: i32,
    workload_identity: bool,
    /// The declared gates with their values for this render.
    feature_gates: FeatureGates,
    secret_data: Option<&'a BTreeMap<String, Vec<u8>>>,
    /// The provider's values, computed once per render (errors too).
    code_values: RefCell<BTreeMap<String, Result<Value, String>>>,
    /// The first error of the provider's Rust, reported as it words it.
    code_error: RefCell<Option<CodeError>>,
}

impl RenderRoots<'_> {
    fn image(&self, name: &str) -> Result<Value, String> {
        if let Some(image) = self.input.image_override
            && name == self.plane.ccm_image
        {
            return Ok(Value::String(image.to_string()));
        }
        let opts = FindOptions {
            target_version: Some(self.input.shoot.kubernetes_version()),
            ..Default::default()
        };
        self.input
            .images
            .find(name, &opts)
            .map(Value::String)
            .map_err(|e| format!("{e}; set an image override or add the image to the image vector"))
    }

    fn code(&self, name: &str) -> Result<Value, String> {
        if let Some(v) = self.code_values.borrow().get(name) {
            return v.clone();
        }
        let Some(code) = self.plane.code else {
            return Err("the profile names no code".into());
        };
        let input = CodeInput {
            cp: self.input.cp,
            shoot: self.input.shoot,
            credentials: self.secret_data,
            workload_identity: self.workload_identity,
        };
        let value = crate::providers::value(code.0, name, &input).map_err(|e| {
            let text = e.to_string();
            self.code_error.borrow_mut().get_or_insert(e);
            text
        });
        self.code_values
            .borrow_mut()
            .insert(name.to_string(), value.clone());
        value
    }
}

/// Spec then status CIDRs without duplicates; with a single IP family and two
/// CIDRs only the first is kept.
fn cidrs_per_family(spec: &[String], status: &[String], families: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for cidr in spec.iter().chain(status) {
        if !out.contains(cidr) {
            out.push(cidr.clone());
        }
    }
    if families == 1 && out.len() == 2 {
        out.truncate(1);
    }
    out
}

impl Roots for RenderRoots<'_> {
    fn root(&self, expr: &Expr) -> Result<Value, String> {
        let input = self.input;
        let cp = input.cp;
        let shoot = input.shoot;
        let rest = &expr.path[1..];
        let below = |v: Option<&Value>| {
            Ok(v.and_then(|v| walk_ref(v, rest))
                .cloned()
                .unwrap_or(Value::Null))
        };
        let named = || {
            rest.first()
                .map(String::as_str)
                .ok_or_else(|| format!("{} needs a name", expr.root()))
        };
        let families = shoot.ip_families().len().max(1);
        let net_spec = &shoot.shoot.spec.networking;
        let net_status = &shoot.shoot.status.networking;
        let value = match expr.root() {
            "namespace" => Value::String(cp.namespace().to_string()),
            "region" => Value::String(cp.spec.region.clone()),
            "replicas" => Value::from(self.replicas),
            "kubernetesVersion" => Value::String(shoot.kubernetes_version().to_string()),
            "technicalID" => shoot
                .technical_id()
                .map_or(Value::Null, |t| Value::String(t.to_string())),
            "shootName" => Value::String(shoot.shoot.metadata.name.clone()),
            "workerZones" => {
                let zones: std::collections::BTreeSet<&String> = shoot
                    .shoot
                    .spec
                    .provider
                    .workers
                    .iter()
                    .flat_map(|w| w.zones.0.iter())
                    .collect();
                Value::from(zones.into_iter().cloned().collect::<Vec<_>>())
            }
            "secretRef" => {
                json!({"name": cp.spec.secret_ref.name, "namespace": cp.spec.secret_ref.namespace})
            }
            "credentials" => match self.secret_data {
                None => Value::Null,
                Some(data) => Value::Object(
                    data.iter()
                        .map(|(k, v)| {
                            (
                                k.clone(),
                                Value::String(String::from_utf8_lossy(v).into_owned()),
                            )
                        })
                        .collect(),
                ),
            },
            "credentialsChecksum" => Value::String(checksum::secret_checksum(self.secret_data)),
            "workloadIdentity" => Value::Bool(self.workload_identity),
            "genericTokenKubeconfig" => {
                Value::String(shoot.generic_token_kubeconfig_secret.clone())
            }
            "images" => return self.image(named()?).map(|v| walk(&v, &rest[1..])),
            "secrets" => {
                let name = named()?;
                return input
                    .certificates
                    .secrets
                    .get(name)
                    .map(|s| Value::String(s.clone()))
                    .ok_or_else(|| {
                        format!("the name of the generated Secret of {name} is missing")
                    });
            }
            "caBundle" => Value::String(input.certificates.ca_bundle.clone()),
            "networkingType" => net_spec
                .type_
                .as_ref()
                .map_or(Value::Null, |t| Value::String(t.clone())),
            "kubeAPIServer" => {
                let kas = &shoot.shoot.spec.kubernetes.kube_apiserver;
                json!({
                    "featureGates": kas.feature_gates.clone().unwrap_or(Value::Null),
                    "runtimeConfig": kas.runtime_config.clone().unwrap_or(Value::Null),
                })
            }
            "code" => return self.code(named()?).map(|v| walk(&v, &rest[1..])),
            "extensionFeatureGates" => self.feature_gates.to_value(),
            "annotations" => {
                return Ok(rest
                    .first()
                    .and_then(|k| shoot.annotations().get(k))
                    .map_or(Value::Null, |v| Value::String(v.clone())));
            }
            "controlPlaneConfig" => return below(cp.spec.provider_config.as_ref()),
            "infrastructureStatus" => {
                return below(cp.spec.infrastructure_provider_status.as_ref());
            }
            "infrastructureConfig" => return below(shoot.infrastructure_config()),
            "cloudProfileConfig" => return below(shoot.cloud_profile_config()),
            "ipFamilies" => Value::from(shoot.ip_families().to_vec()),
            "podCIDRs" => Value::from(shoot.pod_cidrs()),
            "podCIDRsPerFamily" => Value::from(cidrs_per_family(
                &net_spec.pods.0,
                &net_status.pods.0,
                families,
            )),
            "serviceCIDRsPerFamily" => Value::from(cidrs_per_family(
                &net_spec.services.0,
                &net_status.services.0,
                families,
            )),
            "nodeCIDRMaskSize" => shoot
                .shoot
                .spec
                .kubernetes
                .kube_controller_manager
                .node_cidr_mask_size
                .map_or(Value::Null, Value::from),
            other => {
                debug_assert!(
                    !ROOTS.iter().any(|(r, _)| *r == other),
                    "root {other} unhandled"
                );
                return Err(format!("unknown value {other:?}"));
            }
        };
        Ok(walk(&value, rest))
    }

    fn facts(&self) -> Facts<'_> {
        Facts {
            shoot: self.input.shoot,
            provider: &self.input.cp.spec.type_,
            workload_identity: Some(self.workload_identity),
            kubelet: None,
            config_maps: None,
            values: None,
            feature_gates: Some(&self.feature_gates),
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_root_is_computed() {
        // `root` has an arm for every name of ROOTS: an unknown name is the
        // only error a root without a name can give.
        let cp: ControlPlane = serde_json::from_value(json!({
            "apiVersion": "extensions.gardener.cloud/v1alpha1", "kind": "ControlPlane",
            "metadata": {"name": "cp", "namespace": "ns"},
            "spec": {"type": "x", "region": "r", "secretRef": {"name": "s"}},
        }))
        .unwrap();
        let shoot = ShootContext::new("ns", semver::Version::new(1, 33, 0));
        let images = ImageVector::default();
        let certificates = Certificates::fixed("srv", &[], "");
        let input = RenderInput::new(&cp, &shoot, &images, &certificates);
        let plane = ControlPlaneSpec {
            provider: "x".into(),
            code: None,
            ccm_image: "ccm".into(),
            components: Vec::new(),
            options: Default::default(),
            feature_gates: Vec::new(),
        };
        let roots = RenderRoots {
            input: &input,
            plane: &plane,
            replicas: 1,
            workload_identity: false,
            feature_gates: FeatureGates::default(),
            secret_data: None,
            code_values: RefCell::new(BTreeMap::new()),
            code_error: RefCell::new(None),
        };
        for (root, _) in ROOTS {
            let expr = Expr::parse(root).unwrap();
            if let Err(e) = roots.root(&expr) {
                assert!(!e.contains("unknown value"), "{root}: {e}");
            }
        }
        let e = Expr::parse("secrets.cloud-controller-manager-server").unwrap();
        assert_eq!(roots.root(&e).unwrap(), json!("srv"));
    }
}
