//! `ControlPlane` and `Cluster` (extensions.gardener.cloud/v1alpha1), shaped like
//! Gardener's CRDs (`manifests/crds/`). Raw, provider-specific fields stay
//! `serde_json::Value` so nothing the API server stores is lost on a round trip.

use std::borrow::Cow;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::{ClusterResourceScope, NamespaceResourceScope};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// API group of Gardener's extension resources.
pub const GROUP: &str = "extensions.gardener.cloud";
/// API version of Gardener's extension resources.
pub const VERSION: &str = "v1alpha1";
/// `apiVersion` of Gardener's extension resources.
pub const API_VERSION: &str = "extensions.gardener.cloud/v1alpha1";

/// A `ControlPlane`: asks the provider extension to run the provider's control-plane
/// components (here: the cloud-controller-manager) in the shoot namespace.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ControlPlane {
    #[serde(default)]
    pub metadata: ObjectMeta,
    pub spec: ControlPlaneSpec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ControlPlaneStatus>,
}

/// `ControlPlane.spec`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
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

/// `ControlPlane.status` (Gardener's `DefaultStatus` plus nothing else).
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

impl kube::Resource for ControlPlane {
    type DynamicType = ();
    type Scope = NamespaceResourceScope;

    fn kind(_: &()) -> Cow<'_, str> {
        Cow::Borrowed("ControlPlane")
    }
    fn group(_: &()) -> Cow<'_, str> {
        Cow::Borrowed(GROUP)
    }
    fn version(_: &()) -> Cow<'_, str> {
        Cow::Borrowed(VERSION)
    }
    fn api_version(_: &()) -> Cow<'_, str> {
        Cow::Borrowed(API_VERSION)
    }
    fn plural(_: &()) -> Cow<'_, str> {
        Cow::Borrowed("controlplanes")
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// A `Cluster`: cluster-scoped, named after the shoot namespace, embedding the
/// CloudProfile, Seed and Shoot as raw objects. scion reads it only through
/// [`crate::state::ShootContext`]; the type exists for the CRD and the API shell.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Cluster {
    #[serde(default)]
    pub metadata: ObjectMeta,
    pub spec: ClusterSpec,
}

/// `Cluster.spec`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterSpec {
    pub cloud_profile: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<Value>,
    pub shoot: Value,
}

impl kube::Resource for Cluster {
    type DynamicType = ();
    type Scope = ClusterResourceScope;

    fn kind(_: &()) -> Cow<'_, str> {
        Cow::Borrowed("Cluster")
    }
    fn group(_: &()) -> Cow<'_, str> {
        Cow::Borrowed(GROUP)
    }
    fn version(_: &()) -> Cow<'_, str> {
        Cow::Borrowed(VERSION)
    }
    fn api_version(_: &()) -> Cow<'_, str> {
        Cow::Borrowed(API_VERSION)
    }
    fn plural(_: &()) -> Cow<'_, str> {
        Cow::Borrowed("clusters")
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}
