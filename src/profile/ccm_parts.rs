//! The nested parts of the `ccm:` section: probe, resources, security context,
//! cloud config (kind, format, checksum algorithm), credentials mount, host
//! paths and the VPA.

use std::collections::BTreeMap;

use serde::Deserialize;

/// A liveness probe (HTTP or HTTPS GET).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Probe {
    pub path: String,
    #[serde(default = "default_scheme")]
    pub scheme: String,
    /// Port probed; absent means the serving `port`. Alicloud probes 10258 while
    /// its metrics port is 8080.
    #[serde(default)]
    pub port: Option<i32>,
    pub initial_delay_seconds: i32,
    pub period_seconds: i32,
    pub timeout_seconds: i32,
    pub success_threshold: i32,
    pub failure_threshold: i32,
}

fn default_scheme() -> String {
    "HTTPS".to_string()
}

/// Container resources as quantity strings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Resources {
    #[serde(default)]
    pub requests: BTreeMap<String, String>,
    #[serde(default)]
    pub limits: BTreeMap<String, String>,
}

/// The container security context scion sets.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SecurityContext {
    #[serde(default)]
    pub allow_privilege_escalation: Option<bool>,
    #[serde(default)]
    pub run_as_non_root: Option<bool>,
    #[serde(default)]
    pub run_as_user: Option<i64>,
    #[serde(default)]
    pub run_as_group: Option<i64>,
    #[serde(default)]
    pub drop_capabilities: Vec<String>,
}

/// The cloud config object: always named `cloud-provider-config` with key
/// `cloudprovider.conf`, mounted at `/etc/kubernetes/cloudprovider`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CloudConfig {
    pub kind: CloudConfigKind,
    pub format: CloudConfigFormat,
    /// How the pod annotation `checksum/<kind>-cloud-provider-config` is computed.
    #[serde(default)]
    pub checksum: ConfigChecksum,
    /// Which ManagedResource carries the config object.
    #[serde(default)]
    pub managed_resource: ConfigDelivery,
}

/// The ManagedResource the cloud config travels in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ConfigDelivery {
    /// `extension-controlplane-configuration-seed` (the config chart; aws,
    /// openstack, gcp, azure).
    #[default]
    Configuration,
    /// `extension-controlplane-seed`, with the CCM (Alicloud has no config chart).
    Seed,
}

/// Where the cloud config lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum CloudConfigKind {
    ConfigMap,
    Secret,
}

/// The renderer of `cloudprovider.conf`; one module under `ccm::cloudconfig` each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CloudConfigFormat {
    /// AWS `[Global]` INI from the infrastructure status.
    AwsIni,
    /// OpenStack INI with the credentials inside.
    OpenstackIni,
    /// GCP `[Global]` INI: project, network, subnetwork, zone, node tags.
    GcpIni,
    /// Azure YAML `key: value` lines with the AAD credentials (or the federated
    /// token file with workload identity) inside.
    AzureYaml,
    /// Alicloud one-line JSON `{"Global":{…}}` with the base64 access key pair inside.
    AlicloudJson,
}

/// The checksum algorithm of the cloud config annotation.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConfigChecksum {
    #[serde(default)]
    pub algorithm: ChecksumAlgorithm,
    /// For `manifestSha256`: the manifest text Helm would render, with the
    /// placeholders `${namespace}`, `${name}` and `${data:<key>}` (the value as
    /// stored in the object: base64 for a Secret).
    #[serde(default)]
    pub manifest: Option<String>,
}

/// The three algorithms Gardener's provider extensions use.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ChecksumAlgorithm {
    /// `utils.ComputeChecksum`: SHA-256 of Go's JSON of `.data` (AWS, OpenStack, GCP, Azure).
    #[default]
    Json,
    /// `utils.ComputeSecretChecksum`/`ComputeConfigMapChecksum`: SHA-256 of the
    /// concatenated per-value SHA-256s in key order.
    PerKey,
    /// Helm's `sha256sum` of the rendered manifest text (Alicloud).
    ManifestSha256,
}

