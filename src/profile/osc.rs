//! The actions of the `operatingsystemconfig` component: what a provider adds
//! to a worker pool's `-original` OperatingSystemConfig, as Gardener's
//! ensurers do (kubelet flags and unit options, kubelet configuration
//! fields, sysctl lines, additional units and files).
//!
//! Long contents are data files of the provider folder (`contentFile`,
//! `valueFile`, e.g. `files/custom-mtu.service`: relative to the profile, for
//! a built-in one `src/providers/<provider>/`, embedded in the binary), read
//! once when the profile loads.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::condition::Config;
pub use super::condition::NamespaceRef;
use super::version::VersionRange;

/// `kubeletFlag`: Gardener's `EnsureStringWithPrefix` on the tokens of the
/// kubelet unit's first `[Service]` `ExecStart`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct KubeletFlag {
    pub flag: String,
    pub value: String,
}

/// `unitOption`: Gardener's `EnsureUnitOption` on the kubelet unit (append
/// unless an equal option exists).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UnitOptionSpec {
    pub section: String,
    pub name: String,
    /// The value; or `valueFile`, read at load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_file: Option<String>,
}

impl UnitOptionSpec {
    pub fn value(&self) -> &str {
        self.value.as_deref().unwrap_or_default()
    }
}

/// `kubeletConfig`: set a field of the KubeletConfiguration (dotted path of
/// JSON names; a map key may follow a map field, e.g.
/// `featureGates.InTreePluginAWSUnregister`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct KubeletConfigField {
    pub field: String,
    pub value: Value,
}

impl KubeletConfigField {
    pub fn path(&self) -> Vec<String> {
        self.field.split('.').map(str::to_string).collect()
    }
}

/// `sysctl`: in `/etc/sysctl.d/99-k8s-general.conf`, replace every
/// `<key> = <alnum>` (key dots match any character) by `<key> = <value>`, or
/// append `\n# <comment>\n…<key> = <value>`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SysctlSpec {
    pub key: String,
    pub value: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub comments: Vec<String>,
}

/// `unit`: Gardener's `AppendUniqueUnit` (added only if no unit of that name
/// exists; never updated).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UnitSpec {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable: Option<bool>,
    /// `start`, `restart` or `stop`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_file: Option<String>,
}

/// Where a file action puts its file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Placement {
    /// Gardener's `EnsureFileWithPath`: replace the first file with the path,
    /// else append.
    #[default]
    InPlace,
    /// Remove every file with the path, then append (Azure's ACR file).
    MoveToEnd,
}

/// A ConfigMap value as file content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ConfigMapKey {
    pub name: String,
    pub key: String,
    #[serde(default)]
    pub namespace: NamespaceRef,
}

/// An image's file as content (`imageRef`), the image chosen by the shoot's
/// Kubernetes version like the CCM images (most specific matching range).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ImageRef {
    pub images: BTreeMap<String, String>,
    pub file_path_in_image: String,
}

impl ImageRef {
    pub fn image_for(&self, version: &semver::Version) -> Result<&str, String> {
        self.images
            .iter()
            .filter_map(|(key, image)| {
                let range = VersionRange::parse(key).ok()?;
                range
                    .contains(version)
                    .then(|| (range.specificity(), image.as_str()))
            })
            .max_by_key(|(specificity, _)| *specificity)
            .map(|(_, image)| image)
            .ok_or_else(|| {
                format!(
                    "could not find image for Kubernetes {} (known: {})",
                    version,
                    self.images.keys().cloned().collect::<Vec<_>>().join(", ")
                )
            })
    }
}

/// A template variable of a file's content built from a provider config:
/// the list at `path` joined with `join`, `prefix` before it unless empty,
/// quoted with Go's `%q` when `quote: go`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ContentVar {
    pub config: ConfigName,
    pub path: String,
    #[serde(default = "space")]
    pub join: String,
    #[serde(default)]
    pub prefix: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quote: Option<Quote>,
}

fn space() -> String {
    " ".into()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ConfigName {
    InfrastructureConfig,
    ControlPlaneConfig,
    CloudProfileConfig,
}

impl ConfigName {
    pub fn config(self) -> Config {
        match self {
            ConfigName::InfrastructureConfig => Config::Infrastructure,
            ConfigName::ControlPlaneConfig => Config::ControlPlane,
            ConfigName::CloudProfileConfig => Config::CloudProfile,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Quote {
    /// Go's `strconv.Quote`.
    Go,
}

/// `file`: a file of the OSC's `spec.files`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct FileSpec {
    pub path: String,
    /// Octal text (`"0755"`), written as the decimal integer the API holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permissions: Option<String>,
    /// `""` (plain) or `b64`, for inline content.
    #[serde(default)]
    pub encoding: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map_key: Option<ConfigMapKey>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_ref: Option<ImageRef>,
    /// Template variables `{{name}}` of the content.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub vars: BTreeMap<String, ContentVar>,
    #[serde(default)]
    pub placement: Placement,
}

impl FileSpec {
    /// The permissions as the API's integer.
    pub fn mode(&self) -> Option<u32> {
        self.permissions
            .as_deref()
            .and_then(|p| u32::from_str_radix(p, 8).ok())
    }
}

/// Check an OSC action after its files were read. Errors name the problem;
/// the caller adds the file, rule and field.
pub fn check_file(spec: &FileSpec) -> Result<(), String> {
    if spec.path.trim().is_empty() || !spec.path.starts_with('/') {
        return Err(format!("`path` {:?} must be an absolute path", spec.path));
    }
    if let Some(p) = &spec.permissions
        && (u32::from_str_radix(p, 8).is_err() || p.is_empty())
    {
        return Err(format!("`permissions` {p:?} must be octal, e.g. \"0644\""));
    }
    if !matches!(spec.encoding.as_str(), "" | "b64") {
        return Err(format!(
            "`encoding` {:?} is not one of \"\" or b64",
            spec.encoding
        ));
    }
    let sources = [
        spec.content.is_some(),
        spec.config_map_key.is_some(),
        spec.image_ref.is_some(),
    ];
    if sources.iter().filter(|s| **s).count() != 1 {
        return Err(
            "needs exactly one of `content`, `contentFile`, `configMapKey` or `imageRef`".into(),
        );
    }
    if let Some(image) = &spec.image_ref {
        if image.images.is_empty() {
            return Err("`imageRef.images` needs at least one version range".into());
        }
        for key in image.images.keys() {
            VersionRange::parse(key).map_err(|e| format!("`imageRef.images` key {key:?}: {e}"))?;
        }
    }
    for (name, var) in &spec.vars {
        if name.is_empty() || var.path.split('.').any(str::is_empty) {
            return Err(format!("`vars.{name}` needs a name and a dotted `path`"));
        }
    }
    Ok(())
}
