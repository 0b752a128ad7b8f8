//! The components of a provider's control plane as data: one YAML file per
//! component (`components/<name>.yaml` in the provider folder), holding the
//! Kubernetes objects the component consists of, each with the
//! ManagedResource it travels in, written as the Go extensions' charts
//! render them, with placeholders for what varies ([`template`]) and the
//! profile's one condition language for what is optional.
//!
//! ```yaml
//! name: cloud-controller-manager
//! shootAccess: [cloud-controller-manager]   # Secrets shoot-access-<name>, written directly
//! certificates:                             # serving certificates, read as ${secrets.<name>}
//! - {name: x-webhook, commonName: x-webhook, service: x-webhook, signedBy: currentCA}
//! health:                                   # seed Deployments that join ControlPlaneHealthy
//!   deployments: [cloud-controller-manager, {name: ingress-gce, when: {dualStack: true}}]
//!   events:                                 # recent Warning Events in the shoot that fail it
//!   - involvedObject: {kind: ServiceAccount, name: x}   # namespace: kube-system by default
//!     within: 5m
//!     when: {controlPlaneConfig: {path: x.enabled, equals: true}}
//!     codes: [{messageContains: LimitExceeded, code: ERR_INFRA_QUOTA_EXCEEDED}]
//! values:                                   # named values, used as ${name}
//!   labels: {app: kubernetes, role: cloud-controller-manager}
//! objects:
//! - into: shootCrds
//!   file: crds/volumesnapshots.yaml         # an object kept in a file of its own, taken literally
//! - into: seed                              # configuration | seed | shoot | shootCrds | storageClasses
//!   when: {kubernetes: ">= 1.31"}           # optional
//!   object:
//!     apiVersion: apps/v1
//!     kind: Deployment
//!     metadata: {name: cloud-controller-manager, namespace: "${namespace}", labels: "${labels}"}
//!     spec: {replicas: "${replicas}", …}
//! ```
//!
//! Everything is checked when the profile loads: every expression's root is
//! a known value ([`ROOTS`], a component value, an item `$each` binds), every
//! `images.<name>` is in the image vector, every `code.<name>` is a value the
//! provider's Rust computes, filters and conditions are known, component
//! values do not depend on each other in a circle. Errors name the file, the
//! object and the field.

pub mod expr;
pub mod template;

use std::cell::RefCell;
use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use self::expr::Expr;
use self::template::{Eval, Item, Node, TemplateError, Used, Values, walk};
use super::condition::{Condition, Facts, Place};
use super::imagevector::ImageVector;
use crate::providers::ProviderCode;
use crate::secrets::ServerCertificate;

/// The ManagedResource (or none) an object travels in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Destination {
    /// `extension-controlplane-configuration-seed` (seed): configuration the
    /// seed components mount.
    Configuration,
    /// `extension-controlplane-seed` (seed): what runs in the shoot namespace.
    Seed,
    /// `extension-controlplane-shoot` (shoot): RBAC, node agents, drivers in the shoot.
    Shoot,
    /// `extension-controlplane-shoot-crds` (shoot): CustomResourceDefinitions.
    ShootCrds,
    /// `extension-controlplane-storageclasses` (shoot): StorageClasses and
    /// VolumeSnapshotClasses.
    StorageClasses,
}

impl Destination {
    pub const ALL: [Destination; 5] = [
        Destination::Configuration,
        Destination::Seed,
        Destination::Shoot,
        Destination::ShootCrds,
        Destination::StorageClasses,
    ];

    /// As written in `into:`.
    pub fn key(self) -> &'static str {
        match self {
            Destination::Configuration => "configuration",
            Destination::Seed => "seed",
            Destination::Shoot => "shoot",
            Destination::ShootCrds => "shootCrds",
            Destination::StorageClasses => "storageClasses",
        }
    }

    /// Whether the objects land in the shoot (namespaced ones default to
    /// `kube-system`) rather than the shoot namespace of the seed.
    pub fn in_shoot(self) -> bool {
        !matches!(self, Destination::Configuration | Destination::Seed)
    }
}

