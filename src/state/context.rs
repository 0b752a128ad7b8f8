//! The shoot context: the projection of a `Cluster` that rules and renderers use.

use std::collections::BTreeMap;

use semver::Version;
use serde_json::Value;

/// Everything scion reads from a `Cluster` (extensions.gardener.cloud/v1alpha1)
/// and its embedded Shoot, Seed and CloudProfile. Nothing else is kept.
#[derive(Debug, Clone, PartialEq)]
pub struct ShootContext {
    /// Name of the Cluster, which is the shoot namespace in the seed.
    pub cluster_name: String,
    /// `metadata.resourceVersion` of the Cluster the projection was made from.
    pub resource_version: Option<String>,
    /// Cluster annotation `generic-token-kubeconfig.secret.gardener.cloud/name`,
    /// defaulting to `generic-token-kubeconfig`.
    pub generic_token_kubeconfig_secret: String,
    /// `shoot.spec.kubernetes.version`.
    pub kubernetes_version: Version,
    /// `shoot.spec.provider.workers[]` name and `kubernetes.version`.
    pub workers: Vec<WorkerPool>,
    /// `shoot.spec.networking` and `shoot.status.networking`.
    pub networking: Networking,
    /// `shoot.spec.kubernetes.kubeControllerManager.nodeCIDRMaskSize`.
    pub node_cidr_mask_size: Option<i64>,
    /// `shoot.spec.region`.
    pub region: String,
    /// `shoot.metadata.annotations`.
    pub annotations: BTreeMap<String, String>,
    /// `shoot.spec.provider.type`.
    pub provider_type: String,
    /// `shoot.spec.provider.infrastructureConfig` (raw).
    pub infrastructure_config: Option<Value>,
    /// `shoot.spec.provider.controlPlaneConfig` (raw).
    pub control_plane_config: Option<Value>,
    pub hibernation: Hibernation,
    /// `shoot.status.lastOperation`.
    pub last_operation: Option<LastOperation>,
    /// `shoot.status.technicalID`.
    pub technical_id: Option<String>,
    /// `shoot.metadata.deletionTimestamp`.
    pub deletion_timestamp: Option<String>,
    /// `seed.spec.provider.type` (no seed for self-hosted shoots).
    pub seed_provider_type: Option<String>,
    /// `seed.spec.provider.region` (Alicloud's CCM `--network` flag).
    pub seed_region: Option<String>,
    /// `cloudProfile.spec.providerConfig` (raw).
    pub cloud_profile_config: Option<Value>,
}

/// One worker pool of the shoot.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerPool {
    pub name: String,
    /// The pool's own Kubernetes version, if it overrides the control plane's.
    pub kubernetes_version: Option<Version>,
    /// `maximum` number of machines (Azure's CCM rate limits use the sum).
    pub maximum: i64,
}

/// Networking of the shoot, spec and status kept apart.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Networking {
    /// `spec.networking.ipFamilies` as written (`IPv4`, `IPv6`); empty means IPv4.
    pub ip_families: Vec<String>,
    /// `spec.networking.{pods,nodes,services}` (each a single CIDR in the spec).
    pub spec: Cidrs,
    /// `status.networking.{pods,nodes,services}` (lists).
    pub status: Cidrs,
    /// `spec.networking.providerConfig` (raw; e.g. calico's `overlay.enabled`).
    pub provider_config: Option<Value>,
}

/// Pod, node and service CIDRs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Cidrs {
    pub pods: Vec<String>,
    pub nodes: Vec<String>,
    pub services: Vec<String>,
}

/// `shoot.spec.hibernation.enabled` and `shoot.status.isHibernated`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Hibernation {
    pub enabled: bool,
    pub is_hibernated: bool,
}

/// `shoot.status.lastOperation` type and state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LastOperation {
    pub type_: String,
    pub state: String,
}

impl ShootContext {
    /// Whether the shoot runs IPv6: `IPv6` in `spec.networking.ipFamilies`, or any
    /// `status.networking.nodes` CIDR is IPv6 (Gardener's rule for
    /// `--allocate-node-cidrs`).
    pub fn is_ipv6(&self) -> bool {
        self.networking.ip_families.iter().any(|f| f == "IPv6")
            || self.networking.status.nodes.iter().any(|c| c.contains(':'))
    }

    /// Pod CIDRs from spec and status, spec first, without duplicates.
    pub fn pod_cidrs(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for cidr in self
            .networking
            .spec
            .pods
            .iter()
            .chain(&self.networking.status.pods)
        {
            if !out.contains(cidr) {
                out.push(cidr.clone());
            }
        }
        out
    }

    /// The Kubernetes version of a worker pool: its own, else the control plane's.
    pub fn worker_version(&self, pool: &str) -> &Version {
        self.workers
            .iter()
            .find(|w| w.name == pool)
            .and_then(|w| w.kubernetes_version.as_ref())
            .unwrap_or(&self.kubernetes_version)
    }

    /// Whether the shoot annotation `key` parses as `true` (Go's strconv.ParseBool).
    pub fn annotation_is_true(&self, key: &str) -> bool {
        matches!(
            self.annotations.get(key).map(String::as_str),
            Some("1" | "t" | "T" | "true" | "TRUE" | "True")
        )
    }
}
