//! The built-in function `providerSidecar`: Gardener's
//! `machinecontrollermanager.ProviderSidecarContainer` plus the AWS
//! workload-identity handling. Not declarative because its shape depends on the
//! `cloudprovider` Secret's labels.

use std::collections::BTreeMap;

use serde_json::{Value, json};

/// Label value of `security.gardener.cloud/purpose` that switches on the
/// workload-identity token mount.
const WORKLOAD_IDENTITY_PURPOSE: &str = "workload-identity-token-requestor";
const WORKLOAD_IDENTITY_VOLUME: &str = "workload-identity";
const WORKLOAD_IDENTITY_PATH: &str = "/var/run/secrets/gardener.cloud/workload-identity";
const METRICS_PORT: u16 = 10259;

/// The sidecar container `machine-controller-manager-<provider>` and, when the
/// `cloudprovider` Secret's labels ask for workload identity, the pod volume
/// carrying the token.
pub fn provider_sidecar(
    namespace: &str,
    provider: &str,
    image: &str,
    secret_labels: Option<&BTreeMap<String, String>>,
) -> (Value, Option<Value>) {
    let mut mounts = vec![json!({
        "name": "kubeconfig",
        "mountPath": "/var/run/secrets/gardener.cloud/shoot/generic-kubeconfig",
        "readOnly": true,
    })];
    let workload_identity = secret_labels
        .and_then(|l| l.get("security.gardener.cloud/purpose"))
        .is_some_and(|p| p == WORKLOAD_IDENTITY_PURPOSE);
    let volume = workload_identity.then(|| {
        mounts.push(json!({"name": WORKLOAD_IDENTITY_VOLUME, "mountPath": WORKLOAD_IDENTITY_PATH}));
        json!({
            "name": WORKLOAD_IDENTITY_VOLUME,
            "projected": {"sources": [{"secret": {
                "name": "cloudprovider",
                "items": [{"key": "token", "path": "token"}],
            }}]},
        })
    });
    let container = json!({
        "name": format!("machine-controller-manager-{provider}"),
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "args": [
            "--control-kubeconfig=inClusterConfig",
            "--kube-api-qps=100",
            "--kube-api-burst=200",
            "--machine-creation-timeout=20m",
            "--machine-drain-timeout=2h",
            "--machine-health-timeout=10m",
            "--machine-safety-apiserver-statuscheck-timeout=30s",
            "--machine-safety-apiserver-statuscheck-period=1m",
            "--machine-safety-orphan-vms-period=30m",
            format!("--namespace={namespace}"),
            format!("--port={METRICS_PORT}"),
            "--target-kubeconfig=/var/run/secrets/gardener.cloud/shoot/generic-kubeconfig/kubeconfig",
            "--v=3",
        ],
        "livenessProbe": {
            "httpGet": {"path": "/healthz", "port": METRICS_PORT, "scheme": "HTTP"},
            "initialDelaySeconds": 30,
            "timeoutSeconds": 5,
            "periodSeconds": 10,
            "successThreshold": 1,
            "failureThreshold": 3,
        },
        "ports": [{"name": "providermetrics", "containerPort": METRICS_PORT, "protocol": "TCP"}],
        "resources": {"requests": {"cpu": "10m", "memory": "20Mi"}},
        "securityContext": {"allowPrivilegeEscalation": false},
        "volumeMounts": mounts,
    });
    (container, volume)
}
