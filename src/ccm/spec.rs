//! The `ccm:` section of a provider profile: everything that describes the
//! cloud-controller-manager of one provider. Declarative where the charts are
//! static, named built-ins where Gardener computes values.

use std::collections::BTreeMap;

use serde::Deserialize;

pub use super::spec_entries::{Arg, ArgBuiltin, Env, EnvBuiltin, EnvField};

/// The CCM description of one provider (`ccm:` in the provider profile).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CcmSpec {
    /// Name of the CCM container, e.g. `aws-cloud-controller-manager`.
    pub container_name: String,
    /// Entrypoint (`command[0..]` before the args); empty means the image's
    /// ENTRYPOINT and the args go to `args` instead of `command`.
    #[serde(default)]
    pub command: Vec<String>,
    /// Image per Kubernetes minor (`"1.33": registry/...:v1.33.4`).
    pub images: BTreeMap<String, String>,
    /// Arguments in order: literal strings or `{builtin: <name>}`.
    pub args: Vec<Arg>,
    /// Environment variables in order.
    #[serde(default)]
    pub env: Vec<Env>,
    /// HTTPS serving port (metrics, liveness probe, Service).
    #[serde(default = "default_port")]
    pub port: i32,
    /// Liveness probe (HTTPS GET on `port`).
    pub liveness_probe: Probe,
    /// Container resources (`requests`/`limits` quantity strings).
    #[serde(default)]
    pub resources: Resources,
    /// Container security context.
    #[serde(default)]
    pub security_context: SecurityContext,
    /// Pod labels added to the common Gardener set.
    #[serde(default)]
    pub pod_labels: BTreeMap<String, String>,
    /// `spec.revisionHistoryLimit` of the Deployment.
    #[serde(default = "default_revision_history_limit")]
    pub revision_history_limit: i32,
    /// The cloud config object `cloud-provider-config`.
    pub cloud_config: CloudConfig,
    /// How the credentials Secret is mounted; absent when credentials go into the config.
    #[serde(default)]
    pub credentials_mount: Option<CredentialsMount>,
    /// Name of the Secret with the CCM's serving certificate (`tls.crt`/`tls.key`);
    /// absent means no `--tls-*-file` flags and the CCM serves a self-signed certificate.
    #[serde(default)]
    pub serving_secret: Option<String>,
    /// Read-only host path mounts (private CA bundles).
    #[serde(default)]
    pub host_path_mounts: Vec<HostPathMount>,
    /// The VerticalPodAutoscaler; absent means none (clusters without the VPA CRD).
    #[serde(default)]
    pub vpa: Option<Vpa>,
}

fn default_port() -> i32 {
    10258
}

fn default_revision_history_limit() -> i32 {
    1
}

/// An HTTPS liveness probe on the serving port.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Probe {
    pub path: String,
    #[serde(default = "default_scheme")]
    pub scheme: String,
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
}

/// Where the cloud config lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum CloudConfigKind {
    ConfigMap,
    Secret,
}

/// The renderer of `cloudprovider.conf`. New providers add a variant and a module
/// under `ccm::cloudconfig` (planned: `gcp-ini`, `azure-yaml`, `alicloud-json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CloudConfigFormat {
    /// AWS `[Global]` INI from the infrastructure status.
    AwsIni,
    /// OpenStack INI with the credentials inside.
    OpenstackIni,
}

/// How the credentials Secret (`spec.secretRef`) is mounted into the CCM.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CredentialsMount {
    pub path: String,
    pub key: String,
    /// Mount path with workload identity.
    pub workload_identity_path: String,
    /// Secret key mounted with workload identity.
    pub workload_identity_key: String,
}

/// A read-only hostPath volume.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostPathMount {
    pub name: String,
    pub path: String,
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

/// A CCM section that does not parse or is inconsistent; names the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    #[error("ccm: {0}")]
    Parse(String),
    #[error("ccm.{field}: {reason}")]
    Invalid { field: String, reason: String },
}

const VALID_UPDATE_MODES: &[&str] = &["Off", "Initial", "Recreate", "InPlaceOrRecreate", "Auto"];

impl CcmSpec {
    /// Parse the raw `ccm:` mapping handed over by the profile loader and validate it.
    pub fn from_value(raw: serde_json::Value) -> Result<Self, SpecError> {
        let spec: CcmSpec =
            serde_json::from_value(raw).map_err(|e| SpecError::Parse(e.to_string()))?;
        spec.validate()?;
        Ok(spec)
    }

    /// The `ccm:` section of a loaded provider profile.
    pub fn from_profile(profile: &crate::profile::Profile) -> Result<Self, SpecError> {
        let raw = profile.ccm.clone().ok_or_else(|| SpecError::Invalid {
            field: "ccm".into(),
            reason: format!(
                "profile {} has no ccm section; the ControlPlane controller needs one",
                profile.source
            ),
        })?;
        Self::from_value(raw)
    }

