//! The pure engine: a profile applied to one object with one shoot context.
//!
//! Two steps, so that the engine never does I/O:
//! 1. [`Engine::needs`] — which Secrets/ConfigMaps the matching rules read;
//! 2. [`Engine::mutate`] — the mutated object, given those objects.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use json_patch::Patch;
use serde_json::Value;

use super::apply::apply;
use super::context::{ApplyContext, Objects};
use super::draft::Draft;
use super::etcd::{self, EtcdConfig};
use super::osc::{self, OscContext, OscError};
use super::place::ListAt;
use super::shape::ApplyError;
use crate::admission::Denial;
use crate::decode::{ObjectReach, footprint};
use crate::gardener::{ObjectKind, ShootContext};
use crate::profile::osc::NamespaceRef;
use crate::profile::{Action, Facts, FindOptions, ImageVector, Place, Profile, Rule, Target};
use crate::providers::{SecretContext, ensure_cloudprovider_secret};

/// What the rules read besides the object and the shoot.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Need {
    /// A Secret or ConfigMap; a missing one is a fact when `optional`, else
    /// it denies the request.
    Object {
        kind: ObjectKind,
        namespace: NamespaceRef,
        name: String,
        optional: bool,
    },
    /// The Secrets of all namespaces labelled `key=value`.
    LabelledSecrets { key: String, value: String },
    /// A cluster-scoped BackupBucket (missing: denied).
    BackupBucket { name: String },
}

/// What OperatingSystemConfig conditions know besides the shoot.
struct OscFacts {
    kubelet: semver::Version,
    config_maps: BTreeSet<(NamespaceRef, String)>,
}

impl OscFacts {
    fn of(object: &Value, shoot: &ShootContext, objects: &Objects) -> Self {
        let pool = object
            .get("metadata")
            .and_then(|m| m.get("labels"))
            .and_then(|l| l.get(osc::POOL_LABEL))
            .and_then(Value::as_str);
        OscFacts {
            kubelet: match pool {
                Some(pool) => shoot.worker_version(pool).clone(),
                None => shoot.kubernetes_version().clone(),
            },
            config_maps: objects
                .keys()
                .filter(|(kind, _, _)| *kind == ObjectKind::ConfigMap)
                .map(|(_, ns, name)| (*ns, name.clone()))
                .collect(),
        }
    }

    fn facts<'a>(&'a self, shoot: &'a ShootContext) -> Facts<'a> {
        Facts {
            kubelet: Some(&self.kubelet),
            config_maps: Some(&self.config_maps),
            ..Facts::of_shoot(shoot)
        }
    }
}

/// A provider profile ready to mutate objects. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Engine {
    profile: Arc<Profile>,
    /// The image of each name the profile uses that the vector has.
    images: Arc<BTreeMap<String, String>>,
    sidecar_image: Option<String>,
    /// The extension's `etcd.storage` configuration (`--etcd-storage-*`).
    etcd: EtcdConfig,
    /// What of an object the profile reads or writes.
    reach: Arc<ObjectReach>,
    /// Kubelet configurations encoded earlier (shared by clones).
    kubelet_memo: Arc<crate::mutation::osc::memo::KubeletMemo>,
}

/// Whether a rule applied, and why, for `--explain`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleTrace {
    pub rule: String,
    pub matched: bool,
    /// The condition's evaluation, or "no condition".
    pub reason: String,
}

/// The result of a mutation: the object as sent, borrowed, with the places
/// the rules changed.
#[derive(Debug, Clone, PartialEq)]
pub struct Mutation<'a> {
    draft: Draft<'a>,
    /// Names of the rules that applied, in order.
    pub matched: Vec<String>,
}

impl Mutation<'_> {
    /// The mutated object.
    pub fn object(&self) -> Value {
        self.draft.to_object()
    }

    /// The minimal JSONPatch from the object as sent to the mutated one: the
    /// same as `crate::patch::diff(object, &self.object())`, computed on the
    /// changed places only. Empty when the rules changed nothing.
    pub fn patch(&self) -> Patch {
        self.draft.patch()
    }
}