/// The placeholders a checksum manifest may use.
pub const MANIFEST_PLACEHOLDERS: &[&str] = &["${namespace}", "${name}", "${data:"];

/// Whether the credentials Secret counts as workload identity.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum WorkloadIdentityDetection {
    /// The Secret has `security.gardener.cloud/purpose=workload-identity-token-requestor`.
    #[default]
    PurposeLabel,
    /// The credentials JSON (`serviceaccount.json`, else `credentialsConfig`) has
    /// `type: external_account` and a non-empty `credential_source.file` (GCP).
    ExternalAccountCredentials,
}

/// How the credentials Secret (`spec.secretRef`) is mounted into the CCM: a
/// static side (`path` with `key` or `items`) and a workload-identity side
/// (`workloadIdentityPath` with `workloadIdentityKey` or `workloadIdentityItems`).
/// A side without a path is not mounted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CredentialsMount {
    #[serde(default)]
    pub path: Option<String>,
    /// One Secret key, mounted under its own name.
    #[serde(default)]
    pub key: Option<String>,
    /// Secret keys mounted under other file names.
    #[serde(default)]
    pub items: Vec<KeyToPath>,
    /// Mount path with workload identity.
    #[serde(default)]
    pub workload_identity_path: Option<String>,
    /// Secret key mounted with workload identity.
    #[serde(default)]
    pub workload_identity_key: Option<String>,
    #[serde(default)]
    pub workload_identity_items: Vec<KeyToPath>,
}

/// A Secret key and the file name it gets in the volume.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyToPath {
    pub key: String,
    pub path: String,
}

impl CredentialsMount {
    /// The mount path and items of the static or workload-identity side; `None`
    /// when that side is not mounted.
    pub fn side(&self, workload_identity: bool) -> Option<(&str, Vec<KeyToPath>)> {
        let (path, key, items) = if workload_identity {
            (
                &self.workload_identity_path,
                &self.workload_identity_key,
                &self.workload_identity_items,
            )
        } else {
            (&self.path, &self.key, &self.items)
        };
        let path = path.as_deref()?;
        let mut out: Vec<KeyToPath> = key
            .iter()
            .map(|k| KeyToPath {
                key: k.clone(),
                path: k.clone(),
            })
            .collect();
        out.extend(items.iter().cloned());
        Some((path, out))
    }

    /// Check one side: a path needs at least one key, keys need a path, the
    /// path is absolute. `field` names the side in errors.
    pub(super) fn validate(&self) -> Result<(), (String, String)> {
        for (wi, path_field, key_field) in [
            (false, "credentialsMount.path", "credentialsMount.key/items"),
            (
                true,
                "credentialsMount.workloadIdentityPath",
                "credentialsMount.workloadIdentityKey/workloadIdentityItems",
            ),
        ] {
            let (path, key, items) = if wi {
                (
                    &self.workload_identity_path,
                    &self.workload_identity_key,
                    &self.workload_identity_items,
                )
            } else {
                (&self.path, &self.key, &self.items)
            };
            let has_keys = key.is_some() || !items.is_empty();
            match path {
                Some(p) if !p.starts_with('/') => {
                    return Err((path_field.into(), "must be absolute".into()));
                }
                Some(_) if !has_keys => {
                    return Err((key_field.into(), "a mount path needs keys".into()));
                }
                None if has_keys => {
                    return Err((path_field.into(), "keys need a mount path".into()));
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// A read-only hostPath volume.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostPathMount {
    pub name: String,
    pub path: String,
    /// `hostPath.type`, e.g. `DirectoryOrCreate`; absent leaves it unset.
    #[serde(default, rename = "type")]
    pub type_: Option<String>,
}

/// The VerticalPodAutoscaler `cloud-controller-manager-vpa`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Vpa {
    pub update_mode: String,
    #[serde(default = "default_controlled_values")]
    pub controlled_values: String,
    /// Absent means all resources.
    #[serde(default)]
    pub controlled_resources: Option<Vec<String>>,
}

fn default_controlled_values() -> String {
    "RequestsOnly".to_string()
}
