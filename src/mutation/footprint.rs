//! The part of an object a profile reads or writes, as a [`Reach`], so the
//! server decodes only that part of each request object.
//!
//! Derived from the actions by one exhaustive match: a new action cannot be
//! added without saying where it writes. Besides the actions, every object
//! needs what dispatch and the shape check read: `metadata.name`,
//! `metadata.namespace`, `metadata.deletionTimestamp`, and for a Deployment the
//! `name`, `command` and `args` of each container.

use crate::admission::{ObjectReach, Reach};
use crate::profile::{Action, Profile};

use super::dispatch::TARGETS;

/// Where in an object an action reads or writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// A field of one container of the pod template, changed in place.
    ContainerField(&'static str),
    /// A list of the pod spec whose elements are added, replaced or removed whole.
    PodSpecList(&'static str),
    /// A map of the pod template's metadata.
    TemplateMetadata(&'static str),
    /// `spec.resourcePolicy.containerPolicies` of a VPA.
    VpaContainerPolicies,
}

fn places(action: &Action) -> &'static [Place] {
    use Place::*;
    match action {
        Action::EnsureFlag(f) => match f.list.field() {
            "args" => &[ContainerField("args")],
            _ => &[ContainerField("command")],
        },
        Action::RemoveFlag(f) => match f.list.field() {
            "args" => &[ContainerField("args")],
            _ => &[ContainerField("command")],
        },
        Action::ReplaceFlag(f) => match f.list.field() {
            "args" => &[ContainerField("args")],
            _ => &[ContainerField("command")],
        },
        Action::EnsureListItem(l) | Action::RemoveListItem(l) => match l.list.field() {
            "args" => &[ContainerField("args")],
            _ => &[ContainerField("command")],
        },
        Action::EnsureEnv(_) | Action::RemoveEnv(_) => &[ContainerField("env")],
        Action::EnsureVolumeMount(_) | Action::RemoveVolumeMount(_) => {
            &[ContainerField("volumeMounts")]
        }
        Action::EnsureVolume(_) | Action::RemoveVolume(_) => &[PodSpecList("volumes")],
        Action::EnsureContainer(_) | Action::RemoveContainer(_) => &[PodSpecList("containers")],
        Action::EnsureVpaContainerPolicy(_) | Action::RemoveVpaContainerPolicy(_) => {
            &[VpaContainerPolicies]
        }
        Action::SetLabel(_) | Action::DeleteLabel(_) => &[TemplateMetadata("labels")],
        Action::SetAnnotation(_)
        | Action::DeleteAnnotation(_)
        | Action::SecretChecksum(_)
        | Action::ConfigMapChecksum(_) => &[TemplateMetadata("annotations")],
        Action::ProviderSidecar(_) => &[PodSpecList("volumes"), PodSpecList("containers")],
    }
}

/// The reach of each object the profile mutates: per target, what dispatch,
/// the shape check and the target's rules read or write.
pub(super) fn footprint(profile: &Profile) -> ObjectReach {
    let metadata = Reach::keys([
        ("name", Reach::All),
        ("namespace", Reach::All),
        ("deletionTimestamp", Reach::All),
    ]);
    let common = Reach::keys([("metadata", metadata)]);
    let targets = TARGETS.iter().map(|target| {
        let rules = profile.rules(target.component);
        let places: Vec<Place> = rules
            .iter()
            .flat_map(|r| &r.actions)
            .flat_map(places)
            .copied()
            .collect();
        let spec = if target.is_vpa() {
            vpa_spec(&places)
        } else {
            deployment_spec(&places)
        };
        let identity = (target.group, target.version, target.kind, target.name);
        (identity, Reach::keys([("spec", spec)]))
    });
    ObjectReach::new(common, targets)
}

fn vpa_spec(places: &[Place]) -> Reach {
    if places.contains(&Place::VpaContainerPolicies) {
        Reach::keys([(
            "resourcePolicy",
            Reach::keys([("containerPolicies", Reach::All)]),
        )])
    } else {
        Reach::keys::<&str>([])
    }
}

fn deployment_spec(places: &[Place]) -> Reach {
    let mut container_fields = vec!["name", "command", "args"];
    let mut pod_spec = Vec::new();
    let mut metadata = Vec::new();
    for place in places {
        match *place {
            Place::ContainerField(f) if !container_fields.contains(&f) => container_fields.push(f),
            Place::PodSpecList(l) if !pod_spec.contains(&l) => pod_spec.push(l),
            Place::TemplateMetadata(m) if !metadata.contains(&m) => metadata.push(m),
            _ => {}
        }
    }
    // Containers that are added or replaced whole must be decoded whole: a
    // replaced container is diffed field by field against the one it replaces.
    let containers = if pod_spec.contains(&"containers") {
        Reach::All
    } else {
        Reach::Each(Box::new(Reach::keys(
            container_fields.into_iter().map(|f| (f, Reach::All)),
        )))
    };
    let pod_spec = Reach::keys(
        std::iter::once(("containers", containers)).chain(
            pod_spec
                .into_iter()
                .filter(|l| *l != "containers")
                .map(|l| (l, Reach::All)),
        ),
    );
    let metadata = Reach::keys(metadata.into_iter().map(|m| (m, Reach::All)));
    Reach::keys([(
        "template",
        Reach::keys([("metadata", metadata), ("spec", pod_spec)]),
    )])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn aws_reach_keeps_what_rules_touch_and_drops_the_rest() {
        let reach = footprint(&Profile::builtin("aws").unwrap());
        let kind = |k: &str| crate::admission::GroupVersionKind {
            group: "apps".into(),
            version: "v1".into(),
            kind: k.into(),
        };
        let object = json!({
            "metadata": {"name": "kube-controller-manager", "namespace": "shoot--a--b",
                "managedFields": [{"manager": "gardenlet"}], "labels": {"app": "x"}},
            "spec": {"replicas": 1, "template": {
                "metadata": {"labels": {"a": "b"}, "annotations": {"c": "d"}, "creationTimestamp": null},
                "spec": {"containers": [{"name": "kcm", "image": "i", "command": ["--v=2"],
                    "env": [{"name": "E"}], "volumeMounts": [{"name": "m"}],
                    "resources": {"limits": {"cpu": "1"}}}],
                    "volumes": [{"name": "v", "secret": {"secretName": "s"}}],
                    "priorityClassName": "p"}}},
            "status": {"replicas": 1}
        });
        let kcm = json!({
            "metadata": {"name": "kube-controller-manager", "namespace": "shoot--a--b"},
            "spec": {"template": {
                "metadata": {"labels": {"a": "b"}, "annotations": {"c": "d"}},
                "spec": {"containers": [{"name": "kcm", "command": ["--v=2"],
                    "env": [{"name": "E"}], "volumeMounts": [{"name": "m"}]}],
                    "volumes": [{"name": "v", "secret": {"secretName": "s"}}]}}}
        });
        assert_eq!(reach.prune(&kind("Deployment"), &object), kcm);
        // The MCM sidecar replaces containers whole: they are kept whole.
        let mut mcm = object.clone();
        mcm["metadata"]["name"] = json!("machine-controller-manager");
        let pruned = reach.prune(&kind("Deployment"), &mcm);
        assert_eq!(
            pruned["spec"]["template"]["spec"]["containers"],
            object["spec"]["template"]["spec"]["containers"]
        );
        // Objects that are not targets keep their metadata only.
        assert_eq!(
            reach.prune(&kind("StatefulSet"), &object),
            json!({"metadata": {"name": "kube-controller-manager", "namespace": "shoot--a--b"}})
        );
    }

    #[test]
    fn without_container_actions_only_container_fields_are_kept() {
        let spec = deployment_spec(&[Place::ContainerField("env")]);
        let object = json!({"template": {"spec": {"containers": [
            {"name": "a", "image": "i", "env": [], "args": ["x"]}]}}});
        assert_eq!(
            spec.prune(&object),
            json!({"template": {"spec": {"containers": [{"name": "a", "env": [], "args": ["x"]}]}}})
        );
    }
}
