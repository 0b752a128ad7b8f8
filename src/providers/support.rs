//! What the providers' Rust shares: reading raw provider configs and
//! statuses, the credentials Secret's keys, and errors that name the
//! ControlPlane.

use serde_json::Value;

use super::{CodeError, CodeInput};

/// Name of the cloud config object (`cloud-provider-config`) the CCMs mount.
pub const CLOUD_CONFIG_NAME: &str = "cloud-provider-config";
/// Key of the config file in that object.
pub const CLOUD_CONFIG_KEY: &str = "cloudprovider.conf";
/// Where the CCMs mount it.
pub const CLOUD_CONFIG_DIR: &str = "/etc/kubernetes/cloudprovider";

impl CodeInput<'_> {
    /// `namespace/name` of the ControlPlane.
    pub fn controlplane(&self) -> String {
        format!("{}/{}", self.cp.namespace(), self.cp.name())
    }

    /// An error about the infrastructure status naming the ControlPlane.
    pub fn infra_error(&self, reason: impl Into<String>) -> CodeError {
        CodeError::InfrastructureField {
            controlplane: self.controlplane(),
            reason: reason.into(),
        }
    }

    /// The infrastructure status, required.
    pub fn infra(&self) -> Result<&Value, CodeError> {
        self.cp
            .spec
            .infrastructure_provider_status
            .as_ref()
            .filter(|v| !v.is_null())
            .ok_or_else(|| self.infra_error("infrastructureProviderStatus is missing"))
    }

    /// A credentials value as UTF-8 text, `None` when absent.
    pub fn secret_str(&self, key: &str) -> Result<Option<&str>, CodeError> {
        secret_str(self.credentials, key)
    }

    /// A non-empty credentials value, or an error naming the key.
    pub fn required_secret(&self, key: &str) -> Result<&str, CodeError> {
        if self.credentials.is_none() {
            return Err(CodeError::Credentials {
                reason: "the credentials Secret does not exist".into(),
            });
        }
        match self.secret_str(key)? {
            Some(v) if !v.is_empty() => Ok(v),
            _ => Err(CodeError::Credentials {
                reason: format!("missing or empty key {key:?}"),
            }),
        }
    }
}

/// A Secret value as UTF-8 text, `None` when absent.
pub fn secret_str<'a>(
    data: Option<&'a std::collections::BTreeMap<String, Vec<u8>>>,
    key: &str,
) -> Result<Option<&'a str>, CodeError> {
    match data.and_then(|d| d.get(key)) {
        None => Ok(None),
        Some(bytes) => std::str::from_utf8(bytes)
            .map(Some)
            .map_err(|_| CodeError::Credentials {
                reason: format!("key {key:?} is not UTF-8"),
            }),
    }
}

/// A string at `path` (dot-separated) in a raw object.
pub fn str_at<'v>(value: Option<&'v Value>, path: &str) -> Option<&'v str> {
    let mut cur = value?;
    for part in path.split('.') {
        cur = cur.get(part)?;
    }
    cur.as_str()
}

/// The first entry of the list at `path` whose `purpose` is `purpose`.
pub fn first_with_purpose<'v>(value: &'v Value, path: &str, purpose: &str) -> Option<&'v Value> {
    let mut cur = value;
    for part in path.split('.') {
        cur = cur.get(part)?;
    }
    cur.as_array()?
        .iter()
        .find(|e| e.get("purpose").and_then(Value::as_str) == Some(purpose))
}

/// One subnet of an infrastructure status.
#[derive(Debug, Clone, Copy)]
pub struct Subnet<'a> {
    pub id: &'a str,
    pub purpose: &'a str,
    pub zone: &'a str,
}

/// The subnets (`id`, `purpose`, `zone`) of a raw subnet list.
pub fn subnets(list: Option<&Value>) -> Vec<Subnet<'_>> {
    list.and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .map(|s| Subnet {
                    id: s.get("id").and_then(Value::as_str).unwrap_or_default(),
                    purpose: s.get("purpose").and_then(Value::as_str).unwrap_or_default(),
                    zone: s.get("zone").and_then(Value::as_str).unwrap_or_default(),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The data of a cloud config object as a value: `{key: text}`.
pub fn text_map<const N: usize>(entries: [(&str, String); N]) -> Value {
    Value::Object(
        entries
            .into_iter()
            .map(|(k, v)| (k.to_string(), Value::String(v)))
            .collect(),
    )
}
