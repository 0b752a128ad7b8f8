//! The CCM Deployment (Gardener's `cloud-controller-manager` chart, §4.5).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::cloudconfig::{CLOUD_CONFIG_DIR, CLOUD_CONFIG_NAME, SecretData, openstack_user_agents};
use super::objects::{DEPLOYMENT, SHOOT_ACCESS_SECRET, selector_labels};
use super::spec::{Arg, ArgBuiltin, CcmSpec, CloudConfigKind, Env, EnvBuiltin, EnvField};
use super::{CCM_NAME, DesiredObject, RenderError, RenderInput, WORKLOAD_IDENTITY_LABEL};
use crate::checksum;
use crate::state::ObjectData;

/// Where the generic token kubeconfig is mounted.
const KUBECONFIG_DIR: &str = "/var/run/secrets/gardener.cloud/shoot/generic-kubeconfig";
/// Where the serving certificate is mounted.
const SERVER_DIR: &str = "/var/lib/cloud-controller-manager-server";
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

pub(super) struct DeploymentInput<'a> {
    pub render: &'a RenderInput<'a>,
    pub replicas: i32,
    pub config_checksum: &'a str,
    pub config_annotation: &'a str,
    pub secret_data: SecretData<'a>,
}

fn uses_workload_identity(credentials: Option<&ObjectData>) -> bool {
    matches!(credentials, Some(ObjectData::Secret { labels, .. })
        if labels.get(WORKLOAD_IDENTITY_LABEL.0).map(String::as_str) == Some(WORKLOAD_IDENTITY_LABEL.1))
}

pub(super) fn deployment(
    input: &DeploymentInput<'_>,
    spec: &CcmSpec,
) -> Result<DesiredObject, RenderError> {
    let cp = input.render.cp;
    let shoot = input.render.shoot;
    let namespace = cp.namespace();
    let secret_name = cp.spec.secret_ref.name.as_str();
    let wi = uses_workload_identity(input.render.credentials);
    let image = spec.image_for(&shoot.kubernetes_version, input.render.image_override)?;

    let mut args: Vec<String> = spec.command.clone();
    for arg in &spec.args {
        match arg {
            Arg::Literal(s) => args.push(s.clone()),
            Arg::Builtin { builtin } => expand_arg(*builtin, input, spec, &mut args)?,
        }
    }
    let (command, container_args) = if spec.command.is_empty() {
        (None, Some(args))
    } else {
        (Some(args), None)
    };

    let mut env: Vec<Value> = Vec::new();
    for e in &spec.env {
        match e {
            Env::Literal { name, value } => env.push(json!({"name": name, "value": value})),
            Env::Field { name, from } => {
                let value = match from {
                    EnvField::Region => cp.spec.region.as_str(),
                    EnvField::Namespace => namespace,
                };
                env.push(json!({"name": name, "value": value}));
            }
            Env::Builtin {
                builtin: EnvBuiltin::AwsCredentials,
            } => {
                if wi {
                    env.push(json!({"name": "AWS_WEB_IDENTITY_TOKEN_FILE", "valueFrom": {"secretKeyRef": {"name": secret_name, "key": "workloadIdentityTokenFile"}}}));
                    env.push(json!({"name": "AWS_ROLE_ARN", "valueFrom": {"secretKeyRef": {"name": secret_name, "key": "roleARN"}}}));
                } else if let Some(mount) = &spec.credentials_mount {
                    env.push(json!({"name": "AWS_SHARED_CREDENTIALS_FILE", "value": format!("{}/{}", mount.path, mount.key)}));
                }
            }
        }
    }

    let mut mounts =
        vec![json!({"name": "kubeconfig", "mountPath": KUBECONFIG_DIR, "readOnly": true})];
    let mut volumes = vec![json!({
        "name": "kubeconfig",
        "projected": {
            "defaultMode": 420,
            "sources": [
                {"secret": {"name": shoot.generic_token_kubeconfig_secret, "items": [{"key": "kubeconfig", "path": "kubeconfig"}], "optional": false}},
                {"secret": {"name": SHOOT_ACCESS_SECRET, "items": [{"key": "token", "path": "token"}], "optional": false}},
            ],
        },
    })];
    if let Some(server) = &spec.serving_secret {
        mounts.push(json!({"name": "cloud-controller-manager-server", "mountPath": SERVER_DIR}));
        volumes.push(
            json!({"name": "cloud-controller-manager-server", "secret": {"secretName": server}}),
        );
    }
    if let Some(mount) = &spec.credentials_mount {
        let (path, key) = if wi {
            (&mount.workload_identity_path, &mount.workload_identity_key)
        } else {
            (&mount.path, &mount.key)
        };
        mounts.push(json!({"name": "cloudprovider", "mountPath": path, "readOnly": true}));
        volumes.push(json!({
            "name": "cloudprovider",
            "projected": {"defaultMode": 420, "sources": [
                {"secret": {"name": secret_name, "items": [{"key": key, "path": key}], "optional": false}},
            ]},
        }));
    }
    mounts.push(json!({"name": CLOUD_CONFIG_NAME, "mountPath": CLOUD_CONFIG_DIR}));
    volumes.push(match spec.cloud_config.kind {
        CloudConfigKind::ConfigMap => {
            json!({"name": CLOUD_CONFIG_NAME, "configMap": {"name": CLOUD_CONFIG_NAME}})
        }
        CloudConfigKind::Secret => {
            json!({"name": CLOUD_CONFIG_NAME, "secret": {"secretName": CLOUD_CONFIG_NAME}})
        }
    });
    for host in &spec.host_path_mounts {
        mounts.push(json!({"name": host.name, "mountPath": host.path, "readOnly": true}));
        volumes.push(json!({"name": host.name, "hostPath": {"path": host.path}}));
    }

    let mut container = json!({
        "name": spec.container_name,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "livenessProbe": {
            "httpGet": {"path": spec.liveness_probe.path, "scheme": spec.liveness_probe.scheme, "port": spec.port},
            "initialDelaySeconds": spec.liveness_probe.initial_delay_seconds,
            "periodSeconds": spec.liveness_probe.period_seconds,
            "timeoutSeconds": spec.liveness_probe.timeout_seconds,
            "successThreshold": spec.liveness_probe.success_threshold,
            "failureThreshold": spec.liveness_probe.failure_threshold,
        },
        "ports": [{"containerPort": spec.port, "name": "metrics", "protocol": "TCP"}],
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "volumeMounts": mounts,
    });
    if let Some(command) = command {
        container["command"] = json!(command);
    }
    if let Some(args) = container_args {
        container["args"] = json!(args);
    }
    if !env.is_empty() {
        container["env"] = json!(env);
    }
    let resources = resources(spec);
    if !resources.as_object().is_some_and(|m| m.is_empty()) {
        container["resources"] = resources;
    }
    let security = security_context(spec);
    if !security.as_object().is_some_and(|m| m.is_empty()) {
        container["securityContext"] = security;
    }

    let mut annotations = BTreeMap::new();
    annotations.insert(
        format!("checksum/secret-{secret_name}"),
        checksum::secret_checksum(input.secret_data),
    );
    annotations.insert(
        input.config_annotation.to_string(),
        input.config_checksum.to_string(),
    );

    let mut pod_labels: BTreeMap<String, String> = [
        ("gardener.cloud/role", "controlplane"),
        ("app", "kubernetes"),
        ("role", CCM_NAME),
        ("networking.gardener.cloud/to-dns", "allowed"),
        ("networking.gardener.cloud/to-public-networks", "allowed"),
        (
            "networking.resources.gardener.cloud/to-kube-apiserver-tcp-443",
            "allowed",
        ),
        ("maintenance.gardener.cloud/restart", "true"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    pod_labels.extend(spec.pod_labels.clone());

    let body = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": CCM_NAME,
            "namespace": namespace,
            "labels": {
                "app": "kubernetes",
                "role": CCM_NAME,
                "high-availability-config.resources.gardener.cloud/type": "controller",
            },
        },
        "spec": {
            "revisionHistoryLimit": spec.revision_history_limit,
            "replicas": input.replicas,
            "selector": {"matchLabels": selector_labels()},
            "template": {
                "metadata": {"annotations": annotations, "labels": pod_labels},
                "spec": {
                    "automountServiceAccountToken": false,
                    "priorityClassName": "gardener-system-300",
                    "containers": [container],
                    "dnsPolicy": "ClusterFirst",
                    "restartPolicy": "Always",
                    "schedulerName": "default-scheduler",
                    "terminationGracePeriodSeconds": 30,
                    "volumes": volumes,
                },
            },
        },
    });
    Ok(DesiredObject {
        group: DEPLOYMENT.0,
        version: DEPLOYMENT.1,
        kind: DEPLOYMENT.2,
        plural: DEPLOYMENT.3,
        name: CCM_NAME.to_string(),
        namespace: namespace.to_string(),
        object: body,
    })
}

