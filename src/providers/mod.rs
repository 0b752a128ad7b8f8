//! The built-in providers, one folder each, and the one trait their Rust
//! implements. Everything scion knows about a cloud is in its folder:
//!
//! | file | what |
//! |---|---|
//! | `<p>/profile.yaml` | the webhook rules per component, the OperatingSystemConfig actions, which files below it are used |
//! | `<p>/images.yaml` | the image vector (Gardener's `images.yaml` format) |
//! | `<p>/components/<name>.yaml` | the control-plane components as data: the Kubernetes objects of each, with placeholders and conditions (`docs/profiles.md`, "Components") |
//! | `<p>/files/` | data files the rules name (unit bodies, scripts) |
//! | `<p>/mod.rs` | the Rust a format needs, behind [`ProviderCode`]: the cloud config, the `cloudprovider` Secret's keys, how workload identity is recognised |
//!
//! The folders are embedded in the binary ([`builtin`]); a provider that is not
//! built in is the same folder on disk (`--provider-dir`), without Rust, or
//! naming the Rust of a built-in one (`code: aws` in its profile). Outside
//! this folder the code names no provider (`tests/providers_names.rs`).

mod alicloud;
mod aws;
mod azure;
mod gcp;
mod openstack;
pub mod secret;
pub mod support;

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::gardener::{ControlPlane, ObjectData, ShootContext};

pub use secret::{Data, SecretContext};

/// A built-in provider folder: its files by path below the folder, and its Rust.
#[derive(Debug, Clone, Copy)]
pub struct BuiltinFolder {
    pub name: &'static str,
    /// `(path, text)`: `profile.yaml`, `images.yaml`, `components/*.yaml`, `files/*`.
    pub files: &'static [(&'static str, &'static str)],
    /// The Rust the folder's profile names with `code: <name>`.
    pub code: &'static dyn ProviderCode,
}

impl BuiltinFolder {
    /// A file of the folder by its path below it.
    pub fn file(&self, path: &str) -> Option<&'static str> {
        self.files.iter().find(|(p, _)| *p == path).map(|(_, t)| *t)
    }
}

impl std::fmt::Debug for dyn ProviderCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ProviderCode({})", self.name())
    }
}

/// A built-in folder: its `profile.yaml` and `images.yaml`, the other files
/// listed (paths below the folder, embedded from the calling module's
/// directory), and its Rust.
macro_rules! builtin_folder {
    ($name:literal, $code:expr, [$($file:literal),* $(,)?]) => {
        crate::providers::BuiltinFolder {
            name: $name,
            files: &[
                ("profile.yaml", include_str!("profile.yaml")),
                ("images.yaml", include_str!("images.yaml")),
                $(($file, include_str!($file)),)*
            ],
            code: $code,
        }
    };
}
use builtin_folder;

/// The built-in folders, by name.
pub const BUILTIN: &[BuiltinFolder] = &[
    alicloud::FOLDER,
    aws::FOLDER,
    azure::FOLDER,
    gcp::FOLDER,
    openstack::FOLDER,
];

/// Names of the built-in providers.
pub const BUILTIN_PROVIDERS: &[&str] = &["alicloud", "aws", "azure", "gcp", "openstack"];

/// The built-in folder of `name`.
pub fn builtin(name: &str) -> Option<&'static BuiltinFolder> {
    BUILTIN.iter().find(|f| f.name == name)
}

/// The Rust of `name` (what a profile's `code: <name>` names).
pub fn code(name: &str) -> Option<&'static dyn ProviderCode> {
    builtin(name).map(|f| f.code)
}

/// What a provider's Rust reads for one render.
#[derive(Debug, Clone, Copy)]
pub struct CodeInput<'a> {
    pub cp: &'a ControlPlane,
    pub shoot: &'a ShootContext,
    /// The credentials Secret's data (decoded bytes by key), when it exists.
    pub credentials: Option<&'a BTreeMap<String, Vec<u8>>>,
    /// The credentials count as workload identity.
    pub workload_identity: bool,
}

