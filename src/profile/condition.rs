//! The one condition language of a profile: what a rule's `when:` and a
//! component's `when:`/`$when:` (on objects, list items and map entries) can
//! ask about a shoot.
//!
//! A condition is a map; every key given must hold:
//!
//! | key | holds when |
//! |---|---|
//! | `kubernetes: "<range>"` | the shoot's Kubernetes version is in the range ([`VersionRange`]) |
//! | `workerKubernetes: {pool?, range}` | the pool's version (its own, else the shoot's) is in the range; without `pool`, any pool's |
//! | `ipv6: true\|false` | `IPv6` in `spec.networking.ipFamilies`, or an IPv6 node CIDR in the status |
//! | `dualStack: true\|false` | `ipFamilies` is not exactly `[IPv4]`, or the status has two node CIDRs |
//! | `overlayEnabled: true\|false` | the networking `providerConfig.overlay.enabled` (absent: enabled) |
//! | `seedInShootRegion: true\|false` | the seed runs on the same provider type and in the shoot's region |
//! | `vpaEnabled: true\|false` | the shoot wants a VerticalPodAutoscaler (`spec.kubernetes.verticalPodAutoscaler.enabled`) |
//! | `workloadIdentity: true\|false` | the credentials Secret counts as workload identity (only where the credentials are read: components) |
//! | `annotation: <key>` | the shoot annotation parses as true (Go's `strconv.ParseBool`) |
//! | `extensionFeatureGate: <Name>` | (components and their health checks) the provider's extension feature gate is on: the operator's `--feature-gates` value, else the declared default ([`super::featuregates`]) |
//! | `kubelet: "<range>"` | (OperatingSystemConfig rules) the pool's kubelet version is in the range |
//! | `configMapExists: {name, namespace?}` | (OperatingSystemConfig rules) the ConfigMap exists, in the object's namespace or the shoot's `technicalID` |
//! | `infrastructureConfig`, `controlPlaneConfig`, `cloudProfileConfig: {path, equals \| notFalse: true}` | a field of the shoot's InfrastructureConfig, ControlPlaneConfig or the CloudProfile's providerConfig, by dotted path, equals the value / is absent, null or anything but `false` |
//! | `value: {of: <expression>, equals \| notFalse: true \| notEmpty: true\|false \| contains}` | (components) a value of the component language ([`super::component`]) equals the value / is not `false` / is (not) absent, null, `""`, `[]` or `{}` / is a list with that item |
//! | `all: [...]`, `any: [...]`, `not: {...}` | combinators |
//!
//! Conditions are compiled once, when the profile loads, with errors naming
//! the field (`when.any[1].not.kubernetes`); evaluating one is a few
//! comparisons over the [`Facts`].

use std::collections::BTreeSet;
use std::fmt;

use semver::Version;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::component::expr::Expr;
use super::featuregates::FeatureGates;
use super::version::VersionRange;
use crate::gardener::ShootContext;

/// Which namespace an object a rule reads lives in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum NamespaceRef {
    /// The namespace of the object being mutated.
    #[default]
    Object,
    /// The shoot's `status.technicalID`.
    TechnicalId,
}

/// What conditions are evaluated against.
#[derive(Debug, Clone, Copy)]
pub struct Facts<'a> {
    pub shoot: &'a ShootContext,
    /// The provider type the profile serves (the ControlPlane's `spec.type`).
    pub provider: &'a str,
    /// Whether the credentials Secret counts as workload identity; `None`
    /// where the credentials are not read (rule conditions).
    pub workload_identity: Option<bool>,
    /// The kubelet version of the worker pool an OperatingSystemConfig
    /// belongs to (its own, else the shoot's); `None` for other objects.
    pub kubelet: Option<&'a Version>,
    /// The ConfigMaps that exist, of those OperatingSystemConfig rules ask
    /// about; `None` for other objects.
    pub config_maps: Option<&'a BTreeSet<(NamespaceRef, String)>>,
    /// The values of the component language; `None` outside components.
    pub values: Option<&'a dyn ValueLookup>,
    /// The provider's extension feature gates with their values; `None`
    /// where they are not known (the webhooks' rules).
    pub feature_gates: Option<&'a FeatureGates>,
}

/// Where a `value` condition finds its values (a component being rendered).
pub trait ValueLookup {
    /// The expression's value (null when absent); the error says why it
    /// cannot be computed.
    fn value(&self, expr: &Expr) -> Result<Value, String>;
}