/// The values every component can use, with what each is (checked by
/// `tests/profile_docs.rs` against `docs/profiles.md`).
pub const ROOTS: &[(&str, &str)] = &[
    (
        "namespace",
        "the shoot namespace in the seed (the ControlPlane's namespace)",
    ),
    ("region", "`spec.region` of the ControlPlane"),
    (
        "replicas",
        "Gardener's `GetControlPlaneReplicas`: 0 while the shoot is hibernated and kube-apiserver is scaled down, else 1 (a number)",
    ),
    ("kubernetesVersion", "the shoot's `spec.kubernetes.version`"),
    ("technicalID", "the shoot's `status.technicalID`"),
    (
        "shootName",
        "the Shoot's `metadata.name` (in its project namespace)",
    ),
    (
        "workerZones",
        "the zones of all worker pools, sorted, without duplicates",
    ),
    (
        "secretRef",
        "`{name, namespace}` of the ControlPlane's credentials Secret",
    ),
    (
        "credentials",
        "the credentials Secret's data as text by key; absent when the Secret does not exist",
    ),
    (
        "credentialsChecksum",
        "Gardener's checksum of the credentials Secret's data (`checksum/secret-<name>`)",
    ),
    (
        "workloadIdentity",
        "whether the credentials count as workload identity (a boolean)",
    ),
    (
        "genericTokenKubeconfig",
        "the generic token kubeconfig Secret's name (Cluster annotation `generic-token-kubeconfig.secret.gardener.cloud/name`)",
    ),
    (
        "images",
        "`images.<name>`: the image of that name in the image vector, for the shoot's Kubernetes version",
    ),
    (
        "secrets",
        "`secrets.<config>`: the Secret the secrets manager keeps that certificate in (`cloud-controller-manager-server`, or a component's `certificates:` entry)",
    ),
    (
        "caBundle",
        "the control-plane CA bundle (`bundle.crt`: the current CA, then the old one during a rotation), as text",
    ),
    ("annotations", "the shoot's annotations"),
    (
        "controlPlaneConfig",
        "the ControlPlane's `spec.providerConfig` (the shoot's ControlPlaneConfig)",
    ),
    (
        "infrastructureStatus",
        "the ControlPlane's `spec.infrastructureProviderStatus`",
    ),
    (
        "infrastructureConfig",
        "the shoot's `spec.provider.infrastructureConfig`",
    ),
    (
        "cloudProfileConfig",
        "the CloudProfile's `spec.providerConfig`",
    ),
    ("ipFamilies", "the shoot's `spec.networking.ipFamilies`"),
    (
        "networkingType",
        "the shoot's `spec.networking.type` (`calico`, `cilium`, …; absent when unset)",
    ),
    (
        "kubeAPIServer",
        "`{featureGates, runtimeConfig}` of the shoot's `spec.kubernetes.kubeAPIServer` (maps; absent when unset)",
    ),
    (
        "podCIDRs",
        "the shoot's pod CIDRs, spec then status, without duplicates",
    ),
    (
        "podCIDRsPerFamily",
        "`podCIDRs`, cut to the first of two for a single-stack shoot",
    ),
    (
        "serviceCIDRsPerFamily",
        "the service CIDRs, spec then status, cut like `podCIDRsPerFamily`",
    ),
    (
        "nodeCIDRMaskSize",
        "`spec.kubernetes.kubeControllerManager.nodeCIDRMaskSize` (a number, absent when unset)",
    ),
    (
        "code",
        "`code.<name>`: a value the provider folder's Rust computes (the profile's `code`)",
    ),
    (
        "extensionFeatureGates",
        "`{Name: bool}`: each extension feature gate the profile declares (`extensionFeatureGates`), with the operator's `--feature-gates` value, else its default",
    ),
];

/// A component: its objects, the shoot access Secrets it needs, its values.
#[derive(Debug, Clone, PartialEq)]
pub struct Component {
    pub name: String,
    /// Where it came from (`aws/components/cloud-controller-manager.yaml`).
    pub file: String,
    /// Service accounts in the shoot's `kube-system` whose tokens the
    /// component uses: a Secret `shoot-access-<name>` each, written directly.
    pub shoot_access: Vec<String>,
    /// Serving certificates the secrets manager keeps for the component
    /// (`certificates:`), read as `secrets.<name>`.
    pub certificates: Vec<ServerCertificate>,
    /// Named values, by name.
    pub values: BTreeMap<String, Node>,
    pub objects: Vec<ObjectTemplate>,
    /// The seed Deployments (in the shoot namespace) whose health joins the
    /// `ControlPlaneHealthy` condition, as upstream's
    /// `pkg/controller/healthcheck/add.go` lists them; each is one of the
    /// component's own `into: seed` Deployments.
    pub health_deployments: Vec<HealthDeployment>,
    /// The shoot Events whose newest, when a recent Warning, fails
    /// `ControlPlaneHealthy` (`health.events`).
    pub health_events: Vec<HealthEvents>,
}

/// A seed Deployment of `health.deployments`: a name, or `{name, when}` for
/// one upstream checks only for some shoots (gcp's `ingress-gce` when the
/// shoot is dual-stack). `when` uses the shoot's facts only (no component
/// values, no credentials): the health checks evaluate it per shoot.
#[derive(Debug, Clone, PartialEq)]
pub struct HealthDeployment {
    pub name: String,
    pub when: Option<Condition>,
}