impl Engine {
    /// The engine with the images of the profile's image vector (see
    /// [`Engine::with_image_vector`] for another).
    pub fn new(profile: Profile) -> Self {
        Engine {
            reach: Arc::new(footprint(&profile)),
            images: Arc::new(resolve_images(&profile, &profile.images)),
            profile: Arc::new(profile),
            sidecar_image: None,
            etcd: EtcdConfig::default(),
            kubelet_memo: Arc::default(),
        }
    }

    /// Remember encoded kubelet configurations in up to `bytes` (default
    /// [`crate::mutation::osc::memo::DEFAULT_BYTES`]; 0: none, every OSC
    /// decodes and encodes its kubelet configuration).
    pub fn with_kubelet_memo(mut self, bytes: usize) -> Self {
        self.kubelet_memo = Arc::new(crate::mutation::osc::memo::KubeletMemo::new(bytes));
        self
    }

    /// Resolve the profile's image names in `vector` instead (the built-in one
    /// with `IMAGEVECTOR_OVERWRITE` merged, say).
    pub fn with_image_vector(mut self, vector: &ImageVector) -> Self {
        self.images = Arc::new(resolve_images(&self.profile, vector));
        self
    }

    /// The image names the rules use that neither the vector nor the sidecar
    /// override resolves; `serve` refuses to start with any.
    pub fn unresolved_images(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (_, rules) in &self.profile.components {
            for action in rules.iter().flat_map(|r| &r.actions) {
                if let Action::ProviderSidecar(s) = action
                    && self.sidecar_image.is_none()
                    && !self.images.contains_key(&s.image)
                    && !out.contains(&s.image)
                {
                    out.push(s.image.clone());
                }
            }
        }
        out
    }

    /// Use `image` for every `providerSidecar` instead of the profile's.
    pub fn with_sidecar_image(mut self, image: Option<String>) -> Self {
        self.sidecar_image = image;
        self
    }

    /// Use the extension's Etcd storage configuration (`--etcd-storage-class`,
    /// `--etcd-storage-capacity`); unset values take the profile's chart
    /// defaults.
    pub fn with_etcd_config(mut self, etcd: EtcdConfig) -> Self {
        self.etcd = etcd;
        self
    }

    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    /// The part of each object the rules read or write (and dispatch and the
    /// shape check read): decoding only this part gives the same patch.
    pub fn reach(&self) -> &ObjectReach {
        &self.reach
    }

