//! The built-in function `providerSidecar`: Gardener's
//! `machinecontrollermanager.ProviderSidecarContainer` plus the providers'
//! workload-identity handling. Not declarative because its shape depends on the
//! `cloudprovider` Secret's labels.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::gardener::ObjectData;

const WORKLOAD_IDENTITY_VOLUME: &str = "workload-identity";
const WORKLOAD_IDENTITY_PATH: &str = "/var/run/secrets/gardener.cloud/workload-identity";
const METRICS_PORT: u16 = 10259;

/// The sidecar container `machine-controller-manager-<provider>` and, when the
/// `cloudprovider` Secret asks for workload identity (the purpose label alone,
/// as AWS and Azure check it), the pod volume carrying the token.
pub fn provider_sidecar(
    namespace: &str,
    provider: &str,
    image: &str,
    cloudprovider: Option<&ObjectData>,
) -> (Value, Option<Value>) {
    let wi = cloudprovider.is_some_and(|s| s.requests_workload_identity(&BTreeMap::new()));
    sidecar_container(namespace, provider, image, wi, &[])
}

/// Where the shoot's control plane runs, which decides how the sidecar
/// reaches the shoot (gardener `machinecontrollermanager.targetKubeconfig`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hosting {
    /// On a seed: the generic token kubeconfig, mounted.
    Seed,
    /// A self-hosted shoot (a worker pool has `controlPlane`) whose control
    /// plane runs in the shoot itself (`gardenadm init`; the namespace is
    /// `kube-system`): `--target-kubeconfig=` (in-cluster), no mount.
    SelfHostedInShoot,
    /// A self-hosted shoot being bootstrapped (`gardenadm bootstrap`; any
    /// other namespace): no target cluster yet, `--target-kubeconfig=none`,
    /// no mount.
    SelfHostedBootstrap,
}

impl Hosting {
    /// Gardener's decision: self-hosted shoots by their workers, then the
    /// control-plane namespace.
    pub fn of(self_hosted: bool, namespace: &str) -> Hosting {
        match (self_hosted, namespace) {
            (false, _) => Hosting::Seed,
            (true, "kube-system") => Hosting::SelfHostedInShoot,
            (true, _) => Hosting::SelfHostedBootstrap,
        }
    }

    fn target_kubeconfig(self) -> &'static str {
        match self {
            Hosting::Seed => GENERIC_KUBECONFIG,
            Hosting::SelfHostedInShoot => "",
            Hosting::SelfHostedBootstrap => "none",
        }
    }
}

const GENERIC_KUBECONFIG_DIR: &str = "/var/run/secrets/gardener.cloud/shoot/generic-kubeconfig";
const GENERIC_KUBECONFIG: &str =
    "/var/run/secrets/gardener.cloud/shoot/generic-kubeconfig/kubeconfig";

/// The sidecar with `extra_args` appended after the standard arguments, and the
/// workload-identity mount and volume if `workload_identity`, for a shoot
/// whose control plane runs on a seed.
pub fn sidecar_container(
    namespace: &str,
    provider: &str,
    image: &str,
    workload_identity: bool,
    extra_args: &[String],
) -> (Value, Option<Value>) {
    hosted_sidecar_container(
        namespace,
        provider,
        image,
        workload_identity,
        extra_args,
        Hosting::Seed,
    )
}

/// [`sidecar_container`] wherever the control plane runs ([`Hosting`]).
pub fn hosted_sidecar_container(
    namespace: &str,
    provider: &str,
    image: &str,
    workload_identity: bool,
    extra_args: &[String],
    hosting: Hosting,
) -> (Value, Option<Value>) {
    let mut mounts = Vec::new();
    if hosting == Hosting::Seed {
        mounts.push(json!({
            "name": "kubeconfig",
            "mountPath": GENERIC_KUBECONFIG_DIR,
            "readOnly": true,
        }));
    }
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
    let mut args = vec![
        json!("--control-kubeconfig=inClusterConfig"),
        json!("--kube-api-qps=100"),
        json!("--kube-api-burst=200"),
        json!("--machine-creation-timeout=20m"),
        json!("--machine-drain-timeout=2h"),
        json!("--machine-health-timeout=10m"),
        json!("--machine-safety-apiserver-statuscheck-timeout=30s"),
        json!("--machine-safety-apiserver-statuscheck-period=1m"),
        json!("--machine-safety-orphan-vms-period=30m"),
        json!(format!("--namespace={namespace}")),
        json!(format!("--port={METRICS_PORT}")),
        json!(format!(
            "--target-kubeconfig={}",
            hosting.target_kubeconfig()
        )),
        json!("--v=3"),
    ];
    args.extend(extra_args.iter().map(|a| json!(a)));
    let mut container = json!({
        "name": format!("machine-controller-manager-{provider}"),
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "args": args,
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
    });
    if !mounts.is_empty() {
        container["volumeMounts"] = Value::Array(mounts);
    }
    (container, volume)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn self_hosted_shoots_get_gardeners_target_kubeconfig_and_no_mount() {
        let arg = |c: &Value| {
            c["args"]
                .as_array()
                .unwrap()
                .iter()
                .find(|a| a.as_str().unwrap().starts_with("--target-kubeconfig="))
                .cloned()
                .unwrap()
        };
        for (hosting, want, mounted) in [
            (
                Hosting::of(false, "shoot--a--b"),
                "--target-kubeconfig=/var/run/secrets/gardener.cloud/shoot/generic-kubeconfig/kubeconfig",
                true,
            ),
            (
                Hosting::of(true, "kube-system"),
                "--target-kubeconfig=",
                false,
            ),
            (
                Hosting::of(true, "shoot--a--b"),
                "--target-kubeconfig=none",
                false,
            ),
        ] {
            let (c, _) = hosted_sidecar_container("ns", "provider-x", "img", false, &[], hosting);
            assert_eq!(arg(&c), want, "{hosting:?}");
            assert_eq!(c.get("volumeMounts").is_some(), mounted, "{hosting:?}");
        }
        // Workload identity still mounts its token.
        let (c, v) = hosted_sidecar_container(
            "kube-system",
            "provider-x",
            "img",
            true,
            &[],
            Hosting::SelfHostedInShoot,
        );
        assert!(v.is_some());
        assert_eq!(c["volumeMounts"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn extra_args_follow_the_standard_ones() {
        let (c, v) = sidecar_container("ns", "provider-x", "img", false, &["--z=1".to_string()]);
        assert!(v.is_none());
        let args = c["args"].as_array().unwrap();
        assert_eq!(args[args.len() - 2], "--v=3");
        assert_eq!(args[args.len() - 1], "--z=1");
        let (plain, _) = provider_sidecar("ns", "provider-x", "img", None);
        assert_eq!(plain["args"].as_array().unwrap().len(), args.len() - 1);
    }
}
