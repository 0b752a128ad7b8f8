//! The `Cluster` resource and the shoot context: the one declaration of what
//! scion reads from a Cluster.
//!
//! Gardener writes one cluster-scoped `Cluster` (extensions.gardener.cloud/v1alpha1)
//! per shoot, named after the shoot namespace, embedding the whole Shoot, Seed
//! and CloudProfile (often 100–500 KB of JSON, mostly CloudProfile). Every
//! webhook call and every ControlPlane reconcile needs a few facts from it. The
//! view structs below declare exactly those facts, each under its JSON key, and
//! [`ShootContext`] is what decoding a Cluster gives: the rest of the text is
//! skipped while parsing (see [`super::view`]), so a Cluster never exists in
//! memory as a whole, and a field of the wrong type is reported with the
//! Cluster's name and the field's JSON path.

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use semver::Version;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::objects::Metadata;
use super::view::{
    Checked, Found, KeyOf, Lenient, Problem, Read, Strings, from_value, raw_without, skip_seq, view,
};

/// Cluster annotation naming the generic token kubeconfig Secret.
pub const GENERIC_TOKEN_KUBECONFIG_ANNOTATION: &str =
    "generic-token-kubeconfig.secret.gardener.cloud/name";
/// Default name of the generic token kubeconfig Secret.
pub const GENERIC_TOKEN_KUBECONFIG_DEFAULT: &str = "generic-token-kubeconfig";
/// The machine-image catalogue of a CloudProfile's `providerConfig` (image IDs
/// per region and version): the bulk of a CloudProfile, read only by worker
/// controllers, never by the control plane. Skipped while parsing.
pub const MACHINE_IMAGES: &str = "machineImages";

/// The `Cluster` resource as the API serves it, embedded objects raw: the type
/// behind the API calls on Clusters (and test servers). scion itself reads a
/// Cluster only as its [`ShootContext`].
#[derive(kube::CustomResource, Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "extensions.gardener.cloud",
    version = "v1alpha1",
    kind = "Cluster",
    schema = "disabled",
    derive = "Default",
    derive = "PartialEq"
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterSpec {
    pub cloud_profile: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<Value>,
    pub shoot: Value,
}

/// Everything scion reads from a `Cluster`, decoded once per change of the
/// Cluster. Nothing else is kept.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ShootContext {
    /// `metadata.name`: the shoot namespace in the seed.
    pub cluster_name: String,
    /// `metadata.resourceVersion` of the Cluster the context was made from.
    pub resource_version: Option<String>,
    /// Cluster annotation `generic-token-kubeconfig.secret.gardener.cloud/name`,
    /// defaulting to `generic-token-kubeconfig`.
    pub generic_token_kubeconfig_secret: String,
    /// `spec.shoot`.
    pub shoot: Shoot,
    /// `spec.seed` (absent for self-hosted shoots).
    pub seed: Seed,
    /// `spec.cloudProfile`.
    pub cloud_profile: CloudProfile,
}

view! {
    /// `spec.shoot`: the Shoot.
    #[derive(Debug, Clone, Default, PartialEq)]
    pub struct Shoot {
        "metadata" => pub metadata: ShootMeta,
        "spec" => pub spec: ShootSpec,
        "status" => pub status: ShootStatus,
    }
}

view! {
    /// `spec.shoot.metadata`.
    #[derive(Debug, Clone, Default, PartialEq)]
    pub struct ShootMeta {
        "annotations" => pub annotations: BTreeMap<String, String>,
        "deletionTimestamp" => pub deletion_timestamp: Option<String>,
    }
}

view! {
    /// `spec.shoot.spec`.
    #[derive(Debug, Clone, Default, PartialEq)]
    pub struct ShootSpec {
        "kubernetes" => pub kubernetes: Kubernetes,
        "provider" => pub provider: Provider,
        "networking" => pub networking: Networking,
        "region" => pub region: String,
        "hibernation" => pub hibernation: Hibernation,
    }
}

view! {
    /// `spec.shoot.spec.kubernetes`: the version is required.
    #[derive(Debug, Clone, PartialEq)]
    pub struct Kubernetes {
        "version" => pub version: Version,
        "kubeControllerManager" => pub kube_controller_manager: KubeControllerManager,
        "verticalPodAutoscaler" => pub vertical_pod_autoscaler: VerticalPodAutoscaler,
    }
}

