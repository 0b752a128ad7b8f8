//! Rendering of `cloudprovider.conf` (and companion keys) per provider format.
//! Each format is a pure function of the ControlPlane, the shoot context and the
//! credentials Secret; adding a provider adds a module and a match arm.

mod alicloud;
mod aws;
mod azure;
mod gcp;
mod openstack;
mod openstack_lb;

pub(crate) use aws::lacks_load_balancer_subnets as aws_lacks_load_balancer_subnets;
pub use azure::KUBELET_ACR_CONFIG;
pub(crate) use azure::kubelet_acr_config as azure_kubelet_acr_config;
pub use openstack::KEYSTONE_CA_KEY;
pub(crate) use openstack::user_agents as openstack_user_agents;

use std::collections::BTreeMap;

use serde_json::Value;

use super::RenderError;
use crate::gardener::ControlPlane;
use crate::gardener::ShootContext;
use crate::profile::ccm::CloudConfigFormat;

/// Name of the cloud config object.
pub const CLOUD_CONFIG_NAME: &str = "cloud-provider-config";
/// Key of the config file in the object.
pub const CLOUD_CONFIG_KEY: &str = "cloudprovider.conf";
/// Where the object is mounted in the CCM.
pub const CLOUD_CONFIG_DIR: &str = "/etc/kubernetes/cloudprovider";

/// The credentials Secret's data (decoded bytes by key), if it could be read.
pub type SecretData<'a> = Option<&'a BTreeMap<String, Vec<u8>>>;

/// Everything a format may read.
pub struct Inputs<'a> {
    pub cp: &'a ControlPlane,
    pub shoot: &'a ShootContext,
    pub credentials: SecretData<'a>,
    /// The credentials count as workload identity (per the section's detection).
    pub workload_identity: bool,
}

impl Inputs<'_> {
    /// An error about the infrastructure status naming the ControlPlane.
    pub(crate) fn infra_error(&self, reason: impl Into<String>) -> RenderError {
        RenderError::InfrastructureField {
            controlplane: format!("{}/{}", self.cp.namespace(), self.cp.name()),
            reason: reason.into(),
        }
    }

    /// The infrastructure status, required by GCP and Alicloud.
    pub(crate) fn infra(&self) -> Result<&Value, RenderError> {
        self.cp
            .spec
            .infrastructure_provider_status
            .as_ref()
            .filter(|v| !v.is_null())
            .ok_or_else(|| self.infra_error("infrastructureProviderStatus is missing"))
    }

    /// A non-empty Secret value, or an error naming the key.
    pub(crate) fn required_secret(&self, key: &str) -> Result<&str, RenderError> {
        if self.credentials.is_none() {
            return Err(RenderError::Credentials {
                reason: "the credentials Secret does not exist".into(),
            });
        }
        match secret_str(self.credentials, key)? {
            Some(v) if !v.is_empty() => Ok(v),
            _ => Err(RenderError::Credentials {
                reason: format!("missing or empty key {key:?}"),
            }),
        }
    }
}

/// The first entry of the list at `path` whose `purpose` is `purpose`.
pub(crate) fn first_with_purpose<'v>(
    value: &'v Value,
    path: &str,
    purpose: &str,
) -> Option<&'v Value> {
    let mut cur = value;
    for part in path.split('.') {
        cur = cur.get(part)?;
    }
    cur.as_array()?
        .iter()
        .find(|e| e.get("purpose").and_then(Value::as_str) == Some(purpose))
}

/// The rendered keys of the cloud config object (text values).
pub fn render(
    format: CloudConfigFormat,
    inputs: &Inputs<'_>,
) -> Result<BTreeMap<String, String>, RenderError> {
    match format {
        CloudConfigFormat::AwsIni => aws::render(inputs),
        CloudConfigFormat::OpenstackIni => openstack::render(inputs),
        CloudConfigFormat::GcpIni => gcp::render(inputs),
        CloudConfigFormat::AzureYaml => azure::render(inputs),
        CloudConfigFormat::AlicloudJson => alicloud::render(inputs),
    }
}

/// A string at `path` (dot-separated) in a raw object.
pub(crate) fn str_at<'v>(value: Option<&'v Value>, path: &str) -> Option<&'v str> {
    let mut cur = value?;
    for part in path.split('.') {
        cur = cur.get(part)?;
    }
    cur.as_str()
}

/// The subnets (`id`, `purpose`, `zone`) of a raw subnet list.
pub(crate) fn subnets(list: Option<&Value>) -> Vec<Subnet<'_>> {
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

/// One subnet of an infrastructure status.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Subnet<'a> {
    pub id: &'a str,
    pub purpose: &'a str,
    pub zone: &'a str,
}

/// A Secret value as UTF-8 text, `None` when absent.
pub(crate) fn secret_str<'a>(
    data: SecretData<'a>,
    key: &str,
) -> Result<Option<&'a str>, RenderError> {
    match data.and_then(|d| d.get(key)) {
        None => Ok(None),
        Some(bytes) => std::str::from_utf8(bytes)
            .map(Some)
            .map_err(|_| RenderError::Credentials {
                reason: format!("key {key:?} is not UTF-8"),
            }),
    }
}
