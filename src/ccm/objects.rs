//! The CCM's companion objects: cloud config, shoot access Secret, Service,
//! PodDisruptionBudget, VPA.

use std::collections::BTreeMap;

use base64::Engine as _;
use serde_json::{Value, json};

use super::cloudconfig::CLOUD_CONFIG_NAME;
use super::{CCM_NAME, DesiredObject};
use crate::checksum;
use crate::gardener::{CONFIGMAP as CONFIG_MAP, ControlPlane, Gvk, PDB, SECRET, SERVICE, VPA};
use crate::profile::ccm::{CcmSpec, ChecksumAlgorithm, CloudConfig, CloudConfigKind, Vpa};

/// Name of the shoot access Secret the token requestor fills for the CCM.
pub const SHOOT_ACCESS_SECRET: &str = "shoot-access-cloud-controller-manager";

pub(super) fn selector_labels() -> Value {
    json!({"app": "kubernetes", "role": CCM_NAME})
}

fn object(gvk: Gvk, cp: &ControlPlane, name: &str, body: Value) -> DesiredObject {
    DesiredObject::new(gvk, name, cp.namespace(), body)
}

/// The cloud config object and the checksum of its data (Gardener's algorithm,
/// computed from the rendered data instead of a live GET).
pub(super) struct ConfigObject {
    pub object: DesiredObject,
    pub checksum: String,
    /// `checksum/configmap-cloud-provider-config` or `checksum/secret-cloud-provider-config`.
    pub annotation: String,
}

pub(super) fn cloud_config(
    cp: &ControlPlane,
    config: &CloudConfig,
    data: &BTreeMap<String, String>,
) -> ConfigObject {
    let meta = json!({"name": CLOUD_CONFIG_NAME, "namespace": cp.namespace()});
    // The values as stored in the object: text for a ConfigMap, base64 for a Secret.
    let (stored, object, annotation, json_checksum) = match config.kind {
        CloudConfigKind::ConfigMap => (
            data.clone(),
            object(
                CONFIG_MAP,
                cp,
                CLOUD_CONFIG_NAME,
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}),
            ),
            format!("checksum/configmap-{CLOUD_CONFIG_NAME}"),
            checksum::configmap_checksum(Some(data)),
        ),
        CloudConfigKind::Secret => {
            let bytes: BTreeMap<String, Vec<u8>> = data
                .iter()
                .map(|(k, v)| (k.clone(), v.as_bytes().to_vec()))
                .collect();
            let encoded: BTreeMap<String, String> = data
                .iter()
                .map(|(k, v)| {
                    (
                        k.clone(),
                        base64::engine::general_purpose::STANDARD.encode(v),
                    )
                })
                .collect();
            (
                encoded.clone(),
                object(
                    SECRET,
                    cp,
                    CLOUD_CONFIG_NAME,
                    json!({"apiVersion": "v1", "kind": "Secret", "metadata": meta,
                           "type": "Opaque", "data": encoded}),
                ),
                format!("checksum/secret-{CLOUD_CONFIG_NAME}"),
                checksum::secret_checksum(Some(&bytes)),
            )
        }
    };
    let checksum = match config.checksum.algorithm {
        ChecksumAlgorithm::Json => json_checksum,
        ChecksumAlgorithm::PerKey => checksum::per_key_checksum(data),
        ChecksumAlgorithm::ManifestSha256 => {
            let text = fill_manifest(
                config.checksum.manifest.as_deref().unwrap_or_default(),
                cp.namespace(),
                &stored,
            );
            checksum::sha256_hex(text.as_bytes())
        }
    };
    ConfigObject {
        object,
        checksum,
        annotation,
    }
}

/// The checksum manifest with `${namespace}`, `${name}` and `${data:<key>}`
/// replaced (an absent key becomes empty, as in Helm).
pub fn fill_manifest(template: &str, namespace: &str, stored: &BTreeMap<String, String>) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let Some(end) = rest.find('}') else { break };
        let name = &rest[2..end];
        match name {
            "namespace" => out.push_str(namespace),
            "name" => out.push_str(CLOUD_CONFIG_NAME),
            other => match other.strip_prefix("data:") {
                Some(key) => out.push_str(stored.get(key).map(String::as_str).unwrap_or_default()),
                None => out.push_str(&rest[..=end]),
            },
        }
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    out
}

/// The Secret gardener-resource-manager's token requestor fills with a token of
/// the shoot ServiceAccount `kube-system/cloud-controller-manager`. scion owns only
/// its labels and annotations, never `data`.
pub(super) fn shoot_access_secret(cp: &ControlPlane) -> DesiredObject {
    object(
        SECRET,
        cp,
        SHOOT_ACCESS_SECRET,
        json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": SHOOT_ACCESS_SECRET,
                "namespace": cp.namespace(),
                "labels": {
                    "resources.gardener.cloud/purpose": "token-requestor",
                    "resources.gardener.cloud/class": "shoot",
                },
                "annotations": {
                    "serviceaccount.resources.gardener.cloud/name": CCM_NAME,
                    "serviceaccount.resources.gardener.cloud/namespace": "kube-system",
                },
            },
            "type": "Opaque",
        }),
    )
}

pub(super) fn service(cp: &ControlPlane, spec: &CcmSpec) -> DesiredObject {
    let scrape = format!(r#"[{{"port":{},"protocol":"TCP"}}]"#, spec.port);
    object(
        SERVICE,
        cp,
        CCM_NAME,
        json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": CCM_NAME,
                "namespace": cp.namespace(),
                "labels": selector_labels(),
                "annotations": {
                    "networking.resources.gardener.cloud/from-all-scrape-targets-allowed-ports": scrape,
                },
            },
            "spec": {
                "type": "ClusterIP",
                "clusterIP": "None",
                "ports": [{"name": "metrics", "port": spec.port, "protocol": "TCP"}],
                "selector": selector_labels(),
            },
        }),
    )
}

pub(super) fn pod_disruption_budget(cp: &ControlPlane) -> DesiredObject {
    object(
        PDB,
        cp,
        CCM_NAME,
        json!({
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": CCM_NAME, "namespace": cp.namespace(), "labels": selector_labels()},
            "spec": {
                "maxUnavailable": 1,
                "selector": {"matchLabels": selector_labels()},
                "unhealthyPodEvictionPolicy": "AlwaysAllow",
            },
        }),
    )
}

pub(super) fn vpa(cp: &ControlPlane, spec: &CcmSpec, vpa: &Vpa) -> DesiredObject {
    let mut policy = json!({
        "containerName": spec.container_name,
        "controlledValues": vpa.controlled_values,
    });
    if let Some(resources) = &vpa.controlled_resources {
        policy["controlledResources"] = json!(resources);
    }
    let name = format!("{CCM_NAME}-vpa");
    object(
        VPA,
        cp,
        &name,
        json!({
            "apiVersion": "autoscaling.k8s.io/v1",
            "kind": "VerticalPodAutoscaler",
            "metadata": {"name": name, "namespace": cp.namespace()},
            "spec": {
                "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": CCM_NAME},
                "updatePolicy": {"updateMode": vpa.update_mode},
                "resourcePolicy": {"containerPolicies": [policy]},
            },
        }),
    )
}
