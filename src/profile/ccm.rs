//! The `ccm:` section of a provider profile: everything that describes the
//! cloud-controller-manager of one provider. Declarative where the charts are
//! static, named built-ins where Gardener computes values. Parsed with the
//! rest of the profile; [`CcmSpec::validate`] checks what serde cannot.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::condition::Invalid;

pub use super::ccm_entries::{Arg, ArgBuiltin, Env, EnvBuiltin, EnvField};
pub use super::ccm_objects::{CcmObject, ObjectBuiltin, ObjectSource};
pub use super::ccm_parts::{
    ChecksumAlgorithm, CloudConfig, CloudConfigFormat, CloudConfigKind, ConfigChecksum,
    ConfigDelivery, CredentialsMount, HostPathMount, KeyToPath, Probe, Resources, SecurityContext,
    Vpa, WorkloadIdentityDetection,
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
    /// Name of the CCM image in the image vector (`cloud-controller-manager`);
    /// the vector chooses the tag by the shoot's Kubernetes version.
    pub image: String,
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
    /// Name of the secrets-manager config of the CCM's serving certificate
    /// (`cloud-controller-manager-server`; also the volume's name). The
    /// controller generates the certificate, signed by the control-plane CA,
    /// and mounts the Secret it lands in. Absent means no `--tls-*-file` flags
    /// and the CCM serves a self-signed certificate (Alicloud).
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
    /// Further objects of the configuration ManagedResource
    /// (`extension-controlplane-configuration-seed`), in the shoot namespace.
    #[serde(default)]
    pub config_objects: Vec<CcmObject>,
    /// Further objects of the seed ManagedResource (`extension-controlplane-seed`),
    /// in the shoot namespace: ServiceMonitor, PrometheusRule, NetworkPolicies.
    #[serde(default)]
    pub seed_objects: Vec<CcmObject>,
    /// Objects of the shoot ManagedResource (`extension-controlplane-shoot`),
    /// applied into the shoot: RBAC, DaemonSets. Namespaced kinds without a
    /// namespace land in `kube-system`.
    #[serde(default)]
    pub shoot_objects: Vec<CcmObject>,
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

const VALID_UPDATE_MODES: &[&str] = &["Off", "Initial", "Recreate", "InPlaceOrRecreate", "Auto"];

impl CcmSpec {
    /// Check what serde cannot: non-empty names, parseable version ranges,
    /// sane ports. Errors name the field below `ccm`.
    pub fn validate(&self) -> Result<(), Invalid> {
        let invalid = |field: &str, reason: String| (format!("ccm.{field}"), reason);
        if self.container_name.trim().is_empty() {
            return Err(invalid("containerName", "must not be empty".into()));
        }
        if self.image.trim().is_empty() {
            return Err(invalid(
                "image",
                "must name an image of the image vector, e.g. cloud-controller-manager".into(),
            ));
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

    /// The image-vector names the section uses: the CCM's, then those of the
    /// objects' `{{image:<name>}}` placeholders.
    pub fn image_names(&self) -> Vec<&str> {
        let mut names = vec![self.image.as_str()];
        for object in self
            .config_objects
            .iter()
            .chain(&self.seed_objects)
            .chain(&self.shoot_objects)
        {
            names.extend(object.image_names());
        }
        names
    }

    fn validate_checksum(&self) -> Result<(), Invalid> {
        let checksum = &self.cloud_config.checksum;
        let invalid = |reason: String| ("ccm.cloudConfig.checksum.manifest".to_string(), reason);
        match (checksum.algorithm, &checksum.manifest) {
            (ChecksumAlgorithm::ManifestSha256, None) => {
                Err(invalid("algorithm manifestSha256 needs a manifest".into()))
            }
            (ChecksumAlgorithm::ManifestSha256, Some(text)) => {
                let mut rest = text.as_str();
                while let Some(at) = rest.find("${") {
                    rest = &rest[at..];
                    let known = super::ccm_parts::MANIFEST_PLACEHOLDERS
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
}
