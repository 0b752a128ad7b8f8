//! The Gardener and Kubernetes API types scion reads and writes, in one place:
//! every group, version, kind and resource name is written once here.
//!
//! | file | what |
//! |---|---|
//! | [`api_error`] | a Kubernetes API error as an operator reads it (no debug dump of the Status) |
//! | [`cluster`] | the `Cluster` resource and [`ShootContext`], the one declaration of what scion reads from a Cluster |
//! | [`controlplane`] | the `ControlPlane` resource |
//! | [`defaults`] | what the API server adds when it stores a built-in kind (Deployment, Service, …) |
//! | [`duration`] | durations as Kubernetes writes them: parsing flags, writing log lines |
//! | [`kubelet`] | the KubeletConfiguration struct as a field table |
//! | [`managedresource`] | the `ManagedResource` resource gardener-resource-manager applies |
//! | [`objects`] | Secret and ConfigMap data as scion keeps it, the object-metadata rule of every decoder, well-known labels |
//! | [`version`] | Kubernetes versions parsed as Gardener parses them |
//! | [`view`] | the machinery of lenient typed views (decode only declared fields, field paths in errors) |
//!
//! This is the lowest layer: it imports nothing else of the crate.

pub mod api_error;
pub mod cluster;
pub mod controlplane;
pub mod defaults;
pub mod duration;
pub mod kubelet;
pub mod managedresource;
pub mod objects;
pub mod version;
pub mod view;

pub use api_error::ApiError;
pub use cluster::{
    Cluster, ClusterError, ClusterObject, ClusterSpecSeed, DecodedSpec, ShootContext,
    project_cluster,
};
pub use controlplane::{
    ControlPlane, ControlPlaneSpec, ControlPlaneStatus, LastError, LastOperation,
};
pub use managedresource::{ManagedResource, ManagedResourceSpec, ManagedResourceStatus};
pub use objects::{Metadata, ObjectData, ObjectKind};

/// API group of Gardener's extension resources (`Cluster`, `ControlPlane`, ...).
pub const EXTENSIONS_GROUP: &str = "extensions.gardener.cloud";
/// API version of Gardener's extension resources.
pub const EXTENSIONS_VERSION: &str = "v1alpha1";

/// One resource scion calls the API for: group, version, kind and plural.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Gvk {
    /// API group; `""` for the core group.
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    /// Resource name in URLs and RBAC rules, e.g. `deployments`.
    pub plural: &'static str,
}

