//! What a profile's rules apply to and where their actions write: the
//! components (objects the webhook mutates) and the places of an object.
//!
//! The `components:` keys of a profile are [`TARGETS`]; the webhook's
//! dispatch, the webhook configuration's rules and the decoder's reach all
//! read this table. [`Action::touches`] says, with one exhaustive match,
//! where each action writes, so a new action cannot be added without saying
//! so; the copy-on-write draft and the decoder's reach are built from it.

use super::actions::Action;

/// One object kind and name the webhook mutates. The component name is the key
/// of the profile's `components:` map.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target {
    /// Profile component key; equal to the object name.
    pub component: &'static str,
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    /// Plural resource, for webhook rules.
    pub resource: &'static str,
    /// `metadata.name` of the object; [`ANY_NAME`] for any name.
    pub name: &'static str,
    /// The container container-level actions edit by default (`None` for a VPA).
    pub container: Option<&'static str>,
}

/// The `name` of a target whose objects may have any name.
pub const ANY_NAME: &str = "*";

impl Target {
    /// Whether the object is a VerticalPodAutoscaler.
    pub fn is_vpa(&self) -> bool {
        self.container.is_none() && !self.is_osc()
    }

    /// Whether the object is an OperatingSystemConfig.
    pub fn is_osc(&self) -> bool {
        self.kind == "OperatingSystemConfig"
    }

    /// Whether an object named `name` is this target.
    pub fn matches_name(&self, name: &str) -> bool {
        self.name == ANY_NAME || self.name == name
    }
}

const fn deployment(name: &'static str) -> Target {
    Target {
        component: name,
        group: "apps",
        version: "v1",
        kind: "Deployment",
        resource: "deployments",
        name,
        container: Some(name),
    }
}

/// Every object the webhook mutates (Gardener's generic mutator, restricted
/// to the control-plane components scion implements).
pub const TARGETS: &[Target] = &[
    deployment("kube-apiserver"),
    deployment("kube-controller-manager"),
    deployment("kube-scheduler"),
    deployment("cluster-autoscaler"),
    deployment("machine-controller-manager"),
    Target {
        component: "machine-controller-manager-vpa",
        group: "autoscaling.k8s.io",
        version: "v1",
        kind: "VerticalPodAutoscaler",
        resource: "verticalpodautoscalers",
        name: "machine-controller-manager-vpa",
        container: None,
    },
    Target {
        component: "operatingsystemconfig",
        group: "extensions.gardener.cloud",
        version: "v1alpha1",
        kind: "OperatingSystemConfig",
        resource: "operatingsystemconfigs",
        name: ANY_NAME,
        container: None,
    },
];

/// The target of a component name, if it is one.
pub fn target_for_component(component: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|t| t.component == component)
}

/// A map or list of an object that actions write to, reached through maps only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// `spec.template.metadata.labels`
    Labels,
    /// `spec.template.metadata.annotations`
    Annotations,
    /// `spec.template.spec.containers`
    Containers,
    /// `spec.template.spec.volumes`
    Volumes,
    /// `spec.resourcePolicy.containerPolicies` of a VerticalPodAutoscaler
    ContainerPolicies,
    /// `spec.units` of an OperatingSystemConfig
    Units,
    /// `spec.files` of an OperatingSystemConfig
    Files,
}

impl Place {
    pub const ALL: [Place; 7] = [
        Place::Labels,
        Place::Annotations,
        Place::Containers,
        Place::Volumes,
        Place::ContainerPolicies,
        Place::Units,
        Place::Files,
    ];

    /// The keys from the object's root to the place.
    pub fn path(self) -> &'static [&'static str] {
        match self {
            Place::Labels => &["spec", "template", "metadata", "labels"],
            Place::Annotations => &["spec", "template", "metadata", "annotations"],
            Place::Containers => &["spec", "template", "spec", "containers"],
            Place::Volumes => &["spec", "template", "spec", "volumes"],
            Place::ContainerPolicies => &["spec", "resourcePolicy", "containerPolicies"],
            Place::Units => &["spec", "units"],
            Place::Files => &["spec", "files"],
        }
    }

    /// Whether the place is a list (else a map).
    pub fn is_list(self) -> bool {
        !matches!(self, Place::Labels | Place::Annotations)
    }
}

/// Where in an object an action reads or writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Touch {
    /// A place, whose elements or keys are added, replaced or removed whole.
    Whole(Place),
    /// A list of one container of the pod template (`command`, `env`, ...),
    /// changed in place.
    ContainerField(&'static str),
}

impl Action {
    /// Where the action reads or writes.
    pub fn touches(&self) -> &'static [Touch] {
        use Touch::*;
        match self {
            Action::EnsureFlag(f) => flag_list(f.list.field()),
            Action::RemoveFlag(f) => flag_list(f.list.field()),
            Action::ReplaceFlag(f) => flag_list(f.list.field()),
            Action::EnsureListItem(l) | Action::RemoveListItem(l) => flag_list(l.list.field()),
            Action::EnsureEnv(_) | Action::RemoveEnv(_) => &[ContainerField("env")],
            Action::EnsureVolumeMount(_) | Action::RemoveVolumeMount(_) => {
                &[ContainerField("volumeMounts")]
            }
            Action::EnsureVolume(_) | Action::RemoveVolume(_) => &[Whole(Place::Volumes)],
            Action::EnsureContainer(_) | Action::RemoveContainer(_) => &[Whole(Place::Containers)],
            Action::EnsureVpaContainerPolicy(_) | Action::RemoveVpaContainerPolicy(_) => {
                &[Whole(Place::ContainerPolicies)]
            }
            Action::SetLabel(_) | Action::DeleteLabel(_) => &[Whole(Place::Labels)],
            Action::SetAnnotation(_)
            | Action::DeleteAnnotation(_)
            | Action::SecretChecksum(_)
            | Action::ConfigMapChecksum(_) => &[Whole(Place::Annotations)],
            Action::ProviderSidecar(_) => &[Whole(Place::Volumes), Whole(Place::Containers)],
            Action::KubeletFlag(_) | Action::UnitOption(_) | Action::Unit(_) => {
                &[Whole(Place::Units)]
            }
            Action::KubeletConfig(_) | Action::Sysctl(_) | Action::File(_) => {
                &[Whole(Place::Files)]
            }
        }
    }
}

fn flag_list(field: &str) -> &'static [Touch] {
    match field {
        "args" => &[Touch::ContainerField("args")],
        _ => &[Touch::ContainerField("command")],
    }
}
