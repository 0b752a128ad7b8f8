//! The actions of a rule: Gardener's helper primitives, as a profile writes
//! them (each a single-key map, e.g. `- ensureFlag: {flag: --cloud-provider=,
//! value: external}`). Unknown fields are rejected.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::osc::{FileSpec, KubeletConfigField, KubeletFlag, SysctlSpec, UnitOptionSpec, UnitSpec};
use super::seed::{CloudproviderSecret, EtcdStorage};

/// Which string list of a container a flag action edits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum FlagList {
    /// `command` — where Gardener's kube-apiserver, kube-controller-manager,
    /// kube-scheduler and cluster-autoscaler helpers (and Gardener's provider
    /// ensurers) put and look for flags.
    #[default]
    Command,
    /// `args`.
    Args,
}

impl FlagList {
    pub fn field(self) -> &'static str {
        match self {
            FlagList::Command => "command",
            FlagList::Args => "args",
        }
    }
}

/// `ensureFlag`: Gardener's `EnsureStringWithPrefix`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EnsureFlag {
    /// The prefix, normally ending in `=`, e.g. `--cloud-provider=`.
    pub flag: String,
    pub value: String,
    #[serde(default, rename = "in")]
    pub list: FlagList,
}

/// `removeFlag`: Gardener's `EnsureNoStringWithPrefix`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RemoveFlag {
    pub flag: String,
    #[serde(default, rename = "in")]
    pub list: FlagList,
}

/// `replaceFlag`: Gardener's `EnsureNoStringWithPrefix(remove)` followed by
/// `EnsureStringWithPrefix(flag, value)` (remove every form, re-append), made a
/// fixed point: a list whose only element starting with `remove` already is
/// `flag+value` is left as it is, so a second run does not move the flag.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ReplaceFlag {
    /// The raw prefix of every form to remove, e.g. `--allocate-node-cidrs`.
    pub remove: String,
    /// The prefix of the flag appended; must start with `remove`.
    pub flag: String,
    pub value: String,
    #[serde(default, rename = "in")]
    pub list: FlagList,
}

/// `ensureListItem` / `removeListItem`: Gardener's `EnsureStringWithPrefixContains`
/// and `EnsureNoStringWithPrefixContains`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ListItem {
    pub flag: String,
    pub item: String,
    #[serde(default = "comma")]
    pub separator: String,
    #[serde(default, rename = "in")]
    pub list: FlagList,
}

fn comma() -> String {
    ",".to_string()
}

/// An item of a name-keyed list, referred to by name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NameRef {
    pub name: String,
}

/// A VPA container policy, referred to by `containerName`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ContainerNameRef {
    pub container_name: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct KeyValue {
    pub key: String,
    pub value: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct KeyRef {
    pub key: String,
}

/// `providerSidecar`: the built-in function for Gardener's
/// `machinecontrollermanager.ProviderSidecarContainer`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ProviderSidecar {
    /// e.g. `provider-aws`: the container is `machine-controller-manager-<provider>`.
    pub provider: String,
    /// Name of the sidecar image in the image vector, e.g.
    /// `machine-controller-manager-provider-aws` (overridable at run time, see
    /// `Engine::with_sidecar_image`).
    pub image: String,
    /// Mount the workload-identity token when the `cloudprovider` Secret is
    /// labelled `security.gardener.cloud/purpose=workload-identity-token-requestor`.
    /// Needs the Secret (a missing Secret denies the request).
    #[serde(default, skip_serializing_if = "is_false")]
    pub workload_identity: bool,
    /// Further labels (key: value) the `cloudprovider` Secret must carry, besides
    /// the purpose label, for workload identity (GCP also needs
    /// `workloadidentity.security.gardener.cloud/provider: gcp`). Needs
    /// `workloadIdentity: true`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub workload_identity_labels: BTreeMap<String, String>,
    /// Arguments appended after Gardener's standard ones (after `--v=3`), e.g.
    /// Azure's `--machine-pv-reattach-timeout=150s`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra_args: Vec<String>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// One primitive action of a rule. In YAML a single-key map, e.g.
/// `- ensureFlag: {flag: --cloud-provider=, value: external}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub enum Action {
    EnsureFlag(EnsureFlag),
    RemoveFlag(RemoveFlag),
    ReplaceFlag(ReplaceFlag),
    EnsureListItem(ListItem),
    RemoveListItem(ListItem),
    /// A whole `EnvVar` object (must have `name`).
    EnsureEnv(Value),
    RemoveEnv(NameRef),
    /// A whole `VolumeMount` object (must have `name`).
    EnsureVolumeMount(Value),
    RemoveVolumeMount(NameRef),
    /// A whole `Volume` object of the pod template (must have `name`).
    EnsureVolume(Value),
    RemoveVolume(NameRef),
    /// A whole `Container` of the pod template (must have `name`).
    EnsureContainer(Value),
    RemoveContainer(NameRef),
    /// A whole `ContainerResourcePolicy` of a VPA (must have `containerName`).
    EnsureVpaContainerPolicy(Value),
    RemoveVpaContainerPolicy(ContainerNameRef),
    /// Pod-template label.
    SetLabel(KeyValue),
    DeleteLabel(KeyRef),
    /// Pod-template annotation.
    SetAnnotation(KeyValue),
    DeleteAnnotation(KeyRef),
    /// Pod-template annotation `checksum/secret-<name>` over the Secret's data.
    SecretChecksum(NameRef),
    /// Pod-template annotation `checksum/configmap-<name>` over the ConfigMap's data.
    ConfigMapChecksum(NameRef),
    ProviderSidecar(ProviderSidecar),
    /// OperatingSystemConfig: a flag of the kubelet's ExecStart.
    KubeletFlag(KubeletFlag),
    /// OperatingSystemConfig: an option of the kubelet unit.
    UnitOption(UnitOptionSpec),
    /// OperatingSystemConfig: a field of the kubelet configuration file.
    KubeletConfig(KubeletConfigField),
    /// OperatingSystemConfig: a line of `/etc/sysctl.d/99-k8s-general.conf`.
    Sysctl(SysctlSpec),
    /// OperatingSystemConfig: an additional unit.
    Unit(UnitSpec),
    /// OperatingSystemConfig: an additional file.
    File(Box<FileSpec>),
    /// The `cloudprovider` Secret: the provider's credential keys.
    CloudproviderSecret(CloudproviderSecret),
    /// An Etcd: storage class and capacity.
    EtcdStorage(Box<EtcdStorage>),
}