impl From<&str> for HealthDeployment {
    /// A Deployment checked for every shoot.
    fn from(name: &str) -> Self {
        HealthDeployment {
            name: name.to_owned(),
            when: None,
        }
    }
}

/// A `health.events` entry: the check fails while the newest Event in the
/// shoot about one object is a `Warning` at most `within` old (provider-aws's
/// custom-route-controller check, as data). The Events are read only while
/// `when` holds and every Deployment of the component's `health.deployments`
/// that is checked for the shoot is healthy (upstream wraps its Deployment
/// check: a failing Deployment is reported alone).
#[derive(Debug, Clone, PartialEq)]
pub struct HealthEvents {
    /// The component: the detail reads `[<component>] <reason>: <message>`.
    pub component: String,
    /// The component's checked Deployments (its `health.deployments`).
    pub after: Vec<String>,
    /// The involved object: kind, name and namespace in the shoot (the
    /// namespace is also where the Events are listed).
    pub kind: String,
    pub name: String,
    pub namespace: String,
    /// How young a Warning must be to fail the check.
    pub within: std::time::Duration,
    /// The error codes of a failure: the first entry whose text the Event's
    /// message contains (an entry without text matches every message).
    pub codes: Vec<EventCode>,
    pub when: Option<Condition>,
}

/// One `codes:` entry of `health.events`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EventCode {
    #[serde(default)]
    pub message_contains: Option<String>,
    pub code: String,
}

/// Gardener's error codes (`pkg/apis/core/v1beta1` `ErrorCode`), the values a
/// condition's `codes` may hold.
pub const ERROR_CODES: &[&str] = &[
    "ERR_UNAUTHENTICATED",
    "ERR_UNAUTHORIZED",
    "ERR_INFRA_QUOTA_EXCEEDED",
    "ERR_INFRA_RATE_LIMITS_EXCEEDED",
    "ERR_INFRA_DEPENDENCIES",
    "ERR_RETRYABLE_INFRA_DEPENDENCIES",
    "ERR_INFRA_RESOURCES_DEPLETED",
    "ERR_CLEANUP_CLUSTER_RESOURCES",
    "ERR_CONFIGURATION_PROBLEM",
    "ERR_RETRYABLE_CONFIGURATION_PROBLEM",
    "ERR_PROBLEMATIC_WEBHOOK",
];

/// One object (or, with `each`, several) of a component.
#[derive(Debug, Clone, PartialEq)]
pub struct ObjectTemplate {
    pub into: Destination,
    /// The object with its `when` and `each`.
    pub item: Item,
    /// `Kind/name` as written, or `objects[<i>]`, for messages.
    pub label: String,
}

/// A component file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ComponentFile {
    name: String,
    #[serde(default)]
    #[allow(dead_code)]
    description: Option<String>,
    #[serde(default)]
    shoot_access: Vec<String>,
    #[serde(default)]
    certificates: Vec<CertificateFile>,
    #[serde(default)]
    values: BTreeMap<String, Value>,
    #[serde(default)]
    health: HealthFile,
    objects: Vec<ObjectFile>,
}

/// A `certificates:` entry: a serving certificate for a Service of the
/// shoot namespace, signed by the control-plane CA.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct CertificateFile {
    name: String,
    common_name: String,
    /// The Service whose four DNS names the certificate carries.
    service: String,
    #[serde(default)]
    signed_by: SignedBy,
}

/// Which CA signs a component's certificate.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
enum SignedBy {
    /// The old CA while a rotation keeps one, else the current (Gardener's default).
    #[default]
    #[serde(rename = "ca")]
    Ca,
    /// Always the current CA (Gardener's `UseCurrentCA`).
    #[serde(rename = "currentCA")]
    CurrentCa,
}

/// `health:` of a component file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct HealthFile {
    #[serde(default)]
    deployments: Vec<HealthEntry>,
    #[serde(default)]
    events: Vec<EventsFile>,
}

/// One entry of `health.events`, as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct EventsFile {
    involved_object: InvolvedObjectFile,
    within: String,
    #[serde(default)]
    when: Option<Value>,
    #[serde(default)]
    codes: Vec<EventCode>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct InvolvedObjectFile {
    kind: String,
    name: String,
    #[serde(default = "kube_system")]
    namespace: String,
}

fn kube_system() -> String {
    "kube-system".into()
}

/// One entry of `health.deployments`, as written.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum HealthEntry {
    Name(String),
    When { name: String, when: Value },
}