impl fmt::Debug for dyn ValueLookup + '_ {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ValueLookup")
    }
}

impl<'a> Facts<'a> {
    /// Facts about the shoot alone, as rule conditions see them.
    pub fn of_shoot(shoot: &'a ShootContext) -> Self {
        Facts {
            shoot,
            provider: shoot.provider_type(),
            workload_identity: None,
            kubelet: None,
            config_maps: None,
            values: None,
            feature_gates: None,
        }
    }
}

/// A yes/no fact about the shoot or its credentials.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fact {
    Ipv6,
    DualStack,
    OverlayEnabled,
    SeedInShootRegion,
    WorkloadIdentity,
    VpaEnabled,
}

impl Fact {
    const ALL: [Fact; 6] = [
        Fact::Ipv6,
        Fact::DualStack,
        Fact::OverlayEnabled,
        Fact::SeedInShootRegion,
        Fact::WorkloadIdentity,
        Fact::VpaEnabled,
    ];

    /// The key in a condition map.
    pub fn key(self) -> &'static str {
        match self {
            Fact::Ipv6 => "ipv6",
            Fact::DualStack => "dualStack",
            Fact::OverlayEnabled => "overlayEnabled",
            Fact::SeedInShootRegion => "seedInShootRegion",
            Fact::WorkloadIdentity => "workloadIdentity",
            Fact::VpaEnabled => "vpaEnabled",
        }
    }

    fn eval(self, facts: &Facts<'_>) -> Result<bool, ConditionError> {
        let shoot = facts.shoot;
        Ok(match self {
            Fact::Ipv6 => shoot.is_ipv6(),
            Fact::DualStack => {
                let families = shoot.ip_families();
                let ipv4_only =
                    families.is_empty() || (families.len() == 1 && families[0] == "IPv4");
                !ipv4_only || shoot.shoot.status.networking.nodes.0.len() == 2
            }
            Fact::OverlayEnabled => shoot
                .overlay_enabled()
                .map_err(|(field, reason)| ConditionError::Shoot { field, reason })?,
            Fact::SeedInShootRegion => {
                shoot.seed_provider_type() == Some(facts.provider)
                    && shoot.seed_region() == Some(shoot.region())
            }
            Fact::WorkloadIdentity => facts
                .workload_identity
                .ok_or(ConditionError::Unknown(Fact::WorkloadIdentity.key()))?,
            Fact::VpaEnabled => shoot.vpa_enabled(),
        })
    }
}

/// The raw provider config a field condition reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Config {
    /// The shoot's `spec.provider.infrastructureConfig`.
    Infrastructure,
    /// The shoot's `spec.provider.controlPlaneConfig`.
    ControlPlane,
    /// The CloudProfile's `spec.providerConfig`.
    CloudProfile,
}

impl Config {
    const ALL: [Config; 3] = [
        Config::Infrastructure,
        Config::ControlPlane,
        Config::CloudProfile,
    ];

    pub fn key(self) -> &'static str {
        match self {
            Config::Infrastructure => "infrastructureConfig",
            Config::ControlPlane => "controlPlaneConfig",
            Config::CloudProfile => "cloudProfileConfig",
        }
    }

    fn of(self, shoot: &ShootContext) -> Option<&Value> {
        match self {
            Config::Infrastructure => shoot.infrastructure_config(),
            Config::ControlPlane => shoot.control_plane_config(),
            Config::CloudProfile => shoot.cloud_profile_config(),
        }
    }
}

/// Which value a config field must have.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldTest {
    /// The field equals this JSON value (absent never equals).
    Equals(Value),
    /// The field is absent, null or anything but `false` (Go's `ptr.Deref(x, true)`).
    NotFalse,
    /// The config itself is (not) given: `{present: true|false}`, no path
    /// (Go's `infraConfig != nil`).
    Present(bool),
}

/// What a `value` condition asks of its value.
#[derive(Debug, Clone, PartialEq)]
pub enum ValueTest {
    /// Equals this JSON value (absent equals `null`).
    Equals(Value),
    /// Anything but `false`.
    NotFalse,
    /// `true`: not absent, null, `""`, `[]` or `{}`; `false`: one of them.
    NotEmpty(bool),
    /// A list that has this item.
    Contains(Value),
}