/// Why a provider's Rust could not compute a value. Messages name the object
/// and the field, as the Go extensions' errors do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodeError {
    #[error(
        "could not determine subnet from infrastructureProviderStatus of controlplane '{controlplane}': {reason}"
    )]
    InfrastructureStatus {
        controlplane: String,
        reason: String,
    },
    #[error("invalid infrastructureProviderStatus of controlplane '{controlplane}': {reason}")]
    InfrastructureField {
        controlplane: String,
        reason: String,
    },
    #[error("invalid providerConfig of controlplane '{controlplane}': {field}: {reason}")]
    ProviderConfig {
        controlplane: String,
        field: String,
        reason: String,
    },
    #[error("invalid credentials Secret: {reason}")]
    Credentials { reason: String },
    #[error("invalid CloudProfileConfig: {reason}")]
    CloudProfileConfig { reason: String },
    #[error("invalid shoot in the Cluster: {field}: {reason}")]
    Shoot { field: String, reason: String },
}

/// A value a provider's Rust computes for components (`code.<name>`).
#[derive(Clone, Copy)]
pub struct CodeValue {
    pub name: &'static str,
    /// One line of what it is (`scion validate`, docs).
    pub about: &'static str,
    pub compute: fn(&CodeInput<'_>) -> Result<Value, CodeError>,
}

/// Compute the value `name` of `code` for a render.
pub fn value(
    code: &dyn ProviderCode,
    name: &str,
    input: &CodeInput<'_>,
) -> Result<Value, CodeError> {
    match code.values().iter().find(|v| v.name == name) {
        Some(v) => (v.compute)(input),
        // Ruled out when a profile loads: components name only the values
        // of their profile's code.
        None => Err(CodeError::ProviderConfig {
            controlplane: String::new(),
            field: format!("code.{name}"),
            reason: format!("{} computes no such value", code.name()),
        }),
    }
}

/// Run the `cloudprovider` Secret ensurer of `code` over `secret`: the new
/// `data`, `None` when unchanged.
pub fn ensure_cloudprovider_secret(
    code: &dyn ProviderCode,
    secret: &Value,
    ctx: &SecretContext<'_>,
) -> Result<Option<Map<String, Value>>, String> {
    let mut data = Data::of(secret)?;
    code.cloudprovider_secret(secret, &mut data, ctx)?;
    data.changed(secret)
}

/// The Rust of a provider folder, for what a format needs code for. Every
/// method has a default, so a provider implements only what it has.
pub trait ProviderCode: Sync + Send {
    /// The name profiles use (`code: <name>`).
    fn name(&self) -> &'static str;

    /// The values components read as `code.<name>`. Checked when a profile
    /// loads.
    fn values(&self) -> &'static [CodeValue] {
        &[]
    }

    /// Whether the credentials count as workload identity; `None` for
    /// Gardener's rule (the Secret's purpose label
    /// `workload-identity-token-requestor`).
    fn workload_identity(&self, credentials: Option<&ObjectData>) -> Option<bool> {
        let _ = credentials;
        None
    }

    /// The `cloudprovider` Secret webhook (`EnsureCloudProviderSecret`):
    /// write the keys into `data` (the Secret's, decoded on read); leaving it
    /// alone is no change; an error denies (403). [`ensure_cloudprovider_secret`]
    /// runs it.
    fn cloudprovider_secret(
        &self,
        secret: &Value,
        data: &mut Data,
        ctx: &SecretContext<'_>,
    ) -> Result<(), String> {
        let _ = (secret, data, ctx);
        Ok(())
    }

    /// The label `(key, value)` of the seed Secrets the ensurer of this Secret
    /// reads (given to it as [`SecretContext::labelled_secrets`]); `None`
    /// when it reads none.
    fn cloudprovider_secret_reads(&self, secret: &Value) -> Option<(&'static str, &'static str)> {
        let _ = secret;
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_folder_is_listed_once_with_its_code_and_files() {
        let names: Vec<&str> = BUILTIN.iter().map(|f| f.name).collect();
        assert_eq!(names, BUILTIN_PROVIDERS);
        for folder in BUILTIN {
            assert_eq!(folder.code.name(), folder.name);
            for file in ["profile.yaml", "images.yaml"] {
                assert!(folder.file(file).is_some(), "{}: {file}", folder.name);
            }
            assert!(
                folder
                    .files
                    .iter()
                    .any(|(p, _)| p.starts_with("components/")),
                "{}",
                folder.name
            );
        }
        assert!(builtin("nope").is_none() && code("nope").is_none());
    }
}