    /// Parse a YAML document whose top level is `ccm:` (the layout of a profile file).
    pub fn from_profile_yaml(yaml: &str) -> Result<Self, SpecError> {
        #[derive(Deserialize)]
        struct Section {
            ccm: serde_json::Value,
        }
        let section: Section =
            serde_saphyr::from_str(yaml).map_err(|e| SpecError::Parse(e.to_string()))?;
        Self::from_value(section.ccm)
    }

    /// Check what serde cannot: non-empty names, parseable minors, sane ports.
    pub fn validate(&self) -> Result<(), SpecError> {
        let invalid = |field: &str, reason: String| SpecError::Invalid {
            field: field.to_string(),
            reason,
        };
        if self.container_name.trim().is_empty() {
            return Err(invalid("containerName", "must not be empty".into()));
        }
        if self.images.is_empty() {
            return Err(invalid(
                "images",
                "needs at least one Kubernetes minor".into(),
            ));
        }
        for (minor, image) in &self.images {
            if parse_minor(minor).is_none() {
                return Err(invalid(
                    &format!("images.{minor}"),
                    "key must be a Kubernetes minor like \"1.33\"".into(),
                ));
            }
            if image.trim().is_empty() {
                return Err(invalid(&format!("images.{minor}"), "image is empty".into()));
            }
        }
        for (i, arg) in self.args.iter().enumerate() {
            if let Arg::Literal(s) = arg
                && s.trim().is_empty()
            {
                return Err(invalid(&format!("args[{i}]"), "empty argument".into()));
            }
        }
        if !(1..=65535).contains(&self.port) {
            return Err(invalid("port", format!("{} is not a TCP port", self.port)));
        }
        if !self.liveness_probe.path.starts_with('/') {
            return Err(invalid(
                "livenessProbe.path",
                format!("{:?} must start with '/'", self.liveness_probe.path),
            ));
        }
        if !matches!(self.liveness_probe.scheme.as_str(), "HTTP" | "HTTPS") {
            return Err(invalid(
                "livenessProbe.scheme",
                format!("{:?} is not HTTP or HTTPS", self.liveness_probe.scheme),
            ));
        }
        if let Some(vpa) = &self.vpa
            && !VALID_UPDATE_MODES.contains(&vpa.update_mode.as_str())
        {
            return Err(invalid(
                "vpa.updateMode",
                format!(
                    "{:?} is not one of {}",
                    vpa.update_mode,
                    VALID_UPDATE_MODES.join(", ")
                ),
            ));
        }
        for (i, m) in self.host_path_mounts.iter().enumerate() {
            if !m.path.starts_with('/') {
                return Err(invalid(
                    &format!("hostPathMounts[{i}].path"),
                    "must be absolute".into(),
                ));
            }
        }
        if let Some(mount) = &self.credentials_mount {
            for (field, path) in [
                ("credentialsMount.path", &mount.path),
                (
                    "credentialsMount.workloadIdentityPath",
                    &mount.workload_identity_path,
                ),
            ] {
                if !path.starts_with('/') {
                    return Err(invalid(field, "must be absolute".into()));
                }
            }
        }
        let uses_wi_env = self.env.iter().any(|e| {
            matches!(
                e,
                Env::Builtin {
                    builtin: EnvBuiltin::AwsCredentials
                }
            )
        });
        if uses_wi_env && self.credentials_mount.is_none() {
            return Err(invalid(
                "env",
                "builtin awsCredentials needs credentialsMount".into(),
            ));
        }
        Ok(())
    }

    /// The image for a Kubernetes `major.minor`, or the override when given.
    pub fn image_for(
        &self,
        version: &semver::Version,
        image_override: Option<&str>,
    ) -> Result<String, SpecError> {
        if let Some(image) = image_override {
            return Ok(image.to_string());
        }
        let wanted = (version.major, version.minor);
        self.images
            .iter()
            .find(|(minor, _)| parse_minor(minor) == Some(wanted))
            .map(|(_, image)| image.clone())
            .ok_or_else(|| SpecError::Invalid {
                field: "images".into(),
                reason: format!(
                    "no image for Kubernetes {}.{} (known: {}); set an image override",
                    version.major,
                    version.minor,
                    self.images.keys().cloned().collect::<Vec<_>>().join(", ")
                ),
            })
    }
}

fn parse_minor(s: &str) -> Option<(u64, u64)> {
    let (major, minor) = s.split_once('.')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// The CCM section of the built-in profile of `provider`.
pub fn builtin_spec(provider: &str) -> Result<CcmSpec, SpecError> {
    let profile = crate::profile::Profile::builtin(provider).map_err(|e| SpecError::Invalid {
        field: "provider".into(),
        reason: e.to_string(),
    })?;
    CcmSpec::from_profile(&profile)
}