impl ValueTest {
    fn holds(&self, value: &Value) -> bool {
        match self {
            ValueTest::Equals(want) => value == want,
            ValueTest::NotFalse => value != &Value::Bool(false),
            ValueTest::NotEmpty(want) => {
                let empty = match value {
                    Value::Null => true,
                    Value::String(s) => s.is_empty(),
                    Value::Array(a) => a.is_empty(),
                    Value::Object(m) => m.is_empty(),
                    _ => false,
                };
                empty != *want
            }
            ValueTest::Contains(item) => value.as_array().is_some_and(|a| a.contains(item)),
        }
    }
}

/// A compiled condition.
#[derive(Debug, Clone, PartialEq)]
pub enum Condition {
    /// The shoot's `spec.kubernetes.version` is in the range.
    Kubernetes(VersionRange),
    /// The version of a worker pool (its own, else the shoot's) is in the
    /// range; without a pool name, of any pool.
    WorkerKubernetes {
        pool: Option<String>,
        range: VersionRange,
    },
    /// A yes/no fact has the wanted value.
    Is(Fact, bool),
    /// The shoot annotation parses as true (Go's strconv.ParseBool).
    AnnotationTrue(String),
    /// The provider's extension feature gate is on.
    FeatureGate(String),
    /// The worker pool's kubelet version is in the range.
    Kubelet(VersionRange),
    /// The ConfigMap exists.
    ConfigMapExists {
        name: String,
        namespace: NamespaceRef,
    },
    /// A field of a raw provider config, by dotted path.
    Field {
        config: Config,
        path: Vec<String>,
        test: FieldTest,
    },
    /// A value of the component language passes a test.
    Value {
        expr: Expr,
        test: ValueTest,
    },
    All(Vec<Condition>),
    Any(Vec<Condition>),
    Not(Box<Condition>),
}

/// A condition that cannot be evaluated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConditionError {
    /// A shoot field it reads has the wrong shape.
    #[error("invalid shoot in the Cluster: {field}: {reason}")]
    Shoot { field: String, reason: String },
    /// A fact this place does not know (ruled out when the profile loads).
    #[error("the condition {0} cannot be evaluated here")]
    Unknown(&'static str),
    /// A value a `value` condition reads cannot be computed.
    #[error("condition value {expr}: {reason}")]
    Value { expr: String, reason: String },
}

/// Where a condition is written, which decides the facts it may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// A rule of `components:` (the webhook does not read the credentials for it).
    Rule,
    /// A control-plane component (the renderer holds the credentials Secret
    /// and the component's values).
    Component,
    /// A rule of the `operatingsystemconfig` component (knows the pool's
    /// kubelet version and the ConfigMaps its conditions name).
    Osc,
    /// A component's `health.deployments` entry (the shoot's facts and the
    /// extension feature gates; no credentials, no component values).
    Health,
}

/// The keys a condition map may have, in the order they are combined.
const KEYS: [&str; 19] = [
    "kubernetes",
    "workerKubernetes",
    "kubelet",
    "ipv6",
    "dualStack",
    "overlayEnabled",
    "seedInShootRegion",
    "workloadIdentity",
    "vpaEnabled",
    "annotation",
    "extensionFeatureGate",
    "configMapExists",
    "infrastructureConfig",
    "controlPlaneConfig",
    "cloudProfileConfig",
    "value",
    "all",
    "any",
    "not",
];

/// A compile error: the field (below the condition's own path) and why.
pub type Invalid = (String, String);

impl Condition {
    /// Compile a condition map written at `at` (e.g. `when`). Errors name the
    /// field: `when.any[1].not.kubernetes`.
    pub fn compile(value: &Value, at: &str, place: Place) -> Result<Condition, Invalid> {
        let Value::Object(map) = value else {
            return Err((
                at.to_string(),
                format!(
                    "must be a map of conditions, e.g. {{kubernetes: \">= 1.31\"}}, not {value}"
                ),
            ));
        };
        if let Some(unknown) = map.keys().find(|k| !KEYS.contains(&k.as_str())) {
            return Err((
                format!("{at}.{unknown}"),
                format!("unknown {unknown:?} (known: {})", KEYS.join(", ")),
            ));
        }
        let mut all = Vec::new();
        for key in KEYS {
            let Some(v) = map.get(key) else { continue };
            let field = format!("{at}.{key}");
            all.push(compile_key(key, v, &field, place)?);
        }
        match all.len() {
            0 => Err((
                at.to_string(),
                "an empty condition; omit `when` to always apply".into(),
            )),
            1 => Ok(all.remove(0)),
            _ => Ok(Condition::All(all)),
        }
    }