    /// The rules of the target's component that apply to this shoot, in
    /// profile order. A condition that cannot be evaluated (a shoot field of
    /// the wrong shape) is a `Forbidden` denial naming the field.
    fn matching<'p>(
        &'p self,
        target: &Target,
        facts: &Facts<'_>,
    ) -> Result<impl Iterator<Item = &'p Rule> + 'p, Denial> {
        let mut matched = Vec::new();
        for rule in self.profile.rules(target.component) {
            let applies = match &rule.when {
                None => true,
                Some(c) => c
                    .eval(facts)
                    .map_err(|e| Denial::Forbidden(e.to_string()))?,
            };
            if applies {
                matched.push(rule);
            }
        }
        Ok(matched.into_iter())
    }

    /// The Secrets and ConfigMaps that the rules matching this shoot read;
    /// sorted and without duplicates. For an OperatingSystemConfig, every
    /// ConfigMap its rules may read, optional (its conditions ask whether
    /// they exist).
    pub fn needs(
        &self,
        target: &Target,
        object: &Value,
        shoot: &ShootContext,
    ) -> Result<Vec<Need>, Denial> {
        if target.is_osc() {
            return Ok(osc::config_maps_read(self.profile.rules(target.component))
                .into_iter()
                .map(|(namespace, name)| Need::Object {
                    kind: ObjectKind::ConfigMap,
                    namespace,
                    name,
                    optional: true,
                })
                .collect());
        }
        let mut out = Vec::new();
        let need = |kind, name: &str| Need::Object {
            kind,
            namespace: NamespaceRef::Object,
            name: name.to_string(),
            optional: false,
        };
        for rule in self.matching(target, &Facts::of_shoot(shoot))? {
            for action in &rule.actions {
                let wanted = match action {
                    Action::SecretChecksum(n) => Some(need(ObjectKind::Secret, &n.name)),
                    Action::ConfigMapChecksum(n) => Some(need(ObjectKind::ConfigMap, &n.name)),
                    Action::ProviderSidecar(s) if s.workload_identity => {
                        Some(need(ObjectKind::Secret, "cloudprovider"))
                    }
                    Action::CloudproviderSecret(_) => self
                        .profile
                        .code
                        .and_then(|code| code.0.cloudprovider_secret_reads(object))
                        .map(|(key, value)| Need::LabelledSecrets {
                            key: key.into(),
                            value: value.into(),
                        }),
                    Action::EtcdStorage(e) => etcd::backup_bucket_name(e, object)
                        .map(|name| Need::BackupBucket { name: name.into() }),
                    _ => None,
                };
                out.extend(wanted);
            }
        }
        out.sort();
        out.dedup();
        Ok(out)
    }

    /// Apply the matching rules, in profile order, to a draft of `object`.
    /// `objects` must hold what [`Engine::needs`] listed; a missing one is a
    /// `Forbidden` denial naming it, a malformed object a `BadObject`.
    pub fn mutate<'a>(
        &self,
        target: &Target,
        object: &'a Value,
        shoot: &ShootContext,
        objects: &Objects,
    ) -> Result<Mutation<'a>, Denial> {
        check_shape(target, object)?;
        if target.is_osc() {
            return self.mutate_osc(target, object, shoot, objects);
        }
        if target.is_secret() || target.is_etcd() {
            return self.mutate_seed_object(target, object, shoot, objects);
        }
        let namespace = object
            .get("metadata")
            .and_then(|m| m.get("namespace"))
            .and_then(Value::as_str)
            .unwrap_or(&shoot.cluster_name);
        let ctx = ApplyContext {
            namespace,
            region: shoot.region(),
            objects,
            images: &self.images,
            sidecar_image: self.sidecar_image.as_deref(),
            self_hosted: shoot.is_self_hosted(),
        };
        let mut draft = Draft::new(object);
        let mut matched = Vec::new();
        for rule in self.matching(target, &Facts::of_shoot(shoot))? {
            matched.push(rule.name.clone());
            let container = rule
                .container
                .as_deref()
                .or(target.container)
                .unwrap_or(target.component);
            for action in &rule.actions {
                apply(&mut draft, action, container, &ctx).map_err(|e| {
                    apply_denial(
                        e,
                        |field| Denial::BadObject(format!("{field} (rule \"{}\")", rule.name)),
                        Some(namespace),
                        Some(&rule.name),
                    )
                })?;
            }
        }
        Ok(Mutation { draft, matched })
    }

    /// An OperatingSystemConfig: Gardener's `reconcile` path (`osc::apply`)
    /// with the matching rules; the new units and files go into the draft.
    fn mutate_osc<'a>(
        &self,
        target: &Target,
        object: &'a Value,
        shoot: &ShootContext,
        objects: &Objects,
    ) -> Result<Mutation<'a>, Denial> {
        let mut draft = Draft::new(object);
        // A profile without the component leaves OSCs alone.
        if !self.profile.has_component(target.component) {
            return Ok(Mutation {
                draft,
                matched: Vec::new(),
            });
        }
        let osc_facts = OscFacts::of(object, shoot, objects);
        let facts = osc_facts.facts(shoot);
        let matched: Vec<&Rule> = self.matching(target, &facts)?.collect();
        let ctx = OscContext {
            shoot,
            objects,
            kubelet_library: self.profile.kubelet_library,
            memo: &self.kubelet_memo,
        };
        let change = osc::apply(object, &matched, &ctx).map_err(|e| match e {
            OscError::BadObject(m) => Denial::BadObject(m),
            OscError::Failed(m) => Denial::Forbidden(m),
            OscError::Exhausted(e) => Denial::Exhausted(e),
        })?;
        for (place, new) in [(Place::Units, change.units), (Place::Files, change.files)] {
            if let Some(items) = new {
                draft
                    .edit_list(ListAt::Place(place), true, |l| {
                        *l = std::borrow::Cow::Owned(items);
                    })
                    .map_err(|e| apply_denial(e, Denial::BadObject, None, None))?;
            }
        }
        Ok(Mutation {
            draft,
            matched: matched.iter().map(|r| r.name.clone()).collect(),
        })
    }

    /// The `cloudprovider` Secret (its `data`) or an Etcd (its `spec`): the
    /// provider's built-in ensurer of each matching rule, in order.
    fn mutate_seed_object<'a>(
        &self,
        target: &Target,
        object: &'a Value,
        shoot: &ShootContext,
        objects: &Objects,
    ) -> Result<Mutation<'a>, Denial> {
        let meta = |k: &str| {
            object
                .get("metadata")
                .and_then(|m| m.get(k))
                .and_then(Value::as_str)
                .unwrap_or_default()
        };
        let deny = |message: String| {
            if message.starts_with("field ") {
                Denial::BadObject(message)
            } else {
                Denial::Forbidden(message)
            }
        };
        let mut draft = Draft::new(object);
        let mut matched = Vec::new();
        let place = if target.is_secret() {
            Place::Data
        } else {
            Place::EtcdSpec
        };
        for rule in self.matching(target, &Facts::of_shoot(shoot))? {
            matched.push(rule.name.clone());
            for action in &rule.actions {
                let current = draft.to_object();
                let new = match action {
                    Action::CloudproviderSecret(_) => {
                        let ctx = SecretContext {
                            shoot,
                            labelled_secrets: &objects.labelled,
                        };
                        // A profile with this action has code (checked at load).
                        match self.profile.code {
                            Some(code) => {
                                ensure_cloudprovider_secret(code.0, &current, &ctx).map_err(deny)?
                            }
                            None => None,
                        }
                    }
                    Action::EtcdStorage(e) => {
                        let ctx = etcd::EtcdContext {
                            config: &self.etcd,
                            old: objects.old.as_ref(),
                            backup_bucket: objects.backup_bucket.as_ref(),
                        };
                        etcd::ensure(e, meta("name"), &current, &ctx).map_err(deny)?
                    }
                    _ => None,
                };
                if let Some(new) = new {
                    *draft
                        .get_mut(place)
                        .map_err(|e| apply_denial(e, deny, None, None))? = Value::Object(new);
                }
            }
        }
        Ok(Mutation { draft, matched })
    }

    /// Every rule of the component with whether it applies to this shoot and
    /// why (the evaluated condition), for `scion mutate --explain`.
    pub fn explain(&self, target: &Target, shoot: &ShootContext) -> Vec<RuleTrace> {
        self.explain_object(target, &Value::Null, shoot, &Objects::new())
    }

    /// [`Engine::explain`] for one object and the objects read for it (an
    /// OperatingSystemConfig's conditions know its pool's kubelet version and
    /// the ConfigMaps that exist).
    pub fn explain_object(
        &self,
        target: &Target,
        object: &Value,
        shoot: &ShootContext,
        objects: &Objects,
    ) -> Vec<RuleTrace> {
        let osc_facts = OscFacts::of(object, shoot, objects);
        let facts = if target.is_osc() {
            osc_facts.facts(shoot)
        } else {
            Facts::of_shoot(shoot)
        };
        self.profile
            .rules(target.component)
            .iter()
            .map(|rule| RuleTrace {
                rule: rule.name.clone(),
                matched: rule
                    .when
                    .as_ref()
                    .is_none_or(|c| c.eval(&facts).unwrap_or(false)),
                reason: rule
                    .when
                    .as_ref()
                    .map_or_else(|| "no condition".to_string(), |c| c.explain(&facts)),
            })
            .collect()
    }
}