view! {
    /// `spec.shoot.spec.kubernetes.verticalPodAutoscaler`: the shoot wants a VPA.
    #[derive(Debug, Clone, Copy, Default, PartialEq)]
    pub struct VerticalPodAutoscaler {
        "enabled" => pub enabled: bool,
    }
}

impl Default for Kubernetes {
    fn default() -> Self {
        Kubernetes {
            version: Version::new(0, 0, 0),
            kube_controller_manager: KubeControllerManager::default(),
            vertical_pod_autoscaler: VerticalPodAutoscaler::default(),
        }
    }
}

view! {
    /// `spec.shoot.spec.kubernetes.kubeControllerManager`.
    #[derive(Debug, Clone, Default, PartialEq)]
    pub struct KubeControllerManager {
        "nodeCIDRMaskSize" => pub node_cidr_mask_size: Option<i64>,
    }
}

view! {
    /// `spec.shoot.spec.provider`.
    #[derive(Debug, Clone, Default, PartialEq)]
    pub struct Provider {
        "type" => pub type_: String,
        "workers" => pub workers: Vec<Worker>,
        /// The provider's InfrastructureConfig (raw).
        "infrastructureConfig" => pub infrastructure_config: Option<Value>,
        /// The provider's ControlPlaneConfig (raw).
        "controlPlaneConfig" => pub control_plane_config: Option<Value>,
    }
}

view! {
    /// `spec.shoot.spec.provider.workers[]`: one worker pool.
    #[derive(Debug, Clone, Default, PartialEq)]
    pub struct Worker {
        required "name" => pub name: String,
        /// Maximum number of machines (Azure's CCM rate limits use the sum).
        "maximum" => pub maximum: i64,
        "kubernetes" => pub kubernetes: WorkerKubernetes,
        /// Set on the pool that runs a self-hosted shoot's control plane
        /// (GEP-28, `gardenadm`).
        "controlPlane" => pub control_plane: Option<Value>,
    }
}

view! {
    /// `spec.shoot.spec.provider.workers[].kubernetes`.
    #[derive(Debug, Clone, Default, PartialEq)]
    pub struct WorkerKubernetes {
        /// The pool's own version, if it overrides the control plane's.
        "version" => pub version: Option<Version>,
    }
}

view! {
    /// `spec.shoot.spec.networking`: one CIDR per field in the spec.
    #[derive(Debug, Clone, Default, PartialEq)]
    pub struct Networking {
        /// `IPv4`, `IPv6`; empty means IPv4.
        "ipFamilies" => pub ip_families: Strings,
        "pods" => pub pods: Strings,
        "nodes" => pub nodes: Strings,
        "services" => pub services: Strings,
        /// The networking extension's config (raw; e.g. calico's `overlay.enabled`).
        "providerConfig" => pub provider_config: Option<Value>,
    }
}

view! {
    /// `spec.shoot.spec.hibernation`.
    #[derive(Debug, Clone, Copy, Default, PartialEq)]
    pub struct Hibernation {
        "enabled" => pub enabled: bool,
    }
}

view! {
    /// `spec.shoot.status`.
    #[derive(Debug, Clone, Default, PartialEq)]
    pub struct ShootStatus {
        "networking" => pub networking: StatusNetworking,
        "isHibernated" => pub is_hibernated: bool,
        "lastOperation" => pub last_operation: Option<LastOperation>,
        "technicalID" => pub technical_id: Option<String>,
        "credentials" => pub credentials: Credentials,
    }
}

view! {
    /// `spec.shoot.status.credentials`.
    #[derive(Debug, Clone, Default, PartialEq)]
    pub struct Credentials {
        "rotation" => pub rotation: CredentialsRotation,
    }
}

view! {
    /// `spec.shoot.status.credentials.rotation`.
    #[derive(Debug, Clone, Default, PartialEq)]
    pub struct CredentialsRotation {
        "certificateAuthorities" => pub certificate_authorities: CaRotation,
    }
}

view! {
    /// `spec.shoot.status.credentials.rotation.certificateAuthorities`: the
    /// shoot's CA rotation, which the control-plane CA follows.
    #[derive(Debug, Clone, Default, PartialEq)]
    pub struct CaRotation {
        /// RFC 3339; its Unix seconds suffix the CA Secret's name.
        "lastInitiationTime" => pub last_initiation_time: Option<String>,
        /// `Preparing`, `Prepared`, `Completing`, `Completed`.
        "phase" => pub phase: Option<String>,
    }
}

