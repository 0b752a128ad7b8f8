//! Applying one action to a [`Draft`] of a raw object. Only the places an
//! action names are read or written; everything else is left as sent.

use serde_json::Value;

use super::context::ApplyContext;
use super::draft::Draft;
use super::place::ListAt;
use super::primitives::{
    List, ensure_flag, ensure_list_item, ensure_named, remove_flag, remove_list_item, remove_named,
    replace_flag,
};
use super::shape::{ApplyError, shape};
use super::sidecar::{Hosting, hosted_sidecar_container};
use crate::checksum::{configmap_checksum, secret_checksum};
use crate::gardener::{ObjectData, ObjectKind};
use crate::profile::osc::NamespaceRef;
use crate::profile::{Action, Place};

type Res<T> = Result<T, ApplyError>;

/// The index of the first container named `name` (Gardener's
/// `ContainerWithName`); `None` if there is none (container actions then do
/// nothing, as in Gardener).
fn container_index(draft: &Draft<'_>, name: &str) -> Res<Option<usize>> {
    let Some(Value::Array(containers)) = draft.get(Place::Containers)? else {
        return Ok(None);
    };
    for (i, c) in containers.iter().enumerate() {
        let m = c
            .as_object()
            .ok_or_else(|| shape(format!("spec.template.spec.containers[{i}]"), "a map"))?;
        if m.get("name").and_then(Value::as_str) == Some(name) {
            return Ok(Some(i));
        }
    }
    Ok(None)
}

/// Let `edit` change the list `field` of the container named `name`, if there
/// is one (see [`Draft::edit_list`]).
fn edit_container_list(
    draft: &mut Draft<'_>,
    name: &str,
    field: &'static str,
    create: bool,
    edit: impl FnOnce(&mut List<'_>),
) -> Res<()> {
    match container_index(draft, name)? {
        Some(index) => draft.edit_list(ListAt::ContainerField { index, name, field }, create, edit),
        None => Ok(()),
    }
}

fn env_or_mounts(action: &Action) -> &'static str {
    match action {
        Action::EnsureEnv(_) | Action::RemoveEnv(_) => "env",
        _ => "volumeMounts",
    }
}

fn volumes_or_containers(action: &Action) -> Place {
    match action {
        Action::EnsureVolume(_) | Action::RemoveVolume(_) => Place::Volumes,
        _ => Place::Containers,
    }
}

fn labels_or_annotations(action: &Action) -> Place {
    match action {
        Action::SetLabel(_) | Action::DeleteLabel(_) => Place::Labels,
        _ => Place::Annotations,
    }
}

