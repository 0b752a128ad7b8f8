//! The `ccm:` section of a provider profile: everything that describes the
//! cloud-controller-manager of one provider. Declarative where the charts are
//! static, named built-ins where Gardener computes values.

use std::collections::BTreeMap;

use serde::Deserialize;

pub use super::spec_entries::{Arg, ArgBuiltin, Condition, Env, EnvBuiltin, EnvField};
pub use super::spec_parts::{
    ChecksumAlgorithm, CloudConfig, CloudConfigFormat, CloudConfigKind, ConfigChecksum,
    CredentialsMount, HostPathMount, KeyToPath, Probe, Resources, SecurityContext, Vpa,
    WorkloadIdentityDetection,
};

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
    /// Image per Kubernetes minor. Keys: `"1.33"` (that minor), `">= 1.36"` (that
    /// minor and later, the highest such key below the version wins) or `"*"` (any).
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
    /// Whether the pod gets `checksum/secret-<secretRef.name>`; false when the
    /// credentials only reach the CCM through the cloud config (Alicloud).
    #[serde(default = "default_true")]
    pub credentials_checksum: bool,
    /// How workload identity is recognised (mount side, env, config variant).
    #[serde(default)]
    pub workload_identity: WorkloadIdentityDetection,
}

fn default_true() -> bool {
    true
}

fn default_port() -> i32 {
    10258
}

fn default_revision_history_limit() -> i32 {
    1
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
            if ImageKey::parse(minor).is_none() {
                return Err(invalid(
                    &format!("images.{minor}"),
                    "key must be a Kubernetes minor like \"1.33\", \">= 1.36\" or \"*\"".into(),
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
        for (field, port) in [
            ("port", Some(self.port)),
            ("livenessProbe.port", self.liveness_probe.port),
        ] {
            if let Some(port) = port
                && !(1..=65535).contains(&port)
            {
                return Err(invalid(field, format!("{port} is not a TCP port")));
            }
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
            mount
                .validate()
                .map_err(|(field, reason)| invalid(&field, reason))?;
        }
        self.validate_checksum()?;
        for (i, e) in self.env.iter().enumerate() {
            if matches!(e, Env::CredentialsFile { .. }) && self.credentials_mount.is_none() {
                return Err(invalid(
                    &format!("env[{i}]"),
                    "credentialsFile needs credentialsMount".into(),
                ));
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

    fn validate_checksum(&self) -> Result<(), SpecError> {
        let checksum = &self.cloud_config.checksum;
        let invalid = |reason: String| SpecError::Invalid {
            field: "cloudConfig.checksum.manifest".into(),
            reason,
        };
        match (checksum.algorithm, &checksum.manifest) {
            (ChecksumAlgorithm::ManifestSha256, None) => {
                Err(invalid("algorithm manifestSha256 needs a manifest".into()))
            }
            (ChecksumAlgorithm::ManifestSha256, Some(text)) => {
                let mut rest = text.as_str();
                while let Some(at) = rest.find("${") {
                    rest = &rest[at..];
                    let known = super::spec_parts::MANIFEST_PLACEHOLDERS
                        .iter()
                        .any(|p| rest.starts_with(p));
                    let end = rest.find('}');
                    if !known || end.is_none() {
                        let shown: String = rest.chars().take(24).collect();
                        return Err(invalid(format!(
                            "unknown placeholder {shown:?} (known: ${{namespace}}, ${{name}}, ${{data:<key>}})"
                        )));
                    }
                    rest = &rest[end.unwrap_or_default() + 1..];
                }
                Ok(())
            }
            (_, Some(_)) => Err(invalid(
                "a manifest is only used by algorithm manifestSha256".into(),
            )),
            (_, None) => Ok(()),
        }
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
        let keyed: Vec<(ImageKey, &String)> = self
            .images
            .iter()
            .filter_map(|(k, v)| ImageKey::parse(k).map(|k| (k, v)))
            .collect();
        let exact = keyed
            .iter()
            .find(|(k, _)| *k == ImageKey::Minor(wanted.0, wanted.1));
        let from = keyed
            .iter()
            .filter_map(|(k, v)| match k {
                ImageKey::From(ma, mi) if (*ma, *mi) <= wanted => Some(((*ma, *mi), *v)),
                _ => None,
            })
            .max_by_key(|(minor, _)| *minor)
            .map(|(_, v)| v);
        let any = keyed.iter().find(|(k, _)| *k == ImageKey::Any);
        exact
            .map(|(_, v)| *v)
            .or(from)
            .or(any.map(|(_, v)| *v))
            .cloned()
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

/// A key of `images`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ImageKey {
    Minor(u64, u64),
    From(u64, u64),
    Any,
}

impl ImageKey {
    fn parse(key: &str) -> Option<Self> {
        let key = key.trim();
        if key == "*" {
            return Some(Self::Any);
        }
        if let Some(rest) = key.strip_prefix(">=") {
            let (ma, mi) = parse_minor(rest.trim())?;
            return Some(Self::From(ma, mi));
        }
        parse_minor(key).map(|(ma, mi)| Self::Minor(ma, mi))
    }
}

/// The CCM section of the built-in profile of `provider`.
pub fn builtin_spec(provider: &str) -> Result<CcmSpec, SpecError> {
    let profile = crate::profile::Profile::builtin(provider).map_err(|e| SpecError::Invalid {
        field: "provider".into(),
        reason: e.to_string(),
    })?;
    CcmSpec::from_profile(&profile)
}
