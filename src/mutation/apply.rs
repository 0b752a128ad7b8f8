//! Applying one action to a raw object. Only the paths an action names are
//! read or written; everything else in the object is left as sent.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::{Map, Value};

use super::primitives::{
    ensure_flag, ensure_list_item, ensure_named, remove_flag, remove_list_item, remove_named,
    replace_flag,
};
use super::sidecar::{sidecar_container, wants_workload_identity};
use crate::checksum::{configmap_checksum, secret_checksum};
use crate::profile::Action;
use crate::state::{ObjectData, ObjectKind};

pub use super::context::ApplyContext;

/// The Secrets and ConfigMaps a mutation may read, by kind and name (all in the
/// object's namespace).
pub type Objects = BTreeMap<(ObjectKind, String), ObjectData>;

/// Why an action could not be applied.
#[derive(Debug, Clone, PartialEq)]
pub enum ApplyError {
    /// The object has the wrong shape at `path` (→ 400).
    Shape {
        path: String,
        expected: &'static str,
    },
    /// A needed object is missing (→ 403).
    Missing { kind: ObjectKind, name: String },
}

type Res<T> = Result<T, ApplyError>;

fn shape(path: impl fmt::Display, expected: &'static str) -> ApplyError {
    ApplyError::Shape {
        path: path.to_string(),
        expected,
    }
}

/// The path of a container for error messages, formatted only on an error.
#[derive(Clone, Copy)]
struct ContainerPath<'a>(&'a str);

impl fmt::Display for ContainerPath<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "spec.template.spec.containers[{}]", self.0)
    }
}

/// The map at `key` of `obj`, created empty if absent (`create`), else `None`.
fn child_map<'v>(
    obj: &'v mut Value,
    key: &str,
    path: &str,
    create: bool,
) -> Res<Option<&'v mut Map<String, Value>>> {
    let map = obj.as_object_mut().ok_or_else(|| shape(path, "a map"))?;
    match map.get(key) {
        None | Some(Value::Null) if !create => return Ok(None),
        None | Some(Value::Null) => {
            map.insert(key.to_string(), Value::Object(Map::new()));
        }
        Some(Value::Object(_)) => {}
        Some(_) => return Err(shape(format!("{path}.{key}"), "a map")),
    }
    Ok(map.get_mut(key).and_then(Value::as_object_mut))
}

/// The array at `key` of `map`, created if absent (`create`), else `None`.
fn child_array<'v>(
    map: &'v mut Map<String, Value>,
    key: &str,
    path: impl fmt::Display,
    create: bool,
) -> Res<Option<&'v mut Vec<Value>>> {
    match map.get(key) {
        None | Some(Value::Null) if !create => return Ok(None),
        None | Some(Value::Null) => {
            map.insert(key.to_string(), Value::Array(Vec::new()));
        }
        Some(Value::Array(_)) => {}
        Some(_) => return Err(shape(format!("{path}.{key}"), "a list")),
    }
    match map.get_mut(key) {
        Some(Value::Array(a)) => Ok(Some(a)),
        _ => Err(shape(format!("{path}.{key}"), "a list")),
    }
}

/// Follow `spec.template` (creating it only if `create`).
fn pod_template(obj: &mut Value, create: bool) -> Res<Option<&mut Value>> {
    let Some(spec) = child_map(obj, "spec", "", create)? else {
        return Ok(None);
    };
    if !spec.contains_key("template") {
        if !create {
            return Ok(None);
        }
        spec.insert("template".into(), Value::Object(Map::new()));
    }
    let template = spec
        .get_mut("template")
        .ok_or_else(|| shape("spec.template", "a map"))?;
    if !template.is_object() {
        return Err(shape("spec.template", "a map"));
    }
    Ok(Some(template))
}

fn pod_spec(obj: &mut Value, create: bool) -> Res<Option<&mut Map<String, Value>>> {
    match pod_template(obj, create)? {
        Some(t) => child_map(t, "spec", "spec.template", create),
        None => Ok(None),
    }
}

fn template_meta<'v>(
    obj: &'v mut Value,
    key: &str,
    create: bool,
) -> Res<Option<&'v mut Map<String, Value>>> {
    let Some(t) = pod_template(obj, create)? else {
        return Ok(None);
    };
    let Some(meta) = child_map(t, "metadata", "spec.template", create)? else {
        return Ok(None);
    };
    let path = "spec.template.metadata";
    match meta.get(key) {
        None | Some(Value::Null) if !create => return Ok(None),
        None | Some(Value::Null) => {
            meta.insert(key.to_string(), Value::Object(Map::new()));
        }
        Some(Value::Object(_)) => {}
        Some(_) => return Err(shape(format!("{path}.{key}"), "a map")),
    }
    Ok(meta.get_mut(key).and_then(Value::as_object_mut))
}

