//! The actions of the `cloudprovider` (Secret) and `etcd` components: what a
//! provider's `cloudprovider` and seedprovider webhooks do
//! (reference §1.7, §1.8).

use serde::{Deserialize, Serialize};

/// `cloudproviderSecret: {}`: the provider's `EnsureCloudProviderSecret`,
/// in the Rust the profile's `code` names ([`crate::providers::ProviderCode::cloudprovider_secret`]):
/// the keys it writes are fixed by the provider's consumers (the CCM, CSI,
/// MCM), so they are code rather than rules.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CloudproviderSecret {}

/// Storage class and capacity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Storage {
    pub class_name: String,
    pub capacity: String,
}

/// What an Etcd name that is neither a main nor an events Etcd does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum UnknownEtcd {
    /// Treat `virtual-garden-etcd-*` like the shoot's.
    #[default]
    Same,
    /// Deny every name but `etcd-main` and `etcd-events` (OpenStack's
    /// `unknown ETCD name`).
    Deny,
}

/// `etcdStorage`: the seedprovider ensurer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EtcdStorage {
    /// The extension chart's defaults of `config.etcd.storage`: what
    /// `--etcd-storage-class` and `--etcd-storage-capacity` default to.
    pub chart_defaults: Storage,
    /// Used when the configuration is unset (a flag given empty): main and
    /// events both.
    pub fallback: Storage,
    /// AWS: for the main Etcd, keep the old object's class and capacity when
    /// it has them, so volumes are never resized.
    #[serde(default)]
    pub keep_old_main: bool,
    #[serde(default)]
    pub unknown_names: UnknownEtcd,
    /// GCP: copy the BackupBucket's `providerConfig.store.endpointOverride`
    /// into `spec.backup.store.endpointOverride`.
    #[serde(default)]
    pub backup_endpoint_override: bool,
}