    /// Evaluate against the facts.
    pub fn eval(&self, facts: &Facts<'_>) -> Result<bool, ConditionError> {
        let shoot = facts.shoot;
        Ok(match self {
            Condition::Kubernetes(range) => range.contains(shoot.kubernetes_version()),
            Condition::WorkerKubernetes { pool, range } => match pool {
                Some(pool) => range.contains(shoot.worker_version(pool)),
                None => shoot
                    .shoot
                    .spec
                    .provider
                    .workers
                    .iter()
                    .any(|w| range.contains(shoot.worker_version(&w.name))),
            },
            Condition::Is(fact, want) => fact.eval(facts)? == *want,
            Condition::AnnotationTrue(key) => shoot.annotation_is_true(key),
            Condition::FeatureGate(name) => facts
                .feature_gates
                .ok_or(ConditionError::Unknown("extensionFeatureGate"))?
                .enabled(name),
            Condition::Kubelet(range) => {
                range.contains(facts.kubelet.ok_or(ConditionError::Unknown("kubelet"))?)
            }
            Condition::ConfigMapExists { name, namespace } => facts
                .config_maps
                .ok_or(ConditionError::Unknown("configMapExists"))?
                .contains(&(*namespace, name.clone())),
            Condition::Field { config, path, test } => {
                let field = config
                    .of(shoot)
                    .and_then(|cfg| path.iter().try_fold(cfg, |v, key| v.get(key)));
                match test {
                    FieldTest::Equals(want) => field == Some(want),
                    FieldTest::NotFalse => field != Some(&Value::Bool(false)),
                    FieldTest::Present(want) => {
                        config.of(shoot).is_some_and(|c| !c.is_null()) == *want
                    }
                }
            }
            Condition::Value { expr, test } => {
                let lookup = facts.values.ok_or(ConditionError::Unknown("value"))?;
                let value = lookup.value(expr).map_err(|reason| ConditionError::Value {
                    expr: expr.text.clone(),
                    reason,
                })?;
                test.holds(&value)
            }
            Condition::All(all) => {
                for c in all {
                    if !c.eval(facts)? {
                        return Ok(false);
                    }
                }
                true
            }
            Condition::Any(any) => {
                for c in any {
                    if c.eval(facts)? {
                        return Ok(true);
                    }
                }
                false
            }
            Condition::Not(inner) => !inner.eval(facts)?,
        })
    }

    /// Evaluate and say why, for `scion mutate --explain`.
    pub fn explain(&self, facts: &Facts<'_>) -> String {
        let shoot = facts.shoot;
        let verdict = match self.eval(facts) {
            Ok(true) => "yes".to_string(),
            Ok(false) => "no".to_string(),
            Err(e) => format!("error: {e}"),
        };
        match self {
            Condition::Kubernetes(range) => format!(
                "kubernetes {} in \"{range}\": {verdict}",
                shoot.kubernetes_version()
            ),
            Condition::WorkerKubernetes { pool, range } => format!(
                "worker pool {} kubernetes in \"{range}\": {verdict}",
                pool.as_deref().unwrap_or("(any)")
            ),
            Condition::Is(fact, want) => {
                let (whose, actual) = match fact {
                    Fact::WorkloadIdentity => ("credentials", fact.eval(facts)),
                    _ => ("shoot", fact.eval(facts)),
                };
                let actual = actual.map_or_else(|e| e.to_string(), |b| b.to_string());
                format!("{} is {want} ({whose}: {actual}): {verdict}", fact.key())
            }
            Condition::AnnotationTrue(key) => format!(
                "annotation {key} is true (value {:?}): {verdict}",
                shoot
                    .annotations()
                    .get(key)
                    .map(String::as_str)
                    .unwrap_or("<unset>"),
            ),
            Condition::FeatureGate(name) => {
                format!("extension feature gate {name} is on: {verdict}")
            }
            Condition::Kubelet(range) => format!(
                "kubelet {} in \"{range}\": {verdict}",
                facts
                    .kubelet
                    .map_or_else(|| "(unknown)".to_string(), ToString::to_string)
            ),
            Condition::ConfigMapExists { name, namespace } => format!(
                "configmap {}/{name} exists: {verdict}",
                match namespace {
                    NamespaceRef::Object => "(object namespace)",
                    NamespaceRef::TechnicalId =>
                        shoot.technical_id().unwrap_or("(technicalID unset)"),
                }
            ),
            Condition::Field { config, path, test } => format!(
                "{}{}{} {}: {verdict}",
                config.key(),
                if path.is_empty() { "" } else { "." },
                path.join("."),
                match test {
                    FieldTest::Equals(v) => format!("== {v}"),
                    FieldTest::NotFalse => "is not false".to_string(),
                    FieldTest::Present(true) => "is given".to_string(),
                    FieldTest::Present(false) => "is not given".to_string(),
                },
            ),
            Condition::Value { expr, test } => format!(
                "value {expr} {}: {verdict}",
                match test {
                    ValueTest::Equals(v) => format!("== {v}"),
                    ValueTest::NotFalse => "is not false".to_string(),
                    ValueTest::NotEmpty(true) => "is not empty".to_string(),
                    ValueTest::NotEmpty(false) => "is empty".to_string(),
                    ValueTest::Contains(v) => format!("contains {v}"),
                }
            ),
            Condition::All(all) => format!(
                "all[{}]",
                all.iter()
                    .map(|c| c.explain(facts))
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
            Condition::Any(any) => format!(
                "any[{}]: {verdict}",
                any.iter()
                    .map(|c| c.explain(facts))
                    .collect::<Vec<_>>()
                    .join("; "),
            ),
            Condition::Not(inner) => format!("not({}): {verdict}", inner.explain(facts)),
        }
    }

    /// The expressions of the `value` conditions, appended to `out` (checked
    /// when a component loads).
    pub fn value_exprs<'c>(&'c self, out: &mut Vec<&'c Expr>) {
        match self {
            Condition::Value { expr, .. } => out.push(expr),
            Condition::All(list) | Condition::Any(list) => {
                list.iter().for_each(|c| c.value_exprs(out));
            }
            Condition::Not(c) => c.value_exprs(out),
            _ => {}
        }
    }