impl Gvk {
    /// `apiVersion` as written in objects.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

const fn gvk(
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
) -> Gvk {
    Gvk {
        group,
        version,
        kind,
        plural,
    }
}

pub const CLUSTER: Gvk = gvk(EXTENSIONS_GROUP, EXTENSIONS_VERSION, "Cluster", "clusters");
pub const CONTROLPLANE: Gvk = gvk(
    EXTENSIONS_GROUP,
    EXTENSIONS_VERSION,
    "ControlPlane",
    "controlplanes",
);
pub const OPERATING_SYSTEM_CONFIG: Gvk = gvk(
    EXTENSIONS_GROUP,
    EXTENSIONS_VERSION,
    "OperatingSystemConfig",
    "operatingsystemconfigs",
);
pub const BACKUP_BUCKET: Gvk = gvk(
    EXTENSIONS_GROUP,
    EXTENSIONS_VERSION,
    "BackupBucket",
    "backupbuckets",
);
pub const ETCD: Gvk = gvk("druid.gardener.cloud", "v1alpha1", "Etcd", "etcds");
pub const SECRET: Gvk = gvk("", "v1", "Secret", "secrets");
pub const CONFIGMAP: Gvk = gvk("", "v1", "ConfigMap", "configmaps");
pub const SERVICE: Gvk = gvk("", "v1", "Service", "services");
pub const NAMESPACE: Gvk = gvk("", "v1", "Namespace", "namespaces");
pub const DEPLOYMENT: Gvk = gvk("apps", "v1", "Deployment", "deployments");
pub const PDB: Gvk = gvk(
    "policy",
    "v1",
    "PodDisruptionBudget",
    "poddisruptionbudgets",
);
pub const VPA: Gvk = gvk(
    "autoscaling.k8s.io",
    "v1",
    "VerticalPodAutoscaler",
    "verticalpodautoscalers",
);
pub const LEASE: Gvk = gvk("coordination.k8s.io", "v1", "Lease", "leases");
pub const MANAGED_RESOURCE: Gvk = gvk(
    "resources.gardener.cloud",
    "v1alpha1",
    "ManagedResource",
    "managedresources",
);
pub const DAEMONSET: Gvk = gvk("apps", "v1", "DaemonSet", "daemonsets");
pub const SERVICE_ACCOUNT: Gvk = gvk("", "v1", "ServiceAccount", "serviceaccounts");
pub const CLUSTER_ROLE: Gvk = gvk(
    "rbac.authorization.k8s.io",
    "v1",
    "ClusterRole",
    "clusterroles",
);
pub const CLUSTER_ROLE_BINDING: Gvk = gvk(
    "rbac.authorization.k8s.io",
    "v1",
    "ClusterRoleBinding",
    "clusterrolebindings",
);
pub const NETWORK_POLICY: Gvk = gvk(
    "networking.k8s.io",
    "v1",
    "NetworkPolicy",
    "networkpolicies",
);
pub const SERVICE_MONITOR: Gvk = gvk(
    "monitoring.coreos.com",
    "v1",
    "ServiceMonitor",
    "servicemonitors",
);
pub const PROMETHEUS_RULE: Gvk = gvk(
    "monitoring.coreos.com",
    "v1",
    "PrometheusRule",
    "prometheusrules",
);

/// The Lease an extension renews so gardenlet trusts its health reports.
pub const HEARTBEAT_LEASE_NAME: &str = "gardener-extension-heartbeat";

/// Kinds without a namespace that a ManagedResource may carry into a shoot;
/// every other kind is namespaced.
pub const CLUSTER_SCOPED_KINDS: &[&str] = &[
    "APIService",
    "ClusterRole",
    "ClusterRoleBinding",
    "CSIDriver",
    "CustomResourceDefinition",
    "MutatingAdmissionPolicy",
    "MutatingAdmissionPolicyBinding",
    "MutatingWebhookConfiguration",
    "Namespace",
    "PersistentVolume",
    "PriorityClass",
    "StorageClass",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
    "ValidatingWebhookConfiguration",
    "VolumeSnapshotClass",
];
pub const MUTATING_WEBHOOK_CONFIGURATION: Gvk = gvk(
    "admissionregistration.k8s.io",
    "v1",
    "MutatingWebhookConfiguration",
    "mutatingwebhookconfigurations",
);

#[cfg(test)]
mod tests {
    use super::*;
    use kube::Resource as _;

    #[test]
    fn the_derived_resources_agree_with_the_table() {
        for (table, kind, group, version, plural) in [
            (
                CLUSTER,
                Cluster::kind(&()),
                Cluster::group(&()),
                Cluster::version(&()),
                Cluster::plural(&()),
            ),
            (
                CONTROLPLANE,
                ControlPlane::kind(&()),
                ControlPlane::group(&()),
                ControlPlane::version(&()),
                ControlPlane::plural(&()),
            ),
            (
                MANAGED_RESOURCE,
                ManagedResource::kind(&()),
                ManagedResource::group(&()),
                ManagedResource::version(&()),
                ManagedResource::plural(&()),
            ),
        ] {
            assert_eq!(
                (table.kind, table.group, table.version, table.plural),
                (&*kind, &*group, &*version, &*plural)
            );
        }
        assert_eq!(
            CONTROLPLANE.api_version(),
            "extensions.gardener.cloud/v1alpha1"
        );
        assert_eq!(SECRET.api_version(), "v1");
    }
}