impl HealthEntry {
    fn name(&self) -> &str {
        match self {
            HealthEntry::Name(name) | HealthEntry::When { name, .. } => name,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ObjectFile {
    into: Destination,
    #[serde(default)]
    when: Option<Value>,
    #[serde(default)]
    each: Option<String>,
    #[serde(default, rename = "as")]
    as_: Option<String>,
    #[serde(default)]
    object: Option<Value>,
    /// A file of the component's folder holding the object as one YAML
    /// document, taken literally (no placeholders): upstream manifests kept
    /// byte for byte, such as CRDs.
    #[serde(default)]
    file: Option<String>,
}

/// The `health.events` entries of component `component`, checked; an error
/// names the field.
fn health_events(
    component: &str,
    entries: &[EventsFile],
    deployments: &[HealthDeployment],
) -> Result<Vec<HealthEvents>, (String, String)> {
    let mut out = Vec::with_capacity(entries.len());
    for (i, e) in entries.iter().enumerate() {
        let field = |f: &str| format!("health.events[{i}].{f}");
        let object = &e.involved_object;
        if object.kind.is_empty() || !object.kind.chars().all(|c| c.is_ascii_alphanumeric()) {
            return Err((
                field("involvedObject.kind"),
                format!("{:?} is not a kind (e.g. ServiceAccount)", object.kind),
            ));
        }
        for (f, text) in [
            ("involvedObject.name", &object.name),
            ("involvedObject.namespace", &object.namespace),
        ] {
            if text.is_empty()
                || !text
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
            {
                return Err((
                    field(f),
                    format!("{text:?} is not an object name (lower-case letters, digits, - and .)"),
                ));
            }
        }
        let within = crate::gardener::duration::parse(&e.within)
            .map_err(|message| (field("within"), message))?;
        if within.is_zero() {
            return Err((field("within"), "must be above zero (e.g. 5m)".into()));
        }
        for (j, c) in e.codes.iter().enumerate() {
            if !ERROR_CODES.contains(&c.code.as_str()) {
                return Err((
                    field(&format!("codes[{j}].code")),
                    format!(
                        "{:?} is not one of Gardener's error codes ({})",
                        c.code,
                        ERROR_CODES.join(", ")
                    ),
                ));
            }
            if c.message_contains.as_deref() == Some("") {
                return Err((
                    field(&format!("codes[{j}].messageContains")),
                    "must not be empty (leave it out to match every message)".into(),
                ));
            }
        }
        let when = e
            .when
            .as_ref()
            .map(|w| {
                Condition::compile(w, "when", Place::Rule)
                    .map_err(|(f, message)| (field(&f), message))
            })
            .transpose()?;
        let target = (&object.kind, &object.name, &object.namespace);
        if out
            .iter()
            .any(|o: &HealthEvents| (&o.kind, &o.name, &o.namespace) == target)
        {
            return Err((
                field("involvedObject"),
                format!(
                    "{} {}/{} is listed twice",
                    object.kind, object.namespace, object.name
                ),
            ));
        }
        out.push(HealthEvents {
            component: component.to_owned(),
            after: deployments.iter().map(|d| d.name.clone()).collect(),
            kind: object.kind.clone(),
            name: object.name.clone(),
            namespace: object.namespace.clone(),
            within,
            codes: e.codes.clone(),
            when,
        });
    }
    Ok(out)
}

/// A load error: the object (or `values.<name>`, or empty for the file) and
/// the field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ComponentError {
    pub object: String,
    pub field: String,
    pub message: String,
}

impl ComponentError {
    fn new(object: impl Into<String>, e: TemplateError) -> Self {
        ComponentError {
            object: object.into(),
            field: e.field(),
            message: e.message,
        }
    }
}

/// The first gate `condition` asks about that the profile does not declare.
fn undeclared_gate(condition: &Condition, declared: &[&str]) -> Result<(), String> {
    let mut asked = Vec::new();
    condition.feature_gates(&mut asked);
    match asked.into_iter().find(|g| !declared.contains(g)) {
        Some(name) => Err(format!(
            "extensionFeatureGate: {}",
            undeclared_message(name, declared)
        )),
        None => Ok(()),
    }
}

fn undeclared_message(name: &str, declared: &[&str]) -> String {
    format!(
        "the profile declares no extension feature gate {name:?} (declared: {}; add it to extensionFeatureGates in profile.yaml)",
        if declared.is_empty() {
            "none".to_owned()
        } else {
            declared.join(", ")
        }
    )
}

/// What expressions may name beyond [`ROOTS`], for the checks at load.
pub struct Known<'a> {
    /// The files of the folder the component is in (`file:` objects), by
    /// path below it.
    pub files: &'a crate::profile::DataFiles<'a>,
    pub images: &'a ImageVector,
    pub code: Option<&'a dyn ProviderCode>,
    /// The secrets manager's certificate configs.
    pub secrets: &'a [&'a str],
    /// The extension feature gates the profile declares.
    pub feature_gates: &'a [&'a str],
}