view! {
    /// `spec.shoot.status.networking`: lists of CIDRs.
    #[derive(Debug, Clone, Default, PartialEq)]
    pub struct StatusNetworking {
        "pods" => pub pods: Strings,
        "nodes" => pub nodes: Strings,
        "services" => pub services: Strings,
    }
}

view! {
    /// `spec.shoot.status.lastOperation`.
    #[derive(Debug, Clone, Default, PartialEq, Eq)]
    pub struct LastOperation {
        "type" => pub type_: String,
        "state" => pub state: String,
    }
}

view! {
    /// `spec.seed`.
    #[derive(Debug, Clone, Default, PartialEq)]
    pub struct Seed {
        "spec" => pub spec: SeedSpec,
    }
}

view! {
    /// `spec.seed.spec`.
    #[derive(Debug, Clone, Default, PartialEq)]
    pub struct SeedSpec {
        "provider" => pub provider: SeedProvider,
    }
}

view! {
    /// `spec.seed.spec.provider`.
    #[derive(Debug, Clone, Default, PartialEq)]
    pub struct SeedProvider {
        "type" => pub type_: Option<String>,
        /// Alicloud's CCM `--network` flag compares it with the shoot's region.
        "region" => pub region: Option<String>,
    }
}

view! {
    /// `spec.cloudProfile`.
    #[derive(Debug, Clone, Default, PartialEq)]
    pub struct CloudProfile {
        "spec" => pub spec: CloudProfileSpec,
    }
}

view! {
    /// `spec.cloudProfile.spec`.
    #[derive(Debug, Clone, Default, PartialEq)]
    pub struct CloudProfileSpec {
        "providerConfig" => pub provider_config: CloudProfileConfig,
    }
}

/// `spec.cloudProfile.spec.providerConfig`, raw, without its `machineImages`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CloudProfileConfig(pub Option<Value>);

impl Lenient for CloudProfileConfig {
    fn read<'de, D: Deserializer<'de>>(d: D) -> Result<Checked<Self>, D::Error> {
        raw_without(d, MACHINE_IMAGES).map(|v| Ok(CloudProfileConfig(v)))
    }
    fn absent() -> Checked<Self> {
        Ok(CloudProfileConfig(None))
    }
}

/// An object embedded in the Cluster (`spec.shoot`, `spec.seed`,
/// `spec.cloudProfile`): a string there is Gardener's compressed form, which
/// scion does not read; it says so.
#[derive(Debug, Clone, Default, PartialEq)]
struct Embedded<T>(T);

impl<T: Lenient> Lenient for Embedded<T> {
    fn read<'de, D: Deserializer<'de>>(d: D) -> Result<Checked<Self>, D::Error> {
        Ok(T::read(d)?.map(Embedded).map_err(|p| {
            if p.is_string_here() {
                Problem::new(
                    "expected the embedded object, found a string (compressed embedded objects, \
                     gardener#15627, are not supported)",
                )
            } else {
                p
            }
        }))
    }
    fn absent() -> Checked<Self> {
        T::absent().map(Embedded)
    }
}

/// A Cluster that cannot be used, with the JSON path of the offending field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Cluster {name:?} is malformed: field {field}: {reason}")]
pub struct ClusterError {
    /// The Cluster's name (empty when that is what is wrong).
    pub name: String,
    pub field: String,
    pub reason: String,
}

/// The parts of a Cluster's `spec` the shoot context holds, read key by key
/// (`shoot`, `seed`, `cloudProfile`) by any decoder that meets a Cluster's
/// spec: [`ClusterSpecSeed`] for a Cluster, the objects-directory decoder for
/// a document whose kind it learns only at its end.
#[derive(Debug, Clone, Default)]
pub struct SpecParts {
    shoot: Option<Checked<Embedded<Shoot>>>,
    seed: Option<Checked<Embedded<Seed>>>,
    cloud_profile: Option<Checked<Embedded<CloudProfile>>>,
}

