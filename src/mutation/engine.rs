//! The pure engine: a profile applied to one object with one shoot context.
//!
//! Two steps, so that the engine never does I/O:
//! 1. [`Engine::needs`] — which Secrets/ConfigMaps the matching rules read;
//! 2. [`Engine::mutate`] — the mutated object, given those objects.

use std::collections::BTreeMap;
use std::sync::Arc;

use json_patch::Patch;
use serde_json::Value;

use super::apply::apply;
use super::context::{ApplyContext, Objects};
use super::draft::Draft;
use super::shape::ApplyError;
use crate::admission::Denial;
use crate::decode::{ObjectReach, footprint};
use crate::gardener::{ObjectKind, ShootContext};
use crate::profile::{Action, Facts, FindOptions, ImageVector, Place, Profile, Rule, Target};

/// A provider profile ready to mutate objects. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Engine {
    profile: Arc<Profile>,
    /// The image of each name the profile uses that the vector has.
    images: Arc<BTreeMap<String, String>>,
    sidecar_image: Option<String>,
    /// What of an object the profile reads or writes.
    reach: Arc<ObjectReach>,
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
    /// The engine with the images of the profile's provider's built-in image
    /// vector (none for a provider scion has no vector for; see
    /// [`Engine::with_image_vector`]).
    pub fn new(profile: Profile) -> Self {
        let vector = ImageVector::builtin(&profile.provider);
        Engine {
            reach: Arc::new(footprint(&profile)),
            images: Arc::new(resolve_images(&profile, &vector)),
            profile: Arc::new(profile),
            sidecar_image: None,
        }
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
        shoot: &ShootContext,
    ) -> Result<impl Iterator<Item = &'p Rule> + 'p, Denial> {
        let facts = Facts::of_shoot(shoot);
        let mut matched = Vec::new();
        for rule in self.profile.rules(target.component) {
            let applies = match &rule.when {
                None => true,
                Some(c) => c
                    .eval(&facts)
                    .map_err(|e| Denial::Forbidden(e.to_string()))?,
            };
            if applies {
                matched.push(rule);
            }
        }
        Ok(matched.into_iter())
    }

    /// The Secrets and ConfigMaps (in the object's namespace) that the rules
    /// matching this shoot read; sorted and without duplicates.
    pub fn needs(
        &self,
        target: &Target,
        shoot: &ShootContext,
    ) -> Result<Vec<(ObjectKind, String)>, Denial> {
        let mut out = Vec::new();
        for rule in self.matching(target, shoot)? {
            for action in &rule.actions {
                let need = match action {
                    Action::SecretChecksum(n) => Some((ObjectKind::Secret, n.name.clone())),
                    Action::ConfigMapChecksum(n) => Some((ObjectKind::ConfigMap, n.name.clone())),
                    Action::ProviderSidecar(s) if s.workload_identity => {
                        Some((ObjectKind::Secret, "cloudprovider".to_string()))
                    }
                    _ => None,
                };
                out.extend(need);
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
        };
        let mut draft = Draft::new(object);
        let mut matched = Vec::new();
        for rule in self.matching(target, shoot)? {
            matched.push(rule.name.clone());
            let container = rule
                .container
                .as_deref()
                .or(target.container)
                .unwrap_or(target.component);
            for action in &rule.actions {
                apply(&mut draft, action, container, &ctx).map_err(|e| match e {
                    ApplyError::Shape { path, expected } => Denial::BadObject(format!(
                        "{} {namespace}/{}: field {path} must be {expected} (rule \"{}\")",
                        target.kind, target.name, rule.name
                    )),
                    ApplyError::Missing { kind, name } => Denial::Forbidden(format!(
                        "could not get {} '{namespace}/{name}': not found",
                        kind.word()
                    )),
                    ApplyError::NoImage(name) => Denial::Forbidden(format!(
                        "image {name:?} (rule \"{}\") is not in the image vector",
                        rule.name
                    )),
                })?;
            }
        }
        Ok(Mutation { draft, matched })
    }

    /// Every rule of the component with whether it applies to this shoot and
    /// why (the evaluated condition), for `scion mutate --explain`.
    pub fn explain(&self, target: &Target, shoot: &ShootContext) -> Vec<RuleTrace> {
        self.profile
            .rules(target.component)
            .iter()
            .map(|rule| RuleTrace {
                rule: rule.name.clone(),
                matched: rule
                    .when
                    .as_ref()
                    .is_none_or(|c| c.eval(&Facts::of_shoot(shoot)).unwrap_or(false)),
                reason: rule.when.as_ref().map_or_else(
                    || "no condition".to_string(),
                    |c| c.explain(&Facts::of_shoot(shoot)),
                ),
            })
            .collect()
    }
}

/// The object must decode as its kind where scion reads it: a map with map
/// metadata, and for a Deployment a pod template whose containers are named maps.
fn check_shape(target: &Target, object: &Value) -> Result<(), Denial> {
    let bad = |what: String| Denial::BadObject(format!("{} {}: {what}", target.kind, target.name));
    if !object.is_object() {
        return Err(bad("the object is not a JSON object".into()));
    }
    if let Some(meta) = object.get("metadata")
        && !meta.is_object()
    {
        return Err(bad("field metadata must be a map".into()));
    }
    if target.is_vpa() {
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