impl Component {
    /// Parse and check a component file; `file` names it in errors.
    pub fn parse(file: &str, text: &str, known: &Known<'_>) -> Result<Component, ComponentError> {
        let whole = |field: String, message: String| ComponentError {
            object: String::new(),
            field,
            message,
        };
        let tree: Value =
            serde_saphyr::from_str(text).map_err(|e| whole(String::new(), e.to_string()))?;
        let raw: ComponentFile = serde_path_to_error::deserialize(tree).map_err(|e| {
            let field = e.path().to_string();
            whole(
                if field == "." { String::new() } else { field },
                e.into_inner().to_string(),
            )
        })?;
        if raw.name.trim().is_empty() {
            return Err(whole("name".into(), "a component needs a name".into()));
        }
        for (i, sa) in raw.shoot_access.iter().enumerate() {
            if !template::is_name(sa) {
                return Err(whole(
                    format!("shootAccess[{i}]"),
                    format!("{sa:?} is not a service account name"),
                ));
            }
        }
        let mut certificates: Vec<ServerCertificate> = Vec::new();
        for (i, c) in raw.certificates.iter().enumerate() {
            for (field, text) in [
                ("name", &c.name),
                ("commonName", &c.common_name),
                ("service", &c.service),
            ] {
                if !template::is_name(text) {
                    return Err(whole(
                        format!("certificates[{i}].{field}"),
                        format!("{text:?} is not a name (letters, digits, - and _)"),
                    ));
                }
            }
            if known.secrets.contains(&c.name.as_str())
                || certificates.iter().any(|k| k.name == c.name)
            {
                return Err(whole(
                    format!("certificates[{i}].name"),
                    format!(
                        "the secrets manager already keeps a certificate {:?}",
                        c.name
                    ),
                ));
            }
            certificates.push(ServerCertificate {
                name: c.name.clone(),
                common_name: c.common_name.clone(),
                service: c.service.clone(),
                current_ca: c.signed_by == SignedBy::CurrentCa,
            });
        }
        let mut health_deployments = Vec::with_capacity(raw.health.deployments.len());
        for (i, entry) in raw.health.deployments.iter().enumerate() {
            let field = format!("health.deployments[{i}]");
            let name = &entry.name().to_owned();
            if raw.health.deployments[..i].iter().any(|e| e.name() == name) {
                return Err(whole(field, format!("{name:?} is listed twice")));
            }
            let own = raw.objects.iter().any(|o| {
                let object = o.object.as_ref().unwrap_or(&Value::Null);
                o.into == Destination::Seed
                    && object.get("kind").and_then(Value::as_str) == Some("Deployment")
                    && literal_names(o, object, &raw.values).contains(name)
            });
            if !own {
                return Err(whole(
                    field,
                    format!(
                        "{name:?} is not a Deployment of this component (an object `into: seed`, kind Deployment, metadata.name {name:?})"
                    ),
                ));
            }
            let when = match entry {
                HealthEntry::Name(_) => None,
                HealthEntry::When { when, .. } => Some(
                    Condition::compile(when, "when", Place::Health)
                        .map_err(|(f, message)| whole(format!("{field}.{f}"), message))
                        .and_then(|c| {
                            undeclared_gate(&c, known.feature_gates)
                                .map_err(|m| whole(format!("{field}.when"), m))?;
                            Ok(c)
                        })?,
                ),
            };
            health_deployments.push(HealthDeployment {
                name: name.clone(),
                when,
            });
        }
        let health_events = health_events(&raw.name, &raw.health.events, &health_deployments)
            .map_err(|(field, message)| whole(field, message))?;
        let mut values = BTreeMap::new();
        for (name, v) in &raw.values {
            if !template::is_name(name) || ROOTS.iter().any(|(r, _)| r == name) {
                return Err(whole(
                    format!("values.{name}"),
                    "a value needs a name of its own (letters, digits, - and _; not one of the built-in values)".into(),
                ));
            }
            let node =
                Node::parse(v).map_err(|e| ComponentError::new(format!("values.{name}"), e))?;
            values.insert(name.clone(), node);
        }
        let mut objects = Vec::with_capacity(raw.objects.len());
        for (i, o) in raw.objects.into_iter().enumerate() {
            let (object, literal) = match (o.object, &o.file) {
                (Some(object), None) => (object, false),
                (None, Some(path)) => (
                    object_file(known, path).map_err(|m| whole(format!("objects[{i}].file"), m))?,
                    true,
                ),
                _ => {
                    return Err(whole(
                        format!("objects[{i}]"),
                        "an object needs exactly one of `object` (written here) and `file` (a file next to the component's folder)".into(),
                    ));
                }
            };
            let label = label(&object).unwrap_or_else(|| format!("objects[{i}]"));
            let at = |e: TemplateError| ComponentError::new(label.clone(), e);
            let place = if literal { "file" } else { "object" };
            check_manifest(&object)
                .map_err(|(field, m)| at(TemplateError::new(m).at(field).at(place)))?;
            let when = o
                .when
                .as_ref()
                .map(|c| {
                    Condition::compile(c, "when", Place::Component).map_err(|(field, message)| {
                        ComponentError {
                            object: label.clone(),
                            field,
                            message,
                        }
                    })
                })
                .transpose()?;
            let each = match (o.each, o.as_) {
                (None, None) => None,
                (None, Some(_)) => {
                    return Err(at(TemplateError::new("as names the item of each").at("as")));
                }
                (Some(text), name) => {
                    let expr =
                        Expr::parse(&text).map_err(|m| at(TemplateError::new(m).at("each")))?;
                    let name = name.unwrap_or_else(|| "item".into());
                    if !template::is_name(&name) {
                        return Err(at(
                            TemplateError::new(format!("{name:?} is not a name")).at("as")
                        ));
                    }
                    Some((expr, name))
                }
            };
            let value = if literal {
                Node::Lit(object)
            } else {
                Node::parse(&object).map_err(|e| at(e.at("object")))?
            };
            objects.push(ObjectTemplate {
                into: o.into,
                item: Item {
                    when,
                    each,
                    value,
                    otherwise: None,
                },
                label,
            });
        }
        let component = Component {
            name: raw.name,
            file: file.to_string(),
            shoot_access: raw.shoot_access,
            certificates,
            values,
            objects,
            health_deployments,
            health_events,
        };
        let mut secrets: Vec<&str> = known.secrets.to_vec();
        secrets.extend(component.certificates.iter().map(|c| c.name.as_str()));
        component.check(&Known {
            files: known.files,
            images: known.images,
            code: known.code,
            secrets: &secrets,
            feature_gates: known.feature_gates,
        })?;
        Ok(component)
    }