    /// Every value this condition reads, as a path below its root
    /// (`infrastructureConfig.elasticFileSystem.enabled`, `ipFamilies`):
    /// the `value: {of: …}` expressions and the fields of the raw configs
    /// (`infrastructureConfig: {path: …}`), appended to `out`. What options.rs
    /// counts as honoured.
    pub fn read_paths(&self, out: &mut Vec<Vec<String>>) {
        match self {
            Condition::Value { expr, .. } => out.push(expr.path.clone()),
            Condition::Field { config, path, .. } => {
                let mut full = Vec::with_capacity(path.len() + 1);
                full.push(config.key().to_owned());
                full.extend(path.iter().cloned());
                out.push(full);
            }
            Condition::All(list) | Condition::Any(list) => {
                list.iter().for_each(|c| c.read_paths(out));
            }
            Condition::Not(c) => c.read_paths(out),
            _ => {}
        }
    }

    /// The extension feature gates `extensionFeatureGate` asks about,
    /// appended to `out` (checked against the declared ones at load).
    pub fn feature_gates<'c>(&'c self, out: &mut Vec<&'c str>) {
        match self {
            Condition::FeatureGate(name) => out.push(name),
            Condition::All(list) | Condition::Any(list) => {
                list.iter().for_each(|c| c.feature_gates(out));
            }
            Condition::Not(c) => c.feature_gates(out),
            _ => {}
        }
    }

    /// The ConfigMaps `configMapExists` asks about, appended to `out`.
    pub fn config_maps(&self, out: &mut Vec<(NamespaceRef, String)>) {
        match self {
            Condition::ConfigMapExists { name, namespace } => out.push((*namespace, name.clone())),
            Condition::All(list) | Condition::Any(list) => {
                list.iter().for_each(|c| c.config_maps(out));
            }
            Condition::Not(c) => c.config_maps(out),
            _ => {}
        }
    }

    /// The condition keys this condition uses, for documentation checks.
    pub fn keys(&self, out: &mut BTreeSet<&'static str>) {
        match self {
            Condition::Kubernetes(_) => {
                out.insert("kubernetes");
            }
            Condition::WorkerKubernetes { .. } => {
                out.insert("workerKubernetes");
            }
            Condition::Is(fact, _) => {
                out.insert(fact.key());
            }
            Condition::AnnotationTrue(_) => {
                out.insert("annotation");
            }
            Condition::FeatureGate(_) => {
                out.insert("extensionFeatureGate");
            }
            Condition::Kubelet(_) => {
                out.insert("kubelet");
            }
            Condition::ConfigMapExists { .. } => {
                out.insert("configMapExists");
            }
            Condition::Field { config, .. } => {
                out.insert(config.key());
            }
            Condition::Value { .. } => {
                out.insert("value");
            }
            Condition::All(list) => {
                out.insert("all");
                list.iter().for_each(|c| c.keys(out));
            }
            Condition::Any(list) => {
                out.insert("any");
                list.iter().for_each(|c| c.keys(out));
            }
            Condition::Not(c) => {
                out.insert("not");
                c.keys(out);
            }
        }
    }
}

