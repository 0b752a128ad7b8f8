//! Expansion of the CCM section's arguments and environment: built-ins,
//! conditions and the facts about the shoot they read.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::RenderError;
use super::cloudconfig::{SecretData, openstack_user_agents};
use crate::gardener::ControlPlane;
use crate::gardener::{ObjectData, ShootContext};
use crate::profile::Facts as ConditionFacts;
use crate::profile::ccm::{
    Arg, ArgBuiltin, CcmSpec, Env, EnvBuiltin, EnvField, WorkloadIdentityDetection,
};

/// Where the generic token kubeconfig is mounted.
pub(super) const KUBECONFIG_DIR: &str = "/var/run/secrets/gardener.cloud/shoot/generic-kubeconfig";
/// Where the serving certificate is mounted.
pub(super) const SERVER_DIR: &str = "/var/lib/cloud-controller-manager-server";
/// Gardener's `kutil.TLSCipherSuites`.
const TLS_CIPHER_SUITES: &[&str] = &[
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
    "TLS_AES_128_GCM_SHA256",
    "TLS_AES_256_GCM_SHA384",
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
    "TLS_CHACHA20_POLY1305_SHA256",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305",
];

/// What arguments, env and conditions read.
pub(super) struct Facts<'a> {
    pub cp: &'a ControlPlane,
    pub shoot: &'a ShootContext,
    pub secret_data: SecretData<'a>,
    pub workload_identity: bool,
}

/// Whether the credentials count as workload identity under `detection`.
pub fn uses_workload_identity(
    detection: WorkloadIdentityDetection,
    credentials: Option<&ObjectData>,
) -> bool {
    let Some(secret @ ObjectData::Secret { data, .. }) = credentials else {
        return false;
    };
    match detection {
        WorkloadIdentityDetection::PurposeLabel => {
            secret.requests_workload_identity(&BTreeMap::new())
        }
        WorkloadIdentityDetection::ExternalAccountCredentials => {
            let Some(data) = data else { return false };
            let json = data
                .get("serviceaccount.json")
                .or_else(|| data.get("credentialsConfig"));
            json.and_then(|bytes| serde_json::from_slice::<Value>(bytes).ok())
                .is_some_and(|v| {
                    v.get("type").and_then(Value::as_str) == Some("external_account")
                        && v.pointer("/credential_source/file")
                            .and_then(Value::as_str)
                            .is_some_and(|f| !f.is_empty())
                })
        }
    }
}

/// Spec then status CIDRs without duplicates; with a single IP family and two
/// CIDRs only the first is kept when `per_family`.
fn cidrs(spec: &[String], status: &[String], families: usize, per_family: bool) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for cidr in spec.iter().chain(status) {
        if !out.contains(cidr) {
            out.push(cidr.clone());
        }
    }
    if per_family && families == 1 && out.len() == 2 {
        out.truncate(1);
    }
    out
}

/// All arguments in order, the entrypoint (`spec.command`) first.
pub(super) fn expand(spec: &CcmSpec, facts: &Facts<'_>) -> Result<Vec<String>, RenderError> {
    let mut args: Vec<String> = spec.command.clone();
    for arg in &spec.args {
        match arg {
            Arg::Literal(s) => args.push(s.clone()),
            Arg::Builtin { builtin } => expand_builtin(*builtin, spec, facts, &mut args)?,
            Arg::Conditional {
                condition,
                then,
                otherwise,
            } => {
                let condition_facts = ConditionFacts {
                    shoot: facts.shoot,
                    provider: &facts.cp.spec.type_,
                    workload_identity: Some(facts.workload_identity),
                    kubelet: None,
                    config_maps: None,
                };
                if condition.eval(&condition_facts)? {
                    args.push(then.clone());
                } else if let Some(other) = otherwise {
                    args.push(other.clone());
                }
            }
        }
    }
    Ok(args)
}