impl SpecParts {
    /// The keys of a Cluster's spec that hold parts.
    pub const KEYS: [&'static str; 3] = ["shoot", "seed", "cloudProfile"];

    /// Read the value of `key` (one of [`SpecParts::KEYS`]) from `map`.
    pub fn read_value<'de, A: MapAccess<'de>>(
        &mut self,
        key: &str,
        map: &mut A,
    ) -> Result<(), A::Error> {
        match key {
            "shoot" => self.shoot = Some(map.next_value_seed(Read::new())?),
            "seed" => self.seed = Some(map.next_value_seed(Read::new())?),
            "cloudProfile" => self.cloud_profile = Some(map.next_value_seed(Read::new())?),
            _ => {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }

    /// The decoded spec: a missing `shoot` or the first problem, looked at in
    /// the order shoot, seed, cloudProfile.
    pub fn finish(self) -> DecodedSpec {
        fn part<T: Lenient>(key: &str, read: Option<Checked<T>>) -> Checked<T> {
            read.unwrap_or_else(T::absent).map_err(|p| p.under(key))
        }
        DecodedSpec((|| {
            let shoot = match self.shoot {
                Some(Ok(Embedded(shoot))) => shoot,
                Some(Err(p)) => return Err(p.under("shoot")),
                None => return Err(Problem::missing().under("shoot")),
            };
            Ok(Parts {
                shoot,
                seed: part("seed", self.seed)?.0,
                cloud_profile: part("cloudProfile", self.cloud_profile)?.0,
            })
        })())
    }
}

/// A Cluster's spec as the shoot context holds it.
#[derive(Debug, Clone, PartialEq)]
struct Parts {
    shoot: Shoot,
    seed: Seed,
    cloud_profile: CloudProfile,
}

/// The `spec` of a Cluster as decoded: the parts of the shoot context, or the
/// first problem. Combine with the Cluster's metadata in
/// [`ShootContext::assemble`].
#[derive(Debug, Clone, PartialEq)]
pub struct DecodedSpec(Checked<Parts>);

/// Decodes a Cluster's `spec` into a [`DecodedSpec`], skipping everything the
/// shoot context does not hold.
pub struct ClusterSpecSeed;

impl<'de> DeserializeSeed<'de> for ClusterSpecSeed {
    type Value = DecodedSpec;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<DecodedSpec, D::Error> {
        d.deserialize_any(PartsVisitor).map(DecodedSpec)
    }
}

struct PartsVisitor;

impl<'de> Visitor<'de> for PartsVisitor {
    type Value = Checked<Parts>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a Cluster spec")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut parts = SpecParts::default();
        while let Some(key) = map.next_key_seed(KeyOf(&SpecParts::KEYS))? {
            match key {
                Some(key) => parts.read_value(key, &mut map)?,
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(parts.finish().0)
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(SpecParts::default().finish().0)
    }

    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(SpecParts::default().finish().0)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        skip_seq(seq)?;
        Ok(Err(Problem::mismatch("an object", Found::List)))
    }

    super::view::view_scalars!();
}

impl ShootContext {
    /// A context for a Cluster `name` with Kubernetes `version` and nothing
    /// else set (tests and offline tools fill in the rest).
    pub fn new(name: impl Into<String>, version: Version) -> Self {
        let mut ctx = ShootContext {
            cluster_name: name.into(),
            generic_token_kubeconfig_secret: GENERIC_TOKEN_KUBECONFIG_DEFAULT.to_string(),
            ..ShootContext::default()
        };
        ctx.shoot.spec.kubernetes.version = version;
        ctx
    }

    /// The shoot context from a Cluster's `metadata` (small, kept whole while
    /// decoding) and its decoded `spec`. `spec` is `None` when the Cluster has
    /// none.
    pub fn assemble(
        metadata: Option<&Value>,
        spec: Option<DecodedSpec>,
    ) -> Result<ShootContext, ClusterError> {
        let name = match metadata.and_then(|m| m.get("name")) {
            Some(Value::String(name)) if !name.is_empty() => name.clone(),
            _ => {
                return Err(ClusterError {
                    name: String::new(),
                    field: "metadata.name".into(),
                    reason: "missing or not a string".into(),
                });
            }
        };
        let error = |field: &str, p: Problem| ClusterError {
            name: name.clone(),
            field: p.field(field),
            reason: p.reason().to_string(),
        };
        let meta = |key: &str| metadata.and_then(|m| m.get(key)).unwrap_or(&Value::Null);
        let resource_version: Option<String> = from_value(meta("resourceVersion"))
            .map_err(|p| error("metadata.resourceVersion", p))?;
        let annotations: BTreeMap<String, String> =
            from_value(meta("annotations")).map_err(|p| error("metadata.annotations", p))?;
        let DecodedSpec(parts) = spec.unwrap_or_else(|| SpecParts::default().finish());
        let parts = parts.map_err(|p| error("spec", p))?;
        Ok(ShootContext {
            resource_version,
            generic_token_kubeconfig_secret: annotations
                .get(GENERIC_TOKEN_KUBECONFIG_ANNOTATION)
                .filter(|v| !v.is_empty())
                .cloned()
                .unwrap_or_else(|| GENERIC_TOKEN_KUBECONFIG_DEFAULT.to_string()),
            shoot: parts.shoot,
            seed: parts.seed,
            cloud_profile: parts.cloud_profile,
            cluster_name: name,
        })
    }

    /// `shoot.spec.kubernetes.version`.
    pub fn kubernetes_version(&self) -> &Version {
        &self.shoot.spec.kubernetes.version
    }

    /// `shoot.spec.region`.
    pub fn region(&self) -> &str {
        &self.shoot.spec.region
    }

    /// `shoot.spec.provider.type`.
    pub fn provider_type(&self) -> &str {
        &self.shoot.spec.provider.type_
    }

    /// `shoot.metadata.annotations`.
    pub fn annotations(&self) -> &BTreeMap<String, String> {
        &self.shoot.metadata.annotations
    }

    /// `shoot.spec.networking.ipFamilies` as written; empty means IPv4.
    pub fn ip_families(&self) -> &[String] {
        &self.shoot.spec.networking.ip_families.0
    }

    /// The shoot's InfrastructureConfig (raw).
    pub fn infrastructure_config(&self) -> Option<&Value> {
        self.shoot.spec.provider.infrastructure_config.as_ref()
    }

    /// The shoot's ControlPlaneConfig (raw).
    pub fn control_plane_config(&self) -> Option<&Value> {
        self.shoot.spec.provider.control_plane_config.as_ref()
    }

    /// The CloudProfile's `providerConfig` (raw, without `machineImages`).
    pub fn cloud_profile_config(&self) -> Option<&Value> {
        self.cloud_profile.spec.provider_config.0.as_ref()
    }

    /// `shoot.status.technicalID`.
    pub fn technical_id(&self) -> Option<&str> {
        self.shoot.status.technical_id.as_deref()
    }

    /// `shoot.spec.hibernation.enabled`.
    pub fn hibernation_enabled(&self) -> bool {
        self.shoot.spec.hibernation.enabled
    }

    /// The shoot has a `deletionTimestamp`.
    pub fn shoot_deleting(&self) -> bool {
        self.shoot.metadata.deletion_timestamp.is_some()
    }

    /// The shoot's last operation is a `Migrate` (control-plane migration).
    pub fn shoot_migrating(&self) -> bool {
        self.shoot
            .status
            .last_operation
            .as_ref()
            .is_some_and(|op| op.type_ == "Migrate")
    }

    /// `spec.networking.providerConfig.overlay.enabled`; absent (or null)
    /// means enabled. A non-boolean is an error naming the field.
    pub fn overlay_enabled(&self) -> Result<bool, (String, String)> {
        match self
            .shoot
            .spec
            .networking
            .provider_config
            .as_ref()
            .and_then(|c| c.get("overlay"))
            .and_then(|o| o.get("enabled"))
        {
            None | Some(Value::Null) => Ok(true),
            Some(Value::Bool(b)) => Ok(*b),
            Some(other) => Err((
                "spec.networking.providerConfig.overlay.enabled".into(),
                format!("{other} is not a boolean"),
            )),
        }
    }

    /// `shoot.spec.kubernetes.verticalPodAutoscaler.enabled`.
    pub fn vpa_enabled(&self) -> bool {
        self.shoot.spec.kubernetes.vertical_pod_autoscaler.enabled
    }

    /// The shoot's CA rotation: last initiation time and phase.
    pub fn ca_rotation(&self) -> &CaRotation {
        &self
            .shoot
            .status
            .credentials
            .rotation
            .certificate_authorities
    }

    /// `seed.spec.provider.type` (none for self-hosted shoots).
    pub fn seed_provider_type(&self) -> Option<&str> {
        self.seed.spec.provider.type_.as_deref()
    }

    /// `seed.spec.provider.region`.
    pub fn seed_region(&self) -> Option<&str> {
        self.seed.spec.provider.region.as_deref()
    }

    /// Whether the shoot runs IPv6: `IPv6` in `spec.networking.ipFamilies`, or any
    /// `status.networking.nodes` CIDR is IPv6 (Gardener's rule for
    /// `--allocate-node-cidrs`).
    pub fn is_ipv6(&self) -> bool {
        self.ip_families().iter().any(|f| f == "IPv6")
            || self
                .shoot
                .status
                .networking
                .nodes
                .0
                .iter()
                .any(|c| c.contains(':'))
    }

    /// Pod CIDRs from spec and status, spec first, without duplicates.
    pub fn pod_cidrs(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let spec = &self.shoot.spec.networking.pods.0;
        for cidr in spec.iter().chain(&self.shoot.status.networking.pods.0) {
            if !out.contains(cidr) {
                out.push(cidr.clone());
            }
        }
        out
    }

    /// The Kubernetes version of a worker pool: its own, else the control plane's.
    pub fn worker_version(&self, pool: &str) -> &Version {
        self.shoot
            .spec
            .provider
            .workers
            .iter()
            .find(|w| w.name == pool)
            .and_then(|w| w.kubernetes.version.as_ref())
            .unwrap_or(self.kubernetes_version())
    }

    /// Whether the shoot is self-hosted (`gardenadm`): a worker pool carries
    /// `controlPlane` (Gardener's `IsShootSelfHosted`).
    pub fn is_self_hosted(&self) -> bool {
        self.shoot
            .spec
            .provider
            .workers
            .iter()
            .any(|w| w.control_plane.as_ref().is_some_and(|c| !c.is_null()))
    }

    /// Whether the shoot annotation `key` parses as `true` (Go's strconv.ParseBool).
    pub fn annotation_is_true(&self, key: &str) -> bool {
        matches!(
            self.annotations().get(key).map(String::as_str),
            Some("1" | "t" | "T" | "true" | "TRUE" | "True")
        )
    }
}

/// Project a `Cluster` (as JSON) to its shoot context; the same decoding as
/// from text, for objects already in memory.
pub fn project_cluster(cluster: &Value) -> Result<ShootContext, ClusterError> {
    let spec = cluster
        .get("spec")
        .filter(|s| !s.is_null())
        .map(|spec| ClusterSpecSeed.deserialize(spec))
        .transpose()
        .unwrap_or_else(|e| Some(DecodedSpec(Err(Problem::new(e.to_string())))));
    ShootContext::assemble(cluster.get("metadata"), spec)
}

/// A whole `Cluster` decoded from text into its shoot context: `metadata` kept
/// (it is small), `spec` decoded as a view, everything else skipped. Never
/// fails on a malformed Cluster, only on text that does not parse, so one bad
/// Cluster does not spoil a list of them. Also carries the metadata an API
/// client needs.
#[derive(Debug, Clone)]
pub struct ClusterObject {
    pub metadata: ObjectMeta,
    pub context: Result<ShootContext, ClusterError>,
}

impl<'de> Deserialize<'de> for ClusterObject {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ClusterObject;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a Cluster object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ClusterObject, A::Error> {
                let mut metadata: Option<Value> = None;
                let mut spec = None;
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "metadata" => metadata = Some(map.next_value_seed(Metadata)?),
                        "spec" => spec = Some(map.next_value_seed(ClusterSpecSeed)?),
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                let text = |key: &str| {
                    metadata
                        .as_ref()
                        .and_then(|m| m.get(key))
                        .and_then(Value::as_str)
                        .map(str::to_string)
                };
                let object_meta = ObjectMeta {
                    name: text("name"),
                    resource_version: text("resourceVersion"),
                    uid: text("uid"),
                    ..ObjectMeta::default()
                };
                Ok(ClusterObject {
                    metadata: object_meta,
                    context: ShootContext::assemble(metadata.as_ref(), spec),
                })
            }
        }
        d.deserialize_map(V)
    }
}

impl kube::Resource for ClusterObject {
    type DynamicType = ();
    type Scope = k8s_openapi::ClusterResourceScope;

    fn kind(_: &()) -> std::borrow::Cow<'_, str> {
        Cluster::kind(&())
    }
    fn group(_: &()) -> std::borrow::Cow<'_, str> {
        Cluster::group(&())
    }
    fn version(_: &()) -> std::borrow::Cow<'_, str> {
        Cluster::version(&())
    }
    fn plural(_: &()) -> std::borrow::Cow<'_, str> {
        Cluster::plural(&())
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}