impl fmt::Display for Fact {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.key())
    }
}

fn compile_key(key: &str, v: &Value, field: &str, place: Place) -> Result<Condition, Invalid> {
    let invalid = |message: String| Err((field.to_string(), message));
    if let Some(fact) = Fact::ALL.into_iter().find(|f| f.key() == key) {
        let Value::Bool(want) = v else {
            return invalid(format!("must be true or false, not {v}"));
        };
        if fact == Fact::WorkloadIdentity && place != Place::Component {
            return invalid(
                "is only known where the credentials are read (components); \
                 a rule can ask the provider sidecar for workload identity instead"
                    .into(),
            );
        }
        return Ok(Condition::Is(fact, *want));
    }
    if let Some(config) = Config::ALL.into_iter().find(|c| c.key() == key) {
        return compile_field(config, v, field);
    }
    if key == "extensionFeatureGate" {
        if !matches!(place, Place::Component | Place::Health) {
            return invalid(
                "is only known in control-plane components and their health checks; \
                 the webhooks' rules do not read the extension feature gates"
                    .into(),
            );
        }
        return match v {
            Value::String(name) if !name.is_empty() => Ok(Condition::FeatureGate(name.clone())),
            other => invalid(format!(
                "must name a gate of the profile's extensionFeatureGates, not {other}"
            )),
        };
    }
    if key == "value" {
        if place != Place::Component {
            return invalid(
                "is only known in components, where the values of the component language are"
                    .into(),
            );
        }
        return compile_value(v, field);
    }
    if matches!(key, "kubelet" | "configMapExists") && place != Place::Osc {
        return invalid(format!(
            "{key} is only known for an OperatingSystemConfig (rules of the operatingsystemconfig component)"
        ));
    }
    match key {
        "kubernetes" => Ok(Condition::Kubernetes(range(v, field)?)),
        "kubelet" => Ok(Condition::Kubelet(range(v, field)?)),
        "configMapExists" => {
            let map = object(v, field, &["name", "namespace"])?;
            let name = match map.get("name") {
                Some(Value::String(n)) if !n.is_empty() => n.clone(),
                _ => return Err((format!("{field}.name"), "must be a ConfigMap name".into())),
            };
            let namespace = match map.get("namespace") {
                None | Some(Value::Null) => NamespaceRef::Object,
                Some(v) => serde_json::from_value(v.clone()).map_err(|_| {
                    (
                        format!("{field}.namespace"),
                        format!("{v} is not one of object or technicalId"),
                    )
                })?,
            };
            Ok(Condition::ConfigMapExists { name, namespace })
        }
        "workerKubernetes" => {
            let map = object(v, field, &["pool", "range"])?;
            let pool = match map.get("pool") {
                None | Some(Value::Null) => None,
                Some(Value::String(p)) => Some(p.clone()),
                Some(other) => {
                    return Err((
                        format!("{field}.pool"),
                        format!("must be a string, not {other}"),
                    ));
                }
            };
            let range_value = map.get("range").unwrap_or(&Value::Null);
            let range = range(range_value, &format!("{field}.range"))?;
            Ok(Condition::WorkerKubernetes { pool, range })
        }
        "annotation" => match v {
            Value::String(key) if !key.is_empty() => Ok(Condition::AnnotationTrue(key.clone())),
            Value::String(_) => invalid("must not be empty".into()),
            other => invalid(format!("must be an annotation key, not {other}")),
        },
        "all" | "any" => {
            let Value::Array(list) = v else {
                return invalid(format!("must be a list of conditions, not {v}"));
            };
            if list.is_empty() {
                return invalid("must not be empty".into());
            }
            let compiled = list
                .iter()
                .enumerate()
                .map(|(i, c)| Condition::compile(c, &format!("{field}[{i}]"), place))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(if key == "all" {
                Condition::All(compiled)
            } else {
                Condition::Any(compiled)
            })
        }
        "not" => Ok(Condition::Not(Box::new(Condition::compile(
            v, field, place,
        )?))),
        other => invalid(format!("unknown {other:?}")),
    }
}

