//! Turning a parsed profile file into a [`Profile`]: what serde cannot check,
//! with errors that name the file, the rule and the field.

use std::collections::BTreeSet;

use serde_json::Value;

use super::actions::{Action, Scope};
use super::component::{Component, Known};
use super::condition::{Condition, Place};
use super::controlplane::{CodeRef, ControlPlaneFile, ControlPlaneSpec, DEFAULT_CCM_IMAGE};
use super::imagevector::ImageVector;
use super::osc::check_file;
use super::targets::{TARGETS, target_for_component};
use super::{DataFiles, Profile, ProfileError, ProfileFile, Rule, TEMPLATE_VARIABLES};
use crate::gardener::version::parse_version;

/// The k8s.io/kubelet minors whose KubeletConfiguration scion knows.
const KUBELET_LIBRARIES: std::ops::RangeInclusive<u32> = 35..=36;

pub(super) fn compile(
    file: &str,
    mut raw: ProfileFile,
    files: &DataFiles<'_>,
) -> Result<Profile, ProfileError> {
    let other = |message: String| ProfileError::Other {
        file: file.to_string(),
        message,
    };
    if raw.provider.trim().is_empty() {
        return Err(other("field provider: must not be empty".into()));
    }
    let mut seen = BTreeSet::new();
    let mut components = Vec::new();
    for (component, rules) in raw.components {
        let target = target_for_component(&component).ok_or_else(|| {
            other(format!(
                "field components: unknown component {component:?} (known: {})",
                TARGETS
                    .iter()
                    .map(|t| t.component)
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?;
        let mut compiled = Vec::with_capacity(rules.len());
        for mut rule in rules {
            let invalid = |field: String, message: String| ProfileError::Invalid {
                file: file.to_string(),
                rule: rule.name.clone(),
                field,
                message,
            };
            if rule.name.trim().is_empty() {
                return Err(other(format!(
                    "component {component}: a rule has an empty name"
                )));
            }
            if !seen.insert(rule.name.clone()) {
                return Err(invalid("name".into(), "duplicate rule name".into()));
            }
            let place = if target.is_osc() {
                Place::Osc
            } else {
                Place::Rule
            };
            let when = rule
                .when
                .as_ref()
                .map(|c| Condition::compile(c, "when", place))
                .transpose()
                .map_err(|(field, msg)| invalid(field, msg))?;
            if rule.actions.is_empty() {
                return Err(invalid(
                    "actions".into(),
                    "must list at least one action".into(),
                ));
            }
            if !target.is_deployment() && rule.container.is_some() {
                return Err(invalid(
                    "container".into(),
                    format!("a {} has no containers", target.kind),
                ));
            }
            for (i, action) in rule.actions.iter_mut().enumerate() {
                let field = format!("actions[{i}].{}", action.kind());
                read_data_files(action, files).map_err(|m| invalid(field.clone(), m))?;
                check_action(action, target).map_err(|m| invalid(field.clone(), m))?;
                let as_value = serde_json::to_value(&*action)
                    .map_err(|e| invalid(field.clone(), e.to_string()))?;
                let mut allowed: Vec<&str> = TEMPLATE_VARIABLES.to_vec();
                if let Action::File(spec) = &*action {
                    allowed.extend(spec.vars.keys().map(String::as_str));
                }
                check_templates(&as_value, &allowed).map_err(|m| invalid(field.clone(), m))?;
            }
            compiled.push(Rule {
                name: rule.name,
                description: rule.description,
                when,
                container: rule.container,
                actions: rule.actions,
            });
        }
        components.push((target.component, compiled));
    }
    let kubelet_library = match raw.kubelet_library.take() {
        None => *KUBELET_LIBRARIES.end(),
        Some(text) => parse_version(&format!("{text}.0"))
            .ok()
            .filter(|v| v.major == 0 && KUBELET_LIBRARIES.contains(&(v.minor as u32)))
            .map(|v| v.minor as u32)
            .ok_or_else(|| ProfileError::Field {
                file: file.to_string(),
                field: "kubeletLibrary".into(),
                message: format!(
                    "{text:?} is not a k8s.io/kubelet minor scion knows (0.{}–0.{})",
                    KUBELET_LIBRARIES.start(),
                    KUBELET_LIBRARIES.end()
                ),
            })?,
    };
    let field = |field: &str, message: String| ProfileError::Field {
        file: file.to_string(),
        field: field.to_string(),
        message,
    };
    let code = match raw.code.take() {
        None => None,
        Some(name) => Some(CodeRef(crate::providers::code(&name).ok_or_else(|| {
            field(
                "code",
                format!(
                    "no built-in code {name:?} (built in: {})",
                    crate::providers::BUILTIN_PROVIDERS.join(", ")
                ),
            )
        })?)),
    };
    let images = match raw.image_vector.take() {
        None => ImageVector::builtin(&raw.provider),
        Some(name) => {
            let text = files(&name).map_err(|m| field("imageVector", m))?;
            ImageVector::parse(&sibling(file, &name), &text)
                .map_err(|e| field("imageVector", e.to_string()))?
        }
    };
    if code.is_none()
        && components
            .iter()
            .flat_map(|(_, rules)| rules)
            .flat_map(|r: &Rule| &r.actions)
            .any(|a| matches!(a, Action::CloudproviderSecret(_)))
    {
        return Err(field(
            "code",
            "the cloudprovider component's cloudproviderSecret action runs the profile's code; \
             name it with `code: <provider>`"
                .into(),
        ));
    }
    let feature_gates =
        super::featuregates::compile(std::mem::take(&mut raw.extension_feature_gates))
            .map_err(|(f, message)| field(&f, message))?;
    let control_plane = match raw.control_plane.take() {
        None => None,
        Some(section) => Some(control_plane(
            file,
            &raw.provider,
            section,
            code,
            &images,
            &feature_gates,
            files,
        )?),
    };
    Ok(Profile {
        source: file.to_string(),
        provider: raw.provider,
        description: raw.description,
        components,
        code,
        images,
        control_plane,
        kubelet_library,
        feature_gates,
    })
}

/// The path of `name` next to the profile `file`, for messages.
fn sibling(file: &str, name: &str) -> String {
    match file.rfind('/') {
        Some(at) => format!("{}/{name}", &file[..at]),
        None => name.to_string(),
    }
}

/// The `controlPlane:` section: each component file read and checked.
fn control_plane(
    file: &str,
    provider: &str,
    section: ControlPlaneFile,
    code: Option<CodeRef>,
    images: &ImageVector,
    feature_gates: &[super::FeatureGate],
    files: &DataFiles<'_>,
) -> Result<ControlPlaneSpec, ProfileError> {
    let gate_names: Vec<&str> = feature_gates.iter().map(|g| g.name.as_str()).collect();
    let shared_files = |name: &str| {
        crate::providers::shared::file(name)
            .map(str::to_string)
            .ok_or_else(|| format!("no file {name:?} in the shared folder"))
    };
    let mut components: Vec<Component> = Vec::with_capacity(section.components.len());
    for (i, listed) in section.components.iter().enumerate() {
        // `shared/<name>`: a component of the shared folder, which every
        // provider (built in or on disk) takes from there, not copied.
        let (name, folder_files, component_file): (&str, &DataFiles<'_>, String) =
            match listed.strip_prefix(crate::providers::shared::PREFIX) {
                Some(name) => (
                    name,
                    &shared_files,
                    format!("{}components/{name}.yaml", crate::providers::shared::PREFIX),
                ),
                None => (
                    listed.as_str(),
                    files,
                    sibling(file, &format!("components/{listed}.yaml")),
                ),
            };
        let known = Known {
            files: folder_files,
            images,
            code: code.map(|c| c.0),
            secrets: &[crate::secrets::SERVER_CONFIG],
            feature_gates: &gate_names,
        };
        let path = format!("components/{name}.yaml");
        let text = folder_files(&path).map_err(|m| ProfileError::Field {
            file: file.to_string(),
            field: format!("controlPlane.components[{i}]"),
            message: m,
        })?;
        let component = Component::parse(&component_file, &text, &known).map_err(|e| {
            if e.object.is_empty() || e.field.is_empty() {
                // A field of the file, or a whole object or value.
                ProfileError::Field {
                    file: component_file.clone(),
                    field: if e.field.is_empty() {
                        e.object
                    } else {
                        e.field
                    },
                    message: e.message,
                }
            } else {
                ProfileError::Object {
                    file: component_file.clone(),
                    object: e.object,
                    field: e.field,
                    message: e.message,
                }
            }
        })?;
        if component.name != *name {
            return Err(ProfileError::Field {
                file: component_file,
                field: "name".into(),
                message: format!(
                    "{:?} differs from the file name the profile lists ({name:?})",
                    component.name
                ),
            });
        }
        if components.iter().any(|c| c.name == component.name) {
            return Err(ProfileError::Field {
                file: file.to_string(),
                field: format!("controlPlane.components[{i}]"),
                message: format!("{name:?} is listed twice"),
            });
        }
        components.push(component);
    }
    // optional: without it every ControlPlaneConfig field the components do
    // not read is warned about
    let options_text = files("options.yaml").ok();
    let options =
        super::options::OptionSpec::parse(options_text.as_deref(), &components).map_err(|m| {
            ProfileError::Field {
                file: sibling(file, "options.yaml"),
                field: m
                    .split_once(": ")
                    .map_or(String::new(), |(f, _)| f.to_owned()),
                message: m
                    .split_once(": ")
                    .map_or(m.clone(), |(_, rest)| rest.to_owned()),
            }
        })?;
    Ok(ControlPlaneSpec {
        provider: provider.to_string(),
        code,
        options,
        ccm_image: section
            .ccm_image
            .unwrap_or_else(|| DEFAULT_CCM_IMAGE.to_string()),
        components,
        feature_gates: feature_gates.to_vec(),
    })
}

/// Replace `valueFile`/`contentFile` by the file's text.
fn read_data_files(action: &mut Action, files: &DataFiles<'_>) -> Result<(), String> {
    let (slot, name) = match action {
        Action::UnitOption(o) => (&mut o.value, o.value_file.as_deref()),
        Action::Unit(u) => (&mut u.content, u.content_file.as_deref()),
        Action::File(f) => (&mut f.content, f.content_file.as_deref()),
        _ => return Ok(()),
    };
    let Some(name) = name else {
        return Ok(());
    };
    if slot.is_some() {
        return Err(format!(
            "give the content inline or as the file {name:?}, not both"
        ));
    }
    *slot = Some(files(name)?);
    Ok(())
}

fn check_action(action: &Action, target: &crate::profile::Target) -> Result<(), String> {
    let own = match action.scope() {
        Scope::Secret => Some(target.is_secret()),
        Scope::Etcd => Some(target.is_etcd()),
        _ if target.is_secret() || target.is_etcd() => Some(false),
        _ => None,
    };
    if own == Some(false) {
        return Err(format!("not allowed on component {}", target.component));
    }
    match (action.scope(), target.is_vpa(), target.is_osc()) {
        (Scope::Secret | Scope::Etcd, _, _) => {}
        (Scope::Vpa, false, _) => {
            return Err("only allowed for machine-controller-manager-vpa".into());
        }
        (Scope::Container | Scope::PodTemplate, true, _) => {
            return Err("not allowed on a VerticalPodAutoscaler".into());
        }
        (Scope::Osc, _, false) => {
            return Err("only allowed for operatingsystemconfig".into());
        }
        (Scope::Container | Scope::PodTemplate | Scope::Vpa, _, true) => {
            return Err("not allowed on an OperatingSystemConfig".into());
        }
        _ => {}
    }
    let need_key = |v: &Value, key: &str| -> Result<(), String> {
        match v.get(key) {
            Some(Value::String(s)) if !s.is_empty() => Ok(()),
            _ if !v.is_object() => Err("must be a map".into()),
            _ => Err(format!("needs a non-empty string `{key}`")),
        }
    };
    let non_empty = |s: &str, what: &str| {
        if s.is_empty() {
            Err(format!("`{what}` must not be empty"))
        } else {
            Ok(())
        }
    };
    match action {
        Action::EnsureFlag(f) => non_empty(&f.flag, "flag"),
        Action::RemoveFlag(f) => non_empty(&f.flag, "flag"),
        Action::ReplaceFlag(f) => {
            non_empty(&f.remove, "remove")?;
            if f.flag.starts_with(&f.remove) {
                Ok(())
            } else {
                Err(format!(
                    "`flag` {:?} must start with `remove` {:?}, or the appended flag would not be found again",
                    f.flag, f.remove
                ))
            }
        }
        Action::EnsureListItem(l) | Action::RemoveListItem(l) => {
            non_empty(&l.flag, "flag")?;
            non_empty(&l.item, "item")?;
            non_empty(&l.separator, "separator")
        }
        Action::EnsureEnv(v)
        | Action::EnsureVolumeMount(v)
        | Action::EnsureVolume(v)
        | Action::EnsureContainer(v) => need_key(v, "name"),
        Action::EnsureVpaContainerPolicy(v) => need_key(v, "containerName"),
        Action::SetLabel(kv) | Action::SetAnnotation(kv) => non_empty(&kv.key, "key"),
        Action::ProviderSidecar(s) => {
            non_empty(&s.provider, "provider")?;
            non_empty(&s.image, "image")?;
            if !s.workload_identity_labels.is_empty() && !s.workload_identity {
                return Err("`workloadIdentityLabels` needs `workloadIdentity: true`".into());
            }
            if s.workload_identity_labels.keys().any(String::is_empty) {
                return Err("`workloadIdentityLabels` has an empty label key".into());
            }
            if s.extra_args.iter().any(|a| a.trim().is_empty()) {
                return Err("`extraArgs` has an empty argument".into());
            }
            Ok(())
        }
        Action::KubeletFlag(k) => non_empty(&k.flag, "flag"),
        Action::UnitOption(o) => {
            non_empty(&o.section, "section")?;
            non_empty(&o.name, "name")?;
            if o.value.is_none() {
                return Err("needs `value` or `valueFile`".into());
            }
            Ok(())
        }
        Action::KubeletConfig(k) => {
            let path: Vec<&str> = k.field.split('.').collect();
            if path.iter().any(|p| p.is_empty()) {
                return Err(format!("`field` {:?} is not a dotted path", k.field));
            }
            if matches!(path[0], "apiVersion" | "kind") {
                return Err("apiVersion and kind are the codec's".into());
            }
            crate::gardener::kubelet::field_exists(&path)
        }
        Action::Sysctl(s) => {
            non_empty(&s.key, "key")?;
            non_empty(&s.value, "value")?;
            if s.value.contains('$') || s.key.contains(['$', '\n']) {
                return Err("`key` and `value` must not contain `$` or a newline".into());
            }
            Ok(())
        }
        Action::Unit(u) => {
            non_empty(&u.name, "name")?;
            if let Some(c) = &u.command
                && !matches!(c.as_str(), "start" | "restart" | "stop")
            {
                return Err(format!(
                    "`command` {c:?} is not one of start, restart, stop"
                ));
            }
            Ok(())
        }
        Action::File(spec) => check_file(spec),
        _ => Ok(()),
    }
}

/// Every `{{...}}` in a string of the action must name a known variable.
fn check_templates(v: &Value, allowed: &[&str]) -> Result<(), String> {
    match v {
        Value::String(s) => {
            let mut rest = s.as_str();
            while let Some(start) = rest.find("{{") {
                let after = &rest[start + 2..];
                let end = after
                    .find("}}")
                    .ok_or_else(|| format!("unclosed template in {s:?}"))?;
                let name = after[..end].trim();
                if !allowed.contains(&name) {
                    return Err(format!(
                        "unknown template variable {name:?} in {s:?} (known: {})",
                        allowed.join(", ")
                    ));
                }
                rest = &after[end + 2..];
            }
            Ok(())
        }
        Value::Array(items) => items.iter().try_for_each(|i| check_templates(i, allowed)),
        Value::Object(map) => map.values().try_for_each(|i| check_templates(i, allowed)),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use crate::profile::Profile;

    fn err(actions: &str, component: &str) -> String {
        let yaml = format!(
            "provider: x\ncomponents:\n  {component}:\n    - name: r\n      actions: {actions}\n"
        );
        Profile::from_yaml("x.yaml", &yaml).unwrap_err().to_string()
    }

    #[test]
    fn replace_flag_must_append_what_it_removes() {
        let e = err(
            r#"[{replaceFlag: {remove: "--allocate-node-cidrs", flag: "--other=", value: "false"}}]"#,
            "kube-controller-manager",
        );
        assert!(
            e.contains(r#"rule "r": field actions[0].replaceFlag: `flag` "--other=" must start with `remove`"#),
            "{e}"
        );
        let e = err(
            r#"[{replaceFlag: {remove: "", flag: "--a=", value: "1"}}]"#,
            "kube-controller-manager",
        );
        assert!(e.contains("`remove` must not be empty"), "{e}");
    }

    #[test]
    fn sidecar_extras_are_checked() {
        let e = err(
            "[{providerSidecar: {provider: p, image: i, workloadIdentityLabels: {a: b}}}]",
            "machine-controller-manager",
        );
        assert!(
            e.contains("field actions[0].providerSidecar: `workloadIdentityLabels` needs `workloadIdentity: true`"),
            "{e}"
        );
        let e = err(
            r#"[{providerSidecar: {provider: p, image: i, extraArgs: ["--a=1", " "]}}]"#,
            "machine-controller-manager",
        );
        assert!(e.contains("`extraArgs` has an empty argument"), "{e}");
        let e = err(
            r#"[{providerSidecar: {provider: p, image: i, extraArgs: ["--ns={{zone}}"]}}]"#,
            "machine-controller-manager",
        );
        assert!(e.contains("unknown template variable \"zone\""), "{e}");
    }
}