/// The object must decode as its kind where scion reads it: a map with map
/// metadata, and for a Deployment a pod template whose containers are named maps.
fn check_shape(target: &Target, object: &Value) -> Result<(), Denial> {
    let bad = Denial::BadObject;
    if !object.is_object() {
        return Err(bad("the object is not a JSON object".into()));
    }
    if let Some(meta) = object.get("metadata")
        && !meta.is_object()
    {
        return Err(bad("field metadata must be a map".into()));
    }
    if !target.is_deployment() {
        return match object.get("spec") {
            None | Some(Value::Object(_)) => Ok(()),
            _ => Err(bad("field spec must be a map".into())),
        };
    }
    // The maps down to the containers: absent or null reads as Go's zero
    // value (a rule that writes there creates them, as Gardener's ensurers
    // do on the decoded struct); any other type is the wrong shape.
    let (list, maps) = Place::Containers.path().split_last().unwrap_or((&"", &[]));
    let mut node = object;
    for (depth, key) in maps.iter().enumerate() {
        match node.get(key) {
            None | Some(Value::Null) => return Ok(()),
            Some(next @ Value::Object(_)) => node = next,
            Some(_) => {
                return Err(bad(format!(
                    "field {} must be a map",
                    maps[..=depth].join(".")
                )));
            }
        }
    }
    let Some(containers) = node.get(list) else {
        return Ok(());
    };
    let containers = containers
        .as_array()
        .ok_or_else(|| bad("field spec.template.spec.containers must be a list".into()))?;
    for (i, c) in containers.iter().enumerate() {
        if c.get("name").and_then(Value::as_str).is_none() {
            return Err(bad(format!(
                "field spec.template.spec.containers[{i}] must be a map with a string name"
            )));
        }
        for field in ["command", "args"] {
            match c.get(field) {
                None | Some(Value::Null) => {}
                Some(Value::Array(items)) if items.iter().all(Value::is_string) => {}
                Some(_) => {
                    return Err(bad(format!(
                        "field spec.template.spec.containers[{i}].{field} must be a list of strings"
                    )));
                }
            }
        }
    }
    Ok(())
}

