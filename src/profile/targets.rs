//! What a profile's rules apply to and where their actions write: the
//! components (objects the webhook mutates) and the places of an object.
//!
//! The `components:` keys of a profile are [`TARGETS`], each served by one
//! of the [`WEBHOOKS`]: this is the one table the router (the paths the
//! server serves), the webhook configuration (`scion manifests` and the
//! self-registration: entry names, rules, selectors, failure policy), the
//! dispatch and the decoder's reach all read. [`Action::touches`] says, with one exhaustive match,
//! where each action writes, so a new action cannot be added without saying
//! so; the copy-on-write draft and the decoder's reach are built from it.

use super::actions::Action;

/// The namespace label a webhook's namespaceSelector matches the provider
/// type with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderLabel {
    /// `shoot.gardener.cloud/provider`: the shoot's provider.
    Shoot,
    /// `seed.gardener.cloud/provider`: the seed's provider (the seedprovider
    /// webhook mutates every shoot's Etcds on a seed of its provider).
    Seed,
}

impl ProviderLabel {
    pub fn key(self) -> &'static str {
        match self {
            ProviderLabel::Shoot => "shoot.gardener.cloud/provider",
            ProviderLabel::Seed => "seed.gardener.cloud/provider",
        }
    }
}

/// One webhook of the seed MutatingWebhookConfiguration, as Gardener's
/// `BuildWebhookConfigs` registers it: entry `<name>.<provider>.extensions.gardener.cloud`,
/// served at `path`, CREATE and UPDATE of its targets' kinds, failurePolicy
/// `Fail` (a seed webhook).
#[derive(Debug, PartialEq, Eq)]
pub struct Webhook {
    pub name: &'static str,
    pub path: &'static str,
    pub namespace_selector: ProviderLabel,
    /// `matchLabels` of the objectSelector.
    pub object_selector: Option<(&'static str, &'static str)>,
}

/// The control-plane webhook: Deployments, the MCM VPA, OperatingSystemConfigs.
pub static CONTROLPLANE_WEBHOOK: Webhook = Webhook {
    name: "controlplane",
    path: "/controlplane",
    namespace_selector: ProviderLabel::Shoot,
    object_selector: Some((
        "provider.extensions.gardener.cloud/mutated-by-controlplane-webhook",
        "true",
    )),
};

/// The `cloudprovider` Secret webhook.
pub static CLOUDPROVIDER_WEBHOOK: Webhook = Webhook {
    name: "cloudprovider",
    path: "/cloudprovider",
    namespace_selector: ProviderLabel::Shoot,
    object_selector: Some(("gardener.cloud/purpose", "cloudprovider")),
};

/// The seedprovider (Etcd) webhook.
pub static SEEDPROVIDER_WEBHOOK: Webhook = Webhook {
    name: "seedprovider",
    path: "/seedprovider",
    namespace_selector: ProviderLabel::Seed,
    object_selector: None,
};

/// Every webhook, sorted by name as Gardener sorts them (gardener#3320).
pub static WEBHOOKS: [&Webhook; 3] = [
    &CLOUDPROVIDER_WEBHOOK,
    &CONTROLPLANE_WEBHOOK,
    &SEEDPROVIDER_WEBHOOK,
];

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
    /// The webhook that receives the objects.
    pub webhook: &'static Webhook,
}

/// The `name` of a target whose objects may have any name.
pub const ANY_NAME: &str = "*";

impl Target {
    /// Whether the object is a VerticalPodAutoscaler.
    pub fn is_vpa(&self) -> bool {
        self.kind == "VerticalPodAutoscaler"
    }

    /// Whether the object is an OperatingSystemConfig.
    pub fn is_osc(&self) -> bool {
        self.kind == "OperatingSystemConfig"
    }

    /// Whether the object is the `cloudprovider` Secret.
    pub fn is_secret(&self) -> bool {
        self.kind == "Secret"
    }

    /// Whether the object is an Etcd.
    pub fn is_etcd(&self) -> bool {
        self.kind == "Etcd"
    }

    /// Whether the object has a Deployment's pod template.
    pub fn is_deployment(&self) -> bool {
        self.container.is_some()
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
        webhook: &CONTROLPLANE_WEBHOOK,
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
        webhook: &CONTROLPLANE_WEBHOOK,
    },
    Target {
        component: "operatingsystemconfig",
        group: "extensions.gardener.cloud",
        version: "v1alpha1",
        kind: "OperatingSystemConfig",
        resource: "operatingsystemconfigs",
        name: ANY_NAME,
        container: None,
        webhook: &CONTROLPLANE_WEBHOOK,
    },
    Target {
        component: "cloudprovider",
        group: "",
        version: "v1",
        kind: "Secret",
        resource: "secrets",
        name: "cloudprovider",
        container: None,
        webhook: &CLOUDPROVIDER_WEBHOOK,
    },
    Target {
        component: "etcd",
        group: "druid.gardener.cloud",
        version: "v1alpha1",
        kind: "Etcd",
        resource: "etcds",
        name: ANY_NAME,
        container: None,
        webhook: &SEEDPROVIDER_WEBHOOK,
    },
];

/// The Etcd names Gardener's generic mutator dispatches (`etcd` target).
pub const ETCD_NAMES: &[&str] = &[
    "etcd-main",
    "etcd-events",
    "virtual-garden-etcd-main",
    "virtual-garden-etcd-events",
];

/// The targets a webhook receives, in table order.
pub fn targets_of(webhook: &Webhook) -> impl Iterator<Item = &'static Target> + '_ {
    TARGETS
        .iter()
        .filter(move |t| std::ptr::eq(t.webhook, webhook))
}

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
    /// `data` of a Secret
    Data,
    /// `spec` of an Etcd (only Etcd rules use it, so it is never an
    /// ancestor of another place written in the same object)
    EtcdSpec,
}

impl Place {
    pub const ALL: [Place; 9] = [
        Place::Labels,
        Place::Annotations,
        Place::Containers,
        Place::Volumes,
        Place::ContainerPolicies,
        Place::Units,
        Place::Files,
        Place::Data,
        Place::EtcdSpec,
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
            Place::Data => &["data"],
            Place::EtcdSpec => &["spec"],
        }
    }

    /// Whether the place is a list (else a map).
    pub fn is_list(self) -> bool {
        !matches!(
            self,
            Place::Labels | Place::Annotations | Place::Data | Place::EtcdSpec
        )
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
            Action::CloudproviderSecret(_) => &[Whole(Place::Data)],
            Action::EtcdStorage(_) => &[Whole(Place::EtcdSpec)],
        }
    }
}

fn flag_list(field: &str) -> &'static [Touch] {
    match field {
        "args" => &[Touch::ContainerField("args")],
        _ => &[Touch::ContainerField("command")],
    }
}