    /// Every expression names something that exists; values have no cycle.
    fn check(&self, known: &Known<'_>) -> Result<(), ComponentError> {
        let mut deps: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for (name, node) in &self.values {
            let mut used = Vec::new();
            self.check_node(node, known, &mut used)
                .map_err(|e| ComponentError::new(format!("values.{name}"), e))?;
            deps.insert(name, used);
        }
        for object in &self.objects {
            let at = |e: TemplateError| ComponentError::new(object.label.clone(), e);
            let mut bound: Vec<&str> = Vec::new();
            let mut ignored = Vec::new();
            if let Some((over, name)) = &object.item.each {
                self.check_expr(over, known, &bound)
                    .map_err(|m| at(TemplateError::new(m).at("each")))?;
                bound.push(name);
            }
            if let Some(when) = &object.item.when {
                undeclared_gate(when, known.feature_gates)
                    .map_err(|m| at(TemplateError::new(m).at("when")))?;
                let mut exprs = Vec::new();
                when.value_exprs(&mut exprs);
                for e in exprs {
                    self.check_expr(e, known, &bound)
                        .map_err(|m| at(TemplateError::new(m).at("when")))?;
                }
            }
            self.visit_checked(&object.item.value, known, &mut bound, &mut ignored)
                .map_err(|e| at(e.at("object")))?;
        }
        // A value must not need itself, directly or through others.
        for start in deps.keys() {
            let mut stack = vec![(*start, vec![*start])];
            while let Some((at, path)) = stack.pop() {
                for next in deps.get(at).into_iter().flatten() {
                    if next == start {
                        return Err(ComponentError {
                            object: format!("values.{start}"),
                            field: String::new(),
                            message: format!(
                                "the values depend on each other in a circle: {} -> {start}",
                                path.join(" -> ")
                            ),
                        });
                    }
                    if !path.contains(next) {
                        let mut p = path.clone();
                        p.push(next);
                        stack.push((next, p));
                    }
                }
            }
        }
        Ok(())
    }