/// The image of every sidecar name of the profile the vector has. The
/// sidecars carry no version constraint: the lookup is without versions.
fn resolve_images(profile: &Profile, vector: &ImageVector) -> BTreeMap<String, String> {
    let mut images = BTreeMap::new();
    for (_, rules) in &profile.components {
        for action in rules.iter().flat_map(|r| &r.actions) {
            if let Action::ProviderSidecar(s) = action
                && let Ok(image) = vector.find(&s.image, &FindOptions::default())
            {
                images.insert(s.image.clone(), image);
            }
        }
    }
    images
}

/// The denial of an action that could not be applied, worded once for every
/// target: `shape` words a shape error from "field P must be E"; a missing
/// object is named within `namespace` when given; a missing image names the
/// `rule` that wants it when given.
fn apply_denial(
    error: ApplyError,
    shape: impl FnOnce(String) -> Denial,
    namespace: Option<&str>,
    rule: Option<&str>,
) -> Denial {
    match error {
        ApplyError::Shape { path, expected } => shape(format!("field {path} must be {expected}")),
        ApplyError::Missing { kind, name } => {
            let name = match namespace {
                Some(namespace) => format!("{namespace}/{name}"),
                None => name,
            };
            Denial::Forbidden(format!("could not get {} '{name}': not found", kind.word()))
        }
        ApplyError::NoImage(name) => Denial::Forbidden(match rule {
            Some(rule) => format!("image {name:?} (rule \"{rule}\") is not in the image vector"),
            None => format!("image {name:?} is not in the image vector"),
        }),
    }
}