/// Where an action applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// A container of a Deployment's pod template.
    Container,
    /// The pod template of a Deployment.
    PodTemplate,
    /// A VerticalPodAutoscaler.
    Vpa,
    /// An OperatingSystemConfig.
    Osc,
    /// A Secret.
    Secret,
    /// An Etcd.
    Etcd,
}

impl Action {
    /// The YAML key of the action.
    pub fn kind(&self) -> &'static str {
        match self {
            Action::EnsureFlag(_) => "ensureFlag",
            Action::RemoveFlag(_) => "removeFlag",
            Action::ReplaceFlag(_) => "replaceFlag",
            Action::EnsureListItem(_) => "ensureListItem",
            Action::RemoveListItem(_) => "removeListItem",
            Action::EnsureEnv(_) => "ensureEnv",
            Action::RemoveEnv(_) => "removeEnv",
            Action::EnsureVolumeMount(_) => "ensureVolumeMount",
            Action::RemoveVolumeMount(_) => "removeVolumeMount",
            Action::EnsureVolume(_) => "ensureVolume",
            Action::RemoveVolume(_) => "removeVolume",
            Action::EnsureContainer(_) => "ensureContainer",
            Action::RemoveContainer(_) => "removeContainer",
            Action::EnsureVpaContainerPolicy(_) => "ensureVpaContainerPolicy",
            Action::RemoveVpaContainerPolicy(_) => "removeVpaContainerPolicy",
            Action::SetLabel(_) => "setLabel",
            Action::DeleteLabel(_) => "deleteLabel",
            Action::SetAnnotation(_) => "setAnnotation",
            Action::DeleteAnnotation(_) => "deleteAnnotation",
            Action::SecretChecksum(_) => "secretChecksum",
            Action::ConfigMapChecksum(_) => "configMapChecksum",
            Action::ProviderSidecar(_) => "providerSidecar",
            Action::KubeletFlag(_) => "kubeletFlag",
            Action::UnitOption(_) => "unitOption",
            Action::KubeletConfig(_) => "kubeletConfig",
            Action::Sysctl(_) => "sysctl",
            Action::Unit(_) => "unit",
            Action::File(_) => "file",
            Action::CloudproviderSecret(_) => "cloudproviderSecret",
            Action::EtcdStorage(_) => "etcdStorage",
        }
    }

    /// Where the action applies.
    pub fn scope(&self) -> Scope {
        match self {
            Action::EnsureFlag(_)
            | Action::RemoveFlag(_)
            | Action::ReplaceFlag(_)
            | Action::EnsureListItem(_)
            | Action::RemoveListItem(_)
            | Action::EnsureEnv(_)
            | Action::RemoveEnv(_)
            | Action::EnsureVolumeMount(_)
            | Action::RemoveVolumeMount(_) => Scope::Container,
            Action::EnsureVpaContainerPolicy(_) | Action::RemoveVpaContainerPolicy(_) => Scope::Vpa,
            Action::KubeletFlag(_)
            | Action::UnitOption(_)
            | Action::KubeletConfig(_)
            | Action::Sysctl(_)
            | Action::Unit(_)
            | Action::File(_) => Scope::Osc,
            Action::CloudproviderSecret(_) => Scope::Secret,
            Action::EtcdStorage(_) => Scope::Etcd,
            _ => Scope::PodTemplate,
        }
    }
}