fn expand_arg(
    builtin: ArgBuiltin,
    input: &DeploymentInput<'_>,
    spec: &CcmSpec,
    args: &mut Vec<String>,
) -> Result<(), RenderError> {
    let cp = input.render.cp;
    match builtin {
        ArgBuiltin::ClusterCidr => {
            args.push(format!(
                "--cluster-cidr={}",
                input.render.shoot.pod_cidrs().join(",")
            ));
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
            for agent in openstack_user_agents(
                input.secret_data,
                input.render.shoot.technical_id.as_deref(),
            ) {
                args.push(format!("--user-agent={agent}"));
            }
        }
    }
    Ok(())
}

/// `providerConfig.cloudControllerManager.featureGates` as sorted `k=v` pairs.
fn feature_gates(cp: &super::ControlPlane) -> Result<Vec<String>, RenderError> {
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

fn resources(spec: &CcmSpec) -> Value {
    let mut out = serde_json::Map::new();
    if !spec.resources.requests.is_empty() {
        out.insert("requests".into(), json!(spec.resources.requests));
    }
    if !spec.resources.limits.is_empty() {
        out.insert("limits".into(), json!(spec.resources.limits));
    }
    Value::Object(out)
}

fn security_context(spec: &CcmSpec) -> Value {
    let sc = &spec.security_context;
    let mut out = serde_json::Map::new();
    if let Some(v) = sc.allow_privilege_escalation {
        out.insert("allowPrivilegeEscalation".into(), json!(v));
    }
    if !sc.drop_capabilities.is_empty() {
        out.insert("capabilities".into(), json!({"drop": sc.drop_capabilities}));
    }
    if let Some(v) = sc.run_as_non_root {
        out.insert("runAsNonRoot".into(), json!(v));
    }
    if let Some(v) = sc.run_as_user {
        out.insert("runAsUser".into(), json!(v));
    }
    if let Some(v) = sc.run_as_group {
        out.insert("runAsGroup".into(), json!(v));
    }
    Value::Object(out)
}