/// The first container named `name` (Gardener's `ContainerWithName`); `None`
/// if there is none (container actions then do nothing, as in Gardener).
fn container<'v>(obj: &'v mut Value, name: &str) -> Res<Option<&'v mut Map<String, Value>>> {
    let Some(spec) = pod_spec(obj, false)? else {
        return Ok(None);
    };
    let Some(containers) = child_array(spec, "containers", "spec.template.spec", false)? else {
        return Ok(None);
    };
    for (i, c) in containers.iter_mut().enumerate() {
        let m = c
            .as_object_mut()
            .ok_or_else(|| shape(format!("spec.template.spec.containers[{i}]"), "a map"))?;
        if m.get("name").and_then(Value::as_str) == Some(name) {
            return Ok(Some(m));
        }
    }
    Ok(None)
}

fn set_key(map: &mut Map<String, Value>, key: &str, value: &str) {
    if map.get(key).and_then(Value::as_str) != Some(value) {
        map.insert(key.to_string(), Value::String(value.to_string()));
    }
}

/// Apply one action. `container_name` is the rule's container.
pub fn apply(
    obj: &mut Value,
    action: &Action,
    container_name: &str,
    ctx: &ApplyContext<'_>,
) -> Res<()> {
    let cpath = ContainerPath(container_name);
    match action {
        Action::EnsureFlag(f) => {
            if let Some(c) = container(obj, container_name)? {
                let list = child_array(c, f.list.field(), cpath, true)?
                    .ok_or_else(|| shape(cpath, "a list"))?;
                ensure_flag(list, &ctx.render(&f.flag), &ctx.render(&f.value));
            }
        }
        Action::RemoveFlag(f) => {
            if let Some(c) = container(obj, container_name)?
                && let Some(list) = child_array(c, f.list.field(), cpath, false)?
            {
                remove_flag(list, &ctx.render(&f.flag));
            }
        }
        Action::ReplaceFlag(f) => {
            if let Some(c) = container(obj, container_name)? {
                let list = child_array(c, f.list.field(), cpath, true)?
                    .ok_or_else(|| shape(cpath, "a list"))?;
                replace_flag(
                    list,
                    &ctx.render(&f.remove),
                    &ctx.render(&f.flag),
                    &ctx.render(&f.value),
                );
            }
        }
        Action::EnsureListItem(l) => {
            if let Some(c) = container(obj, container_name)? {
                let list = child_array(c, l.list.field(), cpath, true)?
                    .ok_or_else(|| shape(cpath, "a list"))?;
                ensure_list_item(
                    list,
                    &ctx.render(&l.flag),
                    &ctx.render(&l.item),
                    &l.separator,
                );
            }
        }
        Action::RemoveListItem(l) => {
            if let Some(c) = container(obj, container_name)?
                && let Some(list) = child_array(c, l.list.field(), cpath, false)?
            {
                remove_list_item(
                    list,
                    &ctx.render(&l.flag),
                    &ctx.render(&l.item),
                    &l.separator,
                );
            }
        }
        Action::EnsureEnv(v) | Action::EnsureVolumeMount(v) => {
            let field = if matches!(action, Action::EnsureEnv(_)) {
                "env"
            } else {
                "volumeMounts"
            };
            if let Some(c) = container(obj, container_name)? {
                let list =
                    child_array(c, field, cpath, true)?.ok_or_else(|| shape(cpath, "a list"))?;
                ensure_named(list, "name", ctx.render_value(v));
            }
        }
        Action::RemoveEnv(n) | Action::RemoveVolumeMount(n) => {
            let field = if matches!(action, Action::RemoveEnv(_)) {
                "env"
            } else {
                "volumeMounts"
            };
            if let Some(c) = container(obj, container_name)?
                && let Some(list) = child_array(c, field, cpath, false)?
            {
                remove_named(list, "name", &ctx.render(&n.name));
            }
        }
        Action::EnsureVolume(v) | Action::EnsureContainer(v) => {
            let field = if matches!(action, Action::EnsureVolume(_)) {
                "volumes"
            } else {
                "containers"
            };
            let spec = pod_spec(obj, true)?.ok_or_else(|| shape("spec.template.spec", "a map"))?;
            let list = child_array(spec, field, "spec.template.spec", true)?
                .ok_or_else(|| shape("spec.template.spec", "a map"))?;
            ensure_named(list, "name", ctx.render_value(v));
        }
        Action::RemoveVolume(n) | Action::RemoveContainer(n) => {
            let field = if matches!(action, Action::RemoveVolume(_)) {
                "volumes"
            } else {
                "containers"
            };
            if let Some(spec) = pod_spec(obj, false)?
                && let Some(list) = child_array(spec, field, "spec.template.spec", false)?
            {
                remove_named(list, "name", &ctx.render(&n.name));
            }
        }
        Action::EnsureVpaContainerPolicy(v) => {
            let spec = child_map(obj, "spec", "", true)?.ok_or_else(|| shape("spec", "a map"))?;
            let path = "spec.resourcePolicy";
            let policy = match spec.get("resourcePolicy") {
                None | Some(Value::Null) => {
                    spec.insert("resourcePolicy".into(), Value::Object(Map::new()));
                    spec.get_mut("resourcePolicy")
                        .and_then(Value::as_object_mut)
                }
                Some(Value::Object(_)) => spec
                    .get_mut("resourcePolicy")
                    .and_then(Value::as_object_mut),
                Some(_) => return Err(shape(path, "a map")),
            }
            .ok_or_else(|| shape(path, "a map"))?;
            let list = child_array(policy, "containerPolicies", path, true)?
                .ok_or_else(|| shape(path, "a map"))?;
            ensure_named(list, "containerName", ctx.render_value(v));
        }
        Action::RemoveVpaContainerPolicy(n) => {
            if let Some(spec) = child_map(obj, "spec", "", false)?
                && let Some(Value::Object(policy)) = spec.get_mut("resourcePolicy")
                && let Some(list) =
                    child_array(policy, "containerPolicies", "spec.resourcePolicy", false)?
            {
                remove_named(list, "containerName", &ctx.render(&n.container_name));
            }
        }
        Action::SetLabel(kv) | Action::SetAnnotation(kv) => {
            let key = if matches!(action, Action::SetLabel(_)) {
                "labels"
            } else {
                "annotations"
            };
            let map =
                template_meta(obj, key, true)?.ok_or_else(|| shape("spec.template", "a map"))?;
            set_key(map, &ctx.render(&kv.key), &ctx.render(&kv.value));
        }
        Action::DeleteLabel(k) | Action::DeleteAnnotation(k) => {
            let key = if matches!(action, Action::DeleteLabel(_)) {
                "labels"
            } else {
                "annotations"
            };
            if let Some(map) = template_meta(obj, key, false)? {
                map.remove(ctx.render(&k.key).as_ref());
            }
        }
        Action::SecretChecksum(n) | Action::ConfigMapChecksum(n) => {
            let name = ctx.render(&n.name).into_owned();
            let (kind, prefix) = match action {
                Action::SecretChecksum(_) => (ObjectKind::Secret, "checksum/secret-"),
                _ => (ObjectKind::ConfigMap, "checksum/configmap-"),
            };
            let digest = match ctx.objects.get(&(kind, name.clone())) {
                Some(ObjectData::Secret { data, .. }) => secret_checksum(data.as_ref()),
                Some(ObjectData::ConfigMap { data, .. }) => configmap_checksum(data.as_ref()),
                None => return Err(ApplyError::Missing { kind, name }),
            };
            let map = template_meta(obj, "annotations", true)?
                .ok_or_else(|| shape("spec.template", "a map"))?;
            set_key(map, &format!("{prefix}{name}"), &digest);
        }
        Action::ProviderSidecar(s) => {
            let workload_identity = if s.workload_identity {
                match ctx
                    .objects
                    .get(&(ObjectKind::Secret, "cloudprovider".to_string()))
                {
                    Some(ObjectData::Secret { labels, .. }) => {
                        wants_workload_identity(labels, &s.workload_identity_labels)
                    }
                    _ => {
                        return Err(ApplyError::Missing {
                            kind: ObjectKind::Secret,
                            name: "cloudprovider".into(),
                        });
                    }
                }
            } else {
                false
            };
            let image = ctx.sidecar_image.unwrap_or(&s.image);
            let extra_args: Vec<String> = s
                .extra_args
                .iter()
                .map(|a| ctx.render(a).into_owned())
                .collect();
            let (container, volume) = sidecar_container(
                ctx.namespace,
                &s.provider,
                image,
                workload_identity,
                &extra_args,
            );
            if let Some(volume) = volume {
                apply(obj, &Action::EnsureVolume(volume), container_name, ctx)?;
            }
            apply(
                obj,
                &Action::EnsureContainer(container),
                container_name,
                ctx,
            )?;
        }
    }
    Ok(())
}