    fn check_node<'n>(
        &'n self,
        node: &'n Node,
        known: &Known<'_>,
        used: &mut Vec<&'n str>,
    ) -> Result<(), TemplateError> {
        self.visit_checked(node, known, &mut Vec::new(), used)
    }

    fn visit_checked<'n>(
        &'n self,
        node: &'n Node,
        known: &Known<'_>,
        bound: &mut Vec<&'n str>,
        used_values: &mut Vec<&'n str>,
    ) -> Result<(), TemplateError> {
        node.visit(bound, &mut |used, bound| {
            let mut exprs = Vec::new();
            // the caller puts a condition's errors below its `$when`
            match used {
                Used::Expr(e) => exprs.push(e),
                Used::Condition(c) => {
                    undeclared_gate(c, known.feature_gates).map_err(TemplateError::new)?;
                    c.value_exprs(&mut exprs);
                }
            }
            for e in exprs {
                if let Some(v) = self.values.get_key_value(e.root()).map(|(k, _)| k.as_str())
                    && !bound.contains(&e.root())
                {
                    used_values.push(v);
                }
                self.check_expr(e, known, bound)
                    .map_err(TemplateError::new)?;
            }
            Ok(())
        })
    }

    fn check_expr(&self, e: &Expr, known: &Known<'_>, bound: &[&str]) -> Result<(), String> {
        let root = e.root();
        if bound.contains(&root) || self.values.contains_key(root) {
            return Ok(());
        }
        let second = e.path.get(1).map(String::as_str);
        match root {
            "images" => {
                let name = second.ok_or("images needs a name: images.<name>")?;
                if known.images.has(name) {
                    Ok(())
                } else {
                    Err(format!(
                        "${{{e}}}: the image vector has no image {name:?} (add it to images.yaml)"
                    ))
                }
            }
            "secrets" => {
                let name = second.ok_or("secrets needs a certificate config: secrets.<config>")?;
                if known.secrets.contains(&name) {
                    Ok(())
                } else {
                    Err(format!(
                        "${{{e}}}: the secrets manager keeps no certificate {name:?} (known: {})",
                        known.secrets.join(", ")
                    ))
                }
            }
            "code" => {
                let Some(code) = known.code else {
                    return Err(format!(
                        "${{{e}}}: the profile names no code (`code: <provider>`), so there are no code values"
                    ));
                };
                let name = second.ok_or("code needs a value name: code.<name>")?;
                if code.values().iter().any(|v| v.name == name) {
                    Ok(())
                } else {
                    Err(format!(
                        "${{{e}}}: the code of {} computes no value {name:?} (it computes: {})",
                        code.name(),
                        code.values()
                            .iter()
                            .map(|v| v.name)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                }
            }
            "extensionFeatureGates" => match second {
                Some(name) if !known.feature_gates.contains(&name) => Err(format!(
                    "${{{e}}}: {}",
                    undeclared_message(name, known.feature_gates)
                )),
                _ => Ok(()),
            },
            root if ROOTS.iter().any(|(r, _)| *r == root) => Ok(()),
            root => {
                let mut names: Vec<&str> = ROOTS.iter().map(|(r, _)| *r).collect();
                names.extend(self.values.keys().map(String::as_str));
                names.extend(bound.iter().copied());
                Err(format!(
                    "${{{e}}}: unknown value {root:?} (known: {})",
                    names.join(", ")
                ))
            }
        }
    }

    /// Every condition of the component (on objects, items and entries), for
    /// documentation checks.
    pub fn conditions(&self) -> Vec<&Condition> {
        let mut out: Vec<&Condition> = self
            .objects
            .iter()
            .filter_map(|o| o.item.when.as_ref())
            .collect();
        let nodes = self
            .values
            .values()
            .chain(self.objects.iter().map(|o| &o.item.value));
        for node in nodes {
            let _ = node.visit(&mut Vec::new(), &mut |used, _| {
                if let Used::Condition(c) = used {
                    out.push(c);
                }
                Ok(())
            });
        }
        out
    }

    /// The value paths the component reads (`root.key…` of every
    /// expression, in values, objects and conditions), for the options it
    /// honours ([`crate::profile::options`]).
    pub fn value_paths(&self) -> Vec<Vec<String>> {
        let mut out = Vec::new();
        let mut collect = |node: &Node| {
            let _ = node.visit(&mut Vec::new(), &mut |used, _| {
                match used {
                    Used::Expr(e) => out.push(e.path.clone()),
                    Used::Condition(c) => c.read_paths(&mut out),
                }
                Ok(())
            });
        };
        for node in self.values.values() {
            collect(node);
        }
        for object in &self.objects {
            collect(&Node::List(vec![object.item.clone()]));
        }
        out
    }

    /// The image names the component uses (`images.<name>`).
    pub fn image_names(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut collect = |node: &Node| {
            let _ = node.visit(&mut Vec::new(), &mut |used, _| {
                let mut exprs = Vec::new();
                match used {
                    Used::Expr(e) => exprs.push(e),
                    Used::Condition(c) => c.value_exprs(&mut exprs),
                }
                for e in exprs {
                    if e.root() == "images"
                        && let Some(name) = e.path.get(1)
                    {
                        out.push(name.clone());
                    }
                }
                Ok(())
            });
        };
        for node in self.values.values() {
            collect(node);
        }
        for object in &self.objects {
            collect(&Node::List(vec![object.item.clone()]));
        }
        out
    }

    /// Render every object whose condition holds, in order, with the values
    /// of `roots`.
    pub fn render(&self, roots: &dyn Roots) -> Result<Vec<(Destination, Value)>, ComponentError> {
        let values = ComponentValues {
            component: self,
            roots,
            cache: RefCell::new(BTreeMap::new()),
        };
        let eval = Eval::new(&values);
        let mut out = Vec::with_capacity(self.objects.len());
        for object in &self.objects {
            let mut rendered = Vec::new();
            eval.item(&object.item, &mut rendered)
                .map_err(|e| ComponentError::new(object.label.clone(), e))?;
            out.extend(rendered.into_iter().map(|v| (object.into, v)));
        }
        Ok(out)
    }
}

/// The names an object has whatever the shoot: its `metadata.name` when
/// written out, or, with `each` over a component value that is a literal list
/// of strings, the name with `${<as>}` replaced by each item
/// (`csi-driver-controller-${role}` over `roles: [disk, file]`).
fn literal_names(o: &ObjectFile, object: &Value, values: &BTreeMap<String, Value>) -> Vec<String> {
    let Some(name) = object.pointer("/metadata/name").and_then(Value::as_str) else {
        return Vec::new();
    };
    let Some(each) = &o.each else {
        return vec![name.to_string()];
    };
    let placeholder = format!("${{{}}}", o.as_.as_deref().unwrap_or("item"));
    match values.get(each.trim()).and_then(Value::as_array) {
        Some(items) => items
            .iter()
            .filter_map(Value::as_str)
            .map(|item| name.replace(&placeholder, item))
            .collect(),
        None => Vec::new(),
    }
}

/// The object of a `file:` entry: one YAML document of the component's folder.
fn object_file(known: &Known<'_>, path: &str) -> Result<Value, String> {
    let text = (known.files)(path)?;
    let documents: Vec<Value> = serde_saphyr::from_multiple(&text)
        .map_err(|e| format!("{path}: {e}"))?
        .into_iter()
        .filter(|d: &Value| !d.is_null())
        .collect();
    match <[Value; 1]>::try_from(documents) {
        Ok([object]) => Ok(object),
        Err(many) => Err(format!(
            "{path}: holds {} YAML documents; a file holds exactly one object",
            many.len()
        )),
    }
}

/// `Kind/name` of a manifest whose kind and name are written out.
fn label(object: &Value) -> Option<String> {
    let kind = object.get("kind")?.as_str()?;
    let name = object.pointer("/metadata/name")?.as_str()?;
    Some(format!("{kind}/{name}"))
}

/// A manifest needs `apiVersion`, `kind` and `metadata.name` (literal or
/// placeholders); the error names the field.
fn check_manifest(object: &Value) -> Result<(), (&'static str, String)> {
    for (field, value) in [
        ("apiVersion", object.get("apiVersion")),
        ("kind", object.get("kind")),
        (
            "metadata.name",
            object.get("metadata").and_then(|m| m.get("name")),
        ),
    ] {
        if value
            .and_then(Value::as_str)
            .is_none_or(|s| s.trim().is_empty())
        {
            return Err((field, "must be a non-empty string".into()));
        }
    }
    Ok(())
}

/// The values of a render that components read: everything in [`ROOTS`].
pub trait Roots {
    /// The value at `expr`'s path (its root one of [`ROOTS`]); null when
    /// absent. Filters are applied by the caller.
    fn root(&self, expr: &Expr) -> Result<Value, String>;
    /// The facts conditions read.
    fn facts(&self) -> Facts<'_>;
}

/// The roots of a render plus the component's own values, computed once each.
struct ComponentValues<'a> {
    component: &'a Component,
    roots: &'a dyn Roots,
    cache: RefCell<BTreeMap<&'a str, Value>>,
}

impl Values for ComponentValues<'_> {
    fn lookup(&self, expr: &Expr) -> Result<Value, String> {
        let root = expr.root();
        let Some((name, node)) = self.component.values.get_key_value(root) else {
            return self.roots.root(expr);
        };
        if let Some(v) = self.cache.borrow().get(root) {
            return Ok(walk(v, &expr.path[1..]));
        }
        // A fresh evaluation: component values see no `$each` item.
        let value = Eval::new(self)
            .node(node)
            .map_err(|e| format!("value {root}: {}{}", field_prefix(&e), e.message))?;
        let out = walk(&value, &expr.path[1..]);
        self.cache.borrow_mut().insert(name.as_str(), value);
        Ok(out)
    }

    fn facts(&self) -> Facts<'_> {
        self.roots.facts()
    }
}

fn field_prefix(e: &TemplateError) -> String {
    let field = e.field();
    if field.is_empty() {
        String::new()
    } else {
        format!("field {field}: ")
    }
}