fn expand_builtin(
    builtin: ArgBuiltin,
    spec: &CcmSpec,
    facts: &Facts<'_>,
    args: &mut Vec<String>,
) -> Result<(), RenderError> {
    let cp = facts.cp;
    let net_spec = &facts.shoot.shoot.spec.networking;
    let net_status = &facts.shoot.shoot.status.networking;
    let ip_families = facts.shoot.ip_families();
    let families = ip_families.len().max(1);
    match builtin {
        ArgBuiltin::ClusterCidr => {
            args.push(format!(
                "--cluster-cidr={}",
                facts.shoot.pod_cidrs().join(",")
            ));
        }
        ArgBuiltin::ClusterCidrPerFamily => {
            let pods = cidrs(&net_spec.pods.0, &net_status.pods.0, families, true);
            args.push(format!("--cluster-cidr={}", pods.join(",")));
        }
        ArgBuiltin::ServiceClusterIpRange => {
            let services = cidrs(&net_spec.services.0, &net_status.services.0, families, true);
            args.push(format!("--service-cluster-ip-range={}", services.join(",")));
        }
        ArgBuiltin::NodeCidrMaskSizeIpv4 => {
            let ipv4_only = ip_families.len() == 1 && ip_families[0] == "IPv4";
            if let Some(size) = facts
                .shoot
                .shoot
                .spec
                .kubernetes
                .kube_controller_manager
                .node_cidr_mask_size
                && ipv4_only
            {
                args.push(format!("--node-cidr-mask-size-ipv4={size}"));
            }
        }
        ArgBuiltin::ClusterName => args.push(format!("--cluster-name={}", cp.namespace())),
        ArgBuiltin::FeatureGates => {
            let gates = feature_gates(cp)?;
            if !gates.is_empty() {
                args.push(format!("--feature-gates={}", gates.join(",")));
            }
        }
        ArgBuiltin::Kubeconfigs => {
            for flag in [
                "kubeconfig",
                "authentication-kubeconfig",
                "authorization-kubeconfig",
            ] {
                args.push(format!("--{flag}={KUBECONFIG_DIR}/kubeconfig"));
            }
        }
        ArgBuiltin::Serving => {
            args.push("--leader-elect=true".into());
            args.push(format!("--secure-port={}", spec.port));
            if spec.serving_secret.is_some() {
                args.push(format!("--tls-cert-file={SERVER_DIR}/tls.crt"));
                args.push(format!("--tls-private-key-file={SERVER_DIR}/tls.key"));
            }
            args.push(format!(
                "--tls-cipher-suites={}",
                TLS_CIPHER_SUITES.join(",")
            ));
        }
        ArgBuiltin::AwsControllers => {
            if super::cloudconfig::aws_lacks_load_balancer_subnets(cp) {
                args.push("--controllers=*,-service".into());
            }
        }
        ArgBuiltin::OpenstackUserAgents => {
            for agent in openstack_user_agents(facts.secret_data, facts.shoot.technical_id()) {
                args.push(format!("--user-agent={agent}"));
            }
        }
    }
    Ok(())
}

/// The container's environment in order.
pub(super) fn env(spec: &CcmSpec, facts: &Facts<'_>) -> Vec<Value> {
    let cp = facts.cp;
    let secret_name = cp.spec.secret_ref.name.as_str();
    let wi = facts.workload_identity;
    let mut env: Vec<Value> = Vec::new();
    for e in &spec.env {
        match e {
            Env::Literal { name, value } => env.push(json!({"name": name, "value": value})),
            Env::Field { name, from } => {
                let value = match from {
                    EnvField::Region => cp.spec.region.as_str(),
                    EnvField::Namespace => cp.namespace(),
                };
                env.push(json!({"name": name, "value": value}));
            }
            Env::CredentialsFile { name, file } => {
                if let Some((path, _)) = spec.credentials_mount.as_ref().and_then(|m| m.side(wi)) {
                    env.push(json!({"name": name, "value": format!("{path}/{file}")}));
                }
            }
            Env::Builtin {
                builtin: EnvBuiltin::AwsCredentials,
            } => {
                if wi {
                    env.push(json!({"name": "AWS_WEB_IDENTITY_TOKEN_FILE", "valueFrom": {"secretKeyRef": {"name": secret_name, "key": "workloadIdentityTokenFile"}}}));
                    env.push(json!({"name": "AWS_ROLE_ARN", "valueFrom": {"secretKeyRef": {"name": secret_name, "key": "roleARN"}}}));
                } else if let Some((path, items)) =
                    spec.credentials_mount.as_ref().and_then(|m| m.side(false))
                    && let Some(item) = items.first()
                {
                    env.push(json!({"name": "AWS_SHARED_CREDENTIALS_FILE", "value": format!("{path}/{}", item.path)}));
                }
            }
        }
    }
    env
}

/// `providerConfig.cloudControllerManager.featureGates` as sorted `k=v` pairs.
fn feature_gates(cp: &ControlPlane) -> Result<Vec<String>, RenderError> {
    let Some(gates) = cp
        .spec
        .provider_config
        .as_ref()
        .and_then(|c| c.get("cloudControllerManager"))
        .and_then(|c| c.get("featureGates"))
    else {
        return Ok(Vec::new());
    };
    let error = |reason: String| RenderError::ProviderConfig {
        controlplane: format!("{}/{}", cp.namespace(), cp.name()),
        field: "cloudControllerManager.featureGates".into(),
        reason,
    };
    if gates.is_null() {
        return Ok(Vec::new());
    }
    let map = gates
        .as_object()
        .ok_or_else(|| error(format!("expected a map of booleans, got {gates}")))?;
    let sorted: BTreeMap<&String, &Value> = map.iter().collect();
    sorted
        .into_iter()
        .map(|(k, v)| {
            v.as_bool()
                .map(|b| format!("{k}={b}"))
                .ok_or_else(|| error(format!("gate {k:?} is {v}, not a boolean")))
        })
        .collect()
}