/// Apply one action. `container_name` is the rule's container.
pub fn apply(
    draft: &mut Draft<'_>,
    action: &Action,
    container_name: &str,
    ctx: &ApplyContext<'_>,
) -> Res<()> {
    match action {
        Action::EnsureFlag(f) => {
            edit_container_list(draft, container_name, f.list.field(), true, |l| {
                ensure_flag(l, &ctx.render(&f.flag), &ctx.render(&f.value))
            })?
        }
        Action::RemoveFlag(f) => {
            edit_container_list(draft, container_name, f.list.field(), false, |l| {
                remove_flag(l, &ctx.render(&f.flag))
            })?
        }
        Action::ReplaceFlag(f) => {
            edit_container_list(draft, container_name, f.list.field(), true, |l| {
                let (remove, flag) = (ctx.render(&f.remove), ctx.render(&f.flag));
                replace_flag(l, &remove, &flag, &ctx.render(&f.value))
            })?
        }
        Action::EnsureListItem(f) => {
            edit_container_list(draft, container_name, f.list.field(), true, |l| {
                ensure_list_item(l, &ctx.render(&f.flag), &ctx.render(&f.item), &f.separator)
            })?
        }
        Action::RemoveListItem(f) => {
            edit_container_list(draft, container_name, f.list.field(), false, |l| {
                remove_list_item(l, &ctx.render(&f.flag), &ctx.render(&f.item), &f.separator)
            })?
        }
        Action::EnsureEnv(v) | Action::EnsureVolumeMount(v) => {
            edit_container_list(draft, container_name, env_or_mounts(action), true, |l| {
                ensure_named(l, "name", ctx.render_value(v))
            })?
        }
        Action::RemoveEnv(n) | Action::RemoveVolumeMount(n) => {
            edit_container_list(draft, container_name, env_or_mounts(action), false, |l| {
                remove_named(l, "name", &ctx.render(&n.name))
            })?
        }
        Action::EnsureVolume(v) | Action::EnsureContainer(v) => {
            let at = ListAt::Place(volumes_or_containers(action));
            draft.edit_list(at, true, |l| ensure_named(l, "name", ctx.render_value(v)))?
        }
        Action::RemoveVolume(n) | Action::RemoveContainer(n) => {
            let at = ListAt::Place(volumes_or_containers(action));
            draft.edit_list(at, false, |l| remove_named(l, "name", &ctx.render(&n.name)))?
        }
        Action::EnsureVpaContainerPolicy(v) => {
            let at = ListAt::Place(Place::ContainerPolicies);
            draft.edit_list(at, true, |l| {
                ensure_named(l, "containerName", ctx.render_value(v))
            })?
        }
        Action::RemoveVpaContainerPolicy(n) => {
            let at = ListAt::Place(Place::ContainerPolicies);
            draft.edit_list(at, false, |l| {
                remove_named(l, "containerName", &ctx.render(&n.container_name))
            })?
        }
        Action::SetLabel(kv) | Action::SetAnnotation(kv) => draft.set_key(
            labels_or_annotations(action),
            &ctx.render(&kv.key),
            &ctx.render(&kv.value),
        )?,
        Action::DeleteLabel(k) | Action::DeleteAnnotation(k) => {
            draft.remove_key(labels_or_annotations(action), &ctx.render(&k.key))?
        }
        Action::SecretChecksum(n) | Action::ConfigMapChecksum(n) => {
            let name = ctx.render(&n.name).into_owned();
            let (kind, prefix) = match action {
                Action::SecretChecksum(_) => (ObjectKind::Secret, "checksum/secret-"),
                _ => (ObjectKind::ConfigMap, "checksum/configmap-"),
            };
            let digest = match ctx.objects.get(&(kind, NamespaceRef::Object, name.clone())) {
                Some(ObjectData::Secret { data, .. }) => secret_checksum(data.as_ref()),
                Some(ObjectData::ConfigMap { data, .. }) => configmap_checksum(data.as_ref()),
                None => return Err(ApplyError::Missing { kind, name }),
            };
            draft.set_key(Place::Annotations, &format!("{prefix}{name}"), &digest)?;
        }
        // OperatingSystemConfig actions are applied phase by phase (osc::apply).
        Action::KubeletFlag(_)
        | Action::UnitOption(_)
        | Action::KubeletConfig(_)
        | Action::Sysctl(_)
        | Action::Unit(_)
        | Action::File(_) => {}
        // Secret and Etcd ensurers run in Engine::mutate_seed_object.
        Action::CloudproviderSecret(_) | Action::EtcdStorage(_) => {}
        Action::ProviderSidecar(s) => {
            let workload_identity = if s.workload_identity {
                match ctx.objects.get(&(
                    ObjectKind::Secret,
                    NamespaceRef::Object,
                    "cloudprovider".to_string(),
                )) {
                    Some(secret @ ObjectData::Secret { .. }) => {
                        secret.requests_workload_identity(&s.workload_identity_labels)
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
            let image = match ctx.sidecar_image {
                Some(image) => image,
                None => ctx
                    .images
                    .get(&s.image)
                    .ok_or_else(|| ApplyError::NoImage(s.image.clone()))?,
            };
            let extra_args: Vec<String> = s
                .extra_args
                .iter()
                .map(|a| ctx.render(a).into_owned())
                .collect();
            let (container, volume) = hosted_sidecar_container(
                ctx.namespace,
                &s.provider,
                image,
                workload_identity,
                &extra_args,
                Hosting::of(ctx.self_hosted, ctx.namespace),
            );
            if let Some(volume) = volume {
                apply(draft, &Action::EnsureVolume(volume), container_name, ctx)?;
            }
            apply(
                draft,
                &Action::EnsureContainer(container),
                container_name,
                ctx,
            )?;
        }
    }
    Ok(())
}