fn compile_value(v: &Value, field: &str) -> Result<Condition, Invalid> {
    let map = object(
        v,
        field,
        &["of", "equals", "notFalse", "notEmpty", "contains"],
    )?;
    let expr = match map.get("of") {
        Some(Value::String(text)) => Expr::parse(text).map_err(|e| (format!("{field}.of"), e))?,
        _ => {
            return Err((
                format!("{field}.of"),
                "must be an expression, e.g. controlPlaneConfig.storage.managedDefaultClass".into(),
            ));
        }
    };
    let tests: Vec<&String> = map.keys().filter(|k| *k != "of").collect();
    let test = match (tests.as_slice(), tests.first().and_then(|k| map.get(*k))) {
        ([k], Some(v)) if k.as_str() == "equals" => ValueTest::Equals(v.clone()),
        ([k], Some(v)) if k.as_str() == "contains" => ValueTest::Contains(v.clone()),
        ([k], Some(Value::Bool(true))) if k.as_str() == "notFalse" => ValueTest::NotFalse,
        ([k], Some(Value::Bool(b))) if k.as_str() == "notEmpty" => ValueTest::NotEmpty(*b),
        _ => {
            return Err((
                field.to_string(),
                "needs `of` and exactly one of `equals: <value>`, `notFalse: true`, \
                 `notEmpty: true|false` or `contains: <item>`"
                    .into(),
            ));
        }
    };
    Ok(Condition::Value { expr, test })
}

fn range(v: &Value, field: &str) -> Result<VersionRange, Invalid> {
    let Value::String(text) = v else {
        return Err((
            field.to_string(),
            format!("must be a version range like \">= 1.31, < 1.34\", not {v}"),
        ));
    };
    VersionRange::parse(text).map_err(|e| {
        (
            field.to_string(),
            format!("invalid version range {text:?}: {e}"),
        )
    })
}

fn object<'v>(v: &'v Value, field: &str, keys: &[&str]) -> Result<&'v Map<String, Value>, Invalid> {
    let Value::Object(map) = v else {
        return Err((field.to_string(), format!("must be a map, not {v}")));
    };
    if let Some(unknown) = map.keys().find(|k| !keys.contains(&k.as_str())) {
        return Err((
            format!("{field}.{unknown}"),
            format!("unknown {unknown:?} (known: {})", keys.join(", ")),
        ));
    }
    Ok(map)
}

