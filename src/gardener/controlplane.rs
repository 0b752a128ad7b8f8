//! The `ControlPlane` resource (extensions.gardener.cloud/v1alpha1), shaped
//! like Gardener's CRD (`manifests/crds/`). Raw, provider-specific fields stay
//! `serde_json::Value` so nothing the API server stores is lost on a round trip.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `ControlPlane.spec`: asks the provider extension to run the provider's
/// control-plane components (here: the cloud-controller-manager) in the shoot
/// namespace.
#[derive(kube::CustomResource, Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "extensions.gardener.cloud",
    version = "v1alpha1",
    kind = "ControlPlane",
    namespaced,
    status = "ControlPlaneStatus",
    shortname = "cp",
    schema = "disabled",
    derive = "Default",
    derive = "PartialEq"
)]
#[serde(rename_all = "camelCase")]
pub struct ControlPlaneSpec {
    /// Provider type, e.g. `aws`.
    #[serde(rename = "type")]
    pub type_: String,
    /// Extension class (`shoot`, `seed`, `garden`); unset means `shoot`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    /// The provider's `ControlPlaneConfig` (raw).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_config: Option<Value>,
    /// Region of the shoot.
    pub region: String,
    /// The cloud provider credentials Secret (normally `cloudprovider`).
    pub secret_ref: SecretReference,
    /// `Infrastructure.status.providerStatus` (raw).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub infrastructure_provider_status: Option<Value>,
}

/// A reference to a Secret by name and namespace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SecretReference {
    #[serde(default)]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// `ControlPlane.status` (Gardener's `DefaultStatus`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ControlPlaneStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_operation: Option<LastOperation>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<LastError>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_status: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<Vec<Value>>,
}

/// `status.lastOperation`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LastOperation {
    #[serde(rename = "type")]
    pub type_: String,
    pub state: String,
    #[serde(default)]
    pub progress: i32,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub last_update_time: String,
}

/// `status.lastError`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LastError {
    pub description: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub codes: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_update_time: Option<String>,
}

impl ControlPlane {
    /// Namespace of the object (the shoot namespace); empty when unset.
    pub fn namespace(&self) -> &str {
        self.metadata.namespace.as_deref().unwrap_or_default()
    }

    /// Name of the object; empty when unset.
    pub fn name(&self) -> &str {
        self.metadata.name.as_deref().unwrap_or_default()
    }

    /// The extension class, `shoot` when unset.
    pub fn class(&self) -> &str {
        self.spec.class.as_deref().unwrap_or("shoot")
    }
}
