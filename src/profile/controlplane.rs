//! The profile's `controlPlane:` section: which component files of the
//! provider folder the ControlPlane controller renders, in which order, and
//! the Rust (`code:`) their `code.<name>` values come from.
//!
//! ```yaml
//! code: aws                          # the built-in Rust of that name (optional)
//! imageVector: images.yaml           # relative to the profile (default: the built-in vector of `provider`)
//! controlPlane:
//!   components: [cloud-controller-manager]   # components/<name>.yaml, in this order
//!   ccmImage: cloud-controller-manager       # the image --ccm-image replaces (this is the default)
//! ```

use std::collections::BTreeSet;
use std::fmt;

use serde::Deserialize;

use super::component::{Component, Destination};
use crate::providers::ProviderCode;

/// The `controlPlane:` section as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct ControlPlaneFile {
    pub components: Vec<String>,
    #[serde(default)]
    pub ccm_image: Option<String>,
}

/// The image `--ccm-image` replaces unless the profile says otherwise.
pub const DEFAULT_CCM_IMAGE: &str = "cloud-controller-manager";

/// The Rust a profile names (`code: <name>`), compared by name.
#[derive(Clone, Copy)]
pub struct CodeRef(pub &'static dyn ProviderCode);

impl PartialEq for CodeRef {
    fn eq(&self, other: &Self) -> bool {
        self.0.name() == other.0.name()
    }
}

impl fmt::Debug for CodeRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "code {}", self.0.name())
    }
}

/// What the ControlPlane controller renders for a provider.
#[derive(Debug, Clone, PartialEq)]
pub struct ControlPlaneSpec {
    /// The provider type (`spec.type` of its ControlPlanes).
    pub provider: String,
    /// The Rust the components' `code.<name>` values come from.
    pub code: Option<CodeRef>,
    /// The image name `--ccm-image` replaces.
    pub ccm_image: String,
    /// The components, in the order they are rendered.
    pub components: Vec<Component>,
    /// Which ControlPlaneConfig and Cluster settings the components honour
    /// (`options.yaml`, [`super::options`]).
    pub options: super::options::OptionSpec,
    /// The provider's extension feature gates (the profile's
    /// `extensionFeatureGates`, copied here for the render and the health checks).
    pub feature_gates: Vec<super::FeatureGate>,
}

impl ControlPlaneSpec {
    /// The service accounts of every `shoot-access-<name>` Secret the
    /// components use, each once, in order.
    pub fn shoot_access(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for name in self.components.iter().flat_map(|c| &c.shoot_access) {
            if !out.contains(&name.as_str()) {
                out.push(name);
            }
        }
        out
    }

    /// The serving certificates the components ask for beyond the CCM's, each
    /// once, in order.
    pub fn certificates(&self) -> Vec<crate::secrets::ServerCertificate> {
        let mut out: Vec<crate::secrets::ServerCertificate> = Vec::new();
        for c in self.components.iter().flat_map(|c| &c.certificates) {
            if !out.iter().any(|k| k.name == c.name) {
                out.push(c.clone());
            }
        }
        out
    }

    /// The destinations some component writes an object to whatever the
    /// shoot (an object without `when` and `each`): their ManagedResources
    /// always exist.
    pub fn unconditional_destinations(&self) -> BTreeSet<Destination> {
        self.components
            .iter()
            .flat_map(|c| &c.objects)
            .filter(|o| o.item.when.is_none() && o.item.each.is_none())
            .map(|o| o.into)
            .collect()
    }

    /// The seed Deployments the health checks look at, with the condition
    /// of each (each component's `health.deployments`), each name once, in
    /// component order.
    pub fn health_checks(&self) -> Vec<crate::profile::component::HealthDeployment> {
        let mut out: Vec<crate::profile::component::HealthDeployment> = Vec::new();
        for d in self.components.iter().flat_map(|c| &c.health_deployments) {
            if !out.iter().any(|o| o.name == d.name) {
                out.push(d.clone());
            }
        }
        out
    }

    /// The shoot Event checks of the components (`health.events`), in
    /// component order.
    pub fn health_events(&self) -> Vec<crate::profile::component::HealthEvents> {
        self.components
            .iter()
            .flat_map(|c| c.health_events.iter().cloned())
            .collect()
    }

    /// Every seed Deployment the health checks may look at (conditional
    /// ones included), each once, in component order.
    pub fn health_deployments(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for d in self.components.iter().flat_map(|c| &c.health_deployments) {
            if !out.contains(&d.name.as_str()) {
                out.push(&d.name);
            }
        }
        out
    }

    /// The image names the components use, each once, in order.
    pub fn image_names(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for name in self.components.iter().flat_map(Component::image_names) {
            if !out.contains(&name) {
                out.push(name);
            }
        }
        out
    }
}