fn compile_field(config: Config, v: &Value, field: &str) -> Result<Condition, Invalid> {
    let map = object(v, field, &["path", "equals", "notFalse", "present"])?;
    if let Some(present) = map.get("present") {
        let Value::Bool(want) = present else {
            return Err((
                format!("{field}.present"),
                format!("must be true or false, not {present}"),
            ));
        };
        if map.len() != 1 {
            return Err((field.to_string(), "`present` stands alone (no path)".into()));
        }
        return Ok(Condition::Field {
            config,
            path: Vec::new(),
            test: FieldTest::Present(*want),
        });
    }
    let path_text = match map.get("path") {
        Some(Value::String(p)) => p.clone(),
        _ => {
            return Err((
                format!("{field}.path"),
                "must be a dotted field path".into(),
            ));
        }
    };
    let path: Vec<String> = path_text.split('.').map(str::to_string).collect();
    if path.iter().any(String::is_empty) {
        return Err((
            format!("{field}.path"),
            format!("{path_text:?} is not a dotted field path"),
        ));
    }
    let test = match (map.get("equals"), map.get("notFalse")) {
        (Some(v), None) => FieldTest::Equals(v.clone()),
        (None, Some(Value::Bool(true))) => FieldTest::NotFalse,
        _ => {
            return Err((
                field.to_string(),
                "needs exactly one of `equals: <value>` or `notFalse: true`".into(),
            ));
        }
    };
    Ok(Condition::Field { config, path, test })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn compile(v: Value) -> Result<Condition, Invalid> {
        Condition::compile(&v, "when", Place::Rule)
    }

    #[test]
    fn errors_name_the_field() {
        let (field, message) =
            compile(json!({"any": [{"ipv6": true}, {"not": {"kubernetes": "1.2"}}]})).unwrap_err();
        assert_eq!(field, "when.any[1].not.kubernetes");
        assert!(
            message.contains("invalid version range \"1.2\""),
            "{message}"
        );
        let (field, message) = compile(json!({"dualstack": true})).unwrap_err();
        assert_eq!(field, "when.dualstack");
        assert!(
            message.starts_with("unknown \"dualstack\" (known: kubernetes"),
            "{message}"
        );
        let (field, _) = compile(json!({"workloadIdentity": true})).unwrap_err();
        assert_eq!(field, "when.workloadIdentity");
        assert!(
            Condition::compile(&json!({"workloadIdentity": true}), "when", Place::Component)
                .is_ok()
        );
        let (field, message) =
            compile(json!({"value": {"of": "x", "notEmpty": true}})).unwrap_err();
        assert_eq!(field, "when.value");
        assert!(message.contains("only known in components"), "{message}");
        let component = |v: Value| Condition::compile(&v, "when", Place::Component);
        assert!(component(json!({"value": {"of": "a.b | b64", "notEmpty": false}})).is_ok());
        let (field, _) = component(json!({"value": {"of": "a..b", "notEmpty": true}})).unwrap_err();
        assert_eq!(field, "when.value.of");
        let (field, message) =
            component(json!({"value": {"of": "a", "notEmpty": true, "equals": 1}})).unwrap_err();
        assert_eq!(field, "when.value");
        assert!(message.contains("exactly one"), "{message}");
        let (_, message) = compile(json!("dualStack")).unwrap_err();
        assert!(
            message.starts_with("must be a map of conditions"),
            "{message}"
        );
        let (field, _) = compile(json!({"ipv6": "yes"})).unwrap_err();
        assert_eq!(field, "when.ipv6");
        let (field, _) =
            compile(json!({"infrastructureConfig": {"path": "a..b", "equals": 1}})).unwrap_err();
        assert_eq!(field, "when.infrastructureConfig.path");
    }

    #[test]
    fn extension_feature_gates_are_asked_where_they_are_known() {
        use crate::profile::featuregates::{FeatureGate, FeatureGates, GateSettings};
        let health = Condition::compile(
            &json!({"not": {"extensionFeatureGate": "G"}}),
            "when",
            Place::Health,
        )
        .unwrap();
        let mut asked = Vec::new();
        health.feature_gates(&mut asked);
        assert_eq!(asked, ["G"]);
        let (field, message) = compile(json!({"extensionFeatureGate": "G"})).unwrap_err();
        assert_eq!(field, "when.extensionFeatureGate");
        assert!(
            message.contains("only known in control-plane components"),
            "{message}"
        );
        let (field, _) = Condition::compile(
            &json!({"extensionFeatureGate": true}),
            "when",
            Place::Component,
        )
        .unwrap_err();
        assert_eq!(field, "when.extensionFeatureGate");
        let (_, message) = Condition::compile(
            &json!({"value": {"of": "x", "equals": 1}}),
            "when",
            Place::Health,
        )
        .unwrap_err();
        assert!(message.contains("only known in components"), "{message}");
        let shoot = ShootContext::new("ns", semver::Version::new(1, 33, 0));
        let declared = [FeatureGate {
            name: "G".into(),
            default: false,
            description: "g".into(),
        }];
        let eval = |set: &[(&str, bool)]| {
            let set: GateSettings = set.iter().map(|(n, on)| (n.to_string(), *on)).collect();
            let gates = FeatureGates::resolve(&declared, &set);
            let facts = Facts {
                feature_gates: Some(&gates),
                ..Facts::of_shoot(&shoot)
            };
            (health.eval(&facts).unwrap(), health.explain(&facts))
        };
        assert!(eval(&[]).0, "default off: not(off)");
        let (on, why) = eval(&[("G", true)]);
        assert!(!on);
        assert_eq!(why, "not(extension feature gate G is on: yes): no");
        // where the gates are unknown, asking is an error, never a guess
        let unknown = health.eval(&Facts::of_shoot(&shoot)).unwrap_err();
        assert_eq!(unknown, ConditionError::Unknown("extensionFeatureGate"));
    }

    #[test]
    fn several_keys_are_all_of_them_in_a_fixed_order() {
        let c =
            compile(json!({"annotation": "a", "kubernetes": ">= 1.31", "ipv6": false})).unwrap();
        let Condition::All(parts) = c else {
            panic!("{c:?}")
        };
        assert!(matches!(parts[0], Condition::Kubernetes(_)));
        assert!(matches!(parts[1], Condition::Is(Fact::Ipv6, false)));
        assert!(matches!(parts[2], Condition::AnnotationTrue(_)));
    }
}
